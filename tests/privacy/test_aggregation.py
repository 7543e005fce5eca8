"""Private sum aggregation: A^T X, row normalization, noise scale, accounting, degree checks."""

from __future__ import annotations

import math
import time

import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.aggregation import (
    GaussianAggregation,
    degrees,
    normalize_rows,
    sum_aggregate,
)
from lightning_dpgnn.privacy.mechanism import draw


def hop(agg, x, edge_index, num_nodes, accountant, generator=None):
    """One recorded hop: the exact aggregate, perturbed through :func:`draw`."""
    return draw(agg, accountant, generator, agg.aggregate(x, edge_index, num_nodes))


def random_graph(n: int, e: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (2, e), generator=g)


def dense_adjacency(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    a = torch.zeros(n, n, dtype=torch.float64)
    for u, v in edge_index.t().tolist():
        a[u, v] += 1.0  # A[u, v] = 1 for an edge u -> v (multiplicity counted)
    return a


def test_sum_aggregate_equals_dense_a_transpose_x():
    n, d = 30, 6
    ei = random_graph(n, 120, seed=0)
    ei = torch.cat([ei, torch.tensor([[3, 3, 5], [3, 7, 7]])], dim=1)  # self-loop, duplicate
    x = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    expected = dense_adjacency(ei, n).t() @ x
    assert torch.allclose(sum_aggregate(x, ei, n), expected, atol=1e-12)
    # float32 and integer inputs take other paths
    assert torch.allclose(sum_aggregate(x.float(), ei, n), expected.float(), atol=1e-5)
    xi = torch.randint(-3, 4, (n, d))
    assert torch.equal(sum_aggregate(xi, ei, n), (dense_adjacency(ei, n).t() @ xi.double()).long())
    # direction: an edge u -> v adds x[u] to row v only
    one = sum_aggregate(torch.eye(3, dtype=torch.float64), torch.tensor([[0], [2]]), 3)
    assert torch.equal(one, torch.tensor([[0, 0, 0], [0, 0, 0], [1, 0, 0]], dtype=torch.float64))
    # no edges: all zeros
    assert torch.equal(
        sum_aggregate(x, torch.empty(2, 0, dtype=torch.long), n), torch.zeros_like(x)
    )


def test_sum_aggregate_validation():
    x = torch.randn(4, 2)
    with pytest.raises(ValueError, match="outside"):
        sum_aggregate(x, torch.tensor([[0, 4], [1, 2]]), 4)
    with pytest.raises(ValueError, match="rows"):
        sum_aggregate(x, torch.tensor([[0], [1]]), 5)
    with pytest.raises(ValueError, match=r"\[2, num_edges\]"):
        sum_aggregate(x, torch.tensor([0, 1]), 4)


def test_sum_aggregate_is_fast_on_large_graphs():
    n, e, d = 100_000, 1_600_000, 64
    ei = random_graph(n, e, seed=2)
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(3))
    sum_aggregate(x[:10], ei[:, :10] % 10, 10)  # warm-up
    t0 = time.perf_counter()
    out = sum_aggregate(x, ei, n)
    elapsed = time.perf_counter() - t0
    assert out.shape == (n, d)
    # spot-check a few rows against a direct computation
    for v in (0, 12345, 99_999):
        mask = ei[1] == v
        assert torch.allclose(out[v], x[ei[0, mask]].sum(0), atol=1e-3)
    assert elapsed < 10.0, f"sum_aggregate took {elapsed:.2f}s for 1.6M edges x 64 dims"


def test_normalize_rows():
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0], [-1e-30, 0.0], [1e30, -1e30], [1e-40, 0.0]])
    out = normalize_rows(x)
    assert not torch.isnan(out).any()
    assert torch.equal(out[1], torch.zeros(2))
    norms = torch.linalg.vector_norm(out, dim=1)
    # tiny (even subnormal) and huge rows still get unit norm (no under/overflow)
    assert torch.allclose(norms[[0, 2, 3, 4]], torch.ones(4))
    assert torch.allclose(out[0], torch.tensor([0.6, 0.8]))
    assert torch.equal(normalize_rows(torch.zeros(3, 5)), torch.zeros(3, 5))


