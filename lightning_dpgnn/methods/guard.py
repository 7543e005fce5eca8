"""Why a private fit is refused or ends (invariant budget-enforced): :class:`FitGuard`
(``model.guard``) gathers every reason in one place: a privacy callback halted it
(``PrivacyBudget``), a DP-SGD phase used every step its noise was calibrated for, a callback's
``should_stop``, or the trainer's limits; kept in ``model.fit_end_reason`` and logged.
"""

from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.strategies.launchers import _SubprocessScriptLauncher
from lightning.pytorch.utilities import rank_zero_info

from .sources import AccountingError

__all__ = ["FitGuard"]


class FitGuard:
    """The refusals and stop reasons of ``module``'s fits."""

    def __init__(self, module: Any) -> None:
        self.module = module
        #: why the fit must end before its next step (``None``: it goes on)
        self.halt_reason: str | None = None

    def start(self) -> None:
        """Forget the last fit's reasons; refuse a trainer that breaks the accounting."""
        self.halt_reason = None
        self.module.fit_end_reason = None
        self.module.privacy_halted = False
        self.check_trainer()

    def check_trainer(self) -> None:
        """Refuse trainer settings that break the accounting, before any step: several
        processes other than DDP with one script per process (spawned workers hand only the
        weights back, without the cached outputs; sharded strategies hide parameters from
        per-sample clipping), and what DP-SGD cannot live with (``refused_settings``)."""
        m = self.module
        trainer = m.trainer
        world = getattr(trainer, "world_size", 1)
        strategy = trainer.strategy
        launcher = getattr(strategy, "launcher", None)
        if m.level.private and world > 1 and (not isinstance(strategy, DDPStrategy) or (
            launcher is not None and not isinstance(launcher, _SubprocessScriptLauncher)
        )):
            raise AccountingError(
                f"private training on {world} processes needs strategy='ddp' (one script per "
                f"process: the ddp launcher, torchrun or SLURM); {type(strategy).__name__} with "
                f"{type(launcher).__name__} is not supported (see docs/distributed.md)"
            )
        bad = [] if m.row_trainer is None else m.row_trainer.refused_settings(trainer)
        if bad:
            raise AccountingError(
                f"{type(m).__name__} trains with DP-SGD; these Trainer settings break its "
                "privacy accounting:\n  - " + "\n  - ".join(bad)
            )

    def halt(self, reason: str) -> None:
        """End the fit before the next optimizer step; the model is marked ``privacy_halted``."""
        if self.halt_reason is None:
            self.halt_reason = reason
        self.module.privacy_halted = True

    def stop_reason(self) -> str | None:
        """Why the fit must end before the next optimizer step (``None``: it goes on)."""
        if self.halt_reason is not None:
            return self.halt_reason
        m = self.module
        phase = m.dpsgd_phase()
        if (
            phase is not None
            and m.target_epsilon is not None
            and m.accountant.total_count(phase.name) >= phase.total_steps
        ):
            return (
                f"DP-SGD phase {phase.name!r} used all {phase.total_steps} steps its noise was "
                f"calibrated for (target epsilon {m.target_epsilon:g})"
            )
        return None

    def before_batch(self) -> int | None:
        """``-1`` to stop before a step :meth:`stop_reason` refuses, or to skip the rest of
        an epoch of a stage out of patience (no step, no spend); every rank agrees."""
        m = self.module
        reason = self.stop_reason()
        skip = m.staged is not None and m.staged.out_of_patience()
        stop, skip = self.agreed(reason is not None, skip)
        if stop:
            self.halt_reason = reason or "another process stopped the fit"
            m.trainer.should_stop = True
            return -1
        return -1 if skip else None

    def agreed(self, *decisions: bool) -> tuple[bool, ...]:
        """``decisions`` as the whole process group takes them: each true when any rank's is."""
        m = self.module
        if m._trainer is None or m.trainer.world_size == 1:
            return tuple(bool(d) for d in decisions)
        strategy = m.trainer.strategy
        votes = torch.tensor([float(d) for d in decisions], device=strategy.root_device)
        return tuple(bool(v > 0) for v in strategy.reduce(votes, reduce_op="sum"))

    def end(self) -> None:
        """Record and log why the fit ended."""
        m = self.module
        trainer = m.trainer
        if self.halt_reason is not None:
            reason = self.halt_reason
        elif trainer.should_stop:
            reason = "a callback stopped it (trainer.should_stop, e.g. early stopping)"
        elif trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps:
            reason = f"all {trainer.max_steps} steps of the plan ran (max_steps)"
        else:
            reason = f"all {trainer.fit_loop.max_epochs} epochs of the plan ran"
        m.fit_end_reason = reason
        rank_zero_info(f"{type(m).__name__}: fit ended: {reason}")
