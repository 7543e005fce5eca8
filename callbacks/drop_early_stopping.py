"""``DropEarlyStopping``: Drop's model selection on noisy labels (thesis Alg. 4 line 29).

Every epoch it records the validation loss (for LPGNN: the forward-correction loss on the noisy
validation labels) and the accuracy of ``argmax p(y|x)`` on the noisy training and validation
labels. An epoch is *admissible* when both accuracies are ``<= Acc* = e^eps_y / (e^eps_y + c -
1)``: a perfect classifier of the clean labels predicts the noisy ones with expected accuracy
``Acc*``, so anything above it signals over-fitting to the label noise (thesis §3.4.3). The
callback keeps the admissible epoch with the lowest loss, restores its weights when training
ends, stops early after ``patience`` epochs without an admissible improvement, and logs why it
picked its epoch.

Only noisy labels are read: the selection needs no clean data and costs no privacy budget.
With ``acc_star=None`` it is plain best-validation-loss selection with restore (the cross-entropy
and forward-correction baselines of thesis Table 3.4, and PGC).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn

__all__ = ["DropEarlyStopping", "EpochRecord", "NoisyLabelModel", "select_epoch"]


@runtime_checkable
class NoisyLabelModel(Protocol):
    """A model trained on noisy labels that knows Drop's accuracy bound (LPGNN)."""

    @property
    def acc_star(self) -> float:
        """``Acc*``: the expected accuracy of a perfect clean classifier on the noisy labels."""
        ...


@dataclass
class EpochRecord:
    """The metrics of one epoch and whether the Acc* rule admits it."""

    epoch: int
    loss: float
    train_acc: float | None
    val_acc: float | None
    admissible: bool


def _admissible(train_acc: float | None, val_acc: float | None, acc_star: float | None) -> bool:
    if acc_star is None:
        return True
    accs = [a for a in (train_acc, val_acc) if a is not None]
    return all(a <= acc_star + 1e-12 for a in accs)


def select_epoch(records: list[EpochRecord]) -> EpochRecord | None:
    """Alg. 4 line 29: the admissible epoch with the lowest loss (earliest on ties)."""
    best: EpochRecord | None = None
    for r in records:
        if r.admissible and math.isfinite(r.loss) and (best is None or r.loss < best.loss):
            best = r
    return best


