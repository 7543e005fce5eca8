"""Node membership inference on a model's posteriors (thesis §4.8.2; Shokri et al. 2017): an
attack MLP trained on a shadow model's sorted posteriors scores the target. Pure torch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torchmetrics.functional.classification import binary_auroc

from ..nn.mlp import MLP as MLPBlock

__all__ = [
    "AttackAUC", "attack_auc", "balanced_membership", "mean_ci", "membership_attack",
    "sorted_posteriors", "train_attack",
]


def sorted_posteriors(posteriors: torch.Tensor) -> torch.Tensor:
    """Each row's class probabilities in decreasing order (the attack's features)."""
    if posteriors.dim() != 2:
        shape = tuple(posteriors.shape)
        raise ValueError(f"posteriors must be [nodes, classes], got shape {shape}")
    return posteriors.float().sort(dim=-1, descending=True).values


def balanced_membership(
    members: torch.Tensor, nonmembers: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Node indices and 0/1 labels: as many members as non-members, drawn uniformly."""
    if members.dtype != torch.bool or nonmembers.dtype != torch.bool:
        raise ValueError("members and nonmembers must be boolean node masks")
    if bool((members & nonmembers).any()):
        raise ValueError("a node cannot be both a member and a non-member")
    pos, neg = members.nonzero().view(-1), nonmembers.nonzero().view(-1)
    k = min(len(pos), len(neg))
    if k < 2:
        raise ValueError(f"need at least 2 members and 2 non-members, got {len(pos)}/{len(neg)}")
    pos = pos[torch.randperm(len(pos), generator=generator)[:k]]
    neg = neg[torch.randperm(len(neg), generator=generator)[:k]]
    index = torch.cat([pos, neg])
    labels = torch.cat([torch.ones(k), torch.zeros(k)])
    return index, labels


def train_attack(
    features: torch.Tensor,
    labels: torch.Tensor,
    *,
    hidden: int = 64,
    layers: int = 3,
    epochs: int = 300,
    lr: float = 0.01,
    seed: int = 0,
) -> torch.nn.Module:
    """Train the attack classifier (full-batch Adam, BCE) on shadow samples, on one thread."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            net = MLPBlock(features.size(1), 1, hidden, layers, dropout=0.0, normalization="none")
            opt = torch.optim.Adam(net.parameters(), lr=lr)
            for _ in range(epochs):
                opt.zero_grad()
                F.binary_cross_entropy_with_logits(net(features).view(-1), labels).backward()
                opt.step()
        return net.eval()
    finally:
        torch.set_num_threads(threads)


def attack_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """AUC of ``scores`` (higher: "member" / "edge") against 0/1 ``labels``."""
    return float(binary_auroc(scores.detach().float().view(-1), labels.long().view(-1)))


def membership_attack(
    shadow_posteriors: torch.Tensor,
    shadow_members: torch.Tensor,
    shadow_nonmembers: torch.Tensor,
    target_posteriors: torch.Tensor,
    target_members: torch.Tensor,
    target_nonmembers: torch.Tensor,
    *,
    seed: int = 0,
    **attack_options,
) -> float:
    """One shadow-model attack: trained on the shadow's posteriors, its AUC on the target's."""
    gen = torch.Generator().manual_seed(seed)
    s_idx, s_lab = balanced_membership(shadow_members, shadow_nonmembers, gen)
    t_idx, t_lab = balanced_membership(target_members, target_nonmembers, gen)
    attack = train_attack(
        sorted_posteriors(shadow_posteriors[s_idx]), s_lab, seed=seed, **attack_options
    )
    with torch.no_grad():
        scores = attack(sorted_posteriors(target_posteriors[t_idx])).view(-1)
    return attack_auc(scores, t_lab)


def mean_ci(values, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0):
    """Mean and percentile-bootstrap confidence interval of the mean of ``values``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("no values")
    means = np.random.default_rng(seed).choice(v, size=(n_boot, v.size)).mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(v.mean()), float(lo), float(hi)


@dataclass(frozen=True)
class AttackAUC:
    """AUCs of an attack over repeats, with their mean and bootstrap CI."""

    attack: str
    aucs: tuple[float, ...]
    confidence: float = 0.95

    @property
    def mean(self) -> float:
        return mean_ci(self.aucs, self.confidence)[0]

    @property
    def ci(self) -> tuple[float, float]:
        _, lo, hi = mean_ci(self.aucs, self.confidence)
        return lo, hi

    def __str__(self) -> str:
        n = len(self.aucs)
        lo, hi = self.ci
        return f"{self.attack} AUC {self.mean:.2f} ± {(hi - lo) / 2:.2f} ({n} repeats)"
