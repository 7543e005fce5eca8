"""HeteroRR: two guarantees never added, one released graph per fit (restored, never redrawn),
public edges passing through, budgets held per guarantee, the release as a data transform."""

from __future__ import annotations

import math

import pytest
import torch
from lightning_dpgnn.callbacks import PrivacyBudget
from lightning_dpgnn.callbacks.privacy_budget import BudgetExceededError
from torch_geometric.data import Data

from lightning_dpgnn import GNN, HeteroRR
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.data.synthetic import make_csbm
from lightning_dpgnn.methods import HeteroRRRelease
from lightning_dpgnn.privacy import MultipleGuaranteesError, PrivacyReport, SeveralGuarantees

TINY = {"num_nodes": 80, "avg_degree": 5.0, "num_features": 8, "num_classes": 3}
FAST = {"hidden": 16}  # the chain: the default (and minimum) 1000 n moves, compiled


def tiny_datamodule() -> NodeDataModule:
    return NodeDataModule("csbm", seed=0, dataset_kwargs=TINY, feature_range=(0.0, 1.0),
                          feature_bounds=(-4.0, 4.0))


@pytest.fixture
def tiny_dm():
    return tiny_datamodule()


def fitted(make_trainer, dm, epochs=3, callbacks=(), **kwargs):
    model = HeteroRR(**{"feature_mechanism": "multibit", **FAST, **kwargs})
    make_trainer(max_epochs=epochs, callbacks=list(callbacks)).fit(model, dm)
    return model


def test_two_guarantees_are_reported_separately_and_never_added(make_trainer, tiny_dm):
    model = fitted(make_trainer, tiny_dm, epsilon=1.0, x_epsilon=2.0)
    report = model.privacy_spent()
    assert isinstance(report, SeveralGuarantees)
    edges, features = report["edges"], report["features"]
    assert edges.level == "edge" and edges.epsilon == pytest.approx(1.0) and edges.delta == 0
    assert features.level == "ldp" and features.epsilon == pytest.approx(2.0)
    assert [e.name for e in edges.ledger] == ["edgerr/mcmc", "edgerr/counts"]
    assert "private" in edges.unit and "public edges are public" in edges.unit
    assert [e.name for e in features.ledger] == ["multibit"]
    # the features' unit does not call the private edges public beside the edges guarantee
    assert "edges are public" not in features.unit and "edges guarantee" in features.unit
    with pytest.raises(MultipleGuaranteesError, match="never added"):
        report.epsilon  # noqa: B018 - two units
    acc = make_trainer().test(model, tiny_dm, verbose=False)[0]["test/acc"]
    assert 0.0 <= acc <= 1.0


def test_either_part_alone_is_one_guarantee(make_trainer, tiny_dm):
    edges_only = fitted(make_trainer, tiny_dm, epsilon=1.0, epochs=1)
    report = edges_only.privacy_spent()
    assert isinstance(report, PrivacyReport) and report.level == "edge"
    assert list(edges_only.releases.declared) == ["edges"]
    features_only = fitted(make_trainer, tiny_dm, epsilon=math.inf, x_epsilon=3.0, epochs=1)
    report = features_only.privacy_spent()
    assert isinstance(report, PrivacyReport) and report.level == "ldp"
    assert report.epsilon == pytest.approx(3.0)
    assert list(features_only.releases.declared) == ["features"]
    x, edges = features_only.released(tiny_dm.data)
    assert torch.equal(edges, tiny_dm.data.edge_index)  # every edge public: read as is


def test_public_edges_pass_through_and_one_graph_is_released(make_trainer, tiny_dm):
    """A user mask: the public edges are all in the release; the graph is drawn once per fit
    (a second fit of the same model reuses it: nothing more is spent)."""
    tiny_dm.setup("fit")
    data = tiny_dm.data
    mask = torch.zeros(data.edge_index.size(1), dtype=torch.bool)
    src, dst = data.edge_index
    mask[(src + dst) % 3 == 0] = True  # symmetric in (src, dst)
    data.private_edge_mask = mask
    model = fitted(make_trainer, tiny_dm, epsilon=1.0)
    out = model.releases.get("edges")
    n = data.num_nodes
    released = set((out[0] * n + out[1]).tolist())
    public = data.edge_index[:, ~mask]
    assert set((public[0] * n + public[1]).tolist()) <= released
    first = out.clone()
    make_trainer(max_epochs=2).fit(model, tiny_dm)
    assert torch.equal(model.releases.get("edges"), first)
    assert model.privacy_spent().count("edgerr/mcmc") == 1


