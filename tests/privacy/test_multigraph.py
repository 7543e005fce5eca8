"""Invariant 12: graphs are simple wherever they enter (issue 27, fault 1).

Attack-style: a multigraph (every friendship stored twice, as concatenated edge lists produce;
at node level one friendship stored three times) goes in through each entry point, and either
it is refused, or what the model releases moves by at most the sensitivity its ledger accounts
between neighbouring graphs. Without the rule a doubled friendship moved the label counts and
the first hop by 2.83 against an accounted 1.41, and a tripled edge broke the ``sqrt(D)``
bound."""

import math

import lightning as L
import pytest
import torch

from lightning_dpgnn import GAP, LPGNN, PGC, ProGAP
from lightning_dpgnn.data import (
    MultigraphError,
    NodeDataModule,
    RepeatedEdgesWarning,
    count_repeated_edges,
    load_dataset,
    register_dataset,
    require_simple,
    simple_graph,
)
from lightning_dpgnn.methods import DPGNN, EdgeRand
from lightning_dpgnn.methods.releases import Draw
from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.aggregation import (
    GaussianAggregation,
    check_degree_promise,
    normalize_rows,
    sum_aggregate,
)
from lightning_dpgnn.privacy.mechanism import run

FAST_GAP = dict(encoder_epochs=2, classifier_epochs=2)


def _trainer(tmp_path, **kw):
    return L.Trainer(
        max_epochs=kw.pop("max_epochs", 4), logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path, **kw,
    )


def _raw():
    """The embedded csbm graph as a loader returns it (simple, undirected, no self-loop)."""
    return load_dataset("csbm")


def _doubled(data):
    """Every stored edge stored twice (``cat([ei, ei])``: a friendship list concatenated with
    itself, or both directions appended to an already undirected list)."""
    out = data.clone()
    out.edge_index = torch.cat([data.edge_index, data.edge_index], dim=1)
    return out


def _without_friendship(data, u: int, w: int):
    """The neighbouring graph: every stored copy of the friendship {u, w} removed."""
    ei = data.edge_index
    drop = ((ei[0] == u) & (ei[1] == w)) | ((ei[0] == w) & (ei[1] == u))
    out = data.clone()
    out.edge_index = ei[:, ~drop]
    return out


def _register(data, name):
    register_dataset(name, lambda root, target, **kw: data.clone(), overwrite=True)
    return NodeDataModule(name)


ENTRY_POINTS = {
    "from_data": lambda data, name: NodeDataModule.from_data(data),
    "register_dataset": _register,
}


def _graph_through(entry: str, data, name: str):
    with pytest.warns(RepeatedEdgesWarning, match=r"merged [\d,]+ repeated edges"):
        dm = ENTRY_POINTS[entry](data, name)
        return dm.data


def _counts(graph, num_classes: int) -> torch.Tensor:
    """The label counts GAP releases before noise (its own code path)."""
    model = GAP(privacy="none", label_counts=True)
    model.hparams.num_classes = num_classes
    accountant = PrivacyAccountant("edge", 1e-5)
    return run(model._draw_counts(Draw(graph, accountant, None, {}, fit=False)), accountant)


def _friendship_between_training_nodes(graph) -> tuple[int, int]:
    ei, train = graph.edge_index, graph.train_mask
    both = train[ei[0]] & train[ei[1]] & (ei[0] < ei[1])
    e = int(both.nonzero()[0])
    return int(ei[0, e]), int(ei[1, e])


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_doubled_friendship_list_moves_counts_and_first_hop_by_at_most_the_sensitivity(entry):
    raw = _raw()
    simple = NodeDataModule.from_data(raw).data
    u, w = _friendship_between_training_nodes(simple)
    multi = _doubled(raw)
    c = int(raw.y.max()) + 1
    g = _graph_through(entry, multi, f"multigraph-{entry}")
    g_minus = _graph_through(entry, _without_friendship(multi, u, w), f"multigraph-{entry}-nb")
    assert count_repeated_edges(g.edge_index, g.num_nodes) == 0
    bound = GaussianAggregation(1.0, "edge", edge_unit="undirected").sensitivity  # sqrt(2)
    moved = float(torch.linalg.vector_norm(_counts(g, c) - _counts(g_minus, c)))
    assert moved <= bound + 1e-6, f"label counts moved by {moved:.3f} > {bound:.3f}"
    assert moved == pytest.approx(math.sqrt(2))  # both endpoints train: tight
    n = g.num_nodes
    hop = sum_aggregate(normalize_rows(g.x), g.edge_index, n)
    hop_minus = sum_aggregate(normalize_rows(g_minus.x), g_minus.edge_index, n)
    moved = float(torch.linalg.vector_norm(hop - hop_minus))
    assert moved <= bound + 1e-6, f"first hop moved by {moved:.3f} > {bound:.3f}"


