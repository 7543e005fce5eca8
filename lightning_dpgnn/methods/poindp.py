"""PoinDP: hierarchy-aware private node embeddings in the Poincaré ball (Wei et al., AAAI 2024),
made sound (``docs/poindp.md``). ``mode="dp"``: an encoder onto the ball trained without edges
(DP-Adam at node level); the release, drawn once, is the hyperbolic Gaussian mechanism on the
ball embeddings (radius share ``beta`` and direction, each neighbourhood sum with noise of the
sensitivity of GAP's sum aggregation: ``sqrt(2)`` per undirected edge, ``sqrt(D)`` per node);
a classifier on the cache only. The slides' pre-training reads the edges (and in the authors'
code every label), so the encoder's radius plays its role. ``mode="paper-code"`` reproduces
the authors' code and is NOT differentially private (:class:`~.paper_code.PaperCode`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader
from torch_geometric.data import Data

from .. import hyperbolic as H
from ..levels import Level
from ..loops import Stage, StagedFit
from ..nn.mlp import MLP
from ..nn.poincare import PaperCodeNet, PoincareEncoder
from ..privacy import PrivacyAccountant
from ..privacy import random as R
from ..privacy.hyperbolic import HyperbolicGaussian, check_beta, check_clip, optimal_beta
from ..privacy.mechanism import Steps
from .ap import LABEL_COUNTS, AggregationPerturbationModule
from .base import PrivateModule
from .paper_code import PAPER_CODE, PaperCode
from .releases import Draw, Release
from .sage import _the_graph

__all__ = ["PoinDP", "PoinDPPaperCode", "classification_scores", "MODES"]

MODES = ("dp", PAPER_CODE)
#: the 2-D Poincaré weight the authors' code gives every node missing from its weight file;
#: the paper-code mode gives it to every node (the file's weights read every node's label)
PAPER_CODE_WEIGHT = (1.0, 1.0)


def classification_scores(probs: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Accuracy, weighted-F1, macro-F1 and the paper's "W-F1" (``f1_score(pred, y,
    average="weighted")``, arguments swapped: weighted by *predicted* support) of the rows of
    ``probs`` (``[N, C]``, scores) against ``y``; for parity only, ``paper_swapped_wf1``."""
    from sklearn.metrics import f1_score

    pred = probs.argmax(-1).cpu().numpy()
    true = y.cpu().numpy()
    return {
        "acc": float(np.mean(pred == true)),
        "weighted_f1": float(f1_score(true, pred, average="weighted", zero_division=0)),
        "macro_f1": float(f1_score(true, pred, average="macro", zero_division=0)),
        "paper_swapped_wf1": float(f1_score(pred, true, average="weighted", zero_division=0)),
    }


#: why the authors' code is not differentially private (its report and the zoo say so)
PAPER_CODE_FLAW = (
    "bounded noise sigma*tanh(v/2) added to the class logits every epoch and at test time, "
    "never accounted, with sigma from networks that never train"
)