def test_the_release_is_restored_from_a_checkpoint_without_a_redraw(make_trainer, tiny_dm,
                                                                      tmp_path):
    model = fitted(make_trainer, tiny_dm, epsilon=1.0, x_epsilon=2.0)
    trainer = make_trainer(max_epochs=3)
    trainer.fit(model, tiny_dm)
    path = tmp_path / "h.ckpt"
    trainer.save_checkpoint(path)
    loaded = HeteroRR.load_from_checkpoint(path)
    for name in ("edges", "features"):
        assert torch.equal(loaded.releases.get(name), model.releases.get(name))
    assert loaded.privacy_spent() == model.privacy_spent()
    assert torch.equal(loaded.theta if loaded.theta is not None else torch.zeros(1),
                       model.theta if model.theta is not None else torch.zeros(1))
    # resuming the fit from the checkpoint draws nothing again
    resumed = HeteroRR(**{"feature_mechanism": "multibit", **FAST, "epsilon": 1.0,
                          "x_epsilon": 2.0})
    make_trainer(max_epochs=4).fit(resumed, tiny_dm, ckpt_path=path)
    assert torch.equal(resumed.releases.get("edges"), model.releases.get("edges"))
    report = resumed.privacy_spent()
    assert report["edges"].count("edgerr/mcmc") == 1
    assert report["features"].count("multibit") == 1


def test_both_guarantees_round_trip_through_a_published_folder(make_trainer, tiny_dm,
                                                                tmp_path):
    model = fitted(make_trainer, tiny_dm, epsilon=1.0, x_epsilon=2.0)
    model.save_pretrained(tmp_path / "h")
    loaded = HeteroRR.from_pretrained(tmp_path / "h")
    assert loaded.privacy_spent() == model.privacy_spent()
    for name in ("edges", "features"):
        assert torch.equal(loaded.releases.get(name), model.releases.get(name))
    graph = tiny_dm.data
    assert torch.allclose(loaded.predict_step(graph, 0), model.predict_step(graph, 0))
    card = (tmp_path / "h" / "README.md").read_text()
    assert "**edges**" in card and "**features**" in card
    assert "one private undirected edge" in card and "DP at equilibrium only" in card


def test_the_budget_holds_each_guarantee(make_trainer, tiny_dm):
    with pytest.raises(BudgetExceededError, match="features"):
        fitted(make_trainer, tiny_dm, callbacks=[PrivacyBudget(
            epsilon={"edges": 1.0, "features": 1.0})], epsilon=1.0, x_epsilon=2.0)
    with pytest.raises(BudgetExceededError, match="edges"):
        fitted(make_trainer, tiny_dm, callbacks=[PrivacyBudget(
            epsilon={"edges": 0.5, "features": 2.0})], epsilon=1.0, x_epsilon=2.0)
    ok = fitted(make_trainer, tiny_dm, epochs=1, callbacks=[PrivacyBudget(
        epsilon={"edges": 1.0, "features": 2.0})], epsilon=1.0, x_epsilon=2.0)
    assert ok.privacy_spent()["edges"].epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"rho": 0.0}, "rho"), ({"rho": 1.5}, "rho"), ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"), ({"x_epsilon": 0.0}, "x_epsilon"),
    ({"epsilon": None, "x_epsilon": None}, "protects nothing"),
    ({"feature_mechanism": "laplace"}, "feature_mechanism"),
    ({"public_fraction": 0.0}, "public_fraction"), ({"mcmc_share": 1.0}, "mcmc_share"),
])
def test_bad_settings_give_one_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeteroRR(**kwargs)


def test_a_mask_of_the_wrong_shape_is_refused(make_trainer, tiny_dm):
    tiny_dm.setup("fit")
    tiny_dm.data.private_edge_mask = torch.ones(3, dtype=torch.bool)
    with pytest.raises(ValueError, match="one entry per edge column"):
        fitted(make_trainer, tiny_dm, epsilon=1.0)


def test_a_new_graph_gets_both_releases_on_its_own_ledgers(make_trainer, tiny_dm):
    model = fitted(make_trainer, tiny_dm, epsilon=1.0, x_epsilon=2.0, epochs=1)
    spent = model.privacy_spent()
    other = make_csbm(num_nodes=40, num_features=8, num_classes=3, avg_degree=4.0, seed=5)
    new = Data(x=other.x.clamp(0, 1), edge_index=other.edge_index, num_nodes=40,
               inductive=True)
    first = model.predict_step(new, 0)
    assert first.shape == (40, 3)
    report = model.last_inference_report
    assert report["features"].count("multibit") == 1
    assert report["edges"].count("edgerr/mcmc") == 1
    assert torch.equal(model.predict_step(new, 0), first)  # cached: nothing more spent
    assert model.privacy_spent() == spent


