"""Fixtures of the zoo tests: a hub on 127.0.0.1 and a small fitted model (shared)."""

from __future__ import annotations

import pytest
from huggingface_hub import constants
from zoo_testing import HubServer, quiet_trainer

from lightning_dpgnn import GAP
from lightning_dpgnn.data import NodeDataModule


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A hub-compatible server on 127.0.0.1; ``HF_ENDPOINT`` points at it and the hub cache is
    a temporary folder. huggingface_hub read ``HF_ENDPOINT`` at import, so its constants are
    patched too: even a call that ignored the variable could not leave the machine."""
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_a_secret")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield server


@pytest.fixture(scope="session")
def csbm():
    return NodeDataModule("csbm")


@pytest.fixture(scope="session")
def gap_edge(csbm, tmp_path_factory):
    """A fitted edge-level GAP on the embedded csbm graph and its predictions."""
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=2, classifier_epochs=2)
    trainer = quiet_trainer(tmp_path_factory.mktemp("gap"))
    trainer.fit(model, csbm)
    return model, trainer.predict(model, csbm)[0]
