"""Lightning data modules: :class:`NodeDataModule` (one graph) and :class:`GraphDataModule`."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import lightning as L
import torch
from torch.utils.data import DataLoader
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.loader import DataLoader as PyGDataLoader
from torch_geometric.transforms import BaseTransform

from .._deprecation import renamed
from ..levels import LEVELS, Level
from .errors import EmptyDatasetError, InvalidSplitError
from .graphs import (
    ClientSplit,
    SimpleGraph,
    client_splits,
    dirichlet_partition,
    graph_stats,
    keyed_partition,
)
from .registry import (
    DatasetSpec,
    Kind,
    _resolve_target,
    _with_node_id,
    get_spec,
    load_dataset,
    load_graph_dataset,
)
from .simple import simple_graph
from .transforms import (
    BoundDegree,
    FilterClassByCount,
    KeepClasses,
    NodeSplit,
    RemoveIsolatedNodes,
    RemoveSelfLoops,
    ScaleFeatures,
    check_features,
    parse_split,
)

PRIVACY_LEVELS: tuple[str, ...] = LEVELS
"""The levels :meth:`NodeDataModule.private_reads` takes (what each one protects: there)."""


@runtime_checkable
class NodeDataSource(Protocol):
    """What a private node-level method needs from its data module: the preprocessed graph, the
    number of classes known as public metadata, and its preprocessing's private reads."""

    @property
    def data(self) -> Data: ...

    @property
    def public_num_classes(self) -> int | None: ...

    def private_reads(self, level: str) -> list[str]: ...


@runtime_checkable
class TrainsFromGraph(Protocol):
    """A model that batches its own training rows (DP-SGD, GAP/ProGAP's stages): it gets the
    graph from :meth:`NodeDataModule.train_dataloader`."""

    def train_dataloader_from(self, data: Data) -> DataLoader: ...


@runtime_checkable
class TrainsFromClients(Protocol):
    """A federated model: it gets the data module (its :attr:`~GraphDataModule.clients`) from
    :meth:`GraphDataModule.train_dataloader`."""

    def train_dataloader_from_clients(self, dm: Any) -> DataLoader: ...


def _first(batch: list[Data]) -> Data:  # the full-batch loaders' collate: the one graph
    return batch[0]


def node_stats(data: Data) -> dict[str, Any]:
    """Summary statistics of a node-classification graph (sizes, degrees, splits, classes)."""
    n = int(data.num_nodes)
    ei = data.edge_index
    in_deg = torch.bincount(ei[1], minlength=n).float() if n else torch.zeros(0)
    y = getattr(data, "y", None)
    info: dict[str, Any] = {
        "num_nodes": n,
        "num_edges": int(ei.size(1)),
        "num_features": int(data.num_node_features),
        "mean_in_degree": float(in_deg.mean()) if n else 0.0,
        "median_in_degree": float(in_deg.median()) if n else 0.0,
        "max_in_degree": int(in_deg.max()) if n else 0,
        "num_self_loops": int((ei[0] == ei[1]).sum()),
        "num_isolated_nodes": n - int(torch.unique(ei.reshape(-1)).numel()),
    }
    if y is not None and y.dim() == 1:
        labeled = y >= 0
        counts = torch.bincount(y[labeled]) if bool(labeled.any()) else torch.zeros(0)
        info["num_classes"] = int(counts.numel())
        info["class_counts"] = [int(c) for c in counts]
        info["num_unlabeled"] = int((~labeled).sum())
        both = labeled[ei[0]] & labeled[ei[1]]
        same = (y[ei[0]] == y[ei[1]]) & both
        info["edge_homophily"] = float(same.sum() / both.sum()) if bool(both.any()) else 0.0
    for key in ("train_mask", "val_mask", "test_mask"):
        if key in data:
            info[f"num_{key[:-5]}"] = int(data[key].sum())
    majority = majority_rate(data)
    if majority is not None:
        info["majority_test_accuracy"] = majority
    return info