def test_the_transform_releases_once_for_any_model(make_trainer):
    """``HeteroRRRelease`` draws the releases with the model's own code, once: the data
    module's graph carries the released features and edges and the two-guarantee report, and a
    non-private GNN trains on it (post-processing)."""
    release = HeteroRRRelease(epsilon=1.0, x_epsilon=2.0, feature_mechanism="multibit")
    dm = NodeDataModule("csbm", seed=0, dataset_kwargs=TINY, feature_range=(0.0, 1.0),
                        feature_bounds=(-4.0, 4.0), transform=release)
    dm.setup("fit")
    data = dm.data
    assert isinstance(data.privacy_report, SeveralGuarantees)
    assert data.privacy_report == release.report
    assert torch.equal(data.edge_index, release.model.releases.get("edges"))
    assert torch.equal(data.x, release.model.releases.get("features"))
    raw = make_csbm(**TINY, seed=3)
    again = HeteroRRRelease(epsilon=1.0)
    first = again(raw)
    assert torch.equal(again(raw).edge_index, first.edge_index)  # the same graph: cached
    assert again.report.count("edgerr/mcmc") == 1 and not hasattr(raw, "privacy_report")
    assert release.report["edges"].count("edgerr/mcmc") == 1
    with pytest.raises(ValueError, match="one release per model"):
        release(make_csbm(**TINY, seed=1))
    make_trainer(max_epochs=2).fit(GNN(conv="gcn"), dm)


def test_featurerr_weights_come_from_the_public_nodes_only(make_trainer, tiny_dm):
    """The attack: changing the features of a node outside the public subset leaves theta, and
    so every other node's output distribution, unchanged; theta sums to 1 and is restored with
    the model (public state), not recomputed."""
    model = HeteroRR(epsilon=math.inf, x_epsilon=4.0, public_fraction=0.5, **FAST)
    tiny_dm.setup("fit")
    data = tiny_dm.data
    public = model.public_nodes(data)
    assert 0 < int(public.sum()) < data.num_nodes
    theta = model.public_theta(data)
    assert float(theta.sum()) == pytest.approx(1.0) and theta.numel() == data.num_features
    changed = data.clone()
    private_node = int(torch.nonzero(~public)[0])
    changed.x = changed.x.clone()
    changed.x[private_node] = 1.0 - changed.x[private_node]
    assert torch.equal(model.public_theta(changed), theta)
    make_trainer(max_epochs=1).fit(model, tiny_dm)
    report = model.privacy_spent()
    assert [e.name for e in report.ledger] == ["featurerr"]
    assert report.epsilon == pytest.approx(4.0)
    assert torch.equal(model.theta, theta)
    loaded = HeteroRR(epsilon=math.inf, x_epsilon=4.0, public_fraction=0.5, **FAST,
                      num_features=data.num_features, num_classes=3)
    loaded.load_privacy_state(model.privacy_state())
    assert torch.equal(loaded.theta, theta)
    assert torch.equal(loaded.releases.get("features"), model.releases.get("features"))


def test_a_public_node_mask_selects_the_public_nodes(tiny_dm):
    tiny_dm.setup("fit")
    data = tiny_dm.data.clone()
    model = HeteroRR(epsilon=math.inf, x_epsilon=1.0)
    data.public_node_mask = torch.arange(data.num_nodes) < 10
    assert torch.equal(model.public_nodes(data), data.public_node_mask)
    data.public_node_mask = torch.ones(3, dtype=torch.bool)
    with pytest.raises(ValueError, match="public_node_mask"):
        model.public_nodes(data)


