"""The staged fit loop: many training phases inside one ``trainer.fit`` (GAP, ProGAP).

Lightning 2 removed its public loop-customisation API, so this module stays on public API
(a deliberate choice; see docs/staged-training.md):

* the active stage is a pure function of ``trainer.current_epoch`` (stage ``s`` owns epochs
  ``[sum(epochs[:s]), sum(epochs[:s+1]))``), so resuming from any checkpoint lands in the right
  stage with no extra state;
* ``Trainer(max_epochs=N)`` sets the length of the whole fit: stages at their default epochs
  are scaled so that they add up to ``N`` (their epoch arguments in the hyper-parameters are
  rewritten, so the plan, checkpoints and cards say what ran); epochs given to the model are
  its plan, which ``N`` may exceed (a maximum not reached) but not cut short (refused, one
  line); ``setup`` then sets ``trainer.fit_loop.max_epochs`` to the total and
  ``trainer.reload_dataloaders_every_n_epochs = 1``, so the module is asked for its stage's
  training rows (``train_dataloader_from``); when a stage's loader is the same at every epoch
  (``loaders_change_within_stage()`` is False: full-batch rows, no per-epoch Poisson
  generator), each epoch sets it to reload only before the first epoch of the next stage
  (reloading costs Lightning a few milliseconds per epoch, more than a full-batch step);
* entering a stage (``enter_stage``) restores the previous stage's best weights, draws the
  releases the stage reads (e.g. the private aggregation — cached, never redrawn once present)
  and swaps optimizers with ``trainer.strategy.setup_optimizers(trainer)``;
* per-stage model selection: after each validation the weights of the stage's trainable modules
  are kept if ``val/acc`` improved; they are restored when the stage ends and at fit end
  (skipped when ``select_on_validation()`` is False, e.g. node-level DP); with a
  ``stage_patience()`` the rest of a stage is skipped once ``val/acc`` stops improving;
* the progress bar (Rich, Lightning's default, or TQDM) shows the stage name, and ``stage`` is
  logged; the fit announces its stages once (the model owns its epochs, so Lightning's
  "``max_epochs=N`` reached" line, which would contradict ``Trainer(max_epochs)``, is left out).

``tests/loops/test_staged_loop.py`` fails loudly if a Lightning upgrade breaks stage switching,
dataloader reloading or checkpoint resume.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.utilities.rank_zero import rank_zero_info
from lightning.pytorch.utilities.warnings import PossibleUserWarning
from torch import nn

__all__ = ["Stage", "StagedTrainingMixin"]

_LIGHTNING_DEFAULT_EPOCHS = 1000


class _HideMaxEpochsReached(logging.Filter):
    """Drops Lightning's "``max_epochs=N`` reached" line: in a staged fit ``N`` is the model's
    total, not the Trainer's ``max_epochs``, and the stages were announced at setup."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("`Trainer.fit` stopped: `max_epochs=")


def _rank_zero_log() -> logging.Logger:
    """The logger Lightning's ``rank_zero_info`` writes to (``lightning.pytorch`` names it after
    its ``utilities.rank_zero`` module when imported)."""
    return logging.getLogger("lightning.pytorch.utilities.rank_zero")


_HIDE_MAX_EPOCHS = _HideMaxEpochsReached()


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


def _allow_unused_parameters(strategy: Any) -> None:
    """Each stage trains only its own modules, so under DDP the others get no gradient: let
    DDP look for unused parameters (the model is wrapped after the ``setup`` hook)."""
    if isinstance(strategy, DDPStrategy):
        # no public setter: the constructor's ``find_unused_parameters`` lands in _ddp_kwargs
        # (tests/test_ddp.py fails if a Lightning upgrade changes that)
        strategy._ddp_kwargs["find_unused_parameters"] = True


def _snapshot(module: nn.Module) -> dict[str, Any]:
    """A copy of ``module.state_dict()`` (tensors cloned; ~10x cheaper than ``deepcopy``)."""
    return {
        k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
        for k, v in module.state_dict().items()
    }


