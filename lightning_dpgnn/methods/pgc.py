"""PGC: a GCN whose first layer is estimated from 1-bit LDP features (thesis ch. 2, Alg. 1).

Node side, once (Alg. 1 lines 1-2): the server sends ``epsilon, alpha, Delta``; every node
answers with one bit per feature, ``y ~ Bernoulli(1/(e^eps+1) + (x-alpha)/Delta *
(e^eps-1)/(e^eps+1))`` (eq. 2.3).

Server side: the unbiased estimate ``y* = ((e^eps+1) y - 1)/(e^eps-1) * Delta + alpha``
(eq. 2.5) enters the first GCN layer, whose convolution ``sum_u y*_u / sqrt(|N(u)||N(v)|)`` is
then an unbiased estimate of the true one (eq. 2.4, Lemma 2); the later layers are ordinary.
The Laplace (LM), Duchi (DM) and Piecewise (PM) mechanisms of §2.9 plug in the same way.

Privacy: as in thesis ch. 2 each *feature* gets budget ``epsilon`` (``per_coordinate=True``),
so the accountant records the true per-node total ``d * epsilon`` (§2.8); pass
``per_coordinate=False`` to spend ``epsilon`` per node instead. Only features are private in this
threat model (§2.3.1): the graph and — for node classification — the labels are known to the
server, so they are not accounted.

Two tasks (§2.6.3): :class:`PGC` (node classification, two-layer GCN) and
:class:`PGCLinkPrediction` (a VGAE with a two-layer GCN encoder, batch norm after the first
layer, 85/5/10 random edge split, ROC AUC).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import VGAE, GCNConv

from ..data.local import LocalCollector
from ..nn.backbone import GNNBackbone
from ..nn.kprop import normalized_adjacency
from .local import LocallyPrivateModule

__all__ = [
    "PGC",
    "PGCLinkPrediction",
    "PGC_MECHANISMS",
    "graph_convolution",
    "split_edges",
    "roc_auc",
]

#: the 1-bit mechanism of PGC and its baselines (thesis §2.6.2, §2.9.1)
PGC_MECHANISMS = ("onebit", "laplace", "duchi", "piecewise")


def graph_convolution(x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The GCN convolution of eq. 2.1 (self-loops, symmetric normalisation), no weights.

    On the raw features this is ``GC(v)``; on the server's estimates ``y*`` it is the PGC
    estimator ``GC^(v)`` of eq. 2.4.
    """
    adj = normalized_adjacency(edge_index, x.size(0), "gcn", self_loops=True)
    return (adj.to(x.device) @ x.float()).to(x.dtype)


def _pgc_collector(
    epsilon: float, mechanism: str, per_coordinate: bool, alpha: float, beta: float, labels: bool
) -> LocalCollector:
    if mechanism not in PGC_MECHANISMS:
        raise ValueError(f"PGC mechanism must be one of {PGC_MECHANISMS}, got {mechanism!r}")
    return LocalCollector(
        epsilon,
        None,  # labels (if any) are public in PGC's threat model
        mechanism,
        alpha=alpha,
        beta=beta,
        per_coordinate=per_coordinate,
        collect_labels=labels,
    )


