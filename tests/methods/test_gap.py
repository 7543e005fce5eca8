"""GAP (thesis ch. 4): query counts, accounting, degree bound, inference privacy, accuracy."""

import math

import pytest
import torch
from torch_geometric.data import Data

from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.data.synthetic import make_csbm
from lightning_dpgnn.methods import DPMLP, MLP
from lightning_dpgnn.methods.gap import GAP
from lightning_dpgnn.privacy import DegreeBoundError, PrivacyAccountant
from lightning_dpgnn.privacy.aggregation import degrees
from lightning_dpgnn.privacy.dpsgd import NotDPCompatibleError

FAST = dict(encoder_epochs=5, classifier_epochs=5)
CSBM_MAX_DEGREE = 21  # the embedded csbm graph: largest in- and out-degree (public here)


def fit(model, dm, make_trainer, **kw):
    trainer = make_trainer(**kw)
    trainer.fit(model, dm)
    return trainer


def test_edge_level_queries_aggregation_k_times_and_matches_prop_6(csbm_dm, make_trainer):
    # the thesis' model (no label counts) and directed unit: sensitivity 1, Proposition 6
    model = GAP(
        privacy="edge", epsilon=2.0, hops=3, edge_unit="directed", label_counts=False, **FAST
    )
    fit(model, csbm_dm, make_trainer)
    assert model.pma.calls == 3
    report = model.privacy_spent()
    assert report.count("pma") == 3 and report.level == "edge"
    assert "directed edge" in report.unit
    assert report.delta < 1 / csbm_dm.data.num_edges
    assert 2.0 * 0.99 <= report.epsilon <= 2.0
    # Proposition 6 with the ledger's noise multiplier is the closed-form oracle
    sigma, delta = model.noise_multiplier, report.delta
    basic = PrivacyAccountant.from_state_dict(model.accountant.state_dict())
    closed = 3 / (2 * sigma**2) + math.sqrt(2 * 3 * math.log(1 / delta)) / sigma
    assert basic.epsilon(conversion="basic") == pytest.approx(closed, rel=1e-6)
    assert report.epsilon <= closed  # default conversion is never looser


