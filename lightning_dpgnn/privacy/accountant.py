"""Privacy accounting: a ledger of mechanism invocations composed with Rényi DP.

Every read of private data is a :class:`LedgerEntry`; the accountant sums the RDP curves:
``"gaussian"`` (``alpha s^2 / (2 sigma^2)`` per call; node level: sensitivity ``sqrt(D)``,
thesis Theorem 3), ``"subsampled_gaussian"`` (DP-SGD; opacus' ``compute_rdp``),
``"graph_subsampled_gaussian"`` (DP-SGD on a GNN, Daigavane et al. 2021: a node changes up to
``group_size`` terms by two clipping norms, ``rho ~ Binomial(group_size, q)`` of them sampled;
a step is ``(1/(alpha-1)) log E_rho[exp(alpha (alpha-1) (2 rho)^2 / (2 z^2))]``-RDP) and
``"pure"`` (LDP; an all-pure ledger composes to ``sum(count * epsilon)``, delta 0, and a mixed
one reports the smaller of RDP and basic composition).

An all-Gaussian ledger is one Gaussian mechanism with ``z = (sum_i count_i / z_i^2)^(-1/2)``
(Dong, Roth and Su 2019), converted exactly (Balle and Wang 2018); otherwise RDP converts with
Balle et al. (2020) (``"improved"``) or Mironov's Proposition 3 (``"basic"``).
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Literal

import numpy as np
from autodp import dp_bank, rdp_bank
from opacus.accountants.analysis.rdp import compute_rdp
from scipy.optimize import minimize_scalar

from ..levels import LEVELS
from . import random as _random

__all__ = [
    "LEVELS", "LedgerEntry", "PrivacyAccountant", "resolve_delta", "units_at_risk", "check_epsilon",
    "check_delta", "is_count",
]

Kind = Literal["gaussian", "subsampled_gaussian", "graph_subsampled_gaussian", "pure"]
KINDS: tuple[str, ...] = ("gaussian", "subsampled_gaussian", "graph_subsampled_gaussian", "pure")
_SAMPLED = ("subsampled_gaussian", "graph_subsampled_gaussian")
Conversion = Literal["improved", "basic"]

# Orders scanned before the continuous refinement (dense near 1, geometric above).
_ORDER_GRID = np.unique(
    np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 25), np.geomspace(2.0, 1e4, 120)])
)


def check_epsilon(epsilon: float, name: str = "epsilon", *, finite: str | None = None) -> float:
    """Validate a privacy budget: a number > 0 (``math.inf`` means non-private, refused with
    the reason ``finite`` when given)."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number > 0, got {epsilon!r}") from err
    if math.isnan(eps) or eps <= 0:
        raise ValueError(f"{name} must be > 0, got {epsilon!r}")
    if finite is not None and math.isinf(eps):
        raise ValueError(f"{name} must be finite {finite}")
    return eps


def check_delta(delta: float, name: str = "delta") -> float:
    """Validate a delta: strictly between 0 and 1."""
    try:
        d = float(delta)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}") from err
    if not 0.0 < d < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {delta!r}")
    return d