def majority_rate(data: Data) -> float | None:
    """The share of the test split's most frequent class, what a constant guess scores
    (``None`` without single labels or labeled test nodes)."""
    y, mask = getattr(data, "y", None), getattr(data, "test_mask", None)
    if y is None or mask is None or y.dim() != 1:
        return None
    labels = y[mask]
    labels = labels[labels >= 0]
    return float(torch.bincount(labels).max()) / labels.numel() if labels.numel() else None


class _SetUpOnAccess(L.LightningDataModule):
    """What both data modules share: attributes that run :meth:`setup` on first access."""

    _main: str  # the attribute holding the loaded graph(s)
    _given: Any  # graph(s) given in memory, else None: read by ``_read``

    def _load(self) -> Any:
        return self._given if self._given is not None else self._read()

    def _set_up(self, attr: str) -> Any:
        if getattr(self, attr) is None:
            self.setup()
        return getattr(self, attr)

    @property
    def num_features(self) -> int:
        return int(self._set_up(self._main).num_node_features)


class NodeDataModule(_SetUpOnAccess):
    """Full-batch transductive node classification on one graph.

    Every dataloader yields the whole graph with ``train_mask``, ``val_mask``, ``test_mask``.
    Preprocessing: merge repeated edges (invariant 12), remove self-loops, keep the declared
    ``classes`` or drop classes under ``min_class_size``, optionally remove isolated nodes, split
    keyed on ``node_id`` (each node's raw index), then optionally bound in-degrees, scale
    features and apply ``transform``. :meth:`private_reads` lists the steps that read data
    protected at a privacy level (invariant reads-are-mechanisms, docs/privacy.md).

    Args:
        name: dataset name (:func:`~lightning_dpgnn.data.available_datasets`), e.g. ``"csbm"``
            (generated in code, the default), ``"cora"``, ``"facebook100/Caltech36"``.
        root: data root holding the raw files (read-only is fine); default ``$DPGNN_DATA``.
        target: prediction target, e.g. ``"year"`` for Facebook100; ``None``: dataset default.
        split: ``"gap"``/``"progap"`` (75/10/15), ``"lpgnn"`` (50/25/25), ``"public"`` (the
            dataset's own masks less unlabeled nodes) or ``(train, val, test)`` fractions.
        seed: key of the split and seed of degree bounding.
        cache_dir: writable folder for processed caches and downloads; default
            ``$DPGNN_CACHE``, else ``~/.cache/lightning_dpgnn``.
        min_class_size: drop classes with fewer nodes (an int, or a float in (0, 1): a fraction
            of labeled nodes; ``0``: off; ``None``: the dataset's default). Reads the labels.
        subsample_in_degree: keep at most this many random in-edges per node
            (:class:`BoundDegree`; reads the edges: node-level models take ``max_degree``).
        max_degree: former name of ``subsample_in_degree`` (deprecated).
        remove_self_loops: remove self-loops.
        remove_isolated: remove nodes without edges (reads the edges; GAP/ProGAP set it).
        feature_range: scale every feature to ``(alpha, beta)``, linearly from
            ``feature_bounds`` when declared, else by per-column min-max (reads the features).
        transform: a ``Data -> Data`` transform applied last (from the CLI:
            ``class_path``/``init_args``); one that leaves a repeated edge is refused.
        download: download missing raw files into the cache (``None``: only for Reddit,
            Amazon, PubMed and LastFM, which are not shipped offline).
        dataset_kwargs: dataset options, e.g. csbm's ``num_nodes``, ``num_classes``, ``seed``.
        classes: public class declaration: the raw label values to keep, in label order
            (Facebook100: years, e.g. ``[2005, 2006, 2007, 2008, 2009]``); other nodes become
            unlabeled (``y = -1``). Replaces ``min_class_size``.
        feature_bounds: public range ``(lo, hi)`` of the raw features: features are clamped to
            it and mapped linearly onto ``feature_range`` if set.
        split_by: ``"identity"`` (roles keyed on ``node_id``, binomial sizes) or ``"position"``
            (exact sizes from a seeded permutation; a private read under node-level DP).
    """

    _main = "_data"

    def __init__(
        self,
        name: str = "csbm",
        root: str | None = None,
        target: str | None = None,
        split: str | tuple[float, float, float] = "gap",
        seed: int = 0,
        cache_dir: str | None = None,
        min_class_size: int | float | None = None,
        subsample_in_degree: int | None = None,
        remove_self_loops: bool = True,
        remove_isolated: bool = False,
        feature_range: tuple[float, float] | None = None,
        transform: BaseTransform | None = None,
        download: bool | None = None,
        dataset_kwargs: dict[str, Any] | None = None,
        classes: list[int] | None = None,
        feature_bounds: tuple[float, float] | None = None,
        split_by: str = "identity",
        max_degree: int | None = None,
    ) -> None:
        super().__init__()
        subsample_in_degree = renamed(
            "NodeDataModule", "max_degree", "subsample_in_degree", max_degree,
            subsample_in_degree, "max_degree names the models' public degree bound",
        )
        # kept for checkpoints but not sent to loggers: Lightning refuses to log a model and a
        # datamodule whose hparams share a key with different values (``seed``)
        self.save_hyperparameters(ignore=["transform", "max_degree"], logger=False)
        self.spec: DatasetSpec | None = get_spec(name, Kind.NODE)
        self.name = self.spec.name
        self.root = root
        self.target = _resolve_target(self.spec, target)
        self.split = split
        self._fractions = None if _is_public(split) else parse_split(split)
        self.seed = int(seed)
        self.cache_dir = cache_dir
        self.min_class_size = min_class_size
        self.subsample_in_degree = subsample_in_degree
        self.remove_self_loops = remove_self_loops
        self.remove_isolated = remove_isolated
        if feature_range is not None and not float(feature_range[0]) < float(feature_range[1]):
            raise ValueError(
                f"feature_range must be (alpha, beta) with alpha < beta, got {feature_range}"
            )
        self.feature_range = feature_range
        if classes is not None:
            classes = [int(c) for c in classes]
            if min_class_size:
                raise ValueError(
                    f"give either classes={classes} (public class declaration) or "
                    f"min_class_size={min_class_size!r} (data-derived class filter), not both"
                )
            KeepClasses(classes)  # validates: non-empty, distinct
        self.classes = classes
        if feature_bounds is not None:
            ScaleFeatures(bounds=feature_bounds)  # validates: finite lo < hi
            feature_bounds = (float(feature_bounds[0]), float(feature_bounds[1]))
        self.feature_bounds = feature_bounds
        if split_by not in NodeSplit.BY:
            raise InvalidSplitError(f"split_by must be one of {NodeSplit.BY}, got {split_by!r}")
        self.split_by = split_by
        self.transform = transform
        self.download = download
        self.dataset_kwargs = dict(dataset_kwargs or {})
        self._given: Data | None = None
        self._data: Data | None = None

    @classmethod
    def from_data(cls, data: Data, name: str = "custom", **kwargs: Any) -> NodeDataModule:
        """Wrap an in-memory ``Data`` (``x``, ``edge_index``, ``y``; counted as raw) with the same
        preprocessing; ``kwargs`` are the other ``__init__`` options (``split``, ``seed``, ...)."""
        dm = cls("csbm", **kwargs)
        dm.spec = None
        dm.name = name
        dm.hparams["name"] = name
        dm.target = "label"
        dm._given = data
        return dm

    def _read(self) -> Data:
        return load_dataset(
            self.name,
            self.root,
            self.target,
            cache_dir=self.cache_dir,
            download=self.download,
            **self.dataset_kwargs,
        )

    def _min_class_size(self) -> int | float | None:
        if self.classes is not None:
            return None
        if self.min_class_size is not None:
            return self.min_class_size
        return self.spec.default_min_class_size if self.spec is not None else None

    def preprocess(self, data: Data) -> Data:
        """This module's preprocessing of a raw ``Data`` (a missing ``node_id`` is set to
        ``arange(num_nodes)``)."""
        check_features(data, self.name)
        data = _with_node_id(copy.copy(data))
        data = simple_graph(data, f"dataset {self.name!r}")  # invariant 12: merge, say so
        if self.remove_self_loops:
            data = RemoveSelfLoops()(data)
        if self.classes is not None:
            data = KeepClasses(self.classes)(data)
        min_size = self._min_class_size()
        if min_size:
            data = FilterClassByCount(min_size)(data)
        if self.remove_isolated:
            data = RemoveIsolatedNodes()(data)
        if self._fractions is not None:
            data = NodeSplit(*self._fractions, seed=self.seed, by=self.split_by)(data)
        elif not all(k in data for k in ("train_mask", "val_mask", "test_mask")):
            raise InvalidSplitError(
                f"split='public' but dataset {self.name!r} has no public split masks; "
                "use 'gap', 'lpgnn' or (train, val, test) fractions"
            )
        elif getattr(data, "y", None) is not None and data.y.dim() == 1:
            labeled = data.y >= 0  # e.g. nodes of undeclared classes: in no mask
            if not bool(labeled.all()):
                data = copy.copy(data)
                for key in ("train_mask", "val_mask", "test_mask"):
                    data[key] = data[key] & labeled
        if self.subsample_in_degree is not None:
            data = BoundDegree(self.subsample_in_degree, seed=self.seed)(data)
        if self.feature_bounds is not None:
            alpha, beta = self.feature_range or self.feature_bounds
            data = ScaleFeatures(alpha, beta, bounds=self.feature_bounds)(data)
        elif self.feature_range is not None:
            data = ScaleFeatures(*self.feature_range)(data)
        if self.transform is not None:
            data = self.transform(data)
            what = f"dataset {self.name!r} after transform={self.transform!r}"
            data = simple_graph(data, what, repeated="refuse")
        if int(data.num_nodes) == 0:
            raise EmptyDatasetError(f"{self.name}: no nodes left after preprocessing")
        return data

    def private_reads(self, level: str) -> list[str]:
        """The preprocessing steps that read data protected at ``level`` (one of
        :data:`PRIVACY_LEVELS`; ``"edge"`` protects edges, ``"node"`` edges, features, labels
        and the node set, ``"ldp"`` features and labels), each a sentence naming the option to
        change; empty: none (nothing is loaded to answer). The known transforms inside
        ``transform`` are checked too; what a custom one reads is the caller's responsibility.
        """
        lv = Level.of(str(level).strip().lower())
        edges = lv.central
        labels = features = lv in (Level.NODE, Level.LDP)
        positions = lv.protects_nodes
        reads: list[str] = []
        if edges and self.remove_isolated:
            reads.append(
                "remove_isolated=True reads the edges (which nodes are isolated, and so removed, "
                "depends on them); set remove_isolated=False"
            )
        if edges and self.subsample_in_degree is not None:
            reads.append(
                f"subsample_in_degree={self.subsample_in_degree} reads the edges (BoundDegree "
                "samples each node's in-edges, so one edge changes which others are kept); set "
                "subsample_in_degree=None and use a node-level model's max_degree, a checked "
                "public degree bound, instead"
            )
        min_size = self._min_class_size()
        if labels and min_size:
            default = " (the dataset's default)" if self.min_class_size is None else ""
            reads.append(
                f"min_class_size={min_size!r}{default} reads the labels (which classes, and so "
                "which nodes, are kept depends on class sizes); declare the public classes with "
                "classes=[...] or set min_class_size=0"
            )
        if features and self.feature_range is not None and self.feature_bounds is None:
            reads.append(
                f"feature_range={tuple(self.feature_range)} without feature_bounds reads the "
                "features (min-max scaling uses every column's minimum and maximum over all "
                "nodes); declare the public feature range with feature_bounds=(lo, hi) or set "
                "feature_range=None"
            )
        vocab = self.dataset_kwargs.get("vocabulary", "data")
        facebook = self.name.startswith("facebook100/")
        if features and self.name == "facebook100-all":
            reads.append(
                "facebook100-all pools its one-hot codes from the data (one column per value "
                "present across the schools, so the feature layout depends on who is in the "
                "graph) and has no public code book yet: use one school with "
                "dataset_kwargs={'vocabulary': 'public'} at this level"
            )
        elif features and facebook and vocab == "data":
            reads.append(
                "the Facebook100 one-hot features use vocabulary='data' (one column per value "
                "present, so the feature layout depends on who is in the graph); pass "
                "dataset_kwargs={'vocabulary': 'public'} (a fixed public code book)"
            )
        if positions and self._fractions is not None and self.split_by == "position":
            reads.append(
                "split_by='position' reads the node set (a seeded permutation of positions: "
                "removing one node re-assigns the roles of many others); set "
                "split_by='identity'"
            )
        if self.transform is not None:
            for t in _flatten(self.transform):
                reads += _transform_reads(t, edges, labels, features, positions)
        return reads

    def prepare_data(self) -> None:
        """Download raw files and build processed caches (runs on one process only)."""
        if self._given is None and self.spec is not None and self.spec.needs_files:
            self._load()

    def setup(self, stage: str | None = None) -> None:
        """Load, preprocess and split the graph (once); sparse features are densified for a
        model without ``sparse_features = True``."""
        if self._data is None:
            self._data = self.preprocess(self._load())
        model = _model(self)
        x = getattr(self._data, "x", None)
        sparse = x is not None and x.layout != torch.strided
        if sparse and model is not None and not getattr(model, "sparse_features", False):
            self._data.x = x.to_dense()

    @property
    def data(self) -> Data:
        """The preprocessed graph with split masks (runs :meth:`setup` on first access)."""
        return self._set_up("_data")

    @property
    def num_classes(self) -> int:
        """``len(classes)`` when declared (no data is read), else one more than the largest
        label of the preprocessed graph."""
        if self.classes is not None:
            return len(self.classes)
        y = self.data.y
        return int(y[y >= 0].max()) + 1 if bool((y >= 0).any()) else 0

    @property
    def num_nodes(self) -> int:
        return int(self.data.num_nodes)

    def dataset_info(self) -> dict[str, Any]:
        """Name, target, split and statistics of the preprocessed graph (see :func:`node_stats`)."""
        info: dict[str, Any] = {
            "name": self.name,
            "target": self.target,
            "split": self.split if _is_public(self.split) else list(self._fractions or ()),
            "seed": self.seed,
            "split_by": self.split_by,
        }
        if self.classes is not None:
            info["classes"] = list(self.classes)
        info.update(node_stats(self.data))
        info["num_classes"] = self.num_classes
        return info

    def val_dataloader(self) -> DataLoader:
        """Yields the full graph (the model picks the stage's mask)."""
        return DataLoader([self.data], batch_size=1, shuffle=False, collate_fn=_first)

    test_dataloader = predict_dataloader = val_dataloader

    def train_dataloader(self) -> DataLoader:
        """Yields the full graph; a model that batches its own training rows
        (:class:`TrainsFromGraph`) gets the graph and returns the loader itself."""
        model = _model(self)
        if isinstance(model, TrainsFromGraph):
            return model.train_dataloader_from(self.data)
        return self.val_dataloader()

    @property
    def public_num_classes(self) -> int | None:
        """Number of classes known without reading any label (the declared ``classes``, csbm's
        ``num_classes``); ``None`` when only the labels could tell."""
        if self.classes is not None:
            return len(self.classes)
        if self._given is None and self.name == "csbm":
            from .synthetic import CSBM_DEFAULTS

            return int(self.dataset_kwargs.get("num_classes", CSBM_DEFAULTS["num_classes"]))
        return None

    def __repr__(self) -> str:
        cls = type(self).__name__
        return f"{cls}(name={self.name!r}, target={self.target!r}, split={self.split!r})"


