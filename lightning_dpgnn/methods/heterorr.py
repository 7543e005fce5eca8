"""HeteroRR (Tran et al., BigData 2022): locally private features (FeatureRR) and an
edge-level private graph over public and private edges (EdgeRR), released once, then a GCN.

Two optional releases under **two guarantees that are never added** (docs/heterorr.md):
``"features"``, ``x_epsilon``-LDP per node (edges and labels public; FeatureRR's budgets and
PCA fitted on the declared public nodes only, named in the unit: invariant 15); ``"edges"``,
``G_pub`` plus a private part sampled by the private HRG, ``epsilon``-edge-DP for one private
edge at the MCMC chain's equilibrium (asymptotic, as PrivHRG, the unit says so; chains shorter
than ``1000 n`` moves are refused). The rest is post-processing; :class:`HeteroRRRelease` is
the releases as a data transform.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from .._deprecation import no_privacy_alias
from ..levels import Level, Unit
from ..nn.backbone import GNNBackbone
from ..privacy import check_epsilon
from ..privacy.feature_rr import DEFAULT_K, FeatureRR, public_feature_weights
from ..privacy.hrg import PAPER_CODE_FLAW, EdgeRR, PaperCodeEdgeRR, edge_split, keyed_uniform
from ..privacy.ldp import Duchi, FeatureRandomizer, MultiBit, Piecewise
from ..privacy.mechanism import Steps
from .base import PrivateModule
from .ledgers import no_privacy
from .paper_code import PAPER_CODE, PaperCode
from .releases import EDGES, FEATURES, Draw, Release, graph_digest
from .sources import num_classes

__all__ = ["HeteroRR", "HeteroRRRelease", "FEATURE_MECHANISMS"]

#: the feature mechanisms HeteroRR offers (FeatureRR and the baselines of the paper)
FEATURE_MECHANISMS = ("feature-rr", "multibit", "duchi", "piecewise")
FEATURES_UNIT = Unit(Level.LDP, "features").describe()
#: the features' unit beside an edges guarantee: the private edges are not "public" there
FEATURES_BESIDE_EDGES_UNIT = ("each node's features, perturbed on the node (labels are public; "
                              "the private edges are covered by the edges guarantee only)")


def _bool_mask(value: Any, size: int, name: str, shape: str) -> torch.Tensor:
    mask = torch.as_tensor(value)
    if mask.dtype != torch.bool or tuple(mask.shape) != (size,):
        raise ValueError(f"{name} must be a bool tensor {shape}, got {tuple(mask.shape)} "
                         f"{mask.dtype}")
    return mask


class HeteroRR(PrivateModule):
    """HeteroRR: FeatureRR features (local DP) and/or an EdgeRR graph (edge-level DP on private
    edges), then a GCN trained on the released graph.

    Args:
        epsilon, x_epsilon: edge budget for one private edge, feature budget per node
            (``math.inf``, ``x_epsilon``'s default: no privacy and no release for that part;
            ``None``: a deprecated alias of ``math.inf``).
        feature_mechanism, bins: ``"feature-rr"`` (with ``bins`` bins), ``"multibit"``,
            ``"duchi"`` or ``"piecewise"``.
        feature_bounds: the public feature range ``(alpha, beta)``; features are clipped into it.
        feature_dim: the paper's public embedding ``g``: ``None`` (identity) or a PCA to this
            many dimensions fitted on the public nodes, scaled into [0, 1] by their range.
        public_fraction, public_seed: the public nodes when the graph has no
            ``public_node_mask``: each node by a hash of the seed and its identity (``None``:
            none, FeatureRR's theta is uniform).
        rho, split_seed: the share of private edges when the graph has no ``private_pairs``
            nor ``private_edge_mask`` (each undirected edge by a hash of the seed and the edge).
        mcmc_share: share of ``epsilon`` spent by the HRG chain (the rest: Laplace counts).
        steps_per_node, mcmc_steps, mcmc_backend, progress: chain length (default and minimum
            ``1000 n``, PrivHRG's burn-in), ``"auto"`` (numba where it imports), ``"numba"`` or
            ``"python"``, a progress bar (``None``: for a long chain, unless the Trainer hides
            its own).
        hidden, layers, dropout, lr, weight_decay: the GCN (the authors' Cora script: 128
            hidden, 2 layers) and Adam.
        noise_seed: reproducible noise (research only; the report says so). seed: weights'.
        mode: ``"dp"`` or ``"paper-code"``: the authors' edge release
            (:class:`~lightning_dpgnn.privacy.hrg.PaperCodeEdgeRR`), for side-by-side figures
            only, **NOT differentially private** (its report says so; ``PrivacyBudget`` and the
            zoo refuse it).
    """

    card_method = ("HeteroRR: FeatureRR features (local DP per node) and/or an EdgeRR graph "
                   "(private HRG over public and private edges, released once), then a GCN")
    card_paper = ("Tran, Lai, Phan, Khalil, Ma, Khreishah, Thai, Wu. Heterogeneous Randomized "
                  "Response for Differential Privacy in Graph Neural Networks. IEEE BigData 2022")

    #: what the edge guarantee protects, uses in the clear and holds only under (the card)
    guarantee_words = {"edge": (
        "the presence of any single private edge (the graph is released once by a private "
        "hierarchical random graph)",
        "public edges, the set of nodes, which edges are public, and (unless the features "
        "guarantee covers them) node features and labels are used in the clear")}
    guarantee_conditions = {"edge": (
        "at the MCMC chain's equilibrium: the dendrogram is DP at equilibrium only, a finite "
        "run's guarantee is asymptotic",)}

    def __init__(
        self, epsilon: float = 1.0, x_epsilon: float = math.inf,
        feature_mechanism: str = "feature-rr", feature_bounds: tuple[float, float] = (0.0, 1.0),
        bins: int = DEFAULT_K, feature_dim: int | None = None,
        public_fraction: float | None = None, public_seed: int = 0, rho: float = 0.3,
        split_seed: int = 0, mcmc_share: float = 0.5, steps_per_node: float = 1000.0,
        mcmc_steps: int | None = None, mcmc_backend: str = "auto", progress: bool | None = None,
        hidden: int = 128, layers: int = 2, dropout: float = 0.5, lr: float = 0.01,
        weight_decay: float = 5e-4, noise_seed: int | None = None, seed: int | None = None,
        num_features: int | None = None, num_classes: int | None = None, mode: str = "dp",
    ) -> None:
        if mode not in ("dp", PAPER_CODE):
            raise ValueError(f"mode must be 'dp' or {PAPER_CODE!r}, got {mode!r}")
        epsilon = no_privacy_alias("HeteroRR", "epsilon", epsilon)
        x_epsilon = no_privacy_alias("HeteroRR", "x_epsilon", x_epsilon)
        edges, features = not no_privacy(epsilon), not no_privacy(x_epsilon)
        if mode == PAPER_CODE and not edges:
            raise ValueError("mode='paper-code' reproduces the authors' edge release: give the "
                             "edge budget epsilon")
        self.mode = mode
        self.paper_code = PaperCode.of(mode, "edge release", PAPER_CODE_FLAW)
        if not (edges or features):
            raise ValueError("HeteroRR protects nothing with epsilon=math.inf and "
                             "x_epsilon=math.inf: give the edge budget (epsilon), the feature "
                             "budget (x_epsilon) or both (a non-private GCN is "
                             "lightning_dpgnn.GNN(conv='gcn'))")
        super().__init__("edge" if edges else "ldp", epsilon if edges else x_epsilon, "auto",
                         levels=("edge", "ldp"), noise_seed=noise_seed, lr=lr,
                         weight_decay=weight_decay)
        self.save_hyperparameters()
        if feature_mechanism not in FEATURE_MECHANISMS:
            raise ValueError(f"feature_mechanism must be one of {FEATURE_MECHANISMS}, got "
                             f"{feature_mechanism!r}")
        alpha, beta = (float(b) for b in feature_bounds)
        if not alpha < beta:
            raise ValueError(f"feature_bounds must be (alpha, beta) with alpha < beta, got "
                             f"{tuple(feature_bounds)!r}")
        self.feature_bounds = (alpha, beta)
        self.rho = float(rho)  # checked as arguments (.arguments.RULES)
        self.public_fraction = None if public_fraction is None else float(public_fraction)
        if int(bins) < 2:
            raise ValueError(f"bins must be >= 2, got {bins!r}")
        if feature_dim is not None and (not features or int(feature_dim) < 1):
            raise ValueError("feature_dim (the public PCA before the feature mechanism) needs "
                             f"x_epsilon and an integer >= 1, got {feature_dim!r}")
        self.edgerr: EdgeRR | None = None
        #: the guarantee the feature release spends under (``None``: the model's own)
        self.features_guarantee: str | None = None
        releases = []
        if features:
            self.x_epsilon = check_epsilon(x_epsilon, "x_epsilon")
            if edges:
                self.guarantee_name, self.features_guarantee = "edges", "features"
                self.declare_guarantee("features", "ldp", FEATURES_BESIDE_EDGES_UNIT,
                                       epsilon=x_epsilon)
            else:
                self.accountant.unit = FEATURES_UNIT
            releases.append(Release("features", self._feature_mechanisms, self._draw_features,
                                    guarantee=self.features_guarantee, reads=(FEATURES,)))
        if edges:
            release = PaperCodeEdgeRR if mode == PAPER_CODE else EdgeRR
            chain = {} if mode == PAPER_CODE else dict(steps_per_node=steps_per_node)
            self.edgerr = release(epsilon, mcmc_share=mcmc_share, steps=mcmc_steps,
                                  backend=mcmc_backend, progress=progress, **chain)
            self.accountant.unit = (self.paper_code.note() if self.paper_code else
                                    f"{Unit(Level.EDGE, 'private')}, {self.edgerr.condition()}")
            releases.append(Release("edges", lambda z: [self.edgerr], self._draw_edges,
                                    reads=(EDGES,)))
        self.declare_releases(*releases)
        #: FeatureRR's per-feature weights, computed once on the public nodes (public state)
        self.theta: torch.Tensor | None = None
        #: the public embedding g (PCA fitted on the public nodes; ``None``: identity)
        self.encoder: dict[str, torch.Tensor] | None = None
        self._randomizer: FeatureRandomizer | None = None
        self.net: GNNBackbone | None = None
        self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.net = GNNBackbone("gcn", num_features, hp.hidden, num_classes, hp.layers,
                               dropout=hp.dropout, activation="relu")

    def build_for(self, data: Data, seed: int | None = None) -> None:
        """The network over the public embedding's ``feature_dim`` columns or the graph's."""
        encoded = self.protects_features and self.hparams.feature_dim
        width = self.hparams.feature_dim if encoded else data.num_features
        with self.seeded(seed):
            self.build(width, num_classes(self, data))

    def prepare(self, data: Data, stage: str) -> None:
        """What the releases need from public data, once: the chain length checked, the public
        embedding and FeatureRR's theta (the public nodes read for them named in the unit)."""
        if self.edgerr is not None:
            self.edgerr.check_chain(int(data.num_nodes))
        read = []
        if self.protects_features and self.hparams.feature_dim and self.encoder is None:
            self.encoder = self.fit_encoder(data)
            read.append("their raw features fit the PCA (feature_dim)")
        if self.protects_features and self.theta is None:
            self.theta = self.public_theta(data)
            if self.theta is not None and self.public_nodes(data) is not None:
                read.append("their raw features and labels fit FeatureRR's theta")
        if read:
            self.name_public_nodes(data, read)

    @property
    def protects_features(self) -> bool:
        return "features" in self.releases.declared

    @property
    def protects_edges(self) -> bool:
        return "edges" in self.releases.declared

    # -- the feature release ------------------------------------------------------------------
    def public_nodes(self, data: Data) -> torch.Tensor | None:
        """The declared public nodes (theta and the PCA are fitted on them):
        ``data.public_node_mask``, or each node with probability ``public_fraction`` by a hash
        of ``public_seed`` and its identity (``data.node_id``, else its position), or ``None``."""
        n = int(data.num_nodes)
        mask = getattr(data, "public_node_mask", None)
        if mask is not None:
            return _bool_mask(mask, n, "public_node_mask", f"of shape ({n},)").cpu()
        if self.public_fraction is None:
            return None
        ids = getattr(data, "node_id", None)
        ids = torch.arange(n) if ids is None else ids.cpu().long()
        u = keyed_uniform(ids.numpy().astype(np.uint64), int(self.hparams.public_seed))
        return torch.from_numpy(u < self.public_fraction)

    def name_public_nodes(self, data: Data, uses: list[str]) -> None:
        """Name the public nodes read in the clear, and what they fit, in the features' unit."""
        public = self.public_nodes(data)
        source = ("given by the graph's public_node_mask" if "public_node_mask" in data else
                  f"chosen as public_fraction={self.public_fraction:g} of the nodes by a hash of "
                  f"public_seed={self.hparams.public_seed} and node identity")
        note = (f"the {int(public.sum())} public nodes of the training graph, {source}, are "
                f"read in the clear: {' and '.join(uses)}, published with the model")
        base = FEATURES_BESIDE_EDGES_UNIT if self.protects_edges else FEATURES_UNIT
        unit = base.replace("each node's", "each non-public node's", 1)
        self.accountant_of(self.features_guarantee).unit = f"{unit[:-1]}; {note})"

    def fit_encoder(self, data: Data) -> dict[str, torch.Tensor]:
        """The public PCA (mean, top ``feature_dim`` directions, ranges) of public nodes only."""
        public = self.public_nodes(data)
        if public is None:
            raise ValueError("feature_dim (a PCA fitted on public nodes) needs declared public "
                             "nodes: give public_fraction or the graph's public_node_mask")
        x = data.x.detach().cpu().double()[public]
        dim = int(self.hparams.feature_dim)
        if x.shape[0] < 2 or dim > min(x.shape):
            raise ValueError(f"feature_dim={dim} needs at most min(public nodes, features) = "
                             f"{min(x.shape)} dimensions: raise public_fraction or lower "
                             "feature_dim")
        mean = x.mean(0)
        _, _, vt = torch.linalg.svd(x - mean, full_matrices=False)
        comps = vt[:dim].T.contiguous()
        z = (x - mean) @ comps
        lo, hi = z.min(0).values, z.max(0).values
        return {"mean": mean, "components": comps, "low": lo,
                "high": torch.where(hi > lo, hi, lo + 1.0), "raw_width": torch.tensor(x.shape[1])}

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """``g(x)`` into the feature mechanism's range (what each node computes locally)."""
        if self.encoder is None:
            return x.float().clamp(*self.feature_bounds)
        enc = {k: v.to(x.device) for k, v in self.encoder.items()}
        z = (x.double() - enc["mean"]) @ enc["components"]
        return ((z - enc["low"]) / (enc["high"] - enc["low"])).clamp(0.0, 1.0).float()

    def check_feature_width(self, data: Data, encoding: str) -> None:
        if self.encoder is None:
            return super().check_feature_width(data, encoding)
        if data.num_features != int(self.encoder["raw_width"]):
            raise ValueError(f"HeteroRR was trained on {int(self.encoder['raw_width'])} features "
                             f"per node (before its public PCA); this graph has "
                             f"{data.num_features}")

    def public_theta(self, data: Data) -> torch.Tensor | None:
        """FeatureRR's per-feature weights from the public nodes' features and labels only,
        uniform without public nodes (``None`` for the other mechanisms)."""
        if self.hparams.feature_mechanism != "feature-rr":
            return None
        public = self.public_nodes(data)
        if public is None:  # nothing read: every feature gets epsilon / d
            return torch.full((data.num_features,), 1.0 / data.num_features, dtype=torch.float64)
        if int(public.sum()) < 2:
            raise ValueError("FeatureRR needs at least two public nodes to compute its feature "
                             "weights: raise public_fraction or mark more nodes in "
                             "public_node_mask")
        x = self.encode(data.x.detach().cpu())
        return torch.as_tensor(public_feature_weights(x[public], data.y.cpu()[public]),
                               dtype=torch.float64)

    @property
    def randomizer(self) -> FeatureRandomizer:
        """The feature mechanism (built once theta is known)."""
        if self._randomizer is None:
            name = self.hparams.feature_mechanism
            alpha, beta = self.feature_bounds if self.encoder is None else (0.0, 1.0)
            if name == "feature-rr":
                if self.theta is None:
                    raise RuntimeError("FeatureRR's weights are computed when the data is set up")
                self._randomizer = FeatureRR(self.x_epsilon, self.theta, int(self.hparams.bins),
                                             alpha, beta)
            else:
                self._randomizer = {"multibit": MultiBit, "duchi": Duchi,
                                    "piecewise": Piecewise}[name](self.x_epsilon, alpha, beta)
        return self._randomizer

    def _feature_mechanisms(self, z: float | None) -> list[FeatureRandomizer]:
        return [self.randomizer.at_width(int(self.hparams.num_features))]

    def _draw_features(self, d: Draw) -> Steps:
        sent = yield d.mechanisms[0], self.encode(d.graph.x)
        return self.randomizer.estimate(sent).float()

    # -- the edge release ---------------------------------------------------------------------
    def private_edges(self, data: Data) -> torch.Tensor:
        """Which edge columns are private: the pairs in ``data.private_pairs`` (``[2, k]``,
        either direction; immune to a reordering of the edges), else ``data.private_edge_mask``
        (a bool per column), else the keyed ``rho`` split (:func:`~..privacy.hrg.edge_split`)."""
        pairs = getattr(data, "private_pairs", None)
        if pairs is not None:
            return self._mask_of_pairs(data, torch.as_tensor(pairs))
        mask = getattr(data, "private_edge_mask", None)
        if mask is None:
            return edge_split(data.edge_index, self.rho, int(self.hparams.split_seed))
        e = data.edge_index.size(1)
        return _bool_mask(mask, e, "private_edge_mask", f"with one entry per edge column ({e})")

    @staticmethod
    def _mask_of_pairs(data: Data, pairs: torch.Tensor) -> torch.Tensor:
        """The columns of ``data.edge_index`` whose unordered pair is in ``pairs`` (a pair that
        is no edge is refused: a typo would make no edge private)."""
        if pairs.dim() != 2 or pairs.size(0) != 2 or pairs.is_floating_point():
            raise ValueError(f"private_pairs must be an integer tensor [2, k], got "
                             f"{tuple(pairs.shape)} {pairs.dtype}")
        n = int(data.num_nodes)

        def keys(t: torch.Tensor) -> torch.Tensor:
            t = t.cpu().long()
            return torch.minimum(t[0], t[1]) * n + torch.maximum(t[0], t[1])

        edge_keys, pair_keys = keys(data.edge_index), torch.unique(keys(pairs))
        missing = int((~torch.isin(pair_keys, edge_keys)).sum())
        if missing:
            raise ValueError(f"private_pairs lists {missing} pair(s) that are not edges of the "
                             "graph")
        return torch.isin(edge_keys, pair_keys).to(data.edge_index.device)

    def _draw_edges(self, d: Draw) -> Steps:
        g = d.graph
        if self.hparams.progress is None:  # a long chain's bar, unless the Trainer shows none
            trainer = getattr(self, "_trainer", None)
            quiet = trainer is not None and trainer.progress_bar_callback is None
            self.edgerr.progress = False if quiet else None
        return (yield self.edgerr, g.edge_index, int(g.num_nodes), self.private_edges(g))

    # -- what the GCN reads ---------------------------------------------------------------------
    def released(self, data: Data, outputs: dict[str, Any] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features, edge_index)`` the GCN reads: the releases, or the public parts."""
        outputs = self.releases.values if outputs is None else outputs
        x = outputs.get("features") if self.protects_features else data.x.float()
        edges = outputs.get("edges") if self.protects_edges else data.edge_index
        if x is None or edges is None:
            raise RuntimeError("HeteroRR has not released its graph yet: fit the model (or load "
                               "a fitted checkpoint) before validating, testing or predicting")
        return x.to(self.device), edges.to(self.device)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.net(x, edge_index)

    def _logits(self, data: Data) -> torch.Tensor:
        return self(*self.released(data))

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        return self(*self.released(graph, outputs))

    def inductive_graph(self, data: Data) -> Data:
        graph = super().inductive_graph(data)
        needs_theta = self.protects_features and self.hparams.feature_mechanism == "feature-rr"
        if self.net is None or (needs_theta and self.theta is None):  # built without a fit
            raise RuntimeError("HeteroRR must be fitted (or loaded) before inductive inference")
        return graph

    def public_state(self) -> dict[str, Any]:
        return {k: v for k, v in (("theta", self.theta), ("encoder", self.encoder))
                if v is not None}

    def load_public_state(self, state: dict[str, Any]) -> None:
        theta = state.get("theta")
        self.theta = None if theta is None else torch.as_tensor(theta, dtype=torch.float64)
        encoder = state.get("encoder")
        self.encoder = None if encoder is None else {
            k: torch.as_tensor(v) for k, v in encoder.items()}
        self._randomizer = None

    # -- a release for any model ------------------------------------------------------------------
    def release(self, data: Data) -> Data:
        """The released graph of ``data`` (released ``x`` and ``edge_index``, the rest as is)
        carrying ``privacy_report``: the declared releases drawn once by the lifecycle's own
        draw and cached; the same graph again returns them, another graph is refused."""
        key = graph_digest(data)
        done = getattr(self, "_released_digest", None)
        if done is not None and done != key:
            raise ValueError("this HeteroRR has released another graph already: one release per "
                             "model (build another HeteroRR / HeteroRRRelease for another graph)")
        if not self.is_built:
            self.build_for(data, self.hparams.seed)
        self.prepare(data, "release")
        self.draw_releases(None, data)
        self._released_digest = key
        out = data.clone()
        x, edges = self.released(data)
        out.x, out.edge_index = x.cpu(), edges.cpu()
        for attr in ("private_pairs", "private_edge_mask", "public_node_mask"):
            if attr in out:
                del out[attr]
        out.privacy_report = self.privacy_spent()
        return out


class HeteroRRRelease(BaseTransform):
    """HeteroRR's releases as a data transform (:meth:`HeteroRR.release`, the code the fit
    runs): ``NodeDataModule(..., transform=HeteroRRRelease(epsilon=1.0))`` trains any model on
    the released graph, post-processing. Args: those of :class:`HeteroRR`."""

    def __init__(self, **kwargs: Any) -> None:
        self.model = HeteroRR(**kwargs)

    @property
    def report(self):
        """The releases' report (two guarantees when both parts are released)."""
        return self.model.privacy_spent()

    def forward(self, data: Data) -> Data:
        return self.model.release(data)

    def __repr__(self) -> str:
        hp = self.model.hparams
        return (f"HeteroRRRelease(epsilon={hp.epsilon}, x_epsilon={hp.x_epsilon}, "
                f"feature_mechanism={hp.feature_mechanism!r}, rho={hp.rho})")