@pytest.mark.parametrize("level,max_degree,nm", [("edge", None, 0.7), ("node", 4, 1.3)])
def test_noise_std_matches_multiplier_times_sensitivity(level, max_degree, nm):
    n, d = 4000, 32
    # a degree-bounded graph: a ring with 2 out- and 2 in-neighbours per node
    src = torch.arange(n).repeat(2)
    dst = torch.cat([(torch.arange(n) + 1) % n, (torch.arange(n) + 2) % n])
    ei = torch.stack([src, dst])
    x = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    agg = GaussianAggregation(nm, level=level, max_degree=max_degree)
    acc = PrivacyAccountant(level=level, delta=1e-5)
    out = hop(agg, x, ei, n, acc, generator=torch.Generator().manual_seed(1))
    noise = out - sum_aggregate(normalize_rows(x), ei, n)
    # edge level: the undirected unit (the default) has sensitivity sqrt(2)
    expected_std = nm * (math.sqrt(2.0) if level == "edge" else math.sqrt(max_degree))
    assert agg.std == pytest.approx(expected_std)
    k = noise.numel()
    assert abs(float(noise.mean())) <= 5 * expected_std / math.sqrt(k)
    # SE of the sample std of a Gaussian ~ sigma / sqrt(2k)
    assert abs(float(noise.std()) - expected_std) <= 5 * expected_std / math.sqrt(2 * k)
    # not re-normalized: output norms are far from 1
    assert float(torch.linalg.vector_norm(out, dim=1).mean()) > 1.5


@pytest.mark.parametrize("level,max_degree", [("edge", None), ("node", 3)])
def test_one_accountant_entry_per_call(level, max_degree):
    n = 20
    ei = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    x = torch.randn(n, 4)
    agg = GaussianAggregation(2.0, level=level, max_degree=max_degree, name="pma/hop")
    acc = PrivacyAccountant(level=level, delta=1e-6)
    for k in range(1, 5):
        hop(agg, x, ei, n, acc)
        assert agg.calls == k
        assert acc.total_count("pma/hop") == k
    assert len(acc.ledger) == 1  # same mechanism: one entry whose count is the number of calls
    entry = acc.ledger[0]
    assert entry.kind == "gaussian" and entry.count == 4 and entry.noise_multiplier == 2.0
    assert entry.sensitivity == pytest.approx(math.sqrt(2.0 if level == "edge" else 3))
    assert entry.level == level


@pytest.mark.parametrize("K,s,delta", [(1, 1.0, 1e-5), (2, 5.0, 1e-6), (4, 2.5, 1e-7)])
def test_edge_level_epsilon_is_proposition_6(K, s, delta):
    n = 10
    ei = torch.stack([torch.arange(n), (torch.arange(n) + 3) % n])
    x = torch.randn(n, 3)
    agg = GaussianAggregation(s, level="edge", edge_unit="directed")
    acc = PrivacyAccountant(level="edge", delta=delta, conversion="basic")
    h = x
    for _ in range(K):
        h = hop(agg, h, ei, n, acc)
    closed = K / (2 * s**2) + math.sqrt(2 * K * math.log(1 / delta)) / s
    assert acc.epsilon() == pytest.approx(closed, rel=1e-6)


def test_node_level_epsilon_is_theorem_3():
    """Node level with noise std sigma: RDP K D alpha / (2 sigma^2) (Theorem 3)."""
    n, D, K, sigma, delta = 12, 3, 2, 6.0, 1e-5
    ei = torch.stack(
        [torch.arange(n).repeat(D), torch.cat([(torch.arange(n) + i) % n for i in range(1, D + 1)])]
    )
    agg = GaussianAggregation(sigma / math.sqrt(D), level="node", max_degree=D)
    assert agg.std == pytest.approx(sigma)
    acc = PrivacyAccountant(level="node", delta=delta, conversion="basic")
    for _ in range(K):
        hop(agg, torch.randn(n, 5), ei, n, acc)
    closed = K * D / (2 * sigma**2) + math.sqrt(2 * K * D * math.log(1 / delta)) / sigma
    assert acc.epsilon() == pytest.approx(closed, rel=1e-6)