def _model(dm: L.LightningDataModule) -> L.LightningModule | None:
    """The model of the Trainer ``dm`` is attached to (``None`` outside a fit)."""
    trainer = getattr(dm, "trainer", None)
    return trainer.lightning_module if trainer is not None else None


def _is_public(split: object) -> bool:
    return isinstance(split, str) and split.strip().lower() == "public"


def _flatten(transform: Any) -> list[Any]:
    """A transform and, for a ``Compose``, the transforms inside it (recursively)."""
    inner = getattr(transform, "transforms", None)
    if isinstance(inner, (list, tuple)):
        return [t for sub in inner for t in _flatten(sub)]
    return [transform]


def _transform_reads(
    t: Any, edges: bool, labels: bool, features: bool, positions: bool
) -> list[str]:
    """Private reads of one known transform given as ``transform`` (see ``private_reads``)."""
    name = type(t).__name__
    if edges and isinstance(t, (BoundDegree, RemoveIsolatedNodes)):
        return [f"transform={t!r} reads the edges; remove it from transform"]
    if labels and isinstance(t, FilterClassByCount):
        return [
            f"transform={t!r} reads the labels (which classes are kept depends on class "
            "sizes); use classes=[...] (KeepClasses) instead"
        ]
    if features and isinstance(t, ScaleFeatures) and t.bounds is None:
        return [
            f"transform={name}(alpha={t.alpha}, beta={t.beta}) without bounds reads the "
            "features (per-column min-max over all nodes); pass bounds=(lo, hi)"
        ]
    if positions and isinstance(t, NodeSplit) and t.by == "position":
        return [f"transform={t!r} reads the node set (positional split); use by='identity'"]
    return []


