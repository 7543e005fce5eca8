"""ProGAP: progressive private GNN with aggregation perturbation (thesis ch. 5, Alg. 9–10):
``K + 1`` submodels trained one after the other as stages of one fit; entering stage ``s >= 1``
releases ``X~^(s)``, a NAP (normalize, sum over in-neighbours, add Gaussian noise) of stage
``s - 1``'s embeddings, once and cached. The graph is read only by the ``K`` NAPs: edge level is
Theorem 4 (sensitivity 1 per directed edge, sqrt(2) per undirected edge); node level Theorem 5
(sensitivity sqrt(D) under the degree promise, DP-Adam, one noise multiplier calibrated jointly).
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data

from ..loops import Stage
from ..nn.combine import Combine
from ..nn.mlp import MLP
from ..privacy.aggregation import GaussianAggregation, normalize_rows
from ..privacy.dpsgd import unwrap
from ..privacy.mechanism import Steps
from .ap import LABEL_COUNTS, AggregationPerturbationModule
from .releases import Draw, Release

__all__ = ["ProGAP", "ProGAPEnsemble", "ProGAPNetwork"]

TRAINING = ("progressive", "layerwise")


class ProGAPNetwork(nn.Module):
    """All submodels: base MLPs ``0..K``, one JK module and 1-layer head per stage;
    ``forward(x, X~^(1), ..., X~^(s))`` is submodel ``M_s`` (Eq. 5.11). Base MLPs listed in
    ``frozen`` stay in eval mode."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        num_classes: int,
        depth: int,
        base_layers: int,
        jk: str,
        normalize_jk: bool = True,
        **mlp: Any,
    ) -> None:
        super().__init__()
        self.normalize_jk = normalize_jk
        self.base = nn.ModuleList(
            MLP(in_dim if k == 0 else hidden, hidden, hidden, base_layers, plain_last=False, **mlp)
            for k in range(depth + 1)
        )
        self.jk = nn.ModuleList(Combine(jk, s + 1, hidden) for s in range(depth + 1))
        self.head = nn.ModuleList(nn.Linear(j.out_dim, num_classes) for j in self.jk)
        self.frozen: tuple[int, ...] = ()

    def stage_parameters(self, stage: int, layerwise: bool) -> list[nn.Parameter]:
        """Parameters stage ``stage`` trains (Alg. 10 line 4 / Remark 1)."""
        bases = [self.base[stage]] if layerwise else list(self.base[: stage + 1])
        modules = [*bases, self.jk[stage], self.head[stage]]
        return [p for m in modules for p in m.parameters()]

    def train(self, mode: bool = True) -> ProGAPNetwork:
        super().train(mode)
        for k in self.frozen:
            self.base[k].eval()
        return self

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        stage = len(inputs) - 1
        hs = torch.stack([self.base[k](h) for k, h in enumerate(inputs)], dim=1)
        combined = self.jk[stage](hs)
        if self.normalize_jk:
            combined = F.normalize(combined, p=2, dim=-1)
        return self.head[stage](combined)

    def enter_stage(self, stage: int, warm_start: bool) -> None:
        """Called once when stage ``stage`` starts: optionally warm-start its base MLP."""
        if warm_start and stage >= 2:
            self.base[stage].load_state_dict(self.base[stage - 1].state_dict())


