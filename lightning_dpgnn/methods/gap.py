"""GAP: private GNN with aggregation perturbation (thesis ch. 4, Algorithms 5–8).

One ``trainer.fit`` runs the three modules as stages of the staged fit loop:

1. **Encoder module** (Alg. 6 step 1): an MLP + linear softmax head trained on node features
   and labels only — no edges (DP-Adam at node level).
2. **Aggregation module** (Alg. 5, PMA): computed ONCE when the classifier stage starts, from
   the row-normalized encoder output; K Gaussian mechanisms on the sum aggregation, each hop
   normalized again; the result is cached (and checkpointed) for training and inference.
3. **Classification module** (Alg. 7): per-hop base MLPs, COMBINE, head MLP, trained on the
   cached aggregates without touching edges (DP-Adam at node level).

Privacy: edge level is Proposition 6 (K Gaussian mechanisms of sensitivity 1); node level is
Proposition 7 (encoder DP-SGD + K hops of sensitivity sqrt(D) + classifier DP-SGD), with one
noise multiplier for gradients and aggregations calibrated jointly to the target epsilon
(thesis §4.7.5). Inference (Alg. 8): transductive predictions read only the cached
aggregates; inductive predictions run encoder + PMA (fresh noise) on the new graph.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from opacus import GradSampleModule
from torch import nn
from torch_geometric.data import Data

from ..data.transforms import bound_in_and_out_degree
from ..loops import Stage, StagedTrainingMixin
from ..nn.combine import Combine
from ..nn.mlp import MLP
from ..privacy import PrivacyAccountant, PrivacyReport, calibrate_noise_multiplier
from ..privacy.aggregation import GaussianAggregation, normalize_rows, sum_aggregate
from ..privacy.dpsgd import DPSGDPhase, assert_dp_compatible, row_loader
from .base import PrivateModule

__all__ = ["GAP"]


class EncoderModule(nn.Module):
    """Encoder MLP with the linear softmax head used only for its pre-training (Eq. 4.5)."""

    def __init__(self, in_dim: int, hidden: int, num_classes: int, layers: int, **mlp) -> None:
        super().__init__()
        self.mlp = MLP(in_dim, hidden, hidden, layers, plain_last=False, **mlp)
        self.head = nn.Linear(self.mlp.out_dim, num_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mlp(x))


class ClassificationModule(nn.Module):
    """Per-hop base MLPs, COMBINE and head MLP (Alg. 7) over ``[N, K+1, d]`` aggregates."""

    def __init__(
        self,
        dim: int,
        hidden: int,
        num_classes: int,
        hops: int,
        base_layers: int,
        head_layers: int,
        combine: str,
        **mlp,
    ) -> None:
        super().__init__()
        self.base = nn.ModuleList(
            MLP(dim, hidden, hidden, base_layers, plain_last=False, **mlp) for _ in range(hops + 1)
        )
        width = self.base[0].out_dim
        self.combine = Combine(combine, hops + 1, width)
        self.head = MLP(self.combine.out_dim, num_classes, hidden, head_layers, **mlp)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        hs = torch.stack([mlp(h[:, k]) for k, mlp in enumerate(self.base)], dim=1)
        return self.head(self.combine(hs))


class GAP(StagedTrainingMixin, PrivateModule):
    """GAP node classifier, edge- or node-level private (or non-private with ``"none"``).

    Args:
        privacy: ``"edge"``, ``"node"`` or ``"none"`` (GAP-inf).
        epsilon: target epsilon of the whole fit; noise is calibrated to it.
        delta: ``"auto"`` (below 1/#edges at edge level, 1/#nodes at node level) or a number.
        hops: K, the number of private aggregation hops.
        encoder_layers: MLP layers of the encoder (0: no encoder, raw features are aggregated).
        base_layers, head_layers: MLP layers of the classification module.
        hidden: width of every hidden layer and of the encoder output.
        combine: ``"cat"``, ``"sum"`` or ``"attn"``.
        max_degree: degree bound D for node level (edges are sampled down to it).
        dropout, normalization, activation: MLP settings (``normalization="batch"`` is refused
            at node level: BatchNorm mixes samples).
        lr, weight_decay: Adam / DP-Adam settings, shared by both trained modules.
        encoder_epochs, classifier_epochs: epochs of the two training stages.
        batch_size, max_grad_norm: DP-SGD settings (node level only; other levels full-batch).
        noise_multiplier: skip calibration and use this noise scale (checked against epsilon).
        seed: seed for the aggregation noise and Poisson batches (``None``: fresh randomness).
    """

    def __init__(
        self,
        privacy: Literal["none", "edge", "node"] = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        hops: int = 2,
        encoder_layers: int = 2,
        base_layers: int = 1,
        head_layers: int = 1,
        hidden: int = 16,
        combine: Literal["cat", "sum", "attn"] = "cat",
        max_degree: int = 100,
        dropout: float = 0.0,
        normalization: str = "none",
        activation: str = "selu",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        encoder_epochs: int = 100,
        classifier_epochs: int = 100,
        batch_size: int = 256,
        max_grad_norm: float = 1.0,
        noise_multiplier: float | None = None,
        seed: int | None = None,
        num_features: int | None = None,
        num_classes: int | None = None,
    ) -> None:
        super().__init__(privacy, epsilon, delta)
        self.save_hyperparameters()
        if hops < 1:
            raise ValueError(f"hops must be >= 1, got {hops}")
        if max_degree < 1:
            raise ValueError(f"max_degree must be >= 1, got {max_degree}")
        if privacy != "none" and epsilon is None and noise_multiplier is None:
            raise ValueError("give epsilon (to calibrate the noise) or a noise_multiplier")
        if privacy == "node" and normalization == "batch":
            raise ValueError(
                "normalization='batch' is not allowed under node-level DP: BatchNorm mixes the "
                "samples of a batch, so per-sample clipping no longer bounds one node's "
                "influence. Use 'layer', 'group' or 'none'."
            )
        self._staged_init()
        self.noise_multiplier = noise_multiplier
        self.encoder_phase = DPSGDPhase("encoder/dpsgd", encoder_epochs, batch_size, max_grad_norm)
        self.classifier_phase = DPSGDPhase(
            "classifier/dpsgd", classifier_epochs, batch_size, max_grad_norm
        )
        self.aggregates: torch.Tensor | None = None  # [N, K+1, d], the cached private output
        self.pma: GaussianAggregation | None = None
        self.encoder_model: nn.Module | None = None
        self.classifier: nn.Module | None = None
        self._graph: Data | None = None
        if num_features is not None and num_classes is not None:
            self._build(num_features, num_classes)

    # -- construction ------------------------------------------------------------------------
    @property
    def _uses_encoder(self) -> bool:
        return self.hparams.encoder_layers > 0

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.hparams.update(num_features=int(num_features), num_classes=int(num_classes))
        mlp = dict(dropout=hp.dropout, normalization=hp.normalization, activation=hp.activation)
        dim = hp.hidden if self._uses_encoder else num_features
        encoder = EncoderModule(num_features, hp.hidden, num_classes, hp.encoder_layers, **mlp)
        classifier = ClassificationModule(
            dim, hp.hidden, num_classes, hp.hops, hp.base_layers, hp.head_layers, hp.combine, **mlp
        )
        if self.privacy == "node":
            assert_dp_compatible(encoder, "GAP encoder")
            assert_dp_compatible(classifier, "GAP classification module")
            encoder, classifier = GradSampleModule(encoder), GradSampleModule(classifier)
        self.encoder_model, self.classifier = encoder, classifier

    def _encoder(self) -> EncoderModule:
        m = self.encoder_model
        return m._module if isinstance(m, GradSampleModule) else m

    def configure_stages(self) -> list[Stage]:
        enc = self.hparams.encoder_epochs if self._uses_encoder else 0
        return [
            Stage("encoder", enc, ("encoder_model",)),
            Stage("classifier", self.hparams.classifier_epochs, ("classifier",)),
        ]

    def select_on_validation(self) -> bool:
        """Node level: validation labels are private and no mechanism covers them, so model
        selection on ``val/acc`` would leak them; the last epoch of each stage is kept."""
        return self.privacy != "node"

    # -- data and calibration --------------------------------------------------------------
    def setup(self, stage: str) -> None:
        data = self._datamodule_graph()
        if self.encoder_model is None:
            self._build(data.num_features, int(data.y.max()) + 1)
        self._graph = self._private_graph(data)
        self.resolve_delta(self._graph)
        n_train = int(data.train_mask.sum())
        self.encoder_phase.bind(n_train)
        self.classifier_phase.bind(n_train)
        if stage == "fit":
            self._calibrate()
            super().setup(stage)

    def _private_graph(self, data: Data) -> Data:
        """Node level: bound in- and out-degrees to D (invariant 6). Other levels: as given."""
        if self.privacy != "node":
            return data
        return bound_in_and_out_degree(data, self.hparams.max_degree, seed=self.hparams.seed or 0)

    def _plan(self, z: float, acc: PrivacyAccountant | None = None) -> PrivacyAccountant:
        """Ledger of the remaining fit at noise multiplier ``z`` (on top of ``acc``)."""
        acc = acc if acc is not None else PrivacyAccountant(self.privacy, self.accountant.delta)
        if self.aggregates is None:
            sens = math.sqrt(self.hparams.max_degree) if self.privacy == "node" else 1.0
            acc.add_gaussian("pma", z, count=self.hparams.hops, sensitivity=sens)
        if self.privacy == "node":
            for phase, used in self._phases():
                if phase.epochs and (phase is not self.encoder_phase or self._uses_encoder):
                    phase.plan(acc, z, max(0, phase.total_steps - used))
        return acc

    def _phases(self) -> list[tuple[DPSGDPhase, int]]:
        return [
            (p, self.accountant.total_count(p.name))
            for p in (self.encoder_phase, self.classifier_phase)
        ]

    def _calibrate(self) -> None:
        if self.privacy == "none":
            return
        if self.noise_multiplier is None:
            self.noise_multiplier = calibrate_noise_multiplier(
                lambda z: self._plan(z), self.target_epsilon, self.accountant.delta
            )
            self.hparams.noise_multiplier = self.noise_multiplier
        elif self.target_epsilon is not None:
            spend = self._plan(self.noise_multiplier, self.accountant.copy()).epsilon()
            if spend > self.target_epsilon * (1 + 1e-9):
                raise ValueError(
                    f"noise_multiplier={self.noise_multiplier:g} would spend epsilon {spend:.4g}"
                    f" > target {self.target_epsilon:g}; leave it unset to calibrate"
                )
        self.pma = None  # built on first use from the (possibly restored) noise multiplier

    def _mechanism(self) -> GaussianAggregation:
        """The PMA mechanism at the model's noise multiplier (built once, then reused)."""
        if self.pma is None or self.pma.noise_multiplier != self.noise_multiplier:
            self.pma = GaussianAggregation(
                self.noise_multiplier,
                level=self.privacy,
                max_degree=self.hparams.max_degree if self.privacy == "node" else None,
                name="pma",
            )
        return self.pma

    # -- privacy reports -------------------------------------------------------------------
    def privacy_planned(self) -> PrivacyReport:
        if self.privacy == "none":
            return self.privacy_spent()
        planned = self._plan(self.noise_multiplier, self.accountant.copy())
        return PrivacyReport.from_accountant(planned)

    def privacy_if_next_step(self) -> PrivacyReport | None:
        if self.privacy != "node":
            return None
        phase = self._stage_phase(self.current_stage)
        acc = self.accountant.copy()
        phase.plan(acc, self.noise_multiplier, 1)
        return PrivacyReport.from_accountant(acc)

    def _stage_phase(self, index: int) -> DPSGDPhase:
        return self.encoder_phase if index == 0 else self.classifier_phase

    # -- the aggregation module (Alg. 5), run once -----------------------------------------
    def _generator(self, offset: int) -> torch.Generator | None:
        seed = self.hparams.seed
        return None if seed is None else torch.Generator().manual_seed(seed * 1000 + offset)

    @torch.no_grad()
    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        if not self._uses_encoder:
            return x
        enc = self._encoder()
        was_training = enc.training
        enc.eval()
        out = enc.embed(x)
        enc.train(was_training)
        return out

    @torch.no_grad()
    def _aggregate(
        self, graph: Data, accountant: PrivacyAccountant, generator: torch.Generator | None
    ) -> torch.Tensor:
        """``[N, K+1, d]``: the normalized encoder output and K normalized noisy hops."""
        x = normalize_rows(self._encode(graph.x))
        hops = [x]
        for _ in range(self.hparams.hops):
            if self.privacy == "none":
                agg = sum_aggregate(x, graph.edge_index, graph.num_nodes)
            else:
                agg = self._mechanism()(x, graph.edge_index, graph.num_nodes, accountant, generator)
            x = normalize_rows(agg)
            hops.append(x)
        return torch.stack(hops, dim=1)

    def on_enter_stage(self, stage_index: int) -> None:
        if stage_index == 1 and self.aggregates is None:
            self.aggregates = self._aggregate(self._graph, self.accountant, self._generator(0))

    # -- training ----------------------------------------------------------------------------
    def stage_rows(self, stage_index: int, data: Data) -> torch.utils.data.DataLoader:
        m = data.train_mask
        inputs = data.x[m] if stage_index == 0 else self.aggregates[m]
        if self.privacy == "node":
            gen = self._generator(1 + self.trainer.current_epoch)
            return self._stage_phase(stage_index).loader(inputs, data.y[m], generator=gen)
        return row_loader(inputs, data.y[m])

    def _stage_model(self, index: int) -> nn.Module:
        return self.encoder_model if index == 0 else self.classifier

    def stage_optimizer(self, stage_index: int):
        model = self._stage_model(stage_index)
        opt = torch.optim.Adam(
            model.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        if self.privacy != "node":
            return opt
        phase = self._stage_phase(stage_index)
        _, dp_opt = phase.wrap(model, opt, self.noise_multiplier, self.accountant)
        return dp_opt

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        if self.privacy == "node":
            phase = self._stage_phase(self.current_stage)
            if self.accountant.total_count(phase.name) >= phase.total_steps:
                self.halt_privately()  # the calibrated plan is used up: never exceed it
        return super().on_train_batch_start(batch, batch_idx)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._rows_step(self._stage_model(self.current_stage), batch)

    def _logits(self, data: Data) -> torch.Tensor:
        if self.trainer.state.fn == "fit" and self.current_stage == 0:
            return self.encoder_model(data.x)
        return self.classifier(self._cached())

    def _cached(self) -> torch.Tensor:
        if self.aggregates is None:
            raise RuntimeError(
                "GAP has no cached private aggregates yet: fit the model (or load a fitted "
                "checkpoint) before test/predict on the training graph"
            )
        return self.aggregates

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self._logits(data), data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self.classifier(self._cached()), data, "test")

    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        """Transductive (the training graph): cached aggregates only. Otherwise inductive."""
        if (
            self._graph is not None
            and data.num_nodes == self._graph.num_nodes
            and not getattr(data, "inductive", False)
        ):
            return self.classifier(self._cached()).softmax(-1)
        return self.predict_inductive(data)

    @torch.no_grad()
    def predict_inductive(self, data: Data) -> torch.Tensor:
        """Alg. 8: class probabilities on a new graph, running PMA on it with fresh noise.

        The new graph's spend is recorded in a separate accountant (its data is disjoint from
        the training graph: parallel composition), available as ``last_inference_report``.
        """
        if self.privacy != "none" and self.noise_multiplier is None:
            raise RuntimeError("GAP must be fitted (or loaded) before inductive inference")
        graph = self._private_graph(data)
        acc = PrivacyAccountant(self.privacy, self.accountant.delta)
        h = self._aggregate(graph, acc, None)
        self.last_inference_report = PrivacyReport.from_accountant(
            acc, private=self.privacy != "none"
        )
        return self.classifier(h).softmax(-1)

    # -- checkpoints -----------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["gap"] = {
            "aggregates": self.aggregates,
            "noise_multiplier": self.noise_multiplier,
            "staged": self.staged_state(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        state = checkpoint["gap"]
        self.aggregates = state["aggregates"]
        self.noise_multiplier = state["noise_multiplier"]
        self.pma = None  # any mechanism built before the restore used a stale noise multiplier
        self.load_staged_state(state["staged"], checkpoint.get("epoch", 0))
