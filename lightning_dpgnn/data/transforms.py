"""Graph transforms used by the papers' preprocessing (PyG ``BaseTransform`` subclasses).

Edge convention: ``edge_index[0]`` is the source and ``edge_index[1]`` the target; a node
aggregates over its *in*-neighbours (edges into it). Undirected graphs hold both directions.

All transforms return a new ``Data`` (PyG's ``BaseTransform.__call__`` shallow-copies the input
and no tensor is modified in place). Random transforms take ``seed``: with an integer they draw
from their own ``torch.Generator`` (same output on every call), with ``None`` from torch's global
generator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from .errors import DataError, EmptyDatasetError, InvalidFeaturesError, InvalidSplitError

__all__ = [
    "bound_in_and_out_degree",
    "RemoveSelfLoops",
    "RemoveIsolatedNodes",
    "FilterClassByCount",
    "NodeSplit",
    "BoundDegree",
    "ScaleFeatures",
    "SPLIT_PRESETS",
    "parse_split",
    "check_features",
]

SPLIT_PRESETS: dict[str, tuple[float, float, float]] = {
    "gap": (0.75, 0.10, 0.15),
    "progap": (0.75, 0.10, 0.15),
    "lpgnn": (0.50, 0.25, 0.25),
}
"""Named train/val/test fractions: GAP/ProGAP 75/10/15, LPGNN 50/25/25."""


def _generator(seed: int | None) -> torch.Generator | None:
    return None if seed is None else torch.Generator().manual_seed(int(seed))


def parse_split(split: str | Sequence[float]) -> tuple[float, float, float]:
    """Turn a preset name (``"gap"``, ``"progap"``, ``"lpgnn"``) or fractions into a triple.

    Raises:
        InvalidSplitError: unknown preset, not exactly three fractions, a negative or non-finite
            fraction, or fractions that do not sum to 1.
    """
    if isinstance(split, str):
        key = split.strip().lower()
        if key not in SPLIT_PRESETS:
            raise InvalidSplitError(
                f"unknown split preset {split!r}; use one of {sorted(SPLIT_PRESETS)} "
                "or a (train, val, test) tuple of fractions summing to 1"
            )
        return SPLIT_PRESETS[key]
    fracs = tuple(float(f) for f in split)
    if len(fracs) != 3:
        raise InvalidSplitError(
            f"split must have exactly 3 fractions (train, val, test), got {len(fracs)}: {fracs}"
        )
    if any(not math.isfinite(f) or f < 0 for f in fracs):
        raise InvalidSplitError(f"split fractions must be finite and non-negative, got {fracs}")
    total = sum(fracs)
    if abs(total - 1.0) > 1e-6:
        raise InvalidSplitError(f"split fractions must sum to 1, got {fracs} (sum = {total:g})")
    return fracs  # type: ignore[return-value]


def check_features(data: Data, name: str = "dataset") -> None:
    """Raise :class:`InvalidFeaturesError` if ``data.x`` holds NaN or infinite values."""
    x = getattr(data, "x", None)
    if x is None:
        return
    if not torch.is_floating_point(x) or x.numel() == 0:
        return
    if bool(torch.isfinite(x.sum())):  # one fast pass: NaN and inf propagate into the sum
        return
    bad = ~torch.isfinite(x)
    if bool(bad.any()):
        rows = bad.any(dim=1).nonzero().view(-1) if x.dim() == 2 else bad.nonzero().view(-1)
        n_nan = int(torch.isnan(x).sum())
        n_inf = int(torch.isinf(x).sum())
        raise InvalidFeaturesError(
            f"{name}: node features contain {n_nan} NaN and {n_inf} infinite values "
            f"(in {rows.numel()} nodes, first: {rows[:5].tolist()}); clean or impute them first"
        )


class RemoveSelfLoops(BaseTransform):
    """Remove edges ``(i, i)`` (and their edge attributes)."""

    def forward(self, data: Data) -> Data:
        ei = data.edge_index
        keep = ei[0] != ei[1]
        if bool(keep.all()):
            return data
        return data.edge_subgraph(keep)


class RemoveIsolatedNodes(BaseTransform):
    """Remove nodes with neither incoming nor outgoing edges; relabel the rest.

    Node-level attributes (``x``, ``y``, masks, ...) are subset accordingly. Run it after
    :class:`RemoveSelfLoops` to also drop nodes whose only edge is a self-loop.
    """

    def forward(self, data: Data) -> Data:
        n = data.num_nodes
        keep = torch.zeros(n, dtype=torch.bool)
        keep[data.edge_index.reshape(-1)] = True
        if bool(keep.all()):
            return data
        return data.subgraph(keep)


class FilterClassByCount(BaseTransform):
    """Drop classes with fewer than ``min_count`` nodes, their nodes and their edges.

    Remaining labels are remapped to ``0..c-1`` keeping their original order. Nodes with a
    negative label (unlabeled) are dropped too.

    Args:
        min_count: an ``int`` is an absolute node count; a ``float`` in ``(0, 1)`` is a fraction
            of the labeled nodes (e.g. ``0.01``: keep classes holding at least 1% of them).
    """

    def __init__(self, min_count: int | float) -> None:
        if isinstance(min_count, bool) or min_count < 0:
            raise ValueError(f"min_count must be a non-negative number, got {min_count!r}")
        if isinstance(min_count, float) and not min_count < 1:
            min_count = int(min_count)
        self.min_count = min_count

    def threshold(self, num_labeled: int) -> int:
        """Absolute node count a class needs to be kept, given the number of labeled nodes."""
        if isinstance(self.min_count, float):
            return int(math.ceil(self.min_count * num_labeled))
        return int(self.min_count)

    def forward(self, data: Data) -> Data:
        y: Tensor = data.y
        if y.dim() != 1:
            raise DataError("FilterClassByCount needs single-label y of shape [num_nodes]")
        labeled = y >= 0
        counts = torch.bincount(y[labeled], minlength=1)
        keep_class = counts >= self.threshold(int(labeled.sum()))
        if not bool(keep_class.any()):
            raise EmptyDatasetError(
                f"FilterClassByCount(min_count={self.min_count}) removes every class "
                f"(largest class has {int(counts.max()) if counts.numel() else 0} nodes)"
            )
        new_label = torch.full((counts.numel(),), -1, dtype=torch.long)
        new_label[keep_class] = torch.arange(int(keep_class.sum()))
        node_keep = labeled.clone()
        node_keep[labeled] = keep_class[y[labeled]]
        if bool(node_keep.all()) and bool(keep_class.all()):
            return data
        out = data.subgraph(node_keep) if not bool(node_keep.all()) else data
        out.y = new_label[out.y]
        return out


class NodeSplit(BaseTransform):
    """Random train/val/test node split into ``train_mask``, ``val_mask``, ``test_mask``.

    Only labeled nodes (``y >= 0``; all nodes if there is no ``y``) are split. Sizes are
    ``round(val * n)`` and ``round(test * n)``, the rest goes to train, so the three masks are
    disjoint and cover every labeled node. Existing masks are replaced.

    Args:
        train: fraction of training nodes.
        val: fraction of validation nodes.
        test: fraction of test nodes. The three must be non-negative and sum to 1.
        seed: random seed (``None``: torch's global generator).
    """

    def __init__(
        self, train: float = 0.75, val: float = 0.10, test: float = 0.15, seed: int | None = 0
    ) -> None:
        self.train, self.val, self.test = parse_split((train, val, test))
        self.seed = seed

    @classmethod
    def from_preset(cls, split: str | Sequence[float], seed: int | None = 0) -> NodeSplit:
        """Build from a preset name (``"gap"``, ``"lpgnn"``) or a ``(train, val, test)`` tuple."""
        return cls(*parse_split(split), seed=seed)

    def sizes(self, n: int) -> tuple[int, int, int]:
        """Number of train, val and test nodes for ``n`` labeled nodes."""
        n_val = int(round(self.val * n))
        n_test = int(round(self.test * n))
        n_val = min(n_val, n)
        n_test = min(n_test, n - n_val)
        return n - n_val - n_test, n_val, n_test

    def forward(self, data: Data) -> Data:
        n = data.num_nodes
        y = getattr(data, "y", None)
        if y is not None and y.dim() == 1 and y.numel() == n:
            candidates = (y >= 0).nonzero().view(-1)
        else:
            candidates = torch.arange(n)
        perm = candidates[torch.randperm(candidates.numel(), generator=_generator(self.seed))]
        n_train, n_val, _ = self.sizes(candidates.numel())
        parts = (perm[:n_train], perm[n_train : n_train + n_val], perm[n_train + n_val :])
        for key, idx in zip(("train_mask", "val_mask", "test_mask"), parts, strict=True):
            mask = torch.zeros(n, dtype=torch.bool)
            mask[idx] = True
            data[key] = mask
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.train}, {self.val}, {self.test}, seed={self.seed})"


class BoundDegree(BaseTransform):
    """Keep at most ``max_degree`` incoming edges per node, chosen uniformly at random.

    Nodes whose in-degree is already ``<= max_degree`` keep all their edges; the kept edges are a
    subset of the original ones, in their original order (edge attributes follow). Vectorised:
    one random permutation and one stable sort, so ~1.6M edges take well under a second.
    Needed before aggregation under node-level DP (design invariant 6). On an undirected graph
    the result is in general directed.

    Args:
        max_degree: maximum in-degree ``D`` (>= 0).
        seed: random seed (``None``: torch's global generator).
    """

    def __init__(self, max_degree: int, seed: int | None = 0) -> None:
        if int(max_degree) < 0:
            raise ValueError(f"max_degree must be >= 0, got {max_degree}")
        self.max_degree = int(max_degree)
        self.seed = seed

    def keep_mask(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        """Boolean mask over edges: which edges are kept."""
        target = edge_index[1]
        num_edges = target.numel()
        perm = torch.randperm(num_edges, generator=_generator(self.seed))
        order = perm[torch.sort(target[perm], stable=True).indices]  # grouped by target, shuffled
        counts = torch.bincount(target, minlength=num_nodes)
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(num_edges) - starts[target[order]]
        keep = torch.zeros(num_edges, dtype=torch.bool)
        keep[order[rank < self.max_degree]] = True
        return keep

    def forward(self, data: Data) -> Data:
        keep = self.keep_mask(data.edge_index, data.num_nodes)
        if bool(keep.all()):
            return data
        return data.edge_subgraph(keep)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_degree={self.max_degree}, seed={self.seed})"


class ScaleFeatures(BaseTransform):
    """Min-max scale every feature column of ``x`` to ``[alpha, beta]``.

    Column minima and maxima are taken over all nodes. A constant column maps to ``alpha``.
    LDP feature mechanisms (PGC/LPGNN) assume features in a known range such as ``[0, 1]``.

    Raises:
        InvalidFeaturesError: if ``x`` holds NaN or infinite values.
    """

    def __init__(self, alpha: float = 0.0, beta: float = 1.0) -> None:
        if not alpha < beta:
            raise ValueError(f"ScaleFeatures needs alpha < beta, got alpha={alpha}, beta={beta}")
        self.alpha, self.beta = float(alpha), float(beta)

    def forward(self, data: Data) -> Data:
        check_features(data, "ScaleFeatures input")
        x = data.x.float()
        lo = x.min(dim=0).values
        hi = x.max(dim=0).values
        span = hi - lo
        scale = torch.where(span > 0, (self.beta - self.alpha) / span, torch.zeros_like(span))
        data.x = ((x - lo) * scale + self.alpha).clamp_(self.alpha, self.beta)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(alpha={self.alpha}, beta={self.beta})"


def bound_in_and_out_degree(data: Data, max_degree: int, seed: int = 0) -> Data:
    """Sample edges so every in-degree AND out-degree is <= ``max_degree`` (invariant 6).

    Node-level sensitivity ``sqrt(D)`` needs each node's features to enter at most D
    aggregates (its out-degree) and each aggregate to sum at most D rows (its in-degree).
    In-degrees are bounded first by uniform neighbour sampling; the same sampling on the
    reversed graph then bounds out-degrees, which only removes edges.
    """
    out = BoundDegree(max_degree, seed=seed)(data.clone())
    out.edge_index = out.edge_index.flip(0)
    out = BoundDegree(max_degree, seed=seed + 1)(out)
    out.edge_index = out.edge_index.flip(0)
    return out
