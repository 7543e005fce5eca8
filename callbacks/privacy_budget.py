"""``PrivacyBudget``: refuse over-budget fits, stop live ones at the budget, log, checkpoint."""

from __future__ import annotations

import math
import warnings
from typing import Any

import lightning as L

from lightning_dpgnn.methods import require_private_model
from lightning_dpgnn.privacy import (
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

    A model with several guarantees over different units (e.g. ``features`` under local DP and
    ``edges`` under edge-level DP) gets one budget per guarantee, ``epsilon={"features": 1.0,
    "edges": 2.0}``, and each guarantee is held to its own (never a sum); a single number is
    refused for such a model, since it would not say which guarantee it bounds.

    Args:
        epsilon: the budget (> 0), or a budget per guarantee name.
        delta: the largest delta accepted; ``None`` accepts the model's delta.
        secure_mode: draw all noise from the OS CSPRNG during the fit (see
            :mod:`lightning_dpgnn.privacy.random`); seeded generators are then refused.
    """

    def __init__(
        self,
        epsilon: float | dict[str, float],
        delta: float | None = None,
        secure_mode: bool = False,
    ) -> None:
        self.epsilon: float | dict[str, float]
        if isinstance(epsilon, dict):
            if not epsilon:
                raise ValueError("epsilon: give a budget for each guarantee")
            self.epsilon = {str(n): check_epsilon(e, f"epsilon[{n!r}]") for n, e in epsilon.items()}
        else:
            self.epsilon = check_epsilon(epsilon)
        self.delta = None if delta is None else check_delta(delta)
        self.secure_mode = bool(secure_mode)
        self.stopped_early = False
        self._previous_secure: bool | None = None

    # -- checks ------------------------------------------------------------------------------
    def _budgets(self, report: Any) -> dict[str, float]:
        """The budget of each guarantee of ``report`` (a clear error when they do not match)."""
        names = list(report.guarantees)
        if not isinstance(self.epsilon, dict):
            if len(names) > 1:
                raise ValueError(
                    f"the model carries {len(names)} guarantees over different units ({names}); "
                    "they are never added, so give one budget each: PrivacyBudget(epsilon="
                    + "{" + ", ".join(f"{n!r}: ..." for n in names) + "})"
                )
            return {names[0]: self.epsilon}
        if sorted(self.epsilon) != sorted(names) and not (
            len(names) == 1 and len(self.epsilon) == 1
        ):
            raise ValueError(
                f"PrivacyBudget has budgets for {sorted(self.epsilon)}, but the model's "
                f"guarantees are {names}"
            )
        if len(names) == 1:
            return {names[0]: next(iter(self.epsilon.values()))}
        return dict(self.epsilon)

    def _over(self, report: Any) -> bool:
        budgets = self._budgets(report)
        for name, g in report.guarantees.items():
            if not g.level.private:
                return True  # a non-private model reads data in the clear: infinite spend
            if self.delta is not None and g.delta > self.delta * (1 + _TOL):
                return True
            if g.epsilon > budgets[name] * (1 + _TOL):
                return True
        return False

    def _describe(self, report: Any) -> str:
        d = f", delta <= {self.delta:g}" if self.delta is not None else ""
        budget = (f"{self.epsilon:g}" if not isinstance(self.epsilon, dict)
                  else ", ".join(f"{n}: {e:g}" for n, e in self.epsilon.items()))
        return f"budget epsilon <= {budget}{d}; model: {report}"

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
        self._budgets(pl_module.privacy_spent())  # a budget per guarantee, before anything runs
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
            spend = "more than the budget on a rank"
            if over:
                parts = nxt.guarantees
                spend = "; ".join(
                    f"{n + ': ' if len(parts) > 1 else ''}epsilon {g.epsilon:.4g}"
                    for n, g in parts.items()
                )
            budget = self._describe(nxt).split(";")[0].replace(" epsilon <=", "")
            pl_module.halt_privately(f"PrivacyBudget: the next step would spend {spend} > {budget}")
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        parts = pl_module.privacy_spent().guarantees
        for name, g in parts.items():
            if math.isfinite(g.epsilon):
                key = "privacy/epsilon" if len(parts) == 1 else f"privacy/{name}/epsilon"
                pl_module.log(key, g.epsilon, prog_bar=True)

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