def test_the_public_embedding_reads_public_nodes_only_and_travels_with_the_model(
    make_trainer, tiny_dm, tmp_path
):
    """``feature_dim``: a PCA fitted on the public nodes (a private node's features change
    neither the PCA nor theta); the GCN reads the embedded width, a new graph comes with the
    raw width, and a published folder restores the embedding."""
    model = HeteroRR(epsilon=1.0, x_epsilon=4.0, feature_dim=4, public_fraction=0.5, **FAST)
    tiny_dm.setup("fit")
    data = tiny_dm.data
    public = model.public_nodes(data)
    enc = model.fit_encoder(data)
    changed = data.clone()
    changed.x = changed.x.clone()
    changed.x[~public] = torch.rand_like(changed.x[~public])
    for key, value in model.fit_encoder(changed).items():
        assert torch.equal(value, enc[key]), key
    make_trainer(max_epochs=1).fit(model, tiny_dm)
    assert model.hparams.num_features == 4 and model.releases.get("features").shape[1] == 4
    assert model.privacy_spent()["features"].ledger[0].note.count("over 4 features") == 1
    other = make_csbm(num_nodes=30, num_features=8, num_classes=3, avg_degree=4.0, seed=6)
    new = Data(x=other.x.clamp(0, 1), edge_index=other.edge_index, num_nodes=30,
               inductive=True)
    assert model.predict_step(new, 0).shape == (30, 3)
    model.save_pretrained(tmp_path / "pca")
    loaded = HeteroRR.from_pretrained(tmp_path / "pca")
    for key, value in model.encoder.items():
        assert torch.equal(loaded.encoder[key], value)
    assert torch.allclose(loaded.predict_step(data, 0), model.predict_step(data, 0))
    with pytest.raises(ValueError, match="feature_dim"):
        HeteroRR(epsilon=1.0, feature_dim=4)


def test_private_pairs_mark_their_edges_whatever_the_edge_order(tiny_dm):
    """``private_pairs`` names the private edges by their ends: shuffling the edge columns
    (as preprocessing may) marks the same edges; a pair that is not an edge is refused."""
    tiny_dm.setup("fit")
    data = tiny_dm.data.clone()
    model = HeteroRR(epsilon=1.0)
    e = data.edge_index
    data.private_pairs = e[:, :6].flip(0)  # either direction
    mask = model.private_edges(data)
    n = data.num_nodes
    key = torch.minimum(e[0], e[1]) * n + torch.maximum(e[0], e[1])
    chosen = set(key[:6].tolist())
    assert set(key[mask].tolist()) == chosen and int(mask.sum()) == 2 * len(chosen)
    order = torch.randperm(e.size(1), generator=torch.Generator().manual_seed(0))
    data.edge_index = e[:, order]
    shuffled = model.private_edges(data)
    assert torch.equal(shuffled, mask[order])
    absent = next((i, j) for i in range(n) for j in range(i + 1, n)
                  if i * n + j not in set(key.tolist()))
    data.private_pairs = torch.tensor([[absent[0]], [absent[1]]])
    with pytest.raises(ValueError, match="not edges of the graph"):
        model.private_edges(data)


def test_the_paper_code_mode_is_not_private_and_refused_by_the_budget_and_the_zoo(
    make_trainer, tiny_dm, tmp_path
):
    from lightning_dpgnn.publish import hub

    with pytest.raises(BudgetExceededError):
        fitted(make_trainer, tiny_dm, mode="paper-code", callbacks=[PrivacyBudget(epsilon=100.0)])
    model = fitted(make_trainer, tiny_dm, mode="paper-code")
    report = model.privacy_spent()
    assert math.isinf(report.epsilon) and "NOT differentially private" in report.unit
    assert model.edgerr.rounds == (1000, 10)  # the authors' alternation
    assert any("NOT differentially private" in r for r in hub.publication_refusals(model))
    with pytest.raises(hub.PublishError):
        model.save_pretrained(tmp_path / "out")
    with pytest.raises(ValueError, match="paper-code"):
        HeteroRR(epsilon=math.inf, x_epsilon=1.0, mode="paper-code")
    with pytest.raises(ValueError, match="mode"):
        HeteroRR(mode="paper")


def _with_features(change) -> NodeDataModule:
    """The tiny data module (set up) with its graph's features ``change(x)`` (a neighbour)."""
    other = tiny_datamodule()
    other.setup("fit")
    other.data.x = change(other.data.x.clone())
    return other


