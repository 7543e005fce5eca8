"""Shared machinery of the aggregation-perturbation methods (GAP, ProGAP).

Both methods train in stages on the staged fit loop, query the graph only through a Gaussian
sum-aggregation mechanism whose noisy outputs are cached once, and (at node level) train every
stage with DP-SGD. What they share lives here, so each method file reads like its algorithm box:

* argument checks (degree bound, epsilon or noise multiplier, no BatchNorm at node level);
* the private graph (node level: the promise that every in- and out-degree is at most ``D``
  is checked, invariant 6 — see docs/privacy.md for why no projection is used);
* one DP-SGD phase per stage (ledger name ``"<stage>/dpsgd"``), Poisson loaders, DP-Adam;
* the privacy plan of the remaining fit — pending aggregations (edge: sensitivity ``sqrt(2)``
  for the undirected unit or 1 for the directed one; node: ``sqrt(D)``) plus the remaining
  DP-SGD steps — which :class:`PrivateModule` calibrates into a single noise multiplier
  (thesis §4.7.5 for GAP, Theorem 5 for ProGAP);
* the mechanism, built lazily (so a restored model provably never queried it);
* checkpoints carrying the cached aggregates (mechanism outputs) and the staged state;
* transductive inference from the cache, inductive inference with fresh noise on a new graph.

Subclasses implement ``_build``, ``configure_stages``, ``pending_aggregations``,
``stage_model``, ``stage_inputs``, ``on_enter_stage``, ``_logits`` and ``_forward_graph``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch_geometric.data import Data

from ..loops import StagedTrainingMixin
from ..privacy import PrivacyAccountant, PrivacyReport, resolve_delta
from ..privacy.aggregation import GaussianAggregation, degrees, normalize_rows, sum_aggregate
from ..privacy.dpsgd import DPSGDPhase, grad_sample_module, row_loader
from .base import PrivateModule

__all__ = ["AggregationPerturbationModule", "DegreeBoundError"]

#: generator streams of one fit (only used with an explicit ``noise_seed``); aggregations use
#: streams ``0..K`` (the stage index), Poisson batches and gradient noise these offsets
_BATCH_STREAM, _GRADIENT_STREAM = 1_000, 2_000_000


class DegreeBoundError(ValueError):
    """Node level: the graph breaks the promise that every in- and out-degree is <= D."""


def check_degree_promise(graph: Data, max_degree: int, what: str = "the graph") -> None:
    """Raise :class:`DegreeBoundError` unless every in- and out-degree of ``graph`` is <= D.

    The node-level sensitivity ``sqrt(D)`` of the sum aggregation (thesis Lemma 8) holds on the
    class of graphs whose degrees are at most ``D`` — a class closed under removing a node, so
    both neighbouring graphs are in it. Sampling edges down to ``D`` is not a substitute: every
    projection we know of lets one removed node change edges far from it (docs/privacy.md)."""
    in_deg, out_deg = degrees(graph.edge_index, graph.num_nodes)
    top_in = int(in_deg.max()) if in_deg.numel() else 0
    top_out = int(out_deg.max()) if out_deg.numel() else 0
    if max(top_in, top_out) > max_degree:
        over = int(((in_deg > max_degree) | (out_deg > max_degree)).sum())
        raise DegreeBoundError(
            f"node-level privacy needs every in- and out-degree <= max_degree={max_degree}, "
            f"but {what} has {over} nodes above it (largest in-degree {top_in}, out-degree "
            f"{top_out}). The guarantee is proven only for graphs within the bound: pass a "
            "max_degree that is a public upper bound on every degree (e.g. a platform's friend "
            "limit), or use privacy='edge'. Dropping edges down to D does not keep the "
            "guarantee (docs/privacy.md, 'Node level: the degree bound')."
        )


class AggregationPerturbationModule(StagedTrainingMixin, PrivateModule):
    """Base of GAP and ProGAP. Subclasses set ``mechanism_name`` and ``checkpoint_key``.

    ``self.aggregates`` holds the cached private output of the mechanism (its type is the
    subclass's business); ``self.aggregation`` is the mechanism, ``None`` until first used.
    """

    mechanism_name = "aggregation"
    checkpoint_key = "ap"

    def _ap_init(self, noise_multiplier: float | None) -> None:
        hp = self.hparams
        if hp.max_degree < 1:
            raise ValueError(f"max_degree must be >= 1, got {hp.max_degree}")
        if self.privacy != "none" and hp.epsilon is None and noise_multiplier is None:
            raise ValueError("give epsilon (to calibrate the noise) or a noise_multiplier")
        if self.privacy == "node" and hp.normalization == "batch":
            raise ValueError(
                "normalization='batch' is not allowed under node-level DP: BatchNorm mixes the "
                "samples of a batch, so per-sample clipping no longer bounds one node's "
                "influence. Use 'layer', 'group' or 'none'."
            )
        self._staged_init()
        self.noise_multiplier = noise_multiplier
        self.aggregates: Any = None
        self.aggregation: GaussianAggregation | None = None
        self._phases: list[DPSGDPhase] = []
        self._graph: Data | None = None

    # -- to implement ------------------------------------------------------------------------
    def _build(self, num_features: int, num_classes: int) -> None:
        raise NotImplementedError

    def pending_aggregations(self) -> int:
        """Mechanism queries on the training graph that the rest of the fit will still make."""
        raise NotImplementedError

    def stage_model(self, index: int) -> nn.Module:
        """The module that stage ``index`` runs forward (its optimizer: trainable params)."""
        raise NotImplementedError

    def stage_parameters(self, index: int) -> list[nn.Parameter]:
        return [p for p in self.stage_model(index).parameters() if p.requires_grad]

    def stage_inputs(self, index: int, data: Data) -> tuple[torch.Tensor, ...]:
        """Per-node input rows of stage ``index`` (all nodes; the loader keeps training rows)."""
        raise NotImplementedError

    def _logits(self, data: Data) -> torch.Tensor:
        """Logits of every node of the training graph, from cached aggregates only."""
        raise NotImplementedError

    def _forward_graph(
        self, graph: Data, accountant: PrivacyAccountant, generator: torch.Generator | None
    ) -> torch.Tensor:
        """Logits on ``graph``, running every aggregation on it (inductive inference)."""
        raise NotImplementedError

    # -- construction helpers --------------------------------------------------------------
    def _mlp_kwargs(self) -> dict[str, Any]:
        hp = self.hparams
        return dict(dropout=hp.dropout, normalization=hp.normalization, activation=hp.activation)

    def _dp_wrap(self, module: nn.Module, what: str) -> nn.Module:
        """Node level: check the module suits DP-SGD and add per-sample gradients."""
        if self.privacy != "node":
            return module
        return grad_sample_module(module, self.hparams.max_grad_norm, where=what)

    def select_on_validation(self) -> bool:
        """Node level: validation labels are private and no mechanism covers them, so model
        selection on ``val/acc`` would leak them; the last epoch of each stage is kept."""
        return self.privacy != "node"

    # -- data and the privacy plan --------------------------------------------------------
    def setup(self, stage: str) -> None:
        data = self._datamodule_graph()
        if not self._is_built():
            with self.seeded(self.hparams.seed):
                self._build(data.num_features, self._num_classes(data))
        self._graph = self._private_graph(data)
        self.resolve_delta(self._graph)
        n_train = int(data.train_mask.sum())
        hp = self.hparams
        self._phases = [
            DPSGDPhase(f"{s.name}/dpsgd", s.epochs, hp.batch_size, hp.max_grad_norm).bind(n_train)
            for s in self.stages
        ]
        if stage == "fit":
            self.calibrate()
            self.aggregation = None  # built on first use from the (possibly restored) multiplier
            super().setup(stage)

    def _is_built(self) -> bool:
        return any(True for _ in self.parameters())

    def _private_graph(self, data: Data) -> Data:
        """Node level: check the degree promise (invariant 6). Other levels: as given."""
        if self.privacy == "node":
            check_degree_promise(data, self.hparams.max_degree)
        return data

    def calibrates_noise(self) -> bool:
        return self.privacy != "none"

    def uses_dpsgd(self) -> bool:
        return self.privacy == "node"

    def dpsgd_phase(self) -> DPSGDPhase | None:
        if self.privacy != "node" or not self._phases or self._trainer is None:
            return None
        return self._phases[self.current_stage]

    def _sensitivity(self) -> float:
        return self._mechanism_for(1.0).sensitivity

    def plan_mechanisms(
        self, accountant: PrivacyAccountant, noise_multiplier: float | None
    ) -> bool:
        """Pending aggregations (K hops / K NAPs not yet run) and, at node level, the DP-SGD
        steps each stage still has — all at one noise multiplier (thesis §4.7.5, Theorem 5)."""
        if self.privacy == "none" or noise_multiplier is None:
            return True
        pending = self.pending_aggregations()
        if pending:
            accountant.add_gaussian(
                self.mechanism_name, noise_multiplier, count=pending,
                sensitivity=self._sensitivity(),
            )
        if self.privacy == "node":
            for phase in self._phases:
                used = self.accountant.total_count(phase.name)
                phase.plan(accountant, noise_multiplier, max(0, phase.total_steps - used))
        return True

    def _mechanism_for(self, noise_multiplier: float) -> GaussianAggregation:
        return GaussianAggregation(
            noise_multiplier,
            level=self.privacy,
            max_degree=self.hparams.max_degree if self.privacy == "node" else None,
            name=self.mechanism_name,
            edge_unit=self.edge_unit,
        )

    def _mechanism(self) -> GaussianAggregation:
        """The aggregation mechanism at the model's noise multiplier (built once, reused)."""
        if self.aggregation is None or self.aggregation.noise_multiplier != self.noise_multiplier:
            self.aggregation = self._mechanism_for(self.noise_multiplier)
        return self.aggregation

    @torch.no_grad()
    def _aggregate_once(
        self,
        x: torch.Tensor,
        graph: Data,
        accountant: PrivacyAccountant,
        generator: torch.Generator | None,
    ) -> torch.Tensor:
        """One hop on ``graph``: ``A^T normalize_rows(x)``, plus calibrated noise when private
        (recorded on ``accountant``)."""
        if self.privacy == "none":
            return sum_aggregate(normalize_rows(x), graph.edge_index, graph.num_nodes)
        return self._mechanism()(x, graph.edge_index, graph.num_nodes, accountant, generator)

    # -- training ----------------------------------------------------------------------------
    def stage_rows(self, stage_index: int, data: Data) -> torch.utils.data.DataLoader:
        rows = self._train_rows(
            stage_index,
            data,
            lambda: self.stage_inputs(stage_index, data),
            compact=self.privacy != "node",  # DP-SGD needs dense rows (per-sample gradients)
        )
        if self.privacy == "node":
            gen = self.noise_generator(_BATCH_STREAM + self.trainer.current_epoch)
            return self._phases[stage_index].loader(*rows, generator=gen)
        return row_loader(*rows)

    def stage_optimizer(self, stage_index: int):
        params = self.stage_parameters(stage_index)
        opt = torch.optim.Adam(params, lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        if self.privacy != "node":
            self.dp_training = None
            return opt
        phase, model = self._phases[stage_index], self.stage_model(stage_index)
        gen = self.noise_generator(_GRADIENT_STREAM + stage_index)
        self.dp_training = phase.wrap(model, opt, self.noise_multiplier, self.accountant, gen)
        return self.dp_training[1]

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._rows_step(self.stage_model(self.current_stage), batch)

    def _require_cache(self) -> None:
        if self.aggregates is None:
            raise RuntimeError(
                f"{type(self).__name__} has no cached private aggregates yet: fit the model (or "
                "load a fitted checkpoint) before test/predict on the training graph"
            )

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        if not self._logs_metrics("val"):
            return None
        if self.trainer.sanity_checking and self.current_stage > 0 and self.aggregates is None:
            return None  # e.g. GAP without encoder: the first stage needs the aggregation first
        return self._log_accuracy(self._logits(data), data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return self._log_accuracy(self._logits(data), data, "test")

    # -- inference ---------------------------------------------------------------------------
    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        """Transductive by default: the training graph, read only through the cached aggregates
        (no spend). A graph marked ``data.inductive = True`` is a new graph: the mechanism runs
        on it with fresh noise (:meth:`predict_inductive`). The choice is never guessed from the
        data — running the mechanism again on the training graph would spend more epsilon."""
        if getattr(data, "inductive", False):
            return self.predict_inductive(data)
        self._require_cache()
        return self._logits(data).softmax(-1)

    @torch.no_grad()
    def predict_inductive(self, data: Data) -> torch.Tensor:
        """Class probabilities on a new graph, running the mechanism on it with fresh noise.

        The new graph's spend is recorded in a separate accountant (its data is disjoint from
        the training graph: parallel composition), available as ``last_inference_report``;
        with ``delta="auto"`` its delta is resolved from the new graph's own units.
        """
        if self.privacy != "none" and self.noise_multiplier is None:
            raise RuntimeError(
                f"{type(self).__name__} must be fitted (or loaded) before inductive inference"
            )
        self.check_feature_width(data, "same columns, same public code book")
        graph = self._private_graph(data)
        delta = None
        if self.privacy != "none":
            delta = resolve_delta(self.target_delta, self.private_units(graph))
        acc = PrivacyAccountant(self.privacy, delta, unit=self.accountant.unit)
        logits = self._forward_graph(graph, acc, None)
        self.last_inference_report = PrivacyReport.from_accountant(
            acc, private=self.privacy != "none"
        )
        return logits.softmax(-1)

    @staticmethod
    @torch.no_grad()
    def _eval_forward(module: nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
        """Run ``module`` in eval mode (no dropout, running norm stats), then restore its mode."""
        was_training = module.training
        module.eval()
        out = module(*inputs)
        module.train(was_training)
        return out

    # -- checkpoints -----------------------------------------------------------------------
    def mechanism_outputs(self) -> dict[str, Any]:
        return {self.mechanism_name: self.aggregates}

    def load_mechanism_outputs(self, outputs: dict[str, Any]) -> None:
        self.aggregates = outputs.get(self.mechanism_name)
        self.aggregation = None  # a mechanism built before the restore used a stale multiplier

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint[self.checkpoint_key] = {"staged": self.staged_state()}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        state = checkpoint[self.checkpoint_key]
        self.load_staged_state(state["staged"], checkpoint.get("epoch", 0))
