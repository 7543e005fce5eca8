"""DP-SGD on top of opacus, with our noise source and our ledger.

:func:`make_private` wraps a module for per-sample clipping (classic, or ghost clipping) and
the optimizer in an opacus subclass that draws its noise through
:mod:`lightning_dpgnn.privacy.random` and records every step on our :class:`PrivacyAccountant`.
:class:`PoissonBatchSampler` draws the Poisson batches the subsampled-Gaussian analysis assumes
(thesis Theorem 5), empty ones included: an empty batch is still a noised, recorded step. Under
DDP each rank clips its rows, rank 0 alone adds the noise and the global rows are sampled once,
so the update, rate and ledger are one process's.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from opacus import GradSampleModule
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.grad_sample.gsm_base import AbstractGradSampleModule
from opacus.optimizers import DistributedDPOptimizer as _OpacusDistributedDPOptimizer
from opacus.optimizers import DPOptimizer as _OpacusDPOptimizer
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.optimizers.ddpoptimizer_fast_gradient_clipping import (
    DistributedDPOptimizerFastGradientClipping,
)
from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
from opacus.validators import ModuleValidator

from . import random as dprandom
from .accountant import PrivacyAccountant, is_count
from .distributed import all_reduce_sum, broadcast_from_first, process_group

__all__ = [
    "DPOptimizer", "GhostDPOptimizer", "DistributedDPOptimizer", "DistributedGhostDPOptimizer",
    "PoissonBatchSampler", "ghost_backward", "grad_sample_module", "unwrap", "assert_dp_compatible",
    "make_private", "NotDPCompatibleError", "DPSGDPhase", "record_steps", "row_loader",
]


class NotDPCompatibleError(ValueError):
    """The module cannot be trained with per-sample gradient clipping."""


def assert_dp_compatible(module: torch.nn.Module, where: str = "model") -> None:
    """Raise if ``module`` cannot be trained with DP-SGD: BatchNorm mixes the samples of a
    batch, so per-sample clipping would no longer bound one node's influence."""
    bn = [
        name
        for name, m in module.named_modules()
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
    ]
    if bn:
        raise NotDPCompatibleError(
            f"{where} contains BatchNorm ({', '.join(n or '<root>' for n in bn)}), which is not "
            "allowed under node-level DP: it mixes samples within a batch, so per-sample "
            "gradient clipping no longer bounds one node's influence. Use normalization='layer' "
            "or 'group' (or 'none') instead."
        )
    errors = ModuleValidator.validate(module, strict=False)
    if errors:
        raise NotDPCompatibleError(
            f"{where} cannot be trained with DP-SGD: " + "; ".join(str(e) for e in errors)
        )


def record_steps(
    accountant: PrivacyAccountant,
    name: str,
    noise_multiplier: float,
    sample_rate: float,
    max_grad_norm: float,
    steps: int,
    group_size: int | None = None,
) -> None:
    """Record ``steps`` DP-SGD steps: plain subsampled Gaussians, or (``group_size`` given: one
    unit changes up to that many per-sample terms, DPGNN) graph subsampled Gaussians."""
    note = "" if group_size is None else (
        f"one node changes up to {group_size} clipped terms (Daigavane et al. 2021)"
    )
    accountant.add_subsampled_gaussian(
        name, noise_multiplier, sample_rate, steps=steps, sensitivity=max_grad_norm, note=note,
        group_size=group_size,
    )


