"""Datasets, transforms and Lightning data modules for differentially private GNNs.

Quick start::

    from lightning_dpgnn.data import NodeDataModule
    dm = NodeDataModule()                      # embedded csbm graph, no files needed
    dm = NodeDataModule("facebook100/Caltech36", target="year", root="../shared/datasets")

See ``docs/data.md`` for the datasets, the preprocessing and the cache layout.

The names below are imported on first use (PEP 562): ``lightning_dpgnn.data.errors`` and the
other light submodules load without Lightning or PyG (``dpgnn --help`` and ``dpgnn plot`` rely
on it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "PRIVACY_LEVELS": "datamodules",
    "GraphDataModule": "datamodules",
    "NodeDataModule": "datamodules",
    "NodeDataSource": "datamodules",
    "TrainsFromGraph": "datamodules",
    "TrainsFromClients": "datamodules",
    "node_stats": "datamodules",
    "CorruptDataError": "errors",
    "DataError": "errors",
    "DatasetKindError": "errors",
    "EmptyDatasetError": "errors",
    "InvalidFeaturesError": "errors",
    "InvalidSplitError": "errors",
    "RawFilesNotFoundError": "errors",
    "UnknownDatasetError": "errors",
    "UnknownTargetError": "errors",
    "CACHE_ENV": "paths",
    "DATA_ENV": "paths",
    "resolve_cache_dir": "paths",
    "resolve_root": "paths",
    "ClientSplit": "graphs",
    "SimpleGraph": "graphs",
    "client_splits": "graphs",
    "dirichlet_partition": "graphs",
    "keyed_partition": "graphs",
    "ego_graphs": "graphs",
    "graph_stats": "graphs",
    "largest_connected_component": "graphs",
    "MultigraphError": "simple",
    "RepeatedEdgesWarning": "simple",
    "count_repeated_edges": "simple",
    "require_simple": "simple",
    "simple_graph": "simple",
    "FACEBOOK100_SCHOOLS": "registry",
    "DatasetSpec": "registry",
    "available_datasets": "registry",
    "get_spec": "registry",
    "load_dataset": "registry",
    "load_graph_dataset": "registry",
    "register_dataset": "registry",
    "CSBM_DEFAULTS": "synthetic",
    "make_csbm": "synthetic",
    "SPLIT_PRESETS": "transforms",
    "BoundDegree": "transforms",
    "FilterClassByCount": "transforms",
    "KeepClasses": "transforms",
    "NodeSplit": "transforms",
    "RemoveIsolatedNodes": "transforms",
    "RemoveSelfLoops": "transforms",
    "ScaleFeatures": "transforms",
    "check_features": "transforms",
    "keyed_uniform": "transforms",
    "parse_split": "transforms",
}

__all__ = [
    "NodeDataModule",
    "NodeDataSource",
    "TrainsFromGraph",
    "TrainsFromClients",
    "GraphDataModule",
    "ClientSplit",
    "SimpleGraph",
    "client_splits",
    "dirichlet_partition",
    "keyed_partition",
    "ego_graphs",
    "graph_stats",
    "largest_connected_component",
    "node_stats",
    "PRIVACY_LEVELS",
    "load_dataset",
    "load_graph_dataset",
    "available_datasets",
    "get_spec",
    "register_dataset",
    "DatasetSpec",
    "FACEBOOK100_SCHOOLS",
    "make_csbm",
    "CSBM_DEFAULTS",
    "RemoveSelfLoops",
    "RemoveIsolatedNodes",
    "FilterClassByCount",
    "KeepClasses",
    "NodeSplit",
    "keyed_uniform",
    "BoundDegree",
    "ScaleFeatures",
    "SPLIT_PRESETS",
    "parse_split",
    "check_features",
    "DataError",
    "UnknownDatasetError",
    "RawFilesNotFoundError",
    "UnknownTargetError",
    "InvalidSplitError",
    "InvalidFeaturesError",
    "DatasetKindError",
    "EmptyDatasetError",
    "CorruptDataError",
    "DATA_ENV",
    "CACHE_ENV",
    "resolve_root",
    "resolve_cache_dir",
]


if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .datamodules import (
        PRIVACY_LEVELS,
        GraphDataModule,
        NodeDataModule,
        NodeDataSource,
        TrainsFromGraph,
        node_stats,
    )
    from .errors import (
        CorruptDataError,
        DataError,
        DatasetKindError,
        EmptyDatasetError,
        InvalidFeaturesError,
        InvalidSplitError,
        RawFilesNotFoundError,
        UnknownDatasetError,
        UnknownTargetError,
    )
    from .paths import CACHE_ENV, DATA_ENV, resolve_cache_dir, resolve_root
    from .registry import (
        FACEBOOK100_SCHOOLS,
        DatasetSpec,
        available_datasets,
        get_spec,
        load_dataset,
        load_graph_dataset,
        register_dataset,
    )
    from .synthetic import CSBM_DEFAULTS, make_csbm
    from .transforms import (
        SPLIT_PRESETS,
        BoundDegree,
        FilterClassByCount,
        KeepClasses,
        NodeSplit,
        RemoveIsolatedNodes,
        RemoveSelfLoops,
        ScaleFeatures,
        check_features,
        keyed_uniform,
        parse_split,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
