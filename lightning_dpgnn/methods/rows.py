"""Training on per-node input rows: one full batch, or Poisson batches with DP-SGD.

The methods whose training step reads one row per training node — MLP, DP-MLP and the stages
of GAP and ProGAP — share this mixin; the methods that train on the whole graph (GNN, PGC,
LPGNN) do not carry it. It holds the DP-SGD *training* plumbing: the training-row cache, Poisson
loaders, the DP optimizer of the run now training, ghost-clipping ``backward`` and the trainer
settings DP-SGD accounting cannot live with. What a DP-SGD step *costs* is declared to the
privacy lifecycle by ``PrivateModule.dpsgd_phase``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.data import Data

from ..nn.mlp import compact_features, select_rows
from ..privacy.dpsgd import DPSGDPhase, GhostDPOptimizer, ghost_backward, row_loader
from .arguments import check_arguments
from .base import AccountingError, accuracy, cross_entropy

__all__ = ["RowTrainingMixin", "OnePhaseDPSGDMixin"]

#: generator streams of one fit (only used with an explicit ``noise_seed``): Poisson batches of
#: epoch ``e`` use ``BATCH_STREAM + e``, the gradient noise of DP-SGD run ``i``
#: ``GRADIENT_STREAM + i`` (aggregations use the small streams ``0..K``)
BATCH_STREAM, GRADIENT_STREAM = 1_000, 2_000_000


class RowTrainingMixin:
    caches = ("_rows_cache", "_features_cache")  # declared caches (PrivateModule.reset_caches)

    """Mixin for a :class:`~lightning_dpgnn.methods.base.PrivateModule` trained on node rows.

    Subclasses say whether any step of the fit is a DP-SGD step (:meth:`uses_dpsgd`), build
    their loaders with :meth:`rows_loader` and their optimizers with :meth:`dp_optimizer`, and
    compute the loss of a batch with :meth:`_rows_step`.
    """

    #: the model reads sparse COO features (``data.x`` kept sparse by the reader, FB-scale):
    #: rows are gathered as COO, compacted to CSR for full-batch steps and densified per
    #: Poisson batch for DP-SGD; a datamodule densifies ``x`` for a model that says ``False``
    sparse_features: bool = True

    #: ``(GradSampleModule, optimizer)`` of the DP-SGD run now training (``None``: none); with
    #: ghost clipping, :meth:`backward` clips through it
    dp_training: tuple[Any, Any] | None = None
    _loss_per_sample: torch.Tensor | None = None

    def uses_dpsgd(self) -> bool:
        """Whether any training step of this fit is a DP-SGD step (Poisson batches)."""
        return False

    # -- rows and loaders --------------------------------------------------------------------
    def _train_rows(
        self,
        key: Any,
        data: Data,
        tensors: Callable[[], tuple[torch.Tensor, ...]],
        *,
        compact: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """Training-node rows of ``tensors()`` plus the labels, gathered once per ``key`` and
        graph (loaders are rebuilt every epoch; re-indexing wide features each time is slow).

        ``compact=True`` (full-batch training only, never DP-SGD) stores wide one-hot rows as
        sparse CSR (:func:`~lightning_dpgnn.nn.mlp.compact_features`)."""
        return self._node_rows(key, data, tensors, "train", compact=compact)

    def _node_rows(
        self,
        key: Any,
        data: Data,
        tensors: Callable[[], tuple[torch.Tensor, ...]],
        split: str,
        *,
        compact: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """Rows of ``tensors()`` at ``data.<split>_mask`` plus their labels, gathered once per
        ``key``, split and graph. Row-wise models in eval mode (no dropout, running norm
        statistics) give each node the same logits on its rows as on the whole graph, so
        validation and test read only these rows."""
        cache: dict[str, tuple[Any, tuple[torch.Tensor, ...]]]
        cache = self.__dict__.setdefault("_rows_cache", {})
        cache_key = (key, id(data), data.num_nodes, compact)
        cached = cache.get(split)
        if cached is None or cached[0] != cache_key:
            m = getattr(data, f"{split}_mask")
            rows = tuple(select_rows(t, m) for t in tensors())  # sparse features too
            if compact:
                rows = tuple(compact_features(r) for r in rows)
            cache[split] = (cache_key, (*rows, data.y[m]))
        return cache[split][1]

    def _clear_rows_cache(self) -> None:
        """Forget cached rows (the inputs they were gathered from were replaced)."""
        self.__dict__.pop("_rows_cache", None)

    def _input_features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for a full-graph forward pass: a cached CSR copy when it is wide one-hot."""
        cached = getattr(self, "_features_cache", None)
        if cached is None or cached[0] is not x:
            self._features_cache = (x, compact_features(x))
        return self._features_cache[1]

    def _sparse_as_csr(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for an eval-mode forward pass: sparse COO features as their cached CSR copy
        (what the first linear layer takes), dense features as they are."""
        return self._input_features(x) if x.layout == torch.sparse_coo else x

    def rows_loader(
        self,
        rows: tuple[torch.Tensor, ...],
        phase: DPSGDPhase | None = None,
        shard: tuple[int, int, int] | None = None,
        batch_size: int | None = None,
    ) -> torch.utils.data.DataLoader:
        """One full batch of ``rows`` (``batch_size``: shuffled batches of that many rows), or
        (``phase`` given) one epoch of Poisson batches drawn from the fit's noise generator.
        ``shard=(start, stop, total)``: ``rows`` are this rank's global rows ``start..stop-1``
        of ``total`` (see :func:`~lightning_dpgnn.privacy.dpsgd.row_loader`)."""
        if phase is None:
            return row_loader(*rows, shard=shard, batch_size=batch_size)
        gen = self.noise_generator(BATCH_STREAM + self.trainer.current_epoch)
        return phase.loader(*rows, generator=gen, shard=None if shard is None else shard[:2])

    # -- optimizers ----------------------------------------------------------------------------
    def dp_optimizer(
        self,
        phase: DPSGDPhase | None,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        run: int = 0,
    ) -> torch.optim.Optimizer:
        """``optimizer`` as is (``phase=None``), or wrapped for DP-SGD run ``run`` of the fit:
        clipping through ``module``'s per-sample gradients, noise, steps recorded on the
        accountant. The wrapped pair becomes :attr:`dp_training`."""
        if phase is None:
            self.dp_training = None
            return optimizer
        gen = self.noise_generator(GRADIENT_STREAM + run)
        self.dp_training = phase.wrap(
            module, optimizer, self.noise_multiplier, self.accountant, gen
        )
        return self.dp_training[1]

    # -- steps ---------------------------------------------------------------------------------
    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        """Under DDP, a DP-SGD step's gradients are summed by the DP optimizer (clipped per
        sample, noised once, then all-reduced); DDP's own averaging of the unclipped gradients
        is switched off for it (and back on for full-batch steps)."""
        model = self.trainer.strategy.model
        if isinstance(model, DistributedDataParallel):
            model.require_backward_grad_sync = self.dp_training is None
        return super().on_train_batch_start(batch, batch_idx)

    def _rows_step(self, net: torch.nn.Module, batch: tuple[torch.Tensor, ...]):
        """Cross-entropy on a batch of (*input rows, labels); empty Poisson batches give 0."""
        *inputs, y = batch
        logits = net(*inputs)
        self._loss_per_sample = cross_entropy(logits, y, reduction="none")  # ghost clipping
        if len(y) == 0:  # still a forward pass through the GradSampleModule, loss 0
            return logits.sum() * 0.0
        loss = self._loss_per_sample.mean()
        if not self._logs_metrics("train"):
            return loss  # node level: batch loss/accuracy on private labels are not released
        self.log("train/loss", loss, batch_size=len(y), on_step=False, on_epoch=True)
        acc = accuracy(logits, y)
        self.log("train/acc", acc, batch_size=len(y), on_step=False, on_epoch=True)
        return loss

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Plain backward, or ghost clipping when a ghost-clipped DP-SGD run is training."""
        dp = self.dp_training
        if dp is not None and isinstance(dp[1], GhostDPOptimizer):
            if self._loss_per_sample is None:
                raise RuntimeError("ghost clipping needs the per-sample losses of the batch")
            ghost_backward(dp[0], dp[1], self._loss_per_sample)
            self._loss_per_sample = None
            return
        super().backward(loss, *args, **kwargs)

    # -- enforce -------------------------------------------------------------------------------
    def check_trainer(self) -> None:
        """The base checks, plus the Trainer settings that break DP-SGD accounting."""
        super().check_trainer()
        if not self.uses_dpsgd():
            return
        trainer = self.trainer
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
        if bad:
            raise AccountingError(
                f"{type(self).__name__} trains with DP-SGD; these Trainer settings break its "
                "privacy accounting:\n  - " + "\n  - ".join(bad)
            )


