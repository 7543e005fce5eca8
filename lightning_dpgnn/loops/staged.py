"""The staged fit loop: many training phases inside one ``trainer.fit`` (GAP, ProGAP, PoinDP,
MLP, SAGE), on public Lightning API only (docs/staged-training.md). :class:`StagedFit` is a
component the model holds and a ``Callback``: the active stage is a pure function of the epoch
(a resume lands in the right stage); ``Trainer(max_epochs=N)`` sets the whole fit's length;
entering a stage restores the previous stage's best weights, draws the releases it reads and
swaps optimizers; the best weights by ``val/acc`` and the active stage travel in checkpoints.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback, RichProgressBar, TQDMProgressBar
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.utilities.rank_zero import rank_zero_info
from lightning.pytorch.utilities.warnings import PossibleUserWarning
from torch import nn
from torch.utils.data import DataLoader

from .._quiet import LOGGERS, DropLines

__all__ = ["Stage", "StagedFit"]

_LIGHTNING_DEFAULT_EPOCHS = 1000


#: Lightning's "``max_epochs=N`` reached" line, dropped: in a staged fit ``N`` is the model's
#: total, not the Trainer's ``max_epochs``, and the stages were announced at setup
_HIDE_MAX_EPOCHS = DropLines(("`Trainer.fit` stopped: `max_epochs=",))
_RANK_ZERO_LOG = logging.getLogger(LOGGERS[0])  # the logger ``rank_zero_info`` writes to


def show_stage(trainer: Any, description: str) -> None:
    """Put ``description`` on the training progress bar (no-op without one, e.g. on rank > 0)."""
    bar = getattr(trainer, "progress_bar_callback", None)
    if bar is None or not bar.is_enabled:
        return
    if isinstance(bar, RichProgressBar):
        if bar.progress is not None and bar.train_progress_bar_id is not None:
            bar.progress.update(bar.train_progress_bar_id, description=description)
    elif isinstance(bar, TQDMProgressBar):
        bar.train_progress_bar.set_description(description)


def _snapshot(module: nn.Module) -> dict[str, Any]:
    """A copy of ``module.state_dict()`` (tensors cloned; ~10x cheaper than ``deepcopy``)."""
    return {
        k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
        for k, v in module.state_dict().items()
    }


@dataclass
class Stage:
    """One training phase: its name (progress bar, logs), its epochs (0 skips training but
    still draws its releases), the attributes holding its trainable modules (model selection
    snapshots these) and the hyper-parameter that sets its epochs (``None``: none)."""

    name: str
    epochs: int
    modules: tuple[str, ...] = field(default_factory=tuple)
    argument: str | None = None


def _split_epochs(
    total: int, current: dict[str, int], count: Counter
) -> dict[str, int] | None:
    """Epoch arguments in proportion to ``current`` such that ``sum(count[a] * value[a])`` is
    ``total`` (each at least 1), or ``None`` when whole epochs cannot add up to it."""
    size = sum(count[a] * e for a, e in current.items())
    exact = {a: total * e / size for a, e in current.items()}
    values = {a: max(1, int(v)) for a, v in exact.items()}
    left = total - sum(count[a] * v for a, v in values.items())
    for a in sorted(exact, key=lambda a: exact[a] - int(exact[a]), reverse=True):
        if 0 < count[a] <= left:
            values[a] += left // count[a]
            left -= count[a] * (left // count[a])
    return values if left == 0 else None


class StagedFit(Callback):
    """The fit of a ``LightningModule`` in stages, whose Lightning hooks switch the stages.
    The method declares its stages (``module.configure_stages()``), the training loader of a
    stage (``rows(stage_index, data)``) and optionally its optimizer (``optimizer(index)``;
    default: the model's Adam over the stage's modules).

    Attributes:
        patience: per-stage early stopping: skip the rest of a stage once ``val/acc`` has not
            improved for this many epochs (``None``: never). Only with ``select``.
        select: whether stage weights may be chosen by ``val/acc``; ``False`` when validation
            labels are private and unaccounted (node-level DP): the last epoch is kept.
        reload_every_epoch: whether the training loader differs between epochs of one stage
            (e.g. Poisson batches from a per-epoch generator). ``False``: loaders are reloaded
            only when a new stage starts.
        active_stage: the stage entered last (``None``: none yet); travels in checkpoints.
        best: stage -> ``{"acc", "epoch", "state"}``, the best validation epoch of each stage.
    """

    def __init__(
        self,
        module: Any,
        rows: Callable[[int, Any], DataLoader],
        optimizer: Callable[[int], torch.optim.Optimizer] | None = None,
        *,
        patience: int | None = None,
        select: bool = True,
        reload_every_epoch: bool = True,
    ) -> None:
        # Trainer() without max_epochs warns that it will run 1000 epochs: a staged model sets
        # its own length (announced at setup), so the line would contradict it
        warnings.filterwarnings(
            "ignore", message="`max_epochs` was not set", category=PossibleUserWarning
        )
        self.module, self.rows, self._optimizer = module, rows, optimizer
        self.patience, self.select, self.reload_every_epoch = patience, select, reload_every_epoch
        self.active_stage: int | None = None
        self.best: dict[int, dict[str, Any]] = {}
        self._optimizer_stage: int | None = None
        self._resume_epoch = 0  # the epoch a fit resumed from a checkpoint starts at

    # -- the stages ----------------------------------------------------------------------------
    @property
    def stages(self) -> list[Stage]:
        return self.module.configure_stages()

    def total_epochs(self) -> int:
        return sum(s.epochs for s in self.stages)

    def stage_of_epoch(self, epoch: int) -> int:
        """Index of the stage that trains during ``epoch`` (the last stage past the end)."""
        end = 0
        for i, s in enumerate(self.stages):
            end += s.epochs
            if epoch < end:
                return i
        return len(self.stages) - 1

    @property
    def current_stage(self) -> int:
        return self.stage_of_epoch(self.module.trainer.current_epoch)

    def enter_stage(self, index: int) -> None:
        """Move to stage ``index``: closing stage ``s`` restores its best weights, entering
        ``s + 1`` draws the releases it reads (a resumed fit repeats no transition)."""
        if self.active_stage is None:
            self.active_stage = 0
            self.module.draw_releases(0)
        while self.active_stage < index:
            self._restore_best(self.active_stage)
            self.active_stage += 1
            self.module.draw_releases(self.active_stage)

    def start(self) -> None:
        """Enter the stage the fit starts or resumes in (``on_fit_start``, never a loader)."""
        self.enter_stage(self.stage_of_epoch(self._resume_epoch))

    # -- what the module's hooks delegate ------------------------------------------------------
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimizer of the stage now training (on resume: of the stage the checkpoint was
        written in, whose state Lightning then restores)."""
        stage = self._optimizer_stage
        if stage is None:
            stage = self.current_stage if self.module._trainer is not None else 0
        self._optimizer_stage = stage
        if self._optimizer is not None:
            return self._optimizer(stage)
        modules = [getattr(self.module, name) for name in self.stages[stage].modules]
        return self.module.adam(p for m in modules for p in m.parameters() if p.requires_grad)

    def loader(self, data: Any) -> DataLoader:
        """The training rows of the current stage (a dataloader request never draws)."""
        index = self.current_stage
        if self.active_stage is None or index > self.active_stage:
            raise RuntimeError(
                f"{type(self.module).__name__}: the training rows of stage {index} were "
                f"requested before the stage was entered (entered: {self.active_stage}); stages "
                "are entered in on_fit_start and on_train_epoch_end"
            )
        return self.rows(index, data)

    def out_of_patience(self) -> bool:
        """Whether the current stage is out of patience (its other epochs skipped: no spend)."""
        if self.patience is None or not self.select:
            return False
        best = self.best.get(self.current_stage)
        epoch = self.module.trainer.current_epoch
        return best is not None and epoch - best["epoch"] > self.patience

    # -- Lightning hooks -----------------------------------------------------------------------
    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage != "fit":
            return
        self.follow_trainer_epochs(trainer)  # before the module's setup makes the privacy plan
        total = self.total_epochs()
        trainer.fit_loop.max_epochs = total
        trainer.reload_dataloaders_every_n_epochs = 1
        if isinstance(trainer.strategy, DDPStrategy):  # a stage's modules alone get gradients
            # no public setter (the model is wrapped after this hook): the constructor's
            # find_unused_parameters lands in _ddp_kwargs (tests/test_ddp.py checks it)
            trainer.strategy._ddp_kwargs["find_unused_parameters"] = True
        plan = " -> ".join(f"{s.name} ({s.epochs} epochs)" for s in self.stages)
        rank_zero_info(f"{type(pl_module).__name__} trains in stages: {plan}; {total} epochs "
                       "in all")
        _RANK_ZERO_LOG.addFilter(_HIDE_MAX_EPOCHS)

    def follow_trainer_epochs(self, trainer: Any) -> None:
        """Make the stages add up to ``Trainer(max_epochs=N)``, before the module's setup makes
        the privacy plan: epoch arguments the model was not given are scaled in proportion;
        given ones are its plan (``N`` above it: a maximum not reached; below it, or not
        splittable into whole epochs: refused)."""
        module = self.module
        asked = trainer.fit_loop.max_epochs
        # Trainer() without max_epochs or max_steps: Lightning's default, nothing was asked
        default = asked == _LIGHTNING_DEFAULT_EPOCHS and trainer.max_steps == -1
        total = self.total_epochs()
        if asked in (None, -1, total) or default:
            return
        stages = [s for s in self.stages if s.epochs > 0 and s.argument is not None]
        count = Counter(s.argument for s in stages)
        if not count:  # no epoch argument to scale: the stages are the plan
            return
        name = type(module).__name__
        plan = " + ".join(f"{s.epochs} ({s.name})" for s in self.stages)
        given = [a for a in count if a in getattr(module, "given_arguments", count)]
        if given and asked > total:  # a maximum the model's own plan stays below
            return
        if given:
            raise ValueError(
                f"{name}: Trainer(max_epochs={asked}) is shorter than the "
                f"stages' epochs ({plan} = {total}, set by {', '.join(given)}); drop one of them"
            )
        values = _split_epochs(asked, {a: module.hparams[a] for a in count}, count)
        if values is None:
            raise ValueError(
                f"{name}: Trainer(max_epochs={asked}) cannot be split into whole "
                f"epochs over its stages ({plan}); give a multiple of their number, or set "
                f"{', '.join(count)}"
            )
        module.hparams.update(values)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            _RANK_ZERO_LOG.removeFilter(_HIDE_MAX_EPOCHS)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """A fit that raises skips ``teardown``: the filter still goes."""
        _RANK_ZERO_LOG.removeFilter(_HIDE_MAX_EPOCHS)

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        index = self.current_stage
        if self._optimizer_stage != index:
            self._optimizer_stage = index
            trainer.strategy.setup_optimizers(trainer)
        if not self.reload_every_epoch:
            # Lightning reads this before each epoch: reload only for the next stage's rows
            next_stage = self.stage_of_epoch(trainer.current_epoch + 1)
            trainer.reload_dataloaders_every_n_epochs = int(next_stage != index)
        stage = self.stages[index]
        pl_module.log("stage", float(index), prog_bar=False, on_epoch=True, on_step=False)
        show_stage(
            trainer,
            f"Stage {index + 1}/{len(self.stages)} ({stage.name}) epoch {trainer.current_epoch}",
        )

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """After the last epoch of a stage, enter the next (drawing its releases, which
        checkpoints written after this hook hold), unless the fit ends here."""
        following = trainer.current_epoch + 1
        ends = (
            following >= trainer.fit_loop.max_epochs
            or trainer.should_stop
            or (trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps)
        )
        if not ends and self.stage_of_epoch(following) != self.active_stage:
            self.enter_stage(self.stage_of_epoch(following))

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Keep the stage's weights when ``val/acc`` improved (with ``select``)."""
        if trainer.sanity_checking or trainer.state.fn != "fit" or not self.select:
            return
        acc = trainer.callback_metrics.get("val/acc")
        if acc is None:
            return
        # averaged over the processes: under DDP every rank keeps the same epoch's weights
        strategy = trainer.strategy
        acc = strategy.reduce(
            torch.as_tensor(acc, dtype=torch.float32, device=strategy.root_device),
            reduce_op="mean",
        )
        index = self.current_stage
        best = self.best.get(index)
        if best is None or float(acc) > best["acc"]:
            self.best[index] = {
                "acc": float(acc),
                "epoch": trainer.current_epoch,
                "state": {
                    name: _snapshot(getattr(pl_module, name))
                    for name in self.stages[index].modules
                },
            }

    def _restore_best(self, index: int) -> None:
        best = self.best.get(index)
        if best is None:
            return
        for name, state in best["state"].items():
            getattr(self.module, name).load_state_dict(state)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.active_stage is not None:
            self._restore_best(self.active_stage)
        self._resume_epoch = 0

    # -- checkpoints (Lightning saves a callback's state under its ``state_key``) -----------
    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "active_stage": self.active_stage}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best = state_dict.get("best", {})
        # the stage the checkpoint was written in: its one-time work is done (or cached)
        self.active_stage = state_dict.get("active_stage")

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        """A resumed fit enters the stage of the epoch it restarts at, with the optimizer of the
        stage the checkpoint was in."""
        epoch = checkpoint.get("epoch", 0)
        progress = checkpoint.get("loops", {}).get("fit_loop", {}).get("epoch_progress", {})
        self._resume_epoch = int(progress.get("current", {}).get("processed", epoch))
        self._optimizer_stage = self.stage_of_epoch(epoch)
