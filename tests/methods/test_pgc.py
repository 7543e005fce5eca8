"""PGC (thesis ch. 2): the estimator, accounting, node classification, VGAE link prediction."""

import math

import pytest
import torch

from lightning_dpgnn import PGC, PGCLinkPrediction
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods.pgc import graph_convolution, roc_auc, split_edges
from lightning_dpgnn.privacy import OneBit

# tiny graphs: one thread; ``ldp_dm`` (tests/conftest.py): csbm in [0, 1], LPGNN's split
pytestmark = pytest.mark.usefixtures("one_thread")


def small_graph():
    # a triangle 0-1-2 with a tail 2-3, both directions
    ei = torch.tensor([[0, 1, 0, 2, 1, 2, 2, 3], [1, 0, 2, 0, 2, 1, 3, 2]])
    x = torch.tensor([[0.0, 1.0], [0.2, 0.9], [1.0, 0.0], [0.5, 0.1]])
    return x, ei


def test_graph_convolution_is_eq_2_1_by_hand():
    x, ei = small_graph()
    # |N(v)| with self: [3, 3, 4, 2]; GC(3) = x2/sqrt(4*2) + x3/sqrt(2*2)
    gc = graph_convolution(x, ei)
    expected3 = x[2] / math.sqrt(8) + x[3] / 2
    expected0 = x[0] / 3 + x[1] / 3 + x[2] / math.sqrt(12)
    assert torch.allclose(gc[3], expected3) and torch.allclose(gc[0], expected0)


def test_one_bit_estimate_of_the_convolution_is_unbiased_with_the_lemma_4_variance():
    x, ei = small_graph()
    eps, reps = 1.0, 2000
    mech = OneBit(eps, per_coordinate=True)
    gen = torch.Generator().manual_seed(0)
    xs = x.repeat(reps, 1)  # reps independent collections of the 4 nodes
    estimates = mech.estimate(mech.sample(xs, gen)).float().view(reps, 4, 2)
    gcs = torch.stack([graph_convolution(e, ei) for e in estimates])
    mean = gcs.mean(0)
    truth = graph_convolution(x, ei)
    # variance of GC^(v) = sum_u Var[y*_u] / (|N(u)||N(v)|), Var[y*] from eq. 2.11
    deg = torch.tensor([3.0, 3.0, 4.0, 2.0])
    var_y = mech.variance(x)
    adj = torch.zeros(4, 4)
    adj[ei[1], ei[0]] = 1.0
    adj += torch.eye(4)
    weights = adj / (deg.sqrt().unsqueeze(1) * deg.sqrt().unsqueeze(0))
    var_gc = (weights**2) @ var_y
    se = (var_gc / reps).sqrt()
    assert ((mean - truth).abs() < 4 * se).all()  # Lemma 2: unbiased
    assert torch.allclose(gcs.var(0), var_gc, rtol=0.15)  # eq. 2.11 propagated


def test_accounting_is_per_feature_as_in_chapter_2_and_labels_are_public(ldp_dm, make_trainer):
    model = PGC(x_epsilon=2.0, noise_seed=0)
    make_trainer(max_epochs=1).fit(model, ldp_dm)
    report = model.privacy_spent()
    d = ldp_dm.num_features
    assert report.level == "ldp" and report.epsilon == pytest.approx(2.0 * d)
    assert report.count("onebit") == 1 and report.count("randomized_response") == 0
    assert f"epsilon 2 per feature x {d} features = {2 * d:g} per node" in str(report)
    per_node = PGC(x_epsilon=2.0, per_coordinate=False, mechanism="piecewise", noise_seed=0)
    make_trainer(max_epochs=1).fit(per_node, ldp_dm)
    assert per_node.privacy_spent().epsilon == pytest.approx(2.0)
    raw = PGC(x_epsilon=math.inf, noise_seed=0)
    make_trainer(max_epochs=1).fit(raw, ldp_dm)
    assert math.isinf(raw.privacy_spent().epsilon)  # the RAW baseline is reported as such


def test_pgc_collects_once_and_learns(ldp_dm, make_trainer, monkeypatch):
    calls = []
    sample = OneBit.sample
    monkeypatch.setattr(
        OneBit,
        "sample",
        lambda self, x, generator=None: calls.append(x.shape[0]) or sample(self, x, generator),
    )
    torch.manual_seed(0)  # the weights' initialisation (unseeded, the check was flaky)
    model = PGC(x_epsilon=8.0, noise_seed=0, dropout=0.0)
    trainer = make_trainer(max_epochs=30)
    trainer.fit(model, ldp_dm)
    trainer.test(model, ldp_dm, verbose=False)
    assert calls == [ldp_dm.num_nodes]
    assert model.local.collection().payload.dtype == torch.int8  # one bit per feature, compact
    assert trainer.callback_metrics["test/acc"] > 0.5  # 5 balanced classes: chance 0.2


