"""Dataset registry: names, where their raw files live, and how to load them.

Use :func:`available_datasets` for the known names, :func:`load_dataset` for a raw
(untransformed) node-classification graph and :func:`load_graph_dataset` for a
graph-classification dataset. :func:`register_dataset` adds your own node dataset (it then works
with :class:`~lightning_dpgnn.data.NodeDataModule` and the CLI).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset

from . import readers, validation
from .errors import (
    DatasetKindError,
    RawFilesNotFoundError,
    UnknownDatasetError,
    UnknownTargetError,
)
from .paths import download_root, fingerprint, resolve_cache_dir, resolve_root
from .synthetic import make_csbm

__all__ = [
    "DatasetSpec",
    "available_datasets",
    "get_spec",
    "register_dataset",
    "load_dataset",
    "load_graph_dataset",
    "locate_raw",
    "FACEBOOK100_SCHOOLS",
]

log = logging.getLogger(__name__)



class Kind(StrEnum):
    """What a dataset is (not a privacy level): one graph for node classification, or many
    small graphs for graph classification."""

    NODE = "node"
    GRAPH = "graph"


FACEBOOK100_SCHOOLS: tuple[str, ...] = tuple(
    """American75 Amherst41 Auburn71 BC17 BU10 Baylor93 Berkeley13 Bingham82 Bowdoin47
    Brandeis99 Brown11 Bucknell39 Cal65 Caltech36 Carnegie49 Colgate88 Columbia2 Cornell5
    Dartmouth6 Duke14 Emory27 FSU53 GWU54 Georgetown15 Hamilton46 Harvard1 Haverford76 Howard90
    Indiana69 JMU79 JohnsHopkins55 Lehigh96 MIT8 MSU24 MU78 Maine59 Maryland58 Mich67 Michigan23
    Middlebury45 Mississippi66 NYU9 Northeastern19 Northwestern25 NotreDame57 Oberlin44
    Oklahoma97 Penn94 Pepperdine86 Princeton12 Reed98 Rice31 Rochester38 Rutgers89 Santa74
    Simmons81 Smith60 Stanford3 Swarthmore42 Syracuse56 Temple83 Tennessee95 Texas80 Texas84
    Trinity100 Tufts18 Tulane29 UC33 UC61 UC64 UCF52 UCLA26 UCSB37 UCSC68 UCSD34 UChicago30
    UConn91 UF21 UGA50 UIllinois20 UMass92 UNC28 UPenn7 USC35 USF51 USFCA72 UVA16 Vanderbilt48
    Vassar85 Vermont70 Villanova62 Virginia63 Wake73 WashU32 Wellesley22 Wesleyan43 William77
    Williams40 Wisconsin87 Yale4""".split()
)
"""The 100 schools of Facebook100 (the shared copy holds 87 of them; UIllinois20 is missing)."""

FACEBOOK100_URL = "https://archive.org/details/oxford-2005-facebook-matrix"
_FB100_LICENSE = "research use (Traud, Mucha & Porter 2012); see facebook100/LICENSE"
#: ``year`` first: the papers' target is the default
_FB100_TARGETS = readers.FACEBOOK100_TARGETS[5:] + readers.FACEBOOK100_TARGETS[:5]

# --------------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetSpec:
    """Everything the data layer knows about one dataset.

    Attributes:
        name: canonical name (what :func:`available_datasets` lists).
        kind: ``"node"`` (one graph, node classification) or ``"graph"`` (many small graphs).
        description: one-line description.
        subpath: folder (or file) of the raw data, relative to the data root.
        raw_files: files that must exist under ``subpath`` (empty when ``subpath`` is a file).
        urls: where the raw files come from (shown in errors and docs).
        targets: valid ``target`` values; the first one is the default.
        auto_download: download into the cache dir when the raw files are missing and the
            caller passed ``download=None``.
        can_download: whether a download path exists at all.
        default_min_class_size: class-size threshold of the GAP/ProGAP preprocessing (used by
            :class:`~lightning_dpgnn.data.NodeDataModule` when ``min_class_size=None``).
        license: license note.
        loader: ``loader(spec, raw_path, processed_dir, target, **kwargs) -> Data`` (or a
            dataset for ``kind="graph"``).
    """

    name: str
    kind: Kind
    description: str
    subpath: str = ""
    raw_files: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    targets: tuple[str, ...] = ("label",)
    auto_download: bool = False
    can_download: bool = False
    default_min_class_size: int | float | None = None
    license: str = ""
    loader: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def default_target(self) -> str:
        """The target used when ``target=None``."""
        return self.targets[0]

    @property
    def needs_files(self) -> bool:
        """Whether the dataset is read from raw files (``False`` for generated ones)."""
        return bool(self.subpath)


def _reader(read: Callable[..., Data], *extra: str) -> Callable[..., Data]:
    """A loader without options: ``read(raw, processed, *spec.extra[k] for k in extra)``."""

    def loader(spec: DatasetSpec, raw: Path, processed: Path, target: str, **kw: Any) -> Data:
        _no_kwargs(spec, kw)
        return read(raw, processed, *(spec.extra[k] for k in extra))

    return loader


def _musae_loader(spec: DatasetSpec, raw: Path, processed: Path, target: str, **kw: Any):
    _no_kwargs(spec, kw)
    return readers.read_musae(raw, processed, target, spec.extra["id_column"], spec.targets)


def _facebook100_identity(files: list[Path], target: str) -> tuple[Tensor, Tensor]:
    """``node_id`` and ``label_values`` of the Facebook100 readers' output (schools stacked).

    The readers drop nodes whose ``target`` is missing (0) and map the sorted distinct target
    values to ``0..c-1``. This re-reads only ``local_info`` (milliseconds per school) and
    returns each kept node's row in the raw ``.mat`` files (schools offset by their raw node
    counts) and the raw target value (e.g. the class year) of every label index.
    """
    t = readers.FACEBOOK100_COLUMNS.index(target)
    ids, values, offset = [], [], 0
    for f in files:
        info = np.asarray(readers.load_mat(f, ["local_info"])["local_info"], dtype=np.int64)
        keep = info[:, t] != 0
        ids.append(np.flatnonzero(keep) + offset)
        values.append(info[keep, t])
        offset += info.shape[0]
    node_id = torch.from_numpy(np.concatenate(ids).astype(np.int64))
    label_values = torch.from_numpy(np.unique(np.concatenate(values)).astype(np.int64))
    return node_id, label_values


def _facebook100_loader(
    spec: DatasetSpec,
    raw: Path,
    processed: Path,
    target: str,
    features: tuple[str, ...] | list[str] = readers.FACEBOOK100_FEATURES,
    vocabulary: str = "data",
    **kw: Any,
):
    _no_kwargs(spec, kw)
    data = readers.read_facebook100(raw, target, tuple(features), vocabulary)
    data.node_id, data.label_values = _facebook100_identity([raw], target)
    return data


def _facebook100_merged_loader(
    spec: DatasetSpec, raw: Path, processed: Path, target: str, **kw: Any
):
    _no_kwargs(spec, kw)
    return readers.read_facebook100_merged(raw, processed, target)  # with node_id, label_values


def _read_amazon(raw: Path, processed: Path) -> Data:
    if not all((raw / f).exists() for f in readers.OGB_PRODUCTS_FILES):
        _download_ogb_products(raw)
    return readers.read_ogbn_products(raw, processed)


def _tu_loader(spec: DatasetSpec, raw: Path, processed: Path, target: str, **kw: Any):
    allowed = {"use_node_attr", "use_edge_attr"}
    if set(kw) - allowed:
        raise TypeError(f"{spec.name}: unexpected options {sorted(set(kw) - allowed)}")
    return readers.read_tudataset(raw, processed, spec.extra["pyg_name"], **kw)


def _csbm_loader(
    spec: DatasetSpec, raw: Path | None, processed: Path | None, target: str, **kw: Any
) -> Data:
    return make_csbm(**kw)


def _no_kwargs(spec: DatasetSpec, kw: dict[str, Any]) -> None:
    if kw:
        raise TypeError(f"dataset {spec.name!r} takes no extra options, got {sorted(kw)}")


def _download_ogb_products(raw: Path) -> None:
    """Download OGB's ``products.zip`` and extract it so that ``raw`` is its ``products/``."""
    from torch_geometric.data import download_url, extract_zip

    raw.parent.mkdir(parents=True, exist_ok=True)
    path = download_url(_AMAZON_URL, str(raw.parent))
    extract_zip(path, str(raw.parent))
    os.unlink(path)


