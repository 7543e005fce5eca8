"""``label_counts=True`` (GAP and ProGAP): a noisy count of each node's in-neighbours' training
labels next to its features. Attack-style checks: only training labels are read, one edge moves
one row by at most the sensitivity, the ledger carries the extra Gaussian once at the hops'
noise multiplier, the released counts carry that noise, and a restored model never redraws."""

import math

import pytest
import torch

from lightning_dpgnn import GAP, ProGAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods.releases import Releases
from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.calibration import calibrate_noise_multiplier, gaussian_plan
from lightning_dpgnn.privacy.mechanism import run

FAST_GAP = dict(encoder_epochs=3, classifier_epochs=3)



def _counts(model, graph, accountant):
    """The label counts release drawn on ``graph`` (the release's own draw)."""
    r = model.releases.declared["label_counts"]
    d = Releases.draw_of(r, graph, accountant, None, {}, False, model.noise_multiplier)
    return run(r.draw(d), accountant)

def _exact_counts(data, num_classes: int) -> torch.Tensor:
    """``A^T Y_train`` computed from scratch: for every edge u -> v with u a training node,
    one vote for u's label in v's row."""
    u, v = data.edge_index
    votes = data.train_mask[u]
    out = torch.zeros(data.num_nodes * num_classes)
    out.index_put_((v[votes] * num_classes + data.y[u[votes]],), torch.ones(int(votes.sum())),
                   accumulate=True)
    return out.view(data.num_nodes, num_classes)


def test_non_private_counts_are_exactly_the_training_labels_of_the_in_neighbours(
    csbm_dm, make_trainer
):
    model = GAP(privacy="none", label_counts=True, **FAST_GAP)
    make_trainer().fit(model, csbm_dm)
    data = csbm_dm.data
    assert torch.equal(model.releases["label_counts"], _exact_counts(data, csbm_dm.num_classes))
    # validation and test labels are never read: changing them changes no count
    changed = data.clone()
    hidden = ~changed.train_mask
    changed.y[hidden] = (changed.y[hidden] + 1) % csbm_dm.num_classes
    again = _counts(model, changed, PrivacyAccountant("edge", 1e-5))
    assert torch.equal(again, model.releases["label_counts"])
    # the first network reads the features, then the counts
    assert model.hparams.num_features == csbm_dm.num_features
    assert model._encoder().mlp.net[0].in_features == data.num_features + csbm_dm.num_classes


@pytest.mark.parametrize("unit,bound", [("directed", 1.0), ("undirected", math.sqrt(2))])
def test_removing_one_edge_moves_the_counts_by_at_most_the_accounted_sensitivity(
    csbm_dm, unit, bound
):
    data = csbm_dm.data
    model = GAP(privacy="none", label_counts=True, edge_unit=unit)
    model.hparams.num_classes = csbm_dm.num_classes
    acc = PrivacyAccountant("edge", 1e-5)
    full = _counts(model, data, acc)
    ei, worst = data.edge_index, 0.0
    for e in range(0, data.num_edges, 1009):
        u, w = (int(t) for t in ei[:, e])
        drop = (ei[0] == u) & (ei[1] == w)
        if unit == "undirected":
            drop |= (ei[0] == w) & (ei[1] == u)
        neighbour = data.clone()
        neighbour.edge_index = ei[:, ~drop]
        moved = _counts(model, neighbour, acc) - full
        worst = max(worst, float(torch.linalg.vector_norm(moved)))
    assert 0.5 < worst <= bound + 1e-6  # an edge from a training node moves a row by 1
    private = GAP(privacy="edge", epsilon=1.0, label_counts=True, edge_unit=unit)
    assert private._mechanism_for(1.0, "label_counts").sensitivity == pytest.approx(bound)


