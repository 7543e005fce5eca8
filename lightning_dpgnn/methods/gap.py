"""GAP: private GNN with aggregation perturbation (thesis ch. 4, Alg. 5–8), three modules as
stages of one fit: an encoder MLP on features and labels only (Alg. 6); the PMA (Alg. 5), K
Gaussian sum-aggregations of the normalized encoder output drawn once and cached (hop 0, without
noise, is recomputed, never stored); the classification module on the cached hops (Alg. 7).
Edge level is Proposition 6 (sensitivity 1 per directed edge, sqrt(2) per undirected edge);
node level Proposition 7 (DP-Adam, hops of sensitivity sqrt(D) under the degree promise), one
noise multiplier calibrated jointly (thesis §4.7.5). A new graph's PMA draws fresh noise.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from ..loops import Stage
from ..nn.combine import Combine
from ..nn.ensemble import LogProbEnsemble
from ..nn.mlp import MLP
from ..privacy.aggregation import GaussianAggregation, normalize_rows
from ..privacy.mechanism import Steps
from .ap import LABEL_COUNTS, AggregationPerturbationModule
from .releases import Draw, Release

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
        normalize_combine: bool = False,
        **mlp,
    ) -> None:
        super().__init__()
        self.normalize_combine = normalize_combine
        self.base = nn.ModuleList(
            MLP(dim, hidden, hidden, base_layers, plain_last=False, **mlp) for _ in range(hops + 1)
        )
        width = self.base[0].out_dim
        self.combine = Combine(combine, hops + 1, width)
        self.head = MLP(self.combine.out_dim, num_classes, hidden, head_layers, **mlp)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        hs = torch.stack([mlp(h[:, k]) for k, mlp in enumerate(self.base)], dim=1)
        combined = self.combine(hs)
        if self.normalize_combine:
            combined = F.normalize(combined, p=2, dim=-1)
        return self.head(combined)


class GAP(AggregationPerturbationModule):
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
        normalize_combine: L2-normalize each node's combined embedding before the head MLP (as
            the reference implementation does).
        encoder_epochs, classifier_epochs: epochs of the two training stages.
        num_features, num_classes: build the modules now (else at ``setup``).
        **kwargs: the settings shared with ProGAP and PoinDP
            (:class:`~lightning_dpgnn.methods.ap.AggregationPerturbationModule`).
    """

    card_method = "GAP: encoder, multi-hop aggregation (PMA), classification module"
    card_paper = (
        "Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez. GAP: Differentially Private Graph Neural "
        "Networks with Aggregation Perturbation. USENIX Security 2023"
    )

    mechanism_name = "pma"
    caches = ("_hop0_cache",)  # declared (PrivateModule.reset_caches)

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
        normalize_combine: bool = True,
        encoder_epochs: int = 100,
        classifier_epochs: int = 100,
        num_features: int | None = None,
        num_classes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(privacy, epsilon, delta, **kwargs)
        self.normalize_combine = normalize_combine
        self.hop_scales()  # checks hop_budget against the number of hops
        # the PMA's K noisy hops of the encoder output, [N, K, d]: read from stage 1 on
        self.declare_releases(Release(
            self.mechanism_name, partial(self.hop_mechanisms, hops=range(hops)), self._draw_hops,
            stage=1, collective=True, save=self._whole,
        ))  # fmt: skip
        self.encoder_model: nn.Module | None = None
        self.classifier: nn.Module | None = None
        self.build(num_features, num_classes)

    @property
    def pma(self) -> GaussianAggregation | None:
        """The private multi-hop aggregation mechanism (``None`` until it is first queried)."""
        return self.aggregation

    # -- construction ------------------------------------------------------------------------
    @property
    def _uses_encoder(self) -> bool:
        return self.hparams.encoder_layers > 0

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        mlp = self.mlp_options()
        width = self.input_width(num_features, num_classes)
        dim = hp.hidden if self._uses_encoder else width
        encoder = EncoderModule(width, hp.hidden, num_classes, hp.encoder_layers, **mlp)
        members = [
            ClassificationModule(
                dim, hp.hidden, num_classes, hp.hops, hp.base_layers, hp.head_layers, hp.combine,
                self.normalize_combine, **mlp,
            )  # fmt: skip
            for _ in range(self.ensemble)
        ]
        classifier = members[0] if len(members) == 1 else LogProbEnsemble(members)
        self.encoder_model = self._dp_wrap(encoder, "GAP encoder")
        self.classifier = self._dp_wrap(classifier, "GAP classification module")

    def configure_stages(self) -> list[Stage]:
        enc = self.hparams.encoder_epochs if self._uses_encoder else 0
        return [
            Stage("encoder", enc, ("encoder_model",), "encoder_epochs"),
            Stage("classifier", self.hparams.classifier_epochs, ("classifier",),
                  "classifier_epochs"),
        ]

    # -- the aggregation module (Alg. 5), run once -----------------------------------------
    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        if not self._uses_encoder:
            return x
        return self._eval_forward(self._encoder().mlp, self.row_trainer.input_features(x))

    @torch.no_grad()
    def _hop0(self, x: torch.Tensor) -> torch.Tensor:
        """Hop 0, the normalized encoder output of the caller's features (never stored)."""
        cached = getattr(self, "_hop0_cache", None)
        if cached is None or cached[0] is not x:
            self._hop0_cache = (x, normalize_rows(self._encode(x)))
        return self._hop0_cache[1]

    def classifier_input(self, x: torch.Tensor, hops: torch.Tensor) -> torch.Tensor:
        """``[N, K+1, d]``: hop 0 from ``x`` in front of the K noisy hops."""
        return torch.cat([self._hop0(x).unsqueeze(1), hops], dim=1)

    @torch.no_grad()
    def _draw_hops(self, d: Draw) -> Steps:
        """The release, ``[N, K, d]``: the K normalized noisy hops of the normalized encoder
        output, on the training graph (every rank encoding its rows) or on a new graph."""
        if d.fit:
            x = self._gather(self._hop0(self._features(self._local(d.graph))))
        else:
            x = self._hop0(self._features(d.graph, d.outputs.get(LABEL_COUNTS)))
        hops = []
        for hop in range(self.hparams.hops):
            x = normalize_rows((yield from self._aggregate(x, d, hop)))
            hops.append(x)
        return torch.stack(hops, dim=1)

    # -- inference (Alg. 8) ------------------------------------------------------------------
