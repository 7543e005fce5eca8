"""Poincaré-ball geometry (lightning_dpgnn/hyperbolic.py) against closed forms."""

import math

import pytest
import torch

from lightning_dpgnn import hyperbolic as H

DTYPES = [torch.float32, torch.float64]
CURVATURES = [0.5, 1.0, 2.0]
TOL = {torch.float32: 2e-4, torch.float64: 1e-9}


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _tangents(n, d, max_norm, dtype, seed=0):
    """Random tangent vectors with norms spread over ``(0, max_norm]``, the last ones at it."""
    v = torch.randn(n, d, generator=_gen(seed), dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True)
    norms = torch.linspace(1e-6, 1.0, n, dtype=torch.float64).unsqueeze(1) * max_norm
    return (v * norms).to(dtype)


def _ball_points(n, d, c, dtype, seed=0):
    """Points spread over the ball up to the projection margin (the boundary of what
    ``project`` keeps)."""
    limit = (1 - H.BALL_EPS[dtype]) / math.sqrt(c)
    return _tangents(n, d, limit, dtype, seed)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c", CURVATURES)
def test_exp_and_log_at_the_origin_invert_each_other_up_to_the_boundary(dtype, c):
    v = _tangents(400, 5, H.max_tangent_norm(dtype, c) * (1 - 1e-6), dtype)
    x = H.expmap0(v, c)
    assert x.dtype == dtype
    radius = 1 / math.sqrt(c)
    assert bool((x.norm(dim=-1) < radius).all())
    back = H.logmap0(x, c)
    torch.testing.assert_close(back, v, rtol=TOL[dtype] * 50, atol=TOL[dtype])
    y = _ball_points(400, 5, c, dtype, seed=1)
    torch.testing.assert_close(H.expmap0(H.logmap0(y, c), c), y, rtol=TOL[dtype],
                               atol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_huge_tangents_and_boundary_points_stay_inside_and_finite(dtype):
    v = torch.randn(100, 3, generator=_gen(), dtype=dtype) * 1e3
    x = H.expmap0(v)
    assert bool(torch.isfinite(x).all())
    assert float(x.norm(dim=-1).max()) <= (1 - H.BALL_EPS[dtype]) * (1 + 1e-6)
    # a point on the boundary itself (or beyond) is projected back; log stays finite
    on_edge = v / v.norm(dim=-1, keepdim=True)
    assert bool(torch.isfinite(H.logmap0(on_edge)).all())
    projected = H.project(on_edge * 1.5)
    torch.testing.assert_close(projected.norm(dim=-1),
                               torch.full((100,), 1 - H.BALL_EPS[dtype], dtype=dtype))
    zero = torch.zeros(2, 3, dtype=dtype)  # the origin maps to the origin, no NaN
    assert torch.equal(H.expmap0(zero), zero) and torch.equal(H.logmap0(zero), zero)


def test_expmap0_is_the_closed_form_along_an_axis():
    # exp_0(t e_1) = tanh(sqrt(c) t) / sqrt(c) e_1; its distance to the origin is 2 t
    for c in CURVATURES:
        t = torch.tensor([[0.3, 0.0], [1.7, 0.0]], dtype=torch.float64)
        x = H.expmap0(t, c)
        expected = torch.tanh(math.sqrt(c) * t[:, 0]) / math.sqrt(c)
        torch.testing.assert_close(x[:, 0], expected)
        torch.testing.assert_close(H.dist(torch.zeros_like(x), x, c), 2 * t[:, 0])


@pytest.mark.parametrize("c", CURVATURES)
def test_mobius_addition_identities(c):
    x = _ball_points(50, 4, c, torch.float64, seed=2) * 0.9
    y = _ball_points(50, 4, c, torch.float64, seed=3).flip(0) * 0.9
    zero = torch.zeros_like(x)
    torch.testing.assert_close(H.mobius_add(zero, x, c), x)
    torch.testing.assert_close(H.mobius_add(x, zero, c), x)
    torch.testing.assert_close(H.mobius_add(-x, x, c), zero, atol=1e-12, rtol=0)
    # left cancellation: -x ⊕ (x ⊕ y) = y
    torch.testing.assert_close(H.mobius_add(-x, H.mobius_add(x, y, c), c), y)
    # on a line it is the relativistic sum (x + y) / (1 + c x y)
    a, b = torch.tensor([[0.3]], dtype=torch.float64), torch.tensor([[-0.55]], dtype=torch.float64)
    a, b = a / math.sqrt(c), b / math.sqrt(c)
    torch.testing.assert_close(H.mobius_add(a, b, c), (a + b) / (1 + c * a * b))
    # the sum stays in the ball
    assert float(H.mobius_add(x, y, c).norm(dim=-1).max()) < 1 / math.sqrt(c)


def test_conformal_factor_closed_form():
    x = torch.tensor([[0.0, 0.0], [0.6, 0.0], [0.0, 0.2]], dtype=torch.float64)
    torch.testing.assert_close(H.conformal_factor(x, 1.0)[:, 0],
                               torch.tensor([2.0, 2 / 0.64, 2 / 0.96], dtype=torch.float64))
    torch.testing.assert_close(H.conformal_factor(x, 2.0)[:, 0],
                               torch.tensor([2.0, 2 / (1 - 0.72), 2 / (1 - 0.08)],
                                            dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c", CURVATURES)
def test_exp_and_log_at_a_point(dtype, c):
    x = _ball_points(60, 3, c, dtype, seed=4) * 0.7
    # short enough that exp_x(v) stays inside the projection margin (else it is projected)
    v = _tangents(60, 3, 0.3, dtype, seed=5)
    y = H.expmap(x, v, c)
    assert bool((y.norm(dim=-1) < 1 / math.sqrt(c)).all())
    torch.testing.assert_close(H.logmap(x, y, c), v, rtol=TOL[dtype] * 50, atol=TOL[dtype] * 5)
    # at the origin they are exp_0 / log_0
    zero = torch.zeros_like(x)
    torch.testing.assert_close(H.expmap(zero, v, c), H.expmap0(v, c))
    torch.testing.assert_close(H.logmap(zero, y, c), H.logmap0(y, c))
    # the Riemannian norm of log_x(y) is the distance: lambda_x |log_x y| = d(x, y)
    norm = H.conformal_factor(x, c)[:, 0] * H.logmap(x, y, c).norm(dim=-1)
    torch.testing.assert_close(norm, H.dist(x, y, c), rtol=TOL[dtype] * 50, atol=TOL[dtype])


def test_distance_is_a_metric_and_matches_arcosh_form():
    x = _ball_points(40, 3, 1.0, torch.float64, seed=6) * 0.95
    y = _ball_points(40, 3, 1.0, torch.float64, seed=7).flip(0) * 0.95
    z = _ball_points(40, 3, 1.0, torch.float64, seed=8)[torch.randperm(40, generator=_gen())]
    d_xy, d_yx = H.dist(x, y), H.dist(y, x)
    torch.testing.assert_close(d_xy, d_yx)
    assert bool((H.dist(x, z) <= d_xy + H.dist(y, z) + 1e-9).all())
    torch.testing.assert_close(H.dist(x, x), torch.zeros(40, dtype=torch.float64), atol=1e-6,
                               rtol=0)
    # c = 1: d = arcosh(1 + 2|x - y|² / ((1 - |x|²)(1 - |y|²)))
    arg = 1 + 2 * (x - y).pow(2).sum(-1) / ((1 - x.pow(2).sum(-1)) * (1 - y.pow(2).sum(-1)))
    torch.testing.assert_close(d_xy, torch.acosh(arg))


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "x", True])
def test_a_bad_curvature_is_one_clear_error(bad):
    with pytest.raises(ValueError, match="curvature"):
        H.expmap0(torch.zeros(1, 2), bad)
