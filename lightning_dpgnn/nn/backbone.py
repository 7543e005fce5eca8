"""Message-passing backbones (GraphSAGE, GCN, GAT) of the local-DP methods and the GNN baseline,
with sparse fast paths that give the same outputs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch_geometric.nn import GATConv, GCNConv, SAGEConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import coalesce, spmm, to_torch_csr_tensor

from ..caches import TensorCache
from .mlp import compact_features, input_linear, make_activation, make_norm

__all__ = ["GNNBackbone", "BACKBONES", "SAGE_AGGREGATIONS", "SparseAdjacency", "make_activation"]

BACKBONES = ("sage", "gcn", "gat")
SAGE_AGGREGATIONS = ("mean", "sum")

def check_backbone(backbone: str) -> str:
    if backbone not in BACKBONES:
        raise ValueError(f"backbone must be one of {BACKBONES}, got {backbone!r}")
    return backbone


class GNNBackbone(nn.Module):
    """``layers`` SAGE, GCN or GAT convolutions, each but a ``plain_last`` one followed by
    [norm ->] activation -> dropout (norm: ``normalization``, or ``batch_norm`` after the first)."""

    def __init__(
        self, backbone: str, in_dim: int, hidden: int, out_dim: int, layers: int = 2, *,
        dropout: float = 0.0, activation: str = "selu", heads: int = 4, batch_norm: bool = False,
        cached: bool = False, plain_last: bool = True, aggr: str = "mean",
        normalization: str | None = None,
    ) -> None:
        super().__init__()
        check_backbone(backbone)
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if heads < 1:
            raise ValueError(f"heads must be >= 1, got {heads}")
        if aggr not in SAGE_AGGREGATIONS:
            raise ValueError(f"aggr must be one of {SAGE_AGGREGATIONS}, got {aggr!r}")
        self.backbone = backbone
        self.dropout = dropout
        self.plain_last = plain_last
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        dim = in_dim
        for i in range(layers):
            last = i == layers - 1
            width = out_dim if last else hidden
            if backbone == "sage":
                conv: nn.Module = SAGEConv(dim, width, aggr=aggr)
            elif backbone == "gcn":
                conv = GCNConv(dim, width, cached=cached)
            else:
                conv = GATConv(dim, width, heads=1 if last else heads)
            self.convs.append(conv)
            dim = width * getattr(conv, "heads", 1)  # GAT concatenates its heads
            if not (last and plain_last):
                first = "batch" if batch_norm and i == 0 else "none"
                self.norms.append(make_norm(first if normalization is None else normalization, dim))
        self.act = make_activation(activation)

    @contextmanager
    def on_new_graph(self) -> Iterator[None]:
        """Run the body on another graph, keeping the GCN layers' cached normalisation."""
        saved = []
        for conv in self.convs:
            if isinstance(conv, GCNConv) and conv.cached:
                saved.append((conv, conv._cached_edge_index, conv._cached_adj_t))
                conv.cached, conv._cached_edge_index, conv._cached_adj_t = False, None, None
        try:
            yield
        finally:
            for conv, edge_index, adj_t in saved:
                conv.cached, conv._cached_edge_index, conv._cached_adj_t = True, edge_index, adj_t

    def adjacency(
        self, edge_index: torch.Tensor, num_nodes: int, *, with_transpose: bool = False
    ) -> torch.Tensor | SparseAdjacency:
        """The graph in the fastest form :meth:`forward` takes (the same output): a CSR ``A^T`` or
        :class:`SparseAdjacency` for GraphSAGE and GCN where they apply, else ``edge_index``."""
        if self.backbone == "gcn" and with_transpose:
            edges, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True)
            edges, weight = coalesce(edges, weight, num_nodes=num_nodes, reduce="sum")
            return SparseAdjacency.of(edges, num_nodes, weight)
        if self.backbone != "sage" or coalesce(edge_index, num_nodes=num_nodes).size(1) != (
            edge_index.size(1)
        ):
            return edge_index
        if with_transpose:
            return SparseAdjacency.of(edge_index, num_nodes)
        return to_torch_csr_tensor(edge_index.flip(0), size=(num_nodes, num_nodes))

    def layer_outputs(self, x: torch.Tensor, edge_index: torch.Tensor) -> list[torch.Tensor]:
        """The output of every layer (for jumping knowledge); the last is :meth:`forward`'s."""
        outs = []
        if _is_edge_list(edge_index) and self.backbone != "gat":  # once per edge tensor
            n = x.size(0)
            edge_index = _once(_GRAPHS, edge_index, (self.backbone, n),
                               lambda: self.adjacency(edge_index, n, with_transpose=True))
        if not isinstance(x, torch.Tensor):  # factored features (nn.kprop.PropagatedCodes)
            x = x if _takes_sparse(self.convs[0], edge_index) else x.dense()
        elif not x.requires_grad and _takes_sparse(self.convs[0], edge_index):
            compact = _once(_FEATURES, x, (), lambda: _SAME if (
                c := compact_features(x)) is x else c)
            x = x if compact is _SAME else compact
        for i, conv in enumerate(self.convs):
            x = _conv(conv, x, edge_index)
            if i < len(self.norms):
                x = self.act(self.norms[i](x))
                x = nn.functional.dropout(x, self.dropout, self.training)
            outs.append(x)
        return outs

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits; ``edge_index`` is ``[2, E]`` or what :meth:`adjacency` returned."""
        return self.layer_outputs(x, edge_index)[-1]


_GRAPHS = TensorCache("backbone graph", size=8)
_FEATURES = TensorCache("backbone compact features", size=8)
_SAME = object()  # cached: "the features are used as they are"


def _once(cache: TensorCache, t: torch.Tensor, key: tuple, make):
    """``make()``, cached for ``t`` under its in-place version and ``key``."""
    if t.is_inference():
        return make()
    key = (t._version, *key)
    value = cache.get(t, key)
    return value if value is not None else cache.put(t, key, make())


def _takes_sparse(conv: nn.Module, edge_index: torch.Tensor | SparseAdjacency) -> bool:
    """Whether ``_conv(conv, x, edge_index)`` computes with a CSR ``x``."""
    if isinstance(conv, GCNConv):
        return True
    return _narrowing_sage(conv) and (isinstance(edge_index, SparseAdjacency)
                                      or _is_csr(edge_index))


def _narrowing_sage(conv: nn.Module) -> bool:
    """A plain mean/sum GraphSAGE layer that narrows (it projects before it aggregates)."""
    return (
        isinstance(conv, SAGEConv)
        and conv.aggr in SAGE_AGGREGATIONS
        and not conv.project
        and not conv.normalize
        and conv.root_weight
        and conv.in_channels > conv.out_channels
    )


def _is_edge_list(edge_index: object) -> bool:
    return isinstance(edge_index, torch.Tensor) and edge_index.layout == torch.strided


def _is_csr(edge_index: object) -> bool:
    return isinstance(edge_index, torch.Tensor) and edge_index.layout == torch.sparse_csr


class SparseAdjacency:
    """A graph as two CSR matrices: ``adj_t`` (row ``i``: the in-neighbours of ``i``) for the
    aggregation and ``adj`` for its gradient, plus the in-degrees (mean aggregation)."""

    def __init__(self, adj_t: torch.Tensor, adj: torch.Tensor, in_degree: torch.Tensor) -> None:
        self.adj_t, self.adj, self.in_degree = adj_t, adj, in_degree

    @classmethod
    def of(cls, edge_index: torch.Tensor, num_nodes: int, weight: torch.Tensor | None = None
           ) -> SparseAdjacency:
        """The graph ``edge_index`` (``j -> i`` sends ``x_j`` to ``i``, times ``weight``)."""
        size = (num_nodes, num_nodes)
        deg = torch.bincount(edge_index[1], minlength=num_nodes).clamp(min=1)
        return cls(
            to_torch_csr_tensor(edge_index.flip(0), weight, size=size),
            to_torch_csr_tensor(edge_index, weight, size=size),
            deg.unsqueeze(-1).to(torch.get_default_dtype()),
        )

    def aggregate(self, x: torch.Tensor, reduce: str) -> torch.Tensor:
        """``sum_{j -> i} x_j`` (or the mean) for every node ``i``."""
        out = _SparseSum.apply(self.adj_t, self.adj, x)
        return out / self.in_degree.to(out.dtype) if reduce == "mean" else out


class _SparseSum(torch.autograd.Function):
    """``adj_t @ x`` whose backward is ``adj @ grad`` with the precomputed ``adj``."""

    @staticmethod
    def forward(ctx, adj_t: torch.Tensor, adj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.adj = adj
        return adj_t @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, ctx.adj @ grad


def _conv(
    conv: nn.Module, x: torch.Tensor, edge_index: torch.Tensor | SparseAdjacency
) -> torch.Tensor:
    """``conv(x, edge_index)``; a narrowing mean or sum GraphSAGE layer on a sparse adjacency
    projects before it aggregates (linear: the same output, a smaller sparse product)."""
    if isinstance(edge_index, SparseAdjacency):
        if isinstance(conv, GCNConv):  # the adjacency holds gcn_norm's weights
            out = edge_index.aggregate(input_linear(x, conv.lin.weight, conv.lin.bias), "sum")
            return out if conv.bias is None else out + conv.bias
        return _sage_on(conv, x, edge_index)
    if not (_narrowing_sage(conv) and _is_csr(edge_index)):
        return conv(x, edge_index)
    return _narrowing_sage_layer(conv, x, lambda left: spmm(edge_index, left, reduce=conv.aggr))


def _narrowing_sage_layer(conv: SAGEConv, x: torch.Tensor, aggregate) -> torch.Tensor:
    """``lin_l(aggr_j x_j) + lin_r(x)`` as ``aggr_j (x_j W_l^T) + x W_r^T`` plus the biases."""
    lin_l, lin_r = conv.lin_l, conv.lin_r
    left, right = input_linear(x, torch.cat([lin_l.weight, lin_r.weight])).split(
        conv.out_channels, dim=-1
    )
    out = aggregate(left) + right
    for lin in (lin_l, lin_r):
        if lin.bias is not None:
            out = out + lin.bias
    return out


def _sage_on(conv: SAGEConv, x: torch.Tensor, adj: SparseAdjacency) -> torch.Tensor:
    if conv.project or conv.normalize or not conv.root_weight or conv.aggr not in (
        SAGE_AGGREGATIONS
    ):
        raise ValueError("SparseAdjacency supports plain mean/sum GraphSAGE layers only")
    if conv.in_channels > conv.out_channels:
        return _narrowing_sage_layer(conv, x, lambda left: adj.aggregate(left, conv.aggr))
    return conv.lin_l(adj.aggregate(x, conv.aggr)) + conv.lin_r(x)
