"""Feature LDP randomizers: unbiasedness, closed-form variances, exact LDP ratio bounds.

Statistical checks use fixed seeds and tolerances of 5 standard errors derived from the
closed-form variance (for means) and from the empirical fourth moment (for variances); each
variance check also asserts that its tolerance is tight enough (< 6% relative) to detect a
wrong formula.
"""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
import torch
from scipy.optimize import brentq
from scipy.stats import norm

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.ldp import (
    M_STAR_Z,
    AnalyticGaussian,
    Duchi,
    Laplace,
    MultiBit,
    OneBit,
    Piecewise,
    optimal_m,
)

ALPHA, BETA = -1.0, 2.0
N_DRAWS = 200_000


def grid_row(alpha: float = ALPHA, beta: float = BETA) -> torch.Tensor:
    """One row spanning the range, extremes included: alpha, 25%, mid, 80%, beta."""
    w = beta - alpha
    return torch.tensor(
        [alpha, alpha + 0.25 * w, alpha + 0.5 * w, alpha + 0.8 * w, beta], dtype=torch.float64
    )


def check_mean_and_variance(mech, row: torch.Tensor, seed: int, n: int = N_DRAWS) -> None:
    """Empirical mean == x (5 SE from the closed form) and empirical var == .variance(x)."""
    x = row.expand(n, row.numel()).clone()
    y = mech.estimate(mech.sample(x, generator=torch.Generator().manual_seed(seed)))
    assert y.shape == x.shape and y.dtype == torch.float64
    var = mech.variance(row)
    assert var.shape == row.shape
    assert (var > 0).all()
    se_mean = torch.sqrt(var / n)
    mean_err = (y.mean(0) - row).abs()
    assert (mean_err <= 5 * se_mean).all(), mean_err / se_mean
    emp_var = y.var(0)
    centred = y - y.mean(0)
    m4 = (centred**4).mean(0)
    # SE of the sample variance, sqrt((mu4 - sigma^4) / n); it vanishes for a symmetric
    # two-point law (the sample variance is then almost deterministic), so floor the tolerance
    # at 0.1% of the variance
    se_var = torch.sqrt((m4 - emp_var**2).clamp(min=0.0) / n)
    tol = torch.maximum(5 * se_var, 1e-3 * var)
    # the test has power: a formula off by 6% would be caught
    assert (tol / var < 0.06).all(), tol / var
    assert ((emp_var - var).abs() <= tol).all(), (emp_var - var) / var


def all_input_rows(d: int, alpha: float = ALPHA, beta: float = BETA) -> torch.Tensor:
    """Grid of input rows with every coordinate in {alpha, 30%, mid, beta} (extremes)."""
    w = beta - alpha
    vals = [alpha, alpha + 0.3 * w, alpha + 0.5 * w, beta]
    return torch.tensor(list(itertools.product(vals, repeat=d)), dtype=torch.float64)


def max_log_ratio(logp: torch.Tensor) -> float:
    """``logp[i, o]`` = log Pr[output o | input i]: max over outputs of max_i - min_i."""
    return float((logp.max(dim=0).values - logp.min(dim=0).values).max())


# ------------------------------------------------------------------------------------------
# unbiasedness and variance
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "factory",
    [
        lambda: OneBit(2.0, ALPHA, BETA),
        lambda: OneBit(0.5, ALPHA, BETA, per_coordinate=True),
        lambda: Laplace(2.0, ALPHA, BETA),
        lambda: Duchi(2.0, ALPHA, BETA),
        lambda: Duchi(1.0, ALPHA, BETA, per_coordinate=True),
        lambda: Piecewise(2.0, ALPHA, BETA),
        lambda: Piecewise(3.0, ALPHA, BETA, per_coordinate=True),
        lambda: AnalyticGaussian(1.0, 1e-5, ALPHA, BETA),
        lambda: MultiBit(1.0, ALPHA, BETA),
        lambda: MultiBit(6.0, ALPHA, BETA, m=3),
        lambda: MultiBit(10.0, ALPHA, BETA, m=5),
    ],
    ids=[
        "onebit",
        "onebit-percoord",
        "laplace",
        "duchi",
        "duchi-percoord",
        "piecewise",
        "piecewise-percoord",
        "ag",
        "multibit-m*",
        "multibit-m3",
        "multibit-m=d",
    ],
)
def test_unbiased_and_variance_matches_closed_form(factory):
    check_mean_and_variance(factory(), grid_row(), seed=1234)


