"""LapGraph (LinkTeller's Laplace-then-top-m baseline): accounting, output and exactness."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_dpgnn.privacy import LapGraph, PrivacyAccountant
from lightning_dpgnn.privacy.mechanism import draw
from lightning_dpgnn.privacy.random import reproducible_generator as seeded


def ring(n: int) -> torch.Tensor:
    src = torch.arange(n)
    dst = (src + 1) % n
    return torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])


def test_lapgraph_is_accounted_as_two_pure_laplace_mechanisms():
    acc = PrivacyAccountant("edge")
    out = draw(LapGraph(2.0), acc, seeded(0), ring(40), 40)
    assert acc.epsilon() == pytest.approx(2.0)
    assert [e.name for e in acc.ledger] == ["lapgraph/count", "lapgraph/adjacency"]
    assert acc.ledger[0].epsilon == pytest.approx(0.02)  # LinkTeller: 1% on the count
    assert acc.ledger[1].epsilon == pytest.approx(1.98)
    assert acc.reproducible
    pairs = set(map(tuple, out.T.tolist()))
    assert pairs == {(j, i) for i, j in pairs} and all(i != j for i, j in pairs)
    with pytest.raises(ValueError, match="edge-level"):
        draw(LapGraph(1.0), PrivacyAccountant("ldp"), None, ring(10), 10)
    with pytest.raises(ValueError, match="count_share"):
        LapGraph(1.0, count_share=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        LapGraph(-1.0)


def test_a_large_budget_returns_the_graph_and_chunks_do_not_matter():
    """At epsilon 1e4 the noise is ~1e-4: the top-m~ pairs are the edges, whatever the chunk
    the noisy entries are drawn in (many chunks of a few rows here)."""
    n = 50
    edges = ring(n)
    for chunk in (7, 100, 1 << 20):
        out = draw(LapGraph(1e4, chunk=chunk), PrivacyAccountant("edge"), seeded(1), edges, n)
        key = lambda e: set((e[0] * n + e[1]).tolist())  # noqa: E731
        assert key(out) == key(edges)


def test_the_released_edge_count_is_the_noisy_count():
    """The number of released pairs is ``m + Laplace(1 / (0.01 eps))`` rounded: centred on
    the true count ``m`` (here eps = 100: Laplace scale 1)."""
    n = 60
    sizes = [draw(LapGraph(100.0), PrivacyAccountant("edge"), seeded(s), ring(n), n).size(1) // 2
             for s in range(60)]
    assert np.mean(sizes) == pytest.approx(n, abs=0.6)
    assert max(abs(s - n) for s in sizes) <= 10
