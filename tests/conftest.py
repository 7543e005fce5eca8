"""Shared fixtures: the embedded csbm graph and a quiet Trainer factory."""

import os
import tempfile
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
