"""Private sum aggregation: the Gaussian mechanism on ``A^T X`` (GAP's PMA, ProGAP's NAP).

Rows are L2-normalized first (thesis eq. 4.6), so one hop's L2 sensitivity is: edge level, 1
for one directed edge (the thesis' unit, Lemma 6) or ``sqrt(2)`` for one undirected edge (the
default: both stored directions move one row by at most 1 each); node level with in- and
out-degrees bounded by ``D``, ``sqrt(D)`` (a node's row enters at most ``D`` aggregates, each
with sensitivity 1: Lemma 8 / Theorem 3). Pure torch: no Lightning imports.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Literal

import torch

from .._quiet import quiet_sparse
from ..caches import TensorCache
from ..levels import EDGE_UNITS, Level
from . import random as R
from .accountant import PrivacyAccountant, check_epsilon, is_count
from .mechanism import EDGES, FEATURES, fields_repr

__all__ = [
    "normalize_rows", "sum_aggregate", "in_adjacency", "GaussianAggregation", "degrees",
    "edge_sensitivity", "EDGE_UNITS", "DegreeBoundError", "check_degree_promise",
]


def edge_sensitivity(edge_unit: str) -> float:
    """L2 sensitivity of the sum aggregation of unit rows under the removal of one edge unit:
    a directed edge changes one row by at most 1; an undirected edge (both directions stored)
    changes two rows by at most 1 each, so ``sqrt(2)``."""
    if edge_unit not in EDGE_UNITS:
        raise ValueError(f"edge_unit must be one of {EDGE_UNITS}, got {edge_unit!r}")
    return math.sqrt(2.0) if edge_unit == "undirected" else 1.0


def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    """Divide every row by its L2 norm (thesis eq. 4.6); all-zero rows map to zero, never NaN.
    Rows are scaled by their largest entry first, so squaring neither underflows nor overflows."""
    if x.ndim != 2:
        raise ValueError(f"x must be a [num_nodes, d] matrix, got shape {tuple(x.shape)}")
    peak = x.abs().amax(dim=1, keepdim=True) if x.shape[1] else x.new_zeros((x.shape[0], 1))
    nonzero = peak > 0
    scaled = x / torch.where(nonzero, peak, torch.ones_like(peak))
    norm = torch.linalg.vector_norm(scaled, ord=2, dim=1, keepdim=True)
    safe = torch.where(nonzero, norm, torch.ones_like(norm))
    return torch.where(nonzero, scaled / safe, torch.zeros_like(x))


#: declared caches of derived forms of an edge index (cleared by ``clear_caches``)
_ADJACENCY = TensorCache("in_adjacency", size=4)
_CHECKED = TensorCache("edge range checked", size=16)


def _check_graph(x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int) -> None:
    if not isinstance(edge_index, torch.Tensor) or edge_index.ndim != 2 or edge_index.shape[0] != 2:
        shape = tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else edge_index
        raise ValueError(f"edge_index must be a [2, num_edges] tensor, got {shape}")
    if edge_index.is_floating_point() or edge_index.dtype == torch.bool:
        raise ValueError(f"edge_index must hold integer node ids, got {edge_index.dtype}")
    if x.ndim != 2:
        raise ValueError(f"x must be a [num_nodes, d] matrix, got shape {tuple(x.shape)}")
    if x.shape[0] != num_nodes:
        raise ValueError(f"x has {x.shape[0]} rows but num_nodes={num_nodes}")
    # the range check reads every edge twice: done once per edge tensor and node count (a
    # declared cache keyed by its in-place version, like the CSR of :func:`in_adjacency`)
    checked = (edge_index._version, num_nodes)
    if _CHECKED.get(edge_index, checked):
        return
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index holds node ids outside [0, {num_nodes})")
    _CHECKED.put(edge_index, checked, True)


def degrees(edge_index: torch.Tensor, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(in_degree, out_degree)`` per node, counting repeated edges with multiplicity."""
    out_deg = torch.bincount(edge_index[0].long(), minlength=num_nodes)
    in_deg = torch.bincount(edge_index[1].long(), minlength=num_nodes)
    return in_deg, out_deg


class DegreeBoundError(ValueError):
    """Node level: the graph breaks the promise that every in- and out-degree is <= D."""


