"""The paper-code reference mode shared by the methods whose authors' code is unsound
(design.md, "Papers whose public code is not what they claim"): GW-LDP and PoinDP.

A method with ``mode="paper-code"`` reproduces the released code's behaviour so that a paper's
tables can be compared side by side. Its report says it is NOT differentially private (its
accountant records an infinite spend, so ``PrivacyBudget`` refuses any budget), and the zoo
and the hub refuse to publish it (:meth:`PaperCodeMode.publication_blockers`, read by
:func:`lightning_dpgnn.publish.hub.publication_refusals`).
"""

from __future__ import annotations

import math

from ..privacy import PrivacyAccountant

__all__ = ["PAPER_CODE", "PaperCodeMode"]

#: the mode's name, as ``mode=`` takes it
PAPER_CODE = "paper-code"


class PaperCodeMode:
    """Mixin of a method with a paper-code reference mode (``self.mode == "paper-code"``).

    Subclasses set :attr:`paper_code_release` (what the mode releases, e.g. "embedding
    release") and :attr:`paper_code_flaw` (why it is not differentially private)."""

    paper_code_release: str = "release"
    paper_code_flaw: str = ""

    @property
    def in_paper_code_mode(self) -> bool:
        return getattr(self, "mode", None) == PAPER_CODE

    def not_private_note(self) -> str:
        """The report's unit and the ledger note of the mode."""
        return (f"NOT differentially private: paper-code reference mode ({self.paper_code_flaw}; "
                "no sensitivity bound, no guarantee)")

    def record_not_private(self, accountant: PrivacyAccountant, name: str) -> None:
        """Record what the mode reads in the clear: an infinite spend (pure, so no delta)."""
        accountant.add_pure(name, math.inf, note=self.not_private_note())

    def publication_blockers(self) -> list[str]:
        """Reasons the zoo refuses this model beyond the common ones."""
        if self.in_paper_code_mode:
            return [f"its {self.paper_code_release} is the paper-code reference mode, which is "
                    f"NOT differentially private ({self.paper_code_flaw})"]
        return []