@pytest.mark.parametrize("make", [
    lambda: GAP(privacy="edge", epsilon=2.0, label_counts=True, edge_unit="directed", **FAST_GAP),
    lambda: ProGAP(privacy="edge", epsilon=2.0, label_counts=True, edge_unit="directed",
                   depth=2, epochs_per_stage=2),
])  # fmt: skip
def test_the_counts_are_one_more_gaussian_at_the_hops_multiplier_and_carry_its_noise(
    csbm_dm, make_trainer, make
):
    model = make()
    make_trainer().fit(model, csbm_dm)
    report = model.privacy_spent()
    hops = [e for e in report.ledger if e.name == model.mechanism_name]
    counts = [e for e in report.ledger if e.name == "label_counts"]
    assert len(counts) == 1 and counts[0].count == 1
    assert counts[0].noise_multiplier == pytest.approx(model.noise_multiplier)
    assert counts[0].sensitivity == pytest.approx(hops[0].sensitivity)
    assert 2.0 * 0.99 <= report.epsilon <= 2.0
    # the noise is calibrated for K + 1 Gaussians of one sensitivity (more than K alone)
    k, plan = model.total_aggregations(), dict(sensitivity=1.0, delta=report.delta)
    z_k1 = calibrate_noise_multiplier(gaussian_plan(k + 1, **plan), 2.0)
    assert model.noise_multiplier == pytest.approx(z_k1, rel=2e-3)
    assert z_k1 > calibrate_noise_multiplier(gaussian_plan(k, **plan), 2.0) * 1.05
    # the released counts are the exact ones plus N(0, (z * sensitivity)^2) per entry
    noise = model.releases["label_counts"] - _exact_counts(csbm_dm.data, csbm_dm.num_classes)
    expected = model.noise_multiplier * counts[0].sensitivity
    assert float(noise.std()) == pytest.approx(expected, rel=0.05)
    assert abs(float(noise.mean())) < 4 * expected / math.sqrt(noise.numel())


def test_node_level_refuses_label_counts():
    with pytest.raises(ValueError, match="label_counts=True is not allowed under node-level"):
        GAP(privacy="node", epsilon=8.0, label_counts=True)
    with pytest.raises(ValueError, match="label_counts"):
        ProGAP(privacy="node", epsilon=8.0, label_counts=True)


def test_a_restored_model_keeps_its_counts_and_never_redraws(csbm_dm, make_trainer, tmp_path):
    model = ProGAP(privacy="edge", epsilon=1.0, label_counts=True, depth=2, epochs_per_stage=2)
    trainer = make_trainer(enable_checkpointing=True)
    trainer.fit(model, csbm_dm)
    before = trainer.predict(model, csbm_dm)[0]
    path = tmp_path / "progap.ckpt"
    trainer.save_checkpoint(path)
    restored = ProGAP.load_from_checkpoint(path)
    assert torch.equal(restored.releases["label_counts"], model.releases["label_counts"])
    after = make_trainer().predict(restored, csbm_dm)[0]
    assert torch.allclose(before, after, atol=1e-5)
    make_trainer().test(restored, csbm_dm, verbose=False)
    assert restored.accountant.total_count("label_counts") == 1  # nothing re-queried
    assert restored.privacy_spent() == model.privacy_spent()


def test_inductive_inference_counts_the_new_graphs_known_labels_at_its_own_cost(
    csbm_dm, make_trainer
):
    model = GAP(privacy="edge", epsilon=1.0, label_counts=True, **FAST_GAP)
    make_trainer().fit(model, csbm_dm)
    spent = model.privacy_spent()
    other = NodeDataModule("csbm", seed=1, dataset_kwargs={"seed": 1}).data.clone()
    other.inductive = True
    probs = model.predict_step(other, 0)
    assert probs.shape == (other.num_nodes, csbm_dm.num_classes)
    assert model.last_inference_report.count("label_counts") == 1
    assert model.privacy_spent() == spent  # the training graph's ledger is untouched
    del other.train_mask  # no known label on the new graph: counts are noise only
    with pytest.warns(UserWarning, match="no train_mask/y: every count is noise only"):
        assert model.predict_step(other, 0).shape == probs.shape


def test_a_checkpoint_from_before_label_counts_existed_restores_the_papers_model(
    csbm_dm, make_trainer, tmp_path
):
    """A checkpoint whose hyper-parameters have no ``label_counts`` (written before the
    option existed) restores the model it holds, without counts, though the default now turns
    them on at edge level: the networks are rebuilt at the saved width before the weights
    load, and predictions are unchanged."""
    model = GAP(privacy="edge", epsilon=1.0, label_counts=False, **FAST_GAP)
    trainer = make_trainer(enable_checkpointing=True)
    trainer.fit(model, csbm_dm)
    want = trainer.predict(model, csbm_dm)[0]
    path = tmp_path / "old.ckpt"
    trainer.save_checkpoint(path)
    checkpoint = torch.load(path, weights_only=False)
    del checkpoint["hyper_parameters"]["label_counts"]
    torch.save(checkpoint, path)
    restored = GAP.load_from_checkpoint(path)
    assert restored.label_counts is False and restored.hparams["label_counts"] is False
    assert torch.allclose(make_trainer().predict(restored, csbm_dm)[0], want, atol=1e-5)
    assert restored.privacy_spent() == model.privacy_spent()
