"""Privacy levels and protected units, one object each: :class:`Level` is a ``str`` enum
(``Level.EDGE == "edge"``), :class:`Unit` what one neighbouring step changes, in words. Pure
python, a leaf every layer may import."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["EDGE_UNITS", "LEVELS", "CENTRAL_LEVELS", "Level", "Unit"]

#: what one unit of edge-level privacy is: one friendship (both directions) or one arc
EDGE_UNITS: tuple[str, ...] = ("undirected", "directed")


class Level(StrEnum):
    """A privacy level (the adjacency notion of a guarantee)."""

    NONE = "none"  #: non-private: data is read in the clear
    EDGE = "edge"  #: edge-level DP: neighbouring graphs differ in one edge (or friendship)
    NODE = "node"  #: node-level DP: neighbouring graphs differ in one node and all its data
    LDP = "ldp"  #: local DP: each node (or client) perturbs its own data before sending it

    @classmethod
    def of(cls, level: str | Level) -> Level:
        """``level`` as a :class:`Level`, with a clear error for an unknown name."""
        try:
            return cls(level)
        except ValueError:
            raise ValueError(f"unknown privacy level {level!r}; use one of {LEVELS}") from None

    @property
    def phrase(self) -> str:
        """The level in words: ``"edge-level DP"``, ``"local DP"``, ``"non-private"``, ..."""
        return {"none": "non-private", "ldp": "local DP"}.get(self.value, f"{self.value}-level DP")

    @property
    def private(self) -> bool:
        """Whether the level protects anything (every level but ``none``)."""
        return self is not Level.NONE

    @property
    def protects_nodes(self) -> bool:
        """Node level: a node's features, label and edges are all protected."""
        return self is Level.NODE

    @property
    def central(self) -> bool:
        """A trusted curator holds the raw graph and releases noisy functions of it."""
        return self in (Level.EDGE, Level.NODE)


LEVELS: tuple[str, ...] = tuple(level.value for level in Level)
#: the levels of a centrally private method (a curator holds the graph)
CENTRAL_LEVELS: tuple[str, ...] = (Level.NONE.value, Level.EDGE.value, Level.NODE.value)


@dataclass(frozen=True)
class Unit:
    """What one neighbouring step changes at ``level``; ``detail``: the edge unit (``"private"``:
    HeteroRR), what a node sends at local DP, or a node-level guarantee's degree bound ``D``."""

    level: Level
    detail: str | int | None = None

    _WORDS = {
        ("edge", "undirected"): "one undirected edge (both of its directions)",
        ("edge", "directed"): "one directed edge (the thesis' unit; a friendship is two of them)",
        ("edge", "private"): "one private undirected edge (public edges are public; HeteroRR)",
        ("node", None): "one node with all its edges, features and label",
        ("ldp", None): "each node's features and label, perturbed on the node (edges are public)",
        ("ldp", "features"): "each node's features, perturbed on the node (edges and labels are "
        "public)",
    }

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", Level.of(self.level))
        if self.level is Level.EDGE and self.detail not in (*EDGE_UNITS, "private"):
            raise ValueError(f"an edge unit is one of {EDGE_UNITS} or 'private', got "
                             f"{self.detail!r}")

    def describe(self) -> str:
        """The unit in words (``""`` without privacy)."""
        if self.level is Level.NONE:
            return ""
        if self.level is Level.NODE:
            words = self._WORDS[("node", None)]
            if self.detail is None:
                return words
            return f"{words}, among graphs whose degrees are <= {int(self.detail):,}"
        return self._WORDS.get((self.level.value, self.detail), "")

    def __str__(self) -> str:
        return self.describe()