class PGC(LocallyPrivateModule):
    """Node classification with private features: GCN over the 1-bit estimates (Alg. 1).

    Args:
        epsilon: feature budget (per feature with ``per_coordinate=True``, as in the thesis);
            ``math.inf`` is the RAW baseline (features read in the clear, reported as such).
        mechanism: ``"onebit"`` (PGC), ``"laplace"`` (LM), ``"duchi"`` (DM), ``"piecewise"`` (PM).
        per_coordinate: budget per feature (``True``, thesis ch. 2) or per node.
        hidden, layers, dropout: the GCN (two layers, hidden 32, ReLU, §2.6.3).
        lr, weight_decay: Adam (Table 2.2: Cora 0.01 / 0.01 / dropout 0.5).
        alpha, beta: feature range known to the server.
        noise_seed: reproducible node-side randomness, for research only (``None``: entropy;
            the report says the guarantee does not hold against anyone who knows the seed).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        mechanism: str = "onebit",
        per_coordinate: bool = True,
        hidden: int = 32,
        layers: int = 2,
        dropout: float = 0.5,
        lr: float = 0.01,
        weight_decay: float = 0.01,
        alpha: float = 0.0,
        beta: float = 1.0,
        noise_seed: int | None = None,
        num_features: int | None = None,
        num_classes: int | None = None,
    ) -> None:
        collector = _pgc_collector(epsilon, mechanism, per_coordinate, alpha, beta, True)
        super().__init__(collector, noise_seed)
        self.save_hyperparameters()
        self.gcn: GNNBackbone | None = None
        if num_features is not None and num_classes is not None:
            self.build(num_features, num_classes)

    @property
    def is_built(self) -> bool:
        return self.gcn is not None

    def build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.hparams.update(num_features=int(num_features), num_classes=int(num_classes))
        self.gcn = GNNBackbone(
            "gcn",
            num_features,
            hp.hidden,
            num_classes,
            hp.layers,
            dropout=hp.dropout,
            activation="relu",
            cached=True,  # transductive: one fixed graph
        )

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits; the first GCN layer on ``y*`` is the estimator of eq. 2.4."""
        return self.gcn(x, edge_index)

    def _logits(self, data: Data) -> torch.Tensor:
        return self(self.received_features(), data.edge_index)

    def logits_from(self, features: torch.Tensor, graph: Data) -> torch.Tensor:
        with self.gcn.on_new_graph():
            return self(features, graph.edge_index)

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self._logits(data), data, "train")

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self._logits(data), data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        return self._log_accuracy(self._logits(data), data, "test")

    def predict_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        """Probabilities on the training graph; on a graph marked ``data.inductive = True``,
        from its own nodes' locally private features (:meth:`predict_inductive`)."""
        if getattr(data, "inductive", False):
            return self.predict_inductive(data)
        return self._logits(data).softmax(-1)

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )


# -- link prediction ----------------------------------------------------------------------------
def _sample_negatives(
    num_nodes: int, count: int, existing: set[tuple[int, int]], generator: torch.Generator
) -> torch.Tensor:
    """``count`` distinct node pairs ``i < j`` that are not edges (``[2, count]``)."""
    found: list[tuple[int, int]] = []
    seen = set(existing)
    while len(found) < count:
        pairs = torch.randint(0, num_nodes, (2, 2 * (count - len(found)) + 16), generator=generator)
        for i, j in pairs.t().tolist():
            a, b = min(i, j), max(i, j)
            if a != b and (a, b) not in seen:
                seen.add((a, b))
                found.append((a, b))
                if len(found) == count:
                    break
    return torch.tensor(found, dtype=torch.long).t().reshape(2, count)