def test_per_feature_bounds_are_respected():
    alpha = torch.tensor([0.0, -1.0, 10.0, -5.0, 0.5], dtype=torch.float64)
    beta = torch.tensor([1.0, 1.0, 14.0, 5.0, 0.75], dtype=torch.float64)
    row = alpha + torch.tensor([0.0, 0.3, 0.5, 0.9, 1.0], dtype=torch.float64) * (beta - alpha)
    for mech in (
        OneBit(3.0, alpha, beta),
        Piecewise(3.0, alpha, beta),
        MultiBit(3.0, alpha, beta),
        Laplace(3.0, alpha, beta),
        AnalyticGaussian(2.0, 1e-6, alpha, beta),
    ):
        check_mean_and_variance(mech, row, seed=99)


def test_variance_formulas_depend_on_x_as_in_the_thesis():
    """PGC variance is maximal mid-range (eq. 2.11), PM variance minimal mid-range (eq. 2.34)."""
    row = grid_row()
    v1 = OneBit(1.0, ALPHA, BETA).variance(row)
    vp = Piecewise(1.0, ALPHA, BETA).variance(row)
    vl = Laplace(1.0, ALPHA, BETA).variance(row)
    assert v1.argmax() == 2 and v1[0] == pytest.approx(float(v1[-1]))
    assert vp.argmin() == 2 and vp[0] == pytest.approx(float(vp[-1]))
    assert torch.allclose(vl, vl[0].expand_as(vl))
    # at the extremes PGC has the smallest variance of the three (thesis Fig. 2.4)
    assert v1[0] < vp[0] and v1[0] < vl[0]


def test_onebit_equals_multibit_with_m_equal_d():
    """Thesis §3.4.1: Alg. 2 with m = d is the 1-bit mechanism with epsilon/d per dimension."""
    row = grid_row()
    ob = OneBit(3.0, ALPHA, BETA)
    mb = MultiBit(3.0, ALPHA, BETA, m=row.numel())
    assert torch.allclose(ob.variance(row), mb.variance(row), rtol=1e-12)
    p_ob = ob.output_probabilities(row)  # [d, 2]: y=0, y=1
    p_mb = mb.output_probabilities(row)  # [d, 3]: -1, 0, +1
    assert torch.allclose(p_mb[:, 1], torch.zeros(row.numel(), dtype=torch.float64))
    assert torch.allclose(p_ob[:, 0], p_mb[:, 0]) and torch.allclose(p_ob[:, 1], p_mb[:, 2])
    # the same bits map to the same estimates
    bits = torch.tensor([[0, 1, 1, 0, 1]], dtype=torch.int8)
    assert torch.allclose(ob.rectify(bits, torch.float64), mb.rectify(2 * bits - 1, torch.float64))


def test_duchi_and_onebit_have_the_same_distribution():
    """PGC is derived from DM (thesis §2.9.1, eq. 2.22-2.27): same outputs, same law."""
    row = grid_row()
    ob, dm = OneBit(2.0, ALPHA, BETA), Duchi(2.0, ALPHA, BETA)
    assert torch.allclose(ob.output_probabilities(row), dm.output_probabilities(row))
    assert torch.allclose(ob.variance(row), dm.variance(row))
    vals = dm.output_values(row)
    assert torch.allclose(
        vals[..., 0], ob.rectify(torch.zeros(1, 5, dtype=torch.int8), torch.float64)[0]
    )
    assert torch.allclose(
        vals[..., 1], ob.rectify(torch.ones(1, 5, dtype=torch.int8), torch.float64)[0]
    )