class _LedgerNoise:
    """Our noise source and ledger hook, shared by both opacus optimizer flavours."""

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        sample_rate: float,
        accountant: PrivacyAccountant,
        name: str = "dpsgd",
        group_size: int | None = None,
        **opacus,
    ) -> None:
        """``opacus``: noise_multiplier, max_grad_norm, expected_batch_size and generator."""
        super().__init__(optimizer, loss_reduction="mean", **opacus)
        self.sample_rate = float(sample_rate)
        self.accountant = accountant
        self.ledger_name = name
        self.group_size = group_size
        self.clipped = False  # ghost clipping: set by ghost_backward, cleared by each step
        self.attach_step_hook(_LedgerNoise._record_step)

    @staticmethod
    def _record_step(opt: _LedgerNoise) -> None:
        opt.accountant.mark_reproducible(opt.generator)
        record_steps(
            opt.accountant, opt.ledger_name, opt.noise_multiplier, opt.sample_rate,
            opt.max_grad_norm, 1, opt.group_size,
        )

    def add_noise(self) -> None:
        """Noise of std ``noise_multiplier * max_grad_norm`` on the clipped sum — on rank 0
        only under DDP, so the sum over ranks holds it exactly once (opacus' distributed
        optimizers' rule)."""
        std = self.noise_multiplier * self.max_grad_norm
        draws = getattr(self, "rank", 0) == 0
        for p in self.params:
            _check_processed_flag(p.summed_grad)
            grad = p.summed_grad
            if draws:
                grad = grad + dprandom.normal(
                    grad.shape, std, generator=self.generator, dtype=grad.dtype, device=grad.device
                )
            p.grad = grad.view_as(p)
            _mark_as_processed(p.summed_grad)


class DPOptimizer(_LedgerNoise, _OpacusDPOptimizer):
    """opacus' DPOptimizer with noise from our (secure-switchable) source, recording every
    step on ``accountant`` as ``name`` (:func:`record_steps`); built by :func:`make_private`."""

    def pre_step(self, closure=None):  # noqa: D401 - opacus signature
        if self.grad_samples is None or len(self.grad_samples) == 0:
            # opacus would silently take a noise-free step here; under DP that is never right
            raise RuntimeError(
                "DP-SGD step without per-sample gradients: the forward pass did not run through "
                "the GradSampleModule (even an empty Poisson batch must go through it)."
            )
        return super().pre_step(closure)


class GhostDPOptimizer(_LedgerNoise, DPOptimizerFastGradientClipping):
    """Ghost-clipping :class:`DPOptimizer`: ``p.grad`` already holds the clipped sum (from
    :func:`ghost_backward`); this adds our noise, scales, steps and records the step."""

    def pre_step(self, closure=None):  # noqa: D401 - opacus signature
        if not self.clipped or any(p.grad is None for p in self.params):
            # a plain loss.backward() fills p.grad with the *unclipped* gradient: never step on it
            raise RuntimeError(
                "DP-SGD step without a ghost-clipped gradient: the loss was not backpropagated "
                "with ghost_backward (a plain backward would skip the clipping)."
            )
        self.clipped = False
        return super().pre_step(closure)


class _OneAllReduce:
    """opacus' distributed ``reduce_gradients`` (sum over ranks, divided by the world size),
    as one all-reduce of the flattened gradients instead of one per parameter."""

    def reduce_gradients(self) -> None:
        grads = [p.grad for p in self.params if p.requires_grad]
        if not grads:
            return
        flat = all_reduce_sum(torch.cat([g.reshape(-1) for g in grads]))
        flat /= self.world_size
        for g, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
            g.copy_(part.view_as(g))


class DistributedDPOptimizer(_OneAllReduce, DPOptimizer, _OpacusDistributedDPOptimizer):
    """:class:`DPOptimizer` under DDP (opacus' semantics): each rank clips its samples, rank 0
    alone adds the noise, and every rank steps on the all-reduced single-process update (DDP's
    own gradient averaging must be off)."""


class DistributedGhostDPOptimizer(
    _OneAllReduce, GhostDPOptimizer, DistributedDPOptimizerFastGradientClipping
):
    """:class:`GhostDPOptimizer` under DDP; the same rule as :class:`DistributedDPOptimizer`."""