_PLANETOID_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"
_AMAZON_URL = "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip"


def _planetoid(name: str, pyg_name: str, auto: bool, desc: str) -> DatasetSpec:
    files = tuple(
        f"ind.{pyg_name.lower()}.{s}"
        for s in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    )
    return DatasetSpec(
        name=name,
        kind="node",
        description=desc,
        subpath=f"planetoid/{pyg_name}/raw",
        raw_files=files,
        urls=(_PLANETOID_URL,),
        auto_download=auto,
        can_download=True,
        license="MIT (Planetoid, Yang et al. 2016)",
        loader=_reader(readers.read_planetoid, "pyg_name"),
        extra={"pyg_name": pyg_name},
    )


_MUSAE_FILES = ("edges.csv", "features.json", "target.csv")
_MUSAE_LICENSE = "GPL-3.0 (MUSAE, Rozemberczki et al. 2021)"

_SPECS: dict[str, DatasetSpec] = {}
_ALIASES: dict[str, str] = {}


def _add(spec: DatasetSpec, *aliases: str) -> None:
    _SPECS[spec.name] = spec
    for a in (spec.name, *aliases):
        _ALIASES[_normalize(a)] = spec.name


def _normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-")


_add(
    DatasetSpec(
        name="csbm",
        kind="node",
        description="contextual stochastic block model generated in code (default dataset)",
        license="synthetic",
        loader=_csbm_loader,
    ),
    "cSBM",
    "synthetic",
)
_add(
    _planetoid("cora", "Cora", False, "Cora citation graph: 2,708 nodes, 7 classes, 1,433 feats"),
    "planetoid/cora",
)
_add(
    _planetoid(
        "citeseer", "CiteSeer", False, "CiteSeer citation graph: 3,327 nodes, 6 classes, 3,703"
    ),
    "planetoid/citeseer",
)
_add(
    _planetoid("pubmed", "PubMed", True, "PubMed citation graph: 19,717 nodes, 3 classes, 500"),
    "planetoid/pubmed",
)
_add(
    DatasetSpec(
        name="musae-facebook",
        kind="node",
        description="MUSAE Facebook page-page graph: 22,470 nodes, 4 page types, 4,714 feats",
        subpath="musae/facebook",
        raw_files=_MUSAE_FILES,
        urls=(
            "https://snap.stanford.edu/data/facebook-large-page-page-network.html",
            "https://github.com/benedekrozemberczki/MUSAE",
        ),
        targets=("page_type",),
        license=_MUSAE_LICENSE,
        loader=_musae_loader,
        extra={"id_column": "id"},
    ),
    "musae/facebook",
    "facebook-page-page",
    "facebookpagepage",
)
_add(
    DatasetSpec(
        name="musae-twitch-en",
        kind="node",
        description="MUSAE Twitch EN user graph: 7,126 nodes, 2 classes (mature), 3,170 feats",
        subpath="musae/twitch_en",
        raw_files=_MUSAE_FILES,
        urls=(
            "https://snap.stanford.edu/data/twitch-social-networks.html",
            "https://github.com/benedekrozemberczki/MUSAE",
        ),
        targets=("mature", "partner"),
        license=_MUSAE_LICENSE,
        loader=_musae_loader,
        extra={"id_column": "new_id"},
    ),
    "musae/twitch_en",
    "musae/twitch-en",
    "twitch",
    "twitch-en",
)
_add(
    DatasetSpec(
        name="reddit",
        kind="node",
        description="Reddit posts graph (GraphSAGE): 232,965 nodes, 41 classes, 602 feats",
        subpath="reddit/raw",
        raw_files=("reddit_data.npz", "reddit_graph.npz"),
        urls=("https://data.dgl.ai/dataset/reddit.zip",),
        auto_download=True,
        can_download=True,
        default_min_class_size=10_000,
        license="see https://snap.stanford.edu/graphsage/",
        loader=_reader(readers.read_reddit),
    ),
)
_add(
    DatasetSpec(
        name="amazon",
        kind="node",
        description="Amazon co-purchase graph ogbn-products: 2,449,029 nodes, 47 classes, 100",
        subpath="amazon/products",
        raw_files=readers.OGB_PRODUCTS_FILES,
        urls=(_AMAZON_URL,),
        auto_download=True,
        can_download=True,
        default_min_class_size=100_000,
        license="Amazon license (see https://ogb.stanford.edu/docs/nodeprop/#ogbn-products)",
        loader=_reader(_read_amazon),
    ),
    "ogbn-products",
    "amazon-products",
)
_add(
    DatasetSpec(
        name="lastfm",
        kind="node",
        description="LastFM Asia social graph: 7,624 nodes, 18 classes, 128 feats",
        subpath="lastfm/raw",
        raw_files=("lastfm_asia.npz",),
        urls=("https://graphmining.ai/datasets/ptg/lastfm_asia.npz",),
        auto_download=True,
        can_download=True,
        license="GPL-3.0 (Rozemberczki & Sarkar 2020)",
        loader=_reader(readers.read_lastfm),
    ),
    "lastfm-asia",
    "lastfmasia",
)
_TU_DESCRIPTIONS = {
    "MUTAG": "MUTAG molecules: 188 graphs, 2 classes, 7 node labels",
    "PROTEINS": "PROTEINS: 1,113 graphs, 2 classes, 3 node labels",
    # online only (downloaded on first use): the GW-LDP / FGW papers' "PROTEINS" and IMDB-B
    "PROTEINS_full": "PROTEINS_full: 1,113 graphs, 2 classes, 3 node labels + 29 attributes",
    "IMDB-BINARY": "IMDB-BINARY ego networks: 1,000 graphs, 2 classes, no node features",
}
for _tu, _offline in (
    ("MUTAG", True), ("PROTEINS", True), ("PROTEINS_full", False), ("IMDB-BINARY", False)
):
    _add(
        DatasetSpec(
            name=_normalize(_tu),
            kind="graph",
            description=_TU_DESCRIPTIONS[_tu],
            subpath=f"tudataset/{_tu}/raw",
            raw_files=(f"{_tu}_A.txt", f"{_tu}_graph_indicator.txt", f"{_tu}_graph_labels.txt"),
            urls=(f"https://www.chrsmrrs.com/graphkerneldatasets/{_tu}.zip",),
            auto_download=not _offline,
            can_download=True,
            license="see https://chrsmrrs.github.io/datasets/",
            loader=_tu_loader,
            extra={"pyg_name": _tu},
        ),
        f"tudataset/{_tu}",
        f"tu/{_tu}",
        *((_tu.replace("-", ""),) if "-" in _tu else ()),
    )
