"""``PrivacyReport``: what ``model.privacy_spent()`` returns.

A frozen snapshot of an accountant: the guarantee (epsilon, delta, level), the accountant and
conversion used, and the per-mechanism ledger. It serializes to JSON (model cards, benchmark
files) and to a plain dict stored in Lightning checkpoints.

Pure python: no Lightning imports.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from .accountant import LedgerEntry, PrivacyAccountant

__all__ = ["PrivacyReport"]

_ACCOUNTANT_NAMES = {
    "improved": "RDP (autodp/opacus curves) + Balle et al. 2020 conversion",
    "basic": "RDP (autodp/opacus curves) + Mironov 2017 conversion",
    "pure": "pure-epsilon sequential composition",
    "none": "no private data is read",
}


@dataclass(frozen=True)
class PrivacyReport:
    """The privacy guarantee of a trained (or planned) model.

    Attributes:
        epsilon: total epsilon spent (``math.inf`` for a non-private model that read private
            data without a mechanism; 0.0 when nothing private was read).
        delta: the delta the epsilon holds at (``0.0`` for pure-epsilon LDP).
        level: ``"edge"``, ``"node"``, ``"ldp"`` or ``"none"``.
        accountant: how the ledger was composed and converted.
        ledger: one entry per mechanism kind with its invocation count.
    """

    epsilon: float
    delta: float
    level: str
    accountant: str
    ledger: tuple[LedgerEntry, ...] = field(default_factory=tuple)

    @classmethod
    def from_accountant(cls, acc: PrivacyAccountant, *, private: bool = True) -> PrivacyReport:
        """Snapshot ``acc``. ``private=False`` marks a model that reads data in the clear."""
        ledger = tuple(LedgerEntry.from_dict(e.to_dict()) for e in acc.ledger)
        if not private:
            return cls(math.inf, 0.0, "none", _ACCOUNTANT_NAMES["none"], ledger)
        active = [e for e in acc.ledger if e.count > 0]
        if active and all(e.kind == "pure" for e in active):
            return cls(acc.epsilon(), 0.0, acc.level, _ACCOUNTANT_NAMES["pure"], ledger)
        delta = acc.delta if acc.delta is not None else 0.0
        eps = acc.epsilon() if active else 0.0
        return cls(eps, float(delta), acc.level, _ACCOUNTANT_NAMES[acc.conversion], ledger)

    def count(self, name: str) -> int:
        """Invocations recorded for mechanism ``name``."""
        return sum(e.count for e in self.ledger if e.name == name)

    def to_dict(self) -> dict:
        return {
            "epsilon": None if math.isinf(self.epsilon) else self.epsilon,
            "epsilon_is_infinite": math.isinf(self.epsilon),
            "delta": self.delta,
            "level": self.level,
            "accountant": self.accountant,
            "ledger": [e.to_dict() for e in self.ledger],
        }

    @classmethod
    def from_dict(cls, d: dict) -> PrivacyReport:
        eps = math.inf if d.get("epsilon_is_infinite") else float(d["epsilon"])
        return cls(
            epsilon=eps,
            delta=float(d["delta"]),
            level=d["level"],
            accountant=d["accountant"],
            ledger=tuple(LedgerEntry.from_dict(e) for e in d["ledger"]),
        )

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, s: str) -> PrivacyReport:
        return cls.from_dict(json.loads(s))

    def __str__(self) -> str:
        if self.level == "none":
            return "non-private (epsilon = inf)"
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        d = f", delta = {self.delta:.3g}" if self.delta else ""
        lines = [f"{self.level}-level DP: epsilon = {eps}{d}  [{self.accountant}]"]
        for e in self.ledger:
            what = (
                f"epsilon={e.epsilon:g}" if e.kind == "pure"
                else f"noise_multiplier={e.noise_multiplier:.4g}, sensitivity={e.sensitivity:g}"
            )
            rate = f", sample_rate={e.sample_rate:.4g}" if e.sample_rate else ""
            lines.append(f"  - {e.name}: {e.kind} x{e.count} ({what}{rate})")
        return "\n".join(lines)