def test_a_fit_on_a_doubled_list_releases_counts_that_move_by_at_most_the_ledger(tmp_path):
    """The whole pipeline: from_data -> fit -> the released (noisy) counts. The same explicit
    noise seed on both neighbours draws the same noise, so the released counts differ by exactly
    the un-noised difference, compared with the sensitivity the ledger records."""
    raw = _raw()
    u, w = _friendship_between_training_nodes(NodeDataModule.from_data(raw).data)
    released = []
    for graph in (_doubled(raw), _without_friendship(_doubled(raw), u, w)):
        with pytest.warns(RepeatedEdgesWarning):
            dm = NodeDataModule.from_data(graph, classes=list(range(int(raw.y.max()) + 1)))
            dm.setup()
        model = GAP(privacy="edge", epsilon=1.0, label_counts=True, noise_seed=3, **FAST_GAP)
        _trainer(tmp_path).fit(model, dm)
        released.append(model.releases["label_counts"])
        ledger = {e.name: e for e in model.privacy_spent().ledger}
    moved = float(torch.linalg.vector_norm(released[0] - released[1]))
    assert moved <= ledger["label_counts"].sensitivity + 1e-3


def test_a_tripled_edge_at_node_level_stays_within_sqrt_d():
    """Node level, D = 3: v's only friendship (v, u) stored three times passes a degree check
    that counts copies; removing v then moved u's row by 3 > sqrt(3) without the rule."""
    raw = _raw()
    n = int(raw.num_nodes)
    v, u = n - 2, n - 1
    ei = raw.edge_index
    keep = (ei[0] < n - 2) & (ei[1] < n - 2)  # v and u lose their edges; the rest as loaded
    rest = ei[:, keep]
    # bring the rest within D = 3: keep for each node at most its first edges (both ways)
    d_bound = 3
    src, dst = rest
    pairs = src < dst
    src, dst = src[pairs], dst[pairs]
    deg = torch.zeros(n, dtype=torch.long)
    chosen = []
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if deg[a] < d_bound and deg[b] < d_bound:
            deg[a] += 1
            deg[b] += 1
            chosen.append((a, b))
    base = torch.tensor(chosen).t()
    tripled = torch.tensor([[v, u]] * 3 + [[u, v]] * 3).t()
    multi = raw.clone()
    multi.edge_index = torch.cat([base, base.flip(0), tripled], dim=1)
    check_degree_promise(multi.edge_index, n, d_bound)  # copies count: the raw input passes
    with pytest.warns(RepeatedEdgesWarning, match="merged 4 repeated edges"):
        g = NodeDataModule.from_data(multi).data
    check_degree_promise(g.edge_index, g.num_nodes, d_bound)
    x = normalize_rows(g.x)
    full = sum_aggregate(x, g.edge_index, n)
    ei = g.edge_index
    without_v = ei[:, (ei[0] != v) & (ei[1] != v)]
    x_minus = x.clone()
    x_minus[v] = 0  # v leaves with its features
    minus = sum_aggregate(x_minus, without_v, n)
    others = torch.arange(n) != v  # v's own row leaves the release with v
    moved = float(torch.linalg.vector_norm((full - minus)[others]))
    bound = GaussianAggregation(1.0, "node", max_degree=d_bound).sensitivity
    assert moved <= bound + 1e-6, f"rows moved by {moved:.3f} > sqrt(D) = {bound:.3f}"


