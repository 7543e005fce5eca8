"""Hybrid, Three-Outputs and PM-SUB: exact LDP ratios, unbiasedness, variances, accounting.

Ratios are computed exactly from the output probabilities/densities over grids of inputs and
outputs (extremes included); the Monte-Carlo checks reuse ``test_ldp``'s 5-standard-error
tolerances, which come with a power check.
"""

from __future__ import annotations

import math

import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.feature_rr import FeatureRR
from lightning_dpgnn.privacy.ldp import AnalyticGaussian, Duchi, Laplace, MultiBit, Piecewise
from lightning_dpgnn.privacy.ldp_numeric import (
    HYBRID_EPS_STAR,
    Hybrid,
    PMSub,
    ThreeOutputs,
    three_outputs_p0,
)
from lightning_dpgnn.privacy.local import FEATURE_MECHANISMS, LocalCollector
from tests.privacy.test_ldp import ALPHA, BETA, check_mean_and_variance, grid_row

XS = torch.linspace(ALPHA, BETA, 61, dtype=torch.float64)  # inputs, both ends included


def _max_ratio(p: torch.Tensor) -> float:
    """``p[i, o]``: max over outputs o of max_i p / min_i p (outputs no input can produce are
    left out; an output only some inputs produce gives inf)."""
    hi, lo = p.max(dim=0).values, p.min(dim=0).values
    return float((hi[hi > 0] / lo[hi > 0]).max())


# ------------------------------------------------------------------------------------------
# exact worst-case ratios
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.2, 0.69, 0.8, 1.2, 2.0, 5.0])
def test_three_outputs_ratio_is_exactly_e_eps(eps):
    mech = ThreeOutputs(eps, ALPHA, BETA, per_coordinate=True)
    probs = mech.output_probabilities(XS[:, None])[:, 0, :]  # [inputs, 3 outputs]
    assert (probs >= 0).all()
    assert torch.allclose(probs.sum(-1), torch.ones(len(XS), dtype=torch.float64))
    assert _max_ratio(probs) == pytest.approx(math.exp(eps), rel=1e-9)  # tight at x = +-1
    if three_outputs_p0(eps) > 0:  # output 0 varies by exactly e^eps too
        assert float(probs[:, 1].max() / probs[:, 1].min()) == pytest.approx(math.exp(eps))


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_pm_sub_density_ratio_is_exactly_e_eps_and_integrates_to_one(eps):
    mech = PMSub(eps, ALPHA, BETA, per_coordinate=True)
    sup = mech.support(XS[:1, None])[0, 0]
    ys = torch.linspace(float(sup[0]), float(sup[1]), 4001, dtype=torch.float64)[1:-1]
    dens = mech.density(XS[:, None], ys[None, :])  # [inputs, outputs]
    assert (dens > 0).all()
    assert _max_ratio(dens) == pytest.approx(math.exp(eps), rel=1e-9)
    fine = torch.linspace(float(sup[0]), float(sup[1]), 100_001, dtype=torch.float64)
    for xv in (ALPHA, 0.3, BETA):
        dd = mech.density(torch.tensor([[xv]], dtype=torch.float64), fine[:, None])[:, 0]
        assert float(torch.trapezoid(dd, fine)) == pytest.approx(1.0, abs=1e-3)
        assert float(torch.trapezoid(dd * fine, fine)) == pytest.approx(xv, abs=1e-3)  # unbiased
    outside = torch.tensor([[float(sup[0]) - 1e-6], [float(sup[1]) + 1e-6]], dtype=torch.float64)
    assert (mech.density(XS[:3, None, None], outside[None])[..., 0] == 0).all()


