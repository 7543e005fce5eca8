"""Datasets, transforms and Lightning data modules for differentially private GNNs.

Quick start::

    from lightning_dpgnn.data import NodeDataModule
    dm = NodeDataModule()                      # embedded csbm graph, no files needed
    dm = NodeDataModule("facebook100/Caltech36", target="year", root="../shared/datasets")

See ``docs/data.md``. The names below are imported on first use (PEP 562), so the light
submodules (``errors``, ...) load without Lightning or PyG (``dpgnn --help`` relies on it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: submodule -> the public names it defines (space-separated)
_MODULES = {
    "datamodules": (
        "PRIVACY_LEVELS GraphDataModule NodeDataModule NodeDataSource TrainsFromGraph "
        "TrainsFromClients node_stats"
    ),
    "errors": (
        "CorruptDataError DataError DatasetKindError EmptyDatasetError InvalidFeaturesError "
        "InvalidSplitError RawFilesNotFoundError UnknownDatasetError UnknownTargetError"
    ),
    "paths": "CACHE_ENV DATA_ENV resolve_cache_dir resolve_root",
    "graphs": (
        "ClientSplit SimpleGraph client_splits dirichlet_partition keyed_partition ego_graphs "
        "graph_stats largest_connected_component"
    ),
    "simple": (
        "MultigraphError RepeatedEdgesWarning count_repeated_edges require_simple simple_graph"
    ),
    "registry": (
        "FACEBOOK100_SCHOOLS DatasetSpec available_datasets get_spec load_dataset "
        "load_graph_dataset register_dataset"
    ),
    "synthetic": "CSBM_DEFAULTS make_csbm",
    "transforms": (
        "SPLIT_PRESETS BoundDegree FilterClassByCount KeepClasses NodeSplit RemoveIsolatedNodes "
        "RemoveSelfLoops ScaleFeatures check_features keyed_uniform parse_split"
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .datamodules import *  # noqa: F403
    from .errors import *  # noqa: F403
    from .graphs import *  # noqa: F403
    from .paths import *  # noqa: F403
    from .registry import *  # noqa: F403
    from .simple import *  # noqa: F403
    from .synthetic import *  # noqa: F403
    from .transforms import *  # noqa: F403

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
