"""The votes (issue 40): the edges as an addition to the free model, inside the plan."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.transforms import BaseTransform

from lightning_dpgnn import GAP, PoinDP, ProGAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods.votes import ALPHAS, BETAS, VOTES

FAST = dict(encoder_epochs=4, classifier_epochs=4)


class DropEdge(BaseTransform):
    """The neighbouring graph: one undirected edge (both directions) removed."""

    def __init__(self, u: int, v: int) -> None:
        self.u, self.v = u, v

    def forward(self, data):
        s, d = data.edge_index
        keep = ~(((s == self.u) & (d == self.v)) | ((s == self.v) & (d == self.u)))
        data.edge_index = data.edge_index[:, keep]
        return data


def fitted(cls, make_trainer, dm=None, **kw):
    model = cls(privacy="edge", epsilon=4.0, votes=True, seed=0, **kw)
    make_trainer(max_epochs=10_000).fit(model, dm or NodeDataModule("csbm", seed=0))
    return model


@pytest.mark.parametrize("cls, kw", [
    (GAP, dict(hops=2, **FAST)), (PoinDP, FAST), (ProGAP, dict(depth=2, epochs_per_stage=3)),
])  # fmt: skip
def test_votes_are_one_planned_and_recorded_draw_and_weights_are_chosen(cls, kw, make_trainer):
    model = fitted(cls, make_trainer, **kw)
    report = model.privacy_spent()
    assert report.count(VOTES) == 1  # drawn once, recorded once
    assert 4.0 * 0.99 <= report.epsilon <= 4.0  # the votes are inside the one target
    assert not model.label_counts  # the votes count the training labels themselves
    alpha, beta = model.vote_weights.tolist()
    assert alpha in ALPHAS and beta in BETAS
    votes = model.releases.get(VOTES)
    assert votes.shape == (model.releases.fit_graph.num_nodes, model.hparams.num_classes)


def test_the_votes_take_their_share_of_the_plan(make_trainer):
    model = fitted(GAP, make_trainer, hops=2, votes_share=0.8, **FAST)
    ledger = {e.name: e for e in model.privacy_spent().ledger}
    # Gaussian Rényi cost ~ 1 / multiplier^2: the votes' cost over the two hops' is 0.8 / 0.2
    ratio = (1 / ledger[VOTES].noise_multiplier**2) / (2 / ledger["pma"].noise_multiplier**2)
    assert ratio == pytest.approx(0.8 / 0.2, rel=1e-6)


def test_neighbouring_graphs_release_votes_one_sensitivity_apart(make_trainer):
    """Same weights, same noise stream: the released votes of two graphs one friendship apart
    differ exactly by the aggregate's change, whose norm is the sensitivity sqrt(2) (q's rows
    have norm 1, the free model reads no edge), so the Gaussian noise calibrated to sqrt(2)
    covers it."""
    base = NodeDataModule("csbm", seed=0)
    base.setup()
    u, v = (int(t) for t in base.data.edge_index[:, 0])
    releases = []
    for dm in (NodeDataModule("csbm", seed=0), NodeDataModule("csbm", seed=0,
                                                             transform=DropEdge(u, v))):
        model = fitted(GAP, make_trainer, dm=dm, hops=1, noise_seed=3, **FAST)
        releases.append(model.releases.get(VOTES))
    diff = releases[0] - releases[1]
    changed = diff.norm(dim=1) > 1e-5
    assert set(changed.nonzero().flatten().tolist()) == {u, v}
    assert diff.norm().item() == pytest.approx(math.sqrt(2), rel=1e-4)


def test_votes_are_refused_at_node_level():
    with pytest.raises(ValueError, match="votes=True is not allowed under node-level DP"):
        GAP(privacy="node", epsilon=4.0, max_degree=50, votes=True)


def test_the_answer_weighs_free_model_method_and_votes_and_survives_a_checkpoint(
    make_trainer, tmp_path
):
    dm = NodeDataModule("csbm", seed=0)
    model = fitted(GAP, make_trainer, dm=dm, hops=1, **FAST)
    trainer = make_trainer(max_epochs=10_000)
    probs = trainer.predict(model, dm)[0]
    data = dm.data
    model.eval()
    alpha, beta = model.vote_weights.tolist()
    free = model.free_logits(data).log_softmax(-1)
    method = model._method_logits(data).log_softmax(-1)
    expected = ((1 - alpha) * free + alpha * method + beta * model.releases.get(VOTES))
    assert torch.allclose(probs, expected.softmax(-1), atol=1e-5)
    # the chosen weights are the best on validation labels among the grids
    mask = data.val_mask
    acc = float((probs[mask].argmax(-1) == data.y[mask]).float().mean())
    for a in ALPHAS:
        for b in BETAS:
            s = (1 - a) * free + a * method + b * model.releases.get(VOTES)
            assert float((s[mask].argmax(-1) == data.y[mask]).float().mean()) <= acc + 1e-9
    path = tmp_path / "m.ckpt"
    trainer.save_checkpoint(path)
    restored = GAP.load_from_checkpoint(path)
    assert restored.vote_weights.tolist() == [alpha, beta]
    assert torch.allclose(make_trainer(max_epochs=10_000).predict(restored, dm)[0], probs,
                          atol=1e-6)  # fmt: skip
    assert restored.privacy_spent().count(VOTES) == 1  # no fresh draw on restore


def test_a_global_seed_does_not_replay_the_noise(make_trainer):
    """A recipe's ``seed_everything: 0`` fixes weights and splits, never privacy noise: two
    fits under the same global seed release different votes and hops."""
    import lightning as L

    drawn = []
    for _ in range(2):
        L.seed_everything(0)
        model = fitted(GAP, make_trainer, hops=1, **FAST)
        drawn.append((model.releases.get(VOTES), model.releases.get("pma")))
    assert not torch.equal(drawn[0][0], drawn[1][0])
    assert not torch.equal(drawn[0][1], drawn[1][1])
