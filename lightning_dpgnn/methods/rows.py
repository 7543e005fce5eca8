"""Training on per-node input rows (MLP, DP-MLP, DPGNN and the stages of GAP, ProGAP and
PoinDP): one full batch, or Poisson batches with DP-SGD. :class:`RowTrainer`
(``module.row_trainer``) holds the training-row cache, Poisson loaders, the DP optimizer of the
run now training, ghost-clipping ``backward`` and the trainer settings DP-SGD accounting cannot
live with; what a step *costs* is declared by ``PrivateModule.dpsgd_phase``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.data import Data

from ..nn.mlp import compact_features, select_rows
from ..privacy.accountant import PrivacyAccountant
from ..privacy.dpsgd import DPSGDPhase, GhostDPOptimizer, ghost_backward, row_loader
from .arguments import check_arguments
from .metrics import accuracy, cross_entropy, logs_metrics

__all__ = ["RowTrainer", "check_noise_arguments"]

#: generator streams under an explicit ``noise_seed``: Poisson batches of epoch ``e``, the
#: gradient noise of DP-SGD run ``i`` (aggregations use the small streams ``0..K``)
BATCH_STREAM, GRADIENT_STREAM = 1_000, 2_000_000


def check_noise_arguments(epsilon: float | None, noise_multiplier: float | None) -> None:
    """Refuse a DP-SGD fit with neither a target epsilon nor a fixed noise multiplier."""
    if epsilon is None and noise_multiplier is None:
        raise ValueError("give epsilon (to calibrate the noise) or a fixed noise_multiplier")
    check_arguments({"noise_multiplier": noise_multiplier})


class RowTrainer:
    """The row-training component of a private model: ``dpsgd`` when any training step is a
    DP-SGD step; ``phase``: the fit's one DP-SGD phase when the whole fit is one (DP-MLP,
    DPGNN), whose steps the lifecycle plans (:meth:`plan`)."""

    def __init__(
        self, module: Any, *, dpsgd: bool = False, phase: DPSGDPhase | None = None
    ) -> None:
        self.module = module
        self.phase = phase
        self.dpsgd = dpsgd or phase is not None
        #: ``(GradSampleModule, optimizer)`` of the DP-SGD run now training (``None``: none)
        self.dp_training: tuple[Any, Any] | None = None
        self._loss_per_sample: torch.Tensor | None = None
        self.reset()

    def reset(self) -> None:
        """Forget cached rows and feature forms (when a fit starts and ends)."""
        self.clear_rows()
        self._features: tuple[torch.Tensor, torch.Tensor] | None = None

    def clear_rows(self) -> None:
        """Forget cached rows (the inputs they were gathered from were replaced)."""
        self._rows: dict[str, tuple[Any, tuple[torch.Tensor, ...]]] = {}

    # -- rows and loaders --------------------------------------------------------------------
    def node_rows(
        self,
        key: Any,
        data: Data,
        tensors: Callable[[], tuple[torch.Tensor, ...]],
        split: str = "train",
        *,
        compact: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """Rows of ``tensors()`` at ``data.<split>_mask`` plus their labels, gathered once per
        ``key``, split and graph. ``compact=True`` (never under DP-SGD) stores wide one-hot
        rows as sparse CSR."""
        cache_key = (key, id(data), data.num_nodes, compact)
        cached = self._rows.get(split)
        if cached is None or cached[0] != cache_key:
            m = getattr(data, f"{split}_mask")
            rows = tuple(select_rows(t, m) for t in tensors())  # sparse features too
            if compact:
                rows = tuple(compact_features(r) for r in rows)
            self._rows[split] = cached = (cache_key, (*rows, data.y[m]))
        return cached[1]

    def input_features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for a full-graph forward pass: a cached CSR copy when it is wide one-hot."""
        if self._features is None or self._features[0] is not x:
            self._features = (x, compact_features(x))
        return self._features[1]

    def sparse_as_csr(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for an eval-mode forward pass: sparse COO features as their cached CSR copy."""
        return self.input_features(x) if x.layout == torch.sparse_coo else x

    def loader(
        self,
        rows: tuple[torch.Tensor, ...],
        phase: DPSGDPhase | None = None,
        shard: tuple[int, int, int] | None = None,
        batch_size: int | None = None,
    ) -> torch.utils.data.DataLoader:
        """One full batch of ``rows`` (or shuffled batches of ``batch_size``), or with ``phase``
        one epoch of Poisson batches from the fit's noise generator; ``shard=(start, stop,
        total)``: ``rows`` are this rank's global rows ``start..stop-1`` of ``total``."""
        if phase is None:
            return row_loader(*rows, shard=shard, batch_size=batch_size)
        module = self.module
        gen = module.noise_generator(BATCH_STREAM + module.trainer.current_epoch)
        return phase.loader(*rows, generator=gen, shard=None if shard is None else shard[:2])

    # -- optimizers ----------------------------------------------------------------------------
    def optimizer(
        self,
        phase: DPSGDPhase | None,
        net: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        run: int = 0,
    ) -> torch.optim.Optimizer:
        """``optimizer`` as is (``phase=None``), or wrapped for DP-SGD run ``run`` of the fit
        (per-sample clipping, noise, steps recorded on the accountant)."""
        if phase is None:
            self.dp_training = None
            return optimizer
        module = self.module
        gen = module.noise_generator(GRADIENT_STREAM + run)
        self.dp_training = phase.wrap(
            net, optimizer, module.noise_multiplier, module.accountant, gen
        )
        return self.dp_training[1]

    # -- the fit's one DP-SGD phase (DP-MLP, DPGNN) --------------------------------------------
    def plan(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """The remaining steps of :attr:`phase` (without a target: as many as the trainer will
        run; ``False``: open-ended)."""
        if self.phase is None:
            return True
        module = self.module
        steps = self.phase.total_steps
        if module.target_epsilon is None:  # as many as the trainer will run
            epochs = module.trainer.max_epochs if module._trainer is not None else None
            if epochs is None or epochs < 0:
                return False
            steps = epochs * self.phase.steps_per_epoch
        done = module.accountant.total_count(self.phase.name)
        self.phase.plan(accountant, noise_multiplier, max(0, steps - done))
        return True

    # -- steps ---------------------------------------------------------------------------------
    def sync_gradients(self, trainer: Any) -> None:
        """Under DDP, DDP's own averaging of unclipped gradients is off for a DP-SGD step (the
        DP optimizer clips, noises once and all-reduces)."""
        model = trainer.strategy.model
        if isinstance(model, DistributedDataParallel):
            model.require_backward_grad_sync = self.dp_training is None

    def step(self, net: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Cross-entropy on a batch of (*input rows, labels); empty Poisson batches give 0."""
        *inputs, y = batch
        logits = net(*inputs)
        self._loss_per_sample = cross_entropy(logits, y, reduction="none")  # ghost clipping
        if len(y) == 0:  # still a forward pass through the GradSampleModule, loss 0
            return logits.sum() * 0.0
        loss = self._loss_per_sample.mean()
        module = self.module
        if not logs_metrics(module, "train"):
            return loss  # node level: batch loss/accuracy on private labels are not released
        module.log("train/loss", loss, batch_size=len(y), on_step=False, on_epoch=True)
        acc = accuracy(logits, y)
        module.log("train/acc", acc, batch_size=len(y), on_step=False, on_epoch=True)
        return loss

    def backward(self, loss: torch.Tensor) -> bool:
        """Ghost clipping when a ghost-clipped DP-SGD run is training (``False``: not done)."""
        dp = self.dp_training
        if dp is None or not isinstance(dp[1], GhostDPOptimizer):
            return False
        if self._loss_per_sample is None:
            raise RuntimeError("ghost clipping needs the per-sample losses of the batch")
        ghost_backward(dp[0], dp[1], self._loss_per_sample)
        self._loss_per_sample = None
        return True

    # -- enforce -------------------------------------------------------------------------------
    def refused_settings(self, trainer: Any) -> list[str]:
        """The Trainer settings that break DP-SGD accounting (none without DP-SGD)."""
        if not self.dpsgd:
            return []
        bad = []
        if getattr(trainer, "accumulate_grad_batches", 1) != 1:
            bad.append(
                f"accumulate_grad_batches={trainer.accumulate_grad_batches}: several Poisson "
                "batches would go into one noised step accounted as one batch"
            )
        if getattr(trainer, "overfit_batches", 0):
            bad.append(
                f"overfit_batches={trainer.overfit_batches}: the same batches would be replayed "
                "instead of fresh Poisson samples"
            )
        limit = getattr(trainer, "limit_train_batches", 1.0)
        if limit is not None and not (isinstance(limit, float) and limit == 1.0):
            bad.append(
                f"limit_train_batches={limit}: epochs would be cut short of the calibrated plan "
                "of Poisson-sampled steps"
            )
        return bad
