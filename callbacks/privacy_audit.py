"""``PrivacyAudit``: after a fit, attack the model and log what the attacks achieve next to the
accounted epsilon.

* node membership inference (TSTF, :func:`~lightning_dpgnn.attacks.node_membership_inference`):
  shadow fits of the model's own class and hyper-parameters, AUC over ``repeats``;
* link stealing (:func:`~lightning_dpgnn.attacks.link_stealing`): posterior similarity of
  edges vs non-edges;
* for a model trained with DP-SGD, an empirical lower bound on epsilon for its DP-SGD
  configuration (noise multiplier, sampling rate, steps) from gradient canaries
  (:func:`~lightning_dpgnn.attacks.audit_dpsgd`), next to the epsilon the ledger records for
  that configuration;
* for a model with a Gaussian aggregation (GAP's PMA, ProGAP's NAP, DPGNN's inference
  aggregate), an empirical lower bound on epsilon for one call of its own mechanism on the
  unit it protects (:func:`~lightning_dpgnn.attacks.audit_mechanism`: canary edge, friendship
  or node), next to the epsilon the ledger records for that call.

Results are logged (``audit/mia_auc``, ``audit/link_auc``, ``audit/epsilon_lower``,
``audit/aggregation_epsilon_lower``, ...), kept on
the model as ``model.empirical_audit`` (the model card shows them) and printed. They are
computed on the private data (membership, edges) and are released outside the guarantee, like
an accuracy.
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_info

from lightning_dpgnn.attacks import (
    AuditResult,
    audit_dpsgd,
    audit_mechanism,
    link_stealing,
    node_membership_inference,
)
from lightning_dpgnn.data import NodeDataSource
from lightning_dpgnn.methods import PrivateModule, require_private_model
from lightning_dpgnn.privacy.random import reproducible_generator
from lightning_dpgnn.publish.card import describe_audit as describe  # the card's audit line

__all__ = ["PrivacyAudit", "run_audit"]


def run_audit(
    model: L.LightningModule,
    data: Any,
    *,
    membership: bool = True,
    links: bool = True,
    repeats: int = 3,
    epsilon_trials: int = 20_000,
    aggregation_trials: int = 1_000_000,
    shadow_trainer: dict[str, Any] | None = None,
    seed: int = 0,
    noise_seed: int | None = None,
) -> dict[str, Any]:
    """Audit a fitted private ``model`` trained on ``data``; the results as a flat dict (also
    stored as ``model.empirical_audit``).

    ``noise_seed`` seeds the noise of the audit's own simulations (the DP-SGD and aggregation
    canaries run on synthetic gadgets, never on ``data``), which makes the epsilon bounds
    reproducible; ``None`` draws fresh entropy. The model's own noise is never touched.
    """
    report = require_private_model(model, "PrivacyAudit").privacy_spent()
    out: dict[str, Any] = {
        "epsilon": None if math.isinf(report.epsilon) else report.epsilon,
        "delta": report.delta,
        "level": report.level.value,
    }
    if membership:
        mia = node_membership_inference(
            model, data, repeats=repeats, trainer_kwargs=shadow_trainer, seed=seed
        )
        lo, hi = mia.ci
        out.update(mia_auc=mia.mean, mia_auc_low=lo, mia_auc_high=hi, mia_repeats=repeats)
    if links and data.edge_index.numel() > 0:
        ls = link_stealing(model, data, repeats=repeats, seed=seed)
        lo, hi = ls.ci
        out.update(link_auc=ls.mean, link_auc_low=lo, link_auc_high=hi)
    phase = model.dpsgd_phase() if isinstance(model, PrivateModule) else None
    z = getattr(model, "noise_multiplier", None)
    # the DP-SGD audit tests one clipped row per protected unit: it does not apply to phases
    # where one unit changes several rows (DPGNN: a node and its D neighbours' terms)
    plain = phase is not None and phase.group_size is None
    if epsilon_trials and plain and z and phase.num_samples:
        steps = max(1, phase.total_steps)
        r = audit_dpsgd(
            z, steps=steps, sample_rate=phase.sample_rate, max_grad_norm=phase.max_grad_norm,
            trials=epsilon_trials, delta=report.delta or 1e-5, ghost=True,
            noise_generator=_audit_generator(noise_seed, 0),
            batch_generator=_audit_generator(noise_seed, 1),
        )  # fmt: skip
        out.update(_bound_fields("", r))
    agg = model.aggregation_mechanism() if isinstance(model, PrivateModule) else None
    if aggregation_trials and agg is not None:
        r = audit_mechanism(
            agg, trials=aggregation_trials, delta=report.delta or 1e-5,
            noise_generator=_audit_generator(noise_seed, 2),
        )  # fmt: skip
        out.update(_bound_fields("aggregation_", r))
    model.empirical_audit = out
    return out


def _audit_generator(seed: int | None, stream: int) -> torch.Generator | None:
    """The seeded generator of one of the audit's simulations (``None``: fresh entropy)."""
    return None if seed is None else reproducible_generator(seed, stream)


