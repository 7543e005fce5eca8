"""Combining per-hop embeddings: GAP's COMBINE (thesis Eq. 4.10) and ProGAP's JK."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Combine", "COMBINES"]

COMBINES = ("cat", "sum", "attn")


class Combine(nn.Module):
    """Combine ``[N, H, d]`` hop embeddings into ``[N, out_dim]`` by concatenation (``"cat"``),
    sum (``"sum"``) or softmax attention with a learned ``nn.Linear`` score (``"attn"``)."""

    def __init__(self, kind: str, num_hops: int, dim: int) -> None:
        super().__init__()
        if kind not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {kind!r}")
        self.kind, self.num_hops, self.dim = kind, num_hops, dim
        self.score = nn.Linear(dim, 1) if kind == "attn" else None

    @property
    def out_dim(self) -> int:
        return self.num_hops * self.dim if self.kind == "cat" else self.dim

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.kind == "cat":
            return h.reshape(h.shape[0], -1)
        if self.kind == "sum":
            return h.sum(dim=1)
        weights = torch.softmax(self.score(h), dim=1)  # [N, H, 1]
        return (weights * h).sum(dim=1)
