"""PrivateDegreeBound: a degree bound released under DP and recorded in the ledger (issue 27).

Attack-style: neighbouring graphs (one node, or one friendship, removed) in; the statistic the
mechanism scores moves by at most its stated sensitivity, and the exact output distributions
of the two graphs are within ``e^epsilon`` of each other (and so are sampled ones)."""

import math

import pytest
import torch

from lightning_dpgnn.privacy import (
    PrivacyAccountant,
    PrivateDegreeBound,
    degree_excess,
    round_candidates,
)
from lightning_dpgnn.privacy import random as R
from lightning_dpgnn.privacy.mechanism import draw


def _graph_with_hubs(n=80, hubs=(40, 25, 25), seed=0):
    """An undirected simple graph: sparse random edges plus a few hubs (the top of the degree
    distribution held by one or two nodes, the case that makes the maximum private)."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (3 * n,), generator=gen)
    dst = torch.randint(0, n, (3 * n,), generator=gen)
    pairs = [(int(a), int(b)) for a, b in zip(src, dst, strict=True) if a != b]
    for h, k in enumerate(hubs):
        friends = torch.randperm(n, generator=gen)[:k]
        pairs += [(h, int(f)) for f in friends if int(f) != h]
    ei = torch.tensor(pairs).t()
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    return torch.unique(ei, dim=1), n


def _remove_node(ei, n, v):
    """G - v with the nodes renumbered (v leaves: add/remove convention)."""
    keep = (ei[0] != v) & (ei[1] != v)
    ei = ei[:, keep]
    return ei - (ei > v).long(), n - 1


def _remove_friendship(ei, u, w):
    drop = ((ei[0] == u) & (ei[1] == w)) | ((ei[0] == w) & (ei[1] == u))
    return ei[:, ~drop]


def _count_above(ei, n, ts):
    deg = torch.bincount(ei[0], minlength=n)
    return torch.tensor([float((deg > t).sum()) for t in ts])


TS = list(range(0, 60))


def test_removing_any_node_moves_the_excess_profile_by_at_most_2_and_the_plain_count_more():
    ei, n = _graph_with_hubs()
    full = degree_excess(ei, n, TS)
    worst, worst_count = 0.0, 0.0
    for v in range(n):
        ei_v, n_v = _remove_node(ei, n, v)
        worst = max(worst, float((degree_excess(ei_v, n_v, TS) - full).abs().max()))
        moved = (_count_above(ei_v, n_v, TS) - _count_above(ei, n, TS)).abs().max()
        worst_count = max(worst_count, float(moved))
    assert worst <= PrivateDegreeBound(1.0, [1]).sensitivity == 2.0
    assert worst == 2.0  # tight on this graph
    assert worst_count > 2.0  # why the plain count c_t is not used: a hub moves it a lot
    # the star: removing its centre moves c_0 by the star's size, phi by at most 2
    star = torch.tensor([[0] * 30 + list(range(1, 31)), list(range(1, 31)) + [0] * 30])
    minus, m = _remove_node(star, 31, 0)
    assert float(_count_above(star, 31, [0])[0] - _count_above(minus, m, [0])[0]) == 31
    assert float((degree_excess(star, 31, TS) - degree_excess(minus, m, TS)).abs().max()) <= 2


def test_removing_any_friendship_moves_the_excess_profile_by_at_most_1():
    ei, n = _graph_with_hubs(seed=1)
    full = degree_excess(ei, n, TS)
    for e in range(0, ei.size(1), 7):
        u, w = int(ei[0, e]), int(ei[1, e])
        moved = degree_excess(_remove_friendship(ei, u, w), n, TS) - full
        assert float(moved.abs().max()) <= PrivateDegreeBound(1.0, [1], level="edge").sensitivity


def test_repeated_edges_do_not_move_the_profile():
    ei, n = _graph_with_hubs()
    assert torch.equal(degree_excess(torch.cat([ei, ei, ei], 1), n, TS), degree_excess(ei, n, TS))


def test_the_excess_profile_is_zero_exactly_from_the_maximum_degree():
    ei, n = _graph_with_hubs()
    top = int(torch.bincount(ei[0], minlength=n).max())
    phi = degree_excess(ei, n, range(top + 3))
    assert phi[top] == 0 and phi[top - 1] >= 1 and bool((phi[top:] == 0).all())
    assert bool((phi[:-1] - phi[1:] >= 0).all()) and bool((phi[:-1] - phi[1:] <= 1).all())


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_output_distributions_of_neighbouring_graphs_are_within_e_to_the_epsilon(eps):
    ei, n = _graph_with_hubs()
    mech = PrivateDegreeBound(eps, candidates=list(range(5, 60, 3)))
    p = mech.probabilities(ei, n)
    worst = 0.0
    for v in range(n):  # every node, hubs included
        q = mech.probabilities(*_remove_node(ei, n, v))
        worst = max(worst, float((p.log() - q.log()).abs().max()))
    assert worst <= eps + 1e-9
    assert worst > 0.1 * eps  # the hubs do move it (about a third of the bound here)


def test_sampled_outputs_of_neighbouring_graphs_match_their_ratio_bound():
    """The draws (through privacy/random) follow the stated distribution, and their empirical
    frequencies on G and G - hub stay within e^epsilon up to sampling error."""
    eps, draws = 1.0, 4000
    ei, n = _graph_with_hubs()
    mech = PrivateDegreeBound(eps, candidates=[10, 20, 30, 40, 50])
    gen = R.reproducible_generator(0)
    freq = []
    for graph in ((ei, n), _remove_node(ei, n, 0)):
        out = [draw(mech, PrivacyAccountant("node", 1e-6), gen, *graph) for _ in range(draws)]
        counts = torch.tensor([out.count(t) for t in mech.candidates], dtype=torch.float64)
        freq.append(counts / draws)
        expected = mech.probabilities(*graph)
        assert torch.allclose(freq[-1], expected, atol=0.03)
    both = (freq[0] > 0.05) & (freq[1] > 0.05)
    ratio = (freq[0][both] / freq[1][both]).log().abs()
    assert float(ratio.max()) <= eps + 0.25  # sampling slack at 4,000 draws


def test_the_release_is_recorded_once_as_pure_epsilon_and_marks_seeded_noise():
    ei, n = _graph_with_hubs()
    mech = PrivateDegreeBound(0.5, max_bound=100)
    assert mech.candidates == [1, 2, 5, 10, 20, 50, 100]
    acc = PrivacyAccountant("node", 1e-6)
    d = draw(mech, acc, None, ei, n)
    assert d in mech.candidates
    assert acc.epsilon() == pytest.approx(0.5) and acc.total_count("degree_bound") == 1
    assert "sensitivity 2" in acc.ledger[0].note
    assert not acc.reproducible  # entropy-seeded by default
    draw(mech, acc, R.reproducible_generator(1), ei, n)
    assert acc.reproducible and acc.epsilon() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="cannot be recorded"):
        edge_bound = PrivateDegreeBound(0.5, [1], level="edge")
        draw(edge_bound, PrivacyAccountant("node", 1e-6), None, ei, n)
    with pytest.raises(TypeError, match="accountant"):
        draw(mech, None, None, ei, n)


def test_at_a_large_epsilon_the_release_is_the_smallest_valid_candidate():
    ei, n = _graph_with_hubs()
    top = int(torch.bincount(ei[0], minlength=n).max())
    mech = PrivateDegreeBound(50.0, candidates=list(range(1, 80)))
    p = mech.probabilities(ei, n)
    assert mech.candidates[int(p.argmax())] == top  # the base measure t^-1 prefers it
    below = torch.tensor(mech.candidates) < top
    assert float(p[below].sum()) < 1e-3  # a fit at the release is almost never refused


def test_round_candidates_and_argument_checks():
    assert round_candidates(5000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
    assert round_candidates(709, 100) == [100, 200, 500, 709]
    for bad in (dict(epsilon=math.inf, max_bound=10), dict(epsilon=1.0),
                dict(epsilon=1.0, candidates=[3, 2]), dict(epsilon=1.0, max_bound=5, exceed=-1),
                dict(epsilon=1.0, max_bound=5, level="ldp")):
        with pytest.raises(ValueError):
            PrivateDegreeBound(**bad)
