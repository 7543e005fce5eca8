"""How far ``epsilon``'s noise is from the Lightning hook that draws it (docs/index.md, "How
the code is laid out"): every noise draw of a release happens inside a hook, and the calls from
that hook to the mechanism (the first call into ``privacy/``) are at most six."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import lightning_dpgnn.privacy.random as R
from lightning_dpgnn import GAP, LPGNN, ProGAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import DPGNN, EdgeRand

HOOKS = {"on_fit_start", "on_train_epoch_end", "on_train_end"}
PRIVACY = str(Path(R.__file__).parent)
PACKAGE = str(Path(R.__file__).parents[1])


def walks(monkeypatch, fit) -> list[list[str]]:
    """Each release draw's calls, from the hook (excluded) to the mechanism (included)."""
    found: list[list[str]] = []

    def spy(draw):
        def wrapped(*args, **kwargs):
            calls = []
            for frame in inspect.stack()[1:]:
                if frame.function in HOOKS:
                    found.append(list(reversed(calls)))
                    break
                if frame.filename.startswith(PACKAGE) and frame.function != "<lambda>":
                    calls = [] if frame.filename.startswith(PRIVACY) else calls
                    calls.append(frame.function)
            return draw(*args, **kwargs)

        return wrapped

    for name in ("normal", "laplace", "bernoulli", "uniform"):
        monkeypatch.setattr(R, name, spy(getattr(R, name)))
    fit()
    return found


MODELS = {
    "gap": (lambda: GAP(epsilon=2, encoder_epochs=1, classifier_epochs=1, label_counts=True),
            {}),
    "progap": (lambda: ProGAP(epsilon=2, depth=2, epochs_per_stage=1), {}),
    "dpgnn": (lambda: DPGNN(epsilon=8, max_degree=50, epochs=1), {}),
    "edgerand": (lambda: EdgeRand(epsilon=2, epochs=1), {}),
    "lpgnn": (lambda: LPGNN(x_epsilon=2, y_epsilon=2), dict(split="lpgnn", feature_range=(0.0, 1.0),
                                                     feature_bounds=(-4.0, 4.0))),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_release_is_drawn_in_a_hook_at_most_six_calls_from_it(
    name, monkeypatch, make_trainer, one_thread
):
    make, data = MODELS[name]
    model, dm = make(), NodeDataModule("csbm", seed=0, **data)
    found = walks(monkeypatch, lambda: make_trainer(max_epochs=3).fit(model, dm))
    assert found, "no release noise was drawn in a hook"
    assert all(walk[0] == "draw_releases" or walk[:2] == ["enter_stage", "draw_releases"]
               for walk in found), found
    assert max(len(walk) for walk in found) <= 6, found
