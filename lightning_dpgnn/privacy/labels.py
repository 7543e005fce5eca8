"""Local-DP label perturbation: generalized randomized response (thesis §3.4.3, eq. 3.39)."""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from . import random as R
from .accountant import LedgerEntry, PrivacyAccountant, check_epsilon
from .mechanism import LABELS, fields_repr

__all__ = ["RandomizedResponse"]


class RandomizedResponse:
    """Generalized randomized response over ``num_classes`` labels (thesis eq. 3.39; Kairouz et
    al. 2016): a node keeps its label with probability ``e^eps / (e^eps + c - 1)``, else reports
    one of the other ``c - 1`` classes uniformly. Epsilon-LDP: every column of the transition
    matrix varies by exactly ``e^eps``. ``epsilon=inf`` keeps every label (an infinite spend,
    thesis Table 3.2's ``epsilon_y = inf``)."""

    name: ClassVar[str] = "randomized_response"
    level: ClassVar[str] = "ldp"
    reads: ClassVar[tuple[str, ...]] = (LABELS,)

    def __init__(self, epsilon: float, num_classes: int) -> None:
        self.epsilon = check_epsilon(epsilon)
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        self.num_classes = num_classes

    @property
    def keep_probability(self) -> float:
        """``e^eps / (e^eps + c - 1)`` (eq. 3.39), computed as ``1 / (1 + (c-1) e^-eps)``."""
        return 1.0 / (1.0 + (self.num_classes - 1) * math.exp(-self.epsilon))

    @property
    def flip_probability(self) -> float:
        """Probability of each *specific* other class: ``1 / (e^eps + c - 1)`` (eq. 3.39)."""
        return math.exp(-self.epsilon) / (1.0 + (self.num_classes - 1) * math.exp(-self.epsilon))

    def transition_matrix(
        self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> torch.Tensor:
        """``P[i, j] = Pr[y' = j | y = i]`` (eq. 3.39), the ``p(y' | y)`` of Drop's forward
        correction (eq. 3.41)."""
        c = self.num_classes
        p = torch.full((c, c), self.flip_probability, dtype=torch.float64, device=device)
        p.fill_diagonal_(self.keep_probability)
        return p.to(dtype)

    def sample(self, y: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Randomize every label of ``y`` (class indices in ``[0, c)``) independently, recording
        nothing: an offset uniform in ``{1, ..., c-1}`` modulo ``c`` is uniform over the other
        classes. A ``LongTensor`` shaped like ``y``."""
        if not isinstance(y, torch.Tensor):
            raise TypeError(f"{self.name}: y must be a torch.Tensor, got {type(y).__name__}")
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise TypeError(
                f"{self.name}: y must be an integer (class index) tensor, got {y.dtype}"
            )
        y = y.to(torch.long)
        c = self.num_classes
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= c):
            bad = int(((y < 0) | (y >= c)).sum())
            raise ValueError(f"{self.name}: {bad} label(s) outside [0, {c}) (num_classes={c})")
        if math.isinf(self.epsilon):
            return y.clone()
        keep_p = torch.full(y.shape, self.keep_probability, dtype=torch.float64, device=y.device)
        keep = R.bernoulli(keep_p, generator=generator)
        u = R.uniform(tuple(y.shape), generator=generator, dtype=torch.float64, device=y.device)
        offset = 1 + torch.floor(u * (c - 1)).to(torch.long).clamp_(0, c - 2)
        return torch.where(keep, y, (y + offset) % c)

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> LedgerEntry:
        """Record ``count`` label collections (pure epsilon-LDP per node) on ``accountant``."""
        return accountant.add_pure(
            self.name, self.epsilon, count=count, note="randomized response labels (eq. 3.39)"
        )

    def __repr__(self) -> str:
        return fields_repr(self, "epsilon", "num_classes")
