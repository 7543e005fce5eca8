"""PGC: a GCN whose first layer is estimated from 1-bit LDP features (thesis ch. 2, Alg. 1).

Every node answers one bit per feature (eq. 2.3); the server's unbiased estimate (eq. 2.5)
enters the first GCN layer, an unbiased estimate of the true convolution (eq. 2.4, Lemma 2).
The Laplace, Duchi and Piecewise baselines of §2.9 plug in the same way. Each *feature* gets
``x_epsilon`` (``per_coordinate=True``): the accountant records the per-node total
``d * x_epsilon`` (§2.8); ``per_coordinate=False`` spends ``x_epsilon`` per node. Only features
are private (§2.3.1): the graph and the labels are known to the server.
"""

from __future__ import annotations

import random
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import VGAE, GCNConv
from torch_geometric.transforms import RandomLinkSplit
from torch_geometric.utils import remove_self_loops, to_undirected
from torchmetrics.functional.classification import binary_auroc

from .._deprecation import BUDGET_NAMES, renamed
from ..nn.backbone import GNNBackbone
from ..nn.kprop import normalized_adjacency
from ..privacy.local import LocalCollection, LocalCollector
from .arguments import check_arguments
from .base import PrivateModule
from .local import LocalRelease

__all__ = ["PGC", "PGCLinkPrediction", "PGC_MECHANISMS", "graph_convolution", "split_edges",
           "roc_auc"]

#: the 1-bit mechanism of PGC and its baselines (thesis §2.6.2, §2.9.1)
PGC_MECHANISMS = ("onebit", "laplace", "duchi", "piecewise")


