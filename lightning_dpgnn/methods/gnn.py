"""Non-private message-passing GNN (the "SAGE-inf" reference of thesis Table 4.2)."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, SAGEConv

from .base import PrivateModule

__all__ = ["GNN"]

_CONVS = {"sage": SAGEConv, "gcn": GCNConv}


class GNN(PrivateModule):
    """Full-batch GraphSAGE/GCN without any privacy protection (epsilon = inf).

    Args:
        conv: ``"sage"`` or ``"gcn"``.
        hidden: hidden width; layers: number of message-passing layers.
        dropout, lr, weight_decay: training settings.
    """

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
        if conv not in _CONVS:
            raise ValueError(f"conv must be one of {sorted(_CONVS)}, got {conv!r}")
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        self.convs: nn.ModuleList | None = None
        if num_features is not None and num_classes is not None:
            self._build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.hparams.update(num_features=int(num_features), num_classes=int(num_classes))
        dims = [num_features] + [hp.hidden] * (hp.layers - 1) + [num_classes]
        pairs = zip(dims[:-1], dims[1:], strict=True)
        self.convs = nn.ModuleList(_CONVS[hp.conv](a, b) for a, b in pairs)

    def setup(self, stage: str) -> None:
        if self.convs is None:
            data = self._datamodule_graph()
            self._build(data.num_features, int(data.y.max()) + 1)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x.relu(), self.hparams.dropout, self.training)
        return x

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self(data.x, data.edge_index), data, "train")

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self(data.x, data.edge_index), data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self(data.x, data.edge_index), data, "test")

    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self(data.x, data.edge_index).softmax(-1)
