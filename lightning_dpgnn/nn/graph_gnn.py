"""Graph-classification GNNs of GW-LDP (§4): a GCN (2 layers, 16, mean pool) and a GIN
(5 layers, 64, add pool, two linear layers), each exposing its node embeddings ``H``
(the last convolution's node outputs), which is what a client releases."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import BatchNorm, GCNConv, GINConv, global_add_pool, global_mean_pool

__all__ = ["GraphGCN", "GraphGIN", "graph_backbone", "BACKBONES"]

BACKBONES = ("gcn", "gin")


class _GraphNet(nn.Module):

    def __init__(self, conv, num_features: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        dims = [num_features] + [hidden] * layers
        self.convs = nn.ModuleList(conv(a, b) for a, b in zip(dims, dims[1:], strict=False))
        self.dropout = float(dropout)


class GraphGCN(_GraphNet):
    """GCNConv -> ReLU -> dropout -> GCNConv (= H) -> ReLU -> mean pool -> linear."""

    def __init__(self, num_features: int, num_classes: int, hidden: int, layers: int,
                 dropout: float) -> None:
        super().__init__(GCNConv, num_features, hidden, layers, dropout)
        self.head = nn.Linear(hidden, num_classes)

    def embed(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x.relu(), self.dropout, self.training)
        return x

    def forward(self, x, edge_index, batch) -> torch.Tensor:
        h = self.embed(x, edge_index)
        return self.head(global_mean_pool(h.relu(), batch))


class GraphGIN(_GraphNet):
    """``layers`` GINConv blocks (the last one's output = H) -> add pool -> MLP head."""

    def __init__(self, num_features: int, num_classes: int, hidden: int, layers: int,
                 dropout: float) -> None:
        super().__init__(_gin_conv, num_features, hidden, layers, dropout)
        self.lin1 = nn.Linear(hidden, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)

    def embed(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = conv(x, edge_index)
        return x

    def forward(self, x, edge_index, batch) -> torch.Tensor:
        h = global_add_pool(self.embed(x, edge_index), batch)
        h = nn.functional.dropout(self.lin1(h).relu(), self.dropout, self.training)
        return self.lin2(h)


def _gin_conv(in_dim: int, out_dim: int) -> GINConv:
    return GINConv(nn.Sequential(
        nn.Linear(in_dim, out_dim), BatchNorm(out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim),
        nn.ReLU(),
    ))


#: backbone -> (class, default hidden width, layers, dropout), the authors' settings
_DEFAULTS = {"gcn": (GraphGCN, 16, 2, 0.0), "gin": (GraphGIN, 64, 5, 0.5)}


def graph_backbone(
    name: str, num_features: int, num_classes: int, hidden: int | None = None,
    layers: int | None = None, dropout: float | None = None,
) -> nn.Module:
    """``"gcn"`` (defaults 16 hidden, 2 layers, dropout 0) or ``"gin"`` (64, 5, dropout 0.5)."""
    if name not in _DEFAULTS:
        raise ValueError(f"backbone must be one of {BACKBONES}, got {name!r}")
    cls, default_hidden, default_layers, default_dropout = _DEFAULTS[name]
    return cls(num_features, num_classes, hidden or default_hidden, layers or default_layers,
               default_dropout if dropout is None else dropout)