class PoinDP(AggregationPerturbationModule):
    """PoinDP node classifier: edge- or node-level private, or the paper-code mode (not private).

    Args:
        privacy: ``"edge"``, ``"node"`` or ``"none"`` (the same model without noise).
        epsilon: target epsilon of the whole fit (release, and DP-Adam at node level).
        delta: ``"auto"``, ``"paper"`` or a number (``PrivateModule``).
        beta: the radius share of the release's budget, in ``[0, 1]``; ``"auto"``:
            ``1 / (1 + sqrt(hidden))``, which minimises the total noise variance.
        clip: ``C``, the public norm the tangent vectors are clipped to.
        curvature: ``c`` of the ball (curvature ``-c``).
        mode: ``"dp"`` or ``"paper-code"`` (NOT differentially private; ``privacy="edge"``).
        hops: K releases, hop ``k`` on the points recombined from hop ``k - 1``
            (post-processing), each one more mechanism.
        hidden: embedding width (the ball's dimension) and hidden width of every MLP.
        encoder_layers, classifier_layers: MLP layers.
        encoder_epochs, classifier_epochs: epochs of the two stages (``mode="dp"``).
        paper_epochs, paper_patience: ``mode="paper-code"``: epochs, and early-stopping
            patience on ``val/acc`` (the code's 200 and 100).
        num_features, num_classes: build the networks now (a restored model).
        **kwargs: the settings shared with GAP (:class:`~lightning_dpgnn.methods.ap.
            AggregationPerturbationModule`); ``label_counts`` is off by default (the paper's).
    """

    mechanism_name = "poindp"
    caches = ("_hop0_cache",)  # declared (PrivateModule.reset_caches)

    @classmethod
    def sibling_for(cls, kwargs: dict[str, Any]) -> type[PrivateModule] | None:
        """``PoinDP(mode="paper-code", ...)`` builds :class:`PoinDPPaperCode` (NOT private)."""
        return PoinDPPaperCode if cls is PoinDP and kwargs.get("mode") == PAPER_CODE else None

    def __init__(
        self,
        privacy: Literal["none", "edge", "node"] = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        beta: float | str = "auto",
        clip: float = 1.0,
        curvature: float = 1.0,
        mode: Literal["dp", "paper-code"] = "dp",
        hops: int = 1,
        hidden: int = 16,
        encoder_layers: int = 2,
        classifier_layers: int = 2,
        encoder_epochs: int = 100,
        classifier_epochs: int = 100,
        paper_epochs: int = 200,
        paper_patience: int = 100,
        num_features: int | None = None,
        num_classes: int | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
            raise ValueError(f"hops must be an integer >= 1, got {hops!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not (isinstance(beta, str) and beta == "auto"):
            check_beta(beta)
        check_clip(clip)
        H.check_curvature(curvature)
        kwargs.setdefault("label_counts", False)
        super().__init__(privacy, epsilon, delta, **kwargs)
        self.mode = mode
        self.beta = optimal_beta(int(hidden)) if beta == "auto" else check_beta(beta)
        self.clip, self.curvature = check_clip(clip), H.check_curvature(curvature)
        self.declare_releases(Release(
            self.mechanism_name, self.release_mechanisms, self._draw_release, stage=1,
            save=self._whole,
        ))  # fmt: skip
        self.encoder_model: nn.Module | None = None
        self.classifier: nn.Module | None = None
        self.build(num_features, num_classes)

    # -- construction ------------------------------------------------------------------------
    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        mlp = self.mlp_options()
        width = self.input_width(num_features, num_classes)
        encoder = PoincareEncoder(width, hp.hidden, num_classes, hp.encoder_layers, self.clip,
                                  self.curvature, **mlp)
        width = hp.hidden + hp.hops * (hp.hidden + 1)
        classifier = MLP(width, num_classes, hp.hidden, hp.classifier_layers, **mlp)
        self.encoder_model = self._dp_wrap(encoder, "PoinDP encoder")
        self.classifier = self._dp_wrap(classifier, "PoinDP classifier")

    def configure_stages(self) -> list[Stage]:
        hp = self.hparams
        return [
            Stage("encoder", hp.encoder_epochs, ("encoder_model",), "encoder_epochs"),
            Stage("classifier", hp.classifier_epochs, ("classifier",), "classifier_epochs"),
        ]

    # -- the release -------------------------------------------------------------------------
    def mechanism(self, noise_multiplier: float | None = None) -> HyperbolicGaussian:
        """The hyperbolic Gaussian mechanism at ``noise_multiplier`` (default: the fit's)."""
        z = noise_multiplier if noise_multiplier is not None else self.noise_multiplier
        return HyperbolicGaussian(
            z if z is not None else 1.0, beta=self.beta, clip=self.clip,
            curvature=self.curvature, level="node" if self.level is Level.NODE else "edge",
            max_degree=self.max_degree if self.level is Level.NODE else None,
            edge_unit=self.edge_unit, name=self.mechanism_name,
        )

    def aggregation_mechanism(self):
        """The part with the least noise (the larger share), for an audit."""
        if not self.level.private or self.noise_multiplier is None:
            return None
        parts = self.mechanism().parts()
        mech, scale = min(parts, key=lambda p: p[1])
        return self._mechanism_for(self.noise_multiplier * scale, mech.name)

    def release_mechanisms(self, z: float | None) -> list[HyperbolicGaussian]:
        """Each hop's hyperbolic Gaussian at its share of the budget (none without privacy)."""
        if not self.level.private:
            return []
        return [self.mechanism(z).scaled(scale) for scale in self.hop_scales()]

    def _points(self, x: torch.Tensor) -> torch.Tensor:
        """The encoder's ball embeddings of ``x``'s nodes."""
        enc = self._encoder()
        return self._eval_forward(enc, self.row_trainer.input_features(x), call=enc.embed)

    def _draw_release(self, d: Draw) -> Steps:
        g = d.graph
        counts = None if d.fit else d.outputs.get(LABEL_COUNTS)  # a new graph's own counts
        points = self._points(self._features(g, counts))
        mechanism, hops = self.mechanism(), []
        for k in range(len(self.hop_scales())):
            if d.mechanisms:
                hop = yield from d.mechanisms[k].steps(points, g.edge_index, g.num_nodes)
            else:  # the same model without noise
                hop = mechanism.aggregate(points, g.edge_index, g.num_nodes)
            hops.append(hop)
            points = mechanism.recombine(hop)  # post-processing: the next hop's input
        return torch.stack(hops, dim=1)

    def hyperbolic_embeddings(self, release: torch.Tensor | None = None) -> torch.Tensor:
        """The released neighbourhood embeddings (or ``release``) in the ball, ``[N, K, H]``."""
        release = self.releases[self.mechanism_name] if release is None else release
        mechanism = self.mechanism()
        return torch.stack([mechanism.recombine(release[:, k]) for k in range(release.size(1))],
                           dim=1)

    # -- the classifier's input ------------------------------------------------------------
    @torch.no_grad()
    def _hop0(self, x: torch.Tensor) -> torch.Tensor:
        """Each node's own clipped tangent embedding (units of ``C``), never stored."""
        cached = getattr(self, "_hop0_cache", None)
        if cached is None or cached[0] is not x:
            enc = self._encoder()
            rows = self.row_trainer.input_features(x)
            self._hop0_cache = (x, self._eval_forward(enc, rows, call=enc.tangent))
        return self._hop0_cache[1]

    def classifier_input(self, x: torch.Tensor, release: torch.Tensor) -> torch.Tensor:
        release = release.to(device=x.device)
        tangent = H.logmap0(self.hyperbolic_embeddings(release), self.curvature) / self.clip
        radius = torch.log1p(release[:, :, :1].clamp_min(0.0))
        per_hop = torch.cat([tangent, radius], dim=2).flatten(1)
        return torch.cat([self._hop0(x), per_hop], dim=1).float()



class PoinDPPaperCode(PrivateModule):
    """``PoinDP(mode="paper-code")``: the authors' released code (two branches' logits plus
    bounded noise ``sigma*tanh(v/2)``, never accounted), **NOT differentially private**.

    Args:
        privacy: ``"edge"`` only (the graph is read; nothing is protected).
        epsilon: the code's "epsilon" (it scales sigma; no guarantee).
        paper_epochs, paper_patience: epochs, and early-stopping patience on ``val/acc`` (the
            code's 200 and 100).
        label_counts: refused (the code has none).
        num_features, num_classes, seed, noise_seed, lr, weight_decay, delta, mode: as in
            :class:`PoinDP`.
    """

    card_method = PoinDP.card_method
    card_paper = PoinDP.card_paper
    mechanism_name = PoinDP.mechanism_name

    def __init__(
        self,
        privacy: Literal["none", "edge", "node"] = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        mode: Literal["paper-code"] = PAPER_CODE,
        paper_epochs: int = 200,
        paper_patience: int = 100,
        label_counts: bool = False,
        num_features: int | None = None,
        num_classes: int | None = None,
        seed: int | None = None,
        noise_seed: int | None = None,
        lr: float = 0.01,
        weight_decay: float = 0.0,
    ) -> None:
        if Level.of(privacy) is not Level.EDGE:
            raise ValueError(
                "mode='paper-code' reproduces the authors' code, which protects nothing: it "
                "runs as privacy='edge' (only to read the graph) and reports NOT "
                f"differentially private; got privacy={privacy!r}"
            )
        if label_counts:
            raise ValueError("mode='paper-code' reproduces the authors' code, which has no "
                             "label counts: leave label_counts unset")
        super().__init__(privacy, epsilon, delta, noise_seed=noise_seed, lr=lr,
                         weight_decay=weight_decay)
        self.save_hyperparameters()
        self.mode = PAPER_CODE
        self.paper_code = PaperCode("model", PAPER_CODE_FLAW)
        self.accountant.unit = self.paper_code.note()
        # full batch on the whole graph; early stopping on val/acc, as the code does
        self.staged = StagedFit(self, self.stage_rows)
        self.staged.patience, self.staged.reload_every_epoch = paper_patience, False
        self.paper_net: PaperCodeNet | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        self.paper_net = PaperCodeNet(int(num_features), int(num_classes))

    def configure_stages(self) -> list[Stage]:
        return [Stage(PAPER_CODE, self.hparams.paper_epochs, ("paper_net",), "paper_epochs")]

    def stage_rows(self, stage_index: int, data: Data) -> DataLoader:
        return DataLoader([self.on_device(data)], batch_size=1, collate_fn=_the_graph)

    def train_dataloader_from(self, data: Data) -> DataLoader:
        return self.staged.loader(data)

    def _logits(self, data: Data) -> torch.Tensor:
        return self._paper_logits(self.on_device(data))

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        return self._paper_logits(graph)

    def _paper_logits(self, data: Data) -> torch.Tensor:
        """The code's forward: both branches' logits plus bounded noise drawn at every call."""
        branches = self.paper_net(data.x, data.edge_index)  # [2, N, C]
        weights = torch.tensor(PAPER_CODE_WEIGHT, device=branches.device).expand(
            data.num_nodes, 2)
        sigma = self.paper_net.sigmas(weights, float(self.target_epsilon or 1.0))  # [2, N]
        v = R.normal(tuple(branches.shape), 1.0, dtype=branches.dtype, device=branches.device)
        noise = sigma.unsqueeze(-1) * torch.tanh(v / 2)  # in (-sigma, sigma): bounded
        return (branches + noise).sum(dim=0)

    # -- NOT differentially private: an infinite spend wherever the graph is read ---------------
    def _record(self, accountant: PrivacyAccountant) -> None:
        self.paper_code.record(accountant, f"{self.mechanism_name}/{PAPER_CODE}")

    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        if not any(e.count for e in self.accountant.ledger):
            self._record(accountant)
        return True

    def inductive_accountant(
        self, graph: Data, guarantee: str | None = None
    ) -> PrivacyAccountant:
        """A new graph's ledger: the graph read in the clear (an infinite spend)."""
        acc = super().inductive_accountant(graph, guarantee)
        acc.unit = self.paper_code.note()
        self._record(acc)
        return acc

    def on_fit_start(self) -> None:
        super().on_fit_start()
        self._record(self.accountant)  # the fit reads the graph and labels in the clear
