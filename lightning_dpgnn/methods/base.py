"""Base LightningModule for every private method: accountant, reports, checkpoints, halting.

Contract with the rest of the library:

* ``self.accountant`` is the only place epsilon comes from; :meth:`privacy_spent` snapshots it.
* :meth:`privacy_planned` is the spend the whole fit will reach (``None`` when it cannot be
  known in advance, e.g. DP-SGD with a fixed noise multiplier and an open-ended trainer).
* :meth:`privacy_if_next_step` is the spend if one more optimizer step runs (``None`` when
  steps cost nothing, e.g. after GAP's one-time aggregation) — ``PrivacyBudget`` stops the fit
  before a step that would exceed its budget.
* Checkpoints carry the accountant and the report under ``checkpoint["dpgnn_privacy"]``;
  loading restores the ledger, so a resumed fit keeps counting from where it stopped.
* ``NodeDataModule.train_dataloader()`` asks the model for ``train_dataloader_from(data)``:
  models that batch training rows themselves (Poisson batches for DP-SGD) return a loader.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from torch_geometric.data import Data

from ..nn.mlp import compact_features
from ..privacy import PrivacyAccountant, PrivacyReport, check_epsilon, resolve_delta
from ..privacy.dpsgd import GhostDPOptimizer, ghost_backward

__all__ = ["PrivateModule", "PRIVACY_LEVELS"]

PRIVACY_LEVELS = ("none", "edge", "node")
CHECKPOINT_KEY = "dpgnn_privacy"


class PrivateModule(L.LightningModule):
    """Shared plumbing of private node-classification modules.

    Args:
        privacy: ``"none"``, ``"edge"`` or ``"node"`` (LDP methods use ``"ldp"``).
        epsilon: target epsilon (ignored for ``privacy="none"``). ``None`` means "no target":
            allowed for methods that read no private data at their level (MLP at edge level)
            or that run at a user-fixed noise multiplier (their spend is reported, not capped).
        delta: target delta, or ``"auto"`` (below 1 / #edges at edge level, 1 / #nodes at node
            level, resolved when the data is known).
        levels: the privacy levels this method supports.
    """

    def __init__(
        self,
        privacy: str = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        *,
        levels: tuple[str, ...] = PRIVACY_LEVELS,
    ) -> None:
        super().__init__()
        if privacy not in levels:
            raise ValueError(f"privacy must be one of {levels}, got {privacy!r}")
        self.privacy = privacy
        self.target_epsilon: float | None
        if privacy == "none" or epsilon is None:
            self.target_epsilon = math.inf if privacy == "none" else None
        else:
            if isinstance(epsilon, (int, float)) and math.isinf(epsilon):
                raise ValueError(
                    f"privacy={privacy!r} needs a finite epsilon > 0; use privacy='none' for a "
                    "non-private model"
                )
            self.target_epsilon = check_epsilon(epsilon)
        if not (delta == "auto" or delta is None or isinstance(delta, (int, float))):
            raise ValueError(f"delta must be a number in (0, 1) or 'auto', got {delta!r}")
        self.target_delta = delta
        self.accountant = PrivacyAccountant(level=privacy if privacy != "none" else "none")
        self._privacy_halt = False
        #: ``(GradSampleModule, optimizer)`` of the DP-SGD run now training (``None``: none);
        #: with ghost clipping, :meth:`backward` clips through it
        self.dp_training: tuple[Any, Any] | None = None
        self._loss_per_sample: torch.Tensor | None = None

    def _datamodule_graph(self) -> Data:
        """The preprocessed graph of the attached ``NodeDataModule``, with a clear error."""
        dm = self.trainer.datamodule if self._trainer is not None else None
        if dm is None or not hasattr(dm, "data"):
            raise RuntimeError(
                f"{type(self).__name__} needs a NodeDataModule: trainer.fit(model, datamodule=dm)"
            )
        return dm.data

    # -- privacy API -----------------------------------------------------------------------
    def resolve_delta(self, data: Data) -> float | None:
        """Fix delta once the private units are known (edges or nodes)."""
        if self.privacy == "none":
            return None
        if self.accountant.delta is not None and self.target_delta == "auto":
            return self.accountant.delta  # already resolved (e.g. restored from a checkpoint)
        units = data.num_edges if self.privacy == "edge" else data.num_nodes
        self.accountant.delta = resolve_delta(self.target_delta, units)
        return self.accountant.delta

    def privacy_spent(self) -> PrivacyReport:
        """The guarantee of what has run so far — the only source of epsilon."""
        return PrivacyReport.from_accountant(self.accountant, private=self.privacy != "none")

    def privacy_planned(self) -> PrivacyReport | None:
        """Spend of the whole fit; default: nothing beyond what is already spent."""
        return self.privacy_spent()

    def privacy_if_next_step(self) -> PrivacyReport | None:
        """Spend if one more optimizer step ran; ``None`` when steps read no private data."""
        return None

    def halt_privately(self) -> None:
        """Skip the rest of the fit before the next optimizer step (used by PrivacyBudget)."""
        self._privacy_halt = True

    def on_fit_start(self) -> None:
        self._privacy_halt = False
        world = getattr(self.trainer, "world_size", 1)
        if self.privacy != "none" and world > 1:
            raise NotImplementedError(
                f"private training on {world} processes is not supported yet: each rank would "
                "draw its own aggregation/gradient noise and the accounting would not hold "
                "(design invariant 5). Train private models on a single device for now."
            )

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        if self._privacy_halt:
            self.trainer.should_stop = True
            return -1
        return None

    # -- checkpoints -----------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[CHECKPOINT_KEY] = {
            "accountant": self.accountant.state_dict(),
            "report": self.privacy_spent().to_dict(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get(CHECKPOINT_KEY)
        if state is None:
            raise KeyError(
                f"checkpoint has no '{CHECKPOINT_KEY}' entry: it was not written by a "
                "lightning-dpgnn model, so its privacy spend is unknown"
            )
        self.accountant.load_state_dict(state["accountant"])

    # -- shared training / evaluation -------------------------------------------------------
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
        cache_key = (key, id(data), data.num_nodes, compact)
        cached = getattr(self, "_rows_cache", None)
        if cached is None or cached[0] != cache_key:
            m = data.train_mask
            rows = tuple(t[m] for t in tensors())
            if compact:
                rows = tuple(compact_features(r) for r in rows)
            self._rows_cache = (cache_key, (*rows, data.y[m]))
        return self._rows_cache[1]

    def _input_features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for a full-graph forward pass: a cached CSR copy when it is wide one-hot."""
        cached = getattr(self, "_features_cache", None)
        if cached is None or cached[0] is not x:
            self._features_cache = (x, compact_features(x))
        return self._features_cache[1]

    def _rows_step(self, net: torch.nn.Module, batch: tuple[torch.Tensor, ...]):
        """Cross-entropy on a batch of (*input rows, labels); empty Poisson batches give 0."""
        *inputs, y = batch
        logits = net(*inputs)
        self._loss_per_sample = F.cross_entropy(logits, y, reduction="none")  # ghost clipping
        if len(y) == 0:  # still a forward pass through the GradSampleModule, loss 0
            return logits.sum() * 0.0
        loss = self._loss_per_sample.mean()
        self.log("train/loss", loss, batch_size=len(y), on_step=False, on_epoch=True)
        acc = (logits.argmax(-1) == y).float().mean()
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

    def _log_accuracy(self, logits: torch.Tensor, data: Data, stage: str) -> torch.Tensor:
        mask = getattr(data, f"{stage}_mask")
        y = data.y[mask]
        loss = F.cross_entropy(logits[mask], y)
        acc = (logits[mask].argmax(-1) == y).float().mean()
        n = int(mask.sum())
        self.log(f"{stage}/loss", loss, batch_size=n, prog_bar=False)
        self.log(f"{stage}/acc", acc, batch_size=n, prog_bar=True)
        return loss
