"""What a private model logs: loss and accuracy of a split's rows, where the fit may."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torchmetrics.functional.classification import multiclass_accuracy

from ..levels import Level

__all__ = ["accuracy", "cross_entropy", "logs_metrics", "log_accuracy", "log_rows"]


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Share of rows whose highest logit is the label (torchmetrics' micro accuracy)."""
    return multiclass_accuracy(logits, y, num_classes=logits.size(-1), average="micro")


def cross_entropy(
    logits: torch.Tensor, y: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """``F.cross_entropy(logits, y, reduction=reduction)`` for ``[N, C]`` logits, computed on
    the ``[1, C, N]`` view: the same values and gradients, but the log-softmax then runs along
    the long node axis, which on CPU is ~5x faster for a handful of classes."""
    if logits.dim() != 2 or y.dim() != 1:
        return F.cross_entropy(logits, y, reduction=reduction)
    loss = F.cross_entropy(logits.t().unsqueeze(0), y.unsqueeze(0), reduction=reduction)
    return loss.squeeze(0)  # [1, N] -> [N] (reduction="none"); a scalar stays one


def logs_metrics(module: Any, stage: str) -> bool:
    """Node level: no metric on private labels (training batches, validation) during the fit
    unless asked for (``log_private_metrics``); such metrics are not covered by epsilon."""
    in_fit = module._trainer is not None and module.trainer.state.fn == "fit"
    return not (module.level is Level.NODE and stage in ("train", "val") and in_fit
                and not module.log_private_metrics)


def log_accuracy(
    module: Any, logits: torch.Tensor, data: Data, stage: str
) -> torch.Tensor | None:
    """:func:`log_rows` of the rows of ``data``'s ``<stage>_mask``, where the fit may log."""
    if not logs_metrics(module, stage):
        return None
    mask = getattr(data, f"{stage}_mask")
    return log_rows(module, logits[mask], data.y[mask], stage)


def log_rows(module: Any, logits: torch.Tensor, y: torch.Tensor, stage: str) -> torch.Tensor:
    """Log ``<stage>/loss`` and ``<stage>/acc`` of the stage's rows; return the loss."""
    loss = cross_entropy(logits, y)
    n = len(y)
    values = torch.stack([loss.detach(), accuracy(logits, y).to(loss.dtype)])
    if module._trainer is not None and module.trainer.world_size > 1:
        # under DDP a rank may hold a share of the rows (GAP/ProGAP's sharded rows): the
        # logged values are over every rank's rows, from summed counts (Lightning's own
        # mean over ranks floors an uneven total of batch sizes)
        sums = torch.cat([values * n, values.new_tensor([n])])
        sums = module.trainer.strategy.reduce(sums, reduce_op="sum")
        values, n = sums[:2] / sums[2].clamp(min=1), int(sums[2])
    # equal on every rank now; sync_dist keeps Lightning's epoch-level check quiet
    module.log(f"{stage}/loss", values[0], batch_size=n, prog_bar=False, sync_dist=True)
    module.log(f"{stage}/acc", values[1], batch_size=n, prog_bar=True, sync_dist=True)
    return loss