class OnePhaseDPSGDMixin:
    """For a :class:`RowTrainingMixin` model whose whole fit is one DP-SGD phase
    (``self.phase``, e.g. DP-MLP, DPGNN): the lifecycle's plan of its steps, the optimizer, and
    the argument check. Subclasses set ``self.phase`` and ``self.mlp`` (the trained module)."""

    phase: DPSGDPhase

    @staticmethod
    def check_noise_arguments(epsilon: float | None, noise_multiplier: float | None) -> None:
        """Refuse a fit with neither a target epsilon nor a fixed noise multiplier."""
        if epsilon is None and noise_multiplier is None:
            raise ValueError("give epsilon (to calibrate the noise) or a fixed noise_multiplier")
        check_arguments({"noise_multiplier": noise_multiplier})

    def calibrates_noise(self) -> bool:
        return True

    def uses_dpsgd(self) -> bool:
        return True

    def dpsgd_phase(self) -> DPSGDPhase:
        return self.phase

    def plan_phase(self, accountant: Any, noise_multiplier: float | None) -> bool:
        """The remaining DP-SGD steps: ``epochs`` epochs when calibrated to a target, else as
        many as the trainer will run (``False``: open-ended, no ``max_epochs``)."""
        steps = self.phase.total_steps if self.target_epsilon is not None else self._trainer_steps()
        if steps is None:
            return False
        done = self.accountant.total_count(self.phase.name)
        self.phase.plan(accountant, noise_multiplier, max(0, steps - done))
        return True

    def plan_steps(self, accountant: Any, noise_multiplier: float | None) -> bool:
        return self.plan_phase(accountant, noise_multiplier)

    def _trainer_steps(self) -> int | None:
        max_epochs = self.trainer.max_epochs if self._trainer is not None else None
        if max_epochs is None or max_epochs < 0:
            return None
        return max_epochs * self.phase.steps_per_epoch

    def configure_optimizers(self):
        return self.dp_optimizer(self.phase, self.mlp, self.adam(self.mlp.parameters()))