class GraphDataModule(_SetUpOnAccess):
    """Graph classification over many small graphs, made simple on entry: a TU dataset or
    graphs given in memory (e.g. :meth:`ego` subgraphs, cut from one source graph).

    Without clients the graphs are split at random; with ``num_clients`` (federated learning,
    GW-LDP) they are first partitioned over the clients, by the label-free
    :func:`~lightning_dpgnn.data.graphs.keyed_partition` or the label-Dirichlet partition,
    which reads every label and so declares them public (:meth:`declared_public`); then every
    client splits its own graphs.

    Args:
        name: ``"mutag"``, ``"proteins"``, ``"proteins-full"``, ``"imdb-binary"`` (or the name
            of the given ``graphs``).
        root: data root with ``tudataset/<NAME>/raw``; default ``$DPGNN_DATA``.
        split: ``(train, val, test)`` fractions of graphs or a preset name.
        batch_size: graphs per batch.
        seed: seed of the split and of the training-set shuffling.
        cache_dir: writable folder for processed caches.
        download: download missing raw files into the cache (``None``: only PROTEINS_full and
            IMDB-BINARY, which are not shipped offline).
        use_node_attr: append continuous node attributes to the one-hot node labels.
        num_workers: dataloader worker processes.
        num_clients: partition the graphs over this many clients (at least 2; ``None``: none).
        dirichlet_alpha: the label-Dirichlet partition's concentration (``None``: keyed).
        partition_seed: seed of the partition (public: it only simulates who holds what).
        graphs: graphs given in memory (``x``, ``edge_index``, a graph label ``y`` ``[1]``).
    """

    _main = "_dataset"

    def __init__(
        self,
        name: str = "mutag",
        root: str | None = None,
        split: str | tuple[float, float, float] = (0.8, 0.1, 0.1),
        batch_size: int = 32,
        seed: int = 0,
        cache_dir: str | None = None,
        download: bool | None = None,
        use_node_attr: bool = False,
        num_workers: int = 0,
        num_clients: int | None = None,
        dirichlet_alpha: float | None = None,
        partition_seed: int = 0,
        graphs: Sequence[Data] | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(logger=False, ignore=["graphs"])  # see NodeDataModule
        if graphs is not None and len(graphs) == 0:
            raise EmptyDatasetError("graphs is empty")
        self.name = get_spec(name, Kind.GRAPH).name if graphs is None else str(name)
        self._given = list(graphs) if graphs is not None else None
        self.root = root
        self.split = split
        self._fractions = parse_split(split)
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.cache_dir = cache_dir
        self.download = download
        self.use_node_attr = use_node_attr
        self.num_workers = int(num_workers)
        if num_clients is not None and int(num_clients) < 2:
            raise ValueError(
                f"num_clients={num_clients} is not a federation: give at least 2 clients, or "
                "num_clients=None for one holder of every graph"
            )
        if dirichlet_alpha is not None and not float(dirichlet_alpha) > 0:
            raise ValueError(f"dirichlet_alpha must be > 0 or None, got {dirichlet_alpha}")
        self.num_clients = None if num_clients is None else int(num_clients)
        self.dirichlet_alpha = None if dirichlet_alpha is None else float(dirichlet_alpha)
        self.partition_seed = int(partition_seed)
        self._dataset: Any = None
        self._clients: list[ClientSplit] | None = None
        self.train_dataset: Any = None
        self.val_dataset: Any = None
        self.test_dataset: Any = None

    @classmethod
    def ego(
        cls,
        name: str = "citeseer",
        hops: int = 1,
        num_graphs: int | None = 500,
        root: str | None = None,
        sample_seed: int = 0,
        **kwargs: Any,
    ) -> GraphDataModule:
        """``hops``-hop ego subgraphs of a citation graph's largest connected component around
        ``num_graphs`` random centres (``None``: every node), labelled by the centre (GW-LDP's
        clustering task); they keep their nodes' ids in it (:attr:`source_nodes`)."""
        from .graphs import ego_graphs, largest_connected_component

        data = load_dataset(name, root, cache_dir=kwargs.get("cache_dir"))
        n = int(largest_connected_component(data).num_nodes)
        centres = None
        if num_graphs is not None and num_graphs < n:
            gen = torch.Generator().manual_seed(int(sample_seed))
            centres = torch.randperm(n, generator=gen)[: int(num_graphs)].sort().values
        graphs = ego_graphs(data, hops=hops, centres=centres)
        return cls(name=f"{get_spec(name).name}-ego{hops}", graphs=graphs, **kwargs)

    def _read(self) -> Any:
        return load_graph_dataset(
            self.name,
            self.root,
            cache_dir=self.cache_dir,
            download=self.download,
            use_node_attr=self.use_node_attr,
        )

    def prepare_data(self) -> None:
        """Download raw files and build the processed cache (runs on one process only)."""
        self._load()

    def setup(self, stage: str | None = None) -> None:
        """Load the dataset, make its graphs simple, partition and split them (once)."""
        if self._dataset is not None:
            return
        loaded = self._load()
        simple = SimpleGraph()
        if isinstance(loaded, InMemoryDataset):
            ds = loaded
            ds.transform = simple
        else:
            ds = _GraphList([simple(g) for g in loaded])
        n = len(ds)
        self._dataset = ds
        if self.num_clients is None:
            split = NodeSplit(*self._fractions, seed=self.seed, by="position")
            tr, va, te = split.positional(torch.arange(n))
            self._clients = [ClientSplit(0, tr, va, te)]
        else:
            owner = (
                keyed_partition(n, self.num_clients, self.partition_seed)
                if self.dirichlet_alpha is None else dirichlet_partition(
                    self.graph_labels, self.num_clients, self.dirichlet_alpha,
                    self.partition_seed)
            )
            self._clients = client_splits(owner, self._fractions, self.seed)
            tr, va, te = (torch.cat([getattr(c, k) for c in self._clients])
                          for k in ("train", "val", "test"))
        self.train_dataset = ds[tr]
        self.val_dataset = ds[va]
        self.test_dataset = ds[te]

    @property
    def clients(self) -> list[ClientSplit]:
        """Who holds which graphs (indices into :attr:`dataset`), split into train/val/test."""
        return self._set_up("_clients")

    @property
    def graph_labels(self) -> torch.Tensor:
        """The label of every graph (``[num_graphs]``)."""
        ds = self._dataset if self._dataset is not None else self.dataset
        if isinstance(ds, InMemoryDataset) and getattr(ds, "_data", None) is not None:
            y = ds._data.y
            if y is not None and y.numel() == len(ds) and ds._indices is None:
                return y.view(-1).long()
        return torch.cat([g.y.view(-1)[:1] for g in ds]).long()

    @property
    def public_num_classes(self) -> int | None:
        """2 for the TU datasets (their class list is public); ``None`` for given graphs."""
        return 2 if self._given is None else None

    def private_reads(self, level: str) -> list[str]:
        """None at any level: simple graphs are a per-graph map, the keyed partition reads no
        graph and each client splits its own; the rest is :meth:`declared_public`."""
        return []

    def declared_public(self) -> list[str]:
        """What the preprocessing treats as public, in words (the model names it in its unit):
        the labels the label-Dirichlet partition reads, the source graph's edges."""
        public = []
        if self.num_clients is not None and self.dirichlet_alpha is not None:
            public.append(
                "every graph's label (the label-Dirichlet partition over the clients reads "
                f"them all: dirichlet_alpha={self.dirichlet_alpha:g})"
            )
        if self.source_nodes is not None:
            public.append(
                "the source graph's edges (they decide which nodes each released graph holds, "
                "and so how many graphs hold one node)"
            )
        return public

    @property
    def source_nodes(self) -> list[torch.Tensor] | None:
        """Each graph's nodes in the source graph they are cut from (``node_id``, as :meth:`ego`
        sets it); ``None``: independent graphs."""
        if self._given is None:
            return None
        ids = [getattr(g, "node_id", None) for g in self.dataset]
        missing = sum(i is None for i in ids)
        if missing == len(ids):
            return None
        if missing:
            raise ValueError(
                f"graphs: {len(ids) - missing} of {len(ids)} graphs carry node_id (their nodes' "
                "ids in a source graph) and the others do not: give node_id to every graph cut "
                "from one source graph, or to none, so that overlaps can be accounted"
            )
        return ids

    def graph_stats(self) -> dict[str, float]:
        """Number of graphs, mean nodes and mean (directed) edges — GW-LDP's Table 3."""
        return graph_stats(list(self.dataset))

    @property
    def dataset(self) -> Any:
        """All graphs (runs :meth:`setup` on first access)."""
        return self._set_up("_dataset")

    @property
    def num_classes(self) -> int:
        return int(self.graph_labels.max()) + 1

    def dataset_info(self) -> dict[str, Any]:
        """Name, split sizes and statistics of the graphs."""
        ds = self.dataset
        stats = self.graph_stats()
        return {
            "name": self.name,
            "num_graphs": len(ds),
            "num_features": self.num_features,
            "num_classes": self.num_classes,
            "class_counts": [int(c) for c in torch.bincount(self.graph_labels)],
            **{k: stats[k] for k in ("mean_nodes", "mean_edges")},
            "num_train": len(self.train_dataset or ()),
            "num_val": len(self.val_dataset or ()),
            "num_test": len(self.test_dataset or ()),
            "split": list(self._fractions),
            "seed": self.seed,
            "num_clients": self.num_clients,
        }

    def _loader(self, part: str, shuffle: bool = False) -> PyGDataLoader:
        self.setup()
        ds = getattr(self, f"{part}_dataset")
        gen = torch.Generator().manual_seed(self.seed) if shuffle else None
        return PyGDataLoader(
            ds,  # type: ignore[arg-type]
            batch_size=self.batch_size,
            shuffle=shuffle,
            generator=gen,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled mini-batches of training graphs; a federated model
        (:class:`TrainsFromClients`) gets the clients instead and returns its own loader."""
        model = _model(self)
        if isinstance(model, TrainsFromClients):
            self.setup()
            return model.train_dataloader_from_clients(self)
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> PyGDataLoader:
        return self._loader("val")

    def test_dataloader(self) -> PyGDataLoader:
        return self._loader("test")

    predict_dataloader = test_dataloader


class _GraphList(list):
    """Graphs given in memory, indexable by a tensor of positions like a PyG dataset."""

    def __getitem__(self, idx: Any) -> Any:  # type: ignore[override]
        if isinstance(idx, torch.Tensor):
            return _GraphList(list.__getitem__(self, int(i)) for i in idx.view(-1).tolist())
        return list.__getitem__(self, idx)

    @property
    def num_node_features(self) -> int:
        return int(self[0].num_node_features) if len(self) else 0
