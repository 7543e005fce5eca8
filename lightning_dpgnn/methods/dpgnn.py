"""DPGNN (SAGE-NDP): node-level DP-SGD for a one-layer GNN (Daigavane et al. 2021), the
node-level GNN baseline of the GAP paper and thesis §4.7.2.

``MLP([x_i, normalize(sum_{j in N(i)} x_j)])`` trained with DP-Adam on Poisson batches. One
node changes its own per-sample term and those of the nodes it points to: at most ``D + 1``
terms under the degree promise (checked), each by at most ``2 C`` after clipping; the steps are
accounted as graph subsampled Gaussians (Daigavane et al. Theorem 1 with Poisson batches).
Inference (thesis §4.7.2) reads the aggregate released ONCE by the node-level Gaussian
aggregation (sensitivity ``sqrt(D)``, the gradients' noise multiplier), calibrated jointly.
"""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from ..nn.mlp import MLP as MLPBlock
from ..nn.mlp import resolve_normalization
from ..privacy import PrivacyAccountant
from ..privacy.aggregation import (
    GaussianAggregation,
    check_degree_promise,
    normalize_rows,
    sum_aggregate,
)
from ..privacy.dpsgd import DPSGDPhase, grad_sample_module
from ..privacy.mechanism import Steps
from .arguments import node_unit
from .base import PrivateModule
from .releases import Draw, Release
from .rows import RowTrainer, check_noise_arguments

__all__ = ["DPGNN"]