def is_count(value: object) -> bool:
    """Whether ``value`` is an integer >= 1 (a ``bool`` is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


#: ``delta="auto"`` keeps ``n * delta`` (the expected number of protected units in the event
#: the epsilon does not cover) at or below this
AUTO_UNITS_AT_RISK = 0.01
#: the names ``delta`` accepts besides a number
DELTA_RULES = ("auto", "paper")


def resolve_delta(delta: float | str | None, num_units: int) -> float:
    """``delta`` for ``n`` private units (edges or nodes): ``"auto"`` (default) is the largest
    power of ten with ``n * delta <= 0.01`` (``n * delta`` units expected in the event the
    guarantee fails outright, Dwork & Roth 2014 §2.3); ``"paper"`` the largest strictly below
    ``1/n`` (thesis §4.7.5, §5.5); a number is validated, with a warning at or above ``1/n``."""
    n = int(num_units)
    if delta is None or (isinstance(delta, str) and delta.lower() in DELTA_RULES):
        rule = "auto" if delta is None else delta.lower()
        if n < 1:
            raise ValueError(f"delta={rule!r} needs at least one private unit, got {num_units}")
        if rule == "paper":
            return 10.0 ** (-(math.floor(math.log10(n)) + 1))
        return 10.0 ** math.floor(math.log10(AUTO_UNITS_AT_RISK / n) + 1e-12)
    if isinstance(delta, str):
        raise ValueError(f"delta must be a number in (0, 1), 'auto' or 'paper', got {delta!r}")
    delta = check_delta(delta)
    if n >= 1 and delta * n >= 1:
        warnings.warn(
            f"delta={delta:g} is not below 1/n for n={n} private units (n*delta = "
            f"{delta * n:.3g}): the guarantee may fail outright for about {delta * n:.3g} of "
            "them. delta='auto' keeps n*delta <= 0.01",
            UserWarning,
            stacklevel=2,
        )
    return delta


def units_at_risk(delta: float | None, num_units: int | None) -> float | None:
    """``n * delta``: the expected number of units the guarantee may fail for."""
    if not delta or not num_units:
        return None
    return float(delta) * int(num_units)


@dataclass
class LedgerEntry:
    """``count`` invocations of one mechanism (``name``, e.g. ``"pma"``, ``"encoder/dpsgd"``) of
    a :data:`KINDS` ``kind``: a Gaussian kind's ``noise_multiplier`` (noise std / L2
    ``sensitivity``), a subsampled one's Poisson ``sample_rate`` and (graph DP-SGD) the
    ``group_size`` of per-sample terms one unit changes, or a pure one's ``epsilon``; ``level``
    is the adjacency it is accounted at, ``note`` free text (e.g. the theorem used)."""

    name: str
    kind: Kind
    noise_multiplier: float | None = None
    epsilon: float | None = None
    sensitivity: float = 1.0
    count: int = 1
    sample_rate: float | None = None
    level: str = "edge"
    note: str = ""
    group_size: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown mechanism kind {self.kind!r}")
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        if self.kind == "pure":
            self.epsilon = check_epsilon(self.epsilon, f"{self.name}: epsilon")  # type: ignore[arg-type]
        else:
            nm = self.noise_multiplier
            if nm is None or not (float(nm) > 0):
                raise ValueError(f"{self.name}: noise_multiplier must be > 0, got {nm!r}")
            self.noise_multiplier = float(nm)
        if self.kind == "graph_subsampled_gaussian":
            if not is_count(self.group_size):
                raise ValueError(
                    f"{self.name}: group_size must be an integer >= 1, got {self.group_size!r}"
                )
        if self.kind in _SAMPLED:
            q = self.sample_rate
            if q is None or not 0.0 < float(q) <= 1.0:
                raise ValueError(f"{self.name}: sample_rate must be in (0, 1], got {q!r}")
            self.sample_rate = float(q)

    def key(self) -> tuple:
        """Entries with equal keys (every field but ``count`` and ``note``) merge by adding
        their counts."""
        return tuple(v for k, v in vars(self).items() if k not in ("count", "note"))

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """Rényi-DP curve of ``count`` invocations at ``orders`` (> 1): ``count`` times the
        single invocation's, cached per (kind, parameters, order)."""
        orders = np.atleast_1d(np.asarray(orders, dtype=float))
        if self.count == 0:
            return np.zeros_like(orders)
        unit = [_unit_rdp(self.kind, self.noise_multiplier, self.sample_rate, self.epsilon,
                          float(a), self.group_size) for a in orders]
        return self.count * np.array(unit)

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["group_size"] is None:
            del d["group_size"]  # only graph DP-SGD entries have one
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LedgerEntry:
        return cls(**d)


