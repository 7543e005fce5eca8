"""``Guarantee``: one privacy guarantee a model gives, as an object (invariant 15): its
accountant, target and words are what reports, the publishing gate, ``PrivacyBudget`` and the
model card read. A model has one, or several over different units that are never added.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..levels import Level
from .accountant import PrivacyAccountant
from .report import PrivacyReport

__all__ = ["Guarantee", "default_words"]

_LDP_PROTECTS = ("each node's data is perturbed on the node before it is sent: {what} (local DP, "
                 "epsilon per node)")
_LDP_PUBLIC = "the graph structure (edges) is public in this threat model and not protected"

#: what a guarantee of each level protects and what it uses in the clear, in words
WORDS: dict[Level, tuple[str, str]] = {
    Level.EDGE: (
        "the presence of any single edge of the training graph (removing or adding one edge "
        "changes what is released by at most the stated epsilon, delta)",
        "node features, labels and the set of nodes are used in the clear: edge-level DP does "
        "not protect them",
    ),
    Level.NODE: (
        "any single node with all its edges, features and label",
        "public metadata declared to the model (the class list, the degree bound, the number "
        "of features) is not protected",
    ),
    Level.NONE: ("nothing: this model is not private (epsilon = infinity)", "everything"),
}


def default_words(level: Level, labels_private: bool = True) -> tuple[str, str]:
    """(what a guarantee of ``level`` protects, what it uses in the clear), in words; at local
    DP, whether each node's label is perturbed too (``labels_private``)."""
    if level is not Level.LDP:
        return WORDS[level]
    what = "its features and its label" if labels_private else "its features"
    public = _LDP_PUBLIC + ("" if labels_private else "; labels are not perturbed")
    return _LDP_PROTECTS.format(what=what), public


@dataclass(frozen=True)
class Guarantee:
    """One guarantee of a model: its ``name`` (its level unless it has several), the
    ``accountant`` its releases record on (its only source of epsilon, with level and unit), its
    ``target`` epsilon (``None``: none), what it ``protects`` and uses in the clear (``public``)
    in words, and the ``conditions`` it holds only under (printed with its epsilon)."""

    name: str
    accountant: PrivacyAccountant
    target: float | None = None
    protects: str = ""
    public: str = ""
    conditions: tuple[str, ...] = ()

    @property
    def level(self) -> Level:
        return Level.of(self.accountant.level)

    @property
    def unit(self) -> str:
        """The protected unit in words (as the report states it)."""
        return self.accountant.unit

    def report(self, accountant: PrivacyAccountant | None = None) -> PrivacyReport:
        """The report of what ``accountant`` (default: this guarantee's) records."""
        acc = self.accountant if accountant is None else accountant
        return PrivacyReport.from_accountant(acc, private=self.level.private)