def test_edge_split_is_disjoint_complete_and_seeded():
    data = NodeDataModule("csbm", seed=0).data
    s = split_edges(data.edge_index, data.num_nodes, (0.85, 0.05, 0.10), seed=3)
    m = data.edge_index.size(1) // 2
    sizes = [s[k].size(1) for k in ("train_pos", "val_pos", "test_pos")]
    assert sum(sizes) == m and abs(sizes[1] - 0.05 * m) <= 1 and abs(sizes[2] - 0.1 * m) <= 1
    sets = [set(map(tuple, s[k].t().tolist())) for k in ("train_pos", "val_pos", "test_pos")]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    edges = set(map(tuple, data.edge_index.t().tolist()))
    for k in ("val_neg", "test_neg"):
        assert all((i, j) not in edges and i != j for i, j in s[k].t().tolist())
    assert s["val_neg"].size(1) == sizes[1] and s["test_neg"].size(1) == sizes[2]
    held_out = sets[1] | sets[2]
    train_graph = set(map(tuple, s["train_edge_index"].t().tolist()))
    assert not any((i, j) in train_graph or (j, i) in train_graph for i, j in held_out)
    again = split_edges(data.edge_index, data.num_nodes, seed=3)
    assert torch.equal(again["test_pos"], s["test_pos"])
    with pytest.raises(ValueError, match="sum"):
        split_edges(data.edge_index, data.num_nodes, (0.8, 0.1, 0.2))


def test_roc_auc_by_hand():
    pos, neg = torch.tensor([0.9, 0.8]), torch.tensor([0.7, 0.85])
    assert roc_auc(pos, neg) == pytest.approx(0.75)
    assert roc_auc(torch.tensor([0.5]), torch.tensor([0.5])) == pytest.approx(0.5)
    assert roc_auc(torch.tensor([1.0, 2.0]), torch.tensor([0.0])) == pytest.approx(1.0)


def test_link_prediction_on_cora_trains_on_training_edges_only(make_trainer):
    cora = NodeDataModule("cora", split="lpgnn", seed=0)  # binary features: already in [0, 1]
    model = PGCLinkPrediction(x_epsilon=8.0, noise_seed=0)
    trainer = make_trainer(max_epochs=50)
    trainer.fit(model, cora)
    auc = trainer.test(model, cora, verbose=False)[0]["test/auc"]
    assert auc > 0.85  # thesis Table 2.3: PGC on Cora at eps = 9 reaches 92.1
    assert model.privacy_spent().epsilon == pytest.approx(8.0 * cora.num_features)
    assert model.local.collection().label_mask.sum() == 0  # link prediction collects no labels
    held_out = torch.cat([model.edges["val_pos"], model.edges["test_pos"]], dim=1)
    train_graph = set(map(tuple, model.edges["train_edge_index"].t().tolist()))
    assert not any((i, j) in train_graph for i, j in held_out.t().tolist())


def test_invalid_pgc_settings_are_clear_errors():
    with pytest.raises(ValueError, match="PGC mechanism must be one of"):
        PGC(mechanism="multibit")
    with pytest.raises(ValueError, match="x_epsilon must be > 0"):
        PGC(x_epsilon=0.0)
    with pytest.raises(ValueError, match="PGC mechanism"):
        PGCLinkPrediction(mechanism="gaussian")


def test_model_reads_no_raw_features_after_collection(ldp_dm, make_trainer):
    model = PGC(x_epsilon=4.0, noise_seed=0)
    trainer = make_trainer(max_epochs=2)
    trainer.fit(model, ldp_dm)
    probs = trainer.predict(model, ldp_dm)[0]
    data = ldp_dm.data
    saved, data.x = data.x, torch.full_like(data.x, float("nan"))
    assert torch.equal(trainer.predict(model, ldp_dm)[0], probs)
    data.x = saved


@pytest.mark.parametrize("cls", [PGC, PGCLinkPrediction])
def test_checkpoint_restores_the_collection_and_the_settings(cls, ldp_dm, make_trainer, tmp_path):
    # the settings a PGC model forwards to its base (mechanism, lr, ...) come back, and the
    # checkpoint's hyper-parameters are only arguments the model takes
    model = cls(x_epsilon=4.0, mechanism="piecewise", lr=0.02, noise_seed=0)
    trainer = make_trainer(max_epochs=1)
    trainer.fit(model, ldp_dm)
    trainer.save_checkpoint(tmp_path / "pgc.ckpt")
    loaded = cls.load_from_checkpoint(tmp_path / "pgc.ckpt")
    assert dict(loaded.hparams) == dict(model.hparams)
    assert loaded.collector.mechanism == "piecewise" and loaded.lr == 0.02
    assert torch.equal(loaded.local.received_features(), model.local.received_features())
    assert loaded.privacy_spent() == model.privacy_spent()
