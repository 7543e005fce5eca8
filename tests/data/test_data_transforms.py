"""Transforms: degree bounding, splits, class filtering, self-loops, isolated nodes, scaling."""

from __future__ import annotations

import time
from collections import Counter

import pytest
import torch
from torch_geometric.data import Data

from lightning_dpgnn.data import (
    BoundDegree,
    FilterClassByCount,
    NodeSplit,
    RemoveIsolatedNodes,
    RemoveSelfLoops,
    ScaleFeatures,
    make_csbm,
)


def _random_graph(n: int, e: int, seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    return Data(
        x=torch.randn(n, 3, generator=g),
        edge_index=ei,
        edge_attr=torch.arange(e, dtype=torch.float),
        y=torch.randint(0, 4, (n,), generator=g),
        num_nodes=n,
    )


def _edge_multiset(ei: torch.Tensor) -> Counter:
    return Counter(zip(ei[0].tolist(), ei[1].tolist(), strict=True))


# ------------------------------------------------------------------ BoundDegree
def test_bound_degree_invariants() -> None:
    data = _random_graph(300, 6000, seed=1)
    # make a few low in-degree nodes so "untouched" is meaningful
    in_deg = torch.bincount(data.edge_index[1], minlength=300)
    d = 15
    assert int(in_deg.max()) > d and int(in_deg.min()) <= d
    out = BoundDegree(d, seed=3)(data)
    new_deg = torch.bincount(out.edge_index[1], minlength=300)
    assert int(new_deg.max()) <= d
    assert torch.equal(new_deg, torch.clamp(in_deg, max=d))  # exactly min(deg, D) kept
    # kept edges are a sub-multiset of the original edges; edge attributes follow
    orig = _edge_multiset(data.edge_index)
    kept = _edge_multiset(out.edge_index)
    assert all(kept[k] <= orig[k] for k in kept)
    assert torch.equal(data.edge_index[:, out.edge_attr.long()], out.edge_index)
    # nodes with in-degree <= D keep all their incoming edges, in original order
    for v in (in_deg <= d).nonzero().view(-1).tolist():
        assert torch.equal(
            data.edge_index[0, data.edge_index[1] == v], out.edge_index[0, out.edge_index[1] == v]
        )
    # node attributes untouched and input not modified
    assert torch.equal(out.x, data.x) and data.num_edges == 6000


def test_bound_degree_seeded_and_uniform() -> None:
    # node 0 has 10 in-neighbours, D = 3: each edge kept with probability 0.3
    ei = torch.stack([torch.arange(1, 11), torch.zeros(10, dtype=torch.long)])
    data = Data(edge_index=ei, num_nodes=11)
    a = BoundDegree(3, seed=5)(data).edge_index
    b = BoundDegree(3, seed=5)(data).edge_index
    assert torch.equal(a, b)
    counts = torch.zeros(11)
    trials = 2000
    for s in range(trials):
        kept = BoundDegree(3, seed=s)(data).edge_index[0]
        assert kept.numel() == 3 and kept.unique().numel() == 3
        counts[kept] += 1
    freq = counts[1:] / trials
    assert torch.all((freq - 0.3).abs() < 0.045), freq


def test_bound_degree_zero_and_noop() -> None:
    data = _random_graph(50, 200)
    assert BoundDegree(0)(data).num_edges == 0
    big = BoundDegree(10_000)(data)
    assert torch.equal(big.edge_index, data.edge_index)
    with pytest.raises(ValueError, match="max_degree"):
        BoundDegree(-1)


def test_bound_degree_fast_on_large_graph() -> None:
    n, e = 25_000, 1_600_000
    data = Data(edge_index=torch.randint(0, n, (2, e)), num_nodes=n)
    start = time.perf_counter()
    out = BoundDegree(20, seed=0)(data)
    elapsed = time.perf_counter() - start
    assert int(torch.bincount(out.edge_index[1]).max()) <= 20
    assert elapsed < 5.0, f"BoundDegree on 1.6M edges took {elapsed:.2f}s"


# ------------------------------------------------------------------ NodeSplit
@pytest.mark.parametrize("by", ["identity", "position"])
@pytest.mark.parametrize(
    "fractions", [(0.75, 0.10, 0.15), (0.5, 0.25, 0.25), (0.6, 0.0, 0.4), (1.0, 0.0, 0.0)]
)
def test_node_split_disjoint_covering_sizes(fractions: tuple[float, float, float], by: str) -> None:
    data = make_csbm(num_nodes=1001, seed=2)
    out = NodeSplit(*fractions, seed=0, by=by)(data)
    tr, va, te = out.train_mask, out.val_mask, out.test_mask
    assert not bool((tr & va).any() or (tr & te).any() or (va & te).any())
    assert bool((tr | va | te).all())
    n = 1001
    # positional sizes are exact; identity sizes are binomial (sd <= 16 here)
    tol = 1 if by == "position" else 60
    for mask, frac in zip((tr, va, te), fractions, strict=True):
        assert abs(int(mask.sum()) - frac * n) <= tol
        if frac == 0.0:
            assert not bool(mask.any())


def test_node_split_presets_seed_and_unlabeled() -> None:
    data = make_csbm(num_nodes=400, seed=0)
    gap = NodeSplit.from_preset("gap", seed=1, by="position")(data)
    assert int(gap.train_mask.sum()) == 300 and int(gap.val_mask.sum()) == 40
    lp = NodeSplit.from_preset("LPGNN", seed=1, by="position")(data)
    assert int(lp.train_mask.sum()) == 200 and int(lp.test_mask.sum()) == 100
    for by in ("identity", "position"):
        first = NodeSplit.from_preset("gap", seed=1, by=by)(data)
        again = NodeSplit.from_preset("gap", seed=1, by=by)(data)
        other = NodeSplit.from_preset("gap", seed=2, by=by)(data)
        assert torch.equal(first.train_mask, again.train_mask)
        assert not torch.equal(first.train_mask, other.train_mask)
    assert NodeSplit().by == "identity"
    with pytest.raises(ValueError, match="by must be"):
        NodeSplit(by="random")
    # unlabeled nodes (y < 0) are never put in a split
    y = data.y.clone()
    y[:50] = -1
    for by in ("identity", "position"):
        out = NodeSplit(0.5, 0.25, 0.25, by=by)(Data(x=data.x, edge_index=data.edge_index, y=y))
        allm = out.train_mask | out.val_mask | out.test_mask
        assert not bool(allm[:50].any()) and bool(allm[50:].all())
    assert "train_mask" not in data  # input untouched


# ------------------------------------------------------------------ FilterClassByCount
def _labeled_path_graph() -> Data:
    # labels: class 0 x5, class 1 x2, class 2 x7 ; a path 0-1-...-13 both directions
    y = torch.tensor([0, 1, 2, 0, 2, 1, 0, 2, 2, 0, 2, 0, 2, 2])
    n = y.numel()
    src = torch.arange(n - 1)
    ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], dim=1)
    return Data(x=torch.arange(n, dtype=torch.float).view(-1, 1), edge_index=ei, y=y)


