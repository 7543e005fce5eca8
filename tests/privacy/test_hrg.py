"""The private HRG (EdgeRR / PrivHRG): likelihood, sensitivity, the chain, the sampling and the
release, attacked with neighbouring graphs that differ in one private edge."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant, hrg, secure_mode
from lightning_dpgnn.privacy.edgerand import bernoulli_positions
from lightning_dpgnn.privacy.mechanism import draw
from lightning_dpgnn.privacy.random import reproducible_generator as seeded


def random_pairs(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pairs = np.array([p for p in itertools.combinations(range(n), 2)])
    return pairs[rng.choice(len(pairs), size=m, replace=False)].T


def leaves_below(den: hrg.Dendrogram, node: int) -> set[int]:
    n = den.num_leaves
    if node >= n - 1:
        return {node - (n - 1)}
    return leaves_below(den, den.left[node]) | leaves_below(den, den.right[node])


def brute_force_likelihood(den: hrg.Dendrogram, edges: np.ndarray) -> float:
    """``sum_r e log p + (N - e) log(1 - p)`` with ``p = e / N``, every set built from scratch."""
    edge_set = {frozenset(p) for p in edges.T.tolist()}
    total = 0.0
    for r in range(den.num_leaves - 1):
        a, b = leaves_below(den, den.left[r]), leaves_below(den, den.right[r])
        big = len(a) * len(b)
        e = sum(frozenset((x, y)) in edge_set for x in a for y in b)
        if 0 < e < big:
            p = e / big
            total += e * math.log(p) + (big - e) * math.log(1 - p)
    return total


def test_the_likelihood_agrees_with_a_brute_force_computation():
    n = 9
    public, private = random_pairs(n, 10, 0), random_pairs(n, 6, 1)
    for seed in range(5):
        den = hrg.Dendrogram.random(n, seeded(seed))
        l_pub, l_pri = hrg.log_likelihood(den, public, private)
        assert l_pub == pytest.approx(brute_force_likelihood(den, public))
        assert l_pri == pytest.approx(brute_force_likelihood(den, private))


def test_the_chain_keeps_its_counts_and_likelihood_exact():
    """After many swaps the kernel's running counts, sizes and likelihood equal a recomputation
    from the final tree (the O(volume) updates are right)."""
    n = 40
    pairs = random_pairs(n, 120, 2)
    public, private = pairs[:, :70], pairs[:, 70:]
    fit = hrg.fit_dendrogram(n, public, private, 0.7, 3000, generator=seeded(3),
                             backend="python", trace_points=30)
    den = fit.dendrogram
    assert np.array_equal(fit.public_counts, hrg.edge_counts(den, public))
    assert np.array_equal(fit.private_counts, hrg.edge_counts(den, private))
    size = den.sizes()
    assert np.array_equal(fit.pairs, size[den.left] * size[den.right])
    assert fit.trace[-1, 1:] == pytest.approx(hrg.log_likelihood(den, public, private))
    assert 0 < fit.accepted < 3000 and fit.trace.shape == (30, 3)
    # a valid binary tree: every leaf once, every internal node but the root has a parent
    assert sorted(leaves_below(den, den.root)) == list(range(n))
    assert (den.parent[: n - 1] < 0).sum() == 1


def test_the_progress_bar_changes_nothing(capsys):
    n = 12
    pairs = random_pairs(n, 20, 11)
    quiet = hrg.fit_dendrogram(n, pairs[:, :10], pairs[:, 10:], 0.3, 300, generator=seeded(5),
                               backend="python")
    shown = hrg.fit_dendrogram(n, pairs[:, :10], pairs[:, 10:], 0.3, 300, generator=seeded(5),
                               backend="python", progress=True, chunk=100)
    assert "HRG MCMC" in capsys.readouterr().err
    assert np.array_equal(quiet.dendrogram.left, shown.dendrogram.left)


def test_long_chains_show_progress_by_default_without_private_figures(capsys, monkeypatch):
    """A chain expected to take more than a few seconds shows a bar by default (1000 n moves
    on Cora in Python, on musae-facebook compiled); a short one stays quiet. The bar counts
    moves only: the likelihoods are computed from the private edges."""
    assert hrg.shows_progress(1000 * 2708, "python") and hrg.shows_progress(1000 * 22470, "numba")
    assert not hrg.shows_progress(1000 * 80, "python")
    assert not hrg.shows_progress(1000 * 2708, "numba")
    assert hrg.EdgeRR(1.0).progress is None
    n = 12
    pairs = random_pairs(n, 20, 11)
    hrg.fit_dendrogram(n, pairs[:, :10], pairs[:, 10:], 0.3, 300, generator=seeded(5))
    assert "HRG MCMC" not in capsys.readouterr().err
    monkeypatch.setattr(hrg, "PROGRESS_AFTER_SECONDS", 0.0)  # every chain is "long"
    hrg.fit_dendrogram(n, pairs[:, :10], pairs[:, 10:], 0.3, 300, generator=seeded(5))
    err = capsys.readouterr().err
    assert "HRG MCMC" in err and "L_pri" not in err and "L_pub" not in err


def test_a_chain_shorter_than_privhrgs_burn_in_is_refused_before_anything_is_spent():
    """Review 3, N7: a short chain is not the exponential mechanism (n = 4, one move: a
    dendrogram one graph reaches is unreachable under its neighbour), so EdgeRR refuses fewer
    than 1000 n moves, before any draw, and its condition names the length."""
    n = 12
    pairs = random_pairs(n, 20, 9)
    edge_index = torch.from_numpy(np.concatenate([pairs, pairs[::-1]], axis=1).copy())
    with pytest.raises(ValueError, match="steps_per_node must be >= 1000"):
        hrg.EdgeRR(1.0, steps_per_node=50.0)
    mech, acc = hrg.EdgeRR(1.0, steps=1), PrivacyAccountant("edge")
    with pytest.raises(ValueError, match=r"a chain of 1 moves on 12 nodes is shorter than the "
                                         r"minimum 1000 n = 12000"):
        draw(mech, acc, None, edge_index, n, hrg.edge_split(edge_index, 0.5))
    assert acc.ledger == [] and mech.last_fit is None
    assert hrg.EdgeRR(1.0, steps=12000).check_chain(n) == 12000
    assert "equilibrium only, assumed reached after 1000 n moves" in hrg.EdgeRR(1.0).condition()
    assert hrg.PaperCodeEdgeRR(1.0).check_chain(n) == 50 * n  # not DP at any length


def test_the_compiled_kernel_is_installed_and_the_same_code():
    """numba is a dependency: ``backend="auto"`` runs the compiled kernel (about 100 times
    faster), which draws the same chain as the pure-Python reference (the fallback where numba
    cannot be imported)."""
    n = 12
    pairs = random_pairs(n, 25, 4)
    ref = hrg.fit_dendrogram(n, pairs[:, :15], pairs[:, 15:], 0.3, 500, generator=seeded(1),
                             backend="python")
    auto = hrg.fit_dendrogram(n, pairs[:, :15], pairs[:, 15:], 0.3, 500, generator=seeded(1))
    assert hrg.numba_available() and auto.backend == "numba"
    assert np.array_equal(auto.dendrogram.left, ref.dendrogram.left)
    assert np.array_equal(auto.dendrogram.right, ref.dendrogram.right)
    assert auto.accepted == ref.accepted


@pytest.mark.parametrize("n", [3, 4, 5, 8, 11])
def test_lemma4_is_the_exact_sensitivity_of_one_pair_count(n):
    """``max |N chi((e+1)/N) - N chi(e/N)|`` over every internal-node size ``N <= N_max`` and
    count ``e`` equals Lemma 4's Delta (attained at e = 0, N = N_max)."""
    worst = 0.0
    for left in range(1, n):
        for right in range(1, n - left + 1):
            big = left * right
            e = np.arange(big)
            step = np.abs(hrg.pair_log_likelihood(e + 1, big) - hrg.pair_log_likelihood(e, big))
            worst = max(worst, float(step.max()))
    assert worst == pytest.approx(hrg.sensitivity(n), rel=1e-12)
    big = ((n + 1) // 2) * (n // 2)
    assert hrg.sensitivity(n) == pytest.approx(math.log(big) + (big - 1) * math.log(big / (big - 1))
                                               if big > 1 else 0.0)


def test_one_private_edge_moves_the_private_term_by_at_most_delta():
    """The attack: G and G' differ in one private edge. For random dendrograms the private
    log-likelihood moves by at most Delta, the public one not at all, and every ``N_r`` (over
    the public node set) is the same: so the chain's target ``exp(L_pub + eps/(2 Delta) L_pri)``
    changes by at most ``exp(eps/2)`` pointwise and the normalised law by ``exp(eps)``."""
    n = 10
    pairs = random_pairs(n, 20, 5)
    public, private = pairs[:, :12], pairs[:, 12:]
    extra = np.array([[p] for p in next(
        p for p in itertools.combinations(range(n), 2)
        if not any({*p} == {*q} for q in pairs.T.tolist()))]).reshape(2, 1)
    private2 = np.concatenate([private, extra], axis=1)
    delta, eps = hrg.sensitivity(n), 1.0
    temperature = eps / (2 * delta)
    worst, logs1, logs2 = 0.0, [], []
    for seed in range(40):
        den = hrg.Dendrogram.random(n, seeded(seed))
        pub1, pri1 = hrg.log_likelihood(den, public, private)
        pub2, pri2 = hrg.log_likelihood(den, public, private2)
        assert pub1 == pub2
        worst = max(worst, abs(pri1 - pri2))
        logs1.append(pub1 + temperature * pri1)
        logs2.append(pub2 + temperature * pri2)
    assert worst <= delta + 1e-9
    diff = np.array(logs1) - np.array(logs2)
    assert np.abs(diff).max() <= eps / 2 + 1e-9
    # the node set (hence N_r) is public: a node with no private edge is still a leaf
    assert hrg.Dendrogram.random(n, seeded(0)).num_leaves == n


def test_the_budget_multiplies_the_private_term_only():
    """Without private edges the temperature changes nothing; without public edges and at
    temperature 0 every move is accepted (the public term is the only other force)."""
    n = 12
    pairs = random_pairs(n, 20, 6)
    none = np.zeros((2, 0), dtype=np.int64)
    a = hrg.fit_dendrogram(n, pairs, none, 0.01, 400, generator=seeded(2), backend="python")
    b = hrg.fit_dendrogram(n, pairs, none, 50.0, 400, generator=seeded(2), backend="python")
    assert np.array_equal(a.dendrogram.left, b.dendrogram.left) and a.accepted == b.accepted
    free = hrg.fit_dendrogram(n, none, pairs, 0.0, 400, generator=seeded(2), backend="python")
    assert free.accepted == 400
    hot = hrg.fit_dendrogram(n, none, pairs, 50.0, 400, generator=seeded(2), backend="python")
    assert hot.accepted < 400


def test_bernoulli_positions_is_a_binomial_count_of_uniform_positions():
    totals = torch.tensor([1, 7, 50, 1000, 0, 30])
    rates = torch.tensor([0.5, 0.0, 0.2, 0.01, 0.3, 1.0], dtype=torch.float64)
    counts = torch.zeros(6)
    hits = torch.zeros(50)
    reps = 150
    g = seeded(9)
    for _ in range(reps):
        seg, pos = bernoulli_positions(totals, rates, generator=g)
        assert bool((pos < totals[seg]).all()) and bool((pos >= 0).all())
        counts += torch.bincount(seg, minlength=6)
        hits += torch.bincount(pos[seg == 2], minlength=50)
        key = seg * 10_000 + pos
        assert torch.equal(key, torch.sort(key).values) and key.unique().numel() == key.numel()
    mean = counts / reps
    expected = (totals * rates).float()
    sd = (totals * rates * (1 - rates)).float().sqrt() / math.sqrt(reps)
    assert bool(((mean - expected).abs() <= 5 * sd + 1e-9).all()), (mean, expected)
    # every position of a segment equally likely: 150 * 0.2 = 30 hits each, sd ~5
    assert float(hits.min()) > 10 and float(hits.max()) < 55


def test_the_sampled_private_edges_match_their_expectation_and_public_edges_pass():
    """With the Laplace noise negligible, the expected number of sampled private pairs is the
    number of private edges (``(N_r - e_r) p_r = ebar_r`` per internal node); every public
    edge is in the release, never duplicated."""
    n = 30
    pairs = random_pairs(n, 90, 7)
    public, private = pairs[:, :50], pairs[:, 50:]
    fit = hrg.fit_dendrogram(n, public, private, 0.2, 2000, generator=seeded(0),
                             backend="python")
    sizes = [hrg.sample_private_part(fit, public, 1e9, seeded(s)).shape[1] for s in range(100)]
    assert np.mean(sizes) == pytest.approx(40, abs=5 * np.std(sizes) / math.sqrt(100) + 0.1)
    sampled = hrg.sample_private_part(fit, public, 1e9, seeded(1))
    keys = set((sampled[0] * n + sampled[1]).tolist())
    assert not keys & set((public[0] * n + public[1]).tolist())
    assert bool((sampled[0] < sampled[1]).all())
    # each sampled pair lies under an internal node that holds a private edge
    lca = fit.dendrogram.lca(sampled[0], sampled[1])
    assert bool((fit.private_counts[lca] > 0).all())


def test_the_release_keeps_public_edges_and_is_accounted():
    n = 25
    pairs = random_pairs(n, 60, 8)
    edge_index = torch.from_numpy(np.concatenate([pairs, pairs[::-1]], axis=1).copy())
    mask = hrg.edge_split(edge_index, 0.5, seed=3)
    acc = PrivacyAccountant("edge")
    mech = hrg.EdgeRR(2.0, backend="python")
    out = draw(mech, acc, seeded(4), edge_index, n, mask)
    released = set(map(tuple, out.T.tolist()))
    assert set(map(tuple, edge_index[:, ~mask].T.tolist())) <= released
    assert released == {(j, i) for i, j in released}  # symmetric, no self-loop
    assert all(i != j for i, j in released)
    assert acc.epsilon() == pytest.approx(2.0)
    assert [e.name for e in acc.ledger] == ["edgerr/mcmc", "edgerr/counts"]
    assert acc.ledger[0].epsilon == pytest.approx(1.0) and acc.reproducible
    assert mech.last_fit.steps == 1000 * n
    assert mech.temperature(n) == pytest.approx(1.0 / (2 * hrg.sensitivity(n)))
    with pytest.raises(ValueError, match="edge-level"):
        draw(mech, PrivacyAccountant("ldp"), None, edge_index, n, mask)
    with pytest.raises(ValueError, match="one entry per edge column"):
        draw(mech, acc, None, edge_index, n, mask[:-1])
    with pytest.raises(ValueError, match="both directions"):
        bad = mask.clone()
        bad[0] = ~bad[0]
        draw(mech, acc, None, edge_index, n, bad)


def test_every_draw_goes_through_the_secure_source():
    from lightning_dpgnn.privacy import random as R

    n = 12
    pairs = random_pairs(n, 20, 9)
    edge_index = torch.from_numpy(np.concatenate([pairs, pairs[::-1]], axis=1).copy())
    before = R.secure_draw_count()
    with secure_mode():
        mask = hrg.edge_split(edge_index, 0.5)
        draw(hrg.EdgeRR(1.0, backend="python"), PrivacyAccountant("edge"), None, edge_index, n,
             mask)
        with pytest.raises(R.SecureModeError):
            draw(hrg.EdgeRR(1.0), PrivacyAccountant("edge"), torch.Generator(), edge_index, n,
                 mask)
    assert R.secure_draw_count() >= before + 4  # start, moves, Laplace, sampling


def test_the_split_is_keyed_by_each_edge_and_a_public_seed():
    pairs = random_pairs(200, 2000, 10)
    edge_index = torch.from_numpy(np.concatenate([pairs, pairs[::-1]], axis=1).copy())
    mask = hrg.edge_split(edge_index, 0.3, seed=1)
    m = pairs.shape[1]
    assert torch.equal(mask[:m], mask[m:])  # both directions agree
    assert 0.25 < float(mask[:m].float().mean()) < 0.35
    # one edge removed: every other edge keeps its side
    assert torch.equal(hrg.edge_split(edge_index[:, 1:], 0.3, seed=1), mask[1:])
    assert not torch.equal(hrg.edge_split(edge_index, 0.3, seed=2), mask)
    assert bool(hrg.edge_split(edge_index, 1.0).all())
    for rho in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="rho"):
            hrg.edge_split(edge_index, rho)