def test_undirected_unit_is_the_default_and_doubles_the_sensitivity(csbm_dm, make_trainer):
    model = GAP(privacy="edge", epsilon=2.0, hops=2, **FAST)
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    pma = next(e for e in report.ledger if e.name == "pma")
    assert pma.sensitivity == pytest.approx(math.sqrt(2))  # one friendship = two rows
    assert "undirected edge" in report.unit and "undirected" in str(report)
    assert report.delta < 1 / (csbm_dm.data.num_edges // 2)  # units are friendships
    assert 2.0 * 0.99 <= report.epsilon <= 2.0


def test_test_and_predict_never_requery(csbm_dm, make_trainer):
    model = GAP(privacy="edge", epsilon=1.0, **FAST)
    trainer = fit(model, csbm_dm, make_trainer)
    trainer.test(model, csbm_dm, verbose=False)
    probs = trainer.predict(model, csbm_dm)[0]
    assert probs.shape == (csbm_dm.data.num_nodes, csbm_dm.num_classes)
    assert model.pma.calls == 2 and model.privacy_spent().count("pma") == 2


def test_node_level_composes_encoder_aggregation_and_classifier(csbm_dm, make_trainer):
    D = CSBM_MAX_DEGREE
    model = GAP(privacy="node", epsilon=8.0, max_degree=D, batch_size=500, **FAST)
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    n_train = int(csbm_dm.data.train_mask.sum())  # ~1500 (identity-keyed split)
    steps = 5 * round(n_train / 500)  # batch 500 -> 3 Poisson batches/epoch
    assert report.count("encoder/dpsgd") == steps and report.count("classifier/dpsgd") == steps
    assert report.count("pma") == 2
    pma = next(e for e in report.ledger if e.name == "pma")
    assert pma.sensitivity == pytest.approx(math.sqrt(D))  # Theorem 3: sqrt(D) per hop
    # one accountant covers Prop. 7: the same ledger rebuilt by hand gives the same epsilon
    z, q = model.noise_multiplier, 500 / n_train
    by_hand = PrivacyAccountant("node", report.delta)
    by_hand.add_subsampled_gaussian("enc", z, q, steps=steps)
    by_hand.add_gaussian("pma", z, count=2, sensitivity=math.sqrt(D))
    by_hand.add_subsampled_gaussian("cls", z, q, steps=steps)
    assert report.epsilon == pytest.approx(by_hand.epsilon(), rel=1e-9)
    assert 8.0 * 0.99 <= report.epsilon <= 8.0
    assert report.delta < 1 / csbm_dm.data.num_nodes


def test_node_level_refuses_a_graph_above_the_degree_promise(csbm_dm, make_trainer):
    in_deg, out_deg = degrees(csbm_dm.data.edge_index, csbm_dm.data.num_nodes)
    assert int(max(in_deg.max(), out_deg.max())) == CSBM_MAX_DEGREE
    model = GAP(privacy="node", epsilon=8.0, max_degree=CSBM_MAX_DEGREE - 1, **FAST)
    with pytest.raises(DegreeBoundError, match="max_degree=20"):
        fit(model, csbm_dm, make_trainer)
    assert model.accountant.total_count() == 0  # refused before any mechanism or step


def test_node_level_rejects_batchnorm_with_a_clear_message():
    with pytest.raises(ValueError, match="BatchNorm mixes the samples"):
        GAP(privacy="node", epsilon=8.0, normalization="batch")
    with pytest.raises(NotDPCompatibleError, match="not allowed under node-level DP"):
        DPMLP(epsilon=1.0, normalization="batch", num_features=4, num_classes=2)
    # edge level trains the modules without DP-SGD: BatchNorm is fine there
    model = GAP(privacy="edge", epsilon=1.0, normalization="batch", num_features=4, num_classes=2)
    assert any(isinstance(m, torch.nn.BatchNorm1d) for m in model.modules())


def test_inductive_inference_draws_fresh_noise_on_the_new_graph_only(csbm_dm, make_trainer):
    model = GAP(privacy="edge", epsilon=1.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    cached = model.releases["pma"].clone()
    ledger = model.accountant.state_dict()
    # a disjoint graph from the same distribution (the split seed alone keeps the graph)
    other = NodeDataModule("csbm", seed=1, dataset_kwargs={"seed": 1}).data
    new = Data(x=other.x, edge_index=other.edge_index, num_nodes=other.num_nodes)
    new.inductive = True
    p1 = model.predict_inductive(new)
    assert model.pma.calls == 2 + 2  # K hops on the new graph
    assert torch.equal(model.releases["pma"], cached)  # training cache untouched
    assert model.accountant.state_dict() == ledger  # training ledger untouched
    assert model.last_inference_report.count("pma") == 2
    # another graph: fresh noise, its own ledger
    third = make_csbm(num_nodes=500, seed=2)
    p3 = model.predict_inductive(
        Data(x=third.x, edge_index=third.edge_index, num_nodes=third.num_nodes)
    )
    assert model.pma.calls == 2 + 2 + 2 and p3.shape[0] == third.num_nodes
    assert model.last_inference_report.count("pma") == 2
    assert not torch.equal(p1[: len(p3)], p3[: len(p1)])


def test_repeated_inductive_calls_on_one_graph_cannot_average_the_noise_away(
    csbm_dm, make_trainer
):
    """The attack of the second privacy review: eight calls on one graph averaged the noise down
    (std 7.97 -> 2.75) while every report said epsilon 1. A repeated call now returns the cached
    release (no new noise, nothing spent); once the cache has dropped the graph, a new draw
    composes into that graph's own ledger, and its report says so."""
    model = GAP(privacy="edge", epsilon=1.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    other = NodeDataModule("csbm", seed=1, dataset_kwargs={"seed": 1}).data
    new = Data(x=other.x, edge_index=other.edge_index, num_nodes=other.num_nodes,
               train_mask=other.train_mask, y=other.y)
    new.inductive = True
    calls = [model.predict_step(new, 0) for _ in range(8)]
    assert all(torch.equal(calls[0], p) for p in calls[1:])  # one release, eight reads
    assert model.pma.calls == 2 + 2
    once = model.last_inference_report
    assert 0.99 < once.epsilon <= 1.0 and once.count("pma") == 2
    assert model.inference_report(new).epsilon == pytest.approx(once.epsilon)
    # push the graph out of the cache: the next call draws again and composes
    for seed in range(2, 2 + model.releases.graphs_cached):
        g = make_csbm(num_nodes=300, seed=seed)
        model.predict_inductive(Data(x=g.x, edge_index=g.edge_index, num_nodes=g.num_nodes))
    again = model.predict_inductive(new)
    assert not torch.equal(again, calls[0])  # a fresh draw ...
    twice = model.last_inference_report
    assert twice.count("pma") == 4 and twice.count("label_counts") == 2  # ... counted
    assert twice.epsilon > 1.3 * once.epsilon


def test_nonprivate_gap_is_accurate_and_edge_gap_beats_mlp(csbm_dm, make_trainer):
    trainer = make_trainer(max_epochs=100)
    gap_inf = GAP(privacy="none", encoder_epochs=40, classifier_epochs=60, seed=0)
    trainer.fit(gap_inf, csbm_dm)
    acc_inf = trainer.test(gap_inf, csbm_dm, verbose=False)[0]["test/acc"]
    majority = csbm_dm.dataset_info()["majority_test_accuracy"]
    assert acc_inf > 0.85 > majority + 0.5

    mlp = MLP()
    trainer = make_trainer(max_epochs=100)
    trainer.fit(mlp, csbm_dm)
    acc_mlp = trainer.test(mlp, csbm_dm, verbose=False)[0]["test/acc"]

    gap_edge = GAP(privacy="edge", epsilon=8.0, encoder_epochs=40, classifier_epochs=60, seed=0)
    trainer = make_trainer(max_epochs=100)
    trainer.fit(gap_edge, csbm_dm)
    acc_edge = trainer.test(gap_edge, csbm_dm, verbose=False)[0]["test/acc"]
    assert acc_edge > acc_mlp + 0.1


def test_classifier_ensemble_averages_members_at_no_extra_privacy_cost(csbm_dm, make_trainer):
    """``ensemble=M``: M classification modules on the same cached aggregates; the ledger
    equals one module's and predictions are the mean of the members' log-probabilities."""
    model = GAP(privacy="edge", epsilon=2.0, ensemble=3, **FAST)
    fit(model, csbm_dm, make_trainer)
    single = GAP(privacy="edge", epsilon=2.0, **FAST)
    fit(single, csbm_dm, make_trainer)
    a, b = model.privacy_spent(), single.privacy_spent()
    assert a.epsilon == pytest.approx(b.epsilon, rel=1e-9) and model.pma.calls == 2
    model.eval()
    h = model.classifier_input(model._features(csbm_dm.data), model.releases["pma"])
    members = model.classifier.members
    with torch.no_grad():
        want = torch.stack([m(h).log_softmax(-1) for m in members]).mean(0)
        assert torch.allclose(model.classifier(h), want)
        assert not torch.allclose(members[0](h), members[1](h))  # independently initialised
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="ensemble"):
            GAP(ensemble=bad)


def test_hop_budget_splits_the_noise_unevenly_at_the_same_epsilon(csbm_dm, make_trainer):
    """``hop_budget=[3, 1]``: hop 0 gets 3/4 of the aggregation budget. The ledger records each
    hop at the multiplier it ran with, the epsilon equals the uniform split's (Gaussian hops
    compose through sum 1/sigma_k^2), and the noise actually drawn on hop 0 has the recorded
    standard deviation."""
    model = GAP(privacy="edge", epsilon=2.0, hop_budget=[3, 1], edge_unit="directed", **FAST)
    fit(model, csbm_dm, make_trainer)
    uniform = GAP(privacy="edge", epsilon=2.0, edge_unit="directed", **FAST)
    fit(uniform, csbm_dm, make_trainer)
    z = model.noise_multiplier
    assert z == pytest.approx(uniform.noise_multiplier, rel=2e-3)
    hops = [e for e in model.privacy_spent().ledger if e.name == "pma"]
    assert [e.noise_multiplier for e in hops] == pytest.approx(
        [z * math.sqrt(4 / (2 * 3)), z * math.sqrt(4 / (2 * 1))]
    )
    assert model.privacy_spent().epsilon == pytest.approx(uniform.privacy_spent().epsilon, 2e-3)
    # the drawn noise of hop 0: aggregate of the (public) hop-0 rows vs the released hop
    data = csbm_dm.data
    from lightning_dpgnn.privacy.aggregation import hop_noise_scales, sum_aggregate

    hop0 = model._hop0(model._features(data))  # features and label counts, encoded
    exact = sum_aggregate(hop0, data.edge_index, data.num_nodes)
    from lightning_dpgnn.methods.releases import Draw
    from lightning_dpgnn.privacy.mechanism import run

    acc = PrivacyAccountant("edge", 1e-6)
    d = Draw(data, acc, None, {}, False, model.hop_mechanisms(z, range(2)))
    noisy = run(model._aggregate(hop0, d, 0), acc)
    assert float((noisy - exact).std()) == pytest.approx(hops[0].noise_multiplier, rel=0.05)
    assert hop_noise_scales(None, 3) == (1.0, 1.0, 1.0)
    for bad in ([1.0], [1.0, 0.0], [1.0, -2.0], [1.0, math.inf]):
        with pytest.raises(ValueError, match="hop_budget"):
            GAP(privacy="edge", epsilon=1.0, hops=2, hop_budget=bad)


def test_gap_without_encoder_fits_under_a_default_trainer(csbm_dm, make_trainer):
    """The thesis' "without encoder" ablation (``encoder_layers=0``) runs Lightning's sanity
    validation (on by default) before any aggregate is cached, then aggregates the raw
    features and trains the classifier."""
    model = GAP(privacy="edge", epsilon=1.0, hops=1, encoder_layers=0, classifier_epochs=2)
    trainer = fit(model, csbm_dm, make_trainer)
    assert trainer.num_sanity_val_steps == 2  # Lightning's default, not switched off
    assert [s.epochs for s in model.staged.stages] == [0, 2]  # no encoder stage
    # the raw features and (the default at edge level) the classes' label counts
    width = csbm_dm.data.num_features + csbm_dm.num_classes
    assert model.releases["pma"].shape == (csbm_dm.data.num_nodes, 1, width)
    (result,) = trainer.test(model, csbm_dm, verbose=False)
    assert 0 <= result["test/acc"] <= 1 and model.pma.calls == 1


def test_releasing_on_the_training_graph_again_composes_into_the_training_ledger(
    csbm_dm, make_trainer
):
    """Review 3, N3: ``predict_step`` with ``data.inductive = True`` on the training graph drew
    every release again with fresh noise on a *new* ledger, so the model still reported 0.9999
    while the training edges had spent 1.4545 (the same ledger twice) and the mean of the two
    releases had sqrt(2) less noise. Such a graph is no new graph: its draws compose into the
    training ledger, the model's report says so, and a warning names the new epsilon. An
    edited copy (same nodes, most edges shared) and a subgraph whose ``n_id`` names training
    nodes are caught the same way."""
    model = GAP(privacy="edge", epsilon=1.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    once = model.privacy_spent().epsilon
    assert 0.99 < once <= 1.0
    again = csbm_dm.data.clone()
    again.inductive = True
    with pytest.warns(UserWarning, match="shares private data with the training graph"):
        model.predict_step(again, 0)
    twice = model.privacy_spent()
    assert twice.count("pma") == 4 and twice.count("label_counts") == 2
    assert twice.epsilon == pytest.approx(1.4545, abs=0.01)  # the same ledger, twice
    assert model.last_inference_report.epsilon == pytest.approx(twice.epsilon)
    model.predict_step(again, 0)  # the same graph once more: cached, nothing more spent
    assert model.privacy_spent().epsilon == pytest.approx(twice.epsilon)

    edited = csbm_dm.data.clone()  # one feature row and a few edges changed
    edited.x = edited.x.clone()
    edited.x[0] += 1.0
    edited.edge_index = edited.edge_index[:, 10:]
    with pytest.warns(UserWarning, match="an edited copy"):
        model.predict_inductive(edited)
    assert model.privacy_spent().count("pma") == 6

    # another graph, but it names training nodes
    sub = NodeDataModule("csbm", seed=1, dataset_kwargs={"seed": 1}).data
    sub = Data(x=sub.x, edge_index=sub.edge_index, num_nodes=sub.num_nodes,
               n_id=torch.arange(sub.num_nodes) + csbm_dm.data.num_nodes - 3)
    model.releases.fit_graph.n_id = torch.arange(csbm_dm.data.num_nodes)
    with pytest.warns(UserWarning, match="3 of its nodes"):
        model.predict_inductive(sub)
    assert model.privacy_spent().count("pma") == 8


def test_a_change_no_release_reads_buys_no_fresh_ledger(csbm_dm, make_trainer):
    """Review 3, N4: the per-graph key hashed every label while GAP's releases read only the
    training labels; resubmitting one new graph four times, each with one *test* label
    changed, gave four fresh ledgers at 0.9999 each over bit-identical clean aggregates. The
    key now covers exactly what the releases read: the four calls are one release."""
    model = GAP(privacy="edge", epsilon=1.0, **FAST)
    fit(model, csbm_dm, make_trainer)
    other = NodeDataModule("csbm", seed=1, dataset_kwargs={"seed": 1}).data
    probs, reports = [], []
    for i in range(4):
        y = other.y.clone()
        test = other.test_mask.nonzero().view(-1)[i]
        y[test] = (y[test] + 1) % int(other.y.max() + 1)  # a label no release reads
        g = Data(x=other.x, edge_index=other.edge_index, num_nodes=other.num_nodes, y=y,
                 train_mask=other.train_mask, test_mask=other.test_mask)
        probs.append(model.predict_inductive(g))
        reports.append(model.inference_report(g))
    assert all(torch.equal(probs[0], p) for p in probs[1:])  # one draw, read four times
    assert all(r.epsilon == pytest.approx(reports[0].epsilon) for r in reports)
    assert reports[0].count("pma") == 2 and 0.99 < reports[0].epsilon <= 1.0
    y = other.y.clone()  # a training label *is* read: another release
    train = other.train_mask.nonzero().view(-1)[0]
    y[train] = (y[train] + 1) % int(other.y.max() + 1)
    changed = Data(x=other.x, edge_index=other.edge_index, num_nodes=other.num_nodes, y=y,
                   train_mask=other.train_mask)
    assert not torch.equal(model.predict_inductive(changed), probs[0])


@pytest.mark.parametrize("name", ["GAP", "ProGAP", "PoinDP", "DPGNN"])
def test_node_level_without_a_degree_bound_is_refused_when_the_model_is_built(name):
    import lightning_dpgnn as ld

    node = {} if name == "DPGNN" else {"privacy": "node"}
    with pytest.raises(ValueError, match="needs max_degree=D, an upper bound .* public knowledge"):
        getattr(ld, name)(epsilon=8.0, **node)
    bounded = getattr(ld, name)(epsilon=8.0, max_degree=21, **node)
    # the condition is part of the unit every report, run file and card prints
    assert bounded.privacy_spent().unit == (
        "one node with all its edges, features and label, among graphs whose degrees are <= 21"
    )
    # edge level takes no bound
    if name != "DPGNN":
        assert "among graphs" not in getattr(ld, name)(epsilon=1.0).privacy_spent().unit
