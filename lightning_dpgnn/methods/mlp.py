"""Graph-agnostic baselines: ``MLP`` (reads no edges: epsilon 0 at edge level) and ``DPMLP``
(node-level DP through DP-SGD/DP-Adam on node rows), thesis §4.7.2."""

from __future__ import annotations

from typing import Literal

import torch
from torch_geometric.data import Data

from ..nn.mlp import MLP as MLPBlock
from ..privacy import PrivacyAccountant, PrivacyReport, calibrate_noise_multiplier
from ..privacy.dpsgd import DPSGDPhase, grad_sample_module, row_loader
from .base import PrivateModule

__all__ = ["MLP", "DPMLP"]


class _NodeMLP(PrivateModule):
    """An MLP on node features trained on the training rows; evaluation on the full graph."""

    def __init__(
        self,
        privacy: str,
        epsilon: float | None,
        delta: float | str,
        levels: tuple[str, ...],
        num_features: int | None,
        num_classes: int | None,
        hidden: int,
        layers: int,
        dropout: float,
        normalization: str,
        lr: float,
        weight_decay: float,
    ) -> None:
        super().__init__(privacy, epsilon, delta, levels=levels)
        self.mlp: torch.nn.Module | None = None
        if num_features is not None and num_classes is not None:
            self._build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.hparams.update(num_features=int(num_features), num_classes=int(num_classes))
        self.mlp = MLPBlock(
            num_features,
            num_classes,
            hp.hidden,
            hp.layers,
            dropout=hp.dropout,
            normalization=hp.normalization,
        )

    def setup(self, stage: str) -> None:
        data = self._datamodule_graph()
        if self.mlp is None:
            self._build(data.num_features, int(data.y.max()) + 1)
        self.resolve_delta(data)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        return row_loader(*self._train_rows("mlp", data, lambda: (data.x,), compact=True))

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._rows_step(self.mlp, batch)

    def _eval(self, data: Data, stage: str) -> torch.Tensor:
        return self._log_accuracy(self(self._input_features(data.x)), data, stage)

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._eval(data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._eval(data, "test")

    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self(self._input_features(data.x)).softmax(-1)

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )


class MLP(_NodeMLP):
    """Node-feature MLP. Reads no edges, so at edge level it spends epsilon = 0.

    Args:
        privacy: ``"edge"`` (default: reports edge-level epsilon 0) or ``"none"``.
        hidden, layers, dropout, normalization: MLP shape.
        lr, weight_decay: Adam settings.
    """

    def __init__(
        self,
        privacy: Literal["none", "edge"] = "edge",
        num_features: int | None = None,
        num_classes: int | None = None,
        hidden: int = 16,
        layers: int = 2,
        dropout: float = 0.0,
        normalization: str = "none",
        lr: float = 0.01,
        weight_decay: float = 0.0,
    ) -> None:
        self.save_hyperparameters()
        super().__init__(
            privacy,
            None,
            "auto",
            ("none", "edge"),
            num_features,
            num_classes,
            hidden,
            layers,
            dropout,
            normalization,
            lr,
            weight_decay,
        )