def check_degree_promise(
    edge_index: torch.Tensor, num_nodes: int, max_degree: int, what: str = "the graph"
) -> None:
    """Raise :class:`DegreeBoundError` unless every in- and out-degree is <= ``max_degree``:
    the node-level sensitivity ``sqrt(D)`` (thesis Lemma 8) holds on the graphs of degree at
    most ``D``, a class closed under removing a node. Sampling edges down to ``D`` is no
    substitute: one removed node would change edges far from it (docs/privacy.md)."""
    in_deg, out_deg = degrees(edge_index, int(num_nodes))
    top_in = int(in_deg.max()) if in_deg.numel() else 0
    top_out = int(out_deg.max()) if out_deg.numel() else 0
    if max(top_in, top_out) > max_degree:
        over = int(((in_deg > max_degree) | (out_deg > max_degree)).sum())
        raise DegreeBoundError(
            f"node-level privacy needs every in- and out-degree <= max_degree={max_degree}, "
            f"but {what} has {over} nodes above it (largest in-degree {top_in}, out-degree "
            f"{top_out}). The guarantee is proven only for graphs within the bound: pass a "
            "max_degree that is a public upper bound on every degree (e.g. a platform's friend "
            "limit), or use privacy='edge'. Dropping edges down to D does not keep the "
            "guarantee (docs/privacy.md, 'Node level: the degree bound')."
        )


def in_adjacency(
    edge_index: torch.Tensor,
    num_nodes: int,
    dtype: torch.dtype,
    rows: tuple[int, int] | None = None,
) -> torch.Tensor:
    """``A^T`` as a sparse CSR ``[num_nodes, num_nodes]`` matrix of ones (row ``v`` lists the
    sources of the edges into ``v``, repeated edges with multiplicity), int32 indices when they
    fit; ``rows=(lo, hi)``: only target rows ``lo..hi-1`` (the edge partition of
    :func:`~lightning_dpgnn.privacy.distributed.block_sum_aggregate`). Built once per edge
    tensor, in-place version, node count, rows, dtype and device (a declared cache)."""
    key = (edge_index._version, int(num_nodes), rows, dtype, edge_index.device)
    cached = _ADJACENCY.get(edge_index, key)
    if cached is not None:
        return cached
    src, dst = edge_index[0].long(), edge_index[1].long()
    lo, hi = (0, int(num_nodes)) if rows is None else (int(rows[0]), int(rows[1]))
    if rows is not None:
        inside = (dst >= lo) & (dst < hi)
        src, dst = src[inside], dst[inside] - lo
        del inside
    num_rows = hi - lo
    small = num_nodes < 2**31 and src.numel() < 2**31
    index_dtype = torch.int32 if small else torch.int64
    order = torch.argsort(dst * num_nodes + src)  # rows by target, columns sorted within
    col = src[order].to(index_dtype)
    del order
    crow = torch.zeros(num_rows + 1, dtype=torch.int64, device=edge_index.device)
    torch.cumsum(torch.bincount(dst, minlength=num_rows), 0, out=crow[1:])
    values = torch.ones(col.numel(), dtype=dtype, device=edge_index.device)
    with quiet_sparse():
        adj = torch.sparse_csr_tensor(
            crow.to(index_dtype), col, values, (num_rows, num_nodes), check_invariants=False
        )
    return _ADJACENCY.put(edge_index, key, adj)