def test_no_node_is_read_in_the_clear_unless_declared_and_then_the_unit_names_them(
    make_trainer, tiny_dm, tmp_path
):
    """Review 3, N2 (the attack): without a declared public subset, FeatureRR's published
    state is the same whatever any node's features are (theta uniform, nothing read in the
    clear), and the unit protects every node. With ``public_fraction``, changing one public
    node's features moves the published theta, so the unit, the printed report and the card
    name those nodes as read in the clear, and the guarantee covers the other nodes."""
    tiny_dm.setup("fit")
    x = tiny_dm.data.x
    states = []
    for dm in (tiny_dm, _with_features(lambda v: 1.0 - v)):
        model = HeteroRR(epsilon=math.inf, x_epsilon=4.0, **FAST)
        make_trainer(max_epochs=1).fit(model, dm)
        states.append(model.public_state())
    assert torch.equal(states[0]["theta"], states[1]["theta"]) and "encoder" not in states[0]
    report = model.privacy_spent()
    assert report.unit.startswith("each node's features") and "clear" not in report.unit
    assert "uniform theta" in report.ledger[0].note

    model = HeteroRR(epsilon=1.0, x_epsilon=4.0, public_fraction=0.5, **FAST)
    make_trainer(max_epochs=1).fit(model, tiny_dm)
    public = model.public_nodes(tiny_dm.data)
    node = int(torch.nonzero(public)[0])
    neighbour = HeteroRR(epsilon=1.0, x_epsilon=4.0, public_fraction=0.5, **FAST)
    changed = _with_features(lambda v: torch.where(
        torch.arange(len(v))[:, None] == node, 1.0 - x[node], v))
    make_trainer(max_epochs=1).fit(neighbour, changed)
    assert not torch.equal(model.theta, neighbour.theta)  # read in the clear: so named
    unit = model.privacy_spent()["features"].unit
    named = (f"the {int(public.sum())} public nodes of the training graph, chosen as "
             "public_fraction=0.5 of the nodes by a hash of public_seed=0")
    assert unit.startswith("each non-public node's features") and named in unit
    assert "are read in the clear: their raw features and labels fit FeatureRR's theta" in unit
    assert named in str(model.privacy_spent())
    model.save_pretrained(tmp_path / "h")
    card = (tmp_path / "h" / "README.md").read_text()
    assert named in card and "each non-public node's features" in card
    with pytest.raises(ValueError, match="needs declared public nodes"):
        make_trainer(max_epochs=1).fit(HeteroRR(epsilon=math.inf, x_epsilon=4.0, feature_dim=4,
                                                **FAST), tiny_dm)


def test_the_edge_epsilon_prints_its_equilibrium_condition_and_short_chains_are_refused(
    make_trainer, tiny_dm
):
    """Review 3, N7: the chain's epsilon holds at equilibrium only. The unit, printed under
    the epsilon (report and card), says so with the chain length; a chain shorter than
    PrivHRG's 1000 n moves is refused before anything is drawn or spent."""
    with pytest.raises(ValueError, match="steps_per_node must be >= 1000"):
        HeteroRR(epsilon=1.0, steps_per_node=50.0)
    short = HeteroRR(epsilon=1.0, mcmc_steps=800, **FAST)  # 10 n on 80 nodes
    with pytest.raises(ValueError, match=r"shorter than the minimum 1000 n = 80000.*mcmc_steps"):
        make_trainer(max_epochs=1).fit(short, tiny_dm)
    assert not short.privacy_spent().ledger and short.releases.get("edges") is None
    model = fitted(make_trainer, tiny_dm, epsilon=1.0, epochs=1)
    headline, protects = str(model.privacy_spent()).splitlines()[:2]
    assert headline.startswith("edge-level DP: epsilon = 1")
    assert "at the HRG chain's equilibrium only, assumed reached after 1000 n moves" in protects
    assert HeteroRR(epsilon=1.0, mcmc_steps=10**6).privacy_spent().unit.endswith(
        "assumed reached after 1000000 moves (PrivHRG's burn-in, at least 1000 n; no mixing "
        "bound is proven)")


def test_a_long_chain_shows_its_bar_unless_the_trainer_shows_none(make_trainer, tiny_dm,
                                                                  monkeypatch, capsys):
    """Issue 41 item 5: a long chain shows a bar by default; inside a fit it follows the
    Trainer (the test trainers show no progress bar), and ``progress=True`` forces it."""
    from lightning_dpgnn.privacy import hrg

    monkeypatch.setattr(hrg, "PROGRESS_AFTER_SECONDS", 0.0)  # every chain is "long"
    fitted(make_trainer, tiny_dm, epsilon=1.0, epochs=1)
    assert "HRG MCMC" not in capsys.readouterr().err
    fitted(make_trainer, tiny_dm, epsilon=1.0, epochs=1, progress=True)
    assert "HRG MCMC" in capsys.readouterr().err
    HeteroRRRelease(epsilon=1.0)(make_csbm(**TINY, seed=3))  # no Trainer: the default shows it
    assert "HRG MCMC" in capsys.readouterr().err
