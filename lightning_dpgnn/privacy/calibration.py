"""Numeric noise calibration: find the noise multiplier that meets a target (epsilon, delta).

A *plan* is a function ``noise_multiplier -> PrivacyAccountant`` that fills a ledger with every
mechanism the training run will invoke (e.g. GAP node level: encoder DP-SGD steps + K PMA hops
+ classifier DP-SGD steps, all at one noise scale as in thesis §4.7.5). Epsilon decreases
monotonically in the noise multiplier, so a bracketing bisection in log-space finds the
smallest noise whose realized epsilon is <= the target and within ``rtol`` (1%) of it.

Pure torch/numpy: no Lightning imports.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .accountant import PrivacyAccountant, check_delta, check_epsilon

__all__ = ["CalibrationError", "calibrate_noise_multiplier", "gaussian_plan"]

Plan = Callable[[float], PrivacyAccountant]


class CalibrationError(ValueError):
    """Raised when no noise multiplier within the search range meets the budget."""


def calibrate_noise_multiplier(
    plan: Plan,
    epsilon: float,
    delta: float | None = None,
    *,
    rtol: float = 0.01,
    low: float = 1e-3,
    high: float = 1e6,
    max_iter: int = 200,
) -> float:
    """Smallest noise multiplier ``z`` with ``target*(1-rtol) <= eps(plan(z)) <= target``.

    Args:
        plan: builds the ledger of the whole run for a given noise multiplier.
        epsilon: target epsilon (> 0).
        delta: target delta; ``None`` uses the delta of the accountant the plan returns.
        rtol: how close below the target the realized epsilon must land (default 1%).
        low, high: noise-multiplier search range.

    Returns:
        The noise multiplier. ``eps(plan(z)) <= epsilon`` always holds for the returned value.
    """
    target = check_epsilon(epsilon)
    if delta is not None:
        delta = check_delta(delta)
    if not 0 < rtol < 1:
        raise ValueError(f"rtol must be in (0, 1), got {rtol}")

    def eps(z: float) -> float:
        return plan(z).epsilon(delta)

    if eps(high) > target:
        raise CalibrationError(
            f"even noise multiplier {high:g} spends epsilon {eps(high):.4g} > target {target:g}: "
            "the plan cannot meet this budget (fewer steps/hops or a larger epsilon needed)"
        )
    lo, hi = low, high
    if eps(lo) <= target:  # almost no noise already fits; the plan is nearly free
        return lo
    # invariant: eps(lo) > target >= eps(hi)
    for _ in range(max_iter):
        mid = math.sqrt(lo * hi)
        e = eps(mid)
        if e > target:
            lo = mid
        else:
            hi = mid
            if e >= target * (1.0 - rtol):
                return hi
        if hi / lo < 1.0 + 1e-12:
            break
    return hi


def gaussian_plan(
    count: int, *, sensitivity: float = 1.0, level: str = "edge", delta: float | None = None,
    name: str = "gaussian", conversion: str = "improved",
) -> Plan:
    """Plan of ``count`` Gaussian mechanisms (e.g. K PMA hops) at one noise multiplier."""

    def plan(z: float) -> PrivacyAccountant:
        acc = PrivacyAccountant(level=level, delta=delta, conversion=conversion)  # type: ignore[arg-type]
        acc.add_gaussian(name, z, count=count, sensitivity=sensitivity)
        return acc

    return plan