_add(_SPECS["imdb-binary"], "imdb-b")

_add(
    DatasetSpec(
        name="facebook100-all",
        kind="node",
        description="all Facebook100 schools in the data root merged into one graph (FB-100)",
        subpath="facebook100",
        urls=(FACEBOOK100_URL,),
        targets=_FB100_TARGETS,
        default_min_class_size=0.01,
        license=_FB100_LICENSE,
        loader=_facebook100_merged_loader,
        extra={"mat_folder": True},
    ),
    "facebook100/all",
    "fb100-all",
    "fb-100",
)

_FB100 = re.compile(r"^(?:facebook100|fb100|facebook-100)/(?P<school>[^/]+?)(?:\.mat)?$", re.I)
_FB100_BY_LOWER = {s.lower(): s for s in FACEBOOK100_SCHOOLS}


def _facebook100_spec(school: str) -> DatasetSpec:
    school = _FB100_BY_LOWER.get(school.lower(), school)
    return DatasetSpec(
        name=f"facebook100/{school}",
        kind="node",
        description=f"Facebook100 school network {school} (Sept. 2005)",
        subpath=f"facebook100/{school}.mat",
        urls=(FACEBOOK100_URL, "https://github.com/sisaman/pyg-datasets"),
        targets=_FB100_TARGETS,
        # 1% of the labelled nodes: works for every school (the papers' absolute 1000 would
        # empty the small ones); the GAP/ProGAP benchmarks and recipes pass 1000 explicitly
        default_min_class_size=0.01,
        license=_FB100_LICENSE,
        loader=_facebook100_loader,
    )