def test_onebit_encode_rectify_roundtrip_and_bits():
    ob = OneBit(1.0, ALPHA, BETA)
    x = torch.rand(50, 7, generator=torch.Generator().manual_seed(0)) * 3 - 1
    bits = ob.sample(x, generator=torch.Generator().manual_seed(5))
    assert bits.dtype == torch.int8 and set(bits.unique().tolist()) <= {0, 1}
    y = ob.estimate(ob.sample(x, generator=torch.Generator().manual_seed(5)))
    assert torch.allclose(y, ob.rectify(bits, torch.float64), atol=1e-4)
    with pytest.raises(ValueError, match="only 0 and 1"):
        ob.rectify(torch.full((2, 3), 2, dtype=torch.int8))


def test_empirical_frequencies_match_exact_probabilities_multibit():
    """Codes follow the exact joint law used in the LDP test (enumerated for d=4, m=2)."""
    d, m, n = 4, 2, 200_000
    mb = MultiBit(4.0, 0.0, 1.0, m=m)
    row = torch.tensor([0.0, 0.2, 0.7, 1.0], dtype=torch.float64)
    codes = mb.sample(row.expand(n, d), generator=torch.Generator().manual_seed(3))
    all_codes = _all_codes(d, m)
    probs = torch.exp(mb.log_prob(row.expand(len(all_codes), d), all_codes))
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-12)
    # frequencies of each code (encode codes as base-3 integers)
    base = torch.tensor([3**i for i in range(d)])
    key = ((codes.long() + 1) * base).sum(1)
    all_key = ((all_codes.long() + 1) * base).sum(1)
    counts = torch.stack([(key == k).sum() for k in all_key]).double()
    assert counts.sum() == n  # no code outside the support (exactly m non-zeros)
    se = torch.sqrt(probs * (1 - probs) / n)
    assert ((counts / n - probs).abs() <= 5 * se).all()


def test_piecewise_mass_in_the_high_density_band():
    """Fraction of outputs in [l(t), r(t)] is e^{eps/2} / (e^{eps/2} + 1) (eq. 2.29)."""
    eps, n = 1.0, 400_000
    pm = Piecewise(eps, 0.0, 1.0)  # d = 1: eps_c = eps
    for xv in (0.0, 0.3, 1.0):
        y = pm.sample(
            torch.full((n, 1), xv, dtype=torch.float64), generator=torch.Generator().manual_seed(11)
        )
        c = (math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1)
        t = 2 * xv - 1
        lo = (c + 1) / 2 * t - (c - 1) / 2
        hi = lo + c - 1
        t_star = 2 * y - 1
        assert float(t_star.min()) >= -c and float(t_star.max()) <= c
        frac = float(((t_star >= lo) & (t_star <= hi)).double().mean())
        p = math.exp(eps / 2) / (math.exp(eps / 2) + 1)
        assert abs(frac - p) <= 5 * math.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------------------------------
# LDP ratio bounds
# ------------------------------------------------------------------------------------------
def _all_codes(d: int, m: int) -> torch.Tensor:
    out = []
    for support in itertools.combinations(range(d), m):
        for signs in itertools.product((-1, 1), repeat=m):
            c = [0] * d
            for i, s in zip(support, signs, strict=True):
                c[i] = s
            out.append(c)
    return torch.tensor(out, dtype=torch.int8)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_onebit_ldp_ratio(eps):
    d = 3
    ob = OneBit(eps, ALPHA, BETA)
    inputs = all_input_rows(d)
    outputs = torch.tensor(list(itertools.product((0, 1), repeat=d)), dtype=torch.int8)
    logp = torch.stack([ob.log_prob(inputs, o.expand(len(inputs), d)) for o in outputs], dim=1)
    assert torch.allclose(torch.logsumexp(logp, dim=1), torch.zeros(len(inputs), dtype=logp.dtype))
    ratio = max_log_ratio(logp)
    assert ratio <= eps + 1e-9
    assert ratio >= eps - 1e-9  # tight at the extremes: the split over d is not wasteful
    # a single entry (d = 1 view): probabilities of alpha vs beta differ by exactly e^eps_c
    p = ob.output_probabilities(torch.tensor([[ALPHA] * d, [BETA] * d], dtype=torch.float64))
    assert float(torch.log(p[1, 0, 1] / p[0, 0, 1])) == pytest.approx(eps / d)