def test_bad_settings_are_refused():
    for kwargs, match in [({"epsilon": 0.0}, "epsilon"), ({"epsilon": 1.0, "mcmc_share": 1.0},
                          "mcmc_share"), ({"epsilon": 1.0, "backend": "cuda"}, "backend"),
                          ({"epsilon": 1.0, "steps": -1}, "steps")]:
        with pytest.raises(ValueError, match=match):
            hrg.EdgeRR(**kwargs)
    with pytest.raises(ValueError, match="three nodes"):
        hrg.sensitivity(2)


def test_the_paper_code_chain_alternates_and_reads_the_private_node_count():
    """The authors' chain (paper-code mode, NOT DP): a public round is a chain on L_pub alone,
    and its temperature is read off the private edges (one private edge to a new node moves
    it), which is why it is refused a guarantee."""
    n = 30
    pairs = random_pairs(n, 60, 4)
    public, private = pairs[:, :40], pairs[:, 40:]
    only_public = hrg.fit_dendrogram(n, public, private, 0.0, 400, generator=seeded(6),
                                     backend="python")
    first_round = hrg.fit_dendrogram(n, public, private, 5.0, 400, generator=seeded(6),
                                     backend="python", rounds=(400, 10))
    assert np.array_equal(only_public.dendrogram.parent, first_round.dendrogram.parent)
    alternating = hrg.fit_dendrogram(n, public, private, 5.0, 400, generator=seeded(6),
                                     backend="python", rounds=(5, 5))
    assert not np.array_equal(only_public.dendrogram.parent, alternating.dendrogram.parent)
    paper = hrg.PaperCodeEdgeRR(1.0)
    few = np.array([[0, 1], [1, 2]])
    more = np.array([[0, 1, 5], [1, 2, 9]])  # one more private edge, two new nodes
    assert paper.chain_temperature(n, few) != paper.chain_temperature(n, more)
    assert hrg.EdgeRR(1.0).chain_temperature(n, few) == hrg.EdgeRR(1.0).chain_temperature(n, more)
    acc = PrivacyAccountant("edge")
    paper.account(acc)
    assert math.isinf(acc.epsilon()) and "NOT differentially private" in acc.ledger[0].note
    with pytest.raises(ValueError, match="rounds"):
        hrg.fit_dendrogram(n, public, private, 1.0, 10, rounds=(0, 0))
