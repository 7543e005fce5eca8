"""GW-LDP end to end on small synthetic graphs: the server's GW (POT), the SVM, the federated
fit, the release (once, checkpointed), the report's unit and scope, DP-FedAvg, and the refusals
of the paper-code reference mode."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from lightning_dpgnn.callbacks import PrivacyBudget
from lightning_dpgnn.callbacks.privacy_budget import BudgetExceededError
from torch_geometric.data import Data

from lightning_dpgnn import GWLDP, gw
from lightning_dpgnn.data import GraphDataModule, ego_graphs
from lightning_dpgnn.methods.gwldp import RELEASE_KEY
from lightning_dpgnn.privacy import MatrixMultiBit


def _cycle(n: int) -> torch.Tensor:
    a = torch.arange(n)
    ei = torch.stack([a, (a + 1) % n])
    return torch.cat([ei, ei.flip(0)], 1)


def _star(n: int) -> torch.Tensor:
    leaves = torch.arange(1, n)
    ei = torch.stack([torch.zeros_like(leaves), leaves])
    return torch.cat([ei, ei.flip(0)], 1)


def toy_graphs(count: int = 40, seed: int = 0) -> list[Data]:
    """Cycles (label 0) and stars (label 1) of 5-8 nodes with one-hot-degree-ish features."""
    rng = np.random.default_rng(seed)
    graphs = []
    for i in range(count):
        n = int(rng.integers(5, 9))
        label = i % 2
        ei = _star(n) if label else _cycle(n)
        deg = torch.bincount(ei[0], minlength=n).clamp(max=3)
        x = torch.nn.functional.one_hot(deg, 4).float()
        graphs.append(Data(x=x, edge_index=ei, y=torch.tensor([label]), num_nodes=n))
    return graphs


def toy_dm(**kw) -> GraphDataModule:
    kw = {"split": (0.6, 0.2, 0.2), "num_clients": 4, "dirichlet_alpha": 5.0, **kw}
    return GraphDataModule("toy", graphs=toy_graphs(), **kw)


def trainer(rounds: int = 3, **kw) -> L.Trainer:
    return L.Trainer(
        max_epochs=rounds, logger=False, enable_progress_bar=False, enable_model_summary=False,
        enable_checkpointing=False, num_sanity_val_steps=0, **kw,
    )


SMALL_GRID = {"svm_c_grid": [0.1, 10.0], "svm_gamma_grid": [1.0, 8.0]}


class GWLDPRecording(GWLDP):
    """GWLDP that records, per round, the clients this process ran (``-1``: a padding step)."""

    def on_train_epoch_start(self) -> None:
        super().on_train_epoch_start()
        self.clients_run = [*getattr(self, "clients_run", []), []]

    def training_step(self, client: int, batch_idx: int) -> None:
        self.clients_run[-1].append(int(client))
        return super().training_step(client, batch_idx)


#: the fits run with clients as DDP ranks (gwldp_ddp_fits.py) and on one process: the clear
#: release of a GCN, of a GIN (BatchNorm buffers averaged too), DP-FedAvg + the LDP release at a
#: fixed (test-only) noise seed, and the same with secure (entropy-seeded) noise
RUNS = {
    "clear-gcn": dict(mode="none", gnn="gcn", seed=0, local_epochs=2),
    "clear-gin": dict(mode="none", gnn="gin", gnn_hidden=8, gnn_layers=2, gnn_dropout=0.0,
                      seed=0, local_epochs=2),
    "dp-seeded": dict(epsilon=4.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_clip=0.5,
                      fedavg_noise_multiplier=1.0, noise_seed=5),
    "dp-secure": dict(epsilon=4.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_clip=0.5,
                      fedavg_noise_multiplier=1.0),
}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ------------------------------------------------------------------ the server (POT)
def test_gw_of_a_graph_with_itself_is_zero_and_permutation_invariant() -> None:
    g = toy_graphs(4)[1]
    c = gw.structure_cost(g.edge_index, g.num_nodes)
    assert gw.gw_discrepancy(c, c) == pytest.approx(0.0, abs=1e-10)
    perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(0))
    cp = c[np.ix_(perm.numpy(), perm.numpy())]
    other = gw.structure_cost(_cycle(6), 6)
    assert gw.gw_discrepancy(cp, other) == pytest.approx(gw.gw_discrepancy(c, other), rel=1e-6)
    h = torch.rand(g.num_nodes, 3, generator=torch.Generator().manual_seed(1))
    ch = gw.embedding_cost(h)
    assert ch.max() == pytest.approx(1.0)
    assert gw.gw_discrepancy(ch, gw.embedding_cost(h[perm])) == pytest.approx(0.0, abs=1e-10)
    # FGW with the features: zero with itself, positive against another graph
    m = gw.feature_cost(g.x, g.x)
    assert gw.gw_discrepancy(c, c, m) == pytest.approx(0.0, abs=1e-10)


def test_all_pairs_are_symmetric_cached_and_separate_the_classes(tmp_path: Path) -> None:
    graphs = toy_graphs(20)
    costs = [gw.structure_cost(g.edge_index, g.num_nodes) for g in graphs]
    d = gw.pairwise_discrepancy(costs, cache_dir=tmp_path)
    assert np.allclose(d, d.T) and np.allclose(np.diag(d), 0)
    (cached,) = tmp_path.glob("gw-*.npy")
    marked = d.copy()
    marked[0, 1] = 123.0
    np.save(cached, marked)  # a rerun reads the cache, it does not recompute
    assert gw.pairwise_discrepancy(costs, cache_dir=tmp_path)[0, 1] == 123.0
    assert not (tmp_path / "other").exists()
    costs2 = [c.copy() for c in costs]
    costs2[0][0, 1] += 1.0  # other inputs, another key
    assert gw.pairwise_discrepancy(costs2, cache_dir=tmp_path)[0, 1] != 123.0
    y = np.array([int(g.y) for g in graphs])
    acc, params = gw.svm_split(d, y, np.arange(0, 12), np.arange(12, 16), np.arange(16, 20),
                               c_grid=[1.0, 10.0], gamma_grid=[1.0, 4.0])
    assert acc == 1.0 and set(params) == {"C", "gamma"}
    res = gw.svm_nested_cv(d, y, outer_splits=2, test_size=0.25, inner_folds=3,
                           c_grid=[1.0], gamma_grid=[1.0, 4.0])
    assert len(res.accuracies) == 2 and res.mean == 1.0
    assert gw.knn_accuracy(d, y, np.arange(12), np.arange(12, 20), k=3) == 1.0



def test_clustering_in_discrepancy_space_recovers_separated_groups() -> None:
    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.normal(0, 0.1, (15, 2)), rng.normal(3, 0.1, (15, 2)),
                          rng.normal((0, 3), 0.1, (15, 2))])
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    truth = np.repeat([0, 1, 2], 15)
    for method in ("spectral", "kmedoids"):
        scores = gw.cluster_scores(gw.cluster(d, 3, method, gamma=8.0), truth)
        assert scores["nmi"] > 0.95 and scores["ari"] > 0.95, method


# ------------------------------------------------------------------ the pipeline
def test_tiny_pipeline_clients_release_gw_svm_runs_in_seconds() -> None:
    dm = toy_dm()
    model = GWLDP(epsilon=4.0, gnn="gcn", local_epochs=2, seed=0, **SMALL_GRID)
    tr = trainer(3)
    tr.fit(model, dm)
    rel = model.releases[RELEASE_KEY]
    assert len(rel) == 40 and rel.kind == "codes"
    assert [c.shape[0] for c in rel.matrices] == [int(dm.dataset[int(i)].num_nodes)
                                                  for i in rel.graph_ids]
    out = tr.test(model, dm, verbose=False)[0]
    assert 0.0 <= out["test/svm_acc"] <= 1.0 and "test/acc" in out
    report = model.privacy_spent()
    assert report.level == "ldp" and report.epsilon == pytest.approx(4.0)
    assert "one client's whole graph" in report.unit
    assert "number of nodes is public" in report.unit  # the size decision
    assert "FedAvg model updates are sent in the clear" in report.unit  # the scope
    assert "public: every graph's label" in report.unit  # read by the label-Dirichlet partition
    assert report.count("gwldp/multibit") == 1


def test_the_release_is_drawn_once_and_restored_from_a_checkpoint(tmp_path: Path) -> None:
    dm = toy_dm()
    model = GWLDP(epsilon=2.0, gnn="gcn", seed=0)
    tr = trainer(2)
    tr.fit(model, dm)
    first = [c.clone() for c in model.releases[RELEASE_KEY].matrices]
    path = tmp_path / "gw.ckpt"
    tr.save_checkpoint(path)
    tr.fit(model, dm)  # a second fit keeps the release: no second draw, no second epsilon
    mats = model.releases[RELEASE_KEY].matrices
    assert all(torch.equal(a, b) for a, b in zip(first, mats, strict=True))
    assert model.privacy_spent().epsilon == pytest.approx(2.0)
    restored = GWLDP.load_from_checkpoint(path)
    mats = restored.releases[RELEASE_KEY].matrices
    assert all(torch.equal(a, b) for a, b in zip(first, mats, strict=True))
    assert restored.privacy_spent().epsilon == pytest.approx(2.0)
    assert restored.net is not None


def test_clustering_of_the_release_is_scored_against_the_labels() -> None:
    model = GWLDP(mode="none", gnn="gcn", seed=0)
    tr = trainer(2)
    tr.fit(model, toy_dm(num_clients=None))
    out = model.cluster_release(method="kmedoids")
    assert len(out["labels"]) == 40 and -1.0 <= out["ari"] <= 1.0 and 0.0 <= out["nmi"] <= 1.0


def test_a_published_model_loads_back_with_its_release(tmp_path: Path) -> None:
    """Weights trained by FedAvg in the clear carry no guarantee: the publish gate refuses
    them; with DP-FedAvg the model publishes and loads back with its release and epsilon."""
    from lightning_dpgnn.publish import hub

    clear = GWLDP(epsilon=2.0, gnn="gcn", seed=0)
    trainer(1).fit(clear, toy_dm())
    with pytest.raises(hub.PublishError, match="FedAvg in the clear"):
        clear.save_pretrained(tmp_path / "clear")
    assert not (tmp_path / "clear").exists()
    model = GWLDP(epsilon=2.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_noise_multiplier=4.0)
    trainer(1).fit(model, toy_dm())
    model.save_pretrained(tmp_path / "gw")
    back = GWLDP.from_pretrained(tmp_path / "gw")
    assert back.privacy_spent() == model.privacy_spent()
    assert back.privacy_spent()["release"].epsilon == pytest.approx(2.0)
    assert back.privacy_spent()["dp-fedavg"].epsilon > 0
    ours, theirs = model.releases[RELEASE_KEY].matrices, back.releases[RELEASE_KEY].matrices
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_gin_padded_release_hides_the_size() -> None:
    dm = toy_dm()
    model = GWLDP(epsilon=1.0, gnn="gin", gnn_hidden=8, gnn_layers=2, size="padded", n_max=8,
                  seed=0)
    trainer(1).fit(model, dm)
    assert {c.shape for c in model.releases[RELEASE_KEY].matrices} == {(8, 8)}
    assert "n_max=8" in model.privacy_spent().unit


def test_fgw_uses_the_released_rows_as_features() -> None:
    model = GWLDP(mode="none", gnn="gcn", seed=0, fgw_alpha=0.5, **SMALL_GRID)
    tr = trainer(1)
    tr.fit(model, toy_dm())
    d_fgw = model.discrepancy()
    model.hparams.fgw_alpha = None
    model._discrepancy = None
    assert not np.allclose(d_fgw, model.discrepancy())  # the feature term changes D


def test_clear_mode_is_non_private() -> None:
    model = GWLDP(mode="none", gnn="gcn", seed=0)
    trainer(1).fit(model, toy_dm())
    report = model.privacy_spent()
    assert report.level == "none" and math.isinf(report.epsilon)
    assert model.releases[RELEASE_KEY].kind == "values"


def test_dp_fedavg_is_calibrated_and_accounted_beside_the_release() -> None:
    """The DP-FedAvg rounds and the local release are two guarantees (the server sees each
    clipped update: DP-FedAvg does not protect against it, the release does), each on its own
    ledger, reported side by side and never added; the rounds' noise is calibrated to
    ``fedavg_epsilon`` by the one calibration path."""
    model = GWLDP(epsilon=1.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_epsilon=2.0,
                  fedavg_clip=0.5)
    dm = toy_dm()
    tr = trainer(3, callbacks=[PrivacyBudget(epsilon={"dp-fedavg": 2.0, "release": 1.0})])
    tr.fit(model, dm)
    report = model.privacy_spent()
    fedavg, release = report["dp-fedavg"], report["release"]
    assert fedavg.count("gwldp/dp-fedavg") == 3 and fedavg.count("gwldp/multibit") == 0
    assert release.count("gwldp/multibit") == 1 and release.count("gwldp/dp-fedavg") == 0
    assert fedavg.delta == pytest.approx(1e-4)  # 40 graphs: the default n * delta <= 0.01
    assert 1.99 < fedavg.epsilon <= 2.0  # calibrated, never over the target
    assert release.epsilon == pytest.approx(1.0) and not release.delta  # pure
    assert "DP-FedAvg model updates" in fedavg.unit and "composed" in release.unit
    assert model.hparams.fedavg_noise_multiplier > 0


def test_budget_refuses_a_release_over_it() -> None:
    model = GWLDP(epsilon=4.0, gnn="gcn", seed=0)
    with pytest.raises(BudgetExceededError):
        trainer(1, callbacks=[PrivacyBudget(epsilon=1.0)]).fit(model, toy_dm())


# ------------------------------------------------------------------ graphs cut from one graph
def circulant(n: int = 16, x: torch.Tensor | None = None) -> Data:
    """A source graph: node i linked to i +- 1 and i +- 2 (every 1-hop ego graph holds 5 nodes,
    and every node is in 5 of them), random features, labels i % 2."""
    a = torch.arange(n)
    ei = torch.cat([torch.stack([a, (a + k) % n]) for k in (1, 2)], 1)
    ei = torch.cat([ei, ei.flip(0)], 1)
    if x is None:
        x = torch.rand(n, 4, generator=torch.Generator().manual_seed(0))
    return Data(x=x, edge_index=ei, y=a % 2, num_nodes=n)


def ego_dm(source: Data) -> GraphDataModule:
    return GraphDataModule("circulant-ego1", graphs=ego_graphs(source, hops=1),
                           split=(0.6, 0.2, 0.2), num_clients=2, partition_seed=1)


def test_ego_graphs_of_one_graph_compose_by_the_multiplicity_of_a_node() -> None:
    """The attack of the third review (N1): 1-hop ego graphs cut from one graph overlap, so a
    node's features are read by every released graph that holds it. Changing node 0's
    features changes the released embeddings of exactly those k graphs (the same model); the
    report must cover k releases, not one."""
    source = circulant()
    dm = ego_dm(source)
    model = GWLDP(epsilon=1.0, gnn="gcn", seed=0)
    trainer(2).fit(model, dm)
    ids = model.releases[RELEASE_KEY].graph_ids.tolist()
    holders = [i for i in ids if 0 in dm.dataset[i].node_id.tolist()]
    k = len(holders)
    x = source.x.clone()
    x[0] = 1.0 - x[0]  # the neighbour: node 0 with other features, everything else equal
    other = ego_dm(circulant(x=x))
    before = model.node_embeddings([dm.dataset[i] for i in ids])
    after = model.node_embeddings([other.dataset[i] for i in ids])
    moved = [i for i, a, b in zip(ids, before, after, strict=True) if not torch.equal(a, b)]
    assert moved == holders and k == 5  # node 0's features go out in 5 released graphs
    report = model.privacy_spent()
    assert report.epsilon == pytest.approx(k * 1.0)  # sequential composition over the 5
    assert "one node of the source graph" in report.unit
    assert "in up to 5 released graph(s)" in report.unit
    assert "source graph's edges" in report.unit  # what makes k public, named


def test_dp_fedavg_accounts_a_node_held_by_several_clients() -> None:
    """DP-FedAvg's "one graph changes one client" fails for overlapping graphs: one node of the
    source graph is in the training graphs of several clients, whose updates it changes
    together; the recorded sensitivity covers all of them."""
    dm = ego_dm(circulant())
    dm.setup()
    held: dict[int, set[int]] = {}
    for c in dm.clients:
        for i in c.train.tolist():
            for v in dm.dataset[i].node_id.tolist():
                held.setdefault(v, set()).add(c.client)
    spread = max(len(h) for h in held.values())
    assert spread == 2  # the test needs a node on both clients
    model = GWLDP(epsilon=1.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_clip=0.5,
                  fedavg_noise_multiplier=2.0)
    trainer(1).fit(model, dm)
    (entry,) = [e for e in model.accountant.ledger if e.name == "gwldp/dp-fedavg"]
    assert entry.sensitivity == pytest.approx(2 * 0.5 * spread)
    assert entry.noise_multiplier == pytest.approx(2.0 / (2 * spread))
    assert "training graphs of up to 2 clients" in model.privacy_spent()["dp-fedavg"].unit


def test_a_private_fit_logs_nothing_computed_in_the_clear(tmp_path: Path) -> None:
    """N5: a DP-FedAvg fit logs no training loss and no validation metric (computed in the
    clear from the clients' graphs) to the logger or callback_metrics; the progress bar shows
    the planned spend of the whole fit, not an epsilon of 0 until the release; trainer.test's
    figures (evaluation, not covered by epsilon) are still logged."""
    from lightning.pytorch.loggers import CSVLogger

    model = GWLDP(epsilon=1.0, gnn="gcn", seed=0, dp_fedavg=True, fedavg_clip=0.5,
                  fedavg_noise_multiplier=2.0, **SMALL_GRID)
    tr = L.Trainer(max_epochs=2, logger=CSVLogger(tmp_path), enable_progress_bar=False,
                   enable_model_summary=False, enable_checkpointing=False,
                   num_sanity_val_steps=0,
                   callbacks=[PrivacyBudget(epsilon={"dp-fedavg": 100.0, "release": 100.0})])
    dm = toy_dm()
    tr.fit(model, dm)
    logged = (tmp_path / "lightning_logs" / "version_0" / "metrics.csv").read_text()
    keys = set(tr.callback_metrics) | set(logged.splitlines()[0].split(","))
    assert not [k for k in keys if k.startswith(("train/", "val/"))], keys
    for name, report in model.privacy_spent().guarantees.items():  # one figure per guarantee
        planned = tr.progress_bar_metrics[f"privacy/epsilon_planned/{name}"]
        assert planned == pytest.approx(report.epsilon, rel=1e-5)
    out = tr.test(model, dm, verbose=False)[0]
    assert "test/acc" in out and "test/svm_acc" in out


def test_nonsense_settings_are_refused_with_one_sentence() -> None:
    """Issue 41, item 7: one client is not a federation; graphs of one node have nothing for GW
    to compare (every discrepancy is 0), nor do matrices padded to one row."""
    with pytest.raises(ValueError, match="num_clients=1 is not a federation"):
        toy_dm(num_clients=1)
    dots = [Data(x=torch.ones(1, 2), edge_index=torch.empty(2, 0, dtype=torch.long),
                 y=torch.tensor([i % 2]), num_nodes=1) for i in range(8)]
    with pytest.raises(ValueError, match="every graph has a single node"):
        trainer(1).fit(GWLDP(epsilon=1.0), GraphDataModule("dots", graphs=dots, num_clients=2))
    with pytest.raises(ValueError, match="n_max must be >= 2"):
        GWLDP(size="padded", n_max=1)


# ------------------------------------------------------------------ clients as DDP ranks
@pytest.mark.slow
def test_clients_as_ddp_ranks_release_what_one_process_releases(ddp_fits) -> None:
    """The same fits with the 5 clients spread over 2 DDP processes (gloo, CPU;
    gwldp_ddp_fits.py, run in the suite's one DDP launch: tests/ddp_fits.py): every client
    runs once per round on one rank (5 clients, 2 ranks: a padding step, never a repeated
    client); both ranks hold bit-identical weights, release and
    ledger (the GIN: its BatchNorm buffers averaged too); the release and the weights are the
    single-process ones (the clear release of a GCN; DP-FedAvg at a fixed test-only noise seed,
    whose noise would be twice as large if each rank added its own); the ledger counts one
    DP-FedAvg round per round, not one per rank; with secure (entropy-seeded) noise the ranks
    still agree, so rank 0 drew it and broadcast it. The GIN is not compared with one process:
    the order in which client updates are summed changes the sum in its last bits, and Adam
    turns the ~1e-9 gradient of a bias followed by BatchNorm into steps of about lr (one
    process in two client orders differs by 0.01)."""
    out, launch = ddp_fits
    ranks = [out / f"gwldp-{r}.json" for r in (0, 1)]
    assert all(f.is_file() for f in ranks), launch["stdout"][-2000:] + launch["stderr"][-4000:]
    assert "Traceback" not in launch["stderr"], launch["stderr"][-4000:]
    r0, r1 = (json.loads(f.read_text()) for f in ranks)
    for name, kwargs in RUNS.items():
        a, b = dict(r0[name]), dict(r1[name])
        for round0, round1 in zip(a.pop("clients"), b.pop("clients"), strict=True):
            ran = sorted(c for c in round0 + round1 if c >= 0)
            assert ran == list(range(5)) and len(round0) == len(round1) == 3, (round0, round1)
        assert a == b, name  # weights, release, ledger, epsilon: bit-identical on both ranks
        if name == "dp-secure":
            assert a["release"] != r0["dp-seeded"]["release"]  # fresh noise
        if name in ("dp-secure", "clear-gin"):
            continue
        ddp = torch.load(out / f"{name}.pt", weights_only=True)
        model = GWLDP(**kwargs)
        trainer(3).fit(model, toy_dm(num_clients=5))
        assert model.releases[RELEASE_KEY].graph_ids.tolist() == a["ids"]
        for p, q in zip(ddp["params"], model.parameters(), strict=True):
            assert torch.allclose(p, q.detach(), atol=1e-5), name
        mats = model.releases[RELEASE_KEY].matrices
        if name == "clear-gcn":
            assert all(torch.allclose(x, y, atol=1e-5)
                       for x, y in zip(ddp["release"], mats, strict=True))
        else:  # the same codes (a float rounding may move a sampled entry: not in 1%)
            same = sum(int((x == y).sum()) for x, y in zip(ddp["release"], mats, strict=True))
            assert same >= 0.99 * sum(m.numel() for m in mats)
        states = model.ledgers.state_dict().values()
        assert a["ledger"] == [e for st in states for e in st["ledger"]]
        assert a["epsilon"] == {n: r.epsilon for n, r in model.privacy_spent().guarantees.items()}
        counts = {e["name"]: e["count"] for e in a["ledger"]}
        assert counts == ({} if name == "clear-gcn" else
                          {"gwldp/dp-fedavg": 3, "gwldp/multibit": 1})


# ------------------------------------------------------------------ the paper-code reference mode
def test_paper_code_mode_is_refused_by_the_budget_and_the_zoo(tmp_path: Path) -> None:
    from lightning_dpgnn.publish import hub

    with pytest.raises(BudgetExceededError):
        trainer(1, callbacks=[PrivacyBudget(epsilon=100.0)]).fit(
            GWLDP(mode="paper-code", gnn="gcn", seed=0), toy_dm()
        )
    model = GWLDP(mode="paper-code", gnn="gcn", seed=0)
    trainer(1).fit(model, toy_dm())
    report = model.privacy_spent()
    assert math.isinf(report.epsilon) and "NOT differentially private" in report.unit
    assert any("NOT differentially private" in r for r in hub.publication_refusals(model))
    with pytest.raises(hub.PublishError):
        model.save_pretrained(tmp_path / "out")
    assert model.releases[RELEASE_KEY].kind == "values"


def test_mechanism_is_the_one_declared() -> None:
    model = GWLDP(epsilon=3.0, m=1, size="padded", n_max=30)
    mech = model.release_mechanism()
    assert isinstance(mech, MatrixMultiBit) and mech.n_max == 30 and mech.epsilon == 3.0
    with pytest.raises(ValueError):
        GWLDP(mode="ldp", size="padded")  # n_max must be declared
    with pytest.raises(ValueError):
        GWLDP(dp_fedavg=True)  # a noise multiplier or a target is needed
