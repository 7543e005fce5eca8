"""Numeric noise calibration: the noise multiplier that meets a target (epsilon, delta).

A *plan* maps a noise multiplier to the ledger of the whole run (every mechanism at one noise
scale, thesis §4.7.5); epsilon decreases in it, so a bracketing root search in log-space
(Illinois regula falsi) finds it. Pure torch/numpy: no Lightning imports.
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
    rtol: float = 0.001,
    low: float = 1e-3,
    high: float = 1e6,
    max_iter: int = 200,
) -> float:
    """Smallest noise multiplier ``z`` in ``[low, high]`` with ``epsilon * (1 - rtol) <=
    eps(plan(z)) <= epsilon`` at ``delta`` (``None``: the plan's accountant's); the returned
    ``z`` always satisfies ``eps(plan(z)) <= epsilon``."""
    target = check_epsilon(epsilon)
    if delta is not None:
        delta = check_delta(delta)
    if not 0 < rtol < 1:
        raise ValueError(f"rtol must be in (0, 1), got {rtol}")

    def excess(u: float) -> float:  # eps(e^u) - target: decreasing in u = log z
        return plan(math.exp(u)).epsilon(delta) - target

    lo_u, hi_u = math.log(low), math.log(high)
    # bracket from z = 1 outwards (noise multipliers of real plans sit near 1): cheaper than
    # evaluating both ends of [low, high], each evaluation composing the whole plan
    u, f = 0.0, excess(0.0)
    step = math.log(4.0)
    if f > 0:
        a, fa = u, f
        while True:
            u = min(u + step, hi_u)
            f = excess(u)
            if f <= 0:
                b, fb = u, f
                break
            if u >= hi_u:
                raise CalibrationError(
                    f"even noise multiplier {high:g} spends epsilon {f + target:.4g} > target "
                    f"{target:g}: the plan cannot meet this budget (fewer steps/hops or a larger "
                    "epsilon needed)"
                )
            a, fa, step = u, f, step * 2
    else:
        b, fb = u, f
        while True:
            u = max(u - step, lo_u)
            f = excess(u)
            if f > 0:
                a, fa = u, f
                break
            if u <= lo_u:
                return low  # almost no noise already fits; the plan is nearly free
            b, fb, step = u, f, step * 2
    # invariant: excess(a) = fa > 0 >= fb = excess(b), a < b. Illinois regula falsi: the
    # secant step converges superlinearly on this smooth curve; halving the weight of an end
    # kept twice in a row stops it stalling; any step not strictly inside falls back to bisection
    wa, wb, kept = fa, fb, 0
    for _ in range(max_iter):
        if fb >= -rtol * target or b - a < 1e-12:
            break
        u = b - wb * (b - a) / (wb - wa)
        if not a < u < b:
            u = 0.5 * (a + b)
        f = excess(u)
        if f > 0:
            a, fa, wa = u, f, f
            wb = wb / 2 if kept == -1 else wb
            kept = -1
        else:
            b, fb, wb = u, f, f
            wa = wa / 2 if kept == 1 else wa
            kept = 1
    return math.exp(b)


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