@pytest.mark.parametrize("eps", [0.4, 1.0, 3.0])
def test_hybrid_atoms_and_density_ratios_are_at_most_e_eps(eps):
    mech = Hybrid(eps, ALPHA, BETA, per_coordinate=True)
    atoms = mech.atom_probabilities(XS[:, None])[:, 0, :]  # [inputs, 2]
    assert _max_ratio(atoms) == pytest.approx(math.exp(eps), rel=1e-9)
    a = mech.mix_probability(1)
    if eps <= HYBRID_EPS_STAR:
        assert a == 0.0  # Duchi alone
        assert (mech.density(XS[:, None], torch.zeros(1, 1, dtype=torch.float64)) == 0).all()
        return
    assert a == pytest.approx(1 - math.exp(-eps / 2))
    sup = Piecewise(eps, ALPHA, BETA, per_coordinate=True).support(XS[:1, None])[0, 0]
    ys = torch.linspace(float(sup[0]), float(sup[1]), 4001, dtype=torch.float64)[1:-1]
    dens = mech.density(XS[:, None], ys[None, :])
    assert _max_ratio(dens) == pytest.approx(math.exp(eps), rel=1e-9)
    # total mass: atoms + continuous part = 1, and the mixture is unbiased
    fine = torch.linspace(float(sup[0]), float(sup[1]), 100_001, dtype=torch.float64)
    for xv in (ALPHA, 0.7, BETA):
        x = torch.tensor([[xv]], dtype=torch.float64)
        dd = mech.density(x, fine[:, None])[:, 0]
        pa, va = mech.atom_probabilities(x)[0, 0], mech.atom_values(x)[0, 0]
        assert float(torch.trapezoid(dd, fine) + pa.sum()) == pytest.approx(1.0, abs=1e-3)
        mean = float(torch.trapezoid(dd * fine, fine) + (pa * va).sum())
        assert mean == pytest.approx(xv, abs=2e-3)


# ------------------------------------------------------------------------------------------
# parameters from the papers
# ------------------------------------------------------------------------------------------
def test_three_outputs_p0_follows_the_papers_regimes():
    # Zhao et al.: P_{0<-0} = 0 below ln 2, e^eps/(e^eps + 2) above ln 5.53, in between inside
    for eps in (0.1, 0.5, 0.69):
        assert three_outputs_p0(eps) == 0.0
    for eps in (1.72, 2.5, 6.0):
        assert three_outputs_p0(eps) == pytest.approx(math.exp(eps) / (math.exp(eps) + 2))
    for eps in (0.8, 1.2, 1.6):
        assert 0.0 < three_outputs_p0(eps) < math.exp(eps) / (math.exp(eps) + 2) - 1e-4
    assert math.log(2) < 0.8 and math.log(5.53) < 1.72


def test_three_outputs_with_p0_zero_is_duchi():
    eps = 0.5  # < ln 2
    to = ThreeOutputs(eps, ALPHA, BETA, per_coordinate=True)
    dm = Duchi(eps, ALPHA, BETA, per_coordinate=True)
    x = XS[:, None]
    assert torch.allclose(to.output_probabilities(x)[..., [0, 2]], dm.output_probabilities(x))
    assert torch.allclose(to.output_values(x)[..., [0, 2]], dm.output_values(x))


def test_hybrid_eps_star_and_constant_worst_case_variance():
    assert HYBRID_EPS_STAR == pytest.approx(0.61, abs=0.005)
    eps = 2.0
    hm = Hybrid(eps, -1.0, 1.0, per_coordinate=True)  # t = x
    var = hm.variance(XS[XS.abs() <= 1][:, None])[:, 0]
    h = math.exp(eps / 2)
    paper = (h + 3) / (3 * h * (h - 1)) + (math.exp(eps) + 1) ** 2 / (h * math.expm1(eps) ** 2)
    assert torch.allclose(var, torch.full_like(var, paper), rtol=1e-12)
    below = Hybrid(0.5, ALPHA, BETA, per_coordinate=True)
    dm = Duchi(0.5, ALPHA, BETA, per_coordinate=True)
    assert torch.allclose(below.variance(XS[:, None]), dm.variance(XS[:, None]))


def test_piecewise_family_variance_is_eq_2_34_for_pm():
    for eps in (0.3, 1.0, 6.0):
        pm = Piecewise(eps, ALPHA, BETA, per_coordinate=True)
        e = math.expm1(eps / 2)
        x = XS[:, None]
        expect = (x - (ALPHA + BETA) / 2) ** 2 / e + (e + 4) / (3 * e**2) * (BETA - ALPHA) ** 2 / 4
        assert torch.allclose(pm.variance(x), expect, rtol=1e-10)
        assert PMSub.shape(eps) == pytest.approx(math.exp(eps / 3))