def sum_aggregate(x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``A^T X``: row ``v`` is the sum of ``x[u]`` over edges ``(u -> v)`` (thesis Lemma 6),
    repeated edges with multiplicity; a sparse product with :func:`in_adjacency` for floats."""
    num_nodes = int(num_nodes)
    _check_graph(x, edge_index, num_nodes)
    if x.dtype in (torch.float32, torch.float64):
        return in_adjacency(edge_index, num_nodes, x.dtype) @ x
    src, dst = edge_index[0].long(), edge_index[1].long()
    out = torch.zeros((num_nodes, x.shape[1]), dtype=x.dtype, device=x.device)
    return out.index_add_(0, dst, x[src])


class GaussianAggregation:
    """One private aggregation hop (PMA of thesis Alg. 5; NAP of ProGAP before its final
    normalization): ``A^T normalize_rows(x) + N(0, std^2)``, ``std = noise_multiplier *
    sensitivity`` (module doc). A node-level hop refuses a graph with a degree above ``D``
    (never a silently wrong guarantee); :attr:`calls` counts the draws."""

    def __init__(
        self,
        noise_multiplier: float,
        level: Literal["edge", "node"] = "edge",
        max_degree: int | None = None,
        name: str = "pma",
        edge_unit: Literal["undirected", "directed"] = "undirected",
        reads: tuple[str, ...] = (EDGES, FEATURES),
    ) -> None:
        nm = check_epsilon(noise_multiplier, "noise_multiplier", finite="and > 0, got inf")
        if level not in (Level.EDGE.value, Level.NODE.value):
            raise ValueError(f"level must be 'edge' or 'node', got {level!r}")
        if edge_unit not in EDGE_UNITS:
            raise ValueError(f"edge_unit must be one of {EDGE_UNITS}, got {edge_unit!r}")
        if max_degree is not None and not is_count(max_degree):
            raise ValueError(f"max_degree must be an integer >= 1 or None, got {max_degree!r}")
        if level == Level.NODE.value and max_degree is None:
            raise ValueError(
                "node-level aggregation needs max_degree (the degree bound D): bound the "
                "degrees of the graph first and pass the bound"
            )
        self.noise_multiplier, self.level, self.max_degree = nm, Level(level), max_degree
        self.name, self.edge_unit = str(name), edge_unit
        #: what it reads: the edges and the rows it sums (features, or training labels)
        self.reads = tuple(reads)
        self.calls = 0

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of one hop (module doc)."""
        if self.level is Level.NODE:
            return math.sqrt(self.max_degree)  # type: ignore[arg-type]
        return edge_sensitivity(self.edge_unit)

    @property
    def std(self) -> float:
        """Noise standard deviation ``noise_multiplier * sensitivity``."""
        return self.noise_multiplier * self.sensitivity

    def check_input(self, x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int) -> None:
        """Refuse what the sensitivity does not cover: non-float or non-finite ``x``, a
        malformed graph, and (node level) degrees above ``D``."""
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"{self.name}: x must be a floating-point tensor")
        _check_graph(x, edge_index, int(num_nodes))
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{self.name}: x contains NaN or infinite values")
        if self.level is Level.NODE:
            check_degree_promise(edge_index, int(num_nodes), self.max_degree)  # type: ignore[arg-type]

    def aggregate(self, x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """The exact sum ``A^T normalize_rows(x)`` that :meth:`sample` perturbs, once
        :meth:`check_input` accepts ``x`` and the graph."""
        num_nodes = int(num_nodes)
        self.check_input(x, edge_index, num_nodes)
        return sum_aggregate(normalize_rows(x), edge_index, num_nodes)

    def scaled(self, scale: float) -> GaussianAggregation:
        """This mechanism at ``scale`` times its noise multiplier (a hop given a smaller or
        larger share of the budget); itself at scale 1."""
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"{self.name}: scale must be finite and > 0, got {scale!r}")
        if scale == 1.0:
            return self
        out = copy.copy(self)
        out.noise_multiplier = self.noise_multiplier * scale
        return out

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record ``count`` draws on ``accountant`` (a plan, or what a draw records)."""
        accountant.add_gaussian(
            self.name,
            self.noise_multiplier,
            sensitivity=self.sensitivity,
            count=count,
            note=(
                f"edge-level sum aggregation, {self.edge_unit} unit, sensitivity "
                f"{self.sensitivity:.4g} (thesis Lemma 6 / Theorem 2)"
                if self.level is Level.EDGE
                else f"node-level sum aggregation, D={self.max_degree}, sensitivity sqrt(D) "
                "(thesis Lemma 8 / Theorem 3)"
            ),
        )

    def sample(self, agg: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """``agg + N(0, std^2)`` for ``agg`` an :meth:`aggregate` (or one assembled from the
        edge partitions of :func:`~lightning_dpgnn.privacy.distributed.block_sum_aggregate`)."""
        self.calls += 1
        return agg + R.normal(
            tuple(agg.shape), self.std, generator=generator, dtype=agg.dtype, device=agg.device
        )

    def __repr__(self) -> str:
        return fields_repr(self, "noise_multiplier", "level", "max_degree", "name", "edge_unit")


def hop_noise_scales(budget: Sequence[float] | None, hops: int) -> tuple[float, ...]:
    """Per-hop multipliers of the noise scale splitting one budget over ``hops`` by the shares
    ``budget`` (normalized to ``s_k``; ``None``: equal): hop ``k`` runs at ``z sqrt(1 / (hops
    s_k))``, so ``sum_k 1 / (z scale_k)^2 = hops / z^2`` and the hops compose (exactly, and in
    RDP) to the guarantee of ``hops`` hops at ``z``."""
    if budget is None:
        return (1.0,) * hops
    shares = tuple(budget)
    if len(shares) != hops:
        raise ValueError(f"hop_budget needs one share per hop ({hops}), got {len(shares)}")
    for b in shares:
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not (
            math.isfinite(b) and b > 0
        ):
            raise ValueError(f"hop_budget shares must be finite numbers > 0, got {shares!r}")
    total = float(sum(shares))
    return tuple(math.sqrt(total / (hops * b)) for b in shares)
