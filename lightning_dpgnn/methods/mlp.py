"""Graph-agnostic baselines: ``MLP`` (reads no edges: epsilon 0 at edge level) and ``DPMLP``
(node-level DP through DP-SGD/DP-Adam on node rows), thesis §4.7.2."""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch_geometric.data import Data

from ..loops import Stage, StagedFit
from ..nn.mlp import MLP as MLPBlock
from ..nn.mlp import resolve_normalization, select_rows
from ..privacy.dpsgd import DPSGDPhase, grad_sample_module
from .arguments import check_arguments
from .base import PrivateModule
from .rows import RowTrainer, check_noise_arguments

__all__ = ["MLP", "DPMLP"]


class _NodeMLP(PrivateModule):
    """An MLP on node features, trained on the training rows, evaluated on the full graph."""

    sparse_features = True  # rows gathered as sparse COO (read by the datamodule)

    def __init__(
        self,
        privacy: str,
        epsilon: float | None,
        delta: float | str,
        *,
        levels: tuple[str, ...],
        num_features: int | None = None,
        num_classes: int | None = None,
        hidden: int = 16,
        layers: int = 2,
        dropout: float = 0.0,
        normalization: str = "none",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        seed: int | None = None,
        **privacy_options,
    ) -> None:
        """The MLP settings MLP and DPMLP share (documented on each)."""
        super().__init__(
            privacy, epsilon, delta, levels=levels, lr=lr, weight_decay=weight_decay,
            **privacy_options,
        )
        # the whole model's arguments, less those the subclass fixes itself
        self.save_hyperparameters(ignore=["levels", *self.fixed_arguments])
        self.hidden, self.layers = hidden, layers
        self.dropout, self.normalization = dropout, normalization
        self.seed = seed
        self.mlp: torch.nn.Module | None = None
        self.row_trainer = RowTrainer(self)
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        self.mlp = MLPBlock(
            num_features,
            num_classes,
            self.hidden,
            self.layers,
            dropout=self.dropout,
            normalization=resolve_normalization(self.normalization, self.privacy),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        rows = self.row_trainer.node_rows("mlp", data, lambda: (data.x,), compact=True)
        return self.row_trainer.loader(rows)

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self.row_trainer.step(self.mlp, batch)

    def _logits(self, data: Data) -> torch.Tensor:
        return self(self.row_trainer.input_features(data.x))

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        """A new graph's nodes: their features only (no edge is read, nothing is released)."""
        return self(self.row_trainer.input_features(graph.x))


class MLP(_NodeMLP):
    """Node-feature MLP. Reads no edges, so at edge level it spends epsilon = 0; trains
    ``epochs`` full-batch epochs and keeps the best ``val/acc`` (the papers' protocol).

    Args:
        privacy: ``"edge"`` (default: reports edge-level epsilon 0) or ``"none"``.
        hidden, layers, dropout, normalization: MLP shape (``normalization="auto"``:
            BatchNorm, as GAP's).
        lr, weight_decay: Adam settings.
        epochs: training epochs (the best validation epoch is kept).
        seed: seed of the weight initialisation.
    """

    card_method = "MLP on node features (reads no edge)"
    card_paper = "baseline of Sajadmanesh et al., GAP (USENIX Security 2023), §6"

    fixed_arguments = ("epsilon", "delta")

    def __init__(
        self, privacy: Literal["none", "edge"] = "edge", epochs: int = 100, **kwargs: Any
    ) -> None:
        super().__init__(privacy, None, "auto", levels=("none", "edge"), **kwargs)
        # one full batch of cached rows: the loader is the same at every epoch
        self.staged = StagedFit(self, self.stage_rows, reload_every_epoch=False)

    def configure_stages(self) -> list[Stage]:
        return [Stage("mlp", self.hparams.epochs, ("mlp",), "epochs")]

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        return self.staged.loader(data)

    def stage_rows(self, stage_index: int, data: Data) -> torch.utils.data.DataLoader:
        return super().train_dataloader_from(data)


class DPMLP(_NodeMLP):
    """Node-level private MLP trained with DP-Adam (Poisson batches, clipping, Gaussian noise).

    Args:
        epsilon: target node-level epsilon ``epochs`` epochs may spend (calibrated).
        delta: ``"auto"`` (below 1 / #nodes) or a number.
        noise_multiplier: fix the noise instead (``epsilon=None``: the spend is reported, not
            capped).
        epochs: DP-SGD epochs the calibration plans for; the model stops itself there.
        batch_size: expected Poisson batch size; max_grad_norm: clipping norm C.
        hidden, layers, dropout, lr, weight_decay: MLP shape and DP-Adam settings, as
            :class:`MLP`'s (keyword arguments).
        normalization: ``"none"``, ``"layer"`` or ``"group"`` (BatchNorm is rejected;
            ``"auto"``, as GAP's at node level, is none).
        seed: seed of the weight initialisation (never of privacy noise).
        noise_seed: reproducible noise and batches, for research only.
        log_private_metrics: log ``val/*`` on private labels during the fit.
    """

    card_method = "DP-MLP: MLP on node features trained with DP-Adam (node-level DP)"
    card_paper = "baseline of Sajadmanesh et al., GAP (USENIX Security 2023), §6"

    fixed_arguments = ("privacy",)

    def __init__(
        self,
        epsilon: float | None = 8.0,
        delta: float | str = "auto",
        epochs: int = 10,
        batch_size: int = 256,
        max_grad_norm: float = 1.0,
        noise_multiplier: float | None = None,
        noise_seed: int | None = None,
        log_private_metrics: bool = False,
        **kwargs: Any,
    ) -> None:
        check_noise_arguments(epsilon, noise_multiplier)
        check_arguments(
            {"epochs": epochs, "batch_size": batch_size, "max_grad_norm": max_grad_norm}
        )
        self.phase = DPSGDPhase("mlp/dpsgd", epochs, batch_size, max_grad_norm)
        super().__init__(
            "node", epsilon, delta, levels=("node",), noise_seed=noise_seed,
            log_private_metrics=log_private_metrics, **kwargs,
        )
        self.noise_multiplier = noise_multiplier
        self.row_trainer = RowTrainer(self, phase=self.phase)  # the fit is one DP-SGD phase

    def _build(self, num_features: int, num_classes: int) -> None:
        super()._build(num_features, num_classes)
        # wrapped at build time: stable checkpoint keys
        self.mlp = grad_sample_module(self.mlp, self.phase.max_grad_norm, where="DPMLP")

    def prepare(self, data: Data, stage: str) -> None:
        self.phase.bind(int(data.train_mask.sum()))

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        m = data.train_mask
        return self.row_trainer.loader((select_rows(data.x, m), data.y[m]), self.phase)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.row_trainer.optimizer(self.phase, self.mlp, self.adam(self.mlp.parameters()))
