"""PoinDP (methods/poindp.py): one cached release, restored without a redraw, a one-edge attack
through what a user runs, node level, inductive inference, the paper-code mode's refusals, the
argument checks and the metrics."""

import math

import pytest
import torch
from lightning_dpgnn.callbacks import PrivacyBudget
from lightning_dpgnn.callbacks.privacy_budget import BudgetExceededError
from torch_geometric.data import Data

from lightning_dpgnn import PoinDP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.data.synthetic import make_csbm
from lightning_dpgnn.methods.poindp import classification_scores
from lightning_dpgnn.privacy import DegreeBoundError

FAST = dict(encoder_epochs=3, classifier_epochs=3)
CSBM_MAX_DEGREE = 21  # the embedded csbm graph's largest degree (public here)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    yield


def fit(model, dm, make_trainer, **kw):
    trainer = make_trainer(**kw)
    trainer.fit(model, dm)
    return trainer


def test_edge_level_draws_one_release_and_a_checkpoint_restores_it_without_a_redraw(
    csbm_dm, make_trainer, tmp_path
):
    model = PoinDP(epsilon=1.0, **FAST)
    trainer = fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert report.count("poindp/inter") == 1 and report.count("poindp/intra") == 1
    assert report.level == "edge" and 0.99 <= report.epsilon <= 1.0
    release = model.releases["poindp"].clone()
    assert release.shape == (csbm_dm.data.num_nodes, 1, 1 + 16)
    probs = trainer.predict(model, csbm_dm)[0]
    trainer.test(model, csbm_dm, verbose=False)
    assert model.accountant.total_count() == 2  # test and predict read the cache only
    path = tmp_path / "poindp.ckpt"
    trainer.save_checkpoint(path)
    restored = PoinDP.load_from_checkpoint(path)
    assert torch.equal(restored.releases["poindp"], release)
    assert restored.privacy_spent().epsilon == pytest.approx(report.epsilon)
    again = make_trainer().predict(restored, csbm_dm)[0]
    torch.testing.assert_close(again, probs)
    assert restored.accountant.total_count() == 2  # nothing drawn again
    restored.save_pretrained(tmp_path / "hub")  # the hub format carries the release too
    published = PoinDP.from_pretrained(tmp_path / "hub")
    assert torch.equal(published.releases["poindp"], release) and published.beta == model.beta
    points = restored.hyperbolic_embeddings()
    assert points.shape == (csbm_dm.data.num_nodes, 1, 16)
    assert float(points.norm(dim=-1).max()) < 1.0  # points of the ball


def test_one_edge_moves_only_its_endpoints_rows_by_at_most_the_sensitivity(make_trainer):
    """The attack of invariant one: two graphs that differ in one friendship, the same fit a user
    runs (same weight seed, same reproducible noise so that it cancels): the releases differ only
    in the two endpoints' rows, by at most the accounted sensitivity per part. The encoder reads
    no edge, or every row would differ."""
    g = make_csbm(num_nodes=300, seed=3)
    a, b = (int(i) for i in g.edge_index[:, 0])
    keep = ~(((g.edge_index[0] == a) & (g.edge_index[1] == b))
             | ((g.edge_index[0] == b) & (g.edge_index[1] == a)))
    releases = []
    for edges in (g.edge_index, g.edge_index[:, keep]):
        dm = NodeDataModule.from_data(Data(x=g.x, y=g.y, edge_index=edges))
        model = PoinDP(epsilon=1.0, seed=0, noise_seed=5, **FAST)
        fit(model, dm, make_trainer)
        releases.append(model.releases["poindp"][:, 0].double())
    sensitivity = model.mechanism().sensitivity
    assert sensitivity == pytest.approx(math.sqrt(2))
    diff = releases[0] - releases[1]
    changed = torch.nonzero(diff.abs().sum(dim=1) > 1e-5).flatten().tolist()
    assert set(changed) == {a, b}
    for part in (diff[:, :1], diff[:, 1:]):
        assert float(torch.linalg.vector_norm(part)) <= sensitivity + 1e-4
    assert float(torch.linalg.vector_norm(diff[:, 1:])) > 0.99 * sensitivity  # unit directions