class ProGAPEnsemble(nn.Module):
    """``M`` ProGAP networks that share every stage but the last: member 0 alone trains stages
    ``0..K-1`` and feeds the NAPs (the privacy analysis is one network's); in the last stage,
    which reads only cached NAP outputs, every member trains from member 0's earlier base MLPs
    and predictions average their log-probabilities."""

    def __init__(self, members: list[ProGAPNetwork]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.depth = len(members[0].base) - 1

    @property
    def base(self) -> nn.ModuleList:
        """Base MLPs of member 0 (the ones whose embeddings the NAPs aggregate)."""
        return self.members[0].base

    @property
    def frozen(self) -> tuple[int, ...]:
        return self.members[0].frozen

    @frozen.setter
    def frozen(self, value: tuple[int, ...]) -> None:
        for m in self.members:
            m.frozen = value

    def _active(self, stage: int) -> list[ProGAPNetwork]:
        return list(self.members) if stage == self.depth else [self.members[0]]

    def stage_parameters(self, stage: int, layerwise: bool) -> list[nn.Parameter]:
        return [p for m in self._active(stage) for p in m.stage_parameters(stage, layerwise)]

    def enter_stage(self, stage: int, warm_start: bool) -> None:
        lead = self.members[0]
        lead.enter_stage(stage, warm_start)
        if stage != self.depth:
            return
        for m in self.members[1:]:
            for k in range(stage):
                m.base[k].load_state_dict(lead.base[k].state_dict())
            m.enter_stage(stage, warm_start)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        logp = [F.log_softmax(m(*inputs), dim=-1) for m in self._active(len(inputs) - 1)]
        return torch.stack(logp).mean(0)


class ProGAP(AggregationPerturbationModule):
    """ProGAP node classifier, edge- or node-level private (or non-private with ``"none"``).

    Args:
        privacy: ``"edge"``, ``"node"`` or ``"none"``.
        epsilon: target epsilon of the whole fit; noise is calibrated to it.
        delta: ``"auto"`` (below 1/#edges at edge level, 1/#nodes at node level) or a number.
        depth: K, the number of NAP layers (``K + 1`` stages).
        base_layers: layers of every base MLP (>= 1).
        jk: Jumping Knowledge combine of each stage: ``"cat"`` (the paper's), ``"sum"``,
            ``"attn"``.
        normalize_jk: L2-normalize each node's combined embedding before the stage head (the
            reference implementation's choice).
        normalize_nap: L2-normalize each noisy NAP output row (post-processing).
        hidden: width of every base MLP output (and hidden layer).
        epochs_per_stage: epochs each of the ``K + 1`` stages trains for.
        training: ``"progressive"`` (stage ``s`` trains base MLPs ``0..s``) or ``"layerwise"``
            (only base MLP ``s``; earlier ones frozen).
        warm_start: start base MLP ``s >= 2`` from the weights base MLP ``s - 1`` ended with.
        patience: per-stage early stopping on ``val/acc`` (``None``: none; ignored at node
            level, where validation labels are private).
        num_features, num_classes: build the network now (else at ``setup``).
        **kwargs: the settings shared with GAP and PoinDP
            (:class:`~lightning_dpgnn.methods.ap.AggregationPerturbationModule`); ``ensemble``
            networks train side by side in the last stage only (the NAPs are one network's),
            and ``normalization="auto"`` is GroupNorm with one group at node level (thesis).
    """

    card_method = "ProGAP: progressive stages over normalize-aggregate-perturb (NAP)"
    card_paper = (
        "Sajadmanesh, Gatica-Perez. ProGAP: Progressive Graph Neural Networks with Differential "
        "Privacy Guarantees. WSDM 2024"
    )

    mechanism_name = "nap"

    def __init__(
        self,
        privacy: Literal["none", "edge", "node"] = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        depth: int = 2,
        base_layers: int = 1,
        jk: Literal["cat", "sum", "attn"] = "cat",
        normalize_jk: bool = True,
        normalize_nap: bool = False,
        hidden: int = 16,
        epochs_per_stage: int = 100,
        training: Literal["progressive", "layerwise"] = "progressive",
        warm_start: bool = False,
        patience: int | None = None,
        num_features: int | None = None,
        num_classes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(privacy, epsilon, delta, **kwargs)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be >= 1 (K NAP layers), got {depth}; use MLP for 0")
        self.hop_scales()  # checks hop_budget against the number of hops
        if base_layers < 1:
            raise ValueError(f"base_layers must be >= 1, got {base_layers}")
        if training not in TRAINING:
            raise ValueError(f"training must be one of {TRAINING}, got {training!r}")
        self.normalize_jk, self.normalize_nap = normalize_jk, normalize_nap
        self.warm_start = warm_start
        self.staged.patience = patience
        # X~^(s) = NAP(A, MLP_base^(s-1)(X~^(s-1))), one release per stage s = 1..K
        self.declare_releases(*(
            Release(
                self._nap_name(s), partial(self.hop_mechanisms, hops=range(s - 1, s)),
                partial(self._draw_nap, s),
                stage=s, stream=s, collective=True, save=self._whole,
            )
            for s in range(1, depth + 1)
        ))  # fmt: skip
        self.network: nn.Module | None = None
        self.build(num_features, num_classes)

    @property
    def nap(self) -> GaussianAggregation | None:
        """The NAP mechanism (``None`` until it is first queried on this model)."""
        return self.aggregation

    # -- construction ------------------------------------------------------------------------
    node_level_normalization = "group"  # one group (thesis §5.5.3)

    def mlp_options(self) -> dict[str, Any]:
        return {**super().mlp_options(), "norm_groups": 1}

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        members = [
            ProGAPNetwork(
                self.input_width(num_features, num_classes), hp.hidden, num_classes, hp.depth,
                hp.base_layers, hp.jk, self.normalize_jk, **self.mlp_options(),
            )  # fmt: skip
            for _ in range(self.ensemble)
        ]
        net = members[0] if len(members) == 1 else ProGAPEnsemble(members)
        self.network = self._dp_wrap(net, "ProGAP network")
        #: base MLP ``k`` as NAP ``k + 1`` read it when released (progressive training keeps
        #: training it): a new graph's NAP uses the function later stages were trained on
        self.release_bases = nn.ModuleList(
            copy.deepcopy(net.base[k]).requires_grad_(False) for k in range(hp.depth)
        )

    def _net(self) -> ProGAPNetwork | ProGAPEnsemble:
        return unwrap(self.network)

    def configure_stages(self) -> list[Stage]:
        n = self.hparams.epochs_per_stage
        return [Stage(f"stage{s}", n, ("network",), "epochs_per_stage")
                for s in range(self.hparams.depth + 1)]

    def total_aggregations(self) -> int:
        return self.hparams.depth

    def _nap_name(self, stage: int) -> str:
        return f"{self.mechanism_name}/{stage}"

    def stage_model(self, index: int) -> nn.Module:
        return self.network

    def stage_parameters(self, index: int) -> list[nn.Parameter]:
        """Trainable parameters of stage ``index``; every other parameter is frozen."""
        net = self._net()
        layerwise = self.hparams.training == "layerwise"
        params = net.stage_parameters(index, layerwise)
        trainable = {id(p) for p in params}
        for p in net.parameters():
            p.requires_grad_(id(p) in trainable)
        net.frozen = tuple(range(index)) if layerwise else ()
        net.train(net.training)
        return params

    # -- NAP (Alg. 9 lines 3–5), once per stage ------------------------------------------
    def stage_inputs(self, index: int, data: Data) -> tuple[torch.Tensor, ...]:
        naps = (self.releases[self._nap_name(s)] for s in range(1, index + 1))
        return (self._features(data), *naps)

    def _draw_nap(self, stage: int, d: Draw) -> Steps:
        """The release of stage ``stage``: ``X~^(s) = NAP(A, MLP_base^(s-1)(X~^(s-1)))`` on the
        training graph (every rank from its rows) or on a new graph (through the base MLP as
        it was released)."""
        k = stage - 1
        earlier = [d.outputs[self._nap_name(s)] for s in range(1, stage)]
        if d.fit:
            x = self.row_trainer.sparse_as_csr(self._features(self._local(d.graph)))
            inputs = self._gather(self._eval_forward(self._net().base[k], [x, *earlier][k]))
        else:
            x = self._features(d.graph, d.outputs.get(LABEL_COUNTS))
            x = self.row_trainer.input_features(x)
            inputs = self._eval_forward(self.release_bases[k], [x, *earlier][k])
        out = yield from self._aggregate(inputs, d, 0)
        out = normalize_rows(out) if self.normalize_nap else out
        return self._keep_local(out) if d.fit else out

    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        super().on_releases_changed(names, restored)
        for stage in range(1, self.hparams.depth + 1):
            if not restored and self._nap_name(stage) in names:
                k = stage - 1  # the base MLP this NAP read, as it was at the release
                self.release_bases[k].load_state_dict(self._net().base[k].state_dict())
                self._net().enter_stage(stage, self.warm_start)

    # -- inference -----------------------------------------------------------------------------
    def eval_stage(self) -> int:
        """The stage being trained, else the last one entered (loaded: its cached NAPs')."""
        if self._in_fit():
            return self.staged.current_stage
        if self.staged.active_stage is not None:
            return self.staged.active_stage
        return sum(map(self.releases.drawn, self.hop_names()))

    def _method_logits(self, data: Data) -> torch.Tensor:
        if not self._in_fit():  # during a fit: validation of the submodel being trained
            self._require_cache()
        x, *aggregates = self.stage_inputs(self.eval_stage(), data)
        return self.network(self.row_trainer.input_features(x), *aggregates)

    def inductive_release(self, release: Release) -> bool:
        """The NAPs of the stages this model was fitted through."""
        return release.stage <= self.eval_stage()

    def _method_inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        x = self.row_trainer.input_features(self._features(graph, outputs.get(LABEL_COUNTS)))
        naps = [outputs[self._nap_name(s)] for s in range(1, self.eval_stage() + 1)]
        return self.network(x, *naps)