@functools.lru_cache(maxsize=200_000)
def _unit_rdp(
    kind: str, noise_multiplier: float | None, sample_rate: float | None,
    epsilon: float | None, alpha: float, group_size: int | None = None,
) -> float:
    """RDP at order ``alpha`` of one invocation (nan -> inf, i.e. "no bound at this order")."""
    if kind == "gaussian":
        # autodp: alpha / (2 sigma^2), sigma = noise std / sensitivity
        value = rdp_bank.RDP_gaussian({"sigma": noise_multiplier}, alpha)
    elif kind == "subsampled_gaussian":
        value = _subsampled_gaussian_rdp(noise_multiplier, sample_rate, alpha)
    elif kind == "graph_subsampled_gaussian":
        value = graph_sgm_rdp(noise_multiplier, sample_rate, group_size, alpha)
    else:
        value = rdp_bank.RDP_pureDP({"eps": epsilon}, alpha)
    value = float(value)
    if not math.isfinite(value) or value < -1e-12:
        return math.inf  # no (trustworthy) bound at this order: RDP is never negative
    return max(value, 0.0)


#: largest fractional order at which opacus' series for the subsampled Gaussian is used
SGM_FRACTIONAL_ORDERS_UP_TO = 64.0


def _sgm_opacus(noise_multiplier: float, sample_rate: float, alpha: float) -> float:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = compute_rdp(
            q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=[alpha]
        )[0]
    return float(value) if math.isfinite(value) else math.inf


def _subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, alpha: float) -> float:
    """RDP of one Poisson-subsampled Gaussian step at order ``alpha``: opacus' fractional series
    loses all precision at large orders (a negative "RDP" from order ~130 at q = 0.2, z = 7), so
    above :data:`SGM_FRACTIONAL_ORDERS_UP_TO`, or outside the values at the neighbouring
    integers, the value at ``ceil(alpha)`` is used (valid: RDP does not decrease in the order)."""
    upper = _sgm_opacus(noise_multiplier, sample_rate, float(math.ceil(alpha)))
    if float(alpha).is_integer() or alpha > SGM_FRACTIONAL_ORDERS_UP_TO:
        return upper
    lower = 0.0 if alpha < 2 else _sgm_opacus(noise_multiplier, sample_rate, math.floor(alpha))
    value = _sgm_opacus(noise_multiplier, sample_rate, alpha)
    return value if lower <= value <= upper else upper


