"""GraphSAGE baselines of the GAP paper (thesis §4.7.2): ``SAGE`` (SAGE-inf, non-private) and
``EdgeRand`` (SAGE-EDP), both :class:`~lightning_dpgnn.nn.sage.SAGENet` trained full-batch,
keeping the best ``val/acc`` epoch (labels are public at edge level). EdgeRand reads the true
edges only in its mechanism: the randomized graph is released once when the fit starts, cached
and checkpointed, and everything after it is post-processing.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch.utils.data import DataLoader
from torch_geometric.data import Data

from ..loops import Stage, StagedFit
from ..nn.mlp import compact_features, resolve_normalization
from ..nn.sage import SAGENet
from ..privacy.edgerand import AsymmetricRandomizedResponse
from ..privacy.mechanism import Steps
from .base import PrivateModule
from .metrics import log_accuracy
from .releases import EDGES, Draw, Release

__all__ = ["SAGE", "EdgeRand"]


def _the_graph(batch: list[Data]) -> Data:
    """Collate function of the full-batch training loader: the batch is the one graph."""
    return batch[0]


class _SAGEModule(PrivateModule):
    """Full-batch GraphSAGE (:class:`SAGENet`) on the graph :meth:`training_edges` returns."""

    fixed_arguments: tuple[str, ...] = ("privacy", "epsilon", "delta")
    caches = ("_adjacency", "_features_cache")  # declared (PrivateModule.reset_caches)

    def __init__(
        self,
        privacy: str,
        epsilon: float | None,
        *,
        levels: tuple[str, ...],
        hidden: int = 16,
        layers: int = 2,
        pre_layers: int = 2,
        post_layers: int = 1,
        jk: str = "cat",
        dropout: float = 0.0,
        normalization: str = "auto",
        activation: str = "selu",
        lr: float = 0.01,
        weight_decay: float = 0.0,
        epochs: int = 100,
        seed: int | None = None,
        num_features: int | None = None,
        num_classes: int | None = None,
        **privacy_options: Any,
    ) -> None:
        super().__init__(
            privacy, epsilon, "auto", levels=levels, lr=lr, weight_decay=weight_decay,
            **privacy_options,
        )
        # the whole model's arguments, less those the subclass fixes itself
        self.save_hyperparameters(ignore=["levels", *self.fixed_arguments])
        self.seed = seed
        self.staged = StagedFit(self, self.stage_rows)
        self.net: SAGENet | None = None
        self._adjacency: tuple[torch.Tensor, torch.Tensor] | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.net = SAGENet(
            num_features, hp.hidden, num_classes, hp.layers, pre_layers=hp.pre_layers,
            post_layers=hp.post_layers, jk=hp.jk, dropout=hp.dropout,
            normalization=resolve_normalization(hp.normalization, self.privacy),
            activation=hp.activation,
        )

    # -- the graph the network sees ------------------------------------------------------------
    def training_edges(self, data: Data) -> torch.Tensor:
        """The edges training and transductive inference read (SAGE: the true graph)."""
        return data.edge_index

    def _adj(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """``edge_index`` in the network's fast form, converted once per edge tensor."""
        cached = getattr(self, "_adjacency", None)
        if cached is None or cached[0] is not edge_index:
            self._adjacency = (edge_index, self.net.adjacency(edge_index, num_nodes))
        return self._adjacency[1]

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for the pre-MLP: a cached sparse CSR copy when it is wide one-hot."""
        cached = getattr(self, "_features_cache", None)
        if cached is None or cached[0] is not x:
            self._features_cache = (x, compact_features(x))
        return self._features_cache[1]

    def _logits(self, data: Data) -> torch.Tensor:
        adj = self._adj(self.training_edges(data), data.num_nodes)
        return self.net(self._features(data.x), adj)

    # -- the fit (one stage) -----------------------------------------------------------------------
    def configure_stages(self) -> list[Stage]:
        return [Stage("sage", self.hparams.epochs, ("net",))]

    def stage_rows(self, stage_index: int, data: Data) -> DataLoader:
        return DataLoader([data], batch_size=1, collate_fn=_the_graph)

    def train_dataloader_from(self, data: Data) -> DataLoader:
        return self.staged.loader(data)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.net(x, edge_index)

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        if self.trainer.sanity_checking and self.releases.pending():
            return None  # EdgeRand randomizes the graph when the first epoch starts
        return log_accuracy(self, self._logits(data), data, "val")

    def transductive_probs(self, data: Data) -> torch.Tensor:
        return self._logits(self.on_device(data)).softmax(-1)

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        """A new graph: its own edges (SAGE) or its randomized release (EdgeRand)."""
        edges = outputs.get("edges", graph.edge_index)
        return self.net(graph.x, edges)


class SAGE(_SAGEModule):
    """Non-private GraphSAGE, the "SAGE-inf" rows of the GAP and ProGAP papers (epsilon = inf).

    Args:
        hidden: width of every hidden layer (thesis: 16).
        layers: GraphSAGE convolutions with SUM aggregation (thesis: tuned in 1..5).
        pre_layers, post_layers: MLP layers before / after the convolutions (thesis: 2, 1).
        jk: jumping knowledge over the convolutions' outputs: ``"cat"``, ``"sum"``, ``"attn"``.
        dropout, activation: settings of every layer (thesis: SELU).
        normalization: ``"auto"`` (BatchNorm, as the thesis' non-node-level models), ``"none"``,
            ``"layer"``, ``"group"`` or ``"batch"``.
        lr, weight_decay: Adam settings.
        epochs: full-batch epochs; the epoch with the best ``val/acc`` is kept.
        seed: seed of the weight initialisation.
    """

    card_method = (
        "GraphSAGE with sum aggregation, pre/post MLPs and jumping knowledge (non-private)"
    )
    card_paper = "baseline SAGE-inf of Sajadmanesh et al., GAP (USENIX Security 2023), §6"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("none", None, levels=("none",), **kwargs)


class EdgeRand(_SAGEModule):
    """Edge-level private GraphSAGE on a graph perturbed once by asymmetric randomized response
    (:class:`~lightning_dpgnn.privacy.edgerand.AsymmetricRandomizedResponse`), an
    ``epsilon``-edge-DP release (pure, delta 0); memory linear in the number of edges.

    Args:
        epsilon: edge-level budget of the release.
        edge_unit: ``"undirected"`` (the unordered pairs are perturbed, the output symmetric)
            or ``"directed"`` (the thesis' unit: every ordered pair).
        density_share: share of epsilon spent on the edge count (reference: 0.1).
        noise_seed: reproducible randomization, for research only.
        hidden, layers, pre_layers, post_layers, jk, dropout, normalization, activation, lr,
        weight_decay, epochs, seed: the GraphSAGE of :class:`SAGE`.
    """

    card_method = "EdgeRand: GraphSAGE on a graph perturbed once by asymmetric randomized response"
    card_paper = (
        "Wu et al. LinkTeller (IEEE S&P 2022); Imola et al. (USENIX Security 2022); baseline "
        "SAGE-EDP of Sajadmanesh et al., GAP (USENIX Security 2023), §6"
    )

    mechanism_name = "arr"
    fixed_arguments = ("privacy", "delta")

    def __init__(
        self,
        epsilon: float = 1.0,
        edge_unit: Literal["undirected", "directed"] = "undirected",
        density_share: float = 0.1,
        noise_seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            "edge", epsilon, levels=("edge",), noise_seed=noise_seed, edge_unit=edge_unit,
            **kwargs,
        )
        self.arr = AsymmetricRandomizedResponse(
            epsilon, edge_unit=edge_unit, density_share=density_share,
            name=self.mechanism_name,
        )
        # the release: the randomized graph's ``[2, E']`` edge index, drawn before the fit
        self.declare_releases(Release(
            "edges", lambda z: [self.arr], self._randomize, reads=(EDGES,),
        ))  # fmt: skip

    def _randomize(self, d: Draw) -> Steps:
        return (yield self.arr, d.graph.edge_index, d.graph.num_nodes)

    def training_edges(self, data: Data) -> torch.Tensor:
        self.releases.to(data.x.device)  # once (restored on the CPU)
        return self.releases["edges"]

