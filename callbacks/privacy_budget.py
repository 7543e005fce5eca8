"""``PrivacyBudget``: refuse over-budget fits, stop live ones at the budget, log, checkpoint."""

from __future__ import annotations

import math
import warnings
from typing import Any

import lightning as L

from lightning_dpgnn.methods import require_private_model
from lightning_dpgnn.privacy import (
    PrivacyReport,
    check_delta,
    check_epsilon,
    is_secure_mode,
    set_secure_mode,
)

__all__ = ["PrivacyBudget", "BudgetExceededError"]

_TOL = 1e-9  # relative slack for float noise in epsilon comparisons


class BudgetExceededError(RuntimeError):
    """The model's planned privacy spend exceeds the budget."""


class PrivacyBudget(L.Callback):
    """Enforce a privacy budget on a fit.

    * before the first step, the model's planned spend (``privacy_planned()``) is compared with
      the budget and an over-budget fit raises :class:`BudgetExceededError` — no optimizer step
      and no mechanism has run;
    * before every training step, the spend the step would reach (``privacy_if_next_step()``)
      is checked, and the fit stops *before* a step that would exceed the budget;
    * epsilon spent is logged as ``privacy/epsilon`` each epoch;
    * the final report (and the budget) is written into every checkpoint under
      ``checkpoint["privacy_budget"]``.

    Args:
        epsilon: the budget (> 0).
        delta: the largest delta accepted; ``None`` accepts the model's delta.
        secure_mode: draw all noise from the OS CSPRNG during the fit (see
            :mod:`lightning_dpgnn.privacy.random`); seeded generators are then refused.
    """

    def __init__(
        self, epsilon: float, delta: float | None = None, secure_mode: bool = False
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = None if delta is None else check_delta(delta)
        self.secure_mode = bool(secure_mode)
        self.stopped_early = False
        self._previous_secure: bool | None = None

    # -- checks ------------------------------------------------------------------------------
    def _over(self, report: PrivacyReport) -> bool:
        if report.level == "none":
            return True  # a non-private model reads data in the clear: infinite spend
        if self.delta is not None and report.delta > self.delta * (1 + _TOL):
            return True
        return report.epsilon > self.epsilon * (1 + _TOL)

    def _describe(self, report: PrivacyReport) -> str:
        d = f", delta <= {self.delta:g}" if self.delta is not None else ""
        return f"budget epsilon <= {self.epsilon:g}{d}; model: {report}"

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit" and self.secure_mode:
            self._previous_secure = is_secure_mode()
            set_secure_mode(True)

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit" and self.secure_mode and self._previous_secure is not None:
            set_secure_mode(self._previous_secure)  # restore what was set, never force it off
            self._previous_secure = None

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        require_private_model(pl_module, "PrivacyBudget")
        self.stopped_early = False
        planned = pl_module.privacy_planned()
        if planned is None:
            warnings.warn(
                "the model cannot plan its spend in advance (open-ended DP-SGD); PrivacyBudget "
                "will stop the fit before the step that would exceed the budget",
                stacklevel=2,
            )
            return
        if self._over(planned):
            raise BudgetExceededError(
                "the planned privacy spend exceeds the budget, so the fit was refused before "
                f"its first step: {self._describe(planned)}"
            )

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        nxt = pl_module.privacy_if_next_step()
        over = nxt is not None and self._over(nxt)
        # every process stops before the same step (reduced as Lightning's EarlyStopping does)
        if trainer.strategy.reduce_boolean_decision(over, all=False):
            self.stopped_early = True
            spend = f"epsilon {nxt.epsilon:.4g}" if over else "more than the budget on a rank"
            pl_module.halt_privately(
                f"PrivacyBudget: the next step would spend {spend} > budget {self.epsilon:g}"
            )
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        eps = pl_module.privacy_spent().epsilon
        if math.isfinite(eps):
            pl_module.log("privacy/epsilon", eps, prog_bar=True)

    def on_save_checkpoint(
        self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        checkpoint["privacy_budget"] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "report": pl_module.privacy_spent().to_dict(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "stopped_early": self.stopped_early}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.stopped_early = bool(state_dict.get("stopped_early", False))