def _bound_fields(prefix: str, r: AuditResult) -> dict[str, Any]:
    """A mechanism audit's fields in ``empirical_audit`` (``prefix``: which mechanism)."""
    return {
        f"{prefix}epsilon_lower": r.epsilon_lower, f"{prefix}epsilon_audited": r.epsilon_accounted,
        f"{prefix}epsilon_trials": r.trials, f"{prefix}epsilon_mechanism": r.unit,
    }  # fmt: skip


class PrivacyAudit(L.Callback):
    """Attack the model at the end of ``fit`` and log the results next to its epsilon.

    Args:
        membership: run TSTF node membership inference (``repeats`` shadow fits).
        links: run posterior-similarity link stealing.
        repeats: repeats of each attack (the CI is over them).
        epsilon_trials: trials per hypothesis of the DP-SGD audit (models trained with DP-SGD
            only; ``0`` skips it). Its cost grows with the model's DP-SGD steps.
        aggregation_trials: trials per hypothesis of the audit of the model's Gaussian
            aggregation (one call, on the unit it protects; ``0`` skips it). The default, 10^6,
            catches a GAP at its defaults (epsilon 1: 0.55 per call) that draws half its noise
            in 40 of 40 runs, where 2 * 10^4 caught it in 5 of 40 and 10^5 in 27 of 40
            (``benchmarks/results/audit_power.md``); it costs about 2 CPU-seconds at edge
            level. At node level a trial costs ``D + 2`` nodes: the trials are capped at 4M
            gadget nodes (1,000 at least), so large D audits with fewer trials and less power.
        shadow_max_epochs: ``max_epochs`` of the shadow fits (default: the fit's own).
        seed: seeds the shadow splits and attack models (never privacy noise).
        noise_seed: seeds the noise of the audit's own canary simulations (synthetic gadgets,
            not the private data), so that its epsilon bounds are reproducible; ``None``
            (default) draws fresh entropy. Never the model's noise; refused in secure mode.
    """

    def __init__(
        self,
        membership: bool = True,
        links: bool = True,
        repeats: int = 3,
        epsilon_trials: int = 20_000,
        shadow_max_epochs: int | None = None,
        seed: int = 0,
        aggregation_trials: int = 1_000_000,
        noise_seed: int | None = None,
    ) -> None:
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        self.membership, self.links, self.repeats = membership, links, int(repeats)
        self.epsilon_trials, self.seed = epsilon_trials, seed
        self.aggregation_trials, self.noise_seed = aggregation_trials, noise_seed
        self.shadow_max_epochs = shadow_max_epochs
        self.results: dict[str, Any] | None = None

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        require_private_model(pl_module, "PrivacyAudit")

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        dm = trainer.datamodule
        if not isinstance(dm, NodeDataSource):
            raise ValueError(
                "PrivacyAudit needs a fit with a NodeDataModule (trainer.fit(model, dm))"
            )
        if trainer.global_rank != 0:
            return
        epochs = self.shadow_max_epochs or trainer.max_epochs
        training = pl_module.training
        self.results = run_audit(
            pl_module, dm.data, membership=self.membership, links=self.links,
            repeats=self.repeats, epsilon_trials=self.epsilon_trials,
            aggregation_trials=self.aggregation_trials, shadow_trainer={"max_epochs": epochs},
            seed=self.seed, noise_seed=self.noise_seed,
        )  # fmt: skip
        pl_module.train(training)
        metrics = {
            f"audit/{k}": float(v) for k, v in self.results.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
        }  # fmt: skip
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)
        rank_zero_info(f"PrivacyAudit: {describe(self.results)}")
