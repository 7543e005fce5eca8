"""Empirical audit of DP-SGD (Nasr et al. 2021; docs/audits.md): gradient canaries on disjoint
coordinates of a linear model, so each coordinate of one run of the library's DP-SGD is one trial;
the statistic is the summed update along the canary's coordinate. No Lightning imports."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import astuple
from typing import Any

import numpy as np
import torch

from ..privacy import PrivacyAccountant
from ..privacy.dpsgd import ghost_backward, make_private, row_loader
from .audit import AuditResult, epsilon_lower_bound

__all__ = ["audit_dpsgd", "half_noise", "Wrap"]

#: ``make_private``'s signature: ``(module, optimizer, **options) -> (module, dp_optimizer)``
Wrap = Callable[..., tuple[torch.nn.Module, torch.optim.Optimizer]]

_CANARY_NORM = 10.0  # the canary's raw gradient norm, in units of the clipping norm


def half_noise(module: torch.nn.Module, optimizer: torch.optim.Optimizer, **options: Any):
    """A deliberately broken :func:`~lightning_dpgnn.privacy.dpsgd.make_private` that draws
    noise at ``z / 2`` but records ``z``, for checking :func:`audit_dpsgd`; never train with it."""
    gsm, opt = make_private(module, optimizer, **options)
    z, draw = opt.noise_multiplier, opt.add_noise

    def add_noise() -> None:
        opt.noise_multiplier = z / 2
        try:
            draw()
        finally:
            opt.noise_multiplier = z

    opt.add_noise = add_noise
    return gsm, opt


def _summed_updates(
    rows: torch.Tensor, *, noise_multiplier: float, steps: int, sample_rate: float,
    max_grad_norm: float, ghost: bool, wrap: Wrap, accountant: PrivacyAccountant,
    noise_generator: torch.Generator | None, batch_generator: torch.Generator | None,
) -> np.ndarray:  # fmt: skip
    """One DP-SGD run on ``rows`` (one row per copy); the summed update per coordinate."""
    k = rows.size(1)
    net = torch.nn.Linear(k, 1, bias=False)
    torch.nn.init.zeros_(net.weight)
    lr = 1.0
    module, opt = wrap(
        net, torch.optim.SGD(net.parameters(), lr=lr), noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm, sample_rate=sample_rate, num_samples=len(rows),
        accountant=accountant, name="audit/dpsgd", generator=noise_generator, ghost=ghost,
    )  # fmt: skip
    loader = row_loader(rows, sample_rate=sample_rate, steps=steps, generator=batch_generator)
    with warnings.catch_warnings():  # the canary rows need no input gradient
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        for (batch,) in loader:
            _step(module, opt, batch, ghost)
    w = net.weight.detach().view(-1).double()
    return (w * opt.expected_batch_size / lr).numpy()


def _step(module: torch.nn.Module, opt: torch.optim.Optimizer, batch: torch.Tensor, ghost: bool):
    """One DP-SGD step on a batch of canary rows (loss ``-w . x`` per row)."""
    opt.zero_grad(set_to_none=True)
    loss_per_sample = -module(batch).view(-1)
    if ghost:
        ghost_backward(module, opt, loss_per_sample)
    else:
        (loss_per_sample.sum() * 0.0 if len(batch) == 0 else loss_per_sample.mean()).backward()
    opt.step()


def audit_dpsgd(
    noise_multiplier: float,
    *,
    steps: int = 1,
    sample_rate: float = 1.0,
    max_grad_norm: float = 1.0,
    trials: int = 100_000,
    copies: int = 2_000,
    delta: float = 1e-5,
    confidence: float = 0.95,
    ghost: bool = False,
    wrap: Wrap = make_private,
    noise_generator: torch.Generator | None = None,
    batch_generator: torch.Generator | None = None,
) -> AuditResult:
    """Audit the library's DP-SGD (``steps`` steps at ``noise_multiplier``, rate ``sample_rate``)
    against its ledger's epsilon for one sample, in runs of ``copies`` parallel canaries."""
    if trials < 8:
        raise ValueError(f"trials must be >= 8, got {trials}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    copies = max(4, min(int(copies), int(trials)))
    runs = -(-int(trials) // copies)
    canary = torch.eye(copies) * (_CANARY_NORM * max_grad_norm)
    opts: dict[str, Any] = dict(
        noise_multiplier=noise_multiplier, steps=steps, sample_rate=sample_rate,
        max_grad_norm=max_grad_norm, ghost=ghost, wrap=wrap,
        noise_generator=noise_generator, batch_generator=batch_generator,
    )  # fmt: skip
    scores: list[list[np.ndarray]] = [[], []]
    ledgers = []
    for _ in range(runs):
        for h, rows in enumerate((torch.zeros_like(canary), canary)):
            acc = PrivacyAccountant("node", delta)
            scores[h].append(_summed_updates(rows, accountant=acc, **opts))
            if acc.total_count() != steps:
                raise ValueError(
                    f"the DP-SGD run recorded {acc.total_count()} steps, it took {steps}"
                )
            ledgers.append(acc)
    # every run records the same plan: read epsilon once per distinct ledger
    distinct = {repr(a.ledger): a for a in ledgers}
    eps = max(a.epsilon(delta) for a in distinct.values())
    out_s = np.concatenate(scores[0])[:trials]
    in_s = np.concatenate(scores[1])[:trials]
    bound = epsilon_lower_bound(out_s, in_s, delta, confidence)
    unit = f"dpsgd-sample (q={sample_rate:g}, T={steps}{', ghost' if ghost else ''})"
    return AuditResult(unit, len(out_s), delta, confidence, eps, *astuple(bound))