def grad_sample_module(
    module: torch.nn.Module, max_grad_norm: float, *, ghost: bool = True, where: str = "model"
) -> AbstractGradSampleModule:
    """Check ``module`` suits DP-SGD and wrap it for per-sample clipping: ghost clipping
    (:class:`GhostDPOptimizer`, :func:`ghost_backward`) or, ``ghost=False``, opacus' classic
    ``GradSampleModule`` (:class:`DPOptimizer`)."""
    assert_dp_compatible(module, where)
    if not ghost:
        return GradSampleModule(module)
    return GradSampleModuleFastGradientClipping(
        module, max_grad_norm=max_grad_norm, use_ghost_clipping=True, loss_reduction="mean"
    )


def unwrap(module: torch.nn.Module) -> torch.nn.Module:
    """The module inside a :func:`grad_sample_module` wrapper (itself when not wrapped)."""
    return module._module if isinstance(module, AbstractGradSampleModule) else module


def ghost_backward(
    module: GradSampleModuleFastGradientClipping,
    optimizer: GhostDPOptimizer,
    loss_per_sample: torch.Tensor,
) -> None:
    """Backward of a ghost-clipped batch: leaves ``sum_i c_i grad_i`` in ``p.grad`` (zero for
    an empty Poisson batch, whose step is still noised and recorded; opacus has no call for it,
    so the hooks' captures are reset here). Frozen parameters are left out of the norms."""
    module.trainable_parameters = [p for p in module.parameters() if p.requires_grad]
    if loss_per_sample.numel() == 0:
        optimizer.zero_grad(set_to_none=True)
        for p in module.trainable_parameters:
            p.grad = torch.zeros_like(p)
        for m in module.modules():  # drop the activations the empty forward captured
            if hasattr(m, "activations"):
                m.activations = []
            for p in m.parameters(recurse=False):
                if hasattr(p, "_forward_counter"):
                    p._forward_counter = 0
    else:
        DPTensorFastGradientClipping(module, optimizer, loss_per_sample, "mean").backward()
    optimizer.clipped = True


def make_private(
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    noise_multiplier: float,
    max_grad_norm: float,
    sample_rate: float,
    num_samples: int,
    accountant: PrivacyAccountant,
    name: str = "dpsgd",
    generator: torch.Generator | None = None,
    ghost: bool = False,
    group_size: int | None = None,
) -> tuple[AbstractGradSampleModule, DPOptimizer | GhostDPOptimizer]:
    """Wrap ``module``/``optimizer`` for DP-SGD whose steps are recorded in ``accountant``
    (:func:`record_steps`). A :func:`grad_sample_module` keeps its flavour, else ``ghost``
    chooses (ghost clipping backpropagates with :func:`ghost_backward`). Under DDP the
    optimizer is the distributed flavour; ``num_samples`` and ``sample_rate`` are global."""
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be > 0, got {max_grad_norm}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
    if isinstance(module, AbstractGradSampleModule):
        assert_dp_compatible(module._module, name)
        gsm = module
    else:
        gsm = grad_sample_module(module, max_grad_norm, ghost=ghost, where=name)
    ghost_gsm = isinstance(gsm, GradSampleModuleFastGradientClipping)
    if ghost_gsm:
        gsm.max_grad_norm = max_grad_norm
    world_size = process_group()[1]
    if world_size > 1:
        cls = DistributedGhostDPOptimizer if ghost_gsm else DistributedDPOptimizer
    else:
        cls = GhostDPOptimizer if ghost_gsm else DPOptimizer
    dp_opt = cls(
        optimizer,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        # under DDP each rank scales its share of the sum by ``B / world_size`` and the ranks'
        # shares are then averaged: ``(sum of clipped gradients + noise) / B`` either way
        expected_batch_size=max(1, round(sample_rate * num_samples)) / world_size,
        generator=generator,
        sample_rate=sample_rate,
        accountant=accountant,
        name=name,
        group_size=group_size,
    )
    return gsm, dp_opt


