"""Empirical privacy audit of DP-SGD: a lower bound on epsilon from gradient canaries.

Nasr et al. (2021) audit DP-SGD with a white-box adversary who inserts a *gradient canary* (a
sample whose clipped gradient is ``C`` times a coordinate direction no other sample touches)
and observes the trained parameters; Jagielski et al. (2020) turn the distinguishing test's
error rates into a Clopper-Pearson lower bound on epsilon (:func:`~lightning_dpgnn.attacks.
epsilon_lower_bound`). Here the training run is the library's own DP-SGD, exactly as DP-MLP and
the GAP/ProGAP stages run it: :func:`~lightning_dpgnn.privacy.dpsgd.make_private` (classic or
ghost clipping, our noise source, our ledger) and Poisson batches from
:func:`~lightning_dpgnn.privacy.dpsgd.row_loader`.

Trials run in parallel: the model is a linear map ``w in R^k`` (zero at start), and row ``i``
is copy ``i``'s canary, whose loss ``-M w_i`` (``M > C``) has the clipped gradient ``-C e_i``.
The copies share no coordinate, each row is Poisson-sampled independently and the noise is
drawn independently per coordinate, so coordinate ``i`` of one run is one trial of the
canary-in hypothesis (parallel composition: each canary is its own privacy unit). In the
canary-out run every row is the zero row, whose clipped gradient is zero: coordinate ``i``'s
output then has the distribution it has with canary ``i`` removed (the step's normalisation,
the expected batch size, is a constant of the run). The statistic is the summed update along
the canary's coordinate, ``(w_T - w_0)_i * B / lr`` (plain SGD: the sum over steps of the noisy
clipped gradient sums), the likelihood-ratio test for full-batch training.

With full batches (``sample_rate=1``) the sum is the optimal test and the bound comes close
to the accounted epsilon; with subsampling the sum test is weaker than the (tight) RDP
analysis, so the bound stays further below: still valid, less sharp.

No Lightning imports: a test bench for the DP-SGD the methods share.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
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
    """A deliberately broken :func:`~lightning_dpgnn.privacy.dpsgd.make_private`: its optimizer
    draws gradient noise at ``z / 2`` but records ``z`` on the ledger. It exists to check that
    :func:`audit_dpsgd` catches a mechanism that delivers less than it accounts (tests,
    ``benchmarks/audit_dpsgd.py``); never train with it."""
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
    rows: torch.Tensor,
    *,
    noise_multiplier: float,
    steps: int,
    sample_rate: float,
    max_grad_norm: float,
    ghost: bool,
    wrap: Wrap,
    accountant: PrivacyAccountant,
    noise_generator: torch.Generator | None,
    batch_generator: torch.Generator | None,
) -> np.ndarray:
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
    """Audit the library's DP-SGD (``steps`` noisy steps at ``noise_multiplier``, Poisson rate
    ``sample_rate``) against the epsilon its ledger records for one sample.

    Args:
        noise_multiplier: gradient noise std / clipping norm.
        steps: noisy steps of one run (one epoch is ``1 / sample_rate`` of them).
        sample_rate: Poisson sampling rate (``1``: every row in every batch).
        max_grad_norm: clipping norm C.
        trials: trials per hypothesis, run as ``ceil(trials / copies)`` runs of ``copies``
            parallel canaries (``copies`` bounds the per-sample gradient memory,
            ``copies^2`` floats).
        delta, confidence: as in :func:`~lightning_dpgnn.attacks.epsilon_lower_bound`.
        ghost: audit the ghost-clipping flavour (:class:`~lightning_dpgnn.privacy.dpsgd.
            GhostDPOptimizer`, what DP-MLP trains with) instead of materialised per-sample
            gradients.
        wrap: what turns the module and SGD into DP-SGD (default the library's
            :func:`~lightning_dpgnn.privacy.dpsgd.make_private`; a test passes a broken one).
        noise_generator, batch_generator: seeded generators make the audit reproducible
            (tests); ``None``: the mechanism's own entropy-seeded draws.
    """
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
    return AuditResult(
        unit, len(out_s), delta, confidence, eps, bound.epsilon, bound.threshold,
        bound.fpr_upper, bound.fnr_upper,
    )  # fmt: skip