def available_datasets(kind: Kind | None = None) -> list[str]:
    """Names accepted by :func:`load_dataset` and the data modules.

    Args:
        kind: ``"node"`` or ``"graph"`` to filter, ``None`` for all. Facebook100 schools are
            listed one by one as ``facebook100/<School>``.
    """
    names = [s.name for s in _SPECS.values() if kind is None or s.kind == kind]
    if kind in (None, Kind.NODE):
        names += [f"facebook100/{s}" for s in FACEBOOK100_SCHOOLS]
    return names


def _known_summary() -> str:
    base = sorted(s.name for s in _SPECS.values())
    return ", ".join(base) + ", facebook100/<School> (e.g. facebook100/Caltech36; 100 schools)"


def get_spec(name: str) -> DatasetSpec:
    """Return the :class:`DatasetSpec` for a name or alias (case-insensitive).

    Raises:
        UnknownDatasetError: the name is not known (the message lists the known names).
    """
    if not isinstance(name, str) or not name.strip():
        raise UnknownDatasetError(f"dataset name must be a non-empty string; known: {name!r}")
    key = _normalize(name)
    if key in _ALIASES:
        return _SPECS[_ALIASES[key]]
    match = _FB100.match(name.strip())
    if match:
        return _facebook100_spec(match.group("school"))
    hint = ""
    if key in {"facebook", "fb"}:
        hint = (
            " 'facebook' is ambiguous: use 'musae-facebook' (page-page graph, LPGNN) or "
            "'facebook100/<School>' (university networks, GAP/ProGAP)."
        )
    else:
        close = difflib.get_close_matches(
            name.strip().lower(), [n.lower() for n in available_datasets()], n=1
        ) or [f"facebook100/{s}" for s in FACEBOOK100_SCHOOLS if s.lower() == key]
        if close:
            spelled = {n.lower(): n for n in available_datasets()}
            hint = f" Did you mean {spelled.get(close[0], close[0])!r}?"
    raise UnknownDatasetError(f"unknown dataset {name!r}.{hint} Known datasets: {_known_summary()}")