def test_onebit_per_coordinate_spends_d_times_epsilon():
    d, eps = 3, 0.5
    ob = OneBit(eps, ALPHA, BETA, per_coordinate=True)
    inputs = all_input_rows(d)
    outputs = torch.tensor(list(itertools.product((0, 1), repeat=d)), dtype=torch.int8)
    logp = torch.stack([ob.log_prob(inputs, o.expand(len(inputs), d)) for o in outputs], dim=1)
    assert max_log_ratio(logp) == pytest.approx(d * eps, abs=1e-9)
    acc = PrivacyAccountant(level="ldp")
    ob.at_width(d).account(acc)
    assert acc.epsilon() == pytest.approx(d * eps)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_duchi_ldp_ratio(eps):
    d = 3
    dm = Duchi(eps, ALPHA, BETA)
    inputs = all_input_rows(d)
    vals = dm.output_values(inputs[:1])[0]  # [d, 2]
    outputs = torch.tensor(list(itertools.product((0, 1), repeat=d)))
    ys = torch.stack([vals[torch.arange(d), o] for o in outputs])  # [2^d, d]
    logp = torch.stack([dm.log_prob(inputs, y.expand(len(inputs), d)) for y in ys], dim=1)
    assert torch.allclose(torch.logsumexp(logp, dim=1), torch.zeros(len(inputs), dtype=logp.dtype))
    ratio = max_log_ratio(logp)
    assert eps - 1e-9 <= ratio <= eps + 1e-9


@pytest.mark.parametrize("eps,m", [(0.5, None), (5.0, None), (5.0, 2), (3.0, 4), (8.0, 1)])
def test_multibit_ldp_ratio(eps, m):
    d = 4
    mb = MultiBit(eps, ALPHA, BETA, m=m)
    mm = mb.resolve_m(d)
    inputs = all_input_rows(d)
    codes = _all_codes(d, mm)
    logp = torch.stack([mb.log_prob(inputs, c.expand(len(inputs), d)) for c in codes], dim=1)
    assert torch.allclose(torch.logsumexp(logp, dim=1), torch.zeros(len(inputs), dtype=logp.dtype))
    ratio = max_log_ratio(logp)
    assert ratio <= eps + 1e-9
    assert ratio >= eps - 1e-9  # Theorem 1 is tight: m dims at eps/m each
    # outside the support (wrong number of non-zeros) the probability is 0 for every input
    bad = torch.zeros(len(inputs), d, dtype=torch.int8)
    assert torch.isneginf(mb.log_prob(inputs, bad)).all()
    # per-entry marginals (Theorem 1 proof): Pr[0] = 1 - m/d, others bounded by e^{eps/m}
    p = mb.output_probabilities(inputs)
    assert torch.allclose(p.sum(-1), torch.ones_like(p[..., 0]))
    assert torch.allclose(p[..., 1], torch.full_like(p[..., 1], 1 - mm / d))
    for k in (0, 2):
        col = p[..., k].flatten()
        assert math.log(float(col.max() / col.min())) <= eps / mm + 1e-9


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_laplace_density_ratio(eps):
    d = 3
    lm = Laplace(eps, ALPHA, BETA)
    inputs = all_input_rows(d)
    lam = (BETA - ALPHA) * d / eps
    grid = torch.linspace(ALPHA - 4 * lam, BETA + 4 * lam, 21, dtype=torch.float64)
    outputs = torch.tensor(list(itertools.product(grid.tolist(), repeat=d)), dtype=torch.float64)
    logp = lm.log_density(inputs[:, None, :], outputs[None, :, :])  # [inputs, outputs]
    ratio = max_log_ratio(logp)
    assert ratio <= eps + 1e-9
    assert ratio >= eps - 1e-9  # attained for outputs beyond the range
    # the per-entry density is a density
    lam1 = (BETA - ALPHA) / eps  # d = 1 below: eps_c = eps
    ys = torch.linspace(-30 * lam1, 30 * lam1, 400_001, dtype=torch.float64)
    dens = lm.density(torch.full_like(ys, 0.3).unsqueeze(-1), ys.unsqueeze(-1)).squeeze(-1)
    assert float(torch.trapezoid(dens, ys)) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_piecewise_density_ratio(eps):
    d = 3
    pm = Piecewise(eps, ALPHA, BETA)
    inputs = all_input_rows(d)
    sup = pm.support(inputs[:1])[0, 0]
    lo, hi = float(sup[0]), float(sup[1])
    grid = torch.linspace(lo, hi, 25, dtype=torch.float64)
    outputs = torch.tensor(list(itertools.product(grid.tolist(), repeat=d)), dtype=torch.float64)
    dens = torch.exp(pm.log_density(inputs[:, None, :], outputs[None, :, :]))
    assert (dens > 0).all()
    ratio = float((dens.max(0).values / dens.min(0).values).max())
    assert ratio <= math.exp(eps) * (1 + 1e-9)
    assert ratio >= math.exp(eps) * (1 - 1e-9)
    # outside the support every input has density 0
    outside = torch.tensor([[lo - 1e-6] * d, [hi + 1e-6] * d], dtype=torch.float64)
    assert (pm.density(inputs[:4, None, :], outside[None])[..., 0] == 0).all()
    # the per-entry density integrates to one (eq. 2.29)
    one = Piecewise(eps, 0.0, 1.0)
    s = one.support(torch.zeros(1, 1, dtype=torch.float64))[0, 0]
    ys = torch.linspace(float(s[0]), float(s[1]), 200_001, dtype=torch.float64)
    for xv in (0.0, 0.4, 1.0):
        dd = one.density(torch.full((ys.numel(), 1), xv, dtype=torch.float64), ys[:, None])
        assert float(torch.trapezoid(dd[:, 0], ys)) == pytest.approx(1.0, abs=1e-3)