def test_filter_class_by_count_drops_and_remaps() -> None:
    data = _labeled_path_graph()
    out = FilterClassByCount(3)(data)
    kept_old = (data.y != 1).nonzero().view(-1)  # class 1 has 2 < 3 nodes
    assert out.num_nodes == kept_old.numel() == 12
    # x carries the old node id: labels remapped 0->0, 2->1
    old_ids = out.x.view(-1).long()
    assert torch.equal(old_ids, kept_old)
    assert torch.equal(out.y, torch.tensor([0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1]))
    assert set(out.y.tolist()) == {0, 1}
    # every remaining edge maps back to an original edge between kept nodes
    orig = _edge_multiset(data.edge_index)
    mapped = old_ids[out.edge_index]
    assert all(orig[(a, b)] for a, b in zip(mapped[0].tolist(), mapped[1].tolist(), strict=True))
    expected = sum(1 for (a, b) in orig if data.y[a] != 1 and data.y[b] != 1)
    assert out.num_edges == expected


def test_filter_class_by_fraction_and_unlabeled() -> None:
    data = _labeled_path_graph()
    data.y = data.y.clone()
    data.y[0] = -1  # one unlabeled node (class 0 now has 4)
    out = FilterClassByCount(0.5)(data)  # >= 50% of 13 labeled nodes -> only class 2 (7)
    assert out.num_nodes == 7 and bool((out.y == 0).all())
    out0 = FilterClassByCount(0)(data)
    assert out0.num_nodes == 13 and bool((out0.y >= 0).all())
    with pytest.raises(ValueError, match="removes every class"):
        FilterClassByCount(100)(data)


# ------------------------------------------------------------------ self-loops / isolated
def test_remove_self_loops_and_isolated() -> None:
    ei = torch.tensor([[0, 1, 1, 2, 3, 5], [1, 0, 1, 2, 0, 5]])
    data = Data(
        x=torch.arange(7, dtype=torch.float).view(-1, 1),
        edge_index=ei,
        edge_attr=torch.arange(6.0),
        y=torch.arange(7),
        train_mask=torch.tensor([True, False, True, False, True, False, True]),
    )
    no_loops = RemoveSelfLoops()(data)
    assert no_loops.edge_index.tolist() == [[0, 1, 3], [1, 0, 0]]
    assert no_loops.edge_attr.tolist() == [0.0, 1.0, 4.0]
    assert no_loops.num_nodes == 7
    out = RemoveIsolatedNodes()(no_loops)
    # nodes 2 and 5 only had self-loops, 4 and 6 had nothing: kept 0, 1, 3
    assert out.x.view(-1).tolist() == [0.0, 1.0, 3.0]
    assert out.y.tolist() == [0, 1, 3]
    assert out.train_mask.tolist() == [True, False, False]
    assert out.edge_index.tolist() == [[0, 1, 2], [1, 0, 0]]
    # without removing self-loops first, a self-loop keeps a node
    assert RemoveIsolatedNodes()(data).num_nodes == 5


# ------------------------------------------------------------------ ScaleFeatures
def test_scale_features_range() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100, 5, generator=g) * 10 + 3
    x[:, 2] = 7.0  # constant column
    data = Data(x=x, edge_index=torch.zeros(2, 0, dtype=torch.long))
    out = ScaleFeatures(-1.0, 2.0)(data)
    assert float(out.x.min()) >= -1.0 and float(out.x.max()) <= 2.0
    for j in (0, 1, 3, 4):
        assert torch.isclose(out.x[:, j].min(), torch.tensor(-1.0))
        assert torch.isclose(out.x[:, j].max(), torch.tensor(2.0))
        assert torch.equal(torch.argsort(out.x[:, j]), torch.argsort(x[:, j]))  # monotone
    assert bool((out.x[:, 2] == -1.0).all())
    assert torch.equal(data.x, x)  # input untouched
    with pytest.raises(ValueError, match="alpha < beta"):
        ScaleFeatures(1.0, 1.0)