def graph_convolution(x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The GCN convolution of eq. 2.1 (self-loops, symmetric normalisation), no weights: on the
    server's estimates ``y*`` it is the PGC estimator of eq. 2.4."""
    adj = normalized_adjacency(edge_index, x.size(0), "gcn", self_loops=True)
    return (adj.to(x.device) @ x.float()).to(x.dtype)


class LocalModule(PrivateModule):
    """A model trained on its nodes' one-time local collection (a :class:`~.local.LocalRelease`,
    its release), which the nodes of a new graph make afresh for inductive inference: what PGC
    and LPGNN share."""

    def __init__(self, collector: LocalCollector, noise_seed: int | None, lr: float,
                 weight_decay: float) -> None:
        super().__init__("ldp", None, "auto", levels=("ldp",), noise_seed=noise_seed, lr=lr,
                         weight_decay=weight_decay)
        self.collector = collector
        self.local = LocalRelease(self, collector)

    def labels_private(self) -> bool:
        return self.local.labels_private()

    def collect_from(self, data: Data) -> LocalCollection:
        """What the nodes of a new graph send (:meth:`LocalRelease.collect_from`)."""
        return self.local.collect_from(data)

    def predict_inductive(  # type: ignore[override]
        self, data: Data, collection: LocalCollection | None = None
    ) -> torch.Tensor:
        """Class probabilities on a new graph from ``collection``, or collected now (``None``)."""
        return super().predict_inductive(data, self.local.given(collection))

    def inductive_accountant(self, graph: Data, guarantee: str | None = None):
        return self.local.new_graph_accountant()


#: the paper of PGC and PGCLinkPrediction
PGC_PAPER = "Sajadmanesh. Privacy-Preserving Machine Learning on Graphs (PhD thesis, EPFL), ch. 2"


def pgc_collector(
    module: LocalModule, x_epsilon: float, x_eps: float | None, mechanism: str,
    per_coordinate: bool, alpha: float, beta: float, collect_labels: bool,
) -> tuple[float, LocalCollector]:
    """The nodes' collection of their features (Alg. 1 lines 1-2) that PGC and
    PGCLinkPrediction share, and the features' budget under its current name.

    Args:
        x_epsilon, per_coordinate: the features' budget, per feature (each node spends
            ``d * x_epsilon``) or per node; ``math.inf``: the RAW baseline, in the clear.
            (``epsilon`` is no alias: the CLI carries the default model's over to it.)
        mechanism: ``"onebit"`` (PGC), ``"laplace"``, ``"duchi"`` or ``"piecewise"``.
        alpha, beta: the feature range known to the server. x_eps: deprecated name.
    """
    x_epsilon = renamed(type(module).__name__, "x_eps", "x_epsilon", x_eps, x_epsilon,
                        BUDGET_NAMES)
    if mechanism not in PGC_MECHANISMS:
        raise ValueError(f"PGC mechanism must be one of {PGC_MECHANISMS}, got {mechanism!r}")
    # labels (if any) are public in PGC's threat model
    return x_epsilon, LocalCollector(x_epsilon, None, mechanism, alpha=alpha, beta=beta,
                                     per_coordinate=per_coordinate,
                                     collect_labels=collect_labels)


class PGC(LocalModule):
    """Node classification with private features: a GCN over the 1-bit estimates (Alg. 1).

    Args:
        hidden, layers, dropout: the GCN (two layers, hidden 32, ReLU, §2.6.3; Table 2.2:
            Cora dropout 0.5).
        num_features, num_classes: build the network now; otherwise at ``setup``.
        x_epsilon, per_coordinate, mechanism, alpha, beta, x_eps: the nodes' collection
            (:func:`pgc_collector`).
        noise_seed: reproducible node-side noise, research only (the report says so).
        lr, weight_decay: Adam (Table 2.2: Cora 0.01 / 0.01).
    """

    card_method = "PGC: 1-bit locally private features and a GCN (node classification)"
    card_paper = PGC_PAPER
    #: the nodes send their labels too (in the clear: they are public here)
    collect_labels = True

    def __init__(
        self, x_epsilon: float = 1.0, hidden: int = 32, layers: int = 2, dropout: float = 0.5,
        num_features: int | None = None, num_classes: int | None = None,
        *, mechanism: str = "onebit", per_coordinate: bool = True, alpha: float = 0.0,
        beta: float = 1.0, noise_seed: int | None = None, lr: float = 0.01,
        weight_decay: float = 0.01, x_eps: float | None = None,
    ) -> None:
        x_epsilon, collector = pgc_collector(self, x_epsilon, x_eps, mechanism, per_coordinate,
                                             alpha, beta, self.collect_labels)
        super().__init__(collector, noise_seed, lr, weight_decay)
        self.save_hyperparameters(ignore=["x_eps"])
        self.hparams["x_epsilon"] = x_epsilon  # under its current name
        self.gcn: GNNBackbone | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.gcn = GNNBackbone(  # cached: transductive, one fixed graph
            "gcn", num_features, hp.hidden, num_classes, hp.layers, dropout=hp.dropout,
            activation="relu", cached=True)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits; the first GCN layer on ``y*`` is the estimator of eq. 2.4."""
        return self.gcn(x, edge_index)

    def _logits(self, data: Data) -> torch.Tensor:
        """Logits on the training graph (post-processing of the collection)."""
        return self(self.local.received_features(), data.edge_index)

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        with self.gcn.on_new_graph():
            return self(self.local.features_of(outputs), graph.edge_index)


def split_edges(
    edge_index: torch.Tensor, num_nodes: int,
    fractions: tuple[float, float, float] = (0.85, 0.05, 0.10), seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Random train/val/test split of an undirected graph's edges (thesis §2.6.3: 85/5/10) by
    PyG's ``RandomLinkSplit`` under ``seed``: ``train_edge_index`` (both directions, the
    encoder's graph), ``train_pos`` and the one-direction pairs ``val_pos``, ``val_neg``,
    ``test_pos``, ``test_neg`` (as many negatives as positives, never an edge)."""
    check_arguments({"edge_split": fractions})
    graph = Data(edge_index=remove_self_loops(to_undirected(edge_index))[0], num_nodes=num_nodes)
    split = RandomLinkSplit(num_val=fractions[1], num_test=fractions[2], is_undirected=True,
                            split_labels=True, add_negative_train_samples=False)
    state = random.getstate()  # the split draws from torch's and Python's global generators
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            random.seed(int(seed))
            train, val, test = split(graph)
    finally:
        random.setstate(state)
    return {"train_pos": train.pos_edge_label_index, "train_edge_index": train.edge_index,
            "val_pos": val.pos_edge_label_index, "val_neg": val.neg_edge_label_index,
            "test_pos": test.pos_edge_label_index, "test_neg": test.neg_edge_label_index}


def roc_auc(pos_scores: torch.Tensor, neg_scores: torch.Tensor) -> float:
    """Area under the ROC curve of positives against negatives (torchmetrics' AUROC)."""
    scores = torch.cat([pos_scores, neg_scores]).float()
    target = torch.cat([torch.ones_like(pos_scores), torch.zeros_like(neg_scores)]).long()
    return float(binary_auroc(scores, target))


class VGAEEncoder(nn.Module):
    """GCN -> BatchNorm -> ReLU, then two GCN heads for mu and log-std (§2.6.3)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        self.body = GNNBackbone(  # cached: the encoder always sees the training edges
            "gcn", in_dim, hidden, hidden, layers=1, dropout=dropout, activation="relu",
            batch_norm=True, cached=True, plain_last=False)
        self.mu = GCNConv(hidden, out_dim, cached=True)
        self.logstd = GCNConv(hidden, out_dim, cached=True)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor):
        h = self.body(x, edge_index)
        return self.mu(h, edge_index), self.logstd(h, edge_index)


class PGCLinkPrediction(LocalModule):
    """Link prediction with private features: a VGAE over the 1-bit estimates; logs
    ``train/loss``, ``val/loss``, ``val/auc`` and ``test/auc``.

    Args:
        hidden, out_dim, dropout: the encoder (32 and 16, §2.6.3; Table 2.2: Cora dropout 0).
        edge_split, split_seed: train/val/test fractions of the edges (85/5/10) and the split's
            seed (the graph is public: the split costs nothing).
        num_features: build the network now; otherwise at ``setup``.
        x_epsilon, per_coordinate, mechanism, alpha, beta, x_eps, noise_seed, lr,
            weight_decay: as in :class:`PGC`.
    """

    card_method = "PGC: 1-bit locally private features and a VGAE (link prediction)"
    card_paper = PGC_PAPER
    collect_labels = False

    def __init__(
        self, x_epsilon: float = 1.0, hidden: int = 32, out_dim: int = 16, dropout: float = 0.0,
        edge_split: tuple[float, float, float] = (0.85, 0.05, 0.10), split_seed: int = 0,
        num_features: int | None = None, *, noise_seed: int | None = None, lr: float = 0.01,
        weight_decay: float = 0.01, mechanism: str = "onebit", per_coordinate: bool = True,
        alpha: float = 0.0, beta: float = 1.0, x_eps: float | None = None,
    ) -> None:
        # the collection and the hyper-parameters as PGC's (no labels sent: collect_labels)
        x_epsilon, collector = pgc_collector(self, x_epsilon, x_eps, mechanism, per_coordinate,
                                             alpha, beta, self.collect_labels)
        super().__init__(collector, noise_seed, lr, weight_decay)
        self.save_hyperparameters(ignore=["x_eps"])
        self.hparams["x_epsilon"] = x_epsilon
        self.vgae: VGAE | None = None
        self.edges: dict[str, torch.Tensor] | None = None
        if num_features is not None:
            self._build(num_features, 0)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        hp.update(num_features=int(num_features))
        self.vgae = VGAE(VGAEEncoder(num_features, hp.hidden, hp.out_dim, hp.dropout))

    def build_for(self, data: Data, seed: int | None = None) -> None:
        with self.seeded(seed):  # no class: the network is an autoencoder
            self._build(data.num_features, 0)

    def prepare(self, data: Data, stage: str) -> None:
        if self.edges is None:
            hp = self.hparams
            self.edges = split_edges(data.edge_index, data.num_nodes, hp.edge_split, hp.split_seed)

    def _edges(self, key: str) -> torch.Tensor:
        return self.edges[key].to(self.device)

    def embed(self) -> torch.Tensor:
        """Node embeddings from the received features and the *training* edges only."""
        return self.vgae.encode(self.local.received_features(), self._edges("train_edge_index"))

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        z = self.embed()
        loss = self.vgae.recon_loss(z, self._edges("train_pos")) + self.vgae.kl_loss() / z.size(0)
        self.log("train/loss", loss, batch_size=1, on_step=False, on_epoch=True)
        return loss

    def _evaluate(self, stage: str) -> torch.Tensor:
        z = self.embed()
        pos, neg = self._edges(f"{stage}_pos"), self._edges(f"{stage}_neg")
        p, q = self.vgae.decode(z, pos, sigmoid=False), self.vgae.decode(z, neg, sigmoid=False)
        target = torch.cat([torch.ones_like(p), torch.zeros_like(q)])
        loss = F.binary_cross_entropy_with_logits(torch.cat([p, q]), target)
        self.log(f"{stage}/loss", loss, batch_size=1)
        self.log(f"{stage}/auc", roc_auc(p.detach(), q.detach()), batch_size=1, prog_bar=True)
        return loss

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._evaluate("val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._evaluate("test")

    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        """Node embeddings (``mu`` in eval mode)."""
        return self.embed()

    def public_state(self) -> dict[str, Any]:
        """The edge split: a function of the graph, which is public in this threat model."""
        return {"edge_split": self.edges}

    def load_public_state(self, state: dict[str, Any]) -> None:
        self.edges = state.get("edge_split")
