"""How far ``epsilon``'s noise is from the Lightning hook that draws it (docs/index.md, "How
the code is laid out"; issue 37): for every method, every noise sample of a fit is taken at
most six library frames from the Lightning hook — counted from the first library frame
Lightning calls to the first frame of the noise sampler (``privacy/random.py``) inclusive, on
one process. A release is drawn in a hook (``on_fit_start``, ``on_train_epoch_end``,
``on_train_end``), through the one preamble ``privacy.mechanism.run``; DP-SGD noise in the
optimizer step. The calls from ``epsilon`` to the calibrated noise multiplier are counted the
same way, from ``setup`` to the plan's ledger entry."""

from __future__ import annotations

import sys
from pathlib import Path

import lightning_dpgnn.callbacks
import pytest

import lightning_dpgnn
import lightning_dpgnn.privacy.random as R
from lightning_dpgnn import GAP, GWLDP, LPGNN, PGC, HeteroRR, PoinDP, ProGAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import DPGNN, DPMLP, SAGE, EdgeRand
from lightning_dpgnn.privacy import PrivacyAccountant

sys.path.insert(0, str(Path(__file__).parent))
from test_gwldp import toy_dm  # noqa: E402

HOOKS = {"on_fit_start", "on_train_epoch_end", "on_train_end"}
SAMPLER = R.__file__
LIBRARY = tuple(str(Path(m.__file__).parent) for m in (lightning_dpgnn, lightning_dpgnn.callbacks))
SAMPLERS = ("normal", "laplace", "bernoulli", "uniform", "categorical", "permutation",
            "bernoulli_positions")
MOST = 6


def library_walk(skip: int = 2) -> list[str]:
    """The library frames on the stack (outermost first) down to the first sampler frame
    (read from the frames' code objects: ``inspect.stack`` reads every frame's source
    lines, ~60 ms a call on a Lightning stack)."""
    codes = []
    frame = sys._getframe(skip)
    while frame is not None:
        if frame.f_code.co_filename.startswith(LIBRARY):
            codes.append(frame.f_code)
        frame = frame.f_back
    codes.reverse()
    walk = [f"{Path(c.co_filename).stem}.{c.co_name}" for c in codes]
    first = next((i for i, c in enumerate(codes) if c.co_filename == SAMPLER), None)
    return walk if first is None else walk[: first + 1]


def walks(monkeypatch, fit) -> list[list[str]]:
    """Each noise sample's walk during ``fit()``."""
    found: list[list[str]] = []

    def spy(name, sample):
        def wrapped(*args, **kwargs):
            walk = library_walk()
            if not any(step.startswith("random.") for step in walk):  # the sampler itself
                found.append([*walk, f"random.{name}"])
            return sample(*args, **kwargs)

        return wrapped

    for name in SAMPLERS:
        monkeypatch.setattr(R, name, spy(name, getattr(R, name)))
    fit()
    return found


def csbm(**kw):
    return lambda: NodeDataModule("csbm", seed=0, **kw)


LDP = dict(feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0))
TINY = {"num_nodes": 80, "avg_degree": 5.0, "num_features": 8, "num_classes": 3}
MODELS = {
    "GAP": (lambda: GAP(epsilon=2, encoder_epochs=1, classifier_epochs=1, label_counts=True),
            csbm()),
    "ProGAP": (lambda: ProGAP(epsilon=2, depth=2, epochs_per_stage=1), csbm()),
    "PoinDP": (lambda: PoinDP(epsilon=1.0, hidden=16), csbm()),
    "LPGNN": (lambda: LPGNN(x_epsilon=2, y_epsilon=2), csbm(split="lpgnn", **LDP)),
    "PGC": (lambda: PGC(x_epsilon=2.0), csbm(split="lpgnn", **LDP)),
    "HeteroRR": (lambda: HeteroRR(epsilon=1.0, x_epsilon=1.0, feature_mechanism="multibit",
                                  hidden=16), csbm(dataset_kwargs=TINY, **LDP)),
    "GW-LDP": (lambda: GWLDP(epsilon=2.0, gnn="gcn", seed=0, dp_fedavg=True,
                             fedavg_noise_multiplier=4.0), toy_dm),
    "DP-GNN": (lambda: DPGNN(epsilon=8, max_degree=50, epochs=1), csbm()),
    "EdgeRand": (lambda: EdgeRand(epsilon=2, epochs=1), csbm()),
    "SAGE": (lambda: SAGE(epochs=1), csbm()),
    "DP-MLP": (lambda: DPMLP(epsilon=8.0, epochs=1), csbm()),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_every_noise_sample_is_at_most_six_library_frames_from_the_lightning_hook(
    name, monkeypatch, make_trainer, one_thread
):
    make, data = MODELS[name]
    model = make()
    found = walks(monkeypatch, lambda: make_trainer(max_epochs=3).fit(model, data()))
    if name == "SAGE":  # non-private: nothing is drawn
        assert found == []
        return
    assert found, "no noise was sampled"
    releases = [w for w in found if "base.draw_releases" in w]
    if name not in ("DP-MLP",):
        assert releases, found
    for walk in releases:  # drawn in a hook, through the one preamble
        assert walk[0].split(".")[1] in HOOKS and "mechanism.run" in walk, walk
    assert max(len(w) for w in found) <= MOST, max(found, key=len)


def test_epsilon_reaches_the_calibrated_noise_multiplier_in_few_library_frames(
    monkeypatch, make_trainer, one_thread
):
    """From ``setup`` (where Lightning hands over) to the plan's ledger entry while the noise
    multiplier is solved for ``epsilon``."""
    found: list[list[str]] = []
    add = PrivacyAccountant.add_gaussian

    def spy(self, *args, **kwargs):
        walk = library_walk()
        if any(step.endswith(".calibrate") for step in walk):
            found.append(walk)
        return add(self, *args, **kwargs)

    monkeypatch.setattr(PrivacyAccountant, "add_gaussian", spy)
    model = GAP(epsilon=2, encoder_epochs=1, classifier_epochs=1)
    make_trainer(max_epochs=2).fit(model, NodeDataModule("csbm", seed=0))
    assert found and all(w[0].endswith(".setup") for w in found), found
    assert max(len(w) for w in found) <= 10, max(found, key=len)
