"""KProp: K linear aggregation steps without self-loops (thesis Alg. 3, LPGNN).

``h^0 = x``, ``h^k = agg({h^{k-1}_u : u in N(v) - {v}})`` for ``k = 1..K``, no non-linearity in
between. With the GCN aggregator (thesis eq. 3.40, the one LPGNN uses for features and labels)
one step is ``h^k = D^{-1/2} A D^{-1/2} h^{k-1}``, where ``A`` holds the graph's edges *without*
self-loops and ``D`` its degrees; KProp is then ``(D^{-1/2} A D^{-1/2})^K x``. Nodes without
neighbours get 0 (their normalisation ``1/sqrt(0)`` is set to 0).

Self-loops are excluded on purpose (thesis §3.4.2): with noisy inputs a self-loop would count a
node's own noise once more at every step. Edge convention as in :mod:`lightning_dpgnn.data`:
``edge_index[0]`` is the source, ``edge_index[1]`` the target, a node aggregates its in-edges.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .._quiet import quiet_sparse
from .backbone import SparseAdjacency
from .mlp import input_linear

__all__ = ["KProp", "PropagatedCodes", "normalized_adjacency", "AGGREGATORS"]

AGGREGATORS = ("gcn", "mean", "sum")
Aggregator = Literal["gcn", "mean", "sum"]


def check_steps(steps: int, name: str = "steps") -> int:
    """Validate a KProp step parameter: an integer ``K >= 0``."""
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise ValueError(f"{name} must be an integer >= 0, got {steps!r}")
    if steps < 0:
        raise ValueError(f"{name} must be >= 0 (K aggregation steps), got {steps}")
    return steps


def normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, aggr: Aggregator = "gcn", self_loops: bool = False
) -> torch.Tensor:
    """The ``[N, N]`` sparse matrix of one aggregation step.

    ``"gcn"``: ``1 / sqrt(deg(u) deg(v))`` per edge ``u -> v`` (eq. 3.40); ``"mean"``:
    ``1 / deg(v)``; ``"sum"``: 1. ``deg`` counts in-edges (for undirected graphs: neighbours).
    Existing self-loops are always dropped; ``self_loops=True`` then adds one per node, which
    with ``"gcn"`` is the GCN convolution of eq. 2.1 (``N(v)`` includes ``v``), used by PGC.
    """
    if aggr not in AGGREGATORS:
        raise ValueError(f"aggr must be one of {AGGREGATORS}, got {aggr!r}")
    src, dst = edge_index
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if self_loops:
        loop = torch.arange(num_nodes, device=edge_index.device)
        src, dst = torch.cat([src, loop]), torch.cat([dst, loop])
    deg = torch.zeros(num_nodes, dtype=torch.float32, device=edge_index.device)
    deg.scatter_add_(0, dst, torch.ones_like(dst, dtype=torch.float32))
    if aggr == "gcn":
        inv_sqrt = deg.pow(-0.5).masked_fill_(deg == 0, 0.0)
        weight = inv_sqrt[src] * inv_sqrt[dst]
    elif aggr == "mean":
        inv = deg.reciprocal().masked_fill_(deg == 0, 0.0)
        weight = inv[dst]
    else:
        weight = torch.ones_like(dst, dtype=torch.float32)
    # row = target, column = source: (A @ x)[v] = sum over in-edges u -> v of weight * x[u]
    with quiet_sparse():
        adj = torch.sparse_coo_tensor(
            torch.stack([dst, src]), weight, (num_nodes, num_nodes)
        ).coalesce()
        return adj.to_sparse_csr()


class KProp(nn.Module):
    """K steps of linear neighbourhood aggregation without self-loops (Alg. 3).

    Args:
        steps: ``K >= 0``; ``K = 0`` is the identity.
        aggr: ``"gcn"`` (default, eq. 3.40), ``"mean"`` or ``"sum"``.
        cached: keep the normalised adjacency of the last graph (same ``edge_index`` object);
            set it for transductive training on one graph.

    ``forward(x, edge_index)`` returns ``(D^{-1/2} A D^{-1/2})^K x`` for ``aggr="gcn"``. It has
    no parameters and is differentiable in ``x`` (Drop applies it to predicted label
    distributions, eq. 3.42).
    """

    def __init__(self, steps: int, aggr: Aggregator = "gcn", cached: bool = True) -> None:
        super().__init__()
        self.steps = check_steps(steps)
        if aggr not in AGGREGATORS:
            raise ValueError(f"aggr must be one of {AGGREGATORS}, got {aggr!r}")
        self.aggr = aggr
        self.cached = cached
        self._cache: tuple[torch.Tensor, int, SparseAdjacency] | None = None

    def adjacency(self, edge_index: torch.Tensor, num_nodes: int) -> SparseAdjacency:
        """The (cached) normalised adjacency of ``edge_index``: its CSR matrix ``adj_t`` and
        the transpose, built once, for the backward pass (a CSR product otherwise transposes,
        i.e. sorts, its matrix at every backward: ~10 ms per step on Facebook page-page)."""
        c = self._cache
        if c is not None and c[0] is edge_index and c[1] == num_nodes:
            return c[2]
        step = normalized_adjacency(edge_index, num_nodes, self.aggr)
        with quiet_sparse():
            adj = SparseAdjacency(step, step.t().to_sparse_csr(), None)
        if self.cached:
            self._cache = (edge_index, num_nodes, adj)
        return adj

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, num_nodes: int | None = None
    ) -> torch.Tensor:
        if self.steps == 0:
            return x
        n = x.size(0) if num_nodes is None else num_nodes
        adj = self.adjacency(edge_index.to(x.device), n)
        dtype = x.dtype
        h = x.float()
        for _ in range(self.steps):
            h = adj.aggregate(h, "sum")
        return h.to(dtype)

    def extra_repr(self) -> str:
        return f"steps={self.steps}, aggr={self.aggr!r}"


class PropagatedCodes:
    """``h = A^K (S diag(scale) + 1 offset^T)``, KProp of affinely rectified sparse codes ``S``,
    kept factored: a layer's product ``h W^T`` is computed as

    ``A^K (S (W diag(scale))^T) + (A^K 1) (W offset)^T``

    which is the same matrix (KProp and the rectifier are linear; to float rounding), at the
    cost of one sparse product with ``S`` (``m`` non-zeros per row) and ``K`` sparse products of
    the layer's width, instead of a dense ``[N, d]`` feature matrix read twice per step (LPGNN on
    Facebook page-page: ``d`` = 4,714, ``m`` = 1, 16-wide layers). Any layer that cannot take
    it asks for :meth:`dense` (built once).

    Args:
        codes: ``[N, d]`` codes (dense or sparse, any dtype).
        scale, offset: ``[d]`` rectifier (``MultiBit.rectifier``).
        adjacency: KProp's step matrix (:meth:`KProp.adjacency`).
        steps: ``K``.
    """

    def __init__(self, codes: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor,
                 adjacency: SparseAdjacency, steps: int) -> None:
        self.steps = check_steps(steps)
        coo = (codes if codes.is_sparse else codes.to_sparse()).coalesce()
        with quiet_sparse():
            self.codes = torch.sparse_coo_tensor(
                coo.indices(), coo.values().float(), coo.shape
            ).coalesce().to_sparse_csr()
        self._step = adjacency
        self.scale, self.offset = scale.float(), offset.float()
        self.shape = torch.Size(codes.shape)
        self.device = codes.device
        self._reach = self.propagate(torch.ones(self.shape[0], 1, device=self.device))  # A^K 1
        self._dense: torch.Tensor | None = None
        #: the column z-score ``(1 / std, -mean / std)`` (:meth:`standardize`)
        self._z: tuple[torch.Tensor, torch.Tensor] | None = None

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def propagate(self, h: torch.Tensor) -> torch.Tensor:
        """``A^K h`` (differentiable in ``h``)."""
        for _ in range(self.steps):
            h = self._step.aggregate(h, "sum")
        return h

    def linear(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """``h @ weight.T + bias`` from the factors (and the column z-score, if any)."""
        w = weight if self._z is None else weight * self._z[0]
        out = self.propagate(input_linear(self.codes, w * self.scale))
        out = out + self._reach * (w @ self.offset)
        if self._z is not None:
            out = out + weight @ self._z[1]
        return out if bias is None else out + bias

    def dense(self) -> torch.Tensor:
        """``h`` as a dense matrix (computed once)."""
        if self._dense is None:
            with torch.no_grad():
                h = self.propagate(self.codes.to_dense() * self.scale + self.offset)
                self._dense = h if self._z is None else h * self._z[0] + self._z[1]
        return self._dense

    def standardize(self) -> PropagatedCodes:
        """Column z-score ``(h - mean) / std`` (LPGNN's ``standardize``), kept factored as
        ``h diag(1/std) - 1 (mean/std)^T``; the statistics come from the dense ``h`` once."""
        if self._z is not None:
            raise RuntimeError("already standardized")
        h = self.dense()
        std = h.std(0).clamp_min(1e-12)
        self._z, self._dense = (1.0 / std, -h.mean(0) / std), None
        return self
