"""Shared machinery of the aggregation-perturbation methods (GAP, ProGAP, PoinDP): staged fits
that read the graph only through Gaussian sum-aggregations released once and cached, with
DP-SGD at node level; the degree promise (invariant stable-degree-bound), the plan of the rest
of the fit that :class:`PrivateModule` calibrates into one noise multiplier (thesis §4.7.5,
Theorem 5), the label counts, and DDP row sharding (docs/distributed.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from lightning.fabric.utilities.apply_func import apply_to_collection
from torch import nn
from torch_geometric.data import Data

from ..levels import Level
from ..loops import StagedFit
from ..nn.mlp import resolve_normalization
from ..privacy import PrivacyAccountant
from ..privacy.aggregation import (
    GaussianAggregation,
    check_degree_promise,
    hop_noise_scales,
    normalize_rows,
    sum_aggregate,
)
from ..privacy.distributed import block_sum_aggregate, gather_rows, row_blocks
from ..privacy.dpsgd import DPSGDPhase, grad_sample_module, unwrap
from ..privacy.mechanism import Steps
from ..publish.card import MethodCard
from .arguments import node_unit
from .base import PrivateModule
from .metrics import log_rows, logs_metrics
from .releases import EDGES, FEATURES, TRAIN_LABELS, Draw, Release
from .rows import RowTrainer
from .runtime import evaluating
from .votes import VOTES, Votes

#: ledger and cache name of the label-count aggregation (``label_counts=True``)
LABEL_COUNTS = "label_counts"
#: what the label counts read: the edges and the training labels
COUNT_READS = (EDGES, TRAIN_LABELS)
#: noise stream of the label counts under an explicit ``noise_seed`` (research only)
LABEL_STREAM = 7919

__all__ = ["AggregationPerturbationModule"]


class AggregationPerturbationModule(PrivateModule):
    """Base of GAP, ProGAP and PoinDP: holds the staged fit (``self.staged``) and the row
    trainer (DP-SGD at node level); ``self.aggregation`` is the mechanism, ``None`` until first
    used. Subclasses set ``mechanism_name`` and declare their hop releases.

    Args:
        max_degree: node level (required there): D, a public bound on every in- and
            out-degree (checked: a graph above it is refused).
        ensemble: classification modules trained side by side on the cached releases, their
            log-probabilities averaged (one model to the privacy analysis).
        hop_budget: each hop's share of the aggregation budget (normalized; ``None``: equal):
            hop ``k`` gets noise multiplier ``z * sqrt(1 / (K * share_k))``.
        dropout, activation: MLP settings.
        normalization: ``"auto"`` (BatchNorm at edge level and without privacy,
            :attr:`node_level_normalization` at node level), ``"none"``, ``"layer"``,
            ``"group"`` or ``"batch"`` (refused at node level: BatchNorm mixes samples).
        batch_size, max_grad_norm: DP-SGD settings (node level only).
        noise_multiplier: skip calibration and use this noise scale (checked against epsilon).
        seed: seed of the weight initialisation (never of privacy noise).
        shard_rows: under DDP, each rank aggregates into and trains on its block of node rows
            (noise still drawn once); no effect on the accounting.
        label_counts: give every node a noisy count of its in-neighbours' training labels per
            class, ``A^T Y_train + N(0, sigma^2)``: one more Gaussian aggregation (one-hot rows
            have norm 1), at the full noise multiplier, drawn once and cached. ``None``: on at
            edge level and without privacy; refused at node level, where labels are private.
            A new graph uses the labels of its own ``train_mask``.
        train_batch_size: edge level and without privacy: shuffled batches of this many rows
            instead of one full batch (no privacy cost). Refused at node level.
        votes: the graph as an addition to the free model of the features
            (:mod:`~lightning_dpgnn.methods.votes`): one more Gaussian aggregation, of the
            stage-0 network's class probabilities (training nodes: their labels), and an answer
            weighing the free model, the method and the votes on validation labels. Edge level
            or without privacy (refused at node level, where labels are private); with it,
            ``label_counts`` defaults to off. ``False`` (the default for now): the papers' model.
        votes_share: the votes' share of the plan's Rényi cost (the method's aggregations
            share the rest).
        privacy, epsilon, delta, noise_seed, edge_unit, log_private_metrics, lr,
            weight_decay: as in :class:`PrivateModule`.
    """

    mechanism_name = "aggregation"
    sparse_features = True  # rows gathered as sparse COO (read by the datamodule)
    caches = ("_features_cache_lc", "_local_view")  # declared (PrivateModule.reset_caches)
    #: what a hub folder published before label counts existed was made with (the papers' model)
    legacy_hparams = {"label_counts": False, "votes": False}

    def __init__(
        self,
        privacy: str,
        epsilon: float | None,
        delta: float | str,
        *,
        max_degree: int | None = None,
        ensemble: int = 1,
        hop_budget: Sequence[float] | None = None,
        dropout: float = 0.0,
        normalization: str = "auto",
        activation: str = "selu",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        batch_size: int = 256,
        max_grad_norm: float = 1.0,
        noise_multiplier: float | None = None,
        seed: int | None = None,
        noise_seed: int | None = None,
        edge_unit: str = "undirected",
        log_private_metrics: bool = False,
        shard_rows: bool = True,
        label_counts: bool | None = None,
        train_batch_size: int | None = None,
        votes: bool = False,
        votes_share: float = 0.8,
    ) -> None:
        super().__init__(
            privacy, epsilon, delta, noise_seed=noise_seed, edge_unit=edge_unit,
            log_private_metrics=log_private_metrics, lr=lr, weight_decay=weight_decay,
        )
        # the hyper-parameters of the whole model: these and the subclass's own arguments
        self.save_hyperparameters()
        if self.level.private and epsilon is None and noise_multiplier is None:
            raise ValueError("give epsilon (to calibrate the noise) or a noise_multiplier")
        if self.level is Level.NODE and label_counts:
            raise ValueError(
                "label_counts=True is not allowed under node-level DP: the labels are private "
                "there, and the count of a node's neighbours' labels is not covered by the "
                "node-level plan. Use it at edge level or without privacy."
            )
        if votes and self.level is Level.NODE:
            raise ValueError(
                "votes=True is not allowed under node-level DP: the votes read the labels and "
                "choose their weight on validation labels, both private at node level"
            )
        if train_batch_size is not None and self.level is Level.NODE:
            raise ValueError(
                "train_batch_size is for edge level or no privacy: at node level DP-SGD draws "
                "its own Poisson batches (set batch_size)"
            )
        if self.level is Level.NODE and normalization == "batch":
            raise ValueError(
                "normalization='batch' is not allowed under node-level DP: BatchNorm mixes the "
                "samples of a batch, so per-sample clipping no longer bounds one node's "
                "influence. Use 'layer', 'group' or 'none'."
            )
        if self.level is Level.NODE:
            self.accountant.unit = node_unit(max_degree, f"{type(self).__name__}(privacy='node')")
        self.max_degree, self.ensemble = max_degree, ensemble
        self.dropout, self.normalization, self.activation = dropout, normalization, activation
        self.batch_size, self.max_grad_norm = batch_size, max_grad_norm
        self.train_batch_size = None if train_batch_size is None else int(train_batch_size)
        self.seed = seed
        self.shard_rows = bool(shard_rows)
        #: ``None`` (the default): on at edge level and without privacy unless the votes are
        self.label_counts = (
            self.level is not Level.NODE and not votes
            if label_counts is None
            else bool(label_counts)
        )
        #: ``[lo, hi)``: the node rows the cached hops hold when sharded (``None``: all)
        self._cache_block: tuple[int, int] | None = None
        self.hop_budget = None if hop_budget is None else tuple(hop_budget)
        node = self.level is Level.NODE
        self.row_trainer = RowTrainer(self, dpsgd=node)
        # node level: no model selection on private validation labels; Poisson batches come
        # from a per-epoch generator
        self.staged = StagedFit(
            self, self.stage_rows, self.stage_optimizer, select=not node, reload_every_epoch=node
        )
        self.noise_multiplier = noise_multiplier
        self.aggregation: GaussianAggregation | None = None
        self._phases: list[DPSGDPhase] = []
        self._graph: Data | None = None
        if self.label_counts:
            self.declare_releases(Release(
                LABEL_COUNTS, self.count_mechanisms, self._draw_counts, stage=0,
                stream=LABEL_STREAM, collective=True, reads=COUNT_READS,
            ))  # fmt: skip
        self.votes = Votes(self, votes_share) if votes else None

    # -- the releases -------------------------------------------------------------------------
    def hop_names(self) -> list[str]:
        """The hop releases (every declared release but the label counts), in draw order."""
        return [n for n in self.releases.declared if n != LABEL_COUNTS]

    def count_mechanisms(self, z: float | None) -> list[GaussianAggregation]:
        """The label counts' one Gaussian aggregation at the full noise multiplier ``z``."""
        return [self._mechanism_for(z, LABEL_COUNTS, COUNT_READS)] if self.level.private else []

    def _draw_counts(self, d: Draw) -> Steps:
        """``A^T Y_train`` plus the plan's noise, on every rank together on the training graph."""
        labels = self._known_labels(d.graph)
        return (yield from self._aggregate(labels, d, 0))

    def _whole(self, rows: torch.Tensor) -> torch.Tensor:
        """All ``N`` rows of a cached hop (what checkpoints and the hub store): gathered from
        the ranks' blocks while sharded (a collective, as ``on_save_checkpoint`` runs on every
        rank)."""
        if self._cache_block is None or self._graph is None:
            return rows
        return gather_rows(rows, self._graph.num_nodes)

    def hop_mechanisms(self, z: float | None, hops: range) -> list[GaussianAggregation]:
        """The aggregations of the hops ``hops`` (0-based) at noise multiplier ``z``, each at
        its share of the budget (:meth:`hop_scales`); none without privacy."""
        if not self.level.private:
            return []
        base = self._mechanism() if z == self.noise_multiplier else self._mechanism_for(z)
        scales = self.hop_scales()
        return [base.scaled(scales[hop]) for hop in hops]

    def release_graph(self) -> Data:
        self._hold_local_rows()  # a restored full cache: the block the next release reads
        return self.on_device(self._graph)

    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        self.__dict__.pop("_features_cache_lc", None)
        if restored:
            self._cache_block = None
            self.aggregation = None  # a mechanism built before the restore: stale multiplier
        self.row_trainer.clear_rows()  # rows gathered from replaced releases
        if not restored:
            self._hold_local_rows()  # this rank's block of what was just drawn

    # -- the stages (defaults: an encoder stage, then a classifier on the release) ------------
    def total_aggregations(self) -> int:
        """K, the number of private aggregation hops one fit (or one inference) runs."""
        return self.hparams.hops

    def stage_model(self, index: int) -> nn.Module:
        """The module that stage ``index`` runs forward (its optimizer: trainable params)."""
        return self.encoder_model if index == 0 else self.classifier

    def _encoder(self) -> nn.Module:
        return unwrap(self.encoder_model)

    def stage_parameters(self, index: int) -> list[nn.Parameter]:
        return [p for p in self.stage_model(index).parameters() if p.requires_grad]

    def classifier_input(self, x: torch.Tensor, release: Any) -> torch.Tensor:
        """The classifier's rows from the nodes' features ``x`` and the hop release."""
        raise NotImplementedError

    def stage_inputs(self, index: int, data: Data) -> tuple[torch.Tensor, ...]:
        """Per-node input rows of stage ``index`` (all nodes; the loader keeps training rows)."""
        x = self._features(data)
        if index == 0:
            return (x,)
        return (self.classifier_input(x, self.releases[self.mechanism_name]),)

    def _logits(self, data: Data) -> torch.Tensor:
        """Scores of every node of the training graph from the cached releases: the
        method's, weighed with the free model and the votes once the fit chose the weights."""
        logits = self._method_logits(data)
        if not self._answers_with_votes():
            return logits
        return self.votes.answer(data, logits, self.releases[VOTES])

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        logits = self._method_inductive_logits(graph, outputs)
        if not self._answers_with_votes():
            return logits
        return self.votes.answer(graph, logits, outputs[VOTES])

    def _answers_with_votes(self) -> bool:
        return self.votes is not None and not self._in_fit() and self.votes.chosen

    def free_logits(self, data: Data) -> torch.Tensor:
        """The stage-0 network's logits of ``data``'s nodes: a model of the features (and of
        the label counts when on) alone, free at edge level."""
        (x,) = self.stage_inputs(0, data)
        return self._eval_forward(self.stage_model(0), self.row_trainer.input_features(x))

    def _method_logits(self, data: Data) -> torch.Tensor:
        x = self._features(data)
        if self.eval_stage() == 0:
            return self.encoder_model(self.row_trainer.input_features(x))
        return self.classifier(self.classifier_input(x, self.releases[self.mechanism_name]))

    def _method_inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        x = self._features(graph, outputs.get(LABEL_COUNTS))
        return self.classifier(self.classifier_input(x, outputs[self.mechanism_name]))

    def eval_stage(self) -> int:
        """The stage whose submodel gives the logits: during a fit the stage now training,
        afterwards the last stage fitted."""
        return 0 if self._in_fit() and self.staged.current_stage == 0 else 1

    # -- construction helpers --------------------------------------------------------------
    #: what ``normalization="auto"`` means at node level (BatchNorm is refused there)
    node_level_normalization = "none"

    def mlp_options(self) -> dict[str, Any]:
        """Keyword arguments of every :class:`~lightning_dpgnn.nn.mlp.MLP` of the model."""
        norm = resolve_normalization(
            self.normalization, self.privacy, self.node_level_normalization
        )
        return dict(dropout=self.dropout, normalization=norm, activation=self.activation)

    def hop_scales(self) -> tuple[float, ...]:
        """Per-hop noise-scale multipliers from ``hop_budget`` (all 1 for equal shares)."""
        return hop_noise_scales(self.hop_budget, self.total_aggregations())

    def _dp_wrap(self, module: nn.Module, what: str) -> nn.Module:
        """Node level: check the module suits DP-SGD and add per-sample gradients."""
        if self.level is not Level.NODE:
            return module
        return grad_sample_module(module, self.max_grad_norm, where=what)

    # -- setup (PrivateModule's template) and the privacy plan ------------------------------
    def setup_data(self, stage: str) -> Data:
        return self._private_graph(self._datamodule_graph())

    def prepare(self, data: Data, stage: str) -> None:
        """The graph the fit reads, and one DP-SGD phase per stage."""
        self._graph = data
        n_train = int(data.train_mask.sum())
        self._phases = [
            DPSGDPhase(f"{s.name}/dpsgd", s.epochs, self.batch_size, self.max_grad_norm).bind(
                n_train
            )
            for s in self.staged.stages
        ]

    def calibrate(self) -> None:
        """Only a fit calibrates; the mechanism is then rebuilt on first use from the
        (possibly restored) multiplier."""
        if self._trainer is None or self._in_fit():
            self.ledgers.calibrate()
            self.aggregation = None

    def _private_graph(self, data: Data) -> Data:
        """Node level: check the degree promise (invariant stable-degree-bound)."""
        if self.level is Level.NODE:
            check_degree_promise(data.edge_index, data.num_nodes, self.max_degree)
        return data

    def calibrates_noise(self) -> bool:
        return self.level.private

    def dpsgd_phase(self) -> DPSGDPhase | None:
        if self.level is not Level.NODE or not self._phases or self._trainer is None:
            return None
        return self._phases[self.staged.current_stage]

    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """Node level: the DP-SGD steps each stage still has, at the fit's one noise multiplier
        (thesis §4.7.5, Theorem 5); the aggregations plan themselves as releases."""
        if self.level is Level.NODE and noise_multiplier is not None:
            for phase in self._phases:
                used = self.accountant.total_count(phase.name)
                phase.plan(accountant, noise_multiplier, max(0, phase.total_steps - used))
        return True

    def _mechanism_for(
        self, noise_multiplier: float, name: str | None = None,
        reads: tuple[str, ...] = (EDGES, FEATURES),
    ) -> GaussianAggregation:
        return GaussianAggregation(
            noise_multiplier,
            level=self.privacy,
            max_degree=self.max_degree if self.level is Level.NODE else None,
            name=name or self.mechanism_name,
            edge_unit=self.edge_unit,
            reads=reads,
        )

    def _mechanism(self) -> GaussianAggregation:
        """The aggregation mechanism at the model's noise multiplier (built once, reused)."""
        if self.aggregation is None or self.aggregation.noise_multiplier != self.noise_multiplier:
            self.aggregation = self._mechanism_for(self.noise_multiplier)
        return self.aggregation

    def aggregation_mechanism(self) -> GaussianAggregation | None:
        """The mechanism as its weakest hop runs it (the smallest share of noise under
        ``hop_budget``), for an audit; ``None`` without privacy or before calibration."""
        if not self.level.private or self.noise_multiplier is None:
            return None
        return self._mechanism_for(self.noise_multiplier * min(self.hop_scales()))

    @torch.no_grad()
    def _aggregate(self, x: torch.Tensor, d: Draw, index: int) -> Steps:
        """``A^T normalize_rows(x)`` on ``d.graph``, then (yielded to the draw's preamble) the
        noise of ``d.mechanisms[index]`` when private. On the fit's graph every rank sums the
        edges into its block of rows (or every edge) and the release is ``collective``: the
        noise is sampled once, on rank 0, so every rank gets the single-process aggregate."""
        graph, n = d.graph, d.graph.num_nodes
        mechanism = d.mechanisms[index] if d.mechanisms else None
        if mechanism is not None:
            mechanism.check_input(x, graph.edge_index, n)
        x = normalize_rows(x)
        block = self._row_block() if d.fit else None
        if block is None:
            agg = sum_aggregate(x, graph.edge_index, n)
        else:  # this rank's edge partition: the edges into its rows
            agg = gather_rows(block_sum_aggregate(x, graph.edge_index, block), n)
        return agg if mechanism is None else (yield mechanism, agg)

    def describe(self) -> MethodCard:
        """The card's method line as the model was built (perturbed or not, DP-SGD, the label
        counts: an addition of this library, with their ledger note and what a new graph
        needs for them)."""
        card = super().describe()
        how = ("every aggregation perturbed once with calibrated Gaussian noise and cached"
               if self.level.private else "aggregations in the clear: non-private")
        if self.row_trainer.dpsgd:
            how += "; the modules that read private rows train with DP-SGD"
        card = replace(card, method=f"{card.method} ({how})")
        if not self.label_counts:
            return card
        noisy = "noisy " if self.level.private else ""
        return replace(
            card,
            method=f"{card.method}; with label counts: each node's input also holds the {noisy}"
            "count of its in-neighbours' training labels per class (`A^T Y_train`"
            + (" + Gaussian noise, one more mechanism in the ledger" if noisy else "")
            + "), an addition of lightning-dpgnn that is not in the paper (`label_counts=False` "
            "gives the paper's model)",
            ledger_notes={LABEL_COUNTS: (
                "sum aggregation of one-hot training-label rows (norm 1): one edge changes it by "
                "at most its sensitivity, as for one hop of normalized features; a mechanism of "
                "lightning-dpgnn, not of the GAP/ProGAP papers or the thesis (docs/privacy.md, "
                "Label counts)")},
            new_graph=("new_graph.train_mask, new_graph.y = known, labels   # label counts read "
                       "the labels you already know (without them every count is noise only)",),
        )

    # -- label counts (``label_counts=True``) --------------------------------------------
    def input_width(self, num_features: int, num_classes: int) -> int:
        """Width of the first network's input: the features, then the label counts."""
        return num_features + (num_classes if self.label_counts else 0)

    def _known_labels(self, graph: Data) -> torch.Tensor:
        """``[N, C]``: one-hot rows of the labels of ``graph.train_mask`` (zero rows
        elsewhere). No other label is read: validation and test labels stay out."""
        c = int(self.hparams.num_classes)
        rows = torch.zeros(graph.num_nodes, c, device=graph.edge_index.device)
        mask, y = getattr(graph, "train_mask", None), getattr(graph, "y", None)
        if mask is None or y is None:
            return rows  # a new graph without known labels: every count is noise only
        known = mask & (y >= 0) & (y < c)
        rows[known] = torch.nn.functional.one_hot(y[known], c).to(rows.dtype)
        return rows

    def _features(self, data: Data, counts: torch.Tensor | None = None) -> torch.Tensor:
        """The network input of ``data``'s nodes: ``data.x``, then (``label_counts``) the
        label counts: ``counts`` of a new graph, else the training graph's released ones (the
        rows of ``data``: all of them, or this rank's block). Cached per tensor."""
        x = data.x
        if not self.label_counts:
            return x
        if counts is None:
            lo = int(getattr(data, "row_offset", 0))
            counts = self.releases[LABEL_COUNTS][lo : lo + data.num_nodes]
        cached = self.__dict__.get("_features_cache_lc")
        if (
            cached is not None
            and cached[0] is x
            and cached[1].shape == counts.shape
            and cached[1].data_ptr() == counts.data_ptr()
        ):
            return cached[2]
        rows = counts.to(device=x.device, dtype=x.dtype)
        if x.layout == torch.strided:
            out = torch.cat([x, rows], dim=1)
        else:  # sparse COO features (FB-scale): stay sparse
            out = torch.cat([x.to_sparse_coo(), rows.to_sparse_coo()], dim=1).coalesce()
        self._features_cache_lc = (x, counts, out)
        return out

    # -- the rows of this rank (DDP with ``shard_rows``) ------------------------------------
    def _row_block(self) -> tuple[int, int] | None:
        """``[lo, hi)``, the block of node rows this rank holds during a fit on several
        processes with ``shard_rows`` (a function of the node count and the number of ranks
        only); ``None`` otherwise (every row)."""
        trainer = self._trainer
        if (
            not self.shard_rows
            or trainer is None
            or trainer.world_size == 1
            or trainer.state.fn != "fit"
            or self._graph is None
        ):
            return None
        return row_blocks(self._graph.num_nodes, trainer.world_size)[trainer.global_rank]

    def _local(self, data: Data) -> Data:
        """``data`` restricted to this rank's block of rows (features, labels, split masks),
        as views; ``data`` itself when rows are not sharded."""
        block = self._row_block()
        if block is None:
            return data
        cached = self.__dict__.get("_local_view")
        if cached is None or cached[0] != (id(data), block):
            lo, hi = block
            view = Data(num_nodes=hi - lo, row_offset=lo)
            for key in ("x", "y", "train_mask", "val_mask", "test_mask"):
                t = data[key]
                if t.layout == torch.strided:
                    view[key] = t[lo:hi]
                else:  # sparse features: COO supports row selection
                    index = torch.arange(lo, hi, device=t.device)
                    view[key] = t.to_sparse_coo().index_select(0, index)
            cached = ((id(data), block), view)
            self._local_view = cached
        return cached[1]

    def _gather(self, rows: torch.Tensor) -> torch.Tensor:
        """All ``N`` rows from each rank's block (a collective); ``rows`` when not sharded."""
        if self._row_block() is None:
            return rows
        return gather_rows(rows, self._graph.num_nodes)

    def _keep_local(self, rows: torch.Tensor) -> torch.Tensor:
        """This rank's block of ``rows`` (a copy, so the rest can be freed)."""
        block = self._row_block()
        return rows if block is None else rows[block[0] : block[1]].clone()

    def _map_hops(self, fn: Any) -> None:
        """Replace every drawn hop release's tensors by ``fn`` of them."""
        for name in self.hop_names():
            value = self.releases.get(name)
            if value is not None:
                self.releases.set(name, apply_to_collection(value, torch.Tensor, fn))

    def _cache_on_device(self) -> None:
        """The releases on this module's device (restored ones come on the CPU)."""
        if self.releases.to(self.device):
            self.row_trainer.clear_rows()

    def _hold_local_rows(self) -> None:
        """Keep only this rank's block of the cached hops (after a draw, or a full cache
        restored from a checkpoint), on this module's device; a no-op when rows are not
        sharded. Rows already cut to the block (a NAP kept local as it is drawn) stay."""
        self._cache_on_device()
        block = self._row_block()
        if block is None or not any(map(self.releases.drawn, self.hop_names())):
            return
        lo, hi = block
        n = self._graph.num_nodes
        self._map_hops(lambda t: t[lo:hi].clone() if t.size(0) == n else t)
        self._cache_block = block
        self.row_trainer.clear_rows()

    def on_fit_end(self) -> None:
        """Every rank gets the whole cache back (test, predict, checkpoints, the hub)."""
        if self._cache_block is not None:
            n = self._graph.num_nodes
            self._map_hops(lambda t: gather_rows(t, n))
        self._cache_block = None
        self.row_trainer.clear_rows()
        self.__dict__.pop("_local_view", None)  # views of the fit's graph
        if self.votes is not None and self.releases.drawn(VOTES):  # weights from every row
            self.releases.to(self.device)
            graph = self.on_device(self._graph)
            with evaluating(self):
                self.votes.choose(graph, self._method_logits(graph), self.releases[VOTES])
        super().on_fit_end()

    def _train_shard(self, data: Data) -> tuple[int, int, int] | None:
        """``(start, stop, total)``: the training rows of this rank's block are the global
        training rows ``start..stop-1`` of ``total`` (blocks are contiguous, in rank order)."""
        block = self._row_block()
        if block is None:
            return None
        mask = data.train_mask
        start = int(mask[: block[0]].sum())
        return start, start + int(mask[block[0] : block[1]].sum()), int(mask.sum())

    # -- training ----------------------------------------------------------------------------
    def stage_rows(self, stage_index: int, data: Data) -> torch.utils.data.DataLoader:
        self._hold_local_rows()
        local = self._local(self.on_device(data))  # rows built where the parameters are
        rows = self.row_trainer.node_rows(
            stage_index,
            local,
            lambda: self.stage_inputs(stage_index, local),
            compact=self.level is not Level.NODE,  # DP-SGD needs dense rows (per-sample gradients)
        )
        return self.row_trainer.loader(rows, self._phase(stage_index),
                                       shard=self._train_shard(data),
                                       batch_size=self.train_batch_size)

    def _phase(self, stage_index: int) -> DPSGDPhase | None:
        """The DP-SGD phase of stage ``stage_index`` (node level), else ``None``."""
        return self._phases[stage_index] if self.level is Level.NODE else None

    def stage_optimizer(self, stage_index: int):
        opt = self.adam(self.stage_parameters(stage_index))
        model = self.stage_model(stage_index)
        return self.row_trainer.optimizer(self._phase(stage_index), model, opt, run=stage_index)

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        return self.staged.loader(data)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self.row_trainer.step(self.stage_model(self.staged.current_stage), batch)

    def _require_cache(self) -> None:
        """The one "not drawn yet" error (:class:`.Releases`) before the first hop is drawn."""
        self.releases[self.hop_names()[0]]

    def _in_fit(self) -> bool:
        return self._trainer is not None and self.trainer.state.fn == "fit"

    def _split_logits(self, data: Data, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and labels of the nodes of ``split`` only: the submodels are row-wise in eval
        mode, so these equal the rows of :meth:`_logits` at a fraction of the cost."""
        index = self.eval_stage()
        if index > 0 or not self._in_fit():  # outside a fit only a fitted model predicts
            self._require_cache()
        if self._answers_with_votes():  # the weighed answer reads every row's inputs
            mask = data[f"{split}_mask"]
            return self._logits(self.on_device(data))[mask], data.y[mask]
        self._hold_local_rows()
        local = self._local(data)  # sharded fit: this rank's rows (metrics reduced over ranks)
        hops = tuple(id(self.releases.get(n)) for n in self.hop_names())
        *inputs, y = self.row_trainer.node_rows(
            ("eval", index, hops), local, lambda: self.stage_inputs(index, local), split,
            compact=True,
        )  # fmt: skip
        return self.stage_model(index)(*inputs), y

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        if not logs_metrics(self, "val"):
            return None
        if self.trainer.sanity_checking and (
            (self.staged.current_stage > 0 and not any(map(self.releases.drawn, self.hop_names())))
            or (self.label_counts and not self.releases.drawn(LABEL_COUNTS))
        ):
            return None  # e.g. GAP without encoder, or label counts: a mechanism runs first
        return log_rows(self, *self._split_logits(data, "val"), "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        if not logs_metrics(self, "test"):
            return None
        return log_rows(self, *self._split_logits(data, "test"), "test")

    # -- inference ---------------------------------------------------------------------------
    def transductive_probs(self, data: Data) -> torch.Tensor:
        """The training graph, read only through the cached releases (no spend)."""
        self._require_cache()
        self._cache_on_device()
        return self._logits(self.on_device(data)).softmax(-1)

    def inductive_graph(self, data: Data) -> Data:
        """A new graph: same feature width, the node-level degree promise, and a warning when
        label counts have no known labels to count."""
        if self.label_counts and (
            getattr(data, "train_mask", None) is None or getattr(data, "y", None) is None
        ):
            warnings.warn(
                f"{type(self).__name__} reads label counts (label_counts, the default at edge "
                "level and without privacy), but the new graph has no train_mask/y: every "
                "count is noise only and accuracy drops. Set data.train_mask to the nodes whose "
                "labels you know (their labels in data.y); no other label is read.",
                UserWarning,
                stacklevel=3,
            )
        return self._private_graph(super().inductive_graph(data))

    @staticmethod
    @torch.no_grad()
    def _eval_forward(module: nn.Module, *inputs: torch.Tensor, call: Any = None) -> torch.Tensor:
        """Run ``module`` (or ``call``, one of its methods) in eval mode, then restore its mode."""
        was_training = module.training
        module.eval()
        out = (call or module)(*inputs)
        module.train(was_training)
        return out

    # -- checkpoints -----------------------------------------------------------------------
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get("hyper_parameters", {})
        if self.votes is not None and "votes" not in saved:
            # written before the votes existed: the model of its time had none
            self.votes, self.hparams["votes"] = None, False
            self.releases.undeclare(VOTES)
            del self.vote_weights
        if self.label_counts and "label_counts" not in saved:
            # written before label counts existed: rebuilt at its width before the weights load
            self.label_counts = self.hparams["label_counts"] = False
            if self.hparams.get("num_features") is not None:
                self._build(self.hparams["num_features"], self.hparams["num_classes"])
        super().on_load_checkpoint(checkpoint)
