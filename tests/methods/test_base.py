"""Calling ``predict_step`` yourself (as the README and the zoo docs do) predicts in eval mode
without gradient, and leaves the model as it found it: BatchNorm statistics untouched."""

from __future__ import annotations

import pytest
import torch

from lightning_dpgnn.methods import DPMLP, GAP, GNN, MLP, SAGE, EdgeRand, ProGAP

FITS = {
    "GAP": lambda: GAP(privacy="edge", epsilon=4.0, encoder_epochs=3, classifier_epochs=3),
    "ProGAP": lambda: ProGAP(privacy="edge", epsilon=4.0, depth=1, epochs_per_stage=3),
    "MLP": lambda: MLP(epochs=3),
    "DPMLP": lambda: DPMLP(epsilon=8.0, epochs=1),
    "SAGE": lambda: SAGE(epochs=3),
    "EdgeRand": lambda: EdgeRand(epsilon=4.0, epochs=3),
    "GNN": lambda: GNN(),
}


def _buffers(model):
    return {k: v.clone() for k, v in model.state_dict().items() if "running" in k}


@pytest.mark.parametrize("name", list(FITS))
def test_predict_step_is_eval_mode_no_grad_and_restores_the_mode(name, csbm_dm, make_trainer):
    model = FITS[name]()
    make_trainer(max_epochs=6).fit(model, csbm_dm)  # covers every model's plan (GAP: 3 + 3)
    model.train()  # as a fit leaves it
    before = _buffers(model)
    graph = csbm_dm.data
    first = model.predict_step(graph, 0)
    second = model.predict_step(graph, 0)
    assert not first.requires_grad and first.grad_fn is None
    assert torch.equal(first, second)  # eval mode: no dropout, running statistics
    assert model.training  # the mode it was in
    after = _buffers(model)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BatchNorm stats untouched
    torch.testing.assert_close(first.sum(-1), torch.ones(graph.num_nodes))


def test_delta_is_resolved_over_the_units_the_method_declares():
    """``private_units`` is a method's hook: the ledgers resolve ``delta="auto"`` over the
    units the method declares (e.g. GW-LDP's graphs), not the base's edges or nodes."""
    from torch_geometric.data import Data

    from lightning_dpgnn.privacy import resolve_delta

    class OwnUnits(GAP):
        def private_units(self, data):
            return 1_000

    model = OwnUnits(privacy="edge", epsilon=1.0)
    assert model.resolve_delta(Data()) == resolve_delta("auto", 1_000)
    assert model.accountant.delta == resolve_delta("auto", 1_000)
