"""More scalar LDP mechanisms for numerical features, the baselines of HeteroRR's supplement
Fig. 10: :class:`Hybrid` (Wang et al., ICDE 2019), :class:`ThreeOutputs` and :class:`PMSub`
(Zhao et al., IEEE IoT Journal 2020). Coordinate-wise like
:class:`~lightning_dpgnn.privacy.ldp.Duchi`: unbiased, eps_c-LDP per coordinate.
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar

import torch
from scipy.optimize import minimize_scalar

from . import random as R
from .ldp import (
    Duchi,
    Piecewise,
    _CoordinateRandomizer,
    _coth_half,
    _log_prob_of,
    _per_entry,
)

__all__ = ["Hybrid", "ThreeOutputs", "PMSub", "HYBRID_EPS_STAR", "three_outputs_p0"]

#: Wang et al. (ICDE 2019): HM mixes in PM only above this budget,
#: ``ln((-5 + 2 cbrt(6353 - 405 sqrt(241)) + 2 cbrt(6353 + 405 sqrt(241))) / 27) ~= 0.61``
_ROOT = 405.0 * math.sqrt(241.0)
HYBRID_EPS_STAR = math.log(
    (-5.0 + 2.0 * (6353.0 - _ROOT) ** (1.0 / 3.0) + 2.0 * (6353.0 + _ROOT) ** (1.0 / 3.0)) / 27.0
)


class PMSub(Piecewise):
    """PM-SUB (Zhao et al. 2020, §IV-C): the piecewise family of :class:`Piecewise` at
    ``s = e^{eps/3}`` (as recalled from the paper; privacy and unbiasedness hold for every
    ``s > 0`` and are tested); unbiased, eps_c-LDP (density ratio exactly ``e^eps``)."""

    name: ClassVar[str] = "pm_sub"
    divisor: ClassVar[float] = 3.0


class Hybrid(_CoordinateRandomizer):
    """Hybrid mechanism, HM (Wang et al., ICDE 2019, §III-C): each coordinate runs PM with
    probability ``a = 1 - e^{-eps_c/2}`` when ``eps_c >`` :data:`HYBRID_EPS_STAR` (else
    ``a = 0``) and Duchi otherwise, both at the full ``eps_c``. The choice ignores the input,
    so the mixture (``a`` times PM's density plus ``1 - a`` times Duchi's two atoms) keeps
    every ratio at most ``e^eps_c``; unbiased, variance ``a Var_PM + (1 - a) Var_DM``."""

    name: ClassVar[str] = "hybrid"

    @functools.cached_property
    def _pm(self) -> Piecewise:
        return Piecewise(self.epsilon, self.alpha, self.beta, per_coordinate=self.per_coordinate)

    @functools.cached_property
    def _dm(self) -> Duchi:
        return Duchi(self.epsilon, self.alpha, self.beta, per_coordinate=self.per_coordinate)

    def mix_probability(self, d: int) -> float:
        """``a``: the probability of running PM on a coordinate (0 at or below eps*)."""
        eps = self.coordinate_epsilon(d)
        return -math.expm1(-eps / 2.0) if eps > HYBRID_EPS_STAR else 0.0

    def _sample_rows(self, x, d, generator):
        a = torch.full(tuple(x.shape), self.mix_probability(d), dtype=torch.float64,
                       device=x.device)
        use_pm = R.bernoulli(a, generator=generator)
        pm = self._pm._sample_rows(x, d, generator)
        return torch.where(use_pm, pm, self._dm._sample_rows(x, d, generator))

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``a Var_PM(x) + (1 - a) Var_DM(x)`` (both unbiased, so the mixture's variance)."""
        a = self.mix_probability(xd.shape[-1])
        return a * self._pm.variance(xd) + (1.0 - a) * self._dm.variance(xd)

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """``a E_PM|y* - x| + (1 - a) E_DM|y* - x|``."""
        a = self.mix_probability(xd.shape[-1])
        return a * self._pm.expected_error(xd) + (1.0 - a) * self._dm.expected_error(xd)

    def density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Density of the continuous part per entry: ``a`` times PM's density."""
        xd = self._prepare(x)
        return self.mix_probability(xd.shape[-1]) * self._pm.density(xd, y)

    def atom_values(self, x: torch.Tensor) -> torch.Tensor:
        """The two atoms ``[y*(t* = -C_DM), y*(t* = +C_DM)]`` per entry."""
        return self._dm.output_values(x)

    def atom_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Probability of each atom per entry: ``(1 - a)`` times Duchi's probabilities."""
        xd = self._prepare(x)
        return (1.0 - self.mix_probability(xd.shape[-1])) * self._dm.output_probabilities(xd)


