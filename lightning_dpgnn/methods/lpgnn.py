"""LPGNN: locally private GNN with multi-bit features, KProp and Drop (thesis ch. 3, Alg. 4).

Node side, once (lines 4-11): features through the multi-bit encoder (``x_epsilon``, Alg. 2),
labels of the train + validation nodes by randomized response (``y_epsilon``, eq. 3.39); each
node spends ``x_epsilon + y_epsilon`` (Corollary 2). Server side, post-processing (lines
13-30): rectify (eq. 3.10), feature and label KProp (Alg. 3), ``p(y|x) = softmax(g(h))``,
``p(y'|x) = p(y|x) P`` (eq. 3.41), ``p(y~|x)`` by label KProp (eq. 3.42); train on the **Drop**
loss ``l(y~, p(y~|x))``, validate on the noisy labels, and stop at ``Acc*`` (line 29:
:class:`~lightning_dpgnn.callbacks.DropEarlyStopping`). ``loss="ce"``/``"fc"`` are the
baselines of Table 3.4. Test accuracy reads the clean test labels, never collected (§3.5.2).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch_geometric.data import Data

from .._deprecation import BUDGET_NAMES, renamed
from ..nn.backbone import GNNBackbone, check_backbone
from ..nn.kprop import KProp, PropagatedCodes, check_steps
from ..privacy.local import LocalCollector
from .base import accuracy
from .pgc import LocalModule

__all__ = ["LPGNN", "LOSSES"]

LOSSES = ("drop", "fc", "ce")


class LPGNN(LocalModule):
    """Locally private GNN (features and labels under LDP).

    Args:
        backbone: ``"sage"`` (default, thesis' ablation model), ``"gcn"`` or ``"gat"``.
        x_epsilon, y_epsilon: feature budget per node, label budget per labelled node
            (``math.inf``: no privacy for them, read in the clear and reported as such).
        x_steps, y_steps: ``K_x``, ``K_y``: feature and label KProp steps (>= 0).
        mechanism: ``"multibit"``, ``"onebit"``, ``"laplace"``, ``"gaussian"`` (analytic, at
            ``gaussian_delta``), ``"duchi"`` or ``"piecewise"`` (thesis Table 3.2).
        loss: ``"drop"`` (Alg. 4), ``"fc"`` or ``"ce"`` (module docstring; Table 3.4).
        features: ``"private"`` or a budget-free baseline of Table 3.3: ``"ones"``,
            ``"degree"`` (one-hot degree), ``"random"``.
        hidden, layers, dropout, activation, heads: backbone (two layers of 16, SELU, dropout;
            GAT with four heads, thesis §3.5.2).
        lr, weight_decay, m, alpha, beta: Adam; multi-bit sampling (``None``: ``m*``), range.
        gaussian_delta: delta of the analytic Gaussian mechanism (the report's delta when
            ``mechanism="gaussian"``). ``delta``: its former name, deprecated.
        standardize: z-score every column of ``h`` (post-processing): the rectifier scales
            features by about ``d / eps`` (eq. 3.10); ``False`` is the thesis' literal pipeline.
        noise_seed: reproducible node-side randomness, for research only (the report says the
            guarantee does not hold against anyone who knows the seed).
    """

    card_method = ("LPGNN: multi-bit feature encoder and rectifier, KProp, randomized-response "
                   "labels, Drop")
    card_paper = "Sajadmanesh, Gatica-Perez. Locally Private Graph Neural Networks. ACM CCS 2021"

    def __init__(
        self, backbone: Literal["sage", "gcn", "gat"] = "sage", x_epsilon: float = 1.0,
        y_epsilon: float = 1.0, x_steps: int = 0, y_steps: int = 0, mechanism: str = "multibit",
        loss: Literal["drop", "fc", "ce"] = "drop",
        features: Literal["private", "ones", "degree", "random"] = "private",
        hidden: int = 16, layers: int = 2, dropout: float = 0.0, activation: str = "selu",
        heads: int = 4, lr: float = 0.01, weight_decay: float = 0.0, m: int | None = None,
        alpha: float = 0.0, beta: float = 1.0, gaussian_delta: float = 1e-10,
        standardize: bool = True, noise_seed: int | None = None,
        num_features: int | None = None, num_classes: int | None = None,
        delta: float | None = None, x_eps: float | None = None, y_eps: float | None = None,
    ) -> None:
        gaussian_delta = renamed("LPGNN", "delta", "gaussian_delta", delta, gaussian_delta,
                                 "delta names the accountant's target elsewhere")
        x_epsilon = renamed("LPGNN", "x_eps", "x_epsilon", x_eps, x_epsilon, BUDGET_NAMES)
        y_epsilon = renamed("LPGNN", "y_eps", "y_epsilon", y_eps, y_epsilon, BUDGET_NAMES)
        check_backbone(backbone)
        check_steps(x_steps, "x_steps")
        check_steps(y_steps, "y_steps")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        if y_epsilon is None:
            raise ValueError("LPGNN's labels are private: give y_epsilon > 0 (math.inf: clean "
                             "labels)")
        collector = LocalCollector(  # checks the mechanism and the features' source
            x_epsilon, y_epsilon, mechanism, m=m, alpha=alpha, beta=beta,
            gaussian_delta=gaussian_delta, features=features)
        super().__init__(collector, noise_seed, lr, weight_decay)
        self.save_hyperparameters(ignore=["delta", "x_eps", "y_eps"])
        self._graph: Data | None = None
        self.x_prop = KProp(x_steps)
        self.y_prop = KProp(y_steps)
        self.net: GNNBackbone | None = None
        self._view: dict[str, torch.Tensor] | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        if num_classes < 2:
            raise ValueError(f"LPGNN needs at least 2 classes, got {num_classes}")
        self.net = GNNBackbone(  # cached: transductive, one fixed graph
            hp.backbone, num_features, hp.hidden, num_classes, hp.layers, dropout=hp.dropout,
            activation=hp.activation, heads=hp.heads, cached=True)
        rr = self.collector.label_randomizer(num_classes)
        transition = torch.eye(num_classes) if math.isinf(rr.epsilon) else rr.transition_matrix()
        self.register_buffer("log_transition", transition.float().log(), persistent=False)

    @property
    def acc_star(self) -> float:
        """``Acc* = e^eps_y / (e^eps_y + c - 1)`` (Alg. 4 line 17); 1 for clean labels."""
        return self.collector.acc_star(self.hparams.num_classes)

    # -- server-side view of the collection (lines 13-15), pure post-processing -------------------
    def prepare(self, data: Data, stage: str) -> None:
        self._graph = data  # public to the server: the views below read its edges

    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        self._view = None  # built on the previous collection

    def server_view(self, data: Data | None = None) -> dict[str, torch.Tensor]:
        """``h`` (KProp of the rectified features: a ``PropagatedCodes`` for multi-bit codes,
        whose ``dense()`` is the matrix), ``y'`` and ``y~`` with their masks."""
        if self._view is None:
            graph = self._graph if self._graph is not None else data
            if graph is None:
                raise RuntimeError("LPGNN needs the training graph: fit, or pass the datamodule")
            c = self.local.collection()
            ei = graph.edge_index.to(self.device)
            h = self._server_features(c, ei, graph.num_nodes)  # line 14
            noisy, labelled = c.labels.to(self.device), c.label_mask.to(self.device)
            # one-hot y' for the labelled nodes, zero elsewhere (line 9; unlabelled are -1)
            y_one_hot = F.one_hot(noisy.clamp_min(0), self.hparams.num_classes).float()
            y_prop = self.y_prop(y_one_hot * labelled.unsqueeze(-1), ei)  # line 15
            adj = self.net.adjacency(ei, graph.num_nodes, with_transpose=True)
            # nodes whose K_y-hop neighbourhood holds no label have no estimate y~
            self._view = {"h": h, "edge_index": ei, "adj": adj, "y_noisy": noisy,
                          "labelled": labelled, "y_tilde": y_prop.argmax(-1),
                          "has_y_tilde": y_prop.sum(-1) > 0}
        return self._view

    def _server_features(self, collection, edge_index: torch.Tensor, num_nodes: int
                         ) -> torch.Tensor | PropagatedCodes:
        """``h`` of line 14: multi-bit codes stay factored (a ``PropagatedCodes``: the network's
        first product runs on the sparse codes), other features give the dense KProp."""
        factors = self.collector.affine_codes(collection)
        if factors is None:
            return self._propagated(self.local.received_features(), edge_index)
        codes, scale, offset = (t.to(self.device) for t in factors)
        h = PropagatedCodes(codes, scale, offset,
                            self.x_prop.adjacency(edge_index, num_nodes), self.x_prop.steps)
        return h.standardize() if self.hparams.standardize else h

    def _propagated(self, features: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """KProp of the rectified features, z-scored when ``standardize`` (post-processing)."""
        h = self.x_prop(features, edge_index)
        if self.hparams.standardize:
            h = (h - h.mean(0)) / h.std(0).clamp_min(1e-12)
        return h

    # -- a new graph ----------------------------------------------------------------------------
    @property
    def transfers_to_new_graphs(self) -> bool:
        """Whether a fresh collection on a new graph gives the accuracy the model was tested at:
        only when the training features carried no noise draw (``x_epsilon=inf``, ``"ones"``,
        ``"degree"``). Otherwise the model fits its collection's one noise draw, which after
        KProp is a positional encoding of the training graph (csbm, ``x_epsilon=1``: 0.90
        transductive, 0.19-0.37 on a fresh collection of the same graph, chance 0.20)."""
        c = self.collector
        if c.features_source == "private":
            return not c.perturbs_features
        return c.features_source in ("ones", "degree")

    def inductive_graph(self, data: Data) -> Data:
        """A new graph, refused (before any of its nodes spends) when the model cannot transfer."""
        c = self.collector
        if not self.transfers_to_new_graphs:
            what = (f"x_epsilon={c.x_epsilon:g}" if c.features_source == "private"
                    else f"features={c.features_source!r}")
            raise NotImplementedError(
                f"LPGNN ({what}) cannot predict on a new graph: it fitted the one noise draw of "
                "its training collection (after KProp the noise is a positional encoding of the "
                "training graph), and on a fresh collection it predicts at about chance, even on "
                "the same graph. Predict on the training graph (predict_step without "
                "`inductive`), or use PGC, whose fresh collections give its tested accuracy. "
                "LPGNN transfers only with x_epsilon=inf or features='ones'/'degree'.")
        return super().inductive_graph(data)

    def inductive_logits(self, graph: Data, outputs: dict) -> torch.Tensor:
        ei = graph.edge_index
        h = self._propagated(self.local.features_of(outputs), ei)
        with self.net.on_new_graph():
            return self(h, self.net.adjacency(ei, graph.num_nodes, with_transpose=True))

    # -- the model (lines 20-22) ------------------------------------------------------------------
    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits of ``p(y|x)`` from the KProp'd features."""
        return self.net(h, edge_index)

    def noisy_log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """``log p(y'|x) = log (p(y|x) P)`` (eq. 3.41), computed in log space."""
        log_p = logits.log_softmax(-1)
        return torch.logsumexp(log_p.unsqueeze(-1) + self.log_transition, dim=1)

    def tilde_log_probs(self, log_p_noisy: torch.Tensor, view: dict) -> torch.Tensor:
        """``log p(y~|x) = log softmax(KProp(p(y'|x), K_y))`` (eq. 3.42): ``p(y'|x)`` kept for
        the labelled nodes and zero elsewhere, as ``y'``; the identity with ``K_y = 0``."""
        if self.y_prop.steps == 0:
            return log_p_noisy
        soft = log_p_noisy.exp() * view["labelled"].unsqueeze(-1)
        return self.y_prop(soft, view["edge_index"]).log_softmax(-1)

    # -- training (line 24) -----------------------------------------------------------------------
    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        view, logits = self.server_view(), self._logits(data)
        mask = data.train_mask.to(self.device) & view["labelled"]
        if self.hparams.loss == "drop":
            mask = mask & view["has_y_tilde"]
            log_p = self.tilde_log_probs(self.noisy_log_probs(logits), view)
            loss = F.nll_loss(log_p[mask], view["y_tilde"][mask])
        else:  # FC and CE train on the loss they validate on
            loss = self.validation_loss(logits, mask, view["y_noisy"])
        self.log("train/loss", loss, batch_size=int(mask.sum()), on_step=False, on_epoch=True)
        return loss

    # -- validation on noisy labels only (lines 25-27) --------------------------------------------
    def validation_loss(self, logits: torch.Tensor, mask: torch.Tensor, y: torch.Tensor):
        """Forward-correction loss for Drop and FC (line 25); noisy cross-entropy for CE."""
        if self.hparams.loss == "ce":
            return F.cross_entropy(logits[mask], y[mask])
        return F.nll_loss(self.noisy_log_probs(logits)[mask], y[mask])

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor:
        view, logits = self.server_view(), self._logits(data)
        y = view["y_noisy"]
        for stage in ("train", "val"):
            mask = getattr(data, f"{stage}_mask").to(self.device) & view["labelled"]
            n = int(mask.sum())
            acc = accuracy(logits[mask], y[mask])
            self.log(f"{stage}/noisy_acc", acc, batch_size=n, on_step=False, on_epoch=True)
        loss = self.validation_loss(logits, mask, y)  # on the validation nodes, the loop's last
        self.log("val/loss", loss, batch_size=n, on_step=False, on_epoch=True)
        return loss

    def _logits(self, data: Data) -> torch.Tensor:
        """Logits of every node of the training graph: post-processing of the collection."""
        view = self.server_view(data)
        return self(view["h"], view["adj"])