class PoissonBatchSampler(torch.utils.data.DistributedSampler):
    """``steps`` (default ``round(1 / sample_rate)``) Poisson batches of row indices over
    ``num_samples`` rows. Under DDP rank 0 draws each batch over the *global* rows (what the
    ledger records) and broadcasts it; rank ``r`` yields every ``num_replicas``-th sampled row
    from the ``r``-th, or with ``shard=(start, stop)`` the sampled rows it holds (numbered from
    ``start``); every rank must iterate it in step."""

    def __init__(
        self,
        num_samples: int,
        sample_rate: float,
        steps: int | None = None,
        generator: torch.Generator | None = None,
        num_replicas: int = 1,
        rank: int = 0,
        shard: tuple[int, int] | None = None,
    ) -> None:
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        super().__init__(range(num_samples), num_replicas=num_replicas, rank=rank, shuffle=False)
        self.num_samples = int(num_samples)
        self.sample_rate = float(sample_rate)
        self.steps = int(steps) if steps is not None else max(1, round(1 / sample_rate))
        self.generator = generator
        if shard is not None and not 0 <= shard[0] <= shard[1] <= num_samples:
            raise ValueError(f"shard must be 0 <= start <= stop <= {num_samples}, got {shard}")
        self.shard = shard

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        p = torch.full((self.num_samples,), self.sample_rate, dtype=torch.float64)
        for _ in range(self.steps):
            if self.rank == 0:
                mask = dprandom.bernoulli(p, generator=self.generator)
            else:
                mask = torch.zeros(self.num_samples, dtype=torch.bool)
            if self.num_replicas > 1:
                mask = broadcast_from_first(mask.to(torch.uint8)).bool()
            if self.shard is not None:
                yield mask[self.shard[0] : self.shard[1]].nonzero().flatten().tolist()
            else:
                yield mask.nonzero().flatten()[self.rank :: self.num_replicas].tolist()


class _Rows(torch.utils.data.Dataset):
    """Row-indexable tensors; ``__getitems__`` keeps empty Poisson batches well-shaped."""

    def __init__(self, *tensors: torch.Tensor) -> None:
        n = {len(t) for t in tensors}
        if len(n) != 1:
            raise ValueError("all tensors must have the same number of rows")
        self.tensors = tensors

    def __len__(self) -> int:
        return len(self.tensors[0])

    def __getitem__(self, i: int | list[int]):
        if isinstance(i, list):  # a batch of a sampler that yields batches (Poisson)
            return self.__getitems__(i)
        return tuple(t[i] for t in self.tensors)

    def __getitems__(self, idx: list[int]):
        if len(idx) == len(self) and (not idx or (idx[0] == 0 and idx[-1] == len(self) - 1)):
            return tuple(  # the full batch: no copy (sparse COO features: dense rows)
                t.to_dense() if t.layout == torch.sparse_coo else t for t in self.tensors
            )
        index = torch.as_tensor(idx, dtype=torch.long)
        return tuple(_take_rows(t, index) for t in self.tensors)


