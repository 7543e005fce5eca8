"""The paper-code reference mode of the methods whose authors' code is unsound (GW-LDP, PoinDP,
HeteroRR; design.md): with ``mode="paper-code"`` a model holds a :class:`PaperCode` and
reproduces the released code for side-by-side tables; it records an infinite spend, its report
says NOT differentially private, and ``PrivacyBudget``, the zoo and the hub refuse it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..privacy import PrivacyAccountant

__all__ = ["PAPER_CODE", "PaperCode"]

#: the mode's name, as ``mode=`` takes it
PAPER_CODE = "paper-code"


@dataclass(frozen=True)
class PaperCode:
    """What a method's paper-code mode releases (e.g. "embedding release") and why it is not
    differentially private (``flaw``)."""

    release: str
    flaw: str

    @classmethod
    def of(cls, mode: str, release: str, flaw: str) -> PaperCode | None:
        """The component of ``mode`` (``None``: a sound mode)."""
        return cls(release, flaw) if mode == PAPER_CODE else None

    def note(self) -> str:
        """The report's unit and the ledger note of the mode."""
        return (f"NOT differentially private: paper-code reference mode ({self.flaw}; "
                "no sensitivity bound, no guarantee)")

    def record(self, accountant: PrivacyAccountant, name: str) -> None:
        """Record what the mode reads in the clear: an infinite spend (pure, so no delta)."""
        accountant.add_pure(name, math.inf, note=self.note())

    def blockers(self) -> list[str]:
        """Why the zoo refuses the model."""
        return [f"its {self.release} is the paper-code reference mode, which is NOT "
                f"differentially private ({self.flaw})"]