@dataclass
class Stage:
    """One training phase.

    Attributes:
        name: shown in the progress bar and logs (e.g. ``"encoder"``, ``"classifier"``).
        epochs: epochs the stage trains for (0 skips training but still draws its releases).
        modules: names of the attributes holding the stage's trainable modules (model
            selection snapshots and restores these).
        argument: the model's hyper-parameter that sets ``epochs`` (scaled to follow
            ``Trainer(max_epochs)``, see :meth:`StagedTrainingMixin.follow_trainer_epochs`).
    """

    name: str
    epochs: int
    modules: tuple[str, ...] = field(default_factory=tuple)
    #: the hyper-parameter that sets ``epochs`` (several stages may share one); ``None``: none
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


class StagedTrainingMixin:
    """Mixin for a ``LightningModule`` whose fit runs several stages.

    Subclasses implement ``configure_stages()`` and ``stage_rows(stage_index, data)`` (the
    training loader of a stage), and may override ``stage_optimizer(stage_index)`` (default:
    the model's Adam over the stage's modules). Entering a stage draws the releases it reads
    (``PrivateModule.draw_releases``: once, cached, never redrawn on a resume).
    """

    # -- to implement ------------------------------------------------------------------------
    def configure_stages(self) -> list[Stage]:
        raise NotImplementedError

    def stage_optimizer(self, stage_index: int):
        """The optimizer of stage ``stage_index``. Default: the model's Adam (``self.adam``)
        over the trainable parameters of the stage's ``modules``."""
        modules = [getattr(self, name) for name in self.stages[stage_index].modules]
        return self.adam(p for m in modules for p in m.parameters() if p.requires_grad)

    def stage_rows(self, stage_index: int, data) -> torch.utils.data.DataLoader:
        raise NotImplementedError

    def loaders_change_within_stage(self) -> bool:
        """Whether the training loader differs between epochs of one stage (e.g. Poisson
        batches from a per-epoch generator). ``False``: loaders are reloaded only when a new
        stage starts."""
        return True

    def stage_patience(self) -> int | None:
        """Per-stage early stopping: skip the rest of a stage once ``val/acc`` has not improved
        for this many epochs (``None``: never). Only active with ``select_on_validation()``."""
        return None

    def select_on_validation(self) -> bool:
        """Whether stage weights may be chosen by ``val/acc``. Return ``False`` when validation
        labels are private and unaccounted (node-level DP): the last epoch is kept instead."""
        return True

    # -- bookkeeping -----------------------------------------------------------------------
    def _staged_init(self) -> None:
        # Trainer() without max_epochs warns at the start of every fit, before any model hook,
        # that it will run 1000 epochs: a staged model sets its own length (announced at
        # setup), so the line would contradict it. Hidden from the first staged model on (a
        # non-staged model fitted later in the process no longer shows it either).
        warnings.filterwarnings(
            "ignore", message="`max_epochs` was not set", category=PossibleUserWarning
        )
        self._active_stage: int | None = None
        self._optimizer_stage: int | None = None
        self._best: dict[int, dict[str, Any]] = {}  # stage -> {"acc": float, "state": {...}}
        self._resume_epoch = 0  # the epoch a fit resumed from a checkpoint starts at

    @property
    def stages(self) -> list[Stage]:
        return self.configure_stages()

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
        return self.stage_of_epoch(self.trainer.current_epoch)

    def enter_stage(self, index: int) -> None:
        """Move to stage ``index``, closing each earlier stage on the way.

        Closing stage ``s`` restores its best weights; entering ``s + 1`` draws the releases it
        reads. The active stage travels in checkpoints, so a resumed fit repeats no transition.
        """
        if self._active_stage is None:
            self._active_stage = 0
            self.draw_releases(0)
        while self._active_stage < index:
            self._restore_best(self._active_stage)
            self._active_stage += 1
            self.draw_releases(self._active_stage)

    # -- Lightning hooks (call super() when overriding) ------------------------------------
    def follow_trainer_epochs(self) -> None:
        """Make the stages add up to ``Trainer(max_epochs=N)`` when one was asked for: scale
        the stages' epoch arguments in proportion when the model was not given them. Epochs
        the model was given (``given_arguments``) are its plan: ``N`` above their total is a
        maximum not reached (as with early stopping), ``N`` below it is refused (one line),
        and so is an ``N`` that cannot be split into whole epochs per argument. Call before
        the privacy plan is made (``setup``)."""
        trainer = self.trainer
        asked = trainer.fit_loop.max_epochs
        # Trainer() without max_epochs or max_steps runs Lightning's default of 1000 epochs:
        # nothing was asked for then
        default = asked == _LIGHTNING_DEFAULT_EPOCHS and trainer.max_steps == -1
        total = self.total_epochs()
        if asked in (None, -1, total) or default:
            return
        stages = [s for s in self.stages if s.epochs > 0 and s.argument is not None]
        count = Counter(s.argument for s in stages)
        if not count:  # no epoch argument to scale: the stages are the plan
            return
        plan = " + ".join(f"{s.epochs} ({s.name})" for s in self.stages)
        names = ", ".join(count)
        given = [a for a in count if a in getattr(self, "given_arguments", count)]
        if given and asked > total:  # a maximum the model's own plan stays below
            return
        if given:
            raise ValueError(
                f"{type(self).__name__}: Trainer(max_epochs={asked}) is shorter than the "
                f"stages' epochs ({plan} = {total}, set by {', '.join(given)}); drop one of them"
            )
        values = _split_epochs(asked, {a: self.hparams[a] for a in count}, count)
        if values is None:
            raise ValueError(
                f"{type(self).__name__}: Trainer(max_epochs={asked}) cannot be split into whole "
                f"epochs over its stages ({plan}); give a multiple of their number, or set "
                f"{names}"
            )
        self.hparams.update(values)

    def setup(self, stage: str) -> None:
        if stage == "fit":
            trainer = self.trainer
            self.follow_trainer_epochs()
            total = self.total_epochs()
            trainer.fit_loop.max_epochs = total
            trainer.reload_dataloaders_every_n_epochs = 1
            _allow_unused_parameters(trainer.strategy)
            plan = " -> ".join(f"{s.name} ({s.epochs} epochs)" for s in self.stages)
            rank_zero_info(
                f"{type(self).__name__} trains in stages: {plan}; {self.total_epochs()} epochs "
                "in all"
            )
            _rank_zero_log().addFilter(_HIDE_MAX_EPOCHS)

    def teardown(self, stage: str) -> None:
        if stage == "fit":
            _rank_zero_log().removeFilter(_HIDE_MAX_EPOCHS)
        super().teardown(stage)

    def configure_optimizers(self):
        # on resume, Lightning restores the optimizer state after this call: build the
        # optimizer of the stage the checkpoint was written in, so the states match.
        stage = self._optimizer_stage
        if stage is None:
            stage = self.current_stage if self._trainer is not None else 0
        self._optimizer_stage = stage
        return self.stage_optimizer(stage)

    def on_fit_start(self) -> None:
        """Enter the stage the fit starts in (the first, or the one a resumed checkpoint was
        in): its one-time work (releases) runs here, never from a dataloader request."""
        super().on_fit_start()
        self.enter_stage(self.stage_of_epoch(self._resume_epoch))

    def on_train_epoch_end(self) -> None:
        """After the last epoch of a stage, close it and enter the next (drawing its releases)
        — unless the fit ends here (its last epoch, ``max_steps``, or a stop), so that no
        release is drawn that no step will read. Checkpoints written after this hook (Lightning's
        ``ModelCheckpoint``) hold the new stage's releases."""
        trainer = self.trainer
        following = trainer.current_epoch + 1
        ends = (
            following >= trainer.fit_loop.max_epochs
            or trainer.should_stop
            or (trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps)
        )
        if not ends and self.stage_of_epoch(following) != self._active_stage:
            self.enter_stage(self.stage_of_epoch(following))

    def train_dataloader_from(self, data) -> torch.utils.data.DataLoader:
        """The training rows of the current stage: read from its releases, which the stage
        hooks drew (a dataloader request never draws)."""
        index = self.current_stage
        if self._active_stage is None or index > self._active_stage:
            raise RuntimeError(
                f"{type(self).__name__}: the training rows of stage {index} were requested "
                f"before the stage was entered (entered: {self._active_stage}); stages are "
                "entered in on_fit_start and on_train_epoch_end"
            )
        return self.stage_rows(index, data)

    def on_train_epoch_start(self) -> None:
        index = self.current_stage
        if self._optimizer_stage != index:
            self._optimizer_stage = index
            self.trainer.strategy.setup_optimizers(self.trainer)
        if not self.loaders_change_within_stage():
            # Lightning reads this before each epoch: reload only for the next stage's rows
            next_stage = self.stage_of_epoch(self.trainer.current_epoch + 1)
            self.trainer.reload_dataloaders_every_n_epochs = int(next_stage != index)
        stage = self.stages[index]
        self.log("stage", float(index), prog_bar=False, on_epoch=True, on_step=False)
        show_stage(
            self.trainer,
            f"Stage {index + 1}/{len(self.stages)} ({stage.name}) "
            f"epoch {self.trainer.current_epoch}",
        )

    def stage_stopped_early(self) -> bool:
        """Whether the current stage has run out of patience (its best epoch is kept)."""
        patience = self.stage_patience()
        if patience is None or not self.select_on_validation():
            return False
        best = self._best.get(self.current_stage)
        return best is not None and self.trainer.current_epoch - best["epoch"] > patience

    def skip_epoch_reason(self) -> str | None:
        """A stage out of patience skips the rest of its epochs: no step, no privacy spend."""
        if self.stage_stopped_early():
            return f"stage {self.stages[self.current_stage].name!r} ran out of patience"
        return super().skip_epoch_reason()

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking or self._trainer is None or self.trainer.state.fn != "fit":
            return
        if not self.select_on_validation():
            return
        acc = self.trainer.callback_metrics.get("val/acc")
        if acc is None:
            return
        # averaged over the processes: under DDP every rank keeps the same epoch's weights
        strategy = self.trainer.strategy
        acc = strategy.reduce(
            torch.as_tensor(acc, dtype=torch.float32, device=strategy.root_device),
            reduce_op="mean",
        )
        index = self.current_stage
        best = self._best.get(index)
        if best is None or float(acc) > best["acc"]:
            self._best[index] = {
                "acc": float(acc),
                "epoch": self.trainer.current_epoch,
                "state": {
                    name: _snapshot(getattr(self, name)) for name in self.stages[index].modules
                },
            }

    def _restore_best(self, index: int) -> None:
        best = self._best.get(index)
        if best is None:
            return
        for name, state in best["state"].items():
            module: nn.Module = getattr(self, name)
            module.load_state_dict(state)

    def on_train_end(self) -> None:
        if self._active_stage is not None:
            self._restore_best(self._active_stage)
        self._resume_epoch = 0
        super().on_train_end()

    def staged_state(self) -> dict[str, Any]:
        return {"best": self._best, "active_stage": self._active_stage}

    def load_staged_state(self, state: dict[str, Any], checkpoint: dict[str, Any]) -> None:
        """Restore :meth:`staged_state` from a Lightning ``checkpoint``; a resumed fit enters
        the stage of the epoch it restarts at (after an epoch-end checkpoint: the next one)."""
        epoch = checkpoint.get("epoch", 0)
        progress = checkpoint.get("loops", {}).get("fit_loop", {}).get("epoch_progress", {})
        self._resume_epoch = int(progress.get("current", {}).get("processed", epoch))
        self._best = state.get("best", {})
        # the stage the checkpoint was written in: its one-time work is done (or cached)
        self._active_stage = state.get("active_stage")
        self._optimizer_stage = self.stage_of_epoch(epoch)