def _take_rows(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows ``index`` of ``t`` on its device: sparse CSR rows through COO (which selects rows),
    sparse COO rows dense (as per-sample gradients need)."""
    index = index.to(t.device)
    if t.layout == torch.sparse_coo:
        return t.index_select(0, index).to_dense()
    if t.layout == torch.sparse_csr:
        return t.to_sparse_coo().index_select(0, index).to_sparse_csr()
    return t[index]


def _identity(batch):
    return batch


def row_loader(
    *tensors: torch.Tensor,
    sample_rate: float | None = None,
    steps: int | None = None,
    generator: torch.Generator | None = None,
    shard: tuple[int, int, int] | None = None,
    batch_size: int | None = None,
) -> torch.utils.data.DataLoader:
    """A loader over rows: Poisson batches when ``sample_rate`` is set
    (:class:`PoissonBatchSampler`), else one full batch that Lightning may shard under DDP
    (``batch_size``: shuffled batches, for rows whose training costs no privacy).
    ``shard=(start, stop, total)``: ``tensors`` are this rank's global rows ``start..stop-1``
    of ``total``; Poisson batches are still drawn over all ``total`` rows."""
    ds = _Rows(*tensors)
    if shard is not None and shard[1] - shard[0] != len(ds):
        raise ValueError(f"shard {shard[:2]} does not match the {len(ds)} rows given")
    if sample_rate is None:
        sampler, shuffle = None, batch_size is not None
        if shard is not None:
            sampler = torch.utils.data.DistributedSampler(ds, num_replicas=1, rank=0,
                                                          shuffle=shuffle)
            shuffle = False
        return torch.utils.data.DataLoader(ds, batch_size=batch_size or max(len(ds), 1),
                                           sampler=sampler, shuffle=shuffle,
                                           collate_fn=_identity)
    rank, world_size = process_group()
    total = len(ds) if shard is None else shard[2]
    sampler = PoissonBatchSampler(
        total, sample_rate, steps=steps, generator=generator, num_replicas=world_size,
        rank=rank, shard=None if shard is None else shard[:2],
    )
    return torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=None, collate_fn=_identity)


class DPSGDPhase:
    """One DP-SGD training run (DP-MLP, a GAP module, a ProGAP stage) of ``epochs`` passes
    of ``round(N / batch_size)`` Poisson batches at clipping norm ``max_grad_norm``: its plan,
    loader and wrapping. ``group_size``: see :func:`record_steps`."""

    def __init__(
        self,
        name: str,
        epochs: int,
        batch_size: int,
        max_grad_norm: float,
        group_size: int | None = None,
    ) -> None:
        if epochs < 0:
            raise ValueError(f"{name}: epochs must be >= 0, got {epochs}")
        if batch_size < 1:
            raise ValueError(f"{name}: batch_size must be >= 1, got {batch_size}")
        if max_grad_norm <= 0:
            raise ValueError(f"{name}: max_grad_norm must be > 0, got {max_grad_norm}")
        self.name, self.epochs, self.batch_size = name, int(epochs), int(batch_size)
        self.max_grad_norm = float(max_grad_norm)
        if group_size is not None and not is_count(group_size):
            raise ValueError(f"{name}: group_size must be an integer >= 1, got {group_size!r}")
        self.group_size = group_size
        self.num_samples = 0

    def bind(self, num_samples: int) -> DPSGDPhase:
        """Fix N, the number of private rows this phase trains on."""
        if num_samples < 1:
            raise ValueError(f"{self.name}: needs at least one training row")
        self.num_samples = int(num_samples)
        return self

    @property
    def sample_rate(self) -> float:
        if not self.num_samples:
            raise RuntimeError(f"{self.name}: call bind(num_samples) first")
        return min(1.0, self.batch_size / self.num_samples)

    @property
    def steps_per_epoch(self) -> int:
        return max(1, round(1.0 / self.sample_rate))

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    def plan(
        self, accountant: PrivacyAccountant, noise_multiplier: float, steps: int | None = None
    ) -> None:
        """Record this phase's (remaining) steps in a planning accountant."""
        n = self.total_steps if steps is None else steps
        if n > 0:
            record_steps(
                accountant, self.name, noise_multiplier, self.sample_rate, self.max_grad_norm,
                n, self.group_size,
            )

    def loader(
        self,
        *tensors: torch.Tensor,
        generator: torch.Generator | None = None,
        shard: tuple[int, int] | None = None,
    ):
        """One epoch of Poisson batches over the phase's ``num_samples`` rows (``shard``: the
        global rows ``tensors`` hold, see :func:`row_loader`)."""
        return row_loader(
            *tensors, sample_rate=self.sample_rate, steps=self.steps_per_epoch, generator=generator,
            shard=None if shard is None else (*shard, self.num_samples),
        )

    def wrap(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        noise_multiplier: float,
        accountant: PrivacyAccountant,
        generator: torch.Generator | None = None,
    ) -> tuple[AbstractGradSampleModule, DPOptimizer | GhostDPOptimizer]:
        return make_private(
            module, optimizer, noise_multiplier=noise_multiplier,
            max_grad_norm=self.max_grad_norm, sample_rate=self.sample_rate,
            num_samples=self.num_samples, accountant=accountant, name=self.name,
            generator=generator, group_size=self.group_size,
        )
