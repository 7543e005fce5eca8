"""Shared fixtures: the embedded csbm graph, a quiet Trainer factory and the suite's one
launch of 2 DDP processes."""

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import lightning as L
import pytest
import torch

from lightning_dpgnn.data import NodeDataModule

warnings.filterwarnings("ignore", ".*does not have many workers.*")
warnings.filterwarnings("ignore", ".*LitLogger.*")


def pytest_configure(config):
    # real-data tests find the datasets here; CI sets DPGNN_DATA=../shared/datasets
    shared = Path(__file__).resolve().parents[2] / "shared/datasets"
    data = os.environ.get("DPGNN_DATA") or str(shared)
    # made absolute now: tests that chdir into a temporary folder must still find it
    os.environ["DPGNN_DATA"] = str(Path(data).resolve())
    # processed caches go to a temporary folder, never to the user's home cache
    if "DPGNN_CACHE" not in os.environ:
        os.environ["DPGNN_CACHE"] = tempfile.mkdtemp(prefix="dpgnn-test-cache-")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # pytest -n: one cache per worker (no two processes write one file) and one
        # intra-op thread each (the workers share the cores)
        os.environ["DPGNN_CACHE"] = str(Path(os.environ["DPGNN_CACHE"]) / worker)
        torch.set_num_threads(1)


#: test files that run first, in this order: the suite's longest tests (the one DDP launch and
#: the CLI on two processes, the docs' examples). ``pytest -n`` hands tests out in collection
#: order, so a long test collected last starts last and keeps one worker busy after the other
#: has finished; started first, they run beside the many short tests, which then end the run
#: on both workers together. Whole files move, so module fixtures are still set up once.
FIRST = ("test_ddp.py", "test_docs.py")


def pytest_collection_modifyitems(items):
    first = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(FIRST)))  # stable


@pytest.fixture(scope="module")
def one_thread():
    """Tiny graphs: one intra-op thread is faster and immune to oversubscribed cores (on a
    shared 2-core machine thread hand-offs cost more than the arithmetic)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def ldp_dm():
    """csbm scaled to [0, 1] (the range the LDP mechanisms assume), LPGNN's 50/25/25 split."""
    return NodeDataModule(
        "csbm", split="lpgnn", seed=0, feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0)
    )


@pytest.fixture
def csbm_dm():
    """A small csbm graph (fast to train on; GNNs clearly beat MLPs on it)."""
    return NodeDataModule("csbm", seed=0)


@pytest.fixture
def make_trainer(tmp_path):
    def make(**kwargs):
        defaults = dict(
            max_epochs=10,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=tmp_path,
        )
        defaults.update(kwargs)
        return L.Trainer(**defaults)

    return make


class Launches:
    """Processes the suite runs once (each a fresh interpreter: the DDP launches), shared by the
    workers of ``pytest -n``: the first worker to ask for one starts it (its folder, created
    atomically, is the claim), in the background; anyone waits for its return code file and
    reads the same output files. Starting one early lets it run beside other tests."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._mine: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str]) -> Path:
        """Start ``argv`` in the folder ``name`` unless it was started; the folder."""
        folder = self.base / name
        try:
            folder.mkdir()
        except FileExistsError:
            return folder  # started already, by this worker or another
        script = ('timeout -k 10 500 "$@" > stdout 2> stderr; echo $? > returncode.tmp; '
                  "mv returncode.tmp returncode")
        self._mine[name] = subprocess.Popen(["bash", "-c", script, name, *argv], cwd=folder)
        return folder

    def wait(self, name: str, argv: list[str]) -> tuple[Path, dict]:
        """Start ``argv`` unless it was started, wait for it: its folder, and how it ended
        (``returncode``: 124 when it ran past 500 s, ``stdout``, ``stderr``)."""
        folder = self.start(name, argv)
        done, deadline = folder / "returncode", time.monotonic() + 600
        while not done.is_file():
            assert time.monotonic() < deadline, f"{name}: no return code after 600 s"
            time.sleep(0.2)
        if name in self._mine:
            self._mine.pop(name).wait()
        ended = {"returncode": int(done.read_text())}
        for stream in ("stdout", "stderr"):
            ended[stream] = (folder / stream).read_text(errors="replace")
        return folder, ended


@pytest.fixture(scope="session")
def launches(tmp_path_factory) -> Launches:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by its workers
    return Launches(base)


@pytest.fixture(scope="session")
def ddp_fits(launches) -> tuple[Path, dict]:
    """The folder where ``tests/ddp_fits.py`` (every DDP fit of the suite but the CLI's, on 2
    gloo processes) wrote its ranks' results, and how the launch ended: run once per suite."""
    script, out = Path(__file__).with_name("ddp_fits.py"), launches.base / "ddp-fits"
    return launches.wait("ddp-fits", [sys.executable, str(script), str(out)])
