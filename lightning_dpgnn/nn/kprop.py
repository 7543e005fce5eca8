"""KProp: K linear aggregation steps without self-loops (thesis Alg. 3, LPGNN): with the GCN
aggregator, ``(D^{-1/2} A D^{-1/2})^K x`` over the graph's edges without self-loops (a self-loop
would count a node's own noise again at every step); isolated nodes get 0."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch_geometric.utils import add_self_loops, degree, remove_self_loops

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
    """The ``[N, N]`` matrix of one aggregation step (per edge ``u -> v``: ``1 / sqrt(deg(u)
    deg(v))``, ``1 / deg(v)`` or 1) without self-loops, plus one per node if ``self_loops``."""
    if aggr not in AGGREGATORS:
        raise ValueError(f"aggr must be one of {AGGREGATORS}, got {aggr!r}")
    edge_index, _ = remove_self_loops(edge_index)
    if self_loops:
        edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
    src, dst = edge_index
    deg = degree(dst, num_nodes, dtype=torch.float32)
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
    """``K = steps`` linear aggregation steps without self-loops (Alg. 3), differentiable in
    ``x``; ``cached`` keeps the adjacency of the last ``edge_index`` object."""

    def __init__(self, steps: int, aggr: Aggregator = "gcn", cached: bool = True) -> None:
        super().__init__()
        self.steps = check_steps(steps)
        if aggr not in AGGREGATORS:
            raise ValueError(f"aggr must be one of {AGGREGATORS}, got {aggr!r}")
        self.aggr = aggr
        self.cached = cached
        self._cache: tuple[torch.Tensor, int, SparseAdjacency] | None = None

    def adjacency(self, edge_index: torch.Tensor, num_nodes: int) -> SparseAdjacency:
        """The (cached) normalised adjacency of ``edge_index``, with its transpose."""
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
    """``h = A^K (S diag(scale) + 1 offset^T)`` kept factored: ``h W^T`` is computed as
    ``A^K (S (W diag(scale))^T) + (A^K 1) (W offset)^T``; :meth:`dense` builds ``h`` itself."""

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
        """Column z-score ``(h - mean) / std`` (LPGNN's ``standardize``), kept factored."""
        if self._z is not None:
            raise RuntimeError("already standardized")
        h = self.dense()
        std = h.std(0).clamp_min(1e-12)
        self._z, self._dense = (1.0 / std, -h.mean(0) / std), None
        return self