def test_node_level_composes_dpsgd_and_the_release_under_the_degree_promise(
    csbm_dm, make_trainer
):
    model = PoinDP(privacy="node", epsilon=8.0, max_degree=CSBM_MAX_DEGREE, batch_size=64, **FAST)
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert report.level == "node" and 7.9 <= report.epsilon <= 8.0
    entries = {e.name: e for e in model.accountant.ledger}
    assert entries["poindp/inter"].sensitivity == pytest.approx(math.sqrt(CSBM_MAX_DEGREE))
    assert entries["poindp/intra"].count == 1
    assert model.accountant.total_count("encoder/dpsgd") > 0
    assert model.accountant.total_count("classifier/dpsgd") > 0
    low = PoinDP(privacy="node", epsilon=8.0, max_degree=CSBM_MAX_DEGREE - 1, **FAST)
    with pytest.raises(DegreeBoundError):
        fit(low, csbm_dm, make_trainer)
    assert low.accountant.total_count() == 0


def test_inductive_inference_releases_on_the_new_graph_once(csbm_dm, make_trainer):
    model = PoinDP(epsilon=1.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    ledger = model.accountant.state_dict()
    other = make_csbm(num_nodes=200, seed=4)
    new = Data(x=other.x, edge_index=other.edge_index, num_nodes=other.num_nodes)
    new.inductive = True
    first = model.predict_step(new, 0)
    assert first.shape == (200, model.hparams.num_classes)
    report = model.last_inference_report
    assert report.count("poindp/inter") == 1 and report.epsilon <= 1.0
    assert torch.equal(model.predict_step(new, 0), first)  # the cached release: no new noise
    assert model.inference_report(new).count("poindp/intra") == 1
    assert model.accountant.state_dict() == ledger  # the training ledger is untouched


def test_paper_code_mode_is_not_private_and_refused_by_the_budget_and_the_zoo(
    csbm_dm, make_trainer, tmp_path
):
    from lightning_dpgnn.publish import hub

    with pytest.raises(BudgetExceededError):
        fit(PoinDP(mode="paper-code", paper_epochs=2), csbm_dm, make_trainer,
            callbacks=[PrivacyBudget(epsilon=100.0)])
    model = PoinDP(mode="paper-code", paper_epochs=2, seed=0)
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert math.isinf(report.epsilon) and "NOT differentially private" in report.unit
    refusals = hub.publication_refusals(model)
    assert any("NOT differentially private" in r for r in refusals)
    with pytest.raises(hub.PublishError):
        model.save_pretrained(tmp_path / "out")
    assert model.releases.declared == {}  # it releases nothing through a mechanism
    new = Data(x=csbm_dm.data.x, edge_index=csbm_dm.data.edge_index[:, :100],
               num_nodes=csbm_dm.data.num_nodes)
    model.predict_inductive(new)  # a new graph, read in the clear: its report says so
    assert math.isinf(model.last_inference_report.epsilon)
    assert "NOT differentially private" in model.last_inference_report.unit
    # its noise is bounded by sigma and drawn at every forward, evaluation included
    data = csbm_dm.data
    with torch.no_grad():
        model.eval()
        clean = model.paper_net(data.x, data.edge_index).sum(0)
        sigma = model.paper_net.sigmas(torch.ones(data.num_nodes, 2), 1.0)
        noisy = [model._paper_logits(data) for _ in range(2)]
    assert not torch.equal(noisy[0], noisy[1])
    assert bool(((noisy[0] - clean).abs() <= sigma.sum(0).unsqueeze(1) + 1e-5).all())
    assert not any(p.requires_grad for p in model.paper_net.sensitivity.parameters())


@pytest.mark.parametrize("kw, match", [
    (dict(beta=1.5), "beta"), (dict(beta=-0.5), "beta"), (dict(beta="half"), "beta"),
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"),
    (dict(clip=0.0), "clip"), (dict(clip=float("nan")), "clip"),
    (dict(curvature=-1.0), "curvature"), (dict(mode="paper"), "mode"), (dict(hops=0), "hops"),
    (dict(mode="paper-code", privacy="node"), "paper-code"),
    (dict(mode="paper-code", label_counts=True), "label_counts"),
])
def test_bad_arguments_are_one_clear_error(kw, match):
    with pytest.raises(ValueError, match=match):
        PoinDP(**kw)


def test_beta_defaults_to_the_variance_optimal_share_and_ablations_release_one_part(
    csbm_dm, make_trainer
):
    assert PoinDP().beta == pytest.approx(1 / (1 + 4))  # hidden 16
    model = PoinDP(epsilon=1.0, beta=0.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    assert [e.name for e in model.accountant.ledger] == ["poindp/intra"]
    assert torch.equal(model.releases["poindp"][:, 0, 0], torch.zeros(csbm_dm.data.num_nodes))
    assert 0.99 <= model.privacy_spent().epsilon <= 1.0


def test_the_metrics_include_the_papers_swapped_weighted_f1():
    # y = [0, 0, 0, 1], predictions [0, 0, 1, 1]: per-class F1 0.8 and 2/3; weighted by the true
    # support (3, 1) it is 0.7667, by the predicted support (2, 2), the paper's "W-F1", 0.7333
    probs = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    scores = classification_scores(probs, torch.tensor([0, 0, 0, 1]))
    assert scores["acc"] == pytest.approx(0.75)
    assert scores["weighted_f1"] == pytest.approx((0.8 * 3 + 2 / 3) / 4)
    assert scores["paper_swapped_wf1"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert scores["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)


def test_hops_compose_on_the_accountant_at_the_same_epsilon(csbm_dm, make_trainer):
    model = PoinDP(epsilon=1.0, hops=2, hop_budget=(3.0, 1.0), **FAST)
    fit(model, csbm_dm, make_trainer)
    assert model.releases["poindp"].shape[1] == 2
    assert model.privacy_spent().count("poindp/intra") == 2
    assert 0.99 <= model.privacy_spent().epsilon <= 1.0
    # the second hop, with the smaller share, runs at a larger noise multiplier
    inter = sorted(e.noise_multiplier for e in model.accountant.ledger if e.name == "poindp/inter")
    assert inter[1] == pytest.approx(inter[0] * math.sqrt(3.0))


def test_a_resumed_fit_restores_the_release_and_never_draws_it_again(
    csbm_dm, make_trainer, tmp_path, monkeypatch
):
    from lightning.pytorch.callbacks import ModelCheckpoint

    args = dict(epsilon=1.0, encoder_epochs=2, classifier_epochs=2, seed=3)
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = PoinDP(**args)
    make_trainer(enable_checkpointing=True, callbacks=[ckpt]).fit(full, csbm_dm)
    draws = []
    monkeypatch.setattr(PoinDP, "_draw_release", lambda self, d: draws.append(1))
    resumed = PoinDP(**args)  # mid-classifier: the release is in the checkpoint
    make_trainer().fit(resumed, csbm_dm, ckpt_path=tmp_path / "epoch=2.ckpt")
    assert draws == []  # never drawn again
    assert torch.equal(resumed.releases["poindp"], full.releases["poindp"])
    assert resumed.accountant.state_dict() == full.accountant.state_dict()


def test_label_counts_are_one_more_release_and_a_new_graph_uses_its_own(csbm_dm, make_trainer):
    model = PoinDP(epsilon=2.0, label_counts=True, **FAST)
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert report.count("label_counts") == 1 and report.count("poindp/inter") == 1
    assert 1.98 <= report.epsilon <= 2.0  # both calibrated together
    n = csbm_dm.data.num_nodes + 100  # more rows than the training graph's cached counts
    other = make_csbm(num_nodes=n, seed=6)
    new = Data(x=other.x, edge_index=other.edge_index, num_nodes=n, y=other.y,
               train_mask=torch.ones(n, dtype=torch.bool))
    probs = model.predict_inductive(new)  # its own counts, not the training graph's
    assert probs.shape == (n, model.hparams.num_classes)
    assert model.last_inference_report.count("label_counts") == 1
