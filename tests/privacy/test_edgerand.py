"""EdgeRand's asymmetric randomized response (ARR): expected edges kept, neighbouring graphs
(one edge removed) within e^epsilon, no replay from public seeds, never an N x N matrix."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.edgerand import AsymmetricRandomizedResponse, arr_probabilities
from lightning_dpgnn.privacy.mechanism import draw


def _random_undirected(n: int, m: int, seed: int) -> torch.Tensor:
    """``m`` distinct undirected pairs on ``n`` nodes, stored in both directions."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randperm(n * n, generator=g)
    src, dst = keys // n, keys % n
    keep = src < dst
    src, dst = src[keep][:m], dst[keep][:m]
    return torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)


def _release(arr, edge_index, n):
    return draw(arr, PrivacyAccountant("edge"), None, edge_index, n)


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("density", [1e-5, 0.01, 0.3])
def test_flip_probabilities_keep_the_density_and_the_ratio_e_eps(eps, density):
    p11, p01 = arr_probabilities(eps, density)
    # expected output density = input density (q < 1 here)
    assert density * p11 + (1 - density) * p01 == pytest.approx(density, rel=1e-9)
    # the released bit of one pair: both outcomes within e^eps between edge and non-edge
    assert p11 / p01 == pytest.approx(math.exp(eps), rel=1e-9)
    assert (1 - p01) / (1 - p11) <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.parametrize("unit", ["undirected", "directed"])
def test_arr_keeps_the_expected_number_of_edges(unit):
    n, m, runs = 300, 1500, 40
    edges = _random_undirected(n, m, seed=1)
    arr = AsymmetricRandomizedResponse(1.0, edge_unit=unit)
    units = m if unit == "undirected" else 2 * m
    counts = []
    for _ in range(runs):
        out = _release(arr, edges, n)
        counts.append(out.size(1) // (2 if unit == "undirected" else 1))
    counts = np.array(counts, dtype=float)
    se = counts.std(ddof=1) / math.sqrt(runs)
    # E[#output units] = #input units (up to the Laplace count noise, mean 0): a z-test
    assert abs(counts.mean() - units) < 4 * se + 1.0
    # and the randomization is real: the runs differ
    assert counts.std() > 0


def test_the_output_is_a_sorted_graph_of_candidate_pairs():
    n = 200
    edges = _random_undirected(n, 800, seed=2)
    out = _release(AsymmetricRandomizedResponse(2.0), edges, n)
    assert bool((out[0] != out[1]).all())  # self-loops are never candidates
    key = out[0] * n + out[1]
    assert bool((key[1:] > key[:-1]).all())  # sorted, no duplicates: order leaks nothing
    rev = torch.sort(out[1] * n + out[0]).values
    assert torch.equal(rev, key)  # undirected unit: symmetric
    directed = _release(AsymmetricRandomizedResponse(2.0, edge_unit="directed"), edges, n)
    dkey = directed[0] * n + directed[1]
    assert not torch.equal(torch.sort(directed[1] * n + directed[0]).values, dkey)


@pytest.mark.parametrize("unit", ["undirected", "directed"])
def test_removing_one_edge_changes_the_release_by_at_most_e_eps(unit):
    """The attack: neighbouring graphs G (with edge u-v) and G' (without), many releases of
    each; the frequency with which u-v is released (present or absent) differs by at most
    e^epsilon, and the test sees the edge's influence (it is not vacuous)."""
    n, eps, runs = 30, 1.0, 1500
    g = _random_undirected(n, 60, seed=3)
    u, v = int(g[0, 0]), int(g[1, 0])
    drop = ~(((g[0] == u) & (g[1] == v)) | ((g[0] == v) & (g[1] == u)))
    if unit == "directed":  # one directed unit: only u -> v is removed
        drop = ~((g[0] == u) & (g[1] == v))
    g_prime = g[:, drop]
    arr = AsymmetricRandomizedResponse(eps, edge_unit=unit)

    def freq(edges: torch.Tensor) -> float:
        hits = 0
        for _ in range(runs):
            out = _release(arr, edges, n)
            hits += int(((out[0] == u) & (out[1] == v)).any())
        return hits / runs

    p, p_prime = freq(g), freq(g_prime)
    slack = 3 * math.sqrt(0.25 / runs)  # three standard errors of a frequency
    bound = math.exp(eps)
    assert p <= bound * (p_prime + slack)
    assert (1 - p_prime) <= bound * (1 - p + slack)
    # randomized response on this pair: present w.p. ~e^0.9 times more often with the edge
    assert p / p_prime > 1.5


def test_no_replay_from_public_seeds_and_explicit_noise_is_marked():
    n = 100
    edges = _random_undirected(n, 300, seed=4)
    arr = AsymmetricRandomizedResponse(1.0)
    torch.manual_seed(0)
    a = _release(arr, edges, n)
    torch.manual_seed(0)
    b = _release(arr, edges, n)
    assert not torch.equal(a, b)  # the global seed does not replay the randomization
    acc1, acc2 = PrivacyAccountant("edge"), PrivacyAccountant("edge")
    from lightning_dpgnn.privacy.random import reproducible_generator

    c = draw(arr, acc1, reproducible_generator(7), edges, n)
    d = draw(arr, acc2, reproducible_generator(7), edges, n)
    assert torch.equal(c, d) and acc1.reproducible and acc2.reproducible


def test_the_release_is_recorded_as_epsilon_pure_dp():
    acc = PrivacyAccountant("edge")
    arr = AsymmetricRandomizedResponse(2.0, density_share=0.25)
    draw(arr, acc, None, _random_undirected(50, 100, seed=5), 50)
    assert acc.epsilon() == pytest.approx(2.0)
    assert {e.name: e.epsilon for e in acc.ledger} == {"arr/density": 0.5, "arr/link": 1.5}
    with pytest.raises(ValueError, match="edge-level"):
        draw(arr, PrivacyAccountant("node"), None, _random_undirected(50, 100, seed=5), 50)


def test_memory_safe_on_a_graph_whose_dense_adjacency_would_not_fit():
    """200k nodes: a dense adjacency would hold 4e10 entries; the release is linear in E."""
    n, m = 200_000, 50_000
    src = torch.randint(0, n, (m,), generator=torch.Generator().manual_seed(6))
    dst = (src + 1 + torch.randint(0, n - 1, (m,), generator=torch.Generator().manual_seed(7))) % n
    edges = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
    start = time.perf_counter()
    out = _release(AsymmetricRandomizedResponse(1.0), edges, n)
    assert time.perf_counter() - start < 30
    units = AsymmetricRandomizedResponse(1.0).units(edges, n).numel()
    assert abs(out.size(1) / 2 - units) < 0.05 * units
