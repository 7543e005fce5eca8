"""Datasets, transforms and Lightning data modules for differentially private GNNs.

Quick start::

    from lightning_dpgnn.data import NodeDataModule
    dm = NodeDataModule()                      # embedded csbm graph, no files needed
    dm = NodeDataModule("facebook100/Caltech36", target="year", root="../shared/datasets")

See ``docs/data.md`` for the datasets, the preprocessing and the cache layout.
"""

from .datamodules import (
    PRIVACY_LEVELS,
    GraphDataModule,
    NodeDataModule,
    NodeDataSource,
    TrainsFromClients,
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
from .graphs import (
    ClientSplit,
    SimpleGraph,
    client_splits,
    dirichlet_partition,
    ego_graphs,
    graph_stats,
    largest_connected_component,
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
