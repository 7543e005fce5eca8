"""Fixtures of the data-layer tests.

* ``data_root``: the shared datasets folder from ``$DPGNN_DATA`` (CI: ``../shared/datasets``),
  falling back to ``<repo>/../shared/datasets``. A missing folder is a test failure, never a skip.
* Every test gets a per-session writable cache (``$DPGNN_CACHE``) and no network access.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The read-only shared datasets root; fails (not skips) if it is missing."""
    env = os.environ.get("DPGNN_DATA", "")
    root = Path(env).resolve() if env else (REPO.parent / "shared" / "datasets").resolve()
    if not root.is_dir():
        pytest.fail(
            f"shared datasets not found at {root} (DPGNN_DATA={env!r}); set DPGNN_DATA to the "
            "shared datasets folder (CI: ../shared/datasets)"
        )
    return root


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache dir shared by the session's tests (processed caches are reused)."""
    return tmp_path_factory.mktemp("dpgnn-cache")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, session_cache: Path) -> None:
    """Point DPGNN_CACHE at the session cache and forbid network access."""
    monkeypatch.setenv("DPGNN_CACHE", str(session_cache))

    def _no_network(*args: object, **kwargs: object) -> None:
        raise RuntimeError("tests must not use the network")

    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
