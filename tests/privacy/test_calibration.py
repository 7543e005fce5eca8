"""Calibration: realized epsilon <= target and within 1%; inverts the closed forms."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightning_dpgnn.privacy import (
    CalibrationError,
    PrivacyAccountant,
    calibrate_noise_multiplier,
    gaussian_plan,
)


def prop6(K, sigma, delta):
    return K / (2 * sigma**2) + math.sqrt(2 * K * math.log(1 / delta)) / sigma


@settings(max_examples=30, deadline=None)
@given(K=st.integers(1, 5), eps=st.floats(0.1, 32.0), log10_delta=st.floats(-9, -3))
def test_calibration_inverts_proposition_6(K, eps, log10_delta):
    delta = 10**log10_delta
    plan = gaussian_plan(K, delta=delta, conversion="basic")
    sigma = calibrate_noise_multiplier(plan, eps)
    realized = prop6(K, sigma, delta)  # the paper's closed form is the oracle
    assert realized <= eps * (1 + 1e-9)
    assert realized >= eps * 0.99


def test_calibration_of_a_composed_node_level_plan():
    """GAP node level: encoder DP-SGD + PMA + classifier DP-SGD, one shared noise scale."""
    D, K, q, T, delta, target = 20, 2, 256 / 10_000, 400, 1e-5, 8.0

    def plan(z):
        acc = PrivacyAccountant("node", delta)
        acc.add_subsampled_gaussian("encoder/dpsgd", z, q, steps=T)
        acc.add_gaussian("pma", z, count=K, sensitivity=math.sqrt(D))
        acc.add_subsampled_gaussian("classifier/dpsgd", z, q, steps=T)
        return acc

    z = calibrate_noise_multiplier(plan, target)
    realized = plan(z).epsilon()
    assert target * 0.99 <= realized <= target
    assert plan(z * 0.98).epsilon() > realized  # less noise would spend more


def test_more_noise_is_needed_for_smaller_budgets_and_more_hops():
    z1 = calibrate_noise_multiplier(gaussian_plan(2, delta=1e-6), 1.0)
    z4 = calibrate_noise_multiplier(gaussian_plan(2, delta=1e-6), 4.0)
    z1_k5 = calibrate_noise_multiplier(gaussian_plan(5, delta=1e-6), 1.0)
    assert z1 > z4 and z1_k5 > z1


def test_impossible_budget_and_bad_input_raise():
    with pytest.raises(CalibrationError, match="cannot meet this budget"):
        calibrate_noise_multiplier(gaussian_plan(1, delta=1e-5), 1e-9, high=10.0)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        calibrate_noise_multiplier(gaussian_plan(1, delta=1e-5), 0.0)
    with pytest.raises(ValueError, match="delta"):
        calibrate_noise_multiplier(gaussian_plan(1), 1.0, delta=2.0)


@pytest.mark.parametrize("target", [0.1, 1.0, 8.0, 64.0])
def test_calibration_needs_few_plan_evaluations(target):
    """Each evaluation composes the whole plan (subsampled RDP at ~170 orders, ~0.5 s for a
    DP-SGD plan): the regula-falsi search must not spend the ~25 a plain bisection does."""
    calls = []
    base = gaussian_plan(2, delta=1e-6)

    def plan(z):
        calls.append(z)
        return base(z)

    z = calibrate_noise_multiplier(plan, target)
    assert target * 0.99 <= base(z).epsilon() <= target
    assert len(calls) <= 12, len(calls)


def test_calibration_returns_the_floor_when_the_plan_is_nearly_free():
    z = calibrate_noise_multiplier(gaussian_plan(1, delta=1e-5), 1e6, low=1e-3)
    assert z == 1e-3 and gaussian_plan(1, delta=1e-5)(z).epsilon() <= 1e6
