"""Non-private message-passing GNN (the "SAGE-inf" reference of thesis Table 4.2)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch_geometric.data import Data

from ..nn.backbone import BACKBONES, GNNBackbone, check_backbone
from .base import PrivateModule

__all__ = ["GNN"]


class GNN(PrivateModule):
    """Full-batch GraphSAGE/GCN/GAT without any privacy protection (epsilon = inf), on the
    shared :class:`~lightning_dpgnn.nn.backbone.GNNBackbone` (ReLU, dropout).

    Args:
        conv: ``"sage"``, ``"gcn"`` or ``"gat"``.
        hidden: hidden width; layers: number of message-passing layers.
        dropout, lr, weight_decay: training settings.
    """

    card_method = "GraphSAGE / GCN without privacy protection"
    card_paper = (
        "Hamilton, Ying, Leskovec. Inductive Representation Learning on Large Graphs. NeurIPS "
        "2017"
    )

    def __init__(
        self,
        conv: str = "sage",
        num_features: int | None = None,
        num_classes: int | None = None,
        hidden: int = 16,
        layers: int = 2,
        dropout: float = 0.5,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
    ) -> None:
        super().__init__(
            "none", None, "auto", levels=("none",), lr=lr, weight_decay=weight_decay
        )
        self.save_hyperparameters()
        if conv not in BACKBONES:
            raise ValueError(f"conv must be one of {BACKBONES}, got {conv!r}")
        self.net: nn.Module | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.net = GNNBackbone(
            check_backbone(hp.conv), num_features, hp.hidden, num_classes, hp.layers,
            dropout=hp.dropout, activation="relu",
        )

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.net(x, edge_index)

    def _logits(self, data: Data) -> torch.Tensor:
        return self(data.x, data.edge_index)

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        return self(graph.x, graph.edge_index)