# ------------------------------------------------------------------------------------------
# analytic Gaussian calibration
# ------------------------------------------------------------------------------------------
def balle_wang_delta(eps: float, sigma: float, sens: float) -> float:
    """Balle & Wang (2018) Thm. 8, written independently with scipy.stats.norm."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return float(norm.cdf(a) - math.exp(eps) * norm.cdf(b))


@pytest.mark.parametrize(
    "eps,delta,d",
    [
        (0.1, 1e-5, 8),
        (0.5, 1e-6, 3),
        (0.9, 1e-10, 16),
        (1.0, 1e-5, 1),
        (2.0, 1e-5, 4),
        (8.0, 1e-8, 10),
    ],
)
def test_analytic_gaussian_calibration(eps, delta, d):
    ag = AnalyticGaussian(eps, delta, ALPHA, BETA)
    sens = (BETA - ALPHA) * math.sqrt(d)
    assert ag.sensitivity(d) == pytest.approx(sens)
    sigma = ag.sigma(d)
    assert ag.noise_multiplier == pytest.approx(sigma / sens)
    # sigma meets the (eps, delta) condition and is (nearly) the smallest that does
    assert balle_wang_delta(eps, sigma, sens) <= delta
    assert balle_wang_delta(eps, sigma * (1 - 1e-6), sens) > delta
    if eps < 1:
        classical = math.sqrt(2 * math.log(1.25 / delta)) * sens / eps
        assert sigma < classical
    assert ag.sigma(d) == sigma  # cached


def test_analytic_gaussian_accounting_records_a_gaussian():
    ag = AnalyticGaussian(1.0, 1e-5, 0.0, 1.0)
    acc = PrivacyAccountant(level="ldp", delta=1e-5)
    with pytest.raises(ValueError, match="sample"):
        ag.account(acc)  # d unknown yet
    ag.sample(torch.rand(4, 9))
    entry = ag.account(acc)
    assert entry.kind == "gaussian" and entry.name == "analytic_gaussian"
    assert entry.sensitivity == pytest.approx(3.0)
    assert entry.noise_multiplier == pytest.approx(ag.sigma(9) / 3.0)
    # the exact Gaussian conversion recovers the calibrated epsilon; RDP is looser
    assert acc.epsilon() == pytest.approx(1.0, rel=1e-6)
    assert acc.epsilon(conversion="basic") > 1.0


# ------------------------------------------------------------------------------------------
# multi-bit specifics
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "eps,m", [(0.01, None), (1.0, None), (9.0, None), (50.0, None), (1.0, 3), (2.0, 10)]
)
def test_multibit_codes(eps, m):
    n, d = 300, 10
    mb = MultiBit(eps, 0.0, 1.0, m=m)
    x = torch.rand(n, d, generator=torch.Generator().manual_seed(4))
    codes = mb.sample(x, generator=torch.Generator().manual_seed(1))
    assert codes.dtype == torch.int8 and codes.shape == (n, d)
    assert set(codes.unique().tolist()) <= {-1, 0, 1}
    mm = mb.resolve_m(d)
    assert ((codes != 0).sum(1) == mm).all()
    if m is None:
        assert mm == optimal_m(eps, d)
    # sampled dimensions are spread uniformly (every dimension gets picked)
    assert ((codes != 0).sum(0) > 0).all()
    # 1-D input is one row
    one = mb.sample(x[0])
    assert one.shape == (d,) and int((one != 0).sum()) == mm


def test_optimal_m_follows_eq_3_19():
    # z* of eq. 3.23 (z = sinh(z)/2) rounds to the constant used in eq. 3.19
    z_star = brentq(lambda z: math.sinh(z) / 2 - z, 1.0, 4.0)
    assert round(z_star, 2) == M_STAR_Z
    for d in (1, 3, 50):
        for eps in (0.01, 0.5, 1.0, 2.0, 2.18, 2.5, 4.35, 4.36, 6.6, 10.0, 100.0, 1e4):
            expected = max(1, min(d, math.floor(round(eps / 2.18, 9))))
            assert optimal_m(eps, d) == expected
            if eps <= 2.18:
                assert optimal_m(eps, d) == 1
    assert optimal_m(10.0, 100) == 4
    assert optimal_m(10.0, 3) == 3  # capped by d
    assert optimal_m(2.18 * 7, 100) == 7  # exact multiples are not floored one short


def test_multibit_rectify_is_eq_3_10():
    mb = MultiBit(2.0, ALPHA, BETA, m=2)
    d = 6
    codes = torch.tensor([[1, 0, -1, 0, 0, 0]], dtype=torch.int8)
    scale = d * (BETA - ALPHA) / (2 * 2) * (math.exp(1.0) + 1) / (math.exp(1.0) - 1)
    expected = torch.tensor([[scale, 0, -scale, 0, 0, 0]], dtype=torch.float64) + (ALPHA + BETA) / 2
    assert torch.allclose(mb.rectify(codes, torch.float64), expected)
    assert torch.allclose(mb.rectifier(d)[0], torch.full((d,), scale, dtype=torch.float64))
    with pytest.raises(ValueError, match="-1, 0 and 1"):
        mb.rectify(torch.tensor([[2, 0, 0, 0, 0, 0]], dtype=torch.int8))


# ------------------------------------------------------------------------------------------
# accounting and names
# ------------------------------------------------------------------------------------------
def test_names_and_pure_accounting():
    expected = {
        OneBit: "onebit",
        Laplace: "laplace",
        Duchi: "duchi",
        Piecewise: "piecewise",
        MultiBit: "multibit",
        AnalyticGaussian: "analytic_gaussian",
    }
    for cls, name in expected.items():
        assert cls.name == name
    acc = PrivacyAccountant(level="ldp")
    for mech in (OneBit(0.7), Laplace(0.7), Duchi(0.7), Piecewise(0.7), MultiBit(0.7)):
        entry = mech.account(acc, count=2)
        assert entry.kind == "pure" and entry.epsilon == pytest.approx(0.7) and entry.count == 2
        assert entry.name == mech.name
    assert acc.epsilon() == pytest.approx(5 * 2 * 0.7)
    # per-coordinate budgets need d to know the per-node spend
    pc = Laplace(0.1, per_coordinate=True)
    with pytest.raises(ValueError, match="d="):
        pc.account(acc)
    pc.sample(torch.rand(3, 12))
    assert pc.account(PrivacyAccountant(level="ldp")).epsilon == pytest.approx(1.2)


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
ALL = [OneBit, Laplace, Duchi, Piecewise, MultiBit]


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), "abc"])
def test_bad_epsilon(cls, eps):
    with pytest.raises(ValueError, match="epsilon"):
        cls(eps)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan")])
def test_bad_epsilon_ag(eps):
    with pytest.raises(ValueError, match="epsilon"):
        AnalyticGaussian(eps, 1e-5)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        AnalyticGaussian(1.0, delta)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.0, 1.0), ([0.0, 1.0], [1.0, 1.0])])
def test_bad_range(cls, alpha, beta):
    with pytest.raises(ValueError, match="alpha < beta"):
        cls(1.0, alpha, beta)


def test_bad_range_ag_and_bound_length():
    with pytest.raises(ValueError, match="alpha < beta"):
        AnalyticGaussian(1.0, 1e-5, 1.0, 0.0)
    mech = Laplace(1.0, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="3 entries"):
        mech.sample(torch.rand(2, 4))


def test_bad_m():
    for m in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="m must be"):
            MultiBit(1.0, m=m)
    mb = MultiBit(1.0, m=5)
    with pytest.raises(ValueError, match=r"m must be in \[1, d\]"):
        mb.sample(torch.rand(3, 4))
    with pytest.raises(ValueError, match=r"m must be in \[1, d\]"):
        mb.sample(torch.rand(0, 4))  # checked even without rows
    assert mb.sample(torch.rand(3, 5)).ne(0).sum(1).eq(5).all()


@pytest.mark.parametrize(
    "factory",
    [
        lambda: OneBit(1.0),
        lambda: Laplace(1.0),
        lambda: Duchi(1.0),
        lambda: Piecewise(1.0),
        lambda: MultiBit(1.0),
        lambda: AnalyticGaussian(1.0, 1e-5),
    ],
)
def test_clipping_warns_with_count_and_clips(factory):
    mech = factory()
    x = torch.full((4, 5), 0.5)
    x[0, 0], x[1, 3], x[3, 4] = -0.2, 1.7, 5.0
    with pytest.warns(UserWarning, match=r"3 of 20 input values were outside"):
        y = mech.sample(x, generator=torch.Generator().manual_seed(8))
    clipped = x.clamp(0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in-range input: no warning
        y_ref = mech.sample(clipped, generator=torch.Generator().manual_seed(8))
    assert torch.equal(y, y_ref)


def test_nan_and_shape_validation():
    mech = OneBit(1.0)
    with pytest.raises(ValueError, match="NaN"):
        mech.sample(torch.tensor([[0.1, float("nan")]]))
    with pytest.raises(ValueError, match="shape"):
        mech.sample(torch.rand(2, 3, 4))
    with pytest.raises(ValueError, match="shape"):
        mech.sample(torch.rand(3, 0))
    with pytest.raises(TypeError):
        mech.sample([[0.1, 0.2]])


def test_output_dtype_and_shape():
    for mech in (
        OneBit(1.0),
        Laplace(1.0),
        Duchi(1.0),
        Piecewise(1.0),
        MultiBit(1.0),
        AnalyticGaussian(1.0, 1e-5),
    ):
        codes = torch.int8 if mech.sends_codes else None  # else the estimate: x's dtype
        assert mech.sample(torch.rand(3, 4)).dtype == (codes or torch.float32)
        assert mech.sample(torch.rand(3, 4, dtype=torch.float64)).dtype == (codes or torch.float64)
        ints = torch.randint(0, 2, (3, 4))
        assert mech.sample(ints).dtype == (codes or torch.get_default_dtype())
        assert mech.estimate(mech.sample(torch.rand(3, 4))).is_floating_point()
        assert mech.sample(torch.rand(4)).shape == (4,)
        assert mech.sample(torch.rand(0, 4)).shape == (0, 4)