# ------------------------------------------------------------------------------------------
# Monte Carlo: unbiased, variance and E|y - x| as computed
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "factory,n",
    [
        (lambda: Hybrid(2.0, ALPHA, BETA, per_coordinate=True), 200_000),
        (lambda: Hybrid(0.4, ALPHA, BETA, per_coordinate=True), 200_000),
        (lambda: Hybrid(6.0, ALPHA, BETA), 200_000),
        (lambda: ThreeOutputs(1.2, ALPHA, BETA, per_coordinate=True), 200_000),
        (lambda: ThreeOutputs(3.0, ALPHA, BETA, per_coordinate=True), 400_000),
        (lambda: ThreeOutputs(2.5, ALPHA, BETA), 200_000),
        (lambda: PMSub(1.0, ALPHA, BETA, per_coordinate=True), 200_000),
        (lambda: PMSub(8.0, ALPHA, BETA), 200_000),
    ],
    ids=["hm", "hm-duchi", "hm-split", "to", "to-cap", "to-split", "pmsub", "pmsub-split"],
)
def test_unbiased_and_variance_match(factory, n):
    check_mean_and_variance(factory(), grid_row(), seed=11, n=n)


@pytest.mark.parametrize(
    "factory",
    [
        lambda: Laplace(2.0, ALPHA, BETA),
        lambda: AnalyticGaussian(2.0, 1e-5, ALPHA, BETA),
        lambda: Duchi(2.0, ALPHA, BETA),
        lambda: Piecewise(2.0, ALPHA, BETA),
        lambda: MultiBit(2.0, ALPHA, BETA),
        lambda: Hybrid(3.0, ALPHA, BETA, per_coordinate=True),
        lambda: ThreeOutputs(1.2, ALPHA, BETA, per_coordinate=True),
        lambda: PMSub(2.0, ALPHA, BETA, per_coordinate=True),
        lambda: FeatureRR(2.0, torch.tensor([0.4, 0.3, 0.1, 0.1, 0.1]), k=8, alpha=ALPHA,
                          beta=BETA),
    ],
    ids=["lm", "ag", "dm", "pm", "mb", "hm", "to", "pmsub", "featurerr"],
)
def test_expected_error_matches_monte_carlo(factory):
    mech, row, n = factory(), grid_row(), 200_000
    x = row.expand(n, row.numel()).clone()
    y = mech.estimate(mech.sample(x, generator=torch.Generator().manual_seed(5)))
    err = (y - x).abs()
    expect = mech.expected_error(row)
    se = err.std(0) / math.sqrt(n)
    assert ((err.mean(0) - expect).abs() <= 5 * se + 1e-12).all(), (err.mean(0) - expect) / se
    assert (5 * se / expect < 0.03).all()  # power: a formula off by 3% would be caught


# ------------------------------------------------------------------------------------------
# accounting, registry, bad input
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Hybrid, ThreeOutputs, PMSub])
def test_accounting_per_node(cls):
    acc = PrivacyAccountant(level="ldp")
    cls(1.5).at_width(7).account(acc)
    assert acc.epsilon() == 1.5
    acc = PrivacyAccountant(level="ldp")
    cls(0.5, per_coordinate=True).at_width(4).account(acc)
    assert acc.epsilon() == pytest.approx(2.0)
    assert acc.ledger[0].name == cls.name


@pytest.mark.parametrize("name", ["hybrid", "three_outputs", "pm_sub"])
def test_registered_and_collected(name):
    assert FEATURE_MECHANISMS[name].name == name
    col = LocalCollector(1.0, 2.0, name)
    acc = PrivacyAccountant(level="ldp")
    for mechanism in col.mechanisms(5, num_classes=3):
        mechanism.account(acc)
    assert acc.epsilon() == pytest.approx(3.0)


@pytest.mark.parametrize("cls", [Hybrid, ThreeOutputs, PMSub])
@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(cls, eps):
    with pytest.raises(ValueError, match="epsilon"):
        cls(eps)
