"""The one-time local-DP collection of LPGNN and PGC, a component the method holds: the nodes
perturb their data once (:class:`~lightning_dpgnn.privacy.local.LocalCollector`) and
:class:`LocalRelease` declares that collection as the model's release (drawn once, on the
``"ldp"`` ledger, checkpointed, re-run on a new graph's own ledger). The method reads the
private side of the graph only through it; the graph structure is public to the server in this
threat model (thesis §2.3.1, §3.3.1).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch_geometric.data import Data

from ..levels import Level, Unit
from ..privacy import PrivacyAccountant
from ..privacy.local import LocalCollection, LocalCollector
from ..privacy.mechanism import Mechanism, Steps
from .inductive import inductive_outputs
from .releases import FEATURES, Draw, Release

if TYPE_CHECKING:
    from .base import PrivateModule

__all__ = ["LocalRelease", "COLLECTION_KEY"]

COLLECTION_KEY = "dpgnn_ldp_collection"
#: the unit of a new graph's collection (its nodes send no label)
NEW_GRAPH_UNIT = "each node's features, perturbed on the node (edges are public; no label is sent)"


class LocalRelease:
    """The nodes' collection of an LDP method (``privacy="ldp"``), declared as its release; the
    ledger's unit and delta come from ``collector``."""

    def __init__(self, module: PrivateModule, collector: LocalCollector) -> None:
        self.module, self.collector = module, collector
        if not self.labels_private():  # e.g. PGC: labels are public in its threat model
            module.accountant.unit = Unit(Level.LDP, "features").describe()
        module.accountant.delta = collector.gaussian_delta if collector.needs_delta else None
        module.declare_releases(Release(
            COLLECTION_KEY, self._collection_mechanisms, self._collect,
            save=LocalCollection.state_dict, load=LocalCollection.from_state_dict,
            reads=(FEATURES,),  # on a new graph; the fit's also reads the labels it collects
        ))  # fmt: skip
        self._features: tuple[LocalCollection, torch.Tensor] | None = None

    def labels_private(self) -> bool:
        """Whether the nodes send their labels perturbed (they are then protected)."""
        eps = self.collector.y_epsilon
        return bool(self.collector.collect_labels) and eps is not None and math.isfinite(eps)

    def _classes(self) -> int | None:
        return self.module.hparams.get("num_classes")

    # -- the collection (node side), once ---------------------------------------------------------
    def _collect(self, d: Draw) -> Steps:
        """The fit's collection (features, labels if collected); a new graph's features only."""
        classes = self._classes() if d.fit else None
        return (yield from self.collector.steps(d.graph, d.generator, classes, labels=d.fit))

    def _collection_mechanisms(self, z: float | None) -> list[Mechanism]:
        width = self.module.hparams.get("num_features")
        if width is None:
            raise RuntimeError("the spend of an LDP collection is known once the data is set up")
        return self.collector.mechanisms(int(width), self._classes() or 0)

    def collection(self) -> LocalCollection:
        """What the nodes sent (the lifecycle's one "not drawn yet" error before a fit)."""
        return self.module.releases.require(COLLECTION_KEY, type(self.module).__name__)

    def received_features(self) -> torch.Tensor:
        """The server's feature matrix on the module's device, decoded once per collection."""
        collection, device = self.collection(), self.module.device
        if self._features is None or self._features[0] is not collection or (
                self._features[1].device != device):
            self._features = (collection, self.collector.features(collection).to(device))
        return self._features[1]

    # -- a new graph: its nodes' own locally private features --------------------------------------
    def features_of(self, outputs: dict[str, Any]) -> torch.Tensor:
        """The server's features of a new graph's collection (in its releases ``outputs``)."""
        return self.collector.features(outputs[COLLECTION_KEY]).to(self.module.device)

    def new_graph_accountant(self) -> PrivacyAccountant:
        """A new graph's ledger: its nodes send their features, no label."""
        delta = self.collector.delta if self.collector.needs_delta else None
        return PrivacyAccountant("ldp", delta, unit=NEW_GRAPH_UNIT)

    def collect_from(self, data: Data) -> LocalCollection:
        """What the nodes of a new graph send to the trained model: their features perturbed
        (no label), drawn on that graph's own ledger (a repeated call returns the same)."""
        return inductive_outputs(self.module, data)[1][COLLECTION_KEY]

    @staticmethod
    def given(collection: LocalCollection | None) -> dict[str, Any] | None:
        """``collection`` (made on the nodes' devices) as the given outputs of a new graph."""
        return None if collection is None else {COLLECTION_KEY: collection}