def register_dataset(
    name: str,
    loader: Callable[..., Data],
    *,
    targets: tuple[str, ...] = ("label",),
    description: str = "",
    default_min_class_size: int | float | None = None,
    overwrite: bool = False,
) -> DatasetSpec:
    """Register a custom node-classification dataset.

    ``loader(root=<Path or None>, target=<str>, **kwargs)`` must return a ``Data`` with ``x``,
    ``edge_index`` and ``y``; if it drops nodes of the raw data, it should also set ``node_id``
    (each node's raw index; default ``arange(num_nodes)``). Afterwards ``NodeDataModule(name)``
    and ``load_dataset(name)`` work.

    Raises:
        ValueError: the name is taken and ``overwrite`` is false.
    """
    key = _normalize(name)
    if key in _ALIASES and not overwrite:
        raise ValueError(f"dataset name {name!r} is already registered (pass overwrite=True)")

    spec = DatasetSpec(
        name=name,
        kind="node",
        description=description or f"custom dataset {name}",
        targets=tuple(targets),
        default_min_class_size=default_min_class_size,
        license="user-provided",
        loader=loader,
        extra={"custom": True},
    )
    _add(spec)
    return spec


# --------------------------------------------------------------------------------------------
# Locating raw files
# --------------------------------------------------------------------------------------------


def _missing(spec: DatasetSpec, where: Path) -> list[Path]:
    if spec.extra.get("mat_folder"):
        return [] if where.is_dir() and any(where.glob("*.mat")) else [where / "*.mat"]
    if not spec.raw_files:
        return [] if where.is_file() else [where]
    return [where / f for f in spec.raw_files if not (where / f).is_file()]