class DropEarlyStopping(L.Callback):
    """Select, restore and early-stop on the lowest admissible validation loss.

    Args:
        monitor: the loss to minimise (LPGNN logs the forward-correction loss as ``val/loss``).
        train_acc, val_acc: accuracies on the noisy training / validation labels.
        acc_star: the accuracy bound; ``"auto"`` reads ``pl_module.acc_star`` (LPGNN: from
            ``y_eps`` and the number of classes; 1.0 when the module has none); a number
            in (0, 1]; ``None`` disables the rule.
        patience: stop after this many epochs without a new admissible best (``None``: never
            stop early, as Alg. 4 which trains for T epochs and selects afterwards).
        min_epochs: never stop before this many epochs.
        restore: load the selected epoch's weights when training ends.
    """

    def __init__(
        self,
        monitor: str = "val/loss",
        train_acc: str = "train/noisy_acc",
        val_acc: str = "val/noisy_acc",
        acc_star: float | str | None = "auto",
        patience: int | None = None,
        min_epochs: int = 0,
        restore: bool = True,
    ) -> None:
        if patience is not None and (isinstance(patience, bool) or int(patience) < 1):
            raise ValueError(f"patience must be an integer >= 1 or None, got {patience!r}")
        if isinstance(acc_star, str) and acc_star != "auto":
            raise ValueError(f"acc_star must be 'auto', a number in (0, 1] or None: {acc_star!r}")
        if isinstance(acc_star, int | float) and not 0.0 < float(acc_star) <= 1.0:
            raise ValueError(f"acc_star must be in (0, 1], got {acc_star!r}")
        if int(min_epochs) < 0:
            raise ValueError(f"min_epochs must be >= 0, got {min_epochs}")
        self.monitor, self.train_acc, self.val_acc = monitor, train_acc, val_acc
        self.acc_star_setting = acc_star
        self.patience = None if patience is None else int(patience)
        self.min_epochs = int(min_epochs)
        self.restore = bool(restore)
        self._reset()

    @property
    def state_key(self) -> str:
        """Key of this callback's state in checkpoints: two instances with other settings (e.g.
        one per monitored loss) keep separate states, as Lightning's own callbacks do."""
        return self._generate_state_key(
            monitor=self.monitor, acc_star=self.acc_star_setting, patience=self.patience,
            min_epochs=self.min_epochs,
        )

    def _reset(self) -> None:
        self.records: list[EpochRecord] = []
        self.best: EpochRecord | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        self.wait = 0
        self.stopped_epoch: int | None = None
        self.reason = ""
        self.acc_star: float | None = None

    # -- the bound --------------------------------------------------------------------------------
    def resolve_acc_star(self, pl_module: L.LightningModule) -> float | None:
        setting = self.acc_star_setting
        if setting == "auto":
            return float(pl_module.acc_star) if isinstance(pl_module, NoisyLabelModel) else 1.0
        return None if setting is None else float(setting)

    # -- per epoch --------------------------------------------------------------------------------
    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.acc_star = self.resolve_acc_star(pl_module)

    def _metric(self, trainer: L.Trainer, key: str, required: bool) -> float | None:
        """The logged ``key``, averaged over the processes (every rank selects the same
        epoch under DDP)."""
        value = trainer.callback_metrics.get(key)
        if value is None:
            if required:
                raise KeyError(
                    f"DropEarlyStopping: metric {key!r} was not logged; available: "
                    f"{sorted(trainer.callback_metrics)}"
                )
            return None
        value = torch.as_tensor(value, dtype=torch.float32, device=trainer.strategy.root_device)
        return float(trainer.strategy.reduce(value, reduce_op="mean"))

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        self.observe(
            trainer.current_epoch,
            self._metric(trainer, self.monitor, True),
            self._metric(trainer, self.train_acc, self.acc_star is not None),
            self._metric(trainer, self.val_acc, self.acc_star is not None),
            pl_module,
        )
        if trainer.strategy.reduce_boolean_decision(
            self._should_stop(trainer.current_epoch), all=False
        ):
            self.stopped_epoch = trainer.current_epoch
            trainer.should_stop = True

    def observe(
        self,
        epoch: int,
        loss: float,
        train_acc: float | None,
        val_acc: float | None,
        pl_module: L.LightningModule | None = None,
    ) -> EpochRecord:
        """Record one epoch; snapshot the weights if it is the new admissible best."""
        admissible = _admissible(train_acc, val_acc, self.acc_star)
        rec = EpochRecord(epoch, float(loss), train_acc, val_acc, admissible)
        self.records.append(rec)
        previous = [self.best] if self.best is not None else []
        if select_epoch([*previous, rec]) is rec:
            self.best, self.wait = rec, 0
            if pl_module is not None and self.restore:
                # a CPU copy of the state dict, as a checkpoint holds it (never the module)
                self.best_state = {
                    k: v.detach().to("cpu", copy=True) for k, v in pl_module.state_dict().items()
                }
        else:
            self.wait += 1
        return rec

    def _should_stop(self, epoch: int) -> bool:
        if self.patience is None or epoch + 1 < self.min_epochs:
            return False
        return self.wait >= self.patience

    # -- the end: restore and explain -------------------------------------------------------------
    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.reason = self.explain()
        if self.best is None:
            rank_zero_warn(self.reason)
            return
        if self.restore and self.best_state is not None:
            pl_module.load_state_dict(self.best_state)
        rank_zero_info(self.reason)

    def explain(self) -> str:
        """Why the selected epoch was chosen (or why none was)."""
        bound = "no accuracy bound" if self.acc_star is None else f"Acc*={self.acc_star:.4f}"
        above = [r for r in self.records if not r.admissible]
        stop = (
            f"; stopped after epoch {self.stopped_epoch}: {self.wait} epochs without an admissible "
            "improvement"
            if self.stopped_epoch is not None
            else ""
        )
        if self.best is None:
            return (
                f"DropEarlyStopping: none of the {len(self.records)} epochs was admissible "
                f"({bound}: train and validation accuracy on the noisy labels must not exceed "
                f"it); the last weights are kept{stop}"
            )
        b = self.best
        accs = (
            ""
            if b.train_acc is None
            else f", noisy train acc {b.train_acc:.4f}, noisy val acc {b.val_acc:.4f}"
        )
        ignored = ""
        if above:
            low = min(above, key=lambda r: r.loss)
            ignored = (
                f"; {len(above)} epoch(s) above the bound were ignored (the lowest of them, "
                f"epoch {low.epoch} with {self.monitor}={low.loss:.4f}, over-fits the noise)"
            )
        return (
            f"DropEarlyStopping: selected epoch {b.epoch}: lowest {self.monitor}={b.loss:.4f} "
            f"among {len(self.records) - len(above)} admissible epoch(s) ({bound}{accs})"
            f"{ignored}{stop}" + ("; its weights were restored" if self.restore else "")
        )

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "records": [asdict(r) for r in self.records],
            "best_epoch": None if self.best is None else self.best.epoch,
            "best_state": self.best_state,
            "wait": self.wait,
            "acc_star": self.acc_star,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.records = [EpochRecord(**r) for r in state_dict["records"]]
        best = state_dict["best_epoch"]
        self.best = next((r for r in self.records if r.epoch == best), None)
        self.best_state = state_dict["best_state"]
        self.wait = int(state_dict["wait"])
        self.acc_star = state_dict["acc_star"]
