"""Averaging the predictions of several independently initialised heads."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LogProbEnsemble"]


class LogProbEnsemble(nn.Module):
    """``M`` members with the same inputs; the output is the mean of their log-probabilities
    (with ``M = 1``: the member's log-softmax)."""

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = nn.ModuleList(members)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        logp = [F.log_softmax(m(*inputs), dim=-1) for m in self.members]
        return torch.stack(logp).mean(0)
