"""The GraphSAGE of the GAP paper's baselines (SAGE-inf, EdgeRand; thesis §4.7.3): pre-MLP ->
GraphSAGE (sum) convolutions -> jumping knowledge over the pre-MLP's and every convolution's
output -> post-MLP."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .backbone import GNNBackbone, SparseAdjacency
from .combine import Combine
from .mlp import MLP

__all__ = ["SAGENet"]


class SAGENet(nn.Module):
    """GraphSAGE with sum aggregation, pre/post MLPs and jumping knowledge (``jk``: ``"cat"``,
    ``"sum"`` or ``"attn"``); ``block``: :class:`~lightning_dpgnn.nn.mlp.MLP` options."""

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, layers: int = 2, *, pre_layers: int = 2,
        post_layers: int = 1, jk: str = "cat", **block: Any,
    ) -> None:
        super().__init__()
        self.pre = MLP(in_dim, hidden, hidden, pre_layers, plain_last=False, **block)
        self.body = GNNBackbone(
            "sage", self.pre.out_dim, hidden, hidden, layers, plain_last=False, aggr="sum", **block
        )
        self.jk = Combine(jk, layers + 1, hidden)
        self.post = MLP(self.jk.out_dim, out_dim, hidden, post_layers, **block)

    def adjacency(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor | SparseAdjacency:
        """The graph in the fastest form :meth:`forward` takes (see GNNBackbone.adjacency)."""
        return self.body.adjacency(edge_index, num_nodes, with_transpose=True)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h0 = self.pre(x)
        h = [h0, *self.body.layer_outputs(h0, edge_index)]
        return self.post(self.jk(torch.stack(h, dim=1)))