def locate_raw(
    spec: DatasetSpec,
    root: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool | None = None,
) -> Path:
    """Find the raw files of ``spec``; return the folder (or file) to read them from.

    Looks in ``<root>/<subpath>`` (``root`` or ``$DPGNN_DATA``) and then in the cache's download
    folder ``<cache>/datasets/<subpath>``. If neither has the files and downloading is allowed
    (``download=True``, or ``None`` with ``spec.auto_download``), returns the cache location so
    the reader downloads there (never into the root).

    Raises:
        RawFilesNotFoundError: files missing and no download; the message lists the paths looked
            for and how to get the files.
    """
    root_path = resolve_root(root)
    cache = resolve_cache_dir(cache_dir)
    candidates = []
    if root_path is not None:
        candidates.append(root_path / spec.subpath)
    cached = download_root(cache) / spec.subpath
    candidates.append(cached)
    for cand in candidates:
        if not _missing(spec, cand):
            return cand
    want_download = spec.auto_download if download is None else bool(download)
    if want_download and spec.can_download:
        log.info("raw files of %s not found; downloading into %s", spec.name, cached)
        return cached

    lines = [f"raw files of dataset {spec.name!r} not found."]
    if root_path is None:
        lines.append("No data root given (root=None and $DPGNN_DATA is unset).")
    lines.append("Looked for:")
    for cand in candidates:
        missing = _missing(spec, cand)
        shown = ", ".join(str(m) for m in missing[:3])
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        lines.append(f"  {shown}{more}")
    where = f"<root>/{spec.subpath}"
    lines.append(
        f"Get them from {' or '.join(spec.urls) or 'the dataset authors'} and place them in "
        f"{where}, then pass root=<root> or set DPGNN_DATA=<root> "
        "(e.g. DPGNN_DATA=../shared/datasets)."
    )
    if spec.can_download:
        lines.append("Or pass download=True to download them into the cache dir.")
    if spec.subpath.startswith("facebook100/") and root_path is not None:
        folder = root_path / "facebook100"
        if folder.is_dir():
            found = sorted(p.stem for p in folder.glob("*.mat"))[:10]
            lines.append(f"Schools found in {folder}: {', '.join(found)}, ...")
    raise RawFilesNotFoundError("\n".join(lines))


def _resolve_target(spec: DatasetSpec, target: str | None) -> str:
    if target is None:
        return spec.default_target
    if target not in spec.targets:
        raise UnknownTargetError(
            f"dataset {spec.name!r} has no target {target!r}; valid targets: {list(spec.targets)}"
        )
    return target


def _processed_dir(spec: DatasetSpec, raw: Path, cache: Path, *extra: object) -> Path:
    files = [raw / f for f in spec.raw_files] if spec.raw_files else [raw]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec.name)
    return cache / "processed" / f"{safe}-{fingerprint(files, raw, *extra)}"


# --------------------------------------------------------------------------------------------
# Public loading functions
# --------------------------------------------------------------------------------------------


def load_dataset(
    name: str = "csbm",
    root: str | os.PathLike[str] | None = None,
    target: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool | None = None,
    **kwargs: Any,
) -> Data:
    """Load a node-classification dataset as one raw (untransformed) ``Data``.

    Args:
        name: dataset name (see :func:`available_datasets`), case-insensitive.
        root: data root holding the raw files (default ``$DPGNN_DATA``); read-only is fine.
        target: prediction target (``None``: the dataset's default; see ``get_spec(name).targets``).
        cache_dir: writable folder for processed caches and downloads (default ``$DPGNN_CACHE``
            or ``~/.cache/lightning_dpgnn``).
        download: ``True`` downloads missing raw files into the cache dir, ``False`` never does,
            ``None`` downloads only for the datasets that are not shipped offline (Reddit,
            Amazon, PubMed, LastFM).
        **kwargs: dataset options, e.g. the :func:`~lightning_dpgnn.data.make_csbm` parameters.

    Returns:
        ``Data`` with ``x`` (float), ``edge_index`` (both directions for undirected graphs),
        ``y`` (long, ``0..c-1``), ``node_id`` (long: each node's index in the raw dataset, i.e.
        before the loader dropped any node; ``arange(num_nodes)`` when it drops none; the
        identity the default split is keyed on) and, where the source defines one, its public
        split masks. Facebook100 graphs also carry ``label_values`` (long ``[c]``: the raw
        target value, e.g. the class year, of every label ``0..c-1``).

    Raises:
        UnknownDatasetError, UnknownTargetError, RawFilesNotFoundError.
        CorruptDataError: a raw file cannot be parsed (the message names it) or the graph read
            does not match the known dataset's counts; nothing is then written to the cache.
    """
    spec = get_spec(name)
    if spec.kind != Kind.NODE:
        raise DatasetKindError(
            f"{spec.name!r} is a graph-classification dataset; use load_graph_dataset() or "
            "GraphDataModule. Node datasets: " + _known_summary()
        )
    tgt = _resolve_target(spec, target)
    if spec.extra.get("custom"):
        data = spec.loader(root=resolve_root(root), target=tgt, **kwargs)  # type: ignore[misc]
    elif not spec.needs_files:
        data = spec.loader(spec, None, None, tgt, **kwargs)  # type: ignore[misc]
    else:
        raw = locate_raw(spec, root, cache_dir, download)
        # the loader's options are part of the key: a README snippet (default vocabulary) and
        # a recipe (vocabulary: public) on the same school keep one cache each, not one that
        # each rebuilds as "damaged" on every switch
        options = (json.dumps(kwargs, sort_keys=True, default=repr),) if kwargs else ()
        processed = _processed_dir(spec, raw, resolve_cache_dir(cache_dir), tgt, *options)
        data = _load_checked(
            spec,
            raw,
            processed,
            lambda folder: spec.loader(spec, raw, folder, tgt, **kwargs),  # type: ignore[misc]
            default=tgt == spec.default_target and not kwargs,
        )
    return _with_node_id(data)


