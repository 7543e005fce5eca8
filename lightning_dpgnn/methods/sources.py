"""Where a private model reads its data, with the refusals that keep the accounting true: the
attached data module's graph (refused if its preprocessing read private data outside a
mechanism), the number of classes (public metadata, read from labels only where they are not
protected) and a new graph's features (the training graph's width, finite values)."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from ..data.datamodules import NodeDataSource
from ..data.simple import require_simple

__all__ = ["AccountingError", "training_graph", "public_num_classes", "num_classes",
           "check_feature_width"]


class AccountingError(ValueError):
    """A setting would make the accounted epsilon wrong; the fit is refused before any step."""


def _datamodule(module: Any) -> NodeDataSource:
    dm = module.trainer.datamodule if module._trainer is not None else None
    name = type(module).__name__
    if dm is None:
        raise RuntimeError(f"{name} needs a NodeDataModule: trainer.fit(model, datamodule=dm)")
    if not isinstance(dm, NodeDataSource):
        missing = [n for n in ("data", "public_num_classes", "private_reads")
                   if not hasattr(dm, n)]
        raise TypeError(
            f"{name} needs a data module of one graph (NodeDataModule, or one implementing "
            f"lightning_dpgnn.data.NodeDataSource); {type(dm).__name__} has no "
            f"{', '.join(missing)}"
        )
    return dm


def training_graph(module: Any) -> Data:
    """The preprocessed graph of the attached data module, refused if its preprocessing read
    data protected at this level outside a mechanism (``private_reads``)."""
    dm = _datamodule(module)
    reads = dm.private_reads(module.privacy)
    if reads:
        raise AccountingError(
            f"{type(module).__name__}(privacy={module.privacy!r}): the data module's "
            "preprocessing reads private data outside any mechanism, so the epsilon would "
            "not hold:\n  - " + "\n  - ".join(reads)
        )
    require_simple(dm.data, "the data module's graph")  # invariant simple-graphs
    return dm.data


def public_num_classes(module: Any) -> int | None:
    """Classes known as public metadata: ``num_classes`` given, or the declared class list."""
    given = module.hparams.get("num_classes")
    if given is not None:
        return int(given)
    dm = module.trainer.datamodule if module._trainer is not None else None
    declared = dm.public_num_classes if isinstance(dm, NodeDataSource) else None
    return int(declared) if declared else None


def num_classes(module: Any, data: Data) -> int:
    """Classes of ``data``: declared public metadata, or (levels where labels are not
    protected) read from the labels."""
    declared = public_num_classes(module)
    if declared is not None:
        return declared
    if module.labels_private():
        raise AccountingError(
            f"privacy={module.privacy!r} protects labels, so the number of classes cannot be "
            "read from them (removing one node could change it): declare the classes as "
            "public metadata, e.g. NodeDataModule(..., classes=[...]), or pass num_classes"
        )
    y = data.y
    return int(y[y >= 0].max()) + 1


def check_feature_width(module: Any, data: Data, encoding: str) -> None:
    """Refuse a new graph whose nodes have another number of features than the training
    graph's (``encoding``: how to make them match) or non-finite features."""
    name = type(module).__name__
    expected = module.hparams.get("num_features")
    if expected is not None and data.num_features != expected:
        raise ValueError(
            f"{name} was trained on {expected} features per node; this graph has "
            f"{data.num_features}: encode its features like the training graph's ({encoding})"
        )
    x = getattr(data, "x", None)
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        values = x.coalesce().values() if x.is_sparse else x
        bad = int((~torch.isfinite(values)).sum())
        if bad:
            raise ValueError(
                f"{name}: the new graph's features hold {bad} NaN or infinite value(s); the "
                "model would return normal-looking probabilities for them. Impute or drop "
                "those nodes first"
            )
