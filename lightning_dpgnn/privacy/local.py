"""One-time node-side collection for local-DP methods (LPGNN, thesis ch. 3; PGC, ch. 2).

Every node perturbs its data *once* (thesis Alg. 4 lines 4-11, Alg. 1 lines 1-2): its features
by a randomizer of :mod:`~lightning_dpgnn.privacy.ldp` at ``x_epsilon`` and, if labelled (train
+ validation), its label by randomized response at ``y_epsilon``: ``x_epsilon + y_epsilon`` per
node (Corollary 2). The :class:`LocalCollection` is cached and checkpointed (collecting again
would double the spend). ``math.inf`` reads in the clear (an infinite spend in the ledger);
``y_epsilon=None`` makes the labels public (PGC, §2.3.1); ad-hoc features (Table 3.3) are free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

import torch

from .accountant import check_delta, check_epsilon
from .feature_rr import FeatureRR
from .labels import RandomizedResponse
from .ldp import AnalyticGaussian, Duchi, FeatureRandomizer, Laplace, MultiBit, OneBit, Piecewise
from .ldp_numeric import Hybrid, PMSub, ThreeOutputs
from .mechanism import FEATURES, LABELS, Clear, Mechanism, Steps, fields_repr

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
    """What the server received in one collection: ``payload``, the feature messages
    (``encoding="codes"``: ``int8`` multi-bit or 1-bit codes, possibly sparse, decoded by
    :meth:`LocalCollector.features`; else ``"values"``), ``labels`` (the noisy label of each
    node in ``label_mask``, ``-1`` elsewhere) and ``num_features``."""

    payload: torch.Tensor
    encoding: Literal["codes", "values"]
    labels: torch.Tensor
    label_mask: torch.Tensor
    num_features: int

    def state_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

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
    """The one-time LDP collection of features and labels (module docstring): ``mechanism``
    is a name of :data:`FEATURE_MECHANISMS` (``"gaussian"`` at ``gaussian_delta``, the fit's
    accountant delta), ``m`` multi-bit's, ``theta`` (PUBLIC) and ``k`` FeatureRR's parameters,
    ``per_coordinate`` as in :mod:`~lightning_dpgnn.privacy.ldp`; ``alpha, beta`` the public
    range; ``features``: ``"private"`` or an ad-hoc source; ``collect_labels=False`` for tasks
    without node labels (link prediction)."""

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
        #: the feature mechanism (``None``: clear or ad-hoc features), validated here
        self.randomizer = self._make_randomizer()

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

    def label_randomizer(self, num_classes: int) -> RandomizedResponse | None:
        """Randomized response over ``num_classes`` labels (``None``: labels not private)."""
        if self.y_epsilon is None or not self.collect_labels:
            return None
        return RandomizedResponse(self.y_epsilon, num_classes)

    @property
    def needs_delta(self) -> bool:
        """The analytic Gaussian is (eps, delta)-LDP: the accountant then needs a delta."""
        return self.perturbs_features and self.mechanism == "gaussian"

    def feature_mechanism(self, d: int) -> Mechanism | None:
        """What reads the ``d`` private features: the randomizer, a clear read or nothing."""
        if not self.collects_features:
            return None
        if self.randomizer is None:
            return Clear(CLEAR_FEATURES, (FEATURES,), "private features read without a mechanism")
        return self.randomizer.at_width(d)

    def label_mechanism(self, num_classes: int) -> Mechanism | None:
        """What reads the private labels: randomized response, a clear read or nothing."""
        rr = self.label_randomizer(num_classes)
        if rr is None or math.isfinite(rr.epsilon):
            return rr
        return Clear(CLEAR_LABELS, (LABELS,), "private labels read without a mechanism")

    def mechanisms(self, d: int, num_classes: int, labels: bool = True) -> list[Mechanism]:
        """The mechanisms of one collection (their ``account`` is its plan)."""
        ms = (self.feature_mechanism(d), self.label_mechanism(num_classes) if labels else None)
        return [m for m in ms if m is not None]

    def acc_star(self, num_classes: int) -> float:
        """Drop's bound on the accuracy of predicting noisy labels (Alg. 4 line 17)."""
        rr = self.label_randomizer(num_classes)
        return 1.0 if rr is None else rr.keep_probability

    @torch.no_grad()
    def steps(
        self,
        data: Data,
        generator: torch.Generator | None = None,
        num_classes: int | None = None,
        labels: bool = True,
    ) -> Steps:
        """One collection as draw steps (:func:`~.mechanism.run`): every node's features
        through :meth:`feature_mechanism`, the labels of ``train_mask | val_mask`` through
        :meth:`label_mechanism` (``labels=False``: features only, e.g. a new graph sent to a
        trained model). ``generator`` also draws ad-hoc features."""
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

    def features(self, collection: LocalCollection) -> torch.Tensor:
        """The server's feature matrix: rectified codes (eq. 3.10 / 2.5) or the received values."""
        if collection.encoding == "values":
            return collection.payload.float()
        codes = collection.payload
        codes = codes.to_dense() if codes.is_sparse else codes
        rnd = self.randomizer
        if not isinstance(rnd, MultiBit | OneBit):
            raise ValueError(
                f"collection holds codes but the collector's mechanism is {self.mechanism!r}"
            )
        return rnd.rectify(codes, torch.float32)

    def affine_codes(
        self, collection: LocalCollection
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``(codes, scale, offset)`` with ``features(collection) = codes * scale + offset``
        for multi-bit codes (sparse: :class:`~lightning_dpgnn.nn.kprop.PropagatedCodes`
        multiplies them), else ``None``; post-processing."""
        if collection.encoding != "codes" or not isinstance(self.randomizer, MultiBit):
            return None
        scale, offset = self.randomizer.rectifier(collection.num_features)
        return collection.payload, scale, offset

    def __repr__(self) -> str:
        return fields_repr(self, "x_epsilon", "y_epsilon", "mechanism",
                           features=self.features_source)