def split_edges(
    edge_index: torch.Tensor,
    num_nodes: int,
    fractions: tuple[float, float, float] = (0.85, 0.05, 0.10),
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Random train/val/test split of an undirected graph's edges (thesis §2.6.3: 85/5/10).

    Returns ``train_edge_index`` (both directions, the encoder's graph), ``train_pos`` and the
    positive/negative pairs ``val_pos``, ``val_neg``, ``test_pos``, ``test_neg`` (one direction,
    as many negatives as positives, never an edge of the graph).
    """
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-6 or min(fractions) < 0:
        raise ValueError(f"edge split fractions must be 3 numbers summing to 1, got {fractions}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    src, dst = edge_index
    und = torch.stack([torch.minimum(src, dst), torch.maximum(src, dst)])
    und = und[:, und[0] != und[1]].unique(dim=1)
    m = und.size(1)
    perm = torch.randperm(m, generator=gen)
    n_val, n_test = int(round(fractions[1] * m)), int(round(fractions[2] * m))
    val, test, train = perm[:n_val], perm[n_val : n_val + n_test], perm[n_val + n_test :]
    existing = set(map(tuple, und.t().tolist()))
    negatives = _sample_negatives(num_nodes, n_val + n_test, existing, gen)
    train_pos = und[:, train]
    return {
        "train_pos": train_pos,
        "train_edge_index": torch.cat([train_pos, train_pos.flip(0)], dim=1),
        "val_pos": und[:, val],
        "val_neg": negatives[:, :n_val],
        "test_pos": und[:, test],
        "test_neg": negatives[:, n_val:],
    }


def roc_auc(pos_scores: torch.Tensor, neg_scores: torch.Tensor) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties count 1/2."""
    scores = torch.cat([pos_scores, neg_scores]).double()
    order = scores.argsort()
    ranks = torch.empty_like(scores)
    sorted_scores = scores[order]
    # average ranks over ties
    _, inverse, counts = torch.unique_consecutive(
        sorted_scores, return_inverse=True, return_counts=True
    )
    ends = counts.cumsum(0).double()
    avg = ends - (counts.double() - 1) / 2
    ranks[order] = avg[inverse]
    n_pos, n_neg = len(pos_scores), len(neg_scores)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


class VGAEEncoder(nn.Module):
    """GCN -> BatchNorm -> ReLU, then two GCN heads for mu and log-std (§2.6.3)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        # the encoder always sees the training edges: cache their normalisation
        self.conv = GCNConv(in_dim, hidden, cached=True)
        self.norm = nn.BatchNorm1d(hidden)
        self.mu = GCNConv(hidden, out_dim, cached=True)
        self.logstd = GCNConv(hidden, out_dim, cached=True)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor):
        h = F.relu(self.norm(self.conv(x, edge_index)))
        h = F.dropout(h, self.dropout, self.training)
        return self.mu(h, edge_index), self.logstd(h, edge_index)


class PGCLinkPrediction(LocallyPrivateModule):
    """Link prediction with private features: a VGAE over the 1-bit estimates.

    Args:
        epsilon, mechanism, per_coordinate, alpha, beta, noise_seed: as in :class:`PGC`.
        hidden, out_dim: encoder widths (32 and 16, §2.6.3).
        dropout, lr, weight_decay: training (Table 2.2: Cora 0.01 / 0.01 / 0).
        edge_split: train/val/test fractions of the edges (85/5/10).
        split_seed: seed of the edge split (the graph is public: the split costs nothing).

    Logs ``train/loss``, ``val/loss``, ``val/auc`` and ``test/auc``.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        mechanism: str = "onebit",
        per_coordinate: bool = True,
        hidden: int = 32,
        out_dim: int = 16,
        dropout: float = 0.0,
        lr: float = 0.01,
        weight_decay: float = 0.01,
        edge_split: tuple[float, float, float] = (0.85, 0.05, 0.10),
        split_seed: int = 0,
        alpha: float = 0.0,
        beta: float = 1.0,
        noise_seed: int | None = None,
        num_features: int | None = None,
    ) -> None:
        collector = _pgc_collector(epsilon, mechanism, per_coordinate, alpha, beta, False)
        super().__init__(collector, noise_seed)
        self.save_hyperparameters()
        self.vgae: VGAE | None = None
        self.edges: dict[str, torch.Tensor] | None = None
        if num_features is not None:
            self.build(num_features, 0)

    @property
    def is_built(self) -> bool:
        return self.vgae is not None

    def build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.hparams.update(num_features=int(num_features))
        self.vgae = VGAE(VGAEEncoder(num_features, hp.hidden, hp.out_dim, hp.dropout))

    def _declared_classes(self) -> int | None:
        return None

    def setup(self, stage: str) -> None:
        super().setup(stage)
        if self.edges is None:
            gen = torch.Generator().manual_seed(int(self.hparams.split_seed))
            g = self._graph
            self.edges = split_edges(g.edge_index, g.num_nodes, self.hparams.edge_split, gen)

    def _edges(self, key: str) -> torch.Tensor:
        return self.edges[key].to(self.device)

    def embed(self) -> torch.Tensor:
        """Node embeddings from the received features and the *training* edges only."""
        return self.vgae.encode(self.received_features(), self._edges("train_edge_index"))

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        z = self.embed()
        n = z.size(0)
        loss = self.vgae.recon_loss(z, self._edges("train_pos")) + self.vgae.kl_loss() / n
        self.log("train/loss", loss, batch_size=1, on_step=False, on_epoch=True)
        return loss

    def _evaluate(self, stage: str) -> torch.Tensor:
        z = self.embed()
        pos, neg = self._edges(f"{stage}_pos"), self._edges(f"{stage}_neg")
        p, q = self.vgae.decode(z, pos, sigmoid=False), self.vgae.decode(z, neg, sigmoid=False)
        loss = F.binary_cross_entropy_with_logits(
            torch.cat([p, q]), torch.cat([torch.ones_like(p), torch.zeros_like(q)])
        )
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

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )

    def public_state(self) -> dict[str, Any]:
        """The edge split: a function of the graph, which is public in this threat model."""
        return {"edge_split": self.edges}

    def load_public_state(self, state: dict[str, Any]) -> None:
        self.edges = state.get("edge_split")