def graph_sgm_rdp(
    noise_multiplier: float, sample_rate: float, group_size: int, alpha: float
) -> float:
    """RDP at order ``alpha`` of one ``graph_subsampled_gaussian`` step (module doc):
    ``(1/(alpha-1)) log sum_rho Binomial(rho; group_size, q) exp(2 alpha (alpha-1) rho^2 / z^2)``
    (noise std ``z`` clipping norms; ``rho`` changed terms of at most 2 clipping norms each)."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    rho = np.arange(int(group_size) + 1, dtype=float)
    log_pmf = binom.logpmf(rho, int(group_size), float(sample_rate))
    exponent = 2.0 * alpha * (alpha - 1.0) * rho**2 / float(noise_multiplier) ** 2
    return float(logsumexp(log_pmf + exponent)) / (alpha - 1.0)


def _conversion_term(alpha: float, log_delta: float, conversion: Conversion) -> float:
    """What the RDP -> (eps, delta) conversion adds to the RDP value at order ``alpha``."""
    if conversion == "basic":
        return -log_delta / (alpha - 1.0)
    # Balle et al. (2020), Theorem 21 — as autodp (BBGHS) and opacus use it
    return math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def _grid_values(rdp_fn: Callable[[float], float], terms: np.ndarray) -> np.ndarray:
    """The conversion at every order of :data:`_ORDER_GRID` (``inf`` past the stop). RDP does
    not decrease with the order, so once the RDP so far plus the smallest later conversion term
    reaches the best value, no later order can do better and the (slowest) rest is skipped;
    every order gives a valid epsilon, so stopping early is never unsound."""
    later_min = np.minimum.accumulate(terms[::-1])[::-1]
    values = np.full(len(_ORDER_GRID), math.inf)
    best = math.inf
    for i, alpha in enumerate(_ORDER_GRID):
        r = rdp_fn(float(alpha))
        if not math.isfinite(r):
            continue
        values[i] = r + terms[i]
        best = min(best, values[i])
        if i + 1 < len(values) and r + later_min[i + 1] >= best:
            break
    return values


def _convert(rdp_fn: Callable[[float], float], delta: float, conversion: Conversion) -> float:
    """Minimise the RDP -> (eps, delta) conversion over continuous orders alpha > 1."""
    log_delta = math.log(delta)

    def eps_at(alpha: float) -> float:
        if alpha <= 1.0:
            return math.inf
        r = rdp_fn(alpha)
        if not math.isfinite(r):
            return math.inf
        return r + _conversion_term(alpha, log_delta, conversion)

    terms = np.array([_conversion_term(float(a), log_delta, conversion) for a in _ORDER_GRID])
    values = _grid_values(rdp_fn, terms)
    if not np.isfinite(values).any():
        return math.inf
    i = int(np.nanargmin(values))
    lo = _ORDER_GRID[max(i - 1, 0)]
    hi = _ORDER_GRID[min(i + 1, len(_ORDER_GRID) - 1)]
    best = float(values[i])
    if hi > lo:
        res = minimize_scalar(
            eps_at, bounds=(max(lo, 1.0 + 1e-9), hi), method="bounded",
            options={"xatol": 1e-12, "maxiter": 500},
        )
        if res.success and math.isfinite(res.fun):
            best = min(best, float(res.fun))
    # every order gives a valid bound, so the smallest one found is valid; eps >= 0 always
    return max(best, 0.0)


def _exact_gaussian_epsilon(entries: list[LedgerEntry], delta: float) -> float:
    """Exact epsilon of composed Gaussian mechanisms: one with ``1 / z^2 = sum count / z_i^2``,
    through the analytic Gaussian mechanism (Balle and Wang 2018)."""
    mu2 = sum(e.count / float(e.noise_multiplier) ** 2 for e in entries)  # type: ignore[arg-type]
    if mu2 <= 0:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = float(dp_bank.get_eps_ana_gaussian(1.0 / math.sqrt(mu2), delta))
    return max(eps, 0.0) if math.isfinite(eps) else math.inf


@dataclass
class PrivacyAccountant:
    """Records mechanism invocations at ``level`` and composes them into an (epsilon,
    ``delta``) guarantee (``conversion``: module doc; ``unit``: the protected unit in words).
    ``secure``: every recorded invocation ran in secure mode (``None`` before the first);
    ``reproducible``: some mechanism drew from an explicitly seeded generator."""

    level: str = "edge"
    delta: float | None = None
    conversion: Conversion = "improved"
    ledger: list[LedgerEntry] = field(default_factory=list)
    unit: str = ""
    secure: bool | None = None
    reproducible: bool = False

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        if self.conversion not in ("improved", "basic"):
            raise ValueError(f"conversion must be 'improved' or 'basic', got {self.conversion!r}")
        if self.delta is not None:
            self.delta = check_delta(self.delta)

    # -- recording -------------------------------------------------------------------------
    def record(self, entry: LedgerEntry) -> LedgerEntry:
        """Add an entry, merging it into an existing one with the same parameters."""
        if entry.count > 0:
            self.secure = _random.is_secure_mode() and self.secure is not False
        for existing in self.ledger:
            if existing.key() == entry.key():
                existing.count += entry.count
                return existing
        self.ledger.append(entry)
        return entry

    def _add(self, kind: Kind, name: str, count: int, note: str, **params) -> LedgerEntry:
        """Record ``count`` invocations of a ``kind`` mechanism at this accountant's level."""
        return self.record(
            LedgerEntry(name=name, kind=kind, count=count, level=self.level, note=note, **params)
        )

    def add_gaussian(
        self,
        name: str,
        noise_multiplier: float,
        *,
        count: int = 1,
        sensitivity: float = 1.0,
        note: str = "",
    ) -> LedgerEntry:
        """Record ``count`` Gaussian mechanisms with noise std ``noise_multiplier*sensitivity``."""
        return self._add(
            "gaussian", name, count, note, noise_multiplier=noise_multiplier,
            sensitivity=float(sensitivity),
        )

    def add_subsampled_gaussian(
        self,
        name: str,
        noise_multiplier: float,
        sample_rate: float,
        *,
        steps: int = 1,
        sensitivity: float = 1.0,
        note: str = "",
        group_size: int | None = None,
    ) -> LedgerEntry:
        """Record ``steps`` DP-SGD steps (Poisson rate ``sample_rate``, clip = sensitivity);
        with ``group_size``, graph DP-SGD steps where one unit changes up to that many clipped
        per-sample terms (module doc)."""
        graph = group_size is not None
        return self._add(
            "graph_subsampled_gaussian" if graph else "subsampled_gaussian", name, steps, note,
            noise_multiplier=noise_multiplier, sample_rate=sample_rate,
            sensitivity=float(sensitivity), group_size=int(group_size) if graph else None,
        )

    def add_pure(self, name: str, epsilon: float, *, count: int = 1, note: str = "") -> LedgerEntry:
        """Record ``count`` invocations of a pure epsilon-DP (e.g. LDP) mechanism."""
        return self._add("pure", name, count, note, epsilon=epsilon)

    # -- composition -----------------------------------------------------------------------
    def rdp(self, orders: Iterable[float]) -> np.ndarray:
        """Total RDP of the ledger at ``orders`` (sum over entries)."""
        orders = np.atleast_1d(np.asarray(list(orders), dtype=float))
        total = np.zeros_like(orders)
        for entry in self.ledger:
            total = total + entry.rdp(orders)
        return total

    def epsilon(self, delta: float | None = None, conversion: Conversion | None = None) -> float:
        """Epsilon spent by the ledger at ``delta`` (default: the accountant's); module doc."""
        if delta is not None:
            delta = check_delta(delta)
        active = [e for e in self.ledger if e.count > 0]
        if not active:
            return 0.0
        if all(e.kind == "pure" for e in active):
            return float(sum(e.count * e.epsilon for e in active))  # type: ignore[operator]
        delta = self.delta if delta is None else delta
        if delta is None:
            raise ValueError(
                "this ledger holds approximate-DP (Gaussian) mechanisms: a delta is required"
            )
        delta = check_delta(delta)
        conv = conversion or self.conversion

        def rdp_fn(alpha: float) -> float:
            return float(sum(e.rdp(np.array([alpha]))[0] for e in active))

        eps = _convert(rdp_fn, delta, conv)
        if conv == "improved" and all(e.kind == "gaussian" for e in active):
            eps = min(eps, _exact_gaussian_epsilon(active, delta))
        return min(eps, self._basic_mixed_epsilon(active, delta, conv))

    def _basic_mixed_epsilon(
        self, active: list[LedgerEntry], delta: float, conversion: Conversion
    ) -> float:
        """Basic composition of the pure part ``(sum count * epsilon, 0)`` and the rest
        ``(epsilon', delta)`` (Dwork & Roth 2014, Theorem 3.16): tighter than RDP when a large
        pure epsilon meets a Gaussian part."""
        pure = [e for e in active if e.kind == "pure"]
        if not pure:
            return math.inf
        rest = PrivacyAccountant(self.level, delta, conversion,
                                 [e for e in active if e.kind != "pure"])
        return float(sum(e.count * e.epsilon for e in pure)) + rest.epsilon()  # type: ignore[misc]

    def mark_reproducible(self, generator: object | None) -> None:
        """Called by a mechanism with the generator it drew from: an explicit one means the
        noise is reproducible by whoever knows its seed (the report says so)."""
        if generator is not None:
            self.reproducible = True

    def copy(self) -> PrivacyAccountant:
        return copy.deepcopy(self)

    def total_count(self, name: str | None = None) -> int:
        """How many invocations were recorded (of mechanism ``name``, or in all)."""
        return sum(e.count for e in self.ledger if name is None or e.name == name)

    def state_dict(self) -> dict:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        return state | {"ledger": [e.to_dict() for e in self.ledger]}

    def load_state_dict(self, state: dict) -> None:
        self.level = state["level"]
        self.delta = state["delta"]
        self.conversion = state["conversion"]
        self.ledger = [LedgerEntry.from_dict(d) for d in state["ledger"]]
        self.unit = state.get("unit", self.unit)
        self.secure = state.get("secure")
        # a checkpoint from before noise provenance was recorded: assume the worst
        self.reproducible = state.get("reproducible", True)

    @classmethod
    def from_state_dict(cls, state: dict) -> PrivacyAccountant:
        acc = cls(level=state["level"], delta=state["delta"], conversion=state["conversion"])
        acc.load_state_dict(state)
        return acc