class DPGNN(PrivateModule):
    """Node-level private one-layer GraphSAGE trained with DP-SGD (SAGE-NDP).

    Args:
        epsilon: target node-level epsilon of the whole fit (DP-SGD steps and the one noisy
            aggregation used at inference); one noise multiplier is calibrated for both.
        delta: ``"auto"`` (below 1 / #nodes) or a number.
        max_degree: D, a public bound on every in- and out-degree (required; checked).
        hidden, layers, dropout, activation: the MLP on ``[x_i, aggregate_i]`` (``layers``
            counts its first linear layer, the GraphSAGE layer's weights).
        normalization: ``"none"``, ``"layer"`` or ``"group"`` (BatchNorm is refused).
        lr, weight_decay: DP-Adam settings.
        epochs: DP-SGD epochs the calibration plans for; the model stops itself there.
        batch_size, max_grad_norm: expected Poisson batch size and clipping norm C.
        noise_multiplier: fix the noise instead of calibrating (checked against epsilon).
        seed: seed of the weight initialisation (never of privacy noise).
        noise_seed: reproducible noise and batches, for research only.
        log_private_metrics: log ``val/*`` on private labels during the fit.
    """

    card_method = (
        "DP-GNN: node-level DP-SGD for a one-layer GraphSAGE, noisy aggregation at inference"
    )
    card_paper = (
        "Daigavane et al. Node-Level Differentially Private Graph Neural Networks (2021); "
        "baseline SAGE-NDP of Sajadmanesh et al., GAP (USENIX Security 2023), §6"
    )

    mechanism_name = "aggregation"

    def __init__(
        self,
        epsilon: float | None = 8.0,
        delta: float | str = "auto",
        max_degree: int | None = None,
        hidden: int = 16,
        layers: int = 2,
        dropout: float = 0.0,
        normalization: str = "none",
        activation: str = "selu",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        epochs: int = 10,
        batch_size: int = 256,
        max_grad_norm: float = 1.0,
        noise_multiplier: float | None = None,
        seed: int | None = None,
        noise_seed: int | None = None,
        log_private_metrics: bool = False,
        num_features: int | None = None,
        num_classes: int | None = None,
    ) -> None:
        self.save_hyperparameters()
        super().__init__(
            "node", epsilon, delta, levels=("node",), noise_seed=noise_seed,
            log_private_metrics=log_private_metrics, lr=lr, weight_decay=weight_decay,
        )
        check_noise_arguments(epsilon, noise_multiplier)
        if normalization == "batch":
            raise ValueError(
                "normalization='batch' is not allowed under node-level DP: BatchNorm mixes the "
                "samples of a batch. Use 'layer', 'group' or 'none'."
            )
        self.accountant.unit = node_unit(max_degree, "DPGNN")
        self.max_degree = max_degree
        self.seed = seed
        self.phase = DPSGDPhase(
            "sage/dpsgd", epochs, batch_size, max_grad_norm, group_size=max_degree + 1
        )
        self.row_trainer = RowTrainer(self, phase=self.phase)  # the fit is one DP-SGD phase
        self.noise_multiplier = noise_multiplier
        self.mlp: torch.nn.Module | None = None
        # the release: the noisy aggregate of the graph ``[N, F]`` that inference reads
        self.declare_releases(Release(self.mechanism_name, self._mechanisms, self._draw))
        self._graph: Data | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        mlp = MLPBlock(
            2 * num_features, num_classes, hp.hidden, hp.layers, dropout=hp.dropout,
            normalization=resolve_normalization(hp.normalization, "node"),
            activation=hp.activation,
        )
        self.mlp = grad_sample_module(mlp, self.phase.max_grad_norm, where="DPGNN")

    # -- setup (PrivateModule's template) and the plan -------------------------------------------
    def setup_data(self, stage: str) -> Data:
        data = self._datamodule_graph()
        check_degree_promise(data.edge_index, data.num_nodes, self.max_degree)
        return data

    def prepare(self, data: Data, stage: str) -> None:
        self._graph = data
        self.phase.bind(int(data.train_mask.sum()))

    def aggregation_mechanism(self) -> GaussianAggregation | None:
        """The inference aggregation, for an audit (``None`` before calibration)."""
        return None if self.noise_multiplier is None else self._aggregation()

    def _aggregation(self, noise_multiplier: float | None = None) -> GaussianAggregation:
        return GaussianAggregation(
            noise_multiplier or self.noise_multiplier, level="node", max_degree=self.max_degree,
            name=self.mechanism_name,
        )

    def release_graph(self) -> Data:
        return self.on_device(self._graph)  # the graph setup checked against D

    def _mechanisms(self, z: float | None) -> list[GaussianAggregation]:
        return [self._aggregation(z)]

    def _draw(self, d: Draw) -> Steps:
        g, (mechanism,) = d.graph, d.mechanisms
        return (yield mechanism, mechanism.aggregate(g.x, g.edge_index, g.num_nodes))

    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """The remaining DP-SGD steps (the inference aggregation plans itself as a release)."""
        return noise_multiplier is None or super().plan_steps(accountant, noise_multiplier)

    # -- rows: [x_i, aggregate_i] --------------------------------------------------------------
    @staticmethod
    def _rows(x: torch.Tensor, aggregate: torch.Tensor) -> torch.Tensor:
        """``[x̂_i, normalize(aggregate_i)]`` (normalizing the release is post-processing)."""
        return torch.cat([normalize_rows(x), normalize_rows(aggregate)], dim=-1)

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        def rows() -> tuple[torch.Tensor]:
            exact = sum_aggregate(normalize_rows(data.x), data.edge_index, data.num_nodes)
            return (self._rows(data.x, exact),)

        return self.row_trainer.loader(self.row_trainer.node_rows("dpgnn", data, rows), self.phase)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self.row_trainer.step(self.mlp, batch)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.row_trainer.optimizer(self.phase, self.mlp, self.adam(self.mlp.parameters()))

    # -- evaluation: the cached noisy aggregate only ------------------------------------------
    def _logits(self, data: Data) -> torch.Tensor:
        self.releases.to(self.device)  # once, if restored
        return self.mlp(self._rows(data.x, self.releases[self.mechanism_name]))

    def inductive_graph(self, data: Data) -> Data:
        """A new graph must keep the degree promise too (its release's sensitivity)."""
        check_degree_promise(data.edge_index, data.num_nodes, self.max_degree)
        return super().inductive_graph(data)

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        return self.mlp(self._rows(graph.x, outputs[self.mechanism_name]))