def _three_outputs_worst_variance(p0: float, eps: float) -> float:
    """Worst-case (over ``t in [-1, 1]``) variance of Three-Outputs at ``P_{0<-0} = p0``."""
    e = math.exp(eps)
    c = e * (e + 1.0) / (math.expm1(eps) * (e - p0))
    slope = p0 * (1.0 - 1.0 / e)  # P(0 | t) = p0 - slope |t|
    t = min(1.0, max(0.0, c * c * slope / 2.0))  # maximiser of C^2 (1 - p0 + slope t) - t^2
    return c * c * (1.0 - p0 + slope * t) - t * t


@functools.lru_cache(maxsize=4096)
def three_outputs_p0(eps: float) -> float:
    """``P_{0<-0}`` (output 0 at input 0), as in Zhao et al. the minimiser of the worst-case
    variance over the eps-LDP range ``[0, e^eps / (e^eps + 2)]``, found numerically (0 below
    ``ln 2``, the cap above ``ln 5.53``, as in the paper). A function of the public ``eps``."""
    e = math.exp(eps)
    cap = e / (e + 2.0)
    res = minimize_scalar(
        _three_outputs_worst_variance, bounds=(0.0, cap), args=(eps,), method="bounded",
        options={"xatol": 1e-12},
    )
    candidates = [0.0, cap, float(res.x)]
    return min(candidates, key=lambda p: _three_outputs_worst_variance(p, eps))


class ThreeOutputs(_CoordinateRandomizer):
    """Three-Outputs mechanism (Zhao et al. 2020, §IV-A): ``t* in {-C, 0, C}``. With
    ``E = e^eps_c``, ``p0`` (:func:`three_outputs_p0`) and ``c1 = (1 - p0/E)/(E + 1)``, at
    ``t = 1`` the outputs ``C, 0, -C`` have probabilities ``E c1, p0 / E, c1`` (mirrored at
    ``t = -1``), at ``t = 0`` ``(1 - p0)/2, p0, (1 - p0)/2``, linear in between (derived here):
    each varies by at most ``E``, so eps_c-LDP; ``C = E (E + 1) / ((E - 1)(E - p0))`` makes it
    unbiased. ``p0 = 0`` is Duchi."""

    name: ClassVar[str] = "three_outputs"

    def _constants(self, d: int) -> tuple[float, float, float, float, float]:
        """``C``, ``p0``, ``c1 = P(-C | t=1)``, ``E c1 = P(C | t=1)`` and ``E``."""
        eps = self.coordinate_epsilon(d)
        e = math.exp(eps)
        p0 = three_outputs_p0(eps)
        c1 = (1.0 - p0 / e) / (e + 1.0)
        c = _coth_half(eps) * e / (e - p0)  # E (E + 1) / ((E - 1)(E - p0))
        return c, p0, c1, e * c1, e

    def _probs_std(self, t: torch.Tensor, d: int) -> torch.Tensor:
        """``[P(-C | t), P(0 | t), P(C | t)]`` for standardized inputs (float64)."""
        c, p0, low, high, e = self._constants(d)
        mid = (1.0 - p0) / 2.0
        p_zero = p0 - p0 * (1.0 - 1.0 / e) * t.abs()
        p_pos = torch.where(t >= 0, mid + (high - mid) * t, mid + (mid - low) * t)
        p_neg = (1.0 - p_zero - p_pos).clamp(min=0.0)
        return torch.stack([p_neg, p_zero, p_pos], dim=-1)

    def output_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``[Pr[t* = -C], Pr[t* = 0], Pr[t* = C]]`` per entry."""
        xd = self._prepare(x)
        return self._probs_std(self._std_input(xd), xd.shape[-1])

    def output_values(self, x: torch.Tensor) -> torch.Tensor:
        """The three outputs ``[y*(-C), y*(0), y*(C)]`` per entry of ``x``."""
        xd = self._prepare(x)
        c = self._constants(xd.shape[-1])[0]
        return self._std_values(xd, (-c, 0.0, c))

    def _sample_rows(self, x, d, generator):
        c = self._constants(d)[0]
        probs = self._probs_std(self._std_input(x), d)
        u = R.uniform(tuple(x.shape), generator=generator, dtype=torch.float64, device=x.device)
        t_star = torch.where(
            u < probs[..., 0], -c, torch.where(u < probs[..., 0] + probs[..., 1], 0.0, c)
        )
        return self._from_std(t_star)

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = Delta^2 / 4 * (C^2 (1 - P(0 | t)) - t^2)``."""
        a, b = self._bounds(xd)
        d = xd.shape[-1]
        c = self._constants(d)[0]
        t = self._std_input(xd)
        p_zero = self._probs_std(t, d)[..., 1]
        return (b - a) ** 2 / 4.0 * (c**2 * (1.0 - p_zero) - t**2)

    def log_prob(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Exact log-probability of an output row ``y`` (values from :meth:`output_values`)."""
        xd = self._prepare(x)
        a, b = self._bounds(xd)
        mid = (a + b) / 2.0
        yd = y.to(torch.float64)
        which = torch.where(yd < mid, 0, torch.where(yd > mid, 2, 1))
        return _log_prob_of(self.output_probabilities(xd), which)