def test_node_level_rejects_unbounded_degrees():
    n, D = 10, 2
    x = torch.randn(n, 3)
    agg = GaussianAggregation(1.0, level="node", max_degree=D)
    acc = PrivacyAccountant(level="node", delta=1e-5)
    fan_in = torch.tensor([[1, 2, 3], [0, 0, 0]])  # node 0 has in-degree 3 > D
    fan_out = torch.tensor([[0, 0, 0], [1, 2, 3]])  # node 0 has out-degree 3 > D
    for ei, what in ((fan_in, "in-degree 3"), (fan_out, "out-degree 3")):
        with pytest.raises(ValueError, match="public upper bound") as info:
            hop(agg, x, ei, n, acc)
        assert what in str(info.value)
    assert agg.calls == 0 and acc.ledger == []  # nothing released, nothing recorded
    ok = torch.tensor([[0, 0, 1], [1, 2, 2]])  # max in-degree 2, max out-degree 2
    in_deg, out_deg = degrees(ok, n)
    assert int(in_deg.max()) == 2 and int(out_deg.max()) == 2
    hop(agg, x, ok, n, acc)
    assert agg.calls == 1


def test_node_level_requires_max_degree_and_validation():
    with pytest.raises(ValueError, match="max_degree"):
        GaussianAggregation(1.0, level="node")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_degree"):
            GaussianAggregation(1.0, level="node", max_degree=bad)
    for nm in (0.0, -1.0, float("nan"), float("inf"), "a"):
        with pytest.raises(ValueError, match="noise_multiplier"):
            GaussianAggregation(nm)
    with pytest.raises(ValueError, match="level"):
        GaussianAggregation(1.0, level="ldp")


def test_accountant_is_required():
    agg = GaussianAggregation(1.0)
    x, ei = torch.randn(3, 2), torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(TypeError):
        draw(agg, agg.aggregate(x, ei, 3))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="accountant"):
        hop(agg, x, ei, 3, None)
    # an edge-level guarantee cannot be booked on a node-level accountant
    with pytest.raises(ValueError, match="node-level accountant"):
        hop(agg, x, ei, 3, PrivacyAccountant(level="node", delta=1e-5))
    assert agg.calls == 0
    with pytest.raises(ValueError, match="NaN"):
        hop(
            agg,
            torch.tensor([[float("nan"), 0.0], [1, 1], [0, 1]]),
            ei,
            3,
            PrivacyAccountant(level="edge", delta=1e-5),
        )


def test_derived_forms_of_an_edge_index_live_in_a_declared_cache_not_on_the_tensor():
    """The CSR adjacency is cached beside the tensor (never as an attribute on it), for as long
    as the tensor lives and until ``clear_caches``; an in-place edit is a new key."""
    import gc

    from lightning_dpgnn.caches import clear_caches
    from lightning_dpgnn.privacy.aggregation import _ADJACENCY, in_adjacency

    clear_caches()
    edges = torch.tensor([[0, 1, 2], [1, 2, 0]])
    first = in_adjacency(edges, 3, torch.float32)
    assert in_adjacency(edges, 3, torch.float32) is first  # reused
    assert not [k for k in getattr(edges, "__dict__", {}) if k.startswith("_dpgnn")]
    edges[0, 0] = 2  # in place: the cached form is stale and rebuilt
    assert in_adjacency(edges, 3, torch.float32) is not first
    assert len(_ADJACENCY) == 1
    del edges, first
    gc.collect()
    assert len(_ADJACENCY) == 0  # gone with its tensor
    other = torch.tensor([[0], [1]])
    in_adjacency(other, 2, torch.float32)
    clear_caches()
    assert len(_ADJACENCY) == 0