class DPMLP(_NodeMLP):
    """Node-level private MLP trained with DP-Adam (Poisson batches, clipping, Gaussian noise).

    Args:
        epsilon: target node-level epsilon; the noise multiplier is calibrated so that
            ``epochs`` epochs spend at most this (realized epsilon within 1% below).
        delta: ``"auto"`` (below 1 / #nodes) or a number.
        noise_multiplier: fix the noise instead of calibrating (then ``epsilon=None``; the
            fit runs as long as the trainer says and the spend is reported, not capped).
        epochs: DP-SGD epochs the calibration plans for; the model stops itself there.
        batch_size: expected Poisson batch size; max_grad_norm: clipping norm C.
        normalization: ``"none"``, ``"layer"`` or ``"group"`` (BatchNorm is rejected).
    """

    def __init__(
        self,
        epsilon: float | None = 8.0,
        delta: float | str = "auto",
        num_features: int | None = None,
        num_classes: int | None = None,
        hidden: int = 16,
        layers: int = 2,
        dropout: float = 0.0,
        normalization: str = "none",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        epochs: int = 10,
        batch_size: int = 256,
        max_grad_norm: float = 1.0,
        noise_multiplier: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.save_hyperparameters()
        if epsilon is None and noise_multiplier is None:
            raise ValueError("give epsilon (to calibrate the noise) or a fixed noise_multiplier")
        if noise_multiplier is not None and not noise_multiplier > 0:
            raise ValueError(f"noise_multiplier must be > 0, got {noise_multiplier}")
        self.phase = DPSGDPhase("mlp/dpsgd", epochs, batch_size, max_grad_norm)
        self.noise_multiplier = noise_multiplier
        super().__init__(
            "node",
            epsilon,
            delta,
            ("node",),
            num_features,
            num_classes,
            hidden,
            layers,
            dropout,
            normalization,
            lr,
            weight_decay,
        )

    def _build(self, num_features: int, num_classes: int) -> None:
        super()._build(num_features, num_classes)
        # wrapped at build time: stable checkpoint keys
        self.mlp = grad_sample_module(self.mlp, self.hparams.max_grad_norm, where="DPMLP")

    def setup(self, stage: str) -> None:
        super().setup(stage)
        data = self._datamodule_graph()
        self.phase.bind(int(data.train_mask.sum()))
        if self.target_epsilon is None:
            return
        if self.noise_multiplier is None:
            self.noise_multiplier = calibrate_noise_multiplier(
                self._plan, self.target_epsilon, self.accountant.delta
            )
            self.hparams.noise_multiplier = self.noise_multiplier  # reloads skip calibration
        elif self._plan(self.noise_multiplier).epsilon() > self.target_epsilon * (1 + 1e-9):
            raise ValueError(
                f"noise_multiplier={self.noise_multiplier:g} spends more than epsilon="
                f"{self.target_epsilon:g} over {self.phase.epochs} epochs; drop it to calibrate"
            )

    def _plan(self, z: float) -> PrivacyAccountant:
        acc = PrivacyAccountant("node", self.accountant.delta)
        self.phase.plan(acc, z)
        return acc

    def privacy_planned(self) -> PrivacyReport | None:
        steps = self.phase.total_steps if self.target_epsilon is not None else self._trainer_steps()
        if steps is None:
            return None
        acc = self.accountant.copy()
        self.phase.plan(acc, self.noise_multiplier, max(0, steps - self._steps_done()))
        return PrivacyReport.from_accountant(acc)

    def _trainer_steps(self) -> int | None:
        max_epochs = self.trainer.max_epochs if self._trainer is not None else None
        if max_epochs is None or max_epochs < 0:
            return None
        return max_epochs * self.phase.steps_per_epoch

    def _steps_done(self) -> int:
        return self.accountant.total_count(self.phase.name)

    def privacy_if_next_step(self) -> PrivacyReport:
        acc = self.accountant.copy()
        self.phase.plan(acc, self.noise_multiplier, 1)
        return PrivacyReport.from_accountant(acc)

    def on_train_batch_start(self, batch, batch_idx: int):
        if self.target_epsilon is not None and self._steps_done() >= self.phase.total_steps:
            self.halt_privately()  # the calibrated plan is used up: never exceed the target
        return super().on_train_batch_start(batch, batch_idx)

    def train_dataloader_from(self, data: Data) -> torch.utils.data.DataLoader:
        m = data.train_mask
        return self.phase.loader(data.x[m], data.y[m], generator=self._generator())

    def _generator(self) -> torch.Generator | None:
        seed = self.hparams.seed
        return None if seed is None else torch.Generator().manual_seed(seed + self.current_epoch)

    def configure_optimizers(self):
        opt = torch.optim.Adam(
            self.mlp.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        self.dp_training = self.phase.wrap(self.mlp, opt, self.noise_multiplier, self.accountant)
        return self.dp_training[1]
