"""The sound hyperbolic Gaussian mechanism (privacy/hyperbolic.py): spread of the noise,
sensitivity under neighbouring graphs (one edge, one node), accounting against the calibration,
argument checks, and the draws' provenance."""

import math

import pytest
import torch

from lightning_dpgnn import hyperbolic as H
from lightning_dpgnn.privacy import (
    DegreeBoundError,
    PrivacyAccountant,
    calibrate_noise_multiplier,
    check_degree_promise,
    secure_mode,
)
from lightning_dpgnn.privacy import random as R
from lightning_dpgnn.privacy.hyperbolic import HyperbolicGaussian, optimal_beta
from lightning_dpgnn.privacy.mechanism import run


def _points(n, d, seed=0, spread=2.0):
    """Ball points whose tangent norms spread over ``(0, spread]`` (some inside the clip,
    some beyond it)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, d, generator=g, dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True) * torch.rand(n, 1, generator=g, dtype=torch.float64)
    return H.expmap0(v * spread)


def _random_graph(n, avg_degree, seed=0, max_degree=None):
    """A simple undirected graph (both directions stored), degrees capped at ``max_degree``."""
    g = torch.Generator().manual_seed(seed)
    edges, deg = set(), [0] * n
    for _ in range(n * avg_degree):
        a, b = (int(i) for i in torch.randint(n, (2,), generator=g))
        if a == b or (a, b) in edges:
            continue
        if max_degree is not None and (deg[a] >= max_degree or deg[b] >= max_degree):
            continue
        edges |= {(a, b), (b, a)}
        deg[a] += 1
        deg[b] += 1
    return torch.tensor(sorted(edges), dtype=torch.long).t()


# -- the noise ------------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [0.2, 0.5, 0.8])
def test_the_noise_of_each_part_has_the_spread_of_its_share(beta):
    """On a graph without edges the release is the noise alone: radius column std
    ``z sqrt(2) / sqrt(beta)``, direction columns ``z sqrt(2) / sqrt(1 - beta)`` (undirected
    edge unit). A chi-square test on 10,000 x 5 draws: a mechanism with the wrong share (or
    the wrong sensitivity) fails it."""
    n, d, z = 10_000, 4, 0.7
    mech = HyperbolicGaussian(z, beta=beta, clip=1.0)
    empty = torch.empty(2, 0, dtype=torch.long)
    out = run(mech.steps(_points(n, d), empty, n), PrivacyAccountant("edge"))
    for cols, std in ((out[:, :1], z * math.sqrt(2 / beta)),
                      (out[:, 1:], z * math.sqrt(2 / (1 - beta)))):
        k = cols.numel()
        stat = float((cols.double() ** 2).sum()) / std**2  # ~ chi2(k): mean k, sd sqrt(2k)
        assert abs(stat - k) < 5 * math.sqrt(2 * k), (beta, stat, k)
        assert abs(float(cols.mean())) < 5 * std / math.sqrt(k)
    assert mech.stds() == pytest.approx(
        {"poindp/inter": z * math.sqrt(2 / beta), "poindp/intra": z * math.sqrt(2 / (1 - beta))})


def test_a_part_without_share_is_not_released_and_costs_nothing():
    n, d = 50, 3
    edges = _random_graph(n, 3)
    only_angle = HyperbolicGaussian(1.0, beta=0.0)
    acc = PrivacyAccountant("edge", 1e-5)
    out = run(only_angle.steps(_points(n, d), edges, n), acc)
    assert torch.equal(out[:, :1], torch.zeros(n, 1, dtype=out.dtype))
    assert [e.name for e in acc.ledger] == ["poindp/intra"]
    assert acc.ledger[0].noise_multiplier == pytest.approx(1.0)  # the whole budget
    only_radius = HyperbolicGaussian(1.0, beta=1.0)
    acc = PrivacyAccountant("edge", 1e-5)
    out = run(only_radius.steps(_points(n, d), edges, n), acc)
    assert torch.equal(out[:, 1:], torch.zeros(n, d, dtype=out.dtype))
    assert [e.name for e in acc.ledger] == ["poindp/inter"]


# -- sensitivity: neighbouring graphs --------------------------------------------------------
def _parts(mech, points, edges, n):
    agg = mech.aggregate(points, edges, n)
    return agg[:, :1], agg[:, 1:]


def test_removing_any_edge_moves_each_part_by_at_most_the_accounted_sensitivity():
    n, d, clip = 30, 5, 0.8
    points, edges = _points(n, d, seed=1), _random_graph(n, 3, seed=1)
    mech = HyperbolicGaussian(1.0, clip=clip)
    accounted = mech.sensitivity
    assert accounted == pytest.approx(math.sqrt(2))  # one undirected edge: two rows
    full_r, full_u = _parts(mech, points, edges, n)
    worst_r = worst_u = 0.0
    pairs = {(int(a), int(b)) for a, b in edges.t() if a < b}
    for a, b in sorted(pairs):  # every friendship, both directions removed
        keep = ~(((edges[0] == a) & (edges[1] == b)) | ((edges[0] == b) & (edges[1] == a)))
        r, u = _parts(mech, points, edges[:, keep], n)
        worst_r = max(worst_r, float(torch.linalg.vector_norm(r - full_r)))
        worst_u = max(worst_u, float(torch.linalg.vector_norm(u - full_u)))
    assert worst_r <= accounted + 1e-9 and worst_u <= accounted + 1e-9
    assert worst_u > 0.99 * accounted  # unit directions: the bound is attained
    # in tangent units the radius part moves by at most C per changed row
    t = mech.clipped_tangent(points)
    assert float(t.norm(dim=-1).max()) <= clip + 1e-9
    assert worst_r * clip <= clip * accounted + 1e-9


@pytest.mark.parametrize("D", [2, 6])
def test_removing_any_node_moves_the_other_rows_by_at_most_sqrt_D(D):
    n, d = 40, 4
    points, edges = _points(n, d, seed=D), _random_graph(n, 3, seed=D, max_degree=D)
    check_degree_promise(edges, n, D)
    mech = HyperbolicGaussian(1.0, level="node", max_degree=D)
    assert mech.sensitivity == pytest.approx(math.sqrt(D))
    full_r, full_u = _parts(mech, points, edges, n)
    worst = 0.0
    for v in range(n):  # v removed with its features and all its edges (add/remove relation)
        keep_nodes = torch.tensor([i for i in range(n) if i != v])
        old_to_new = torch.full((n,), -1, dtype=torch.long)
        old_to_new[keep_nodes] = torch.arange(n - 1)
        keep = (edges[0] != v) & (edges[1] != v)
        sub = old_to_new[edges[:, keep]]
        check_degree_promise(sub, n - 1, D)  # the class is closed under removal
        r, u = _parts(mech, points[keep_nodes], sub, n - 1)
        for part, full in ((r, full_r), (u, full_u)):
            worst = max(worst, float(torch.linalg.vector_norm(part - full[keep_nodes])))
    assert worst <= math.sqrt(D) + 1e-9
    assert worst > 0.9 * math.sqrt(D)


def test_node_level_refuses_a_graph_above_the_degree_promise_before_any_draw():
    n = 40
    edges = _random_graph(n, 6, seed=3)
    acc = PrivacyAccountant("node", 1e-5)
    with pytest.raises(DegreeBoundError):
        run(HyperbolicGaussian(1.0, level="node", max_degree=1).steps(_points(n, 3), edges, n), acc)
    assert acc.total_count() == 0


# -- accounting -----------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [0.1, 0.5, 0.9, optimal_beta(16)])
def test_the_release_spends_what_the_calibration_solved_whatever_the_split(beta):
    target, delta = 1.0, 1e-6

    def plan(z):
        acc = PrivacyAccountant("edge", delta)
        HyperbolicGaussian(z, beta=beta).account(acc)
        return acc

    z = calibrate_noise_multiplier(plan, target, delta)
    n = 30
    acc = PrivacyAccountant("edge", delta)
    run(HyperbolicGaussian(z, beta=beta).steps(_points(n, 3), _random_graph(n, 2), n), acc)
    eps = acc.epsilon()
    assert target * 0.99 <= eps <= target
    assert eps == pytest.approx(plan(z).epsilon())
    # the two parts compose exactly to one Gaussian mechanism at z (beta splits rho, not eps)
    one = PrivacyAccountant("edge", delta)
    one.add_gaussian("whole", z, sensitivity=math.sqrt(2))
    assert eps == pytest.approx(one.epsilon(), rel=1e-6)
    entries = {e.name: e.noise_multiplier for e in acc.ledger}
    assert entries["poindp/inter"] == pytest.approx(z / math.sqrt(beta))
    assert entries["poindp/intra"] == pytest.approx(z / math.sqrt(1 - beta))


def test_every_draw_goes_through_the_library_random_source():
    n = 20
    points, edges = _points(n, 3), _random_graph(n, 2)
    seeded = [run(HyperbolicGaussian(1.0).steps(points, edges, n),
                  acc := PrivacyAccountant("edge", 1e-5), R.reproducible_generator(7))
              for _ in range(2)]
    assert torch.equal(seeded[0], seeded[1]) and acc.reproducible
    before = R.secure_draw_count()
    with secure_mode():
        acc = PrivacyAccountant("edge", 1e-5)
        run(HyperbolicGaussian(1.0).steps(points, edges, n), acc)
    assert R.secure_draw_count() > before and acc.secure


# -- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(beta=-0.1), "beta"), (dict(beta=1.5), "beta"), (dict(beta=float("nan")), "beta"),
    (dict(beta="half"), "beta"), (dict(beta=True), "beta"),
    (dict(clip=0.0), "clip"), (dict(clip=-1.0), "clip"), (dict(clip=float("inf")), "clip"),
    (dict(curvature=0.0), "curvature"), (dict(noise_multiplier=0.0), "noise_multiplier"),
])
def test_bad_arguments_are_one_clear_error(kw, match):
    args = {"noise_multiplier": 1.0, **kw}
    with pytest.raises(ValueError, match=match):
        HyperbolicGaussian(args.pop("noise_multiplier"), **args)


def test_points_outside_the_ball_and_a_missing_accountant_are_refused():
    mech = HyperbolicGaussian(1.0)
    edges = _random_graph(5, 2)
    with pytest.raises(ValueError, match="inside the Poincaré ball"):
        run(mech.steps(torch.ones(5, 2), edges, 5), PrivacyAccountant("edge", 1e-5))
    with pytest.raises(TypeError, match="accountant"):
        run(mech.steps(_points(5, 2), edges, 5), None)


def test_recombine_maps_back_into_the_ball_with_the_released_direction():
    mech = HyperbolicGaussian(1.0, clip=2.0)
    release = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [50.0, 0.0, -4.0]])
    points = mech.recombine(release)
    assert bool((points.norm(dim=-1) < 1).all())
    t = H.logmap0(points)
    # mean radius 1/3 of C along e_1; nothing released -> the origin; clamped to C along -e_2
    torch.testing.assert_close(t, torch.tensor([[2 / 3, 0.0], [0.0, 0.0], [0.0, -2.0]]),
                               rtol=1e-4, atol=1e-4)
