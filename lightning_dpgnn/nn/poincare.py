"""Networks of PoinDP (``docs/poindp.md``).

* :class:`PoincareEncoder` — an MLP into the tangent space at the origin, mapped onto the
  Poincaré ball by ``exp_0`` (the node embeddings the hyperbolic mechanism releases), and a
  linear head on the clipped tangent vector ``clip_C(log_0(e))`` for its pre-training on the
  training labels (HGCN's decoder: the tangent space at the origin).
* :class:`PaperCodeNet` — the network of the authors' released code, for the paper-code
  reference mode only (NOT differentially private): two parallel two-layer GCNs (hidden 16,
  ELU, dropout 0.6) whose logits are perturbed and summed, and the per-node noise scales of
  the code (:meth:`PaperCodeNet.sigmas`), computed by small networks that the code never
  trains (their outputs are detached), so they keep their random initialisation: frozen here.
"""

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
    """Node features to points of the Poincaré ball, with a classification head for
    pre-training.

    Args:
        in_dim: feature width; dim: embedding width (the ball's dimension); num_classes: classes
            of the head; layers: MLP layers; clip: the public tangent norm ``C``; curvature: ``c``.
        **mlp: :class:`~lightning_dpgnn.nn.mlp.MLP` options (dropout, normalization,
            activation).
    """

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
    """The authors' model (paper-code reference mode; module docstring).

    ``forward(x, edge_index)`` returns the two branches' logits, ``[2, N, C]`` ("inter" and
    "intra"; they differ only in the input of their noise-scale networks). :meth:`sigmas` is
    the code's ``sqrt(aware / (2 gamma epsilon))`` per branch and node, with ``aware`` the sum
    of the leaky-ReLU outputs of the branch's two sensitivity networks and ``gamma`` the
    softmax over branches of an ``allocate`` network's mean output. Those networks never
    receive a gradient in the code; here their parameters are frozen (``requires_grad``
    False) so they stay at their seeded random initialisation as well.
    """

    def __init__(self, in_dim: int, num_classes: int, hidden: int = 16, dropout: float = 0.6):
        super().__init__()
        self.dropout = float(dropout)
        self.branches = nn.ModuleList(
            nn.ModuleList([GCNConv(in_dim, hidden), GCNConv(hidden, num_classes)])
            for _ in range(2)
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
        """``[2, N]``: the code's noise scale of each branch and node, from the nodes' 2-D
        Poincaré weights ``[N, 2]``. The intra branch adds ``angle(w)`` to its input (``0`` or
        ``pi`` by sign on real numbers, as ``torch.angle``). A negative ``aware`` gives the
        code a NaN scale; it is 0 here (no noise on that node)."""
        inputs = (weights, weights + torch.pi * (weights < 0).to(weights.dtype))
        per_branch = [
            torch.cat([F.leaky_relu(net(w)) for net in nets], dim=1)
            for nets, w in zip(self.sensitivity, inputs, strict=True)
        ]  # each [N, hidden + C]
        stacked = torch.stack(per_branch, dim=1)  # [N, 2, hidden + C]
        gamma = torch.softmax(F.leaky_relu(self.allocate(stacked)).mean(dim=0), dim=0)  # [2, 1]
        aware = stacked.sum(dim=2).t()  # [2, N]
        return torch.sqrt((aware / (2 * gamma * float(epsilon))).clamp_min(0.0))
