"""Local-DP randomizers for node feature rows ``x in [alpha, beta]^d`` (thesis ch. 2 and 3).

``epsilon`` is what one collection spends per node (row). The scalar mechanisms of thesis §2.9
compose sequentially over the ``d`` coordinates, ``epsilon / d`` each (§3.4); thesis ch. 2
(PGC) gives each feature ``epsilon`` instead (``per_coordinate=True``; the recorded per-node
spend is then ``d * epsilon``). Every draw goes through :mod:`lightning_dpgnn.privacy.random`.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import ClassVar

import torch
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from . import random as R
from .accountant import LedgerEntry, PrivacyAccountant, check_delta, check_epsilon
from .mechanism import FEATURES, fields_repr

__all__ = [
    "FeatureRandomizer",
    "MultiBit",
    "OneBit",
    "Laplace",
    "Duchi",
    "Piecewise",
    "AnalyticGaussian",
    "optimal_m",
    "analytic_gaussian_delta",
    "calibrate_analytic_gaussian",
    "M_STAR_Z",
]

Bounds = float | Sequence[float] | torch.Tensor

#: z* of thesis eq. 3.23 (z = sinh(z)/2) rounded as in eq. 3.19: m* = floor(epsilon / 2.18).
M_STAR_Z = 2.18

# rows are processed in chunks of about this many entries, to bound temporary memory
_CHUNK_ENTRIES = 1 << 22


def _check_feature_epsilon(epsilon: float) -> float:
    return check_epsilon(epsilon, finite=(
        "for a feature randomizer (epsilon=inf means no perturbation: use the raw features "
        "and record no LDP spend instead)"))


def _check_d(d: int) -> int:
    if int(d) < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    return int(d)


def _check_bounds(alpha: Bounds, beta: Bounds) -> tuple[float | torch.Tensor, float | torch.Tensor]:
    """Validate the feature range: numbers or 1-D sequences (one per feature), finite, and
    ``alpha < beta`` (elementwise)."""
    ta, tb = (torch.as_tensor(v, dtype=torch.float64).detach().cpu() for v in (alpha, beta))
    for t, name in ((ta, "alpha"), (tb, "beta")):
        if t.ndim > 1 or t.numel() == 0:
            raise ValueError(f"{name} must be a number or a 1-D sequence (one per feature)")
    a, b = (float(t) if t.ndim == 0 else t for t in (ta, tb))
    if not (torch.isfinite(ta).all() and torch.isfinite(tb).all()):
        raise ValueError(f"alpha and beta must be finite, got alpha={alpha!r}, beta={beta!r}")
    try:
        ok = bool((ta < tb).all())
    except RuntimeError as err:
        raise ValueError("alpha and beta have incompatible shapes") from err
    if not ok:
        raise ValueError(
            f"the feature range needs alpha < beta, got alpha={alpha!r}, beta={beta!r}"
        )
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape != b.shape:
        raise ValueError(f"alpha and beta must have the same length, got {a.shape} and {b.shape}")
    return a, b


def _row_chunks(n: int, d: int) -> Iterator[slice]:
    step = max(1, _CHUNK_ENTRIES // max(d, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def _coth_half(eps: float) -> float:
    """``(e^eps + 1) / (e^eps - 1) = coth(eps / 2)``, stable for tiny eps."""
    return 1.0 + 2.0 / math.expm1(eps)


def _uniform_abs_integral(lo, hi, x: torch.Tensor) -> torch.Tensor:
    """``int_lo^hi |y - x| dy = [(y - x)|y - x| / 2]_lo^hi`` (elementwise)."""
    return ((hi - x) * (hi - x).abs() - (lo - x) * (lo - x).abs()) / 2.0


def _log_prob_of(probs: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
    """``sum_i log probs[..., i, which[..., i]]``: the log-probability of a row of discrete
    outputs (``which``: each entry's output index) given per-entry output probabilities."""
    shape = torch.broadcast_shapes(probs.shape[:-1], which.shape)
    probs = probs.expand(*shape, probs.shape[-1])
    return torch.log(probs.gather(-1, which.expand(shape).unsqueeze(-1)).squeeze(-1)).sum(-1)


def _check_codes(name: str, codes: torch.Tensor, values: tuple[int, ...]) -> None:
    if codes.ndim not in (1, 2) or codes.shape[-1] == 0:
        raise ValueError(f"{name}: codes must be [n, d] or [d], got {tuple(codes.shape)}")
    if not bool(functools.reduce(torch.logical_or, (codes == v for v in values)).all()):
        allowed = ", ".join(map(str, values[:-1])) + f" and {values[-1]}"
        raise ValueError(f"{name}: codes must contain only {allowed}")


def _per_entry(method):
    """An evaluation method (variance, error, ...): ``x`` validated and clipped to float64
    before, the result in the output dtype of ``x`` after."""

    @functools.wraps(method)
    def wrapper(self: FeatureRandomizer, x: torch.Tensor) -> torch.Tensor:
        return method(self, self._prepare(x)).to(self._out_dtype(x))

    return wrapper


class FeatureRandomizer(ABC):
    """A feature randomizer (a :class:`~.mechanism.Mechanism`): ``sample`` is what the nodes
    send, ``estimate`` the server's unbiased estimate; ``epsilon`` per row (node) and collection,
    over the public range ``[alpha, beta]`` (numbers or one per feature; inputs outside it are
    clipped, with a warning, thesis §2.7)."""

    name: ClassVar[str] = "feature_randomizer"
    level: ClassVar[str] = "ldp"
    reads: ClassVar[tuple[str, ...]] = (FEATURES,)
    #: the nodes send ``int8`` codes (rectified by :meth:`estimate`) rather than values
    sends_codes: ClassVar[bool] = False
    _REPR: ClassVar[tuple[str, ...]] = ("epsilon", "alpha", "beta")

    def __init__(self, epsilon: float, alpha: Bounds = 0.0, beta: Bounds = 1.0) -> None:
        self.epsilon = _check_feature_epsilon(epsilon)
        self.alpha, self.beta = _check_bounds(alpha, beta)
        #: the feature dimension its spend is for (:meth:`at_width`; else the last input's)
        self.d: int | None = None
        self._last_d: int | None = None

    def _bounds(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """alpha, beta as float64 tensors on x's device, broadcastable against x."""
        a = torch.as_tensor(self.alpha, dtype=torch.float64, device=x.device)
        b = torch.as_tensor(self.beta, dtype=torch.float64, device=x.device)
        if a.ndim == 1 and a.numel() != x.shape[-1]:
            raise ValueError(
                f"{self.name}: per-feature bounds have {a.numel()} entries but x has "
                f"{x.shape[-1]} features"
            )
        return a, b

    def _validate(self, x: torch.Tensor, any_rank: bool = False) -> None:
        """Check ``x`` ([n, d] or [d]; any ``[..., d]`` with ``any_rank``, for evaluation
        helpers; no NaN) and warn, with a count, about values to clip."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{self.name}: x must be a torch.Tensor, got {type(x).__name__}")
        if (x.ndim not in (1, 2) and not (any_rank and x.ndim > 2)) or x.shape[-1] == 0:
            raise ValueError(
                f"{self.name}: x must be a [n, d] matrix or a [d] vector with d >= 1, "
                f"got shape {tuple(x.shape)}"
            )
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"{self.name}: x must be a real-valued tensor, got {x.dtype}")
        a, b = self._bounds(x)
        rows = x.reshape(-1, x.shape[-1])
        dtype = torch.float64
        if x.is_floating_point() and all(bool((v.to(x.dtype).double() == v).all()) for v in (a, b)):
            dtype = x.dtype  # bounds exact in x's dtype: the same comparisons, no float64 copy
        a, b = a.to(dtype), b.to(dtype)
        nan = outside = 0
        for sl in _row_chunks(rows.shape[0], rows.shape[1]):
            xc = rows[sl].to(dtype)
            if xc.numel():  # one pass when all is well (a NaN makes the comparisons False)
                lo, hi = torch.aminmax(xc) if a.ndim == 0 else torch.aminmax(xc, dim=0)
                if bool((lo >= a).all()) and bool((hi <= b).all()):
                    continue
            nan += int(torch.count_nonzero(torch.isnan(xc)))
            outside += int(torch.count_nonzero((xc < a) | (xc > b)))
        if nan:
            raise ValueError(f"{self.name}: x contains {nan} NaN value(s)")
        if outside:
            warnings.warn(
                f"{self.name}: {outside} of {x.numel()} input values were outside the feature "
                f"range [alpha, beta] and were clipped into it",
                UserWarning,
                stacklevel=4,
            )

    def _clip64(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` as float64, clipped into [alpha, beta]."""
        a, b = self._bounds(x)
        return torch.minimum(torch.maximum(x.to(torch.float64), a), b)

    def _prepare(self, x: torch.Tensor) -> torch.Tensor:
        """Validate ``x`` (``[..., d]``) and return it as float64 clipped into [alpha, beta]."""
        self._validate(x, any_rank=True)
        return self._clip64(x)

    def _check_width(self, d: int) -> None:
        """Hook: validate parameters that depend on the feature dimension ``d``."""
        _check_d(d)

    @staticmethod
    def _out_dtype(x: torch.Tensor) -> torch.dtype:
        return x.dtype if x.is_floating_point() else torch.get_default_dtype()

    def _chunks(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, Iterator[tuple[torch.Tensor, torch.Tensor, int]]]:
        """Validate ``x``; ``(out, chunks)``: the output, shaped like ``x`` (``int8`` codes when
        :attr:`sends_codes`, else ``x``'s dtype, or the default one for integer ``x``), and
        per chunk ``(rows of out, clipped float64 rows of x, d)`` for the caller to fill."""
        self._validate(x)
        rows = x.unsqueeze(0) if x.ndim == 1 else x
        n, d = rows.shape
        self._check_width(d)
        self._last_d = d
        dtype = torch.int8 if self.sends_codes else self._out_dtype(x)
        out = torch.empty((n, d), dtype=dtype, device=x.device)
        chunks = ((out[sl], self._clip64(rows[sl]), d) for sl in _row_chunks(n, d))
        return out.squeeze(0) if x.ndim == 1 else out, chunks

    def sample(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """What the nodes send for every row of ``x`` (shaped like ``x``; the unbiased
        estimate, or codes when :attr:`sends_codes`), recording nothing."""
        out, chunks = self._chunks(x)
        for rows, xc, d in chunks:
            rows.copy_(self._sample_rows(xc, d, generator))
        return out

    def _sample_rows(
        self, x: torch.Tensor, d: int, generator: torch.Generator | None
    ) -> torch.Tensor:
        """What the nodes send for a float64 chunk of rows (already clipped)."""
        raise NotImplementedError

    def estimate(self, sent: torch.Tensor) -> torch.Tensor:
        """The server's unbiased estimate from what :meth:`sample` sent (itself, unless the
        nodes send codes: then float64)."""
        return self.rectify(sent, torch.float64) if self.sends_codes else sent

    def at_width(self, d: int) -> FeatureRandomizer:
        """This randomizer with its spend fixed for ``d`` features (what a plan records)."""
        out = copy.copy(self)
        out.d = int(d)
        return out

    @abstractmethod
    def variance(self, x: torch.Tensor) -> torch.Tensor:
        """Closed-form variance of each entry of the estimate (shape of ``x``)."""

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """Exact ``E|y - x|`` per entry of the estimate (here: finitely many ``output_values``)."""
        values = getattr(self, "output_values", None)
        if values is None:
            raise NotImplementedError(f"{type(self).__name__} has no closed-form expected error")
        return (self.output_probabilities(xd) * (values(xd) - xd.unsqueeze(-1)).abs()).sum(-1)

    def total_epsilon(self, d: int | None = None) -> float:
        """LDP budget one collection spends per row (node)."""
        return self.epsilon

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> LedgerEntry:
        """Record ``count`` collections (pure, per node; ``count`` counts collections, not
        nodes) for ``d`` features (:meth:`at_width`, else the last input's)."""
        return accountant.add_pure(self.name, self.total_epsilon(), count=count,
                                   note=self._note())

    def _note(self, d: int | None = None) -> str:
        return f"{type(self).__name__} feature LDP"

    def _resolve_d(self, d: int | None) -> int:
        d = self._width() if d is None else int(d)
        if d is None:
            raise ValueError(
                f"{self.name}: the spend depends on the feature dimension d; fix it with "
                "at_width(d=...) or draw a sample first"
            )
        return _check_d(d)

    def _width(self) -> int | None:
        return self.d if self.d is not None else self._last_d

    def __repr__(self) -> str:
        return fields_repr(self, *self._REPR)


class _CoordinateRandomizer(FeatureRandomizer):
    """A scalar mechanism of thesis §2.9 on every coordinate, at ``epsilon / d`` each
    (sequential composition, §3.4), or ``epsilon`` each with ``per_coordinate=True`` (thesis
    ch. 2; the per-row spend is then ``d * epsilon``)."""

    _REPR = ("epsilon", "alpha", "beta", "per_coordinate")

    def __init__(
        self,
        epsilon: float,
        alpha: Bounds = 0.0,
        beta: Bounds = 1.0,
        *,
        per_coordinate: bool = False,
    ) -> None:
        super().__init__(epsilon, alpha, beta)
        self.per_coordinate = bool(per_coordinate)

    def coordinate_epsilon(self, d: int) -> float:
        """Budget of one coordinate: ``epsilon / d`` (default) or ``epsilon`` (per-coordinate)."""
        d = _check_d(d)
        return self.epsilon if self.per_coordinate else self.epsilon / d

    def total_epsilon(self, d: int | None = None) -> float:
        """Per-row spend: ``epsilon``, or ``d * epsilon`` with ``per_coordinate=True``."""
        if not self.per_coordinate:
            return self.epsilon
        return self.epsilon * self._resolve_d(d)

    def _note(self, d: int | None = None) -> str:
        d = self._width() if d is None else int(d)  # known once a row was perturbed
        name = f"{type(self).__name__} feature LDP"
        if not self.per_coordinate:
            return f"{name}, epsilon {self.epsilon:g} per node"
        if d is None:
            return f"{name}, epsilon {self.epsilon:g} per feature x d features"
        return (
            f"{name}, epsilon {self.epsilon:g} per feature x {d} features = "
            f"{self.epsilon * d:g} per node"
        )

    def _std_input(self, x: torch.Tensor) -> torch.Tensor:
        """``t = 2 (x - alpha) / Delta - 1 in [-1, 1]`` (thesis eq. 2.21)."""
        a, b = self._bounds(x)
        return 2.0 * (x - a) / (b - a) - 1.0

    def _from_std(self, t_star: torch.Tensor) -> torch.Tensor:
        """``y* = Delta / 2 (t* + 1) + alpha`` (thesis eq. 2.33)."""
        a, b = self._bounds(t_star)
        return (b - a) / 2.0 * (t_star + 1.0) + a

    def _std_values(self, xd: torch.Tensor, values: Sequence[float]) -> torch.Tensor:
        """The outputs ``y*`` of the standardized ``values``, stacked on a last axis per entry."""
        return torch.stack([self._from_std(torch.full_like(xd, v)) for v in values], dim=-1)


class OneBit(_CoordinateRandomizer):
    """The 1-bit mechanism (thesis eq. 2.3): each coordinate sends one bit
    ``y ~ Bernoulli(1/(e^eps_c + 1) + (x - alpha)/Delta * (e^eps_c - 1)/(e^eps_c + 1))``;
    the server's estimate (eq. 2.5) is unbiased (Lemma 2) with variance eq. 2.11. With the
    default split it is Alg. 2 with ``m = d`` (the 1B baseline of Table 3.2)."""

    name: ClassVar[str] = "onebit"
    sends_codes: ClassVar[bool] = True

    def _p_one(self, x: torch.Tensor, d: int) -> torch.Tensor:
        """``Pr[y = 1 | x]`` of eq. 2.3, written with ``tanh(eps/2) = (e^eps-1)/(e^eps+1)``."""
        a, b = self._bounds(x)
        th = math.tanh(self.coordinate_epsilon(d) / 2.0)
        return (1.0 - th) / 2.0 + (x - a) / (b - a) * th

    def _sample_rows(self, x, d, generator):
        return R.bernoulli(self._p_one(x, d), generator=generator)

    def rectify(self, bits: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Server side, eq. 2.5: ``y* = ((e^eps_c + 1) y - 1) / (e^eps_c - 1) * Delta + alpha``,
        computed as ``alpha + Delta/2 * (1 + coth(eps_c/2) (2y - 1))``."""
        _check_codes(self.name, bits, (0, 1))
        yd = bits.to(torch.float64)
        a, b = self._bounds(yd)
        c = _coth_half(self.coordinate_epsilon(bits.shape[-1]))
        out = a + (b - a) / 2.0 * (1.0 + c * (2.0 * yd - 1.0))
        return out.to(dtype or torch.get_default_dtype())

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = Delta^2 e^eps_c / (e^eps_c - 1)^2 + (x - alpha)(beta - x)`` (eq. 2.11),
        with ``e^eps/(e^eps - 1)^2 = 1 / (2 sinh(eps/2))^2`` for numerical stability."""
        a, b = self._bounds(xd)
        s = 2.0 * math.sinh(self.coordinate_epsilon(xd.shape[-1]) / 2.0)
        return (b - a) ** 2 / s**2 + (xd - a) * (b - xd)

    def output_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``[Pr[y=0 | x], Pr[y=1 | x]]`` per entry (eq. 2.3), shape ``x.shape + (2,)``."""
        xd = self._prepare(x)
        p1 = self._p_one(xd, xd.shape[-1])
        return torch.stack([1.0 - p1, p1], dim=-1)

    def log_prob(self, x: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
        """Exact log-probability of the bit vector ``bits`` for each row of ``x`` (sum over d)."""
        return _log_prob_of(self.output_probabilities(x), bits.to(torch.long))


class Laplace(_CoordinateRandomizer):
    """Laplace mechanism (thesis §2.9.1, eq. 2.16): ``y* = x + Lap(Delta / eps_c)``, unbiased,
    variance ``2 (Delta / eps_c)^2`` (eq. 2.17). With ``eps_c = epsilon / d`` the scale
    ``d Delta / epsilon`` is the row's L1 sensitivity over epsilon: the row is epsilon-LDP."""

    name: ClassVar[str] = "laplace"

    def _lambda(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self._bounds(x)
        return (b - a) / self.coordinate_epsilon(x.shape[-1])

    def _sample_rows(self, x, d, generator):
        return x + R.laplace(tuple(x.shape), self._lambda(x), generator=generator,
                             dtype=torch.float64, device=x.device)

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = 2 (Delta / eps_c)^2`` (eq. 2.17), independent of x."""
        return 2.0 * self._lambda(xd) ** 2 * torch.ones_like(xd)

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """``E|y* - x| = lambda = Delta / eps_c``."""
        return self._lambda(xd) * torch.ones_like(xd)

    def density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Output density per entry: ``Lap(y - x | lambda) = exp(-|y-x|/lambda) / (2 lambda)``."""
        xd = self._prepare(x)
        lam = self._lambda(xd)
        return torch.exp(-(y.to(torch.float64) - xd).abs() / lam) / (2.0 * lam)

    def log_density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Joint log-density of output rows ``y`` given input rows ``x`` (sum over d)."""
        xd = self._prepare(x)
        lam = self._lambda(xd)
        ld = -(y.to(torch.float64) - xd).abs() / lam - torch.log(2.0 * lam)
        return ld.sum(dim=-1)


class Duchi(_CoordinateRandomizer):
    """Duchi et al.'s mechanism (thesis eq. 2.18) on ``t = 2(x - alpha)/Delta - 1`` (eq. 2.21):
    ``t* = +-C`` with ``C = coth(eps_c / 2)`` and ``Pr[t* = +C | t] = 1/2 + tanh(eps_c / 2)
    t / 2``; the estimate ``y* = Delta/2 (t* + 1) + alpha`` (eq. 2.33) is unbiased, variance
    ``Delta^2/4 (C^2 - t^2)`` (eq. 2.19 rescaled)."""

    name: ClassVar[str] = "duchi"

    def _p_high(self, x: torch.Tensor, d: int) -> torch.Tensor:
        th = math.tanh(self.coordinate_epsilon(d) / 2.0)  # (e^eps-1)/(e^eps+1)
        return 0.5 + th / 2.0 * self._std_input(x)

    def _sample_rows(self, x, d, generator):
        high = R.bernoulli(self._p_high(x, d), generator=generator)
        c = _coth_half(self.coordinate_epsilon(d))
        return self._from_std((2.0 * high.to(torch.float64) - 1.0) * c)

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = Delta^2 / 4 * (C^2 - t^2)`` (eq. 2.19 under the map of eq. 2.33)."""
        a, b = self._bounds(xd)
        c = _coth_half(self.coordinate_epsilon(xd.shape[-1]))
        return (b - a) ** 2 / 4.0 * (c**2 - self._std_input(xd) ** 2)

    def output_values(self, x: torch.Tensor) -> torch.Tensor:
        """The two possible outputs ``[y*(t* = -C), y*(t* = +C)]`` per entry of ``x``."""
        xd = self._prepare(x)
        c = _coth_half(self.coordinate_epsilon(xd.shape[-1]))
        return self._std_values(xd, (-c, c))

    def output_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``[Pr[t* = -C | x], Pr[t* = +C | x]]`` per entry (eq. 2.18)."""
        xd = self._prepare(x)
        ph = self._p_high(xd, xd.shape[-1])
        return torch.stack([1.0 - ph, ph], dim=-1)

    def log_prob(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Exact log-probability of an output row ``y`` (values from :meth:`output_values`)."""
        xd = self._prepare(x)
        a, b = self._bounds(xd)
        high = (y.to(torch.float64) > (a + b) / 2.0).to(torch.long)
        return _log_prob_of(self.output_probabilities(xd), high)


class Piecewise(_CoordinateRandomizer):
    """Piecewise mechanism of Wang et al. (thesis eq. 2.28-2.34): on ``t in [-1, 1]`` it
    outputs ``t* in [-C, C]``, density ``p`` on ``[l(t), r(t)]`` and ``p / e^eps`` elsewhere;
    unbiased. It is ``s = e^{eps/2}`` of a family (Zhao et al. 2020; PM-SUB is ``e^{eps/3}``):
    with ``E = e^eps``, ``C = (E + s)(s + 1) / (s (E - 1))``, the interval is centred at
    ``(E + s)/(E - 1) t``, half-width ``(E + s)/(s (E - 1))``, ``p = s E (E - 1) / (2 (E +
    s)^2)``, mass ``E / (E + s)``: every member is eps-LDP (density ratio exactly ``e^eps``)."""

    name: ClassVar[str] = "piecewise"
    divisor: ClassVar[float] = 2.0

    @classmethod
    def shape(cls, eps: float) -> float:
        """The family parameter ``s = e^{eps / divisor}`` (``e^{eps/2}`` for PM)."""
        return math.exp(eps / cls.divisor)

    def _geometry(self, d: int) -> tuple[float, float, float, float, float, float]:
        """``eps_c``, ``C``, centre slope, half-width, centre density ``p`` and centre mass."""
        eps = self.coordinate_epsilon(d)
        s = self.shape(eps)
        em1 = math.expm1(eps)  # E - 1
        e = em1 + 1.0
        c = (e + s) * (s + 1.0) / (s * em1)
        p = s * e * em1 / (2.0 * (e + s) ** 2)
        return eps, c, (e + s) / em1, (e + s) / (s * em1), p, e / (e + s)

    def _sample_rows(self, x, d, generator):
        _, c, slope, half, _, centre_mass = self._geometry(d)
        left = slope * self._std_input(x) - half  # l(t)
        right = left + 2.0 * half  # r(t)
        shape = tuple(x.shape)
        u1 = R.uniform(shape, generator=generator, dtype=torch.float64, device=x.device)
        u2 = R.uniform(shape, generator=generator, dtype=torch.float64, device=x.device)
        centre = left + 2.0 * half * u2
        # outer part [-C, l) U (r, C], total length 2C - 2 half, uniform
        v = (2.0 * c - 2.0 * half) * u2
        left_len = left + c
        outer = torch.where(v < left_len, -c + v, right + (v - left_len))
        return self._from_std(torch.where(u1 < centre_mass, centre, outer))

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = Delta^2/4 (E[t*^2] - t^2)`` with ``E[t*^2] = p/e^eps * 2C^3/3 +
        p (1 - e^-eps) * 2h (3 (slope t)^2 + h^2) / 3`` (h: the half-width); eq. 2.34 for PM."""
        a, b = self._bounds(xd)
        eps, c, slope, half, p, _ = self._geometry(xd.shape[-1])
        t = self._std_input(xd)
        second = p * math.exp(-eps) * 2.0 * c**3 / 3.0 + p * (-math.expm1(-eps)) * 2.0 * half * (
            3.0 * (slope * t) ** 2 + half**2
        ) / 3.0
        return (b - a) ** 2 / 4.0 * (second - t**2)

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """Exact ``E|y* - x| = Delta/2 E|t* - t|``: density ``p/e^eps`` on ``[-C, C]`` plus
        ``p (1 - e^-eps)`` on ``[l(t), r(t)]``, each integrated in closed form."""
        a, b = self._bounds(xd)
        eps, c, slope, half, p, _ = self._geometry(xd.shape[-1])
        t = self._std_input(xd)
        low = p * math.exp(-eps) * _uniform_abs_integral(-c, c, t)
        centre = _uniform_abs_integral(slope * t - half, slope * t + half, t)
        high = p * (-math.expm1(-eps)) * centre
        return (b - a) / 2.0 * (low + high)

    def support(self, x: torch.Tensor) -> torch.Tensor:
        """``[low, high]`` of the output ``y*`` per entry (``t* = -C`` and ``t* = +C``)."""
        xd = self._prepare(x)
        c = self._geometry(xd.shape[-1])[1]
        return self._std_values(xd, (-c, c))

    def density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Output density of ``y*`` per entry: eq. 2.29 times the Jacobian ``2 / Delta``."""
        xd = self._prepare(x)
        a, b = self._bounds(xd)
        eps, c, slope, half, p, _ = self._geometry(xd.shape[-1])
        t_star = 2.0 * (y.to(torch.float64) - a) / (b - a) - 1.0
        t_star, left = torch.broadcast_tensors(t_star, slope * self._std_input(xd) - half)
        dens = torch.where(
            (t_star >= left) & (t_star <= left + 2.0 * half),
            torch.full_like(t_star, p),
            torch.full_like(t_star, p * math.exp(-eps)),
        )
        dens = torch.where((t_star >= -c) & (t_star <= c), dens, torch.zeros_like(dens))
        return dens * 2.0 / (b - a)

    def log_density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Joint log-density of output rows ``y`` given input rows ``x`` (sum over d)."""
        return torch.log(self.density(x, y)).sum(dim=-1)


def analytic_gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Smallest delta for which ``N(0, sigma^2)`` noise is (epsilon, delta)-DP (Balle & Wang
    2018, Theorem 8): ``Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``, ``D`` the L2
    sensitivity; the second term in log-space."""
    r = sensitivity / sigma
    first = float(ndtr(r / 2.0 - epsilon / r))
    second = math.exp(epsilon + float(log_ndtr(-r / 2.0 - epsilon / r)))
    return first - second


def calibrate_analytic_gaussian(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ``sigma`` with ``analytic_gaussian_delta(epsilon, sigma, sensitivity) <= delta``
    (a root of the decreasing privacy profile, on the private side)."""
    eps = check_epsilon(epsilon, finite="for the analytic Gaussian mechanism")
    dlt = check_delta(delta)

    def f(log_s: float) -> float:
        return analytic_gaussian_delta(eps, math.exp(log_s)) - dlt

    lo, hi = math.log(1e-6), 0.0
    while f(lo) < 0:  # extremely large budget: tiny noise suffices
        lo -= 5.0
        if lo < -700:
            raise ValueError("analytic Gaussian calibration failed (budget too large)")
    while f(hi) > 0:
        hi += 1.0
        if hi > 700:
            raise ValueError("analytic Gaussian calibration failed (budget too small)")
    s = math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500))
    while analytic_gaussian_delta(eps, s) > dlt:  # make sure we land on the private side
        s *= 1.0 + 1e-12
    return s * float(sensitivity)


class AnalyticGaussian(FeatureRandomizer):
    """Analytic Gaussian mechanism (Balle & Wang 2018), the AG baseline of thesis Table 3.2:
    ``y* = x + N(0, sigma^2 I)``, sigma calibrated exactly to (epsilon, delta)-LDP for a row's
    L2 sensitivity ``||beta - alpha||_2``; unbiased. Recorded as a Gaussian entry, which the
    accountant composes by RDP (valid, looser than the exact (epsilon, delta) of one release)."""

    name: ClassVar[str] = "analytic_gaussian"
    _REPR = ("epsilon", "delta", "alpha", "beta")

    def __init__(
        self, epsilon: float, delta: float, alpha: Bounds = 0.0, beta: Bounds = 1.0
    ) -> None:
        super().__init__(epsilon, alpha, beta)
        self.delta = check_delta(delta)
        self._multiplier: float | None = None

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity``, calibrated once (lazily) for (epsilon, delta)."""
        if self._multiplier is None:
            self._multiplier = calibrate_analytic_gaussian(self.epsilon, self.delta, 1.0)
        return self._multiplier

    def sensitivity(self, d: int) -> float:
        """L2 sensitivity of a row: ``||beta - alpha||_2`` (= ``(beta - alpha) sqrt(d)``)."""
        d = _check_d(d)
        width = torch.as_tensor(self.beta, dtype=torch.float64) - torch.as_tensor(
            self.alpha, dtype=torch.float64
        )
        if width.ndim == 0:
            return float(width) * math.sqrt(d)
        if width.numel() != d:
            raise ValueError(f"per-feature bounds have {width.numel()} entries, d = {d}")
        return float(width.norm())

    def sigma(self, d: int) -> float:
        """Noise standard deviation for rows of dimension ``d``."""
        return self.noise_multiplier * self.sensitivity(d)

    def _sample_rows(self, x, d, generator):
        return x + R.normal(tuple(x.shape), self.sigma(d), generator=generator,
                            dtype=torch.float64, device=x.device)

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[y*] = sigma(d)^2`` for every entry."""
        return torch.full_like(xd, self.sigma(xd.shape[-1]) ** 2)

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """``E|y* - x| = sigma(d) sqrt(2 / pi)``."""
        return torch.full_like(xd, self.sigma(xd.shape[-1]) * math.sqrt(2.0 / math.pi))

    def density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Output density per entry: ``N(y | x, sigma^2)``."""
        xd = self._prepare(x)
        s = self.sigma(xd.shape[-1])
        z = (y.to(torch.float64) - xd) / s
        return torch.exp(-0.5 * z**2) / (s * math.sqrt(2.0 * math.pi))

    def log_density(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Joint log-density of output rows ``y`` given input rows ``x`` (sum over d)."""
        xd = self._prepare(x)
        s = self.sigma(xd.shape[-1])
        z = (y.to(torch.float64) - xd) / s
        return (-0.5 * z**2 - math.log(s * math.sqrt(2.0 * math.pi))).sum(dim=-1)

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> LedgerEntry:
        """Record ``count`` Gaussian releases: ``add_gaussian(name, sigma/sensitivity, ...)``."""
        return accountant.add_gaussian(
            self.name,
            self.noise_multiplier,
            count=count,
            sensitivity=self.sensitivity(self._resolve_d(None)),
            note=(
                f"analytic Gaussian calibrated to (epsilon={self.epsilon:g}, "
                f"delta={self.delta:g})-LDP per release (Balle & Wang 2018); RDP-composed here"
            ),
        )


def optimal_m(epsilon: float, d: int) -> int:
    """Optimal sampling parameter of the multi-bit encoder (thesis Prop. 3, eq. 3.19):
    ``m* = max(1, min(d, floor(epsilon / 2.18)))`` minimises the worst-case rectifier variance
    (eq. 3.21), whose minimiser in ``z = epsilon/m`` solves ``z = sinh(z)/2`` (eq. 3.23)."""
    eps = _check_feature_epsilon(epsilon)
    d = _check_d(d)
    # the tiny slack keeps exact multiples of 2.18 (e.g. 4.36) from flooring one short
    return max(1, min(d, math.floor(eps / M_STAR_Z + 1e-9)))


class MultiBit(FeatureRandomizer):
    """Multi-bit encoder (thesis Alg. 2) and rectifier (eq. 3.10) of LPGNN, epsilon-LDP per
    row (Theorem 1): each node sends a 1-bit code at ``eps / m`` for ``m`` of its ``d``
    dimensions, 0 elsewhere (``m=None``: :func:`optimal_m`); the rectified estimate is unbiased
    (Prop. 1), variance eq. 3.18."""

    name: ClassVar[str] = "multibit"
    sends_codes: ClassVar[bool] = True
    _REPR = ("epsilon", "alpha", "beta", "m")

    def __init__(
        self, epsilon: float, alpha: Bounds = 0.0, beta: Bounds = 1.0, m: int | None = None
    ) -> None:
        super().__init__(epsilon, alpha, beta)
        if m is not None:  # m <= d is checked once d is known
            if isinstance(m, bool) or not isinstance(m, int):
                raise ValueError(f"m must be an integer in [1, d] or None, got {m!r}")
            if m < 1:
                raise ValueError(f"m must be in [1, d], got m={m}")
        self.m = m

    def resolve_m(self, d: int) -> int:
        """The sampling parameter used for ``d`` features (``m``, or ``m*`` when ``m=None``)."""
        d = _check_d(d)
        if self.m is None:
            return optimal_m(self.epsilon, d)
        if self.m > d:
            raise ValueError(f"m must be in [1, d], got m={self.m} for d={d} features")
        return self.m

    def _check_width(self, d: int) -> None:
        self.resolve_m(d)

    def _p_one(self, x: torch.Tensor, m: int, a=None, b=None) -> torch.Tensor:
        """Bernoulli parameter of Alg. 2 line 4 (``tanh(eps/2m) = (e^{eps/m}-1)/(e^{eps/m}+1)``)."""
        if a is None:
            a, b = self._bounds(x)
        th = math.tanh(self.epsilon / m / 2.0)
        return (1.0 - th) / 2.0 + (x - a) / (b - a) * th

    def sample(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """What a node sends (Alg. 2): codes in ``{-1, 0, 1}`` (``int8``), exactly ``m``
        non-zeros per row; drawn here, one frame from :func:`~.mechanism.run` (GW-LDP's
        matrix encoder calls it per graph)."""
        out, chunks = self._chunks(x)
        for codes, xc, d in chunks:
            n, m = xc.size(0), self.resolve_m(d)
            keys = R.uniform((n, d), generator=generator, dtype=torch.float64, device=xc.device)
            idx = keys.topk(m, dim=1, largest=False, sorted=False).indices  # S: m dims per row
            a, b = self._bounds(xc)
            if a.ndim == 1:
                a, b = a.expand(n, d).gather(1, idx), b.expand(n, d).gather(1, idx)
            t = R.bernoulli(self._p_one(xc.gather(1, idx), m, a, b), generator=generator)
            codes.zero_().scatter_(1, idx, 2 * t.to(torch.int8) - 1)
        return out

    def rectify(self, codes: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Rectifier, eq. 3.10: ``x' = d (beta-alpha)/(2m) * coth(eps/2m) * x* + (alpha +
        beta)/2`` (see :meth:`rectifier`)."""
        _check_codes(self.name, codes, (-1, 0, 1))
        return self._rectify64(codes).to(dtype or torch.get_default_dtype())

    def rectifier(
        self, d: int, device: torch.device | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scale, offset)``, ``[d]`` float64 vectors with ``rectify(codes) = codes * scale
        + offset`` (eq. 3.10): the rectified features are an affine map of the sparse codes."""
        a, b = self._bounds(torch.empty(d, dtype=torch.float64, device=device))
        m = self.resolve_m(d)
        scale = d * (b - a) / (2.0 * m) * _coth_half(self.epsilon / m)
        return scale.expand(d).clone(), ((a + b) / 2.0).expand(d).clone()

    def _rectify64(self, codes: torch.Tensor) -> torch.Tensor:
        scale, offset = self.rectifier(codes.shape[-1], codes.device)
        return codes.to(torch.float64) * scale + offset

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """``Var[x'] = d/m * ((beta-alpha)/2 * coth(eps/2m))^2 - (x - (alpha+beta)/2)^2``
        (eq. 3.18)."""
        d = xd.shape[-1]
        m = self.resolve_m(d)
        a, b = self._bounds(xd)
        c = _coth_half(self.epsilon / m)
        return d / m * ((b - a) / 2.0 * c) ** 2 - (xd - (a + b) / 2.0) ** 2

    def output_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact marginal ``[Pr[x*_i=-1], Pr[x*_i=0], Pr[x*_i=1]]`` per entry (Theorem 1 proof)."""
        xd = self._prepare(x)
        d = xd.shape[-1]
        m = self.resolve_m(d)
        p1, q = self._p_one(xd, m), m / d
        return torch.stack([q * (1.0 - p1), torch.full_like(p1, 1.0 - q), q * p1], dim=-1)

    def output_values(self, xd: torch.Tensor) -> torch.Tensor:
        """The three rectified values (codes -1, 0, 1) per entry of ``x``."""
        codes = torch.tensor([-1, 0, 1], dtype=torch.float64, device=xd.device)
        values = self._rectify64(codes.expand(*xd.shape, 3).transpose(-1, -2))  # [..., 3, d]
        return values.transpose(-1, -2)

    def log_prob(self, x: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Exact joint log-probability of a code row given ``x`` (one value per row):
        ``1/C(d, m) * prod_{i in S} Pr[t_i = (x*_i + 1)/2]`` when ``x*`` has exactly ``m``
        non-zeros (support ``S``), else 0."""
        xd = self._prepare(x)
        d = xd.shape[-1]
        m = self.resolve_m(d)
        p1 = self._p_one(xd, m)
        c = codes.to(torch.float64)
        per = torch.where(c > 0, torch.log(p1), torch.where(c < 0, torch.log1p(-p1), 0.0))
        nnz = (c != 0).sum(dim=-1)
        log_choose = math.lgamma(d + 1) - math.lgamma(m + 1) - math.lgamma(d - m + 1)
        lp = per.sum(dim=-1) - log_choose
        return torch.where(nnz == m, lp, torch.full_like(lp, -math.inf))
