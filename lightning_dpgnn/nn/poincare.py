"""Networks of PoinDP (``docs/poindp.md``): :class:`PoincareEncoder`, an MLP mapped onto the
Poincaré ball, and :class:`PaperCodeNet`, the network of the authors' released code for the NOT
private paper-code reference mode."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from .. import hyperbolic as H
from .mlp import MLP

__all__ = ["PoincareEncoder", "PaperCodeNet", "clip_norm"]


def clip_norm(t: torch.Tensor, clip: float) -> torch.Tensor:
    """Every row of ``t`` scaled down to L2 norm at most ``clip`` (differentiable)."""
    norm = torch.linalg.vector_norm(t, dim=-1, keepdim=True).clamp_min(H.MIN_NORM)
    return t * (clip / norm).clamp(max=1.0)


class PoincareEncoder(nn.Module):
    """Node features to points of the Poincaré ball (curvature ``c``), with a classification
    head on the tangent vectors clipped to norm ``clip`` for pre-training."""

    def __init__(
        self, in_dim: int, dim: int, num_classes: int, layers: int, clip: float,
        curvature: float, **mlp,
    ) -> None:
        super().__init__()
        self.clip, self.curvature = float(clip), float(curvature)
        self.mlp = MLP(in_dim, dim, dim, layers, plain_last=True, **mlp)
        self.head = nn.Linear(dim, num_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Points of the ball: ``exp_0`` of the MLP's output."""
        return H.expmap0(self.mlp(x), self.curvature)

    def tangent(self, x: torch.Tensor) -> torch.Tensor:
        """``clip_C(log_0(embed(x))) / C``: the clipped tangent vectors, in units of ``C``."""
        return clip_norm(H.logmap0(self.embed(x), self.curvature), self.clip) / self.clip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.tangent(x))


def _sensitivity_net(width: int) -> nn.Sequential:
    """The code's per-layer "sensitivity" network on a node's 2-D Poincaré weights."""
    return nn.Sequential(
        nn.Linear(2, width, bias=False), nn.LeakyReLU(0.2), nn.Linear(width, width)
    )


class PaperCodeNet(nn.Module):
    """The authors' model (paper-code reference mode): ``forward`` returns the two branches'
    logits, ``[2, N, C]``; the noise-scale networks of :meth:`sigmas` are frozen."""

    def __init__(self, in_dim: int, num_classes: int, hidden: int = 16, dropout: float = 0.6):
        super().__init__()
        self.dropout = float(dropout)
        self.branches = nn.ModuleList(
            nn.ModuleList([GCNConv(in_dim, hidden), GCNConv(hidden, num_classes)]) for _ in range(2)
        )
        self.sensitivity = nn.ModuleList(
            nn.ModuleList([_sensitivity_net(hidden), _sensitivity_net(num_classes)])
            for _ in range(2)
        )
        self.allocate = nn.Sequential(
            nn.Linear(hidden + num_classes, 128), nn.Linear(128, 1, bias=False)
        )
        for module in (self.sensitivity, self.allocate):
            for p in module.parameters():
                p.requires_grad_(False)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        out = []
        for first, second in self.branches:
            h = F.dropout(F.elu(first(x, edge_index)), p=self.dropout, training=self.training)
            out.append(second(h, edge_index))
        return torch.stack(out)

    @torch.no_grad()
    def sigmas(self, weights: torch.Tensor, epsilon: float) -> torch.Tensor:
        """``[2, N]``: the code's ``sqrt(aware / (2 gamma epsilon))`` per branch and node, from
        the nodes' 2-D Poincaré weights ``[N, 2]`` (a negative ``aware``: 0, the code's NaN)."""
        inputs = (weights, weights + torch.pi * (weights < 0).to(weights.dtype))
        per_branch = [
            torch.cat([F.leaky_relu(net(w)) for net in nets], dim=1)
            for nets, w in zip(self.sensitivity, inputs, strict=True)
        ]  # each [N, hidden + C]
        stacked = torch.stack(per_branch, dim=1)  # [N, 2, hidden + C]
        gamma = torch.softmax(F.leaky_relu(self.allocate(stacked)).mean(dim=0), dim=0)  # [2, 1]
        aware = stacked.sum(dim=2).t()  # [2, N]
        return torch.sqrt((aware / (2 * gamma * float(epsilon))).clamp_min(0.0))
