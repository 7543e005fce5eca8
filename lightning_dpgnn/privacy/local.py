"""One-time node-side collection for local-DP methods (LPGNN, thesis ch. 3; PGC, ch. 2).

In the local model every node perturbs its own data *once*, on its side, and the server only
ever sees what the nodes sent (thesis Alg. 4 lines 4-11, Alg. 1 lines 1-2):

* features: a feature randomizer of :mod:`lightning_dpgnn.privacy.ldp` with budget ``x_epsilon``
  (multi-bit by default: compact ``{-1, 0, 1}`` codes that the server rectifies, eq. 3.10);
* labels of the *labelled* nodes (train + validation): randomized response with budget
  ``y_epsilon`` (eq. 3.39). Test labels are never collected; they are read only to evaluate.

:class:`LocalCollector` runs that step and records it on an accountant: each node spends
``x_epsilon + y_epsilon`` (Corollary 2), one collection. The result, a
:class:`LocalCollection`, holds exactly what the server received (codes are kept compact) and
is what a model caches and checkpoints: re-running the collection would query the nodes again
and double the spend.

Budgets: ``math.inf`` means "read in the clear" — no mechanism runs and the accountant records
an infinite spend, so the report says so (thesis Table 3.2's ``eps_y = inf``). ``y_epsilon=None``
means the labels are *public* in the threat model (PGC, thesis §2.3.1: only features are
private); they are copied and nothing is recorded for them.

Ad-hoc features that cost no budget (thesis Table 3.3): ``features="ones"`` (all-one vectors),
``"degree"`` (one-hot node degree, the graph is public to the server) and ``"random"`` (uniform
in [0, 1]); all keep the private feature dimension ``d``.

Part of the privacy layer (no Lightning imports): usable on its own, e.g. by the estimation-error
benchmark; the LDP methods (:mod:`lightning_dpgnn.methods.local`) run it once per fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

import torch

from .accountant import PrivacyAccountant, check_delta, check_epsilon
from .feature_rr import FeatureRR
from .labels import RandomizedResponse
from .ldp import AnalyticGaussian, Duchi, FeatureRandomizer, Laplace, MultiBit, OneBit, Piecewise
from .ldp_numeric import Hybrid, PMSub, ThreeOutputs
from .mechanism import FEATURES, LABELS, Clear, Mechanism, Steps, run

if TYPE_CHECKING:  # annotations only: the privacy layer loads without PyG
    from torch_geometric.data import Data

__all__ = [
    "LocalCollector",
    "LocalCollection",
    "FEATURE_MECHANISMS",
    "FEATURE_SOURCES",
    "adhoc_features",
]

#: feature mechanisms by name; ``"gaussian"`` is the analytic Gaussian, (eps, delta)-LDP
FEATURE_MECHANISMS: dict[str, type[FeatureRandomizer]] = {
    "multibit": MultiBit,
    "onebit": OneBit,
    "laplace": Laplace,
    "duchi": Duchi,
    "piecewise": Piecewise,
    "gaussian": AnalyticGaussian,
    "featurerr": FeatureRR,
    "hybrid": Hybrid,
    "three_outputs": ThreeOutputs,
    "pm_sub": PMSub,
}
_COORDINATE = ("onebit", "laplace", "duchi", "piecewise", "hybrid", "three_outputs", "pm_sub")
FEATURE_SOURCES = ("private", "ones", "degree", "random")
FeatureSource = Literal["private", "ones", "degree", "random"]

CLEAR_FEATURES = "features/clear"
CLEAR_LABELS = "labels/clear"


@dataclass
class LocalCollection:
    """What the server received from the nodes in one collection.

    Attributes:
        payload: the feature messages: ``int8`` codes for multi-bit (``{-1,0,1}``) and 1-bit
            (``{0,1}``), possibly stored sparse; the unbiased float estimate for the continuous
            mechanisms; raw or ad-hoc features otherwise. Decode with
            :meth:`LocalCollector.features`.
        encoding: ``"codes"`` (payload must be rectified) or ``"values"``.
        labels: ``[N]`` long; the (noisy) label each labelled node sent, ``-1`` elsewhere.
        label_mask: ``[N]`` bool, the nodes that sent a label (train + validation).
        num_features: ``d``.
    """

    payload: torch.Tensor
    encoding: Literal["codes", "values"]
    labels: torch.Tensor
    label_mask: torch.Tensor
    num_features: int

    def state_dict(self) -> dict[str, Any]:
        return {
            "payload": self.payload,
            "encoding": self.encoding,
            "labels": self.labels,
            "label_mask": self.label_mask,
            "num_features": self.num_features,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> LocalCollection:
        return cls(**state)


def _compact(codes: torch.Tensor) -> torch.Tensor:
    """Store sparse codes (multi-bit sends ``m << d`` non-zeros) as a sparse tensor."""
    nnz = int(torch.count_nonzero(codes))
    if nnz * 17 < codes.numel():  # int64 index pair + int8 value per non-zero
        return codes.to_sparse()
    return codes


def adhoc_features(
    kind: FeatureSource, data: Data, d: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """The budget-free features of thesis Table 3.3, ``[N, d]`` float32."""
    n = int(data.num_nodes)
    if kind == "ones":
        return torch.ones(n, d)
    if kind == "degree":
        deg = torch.bincount(data.edge_index[1], minlength=n).clamp_(max=d - 1)
        return torch.nn.functional.one_hot(deg, d).float()
    if kind == "random":
        return torch.rand(n, d, generator=generator)
    raise ValueError(f"features must be one of {FEATURE_SOURCES}, got {kind!r}")


class LocalCollector:
    """Runs the one-time LDP collection of features and labels and records its spend.

    Args:
        x_epsilon: feature budget per node (``math.inf``: features read in the clear).
        y_epsilon: label budget per labelled node (``math.inf``: labels read in the clear;
            ``None``: labels are public in this threat model and are not accounted).
        mechanism: ``"multibit"`` (default), ``"onebit"``, ``"laplace"``, ``"duchi"``,
            ``"piecewise"``, ``"gaussian"`` (analytic Gaussian, at ``gaussian_delta``) or
            ``"featurerr"`` (HeteroRR's per-feature randomizer, with ``theta`` and ``k``),
            ``"hybrid"``, ``"three_outputs"`` or ``"pm_sub"``
            (:mod:`~lightning_dpgnn.privacy.ldp_numeric`).
        m: multi-bit sampling parameter (``None``: the optimal ``m*`` of eq. 3.19).
        theta: FeatureRR only: PUBLIC per-feature weights (one per feature, summing to 1; see
            :func:`~lightning_dpgnn.privacy.feature_rr.public_feature_weights`); ``None``:
            uniform.
        k: FeatureRR only: the number of bins (``None``: its default).
        alpha, beta: feature range known to the server (features are clipped into it).
        per_coordinate: for the coordinate-wise mechanisms, give *every feature* budget
            ``x_epsilon`` as in thesis ch. 2 (the per-node spend is then ``d * x_epsilon``);
            default: ``x_epsilon`` per node, split over the ``d`` features.
        gaussian_delta: delta of the analytic Gaussian mechanism, (eps, delta)-LDP per node
            (thesis Table 3.2 uses 1e-10); it becomes the accountant's delta of the fit.
        features: ``"private"`` (collect with the mechanism) or an ad-hoc, budget-free source:
            ``"ones"``, ``"degree"``, ``"random"``.
        collect_labels: ``False`` for tasks without node labels (link prediction).
    """

    def __init__(
        self,
        x_epsilon: float = 1.0,
        y_epsilon: float | None = 1.0,
        mechanism: str = "multibit",
        *,
        m: int | None = None,
        theta: torch.Tensor | None = None,
        k: int | None = None,
        alpha: float = 0.0,
        beta: float = 1.0,
        per_coordinate: bool = False,
        gaussian_delta: float = 1e-10,
        features: FeatureSource = "private",
        collect_labels: bool = True,
    ) -> None:
        if features not in FEATURE_SOURCES:
            raise ValueError(f"features must be one of {FEATURE_SOURCES}, got {features!r}")
        if mechanism not in FEATURE_MECHANISMS:
            raise ValueError(
                f"unknown feature mechanism {mechanism!r}; use one of {sorted(FEATURE_MECHANISMS)}"
            )
        self.x_epsilon = check_epsilon(x_epsilon, "x_epsilon")
        self.y_epsilon = None if y_epsilon is None else check_epsilon(y_epsilon, "y_epsilon")
        if per_coordinate and mechanism not in _COORDINATE:
            raise ValueError(
                f"per_coordinate=True applies to the coordinate-wise mechanisms {_COORDINATE}, "
                f"not to {mechanism!r}"
            )
        if m is not None and mechanism != "multibit":
            raise ValueError(f"m is the multi-bit sampling parameter; mechanism={mechanism!r}")
        if (theta is not None or k is not None) and mechanism != "featurerr":
            raise ValueError(f"theta and k are FeatureRR's parameters; mechanism={mechanism!r}")
        self.mechanism = mechanism
        self.m = m
        self.theta, self.k = theta, k
        for name, value in (("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"{name} must be a number (the feature range), got {value!r}")
        self.alpha, self.beta = float(alpha), float(beta)
        self.per_coordinate = bool(per_coordinate)
        self.gaussian_delta = check_delta(gaussian_delta, "gaussian_delta")
        self.features_source = features
        self.collect_labels = bool(collect_labels)
        self._randomizer = self._make_randomizer()  # validates eps, m, alpha < beta early

    # -- mechanisms -------------------------------------------------------------------------------
    @property
    def collects_features(self) -> bool:
        """Whether the private features are read (through a mechanism or in the clear)."""
        return self.features_source == "private"

    @property
    def perturbs_features(self) -> bool:
        return self.collects_features and math.isfinite(self.x_epsilon)

    def _make_randomizer(self) -> FeatureRandomizer | None:
        if not self.perturbs_features:
            return None
        cls = FEATURE_MECHANISMS[self.mechanism]
        if self.mechanism == "multibit":
            return MultiBit(self.x_epsilon, self.alpha, self.beta, m=self.m)
        if self.mechanism == "gaussian":
            return AnalyticGaussian(self.x_epsilon, self.gaussian_delta, self.alpha, self.beta)
        if self.mechanism == "featurerr":
            k = {} if self.k is None else {"k": self.k}
            return FeatureRR(self.x_epsilon, self.theta, alpha=self.alpha, beta=self.beta, **k)
        return cls(self.x_epsilon, self.alpha, self.beta, per_coordinate=self.per_coordinate)

    @property
    def randomizer(self) -> FeatureRandomizer | None:
        """The feature mechanism (``None`` when features are clear or ad-hoc)."""
        return self._randomizer

    def label_randomizer(self, num_classes: int) -> RandomizedResponse | None:
        """Randomized response over ``num_classes`` labels (``None``: labels not private)."""
        if self.y_epsilon is None or not self.collect_labels:
            return None
        return RandomizedResponse(self.y_epsilon, num_classes)

    @property
    def needs_delta(self) -> bool:
        """The analytic Gaussian is (eps, delta)-LDP: the accountant then needs a delta."""
        return self.perturbs_features and self.mechanism == "gaussian"

    # -- the mechanisms of one collection ---------------------------------------------------------
    def feature_mechanism(self, d: int) -> Mechanism | None:
        """What reads the ``d`` private features: the randomizer, a clear read (infinite
        epsilon) or nothing (ad-hoc features read nothing private)."""
        if not self.collects_features:
            return None
        if self._randomizer is None:
            return Clear(CLEAR_FEATURES, (FEATURES,), "private features read without a mechanism")
        return self._randomizer.at_width(d)

    def label_mechanism(self, num_classes: int) -> Mechanism | None:
        """What reads the private labels: randomized response, a clear read (``y_epsilon`` is
        infinite) or nothing (labels not collected, or public: ``y_epsilon=None``)."""
        rr = self.label_randomizer(num_classes)
        if rr is None or math.isfinite(rr.epsilon):
            return rr
        return Clear(CLEAR_LABELS, (LABELS,), "private labels read without a mechanism")

    def mechanisms(self, d: int, num_classes: int, labels: bool = True) -> list[Mechanism]:
        """The mechanisms of one collection of ``d`` features (and, with ``labels``, of
        ``num_classes`` labels): their ``account`` is its plan."""
        ms = (self.feature_mechanism(d), self.label_mechanism(num_classes) if labels else None)
        return [m for m in ms if m is not None]

    def acc_star(self, num_classes: int) -> float:
        """Drop's bound on the accuracy of predicting noisy labels (Alg. 4 line 17)."""
        rr = self.label_randomizer(num_classes)
        return 1.0 if rr is None else rr.keep_probability

    # -- the node side ----------------------------------------------------------------------------
    def collect(
        self,
        data: Data,
        accountant: PrivacyAccountant,
        generator: torch.Generator | None = None,
        num_classes: int | None = None,
        labels: bool = True,
    ) -> LocalCollection:
        """Every node perturbs its features; every labelled node its label (:meth:`steps`),
        recorded once on ``accountant``."""
        return run(self.steps(data, generator, num_classes, labels), accountant, generator)

    @torch.no_grad()
    def steps(
        self,
        data: Data,
        generator: torch.Generator | None = None,
        num_classes: int | None = None,
        labels: bool = True,
    ) -> Steps:
        """One collection as draw steps (:func:`~.mechanism.run`): the features through
        :meth:`feature_mechanism`, the labels of ``train_mask | val_mask`` through
        :meth:`label_mechanism`.

        ``data`` needs ``x``, ``y``, ``edge_index``, ``train_mask`` and ``val_mask``.
        ``labels=False``: features only (a new graph sent to a trained model for prediction;
        it needs only ``x`` and ``edge_index``). ``generator`` also draws ad-hoc features.
        """
        x = data.x
        if x is None or x.dim() != 2 or x.size(1) == 0:
            raise ValueError("local collection needs node features data.x of shape [N, d>=1]")
        d = int(x.size(1))
        mechanism = self.feature_mechanism(d)
        if mechanism is None:  # ad-hoc features, budget-free
            payload, encoding = adhoc_features(self.features_source, data, d, generator), "values"
        elif isinstance(mechanism, MultiBit | OneBit):  # the nodes send codes
            payload, encoding = _compact((yield mechanism, x)), "codes"
        else:
            payload, encoding = (yield mechanism, x.float()).float(), "values"
        node_labels = torch.full((int(data.num_nodes),), -1, dtype=torch.long)
        mask = torch.zeros(int(data.num_nodes), dtype=torch.bool)
        if self.collect_labels and labels:
            c = int(num_classes) if num_classes is not None else int(data.y.max()) + 1
            mask = data.train_mask | data.val_mask
            node_labels = torch.full_like(data.y, -1, dtype=torch.long)
            mechanism = self.label_mechanism(c)
            node_labels[mask] = data.y[mask] if mechanism is None else (
                yield mechanism, data.y[mask])
            mask = mask.clone()
        return LocalCollection(payload, encoding, node_labels, mask, d)

    # -- the server side --------------------------------------------------------------------------
    def features(self, collection: LocalCollection) -> torch.Tensor:
        """The server's feature matrix: rectified codes (eq. 3.10 / 2.5) or the received values."""
        if collection.encoding == "values":
            return collection.payload.float()
        codes = collection.payload
        codes = codes.to_dense() if codes.is_sparse else codes
        rnd = self._randomizer
        if not isinstance(rnd, MultiBit | OneBit):
            raise ValueError(
                f"collection holds codes but the collector's mechanism is {self.mechanism!r}"
            )
        return rnd.rectify(codes, torch.float32)

    def affine_codes(
        self, collection: LocalCollection
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``(codes, scale, offset)`` with ``features(collection) = codes * scale + offset``
        when the features are multi-bit codes (``m`` non-zeros per row: sparse), else ``None``.
        A server that multiplies the features by a weight can then multiply the sparse codes
        (:class:`~lightning_dpgnn.nn.kprop.PropagatedCodes`); post-processing, no budget."""
        if collection.encoding != "codes" or not isinstance(self._randomizer, MultiBit):
            return None
        scale, offset = self._randomizer.rectifier(collection.num_features)
        return collection.payload, scale, offset

    def __repr__(self) -> str:
        return (
            f"LocalCollector(x_epsilon={self.x_epsilon}, y_epsilon={self.y_epsilon}, "
            f"mechanism={self.mechanism!r}, features={self.features_source!r})"
        )
