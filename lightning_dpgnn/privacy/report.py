"""``PrivacyReport`` (what ``model.privacy_spent()`` returns): a frozen, serializable snapshot
of an accountant's guarantee and ledger; ``SeveralGuarantees`` for guarantees over different
units. Pure python: no Lightning imports.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from ..levels import Level
from .accountant import LedgerEntry, PrivacyAccountant

__all__ = ["PrivacyReport", "SeveralGuarantees", "MultipleGuaranteesError", "report_from_dict"]

_ACCOUNTANT_NAMES = {
    "improved": "RDP (autodp/opacus curves) + Balle et al. 2020 conversion",
    "basic": "RDP (autodp/opacus curves) + Mironov 2017 conversion",
    "pure": "pure-epsilon sequential composition",
    "exact_gaussian": "exact Gaussian composition (analytic Gaussian, Balle & Wang 2018)",
    "mixed": "the smaller of {} and basic composition (pure entries' sum + the rest's epsilon)",
    "none": "no private data is read",
}


@dataclass(frozen=True)
class PrivacyReport:
    """The privacy guarantee of a trained (or planned) model: ``epsilon`` (``math.inf``: private
    data read without a mechanism; 0.0: nothing private read) at ``delta`` (0.0 for pure DP)
    and ``level``, how the ledger was composed (``accountant``), the ``ledger``, the protected
    ``unit`` in words, and how the noise was drawn: ``secure_randomness`` (the OS CSPRNG;
    ``None``: nothing drawn) and ``reproducible_noise`` (some noise from a seeded generator:
    no guarantee against whoever knows the seed; the zoo refuses such models)."""

    epsilon: float
    delta: float
    level: Level
    accountant: str
    ledger: tuple[LedgerEntry, ...] = field(default_factory=tuple)
    unit: str = ""
    secure_randomness: bool | None = None
    reproducible_noise: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level.of(self.level))

    @classmethod
    def from_accountant(cls, acc: PrivacyAccountant, *, private: bool = True) -> PrivacyReport:
        """Snapshot ``acc``. ``private=False`` marks a model that reads data in the clear."""
        ledger = tuple(LedgerEntry.from_dict(e.to_dict()) for e in acc.ledger)
        noise = dict(
            unit=acc.unit, secure_randomness=acc.secure, reproducible_noise=acc.reproducible
        )
        if not private:
            return cls(math.inf, 0.0, Level.NONE, _ACCOUNTANT_NAMES["none"], ledger, **noise)
        active = [e for e in acc.ledger if e.count > 0]
        if active and all(e.kind == "pure" for e in active):
            return cls(acc.epsilon(), 0.0, acc.level, _ACCOUNTANT_NAMES["pure"], ledger, **noise)
        delta = acc.delta if acc.delta is not None else 0.0
        eps = acc.epsilon() if active else 0.0
        name = _ACCOUNTANT_NAMES[acc.conversion]
        if acc.conversion == "improved" and active and all(e.kind == "gaussian" for e in active):
            name = _ACCOUNTANT_NAMES["exact_gaussian"]
        if any(e.kind == "pure" for e in active):  # mixed (PrivacyAccountant.epsilon)
            name = _ACCOUNTANT_NAMES["mixed"].format(name)
        return cls(eps, float(delta), acc.level, name, ledger, **noise)

    def count(self, name: str) -> int:
        """Invocations recorded for mechanism ``name``."""
        return sum(e.count for e in self.ledger if e.name == name)

    @property
    def guarantees(self) -> dict[str, PrivacyReport]:
        """The guarantees this report carries, by name: this one, under its level."""
        return {self.level: self}

    def to_dict(self) -> dict:
        return {
            "epsilon": None if math.isinf(self.epsilon) else self.epsilon,
            "epsilon_is_infinite": math.isinf(self.epsilon),
            "delta": self.delta,
            "level": self.level.value,
            "accountant": self.accountant,
            "ledger": [e.to_dict() for e in self.ledger],
            "unit": self.unit,
            "secure_randomness": self.secure_randomness,
            "reproducible_noise": self.reproducible_noise,
        }

    @classmethod
    def from_dict(cls, d: dict) -> PrivacyReport:
        if "guarantees" in d:
            raise MultipleGuaranteesError(
                "this report carries several guarantees: read it with report_from_dict (or "
                "SeveralGuarantees.from_dict)"
            )
        eps = math.inf if d.get("epsilon_is_infinite") else float(d["epsilon"])
        return cls(
            epsilon=eps,
            delta=float(d["delta"]),
            level=d["level"],
            accountant=d["accountant"],
            ledger=tuple(LedgerEntry.from_dict(e) for e in d["ledger"]),
            unit=d.get("unit", ""),
            secure_randomness=d.get("secure_randomness"),
            reproducible_noise=d.get("reproducible_noise", True),
        )

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, s: str) -> PrivacyReport:
        return cls.from_dict(json.loads(s))

    def __str__(self) -> str:
        if not self.level.private:
            return "non-private (epsilon = inf)"
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        d = f", delta = {self.delta:.3g}" if self.delta else ""
        lines = [f"{Level.of(self.level).phrase}: epsilon = {eps}{d}  [{self.accountant}]"]
        if self.unit:
            lines.append(f"  protects: {self.unit}")
        if self.reproducible_noise:
            lines.append(
                "  reproducible noise: not private against anyone who knows the noise seed"
            )
        elif self.secure_randomness is not None:
            src = "OS CSPRNG (secure mode)" if self.secure_randomness else "entropy-seeded torch"
            lines.append(f"  noise: {src}")
        for e in self.ledger:
            what = (
                f"epsilon={e.epsilon:g}" if e.kind == "pure"
                else f"noise_multiplier={e.noise_multiplier:.4g}, sensitivity={e.sensitivity:g}"
            )
            rate = f", sample_rate={e.sample_rate:.4g}" if e.sample_rate else ""
            note = f"; {e.note}" if e.note else ""
            lines.append(f"  - {e.name}: {e.kind} x{e.count} ({what}{rate}{note})")
        return "\n".join(lines)


class MultipleGuaranteesError(TypeError):
    """A single-guarantee figure (``epsilon``, ``delta``, ``level``, ...) was read from a report
    that carries several guarantees: they protect different units and are never added."""


#: what a report of one guarantee answers and a report of several refuses to
_SINGLE = ("epsilon", "delta", "level", "accountant", "ledger", "unit")


@dataclass(frozen=True)
class SeveralGuarantees:
    """Several guarantees over different units (e.g. ``features`` under local DP, ``edges``
    under edge-level DP): ``parts``, ``(name, PrivacyReport)`` pairs never summed; reading
    ``epsilon`` (``delta``, ``level``, ...) of the whole raises :class:`MultipleGuaranteesError`:
    read ``report["features"].epsilon``."""

    parts: tuple[tuple[str, PrivacyReport], ...]

    def __post_init__(self) -> None:
        names = [n for n, _ in self.parts]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"several guarantees need two or more distinct names, got {names}")

    def __getattr__(self, name: str):
        if name in _SINGLE:
            listed = ", ".join(
                f"{n}: {r.level}-level epsilon = {r.epsilon:.4g}" for n, r in self.parts
            )
            raise MultipleGuaranteesError(
                f"this report carries {len(self.parts)} guarantees over different units "
                f"({listed}); they are never added: read report[name].{name}"
            )
        raise AttributeError(name)

    @property
    def guarantees(self) -> dict[str, PrivacyReport]:
        return dict(self.parts)

    def __getitem__(self, name: str) -> PrivacyReport:
        try:
            return self.guarantees[name]
        except KeyError:
            raise KeyError(
                f"no guarantee named {name!r}; this report has {list(self.guarantees)}"
            ) from None

    @property
    def reproducible_noise(self) -> bool:
        """Some noise of some guarantee came from an explicitly seeded generator."""
        return any(r.reproducible_noise for _, r in self.parts)

    @property
    def secure_randomness(self) -> bool | None:
        """Every draw of every guarantee came from the OS CSPRNG (``None``: nothing drawn)."""
        values = [r.secure_randomness for _, r in self.parts if r.secure_randomness is not None]
        return None if not values else all(values)

    def count(self, name: str) -> int:
        """Invocations recorded for mechanism ``name`` (in whichever guarantee)."""
        return sum(r.count(name) for _, r in self.parts)

    def to_dict(self) -> dict:
        return {"guarantees": [{"name": n, **r.to_dict()} for n, r in self.parts]}

    @classmethod
    def from_dict(cls, d: dict) -> SeveralGuarantees:
        return cls(tuple(
            (g["name"], PrivacyReport.from_dict({k: v for k, v in g.items() if k != "name"}))
            for g in d["guarantees"]
        ))

    to_json = PrivacyReport.to_json

    def __str__(self) -> str:
        lines = [f"{len(self.parts)} guarantees over different units (never added):"]
        for name, report in self.parts:
            lines.append(f"[{name}]")
            lines.extend(f"  {line}" for line in str(report).splitlines())
        return "\n".join(lines)


def report_from_dict(d: dict) -> PrivacyReport | SeveralGuarantees:
    """A report written by ``to_dict`` of either kind."""
    return SeveralGuarantees.from_dict(d) if "guarantees" in d else PrivacyReport.from_dict(d)
