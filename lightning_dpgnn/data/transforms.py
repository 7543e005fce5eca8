"""Graph transforms of the papers' preprocessing (PyG ``BaseTransform`` subclasses).

A node aggregates over its in-neighbours (``edge_index[1]`` is the target). ``data.node_id`` is
each node's index in the raw dataset (it survives every transform here; :class:`NodeSplit` keys
on it) and the optional ``data.label_values`` the raw value of every label index.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
import torch_geometric.transforms as T
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from ..nn.mlp import dense_features, select_rows
from .errors import DataError, EmptyDatasetError, InvalidFeaturesError, InvalidSplitError

SPLIT_PRESETS: dict[str, tuple[float, float, float]] = {
    "gap": (0.75, 0.10, 0.15),
    "progap": (0.75, 0.10, 0.15),
    "lpgnn": (0.50, 0.25, 0.25),
}
"""Named train/val/test fractions: GAP/ProGAP 75/10/15, LPGNN 50/25/25."""


def _generator(seed: int | None) -> torch.Generator | None:
    return None if seed is None else torch.Generator().manual_seed(int(seed))


def _signed64(c: int) -> int:
    c &= (1 << 64) - 1
    return c - (1 << 64) if c >= 1 << 63 else c


_GAMMA = _signed64(0x9E3779B97F4A7C15)
_MIX1 = _signed64(0xBF58476D1CE4E5B9)
_MIX2 = _signed64(0x94D049BB133111EB)


def _shr(z: Tensor, k: int) -> Tensor:
    """Logical right shift of int64 bits (torch's ``>>`` is arithmetic on signed integers)."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def _splitmix64(z: Tensor) -> Tensor:
    # int64 addition and multiplication wrap modulo 2**64 (two's complement), so this is
    # exactly the unsigned splitmix64 finaliser on every platform
    z = z + _GAMMA
    z = (z ^ _shr(z, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    return z ^ _shr(z, 31)


def keyed_uniform(seed: int, ids: Tensor) -> Tensor:
    """Pseudo-random numbers in ``[0, 1)`` that depend only on ``(seed, ids[i])``: the top 53
    bits of ``splitmix64(ids[i] XOR splitmix64(seed))``, identical on every platform."""
    key = _splitmix64(torch.tensor(_signed64(int(seed)), dtype=torch.long))
    z = _splitmix64(ids.to(torch.long) ^ key)
    return _shr(z, 11).to(torch.float64) / float(1 << 53)


_ROW = "sparse_x_row"  # a node attribute that follows the nodes a sub-graph transform keeps


def _without_label_values(data: Data, fn: Callable[[Data], Data]) -> Data:
    """Run a sub-graph transform with the graph-level ``label_values`` set aside (PyG would take it
    for a node or edge attribute when their counts match), and sparse features ``x`` too (torch
    cannot index them by node: the kept rows are selected afterwards)."""
    values = getattr(data, "label_values", None)
    x = getattr(data, "x", None)
    sparse = x is not None and x.layout != torch.strided
    if values is None and not sparse:
        return fn(data)
    data = copy.copy(data)
    if values is not None:
        del data.label_values
    if sparse:
        num_nodes = int(data.num_nodes)
        del data.x
        data[_ROW] = torch.arange(num_nodes)
    out = fn(data)
    if values is not None:
        out.label_values = values
    if sparse:
        out.x = select_rows(x, out[_ROW])
        del out[_ROW]
    return out


def keep_edges(data: Data, keep: Tensor) -> Data:
    """``data`` with the edges of the mask ``keep`` (and their attributes); ``data`` if all."""
    if bool(keep.all()):
        return data
    return _without_label_values(data, lambda d: d.edge_subgraph(keep))


def parse_split(split: str | Sequence[float]) -> tuple[float, float, float]:
    """Turn a preset name (``"gap"``, ``"progap"``, ``"lpgnn"``) or three non-negative fractions
    summing to 1 into a triple (else :class:`InvalidSplitError`)."""
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
    if x is None or not torch.is_floating_point(x) or x.numel() == 0:
        return
    if bool(torch.isfinite(x.sum())):  # one fast pass: NaN and inf propagate into the sum
        return
    x = dense_features(x)
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
    """Remove edges ``(i, i)`` with *every* edge attribute (PyG's subsets only ``edge_weight``)."""

    def forward(self, data: Data) -> Data:
        return keep_edges(data, data.edge_index[0] != data.edge_index[1])


class RemoveIsolatedNodes(T.RemoveIsolatedNodes):
    """PyG's :class:`~torch_geometric.transforms.RemoveIsolatedNodes` with ``label_values`` set
    aside. Which nodes are isolated depends on the edges: a private read under edge- or
    node-level DP."""

    def forward(self, data: Data) -> Data:
        return _without_label_values(data, super().forward)


class FilterClassByCount(BaseTransform):
    """Drop classes with fewer than ``min_count`` nodes (an ``int``; a ``float`` in ``(0, 1)``:
    a fraction of the labeled nodes), with their nodes and edges, and unlabeled nodes; labels
    are remapped to ``0..c-1`` in order. It reads every label: a private read under node-level
    or local DP (declare the classes with :class:`KeepClasses` instead)."""

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
        if bool(node_keep.all()):
            out = data
        else:
            out = _without_label_values(data, lambda d: d.subgraph(node_keep))
        out.y = new_label[out.y]
        values = getattr(out, "label_values", None)
        if values is not None:  # classes beyond the largest present label are dropped too
            out.label_values = values[: counts.numel()][keep_class]
        return out


class KeepClasses(BaseTransform):
    """Keep the declared (public) classes: the node whose raw label (``label_values[y]``, else
    ``y``) is ``classes[i]`` gets label ``i``; every other node gets ``y = -1`` and stays in the
    graph. No statistic of the labels is computed; the output carries ``label_values``."""

    def __init__(self, classes: Sequence[int]) -> None:
        values = [int(c) for c in classes]
        if not values:
            raise ValueError("classes must list at least one label value")
        if len(set(values)) != len(values):
            raise ValueError(f"classes must be distinct, got {values}")
        self.classes = values

    def forward(self, data: Data) -> Data:
        y: Tensor = data.y
        if y.dim() != 1:
            raise DataError("KeepClasses needs single-label y of shape [num_nodes]")
        labeled = y >= 0
        raw = torch.full_like(y, -1)
        values = getattr(data, "label_values", None)
        if values is not None:
            idx = y[labeled]
            if idx.numel() and int(idx.max()) >= values.numel():
                raise DataError(
                    f"label {int(idx.max())} has no entry in label_values ({values.numel()})"
                )
            raw[labeled] = values[idx].to(y.dtype)
        else:
            raw[labeled] = y[labeled]
        declared = torch.tensor(self.classes, dtype=y.dtype)
        match = raw.unsqueeze(1) == declared.unsqueeze(0)  # [n, c]; raw = -1 never matches
        hit = match.any(dim=1) & labeled
        new_y = torch.full_like(y, -1)
        new_y[hit] = match[hit].to(torch.long).argmax(dim=1).to(y.dtype)
        data.y = new_y
        data.label_values = declared.to(torch.long)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.classes})"


class NodeSplit(BaseTransform):
    """Random split of the labeled nodes into ``train_mask``, ``val_mask``, ``test_mask``.

    ``by="identity"``: a node's role depends only on ``u = keyed_uniform(seed, node_id)`` (train
    if ``u < train``, val if ``u < train + val``): other nodes, edges or labels never change it,
    so the split reads no private data; sizes are binomial. ``by="position"``: a seeded
    permutation with exact sizes (:meth:`sizes`): removing one node re-assigns many others, a
    private read under node-level DP. ``seed=None`` draws a fresh key on every call.
    """

    BY = ("identity", "position")

    def __init__(
        self,
        train: float = 0.75,
        val: float = 0.10,
        test: float = 0.15,
        seed: int | None = 0,
        by: str = "identity",
    ) -> None:
        self.train, self.val, self.test = parse_split((train, val, test))
        self.seed = seed
        if by not in self.BY:
            raise InvalidSplitError(f"by must be one of {self.BY}, got {by!r}")
        self.by = by

    @classmethod
    def from_preset(
        cls, split: str | Sequence[float], seed: int | None = 0, by: str = "identity"
    ) -> NodeSplit:
        """Build from a preset name or a ``(train, val, test)`` tuple."""
        return cls(*parse_split(split), seed=seed, by=by)

    def sizes(self, n: int) -> tuple[int, int, int]:
        """Number of train, val and test nodes for ``n`` labeled nodes (``by="position"``)."""
        n_val = min(round(self.val * n), n)
        n_test = min(round(self.test * n), n - n_val)
        return n - n_val - n_test, n_val, n_test

    def positional(self, candidates: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The train, val and test parts of a seeded permutation of ``candidates``."""
        perm = candidates[torch.randperm(candidates.numel(), generator=_generator(self.seed))]
        n_train, n_val, _ = self.sizes(candidates.numel())
        return perm[:n_train], perm[n_train : n_train + n_val], perm[n_train + n_val :]

    def _by_identity(self, data: Data, candidates: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        seed = self.seed
        if seed is None:
            seed = int(torch.randint(0, 2**62, (1,)))
        node_id = getattr(data, "node_id", None)
        ids = torch.arange(int(data.num_nodes)) if node_id is None else node_id
        u = keyed_uniform(seed, ids[candidates])
        in_train = u < self.train
        in_val = ~in_train & (u < self.train + self.val)
        if self.test == 0.0:  # float rounding must not leave a few nodes in an empty test set
            in_val = ~in_train
        return candidates[in_train], candidates[in_val], candidates[~in_train & ~in_val]

    def forward(self, data: Data) -> Data:
        n = data.num_nodes
        y = getattr(data, "y", None)
        if y is not None and y.dim() == 1 and y.numel() == n:
            candidates = (y >= 0).nonzero().view(-1)
        else:
            candidates = torch.arange(n)
        if self.by == "position":
            parts = self.positional(candidates)
        else:
            parts = self._by_identity(data, candidates)
        for key, idx in zip(("train_mask", "val_mask", "test_mask"), parts, strict=True):
            mask = torch.zeros(n, dtype=torch.bool)
            mask[idx] = True
            data[key] = mask
        return data

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.train}, {self.val}, {self.test}, seed={self.seed}, "
            f"by={self.by!r})"
        )


class BoundDegree(BaseTransform):
    """Keep at most ``max_degree`` incoming edges per node, chosen uniformly at random (in their
    original order, edge attributes following). For non-private runs only: it reads the edges
    and is not a stable degree projection (node-level models check a public bound instead).
    ``seed=None`` draws from torch's global generator."""

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
        return keep_edges(data, self.keep_mask(data.edge_index, data.num_nodes))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_degree={self.max_degree}, seed={self.seed})"


class ScaleFeatures(BaseTransform):
    """Scale every feature of ``x`` to ``[alpha, beta]``: with ``bounds=(lo, hi)``, the public
    range of the raw features, clamped and mapped linearly (each row depends on its own node
    only); without, by per-column min-max over all nodes (a private read under node-level or
    local DP; a constant column maps to ``alpha``). NaN or infinite features are refused."""

    def __init__(
        self,
        alpha: float = 0.0,
        beta: float = 1.0,
        bounds: tuple[float, float] | None = None,
    ) -> None:
        if not alpha < beta:
            raise ValueError(f"ScaleFeatures needs alpha < beta, got alpha={alpha}, beta={beta}")
        self.alpha, self.beta = float(alpha), float(beta)
        if bounds is not None:
            lo, hi = (float(b) for b in bounds)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"ScaleFeatures needs finite bounds lo < hi, got {bounds}")
            bounds = (lo, hi)
        self.bounds = bounds

    def forward(self, data: Data) -> Data:
        check_features(data, "ScaleFeatures input")
        x = dense_features(data.x).float()
        if self.bounds is not None:
            lo, hi = self.bounds
            x = x.clamp(lo, hi)
            if (lo, hi) == (self.alpha, self.beta):  # the identity map: clamp only
                data.x = x
                return data
            scale = (self.beta - self.alpha) / (hi - lo)
        else:
            lo = x.min(dim=0).values
            span = x.max(dim=0).values - lo
            scale = torch.where(span > 0, (self.beta - self.alpha) / span, torch.zeros_like(span))
        data.x = ((x - lo) * scale + self.alpha).clamp_(self.alpha, self.beta)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(alpha={self.alpha}, beta={self.beta}, bounds={self.bounds})"
