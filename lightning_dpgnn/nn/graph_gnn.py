"""Graph-classification GNNs of GW-LDP (§4): a GCN (2 layers, 16, mean pool) and a GIN
(5 layers, 64, add pool, two linear layers), each exposing its node embeddings ``H``
(the last convolution's node outputs), which is what a client releases."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import BatchNorm, GCNConv, GINConv, global_add_pool, global_mean_pool

__all__ = ["GraphGCN", "GraphGIN", "graph_backbone", "BACKBONES"]

BACKBONES = ("gcn", "gin")


class GraphGCN(nn.Module):
    """GCNConv -> ReLU -> dropout -> GCNConv (= H) -> ReLU -> mean pool -> linear (the authors'
    ``classifier.GCN``: dropout 0 by default)."""

    def __init__(
        self, num_features: int, num_classes: int, hidden: int = 16, layers: int = 2,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        dims = [num_features] + [hidden] * layers
        self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.dropout = float(dropout)
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


class GraphGIN(nn.Module):
    """``layers`` GINConv blocks (Linear -> BatchNorm -> ReLU -> Linear -> ReLU; the last
    block's output = H) -> add pool -> linear -> ReLU -> dropout -> linear (the authors'
    ``classifier.GIN``: dropout 0.5 before the last linear)."""

    def __init__(
        self, num_features: int, num_classes: int, hidden: int = 64, layers: int = 5,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        self.convs = nn.ModuleList()
        for i in range(layers):
            mlp = nn.Sequential(
                nn.Linear(num_features if i == 0 else hidden, hidden), BatchNorm(hidden),
                nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            )
            self.convs.append(GINConv(mlp))
        self.lin1 = nn.Linear(hidden, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)
        self.dropout = float(dropout)

    def embed(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = conv(x, edge_index)
        return x

    def forward(self, x, edge_index, batch) -> torch.Tensor:
        h = global_add_pool(self.embed(x, edge_index), batch)
        h = nn.functional.dropout(self.lin1(h).relu(), self.dropout, self.training)
        return self.lin2(h)


def graph_backbone(
    name: str, num_features: int, num_classes: int, hidden: int | None = None,
    layers: int | None = None, dropout: float | None = None,
) -> nn.Module:
    """``"gcn"`` (defaults 16 hidden, 2 layers, dropout 0) or ``"gin"`` (64, 5, dropout 0.5)."""
    if name == "gcn":
        return GraphGCN(num_features, num_classes, hidden or 16, layers or 2,
                        0.0 if dropout is None else dropout)
    if name == "gin":
        return GraphGIN(num_features, num_classes, hidden or 64, layers or 5,
                        0.5 if dropout is None else dropout)
    raise ValueError(f"backbone must be one of {BACKBONES}, got {name!r}")