# -- inductive inference: refused ---------------------------------------------------------------
def _fitted(kind: str, dm, tmp_path):
    if kind == "GAP":
        model = GAP(privacy="edge", epsilon=1.0, **FAST_GAP)
    elif kind == "ProGAP":
        model = ProGAP(privacy="edge", epsilon=1.0, depth=1, epochs_per_stage=2)
    elif kind == "DPGNN":
        model = DPGNN(epsilon=16.0, max_degree=64, epochs=1, batch_size=400)
    elif kind == "EdgeRand":
        model = EdgeRand(epsilon=2.0, epochs=1)
    elif kind == "LPGNN":
        # clear features: LPGNN predicts on new graphs only then (with noisy features it
        # refuses them outright, before the simple-graph check)
        model = LPGNN(x_epsilon=float("inf"), y_epsilon=1.0, x_steps=1, y_steps=1)
    else:
        model = PGC(x_epsilon=1.0)
    _trainer(tmp_path, max_epochs=2 if kind in ("LPGNN", "PGC") else 4).fit(model, dm)
    return model


@pytest.mark.parametrize("kind", ["GAP", "ProGAP", "DPGNN", "EdgeRand", "LPGNN", "PGC"])
def test_inductive_inference_refuses_a_multigraph_before_any_mechanism(kind, tmp_path):
    ldp = kind in ("LPGNN", "PGC")
    opts = dict(split="lpgnn", feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0)) if ldp else {}
    dm = NodeDataModule("csbm", seed=0, **opts)
    model = _fitted(kind, dm, tmp_path)
    before = getattr(model, "last_inference_report", None)
    new = NodeDataModule("csbm", seed=0, dataset_kwargs={"seed": 5}, **opts).data
    multi = _doubled(new)
    multi.inductive = True
    with pytest.raises(MultigraphError, match="inductive inference is a multigraph"):
        model.predict_step(multi, 0)
    assert getattr(model, "last_inference_report", None) is before  # nothing was released
    new.inductive = True
    assert model.predict_step(new, 0).shape[0] == new.num_nodes  # the simple graph runs


# -- the training graph of any data module, and transforms ----------------------------------------
def test_a_data_module_that_hands_over_a_multigraph_is_refused_before_the_fit(tmp_path):
    class Doubling(NodeDataModule):  # a custom module that builds its own edge list
        def preprocess(self, data):
            return _doubled(super().preprocess(data))

    model = GAP(privacy="edge", epsilon=1.0, **FAST_GAP)
    with pytest.raises(MultigraphError, match="data module's graph is a multigraph"):
        _trainer(tmp_path).fit(model, Doubling("csbm"))
    assert model.privacy_spent().epsilon == 0.0  # nothing ran


def test_a_transform_that_repeats_edges_is_refused():
    dm = NodeDataModule("csbm", transform=_doubled)
    with pytest.raises(MultigraphError, match="after transform"):
        dm.setup()


def test_simple_graphs_pass_unchanged_and_merging_keeps_the_first_copy():
    raw = _raw()
    assert simple_graph(raw) is raw  # the bundled reader's graph is simple: no copy, no warning
    require_simple(raw)
    shuffled = raw.clone()
    shuffled.edge_index = raw.edge_index[:, torch.randperm(raw.num_edges)]
    assert simple_graph(shuffled) is shuffled  # unsorted but simple
    multi = _doubled(shuffled)
    multi.edge_weight = torch.arange(multi.num_edges, dtype=torch.float)
    with pytest.warns(RepeatedEdgesWarning, match=f"merged {raw.num_edges:,} repeated edges"):
        merged = simple_graph(multi, "mine")
    assert torch.equal(merged.edge_index, shuffled.edge_index)  # order kept
    assert torch.equal(merged.edge_weight, torch.arange(raw.num_edges, dtype=torch.float))
    assert count_repeated_edges(multi.edge_index) == raw.num_edges
    with pytest.raises(MultigraphError, match=f"{raw.num_edges:,} of its"):
        simple_graph(multi, repeated="refuse")
    with pytest.raises(MultigraphError):
        require_simple(multi)