def _raw_file_keys(spec: DatasetSpec, raw: Path) -> dict[str, Path]:
    """The raw files of ``spec`` by their path under the data root (keys of the known digests)."""
    if spec.extra.get("mat_folder"):
        return {f"{spec.subpath}/{f.name}": f for f in sorted(raw.glob("*.mat"))}
    if not spec.raw_files:
        return {spec.subpath: raw}
    return {f"{spec.subpath}/{f}": raw / f for f in spec.raw_files}


def _load_checked(
    spec: DatasetSpec, raw: Path, processed: Path, load: Callable[[Path], Any], default: bool
) -> Any:
    """Run ``load(cache folder)`` through the validated processed cache.

    A fresh read is compared with the known dataset (counts only with the default target and
    options; raw-file digests always) before anything reaches the cache; see
    :mod:`lightning_dpgnn.data.validation`.
    """
    files = _raw_file_keys(spec, raw)

    def validate(data: Any) -> None:
        validation.check_known(spec.name, files, validation.graph_counts(data) if default else None)

    return validation.cached_build(
        processed,
        load,
        validate,
        lambda err: validation.corrupt_dataset(spec.name, raw, files, err),
    )


def _with_node_id(data: Data) -> Data:
    """Give a freshly loaded graph ``node_id = arange(num_nodes)`` unless its loader set one."""
    if getattr(data, "node_id", None) is None:
        data.node_id = torch.arange(int(data.num_nodes))
    elif data.node_id.numel() != int(data.num_nodes):
        raise ValueError(
            f"node_id has {data.node_id.numel()} entries for {int(data.num_nodes)} nodes"
        )
    return data


def load_graph_dataset(
    name: str,
    root: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool | None = None,
    use_node_attr: bool = False,
    use_edge_attr: bool = False,
) -> InMemoryDataset:
    """Load a graph-classification dataset (TU format) as a PyG ``InMemoryDataset``.

    Args:
        name: ``"mutag"`` or ``"proteins"`` (case-insensitive).
        root: data root (default ``$DPGNN_DATA``); raw files in ``<root>/tudataset/<NAME>/raw``.
        cache_dir: writable folder for processed caches and downloads.
        download: ``True`` downloads missing raw files into the cache dir (default: never).
        use_node_attr: append continuous node attributes (PROTEINS has one) to ``x``.
        use_edge_attr: load edge attributes where present.
    """
    spec = get_spec(name)
    if spec.kind != Kind.GRAPH:
        raise DatasetKindError(
            f"{spec.name!r} is a node-classification dataset; use load_dataset() or "
            f"NodeDataModule. Graph datasets: {', '.join(available_datasets('graph'))}"
        )
    raw = locate_raw(spec, root, cache_dir, download)
    processed = _processed_dir(
        spec, raw, resolve_cache_dir(cache_dir), use_node_attr, use_edge_attr
    )
    return _load_checked(
        spec,
        raw,
        processed,
        lambda folder: spec.loader(  # type: ignore[misc]
            spec, raw, folder, "label", use_node_attr=use_node_attr, use_edge_attr=use_edge_attr
        ),
        default=not (use_node_attr or use_edge_attr),
    )
