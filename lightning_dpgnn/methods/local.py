"""Shared plumbing of the local-DP methods (LPGNN, PGC): the one-time collection, cached.

The nodes perturb their data once (:class:`~lightning_dpgnn.privacy.local.LocalCollector`); the
server trains on what it received. This base class runs that collection at the start of the
first fit (after a checkpoint restore, so a resumed fit never re-queries the nodes), records it
on the model's accountant (level ``"ldp"``), keeps the received messages in the checkpoint, and
refuses to evaluate before anything was collected. Subclasses read the private side of the
graph only through :meth:`collection` / :meth:`received_features`; the graph structure is public
to the server in this threat model (thesis §2.3.1, §3.3.1).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch_geometric.data import Data

from ..levels import Level, Unit
from ..privacy import PrivacyAccountant, PrivacyReport
from ..privacy.local import LocalCollection, LocalCollector
from ..privacy.mechanism import Mechanism, Steps
from .base import PrivateModule
from .releases import FEATURES, Draw, Release

__all__ = ["LocallyPrivateModule", "COLLECTION_KEY"]

COLLECTION_KEY = "dpgnn_ldp_collection"


class LocallyPrivateModule(PrivateModule):
    """Base of LDP node models: collection once per fit, cached and checkpointed.

    Subclasses call ``super().__init__(collector, noise_seed)``, implement :meth:`build` (create
    the networks from the public sizes) and may override :meth:`on_collected` to precompute
    server-side views of the collection (they must be pure post-processing).
    """

    def __init__(
        self,
        collector: LocalCollector,
        noise_seed: int | None = None,
        *,
        lr: float = 0.01,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(
            "ldp", None, "auto", levels=("ldp",), noise_seed=noise_seed, lr=lr,
            weight_decay=weight_decay,
        )
        self.collector = collector
        if not self.labels_private():  # e.g. PGC: labels are public in its threat model
            self.accountant.unit = Unit(Level.LDP, "features").describe()
        self.accountant.delta = collector.gaussian_delta if collector.needs_delta else None
        # the release: what every node sent, collected once before the fit
        self.declare_releases(Release(
            COLLECTION_KEY, self._collection_mechanisms, self._collect,
            save=LocalCollection.state_dict, load=LocalCollection.from_state_dict,
            reads=(FEATURES,),  # on a new graph; the fit's also reads the labels it collects
        ))  # fmt: skip
        self._features: torch.Tensor | None = None  # decoded collection (post-processing)
        self._graph: Data | None = None

    # -- construction -----------------------------------------------------------------------------
    def build(self, num_features: int, num_classes: int) -> None:
        """Create the networks (called once, from public sizes) and record in ``hparams`` the
        sizes the model's ``__init__`` takes."""
        raise NotImplementedError

    @property
    def is_built(self) -> bool:
        raise NotImplementedError

    def setup(self, stage: str) -> None:
        data = self._datamodule_graph()
        self._graph = data
        if not self.is_built:
            has_y = getattr(data, "y", None) is not None
            # ``build`` records the sizes its model takes in ``hparams`` (PGCLinkPrediction
            # takes no ``num_classes``: recording it would break load_from_checkpoint)
            self.build(int(data.num_features), self._num_classes(data) if has_y else 0)

    def labels_private(self) -> bool:
        eps = self.collector.y_epsilon
        return bool(self.collector.collect_labels) and eps is not None and math.isfinite(eps)

    # -- the collection (node side), once ---------------------------------------------------------
    @property
    def _collection(self) -> LocalCollection | None:
        return self.releases.get(COLLECTION_KEY)

    def _collect(self, d: Draw) -> Steps:
        """The fit's collection (features and, when collected, labels) or, on a new graph,
        its nodes' features only (no label is sent)."""
        classes = self._declared_classes() if d.fit else None
        return (yield from self.collector.steps(d.graph, d.generator, classes, labels=d.fit))

    def _collection_mechanisms(self, z: float | None) -> list[Mechanism]:
        if self._graph is None:
            raise RuntimeError("the spend of an LDP collection is known once the data is set up")
        d = int(self._graph.num_features)
        return self.collector.mechanisms(d, self._declared_classes() or 0)

    def release_graph(self) -> Data:
        return self._graph

    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        if self._collection is not None:
            self._collected()

    def _declared_classes(self) -> int | None:
        return self.hparams.get("num_classes")

    def _collected(self) -> None:
        self._features = None
        self.on_collected()

    def on_collected(self) -> None:
        """Hook: the collection is available (fresh, or restored from a checkpoint)."""

    def collection(self) -> LocalCollection:
        """What the nodes sent; a clear error before the first fit."""
        if self._collection is None:
            raise RuntimeError(
                f"{type(self).__name__} has not collected the nodes' data yet: fit the model "
                "(or load a fitted checkpoint) before validating, testing or predicting"
            )
        return self._collection

    def received_features(self) -> torch.Tensor:
        """The server's feature matrix (rectified codes or received values), on this device."""
        if self._features is None or self._features.device != self.device:
            self._features = self.collector.features(self.collection()).to(self.device)
        return self._features

    # -- a new graph: its nodes' own locally private features ----------------------------------
    def inductive_accountant(
        self, graph: Data, guarantee: str | None = None
    ) -> PrivacyAccountant:
        delta = self.collector.delta if self.collector.needs_delta else None
        unit = "each node's features, perturbed on the node (edges are public; no label is sent)"
        return PrivacyAccountant("ldp", delta, unit=unit)

    def collect_from(self, data: Data) -> LocalCollection:
        """What the nodes of a new graph send to this trained model: their features perturbed
        with the model's mechanism and fresh noise (no label). In a deployment each node runs
        this on its own device; the per-node cost is in ``last_inference_report``."""
        self.check_feature_width(data, "same columns, same feature range")
        acc = self.inductive_accountant(data)
        collection = self.collector.collect(data, acc, None, labels=False)
        self.last_inference_report = PrivacyReport.from_accountant(acc)
        return collection

    def logits_from(self, features: torch.Tensor, graph: Data) -> torch.Tensor:
        """Logits of every node of ``graph`` from the server's ``features`` (post-processing
        of what the nodes sent)."""
        raise NotImplementedError

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        features = self.collector.features(outputs[COLLECTION_KEY]).to(self.device)
        return self.logits_from(features, graph)

    def predict_inductive(  # type: ignore[override]
        self, data: Data, collection: LocalCollection | None = None
    ) -> torch.Tensor:
        """Class probabilities on a new graph from what its nodes sent: ``collection`` (their
        locally private features, e.g. from :meth:`collect_from` on their devices) or, when
        ``None``, collected now with fresh noise (the base lifecycle: counted on that graph's
        ledger, a repeated call returns the same collection). The training collection is not
        touched."""
        given = None if collection is None else {COLLECTION_KEY: collection}
        return super().predict_inductive(data, given)
