"""Dataset registry: names, where their raw files live, and how to load them
(:func:`load_dataset`, :func:`load_graph_dataset`; :func:`register_dataset` adds your own)."""

from __future__ import annotations

import difflib
import functools
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data, InMemoryDataset

from . import readers, validation
from .errors import (
    DatasetKindError,
    RawFilesNotFoundError,
    UnknownDatasetError,
    UnknownTargetError,
)
from .paths import fingerprint, resolve_cache_dir, resolve_root
from .synthetic import make_csbm

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
#: ``year`` first: the papers' target is the default
_FB100_TARGETS = readers.FACEBOOK100_TARGETS[5:] + readers.FACEBOOK100_TARGETS[:5]


@dataclass(frozen=True)
class DatasetSpec:
    """What the data layer knows about one dataset: its raw files (``subpath`` under the data
    root, ``raw_files`` there, ``urls``), ``targets`` (the first is the default), downloads
    (``auto_download``: when ``download=None``), the GAP/ProGAP ``default_min_class_size`` and
    ``loader(raw, processed, target, **options)`` (graph datasets: no target; registered ones:
    ``loader(root=, target=, **options)``)."""

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
    loader: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    #: ``options`` (the loader options accepted; ``None``: any), ``mat_folder``, ``custom``
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def default_target(self) -> str:
        """The target used when ``target=None``."""
        return self.targets[0]

    @property
    def needs_files(self) -> bool:
        """Whether the dataset is read from raw files (``False`` for generated ones)."""
        return bool(self.subpath)


def _pyg(cls: type, *args: Any) -> Callable[..., Data]:
    """The loader of the one graph of the PyG dataset ``cls(raw, processed, *args)``, with
    contiguous tensors (Planetoid keeps its public split masks)."""
    return lambda raw, processed, target: cls(raw, processed, *args)[0].contiguous()


def _read_facebook100(raw: Path, processed: Path, target: str, **options: Any) -> Data:
    return readers.read_facebook100(raw, target, **options)


def _read_amazon(raw: Path, processed: Path, target: str) -> Data:
    if not all((raw / f).exists() for f in readers.OGB_PRODUCTS_FILES):
        _download_ogb_products(raw)
    return readers.read_ogbn_products(raw, processed)


def _download_ogb_products(raw: Path) -> None:
    """Download OGB's ``products.zip`` and extract it so that ``raw`` is its ``products/``."""
    from torch_geometric.data import download_url, extract_zip

    raw.parent.mkdir(parents=True, exist_ok=True)
    path = download_url(_AMAZON_URL, str(raw.parent))
    extract_zip(path, str(raw.parent))
    os.unlink(path)


def _check_options(spec: DatasetSpec, options: dict[str, Any]) -> None:
    allowed = spec.extra.get("options", ())
    if allowed is not None and set(options) - set(allowed):
        takes = f"only the options {list(allowed)}" if allowed else "no extra options"
        raise TypeError(f"dataset {spec.name!r} takes {takes}, got {sorted(options)}")


_PLANETOID_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"
_AMAZON_URL = "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip"
_MUSAE_URL = "https://github.com/benedekrozemberczki/MUSAE"

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
        "csbm",
        Kind.NODE,
        "contextual stochastic block model generated in code (default dataset)",
        loader=lambda raw, processed, target, **options: make_csbm(**options),
        extra={"options": None},
    ),
    "cSBM",
    "synthetic",
)
for _name, _pyg_name, _auto, _description in (
    ("cora", "Cora", False, "Cora citation graph: 2,708 nodes, 7 classes, 1,433 feats"),
    ("citeseer", "CiteSeer", False, "CiteSeer citation graph: 3,327 nodes, 6 classes, 3,703"),
    ("pubmed", "PubMed", True, "PubMed citation graph: 19,717 nodes, 3 classes, 500"),
):
    _add(
        DatasetSpec(
            _name,
            Kind.NODE,
            _description,
            subpath=f"planetoid/{_pyg_name}/raw",
            raw_files=tuple(
                f"ind.{_name}.{s}"
                for s in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
            ),
            urls=(_PLANETOID_URL,),
            auto_download=_auto,
            can_download=True,
            loader=_pyg(readers._Planetoid, _pyg_name),
        ),
        f"planetoid/{_name}",
    )
for _name, _folder, _page, _targets, _id, _description, _aliases in (
    ("facebook", "facebook", "facebook-large-page-page-network", ("page_type",), "id",
     "MUSAE Facebook page-page graph: 22,470 nodes, 4 page types, 4,714 feats",
     ("facebook-page-page", "facebookpagepage")),
    ("twitch-en", "twitch_en", "twitch-social-networks", ("mature", "partner"), "new_id",
     "MUSAE Twitch EN user graph: 7,126 nodes, 2 classes (mature), 3,170 feats",
     ("musae/twitch-en", "twitch", "twitch-en")),
):  # fmt: skip
    _add(
        DatasetSpec(
            f"musae-{_name}",
            Kind.NODE,
            _description,
            subpath=f"musae/{_folder}",
            raw_files=("edges.csv", "features.json", "target.csv"),
            urls=(f"https://snap.stanford.edu/data/{_page}.html", _MUSAE_URL),
            targets=_targets,
            loader=functools.partial(readers.read_musae, id_column=_id),
        ),
        f"musae/{_folder}",
        *_aliases,
    )
for _name, _description, _subpath, _raw, _url, _min, _loader, _aliases in (
    ("reddit", "Reddit posts graph (GraphSAGE): 232,965 nodes, 41 classes, 602 feats",
     "reddit/raw", ("reddit_data.npz", "reddit_graph.npz"), "https://data.dgl.ai/dataset/reddit.zip",
     10_000, _pyg(readers._Reddit), ()),
    ("amazon", "Amazon co-purchase graph ogbn-products: 2,449,029 nodes, 47 classes, 100",
     "amazon/products", readers.OGB_PRODUCTS_FILES, _AMAZON_URL, 100_000, _read_amazon,
     ("ogbn-products", "amazon-products")),
    ("lastfm", "LastFM Asia social graph: 7,624 nodes, 18 classes, 128 feats", "lastfm/raw",
     ("lastfm_asia.npz",), "https://graphmining.ai/datasets/ptg/lastfm_asia.npz", None,
     _pyg(readers._LastFMAsia), ("lastfm-asia", "lastfmasia")),
):  # fmt: skip
    _add(
        DatasetSpec(
            _name,
            Kind.NODE,
            _description,
            subpath=_subpath,
            raw_files=_raw,
            urls=(_url,),
            auto_download=True,
            can_download=True,
            default_min_class_size=_min,
            loader=_loader,
        ),
        *_aliases,
    )
# PROTEINS_full and IMDB-BINARY are online only (the GW-LDP / FGW papers' "PROTEINS" and IMDB-B)
for _tu, _offline, _description in (
    ("MUTAG", True, "MUTAG molecules: 188 graphs, 2 classes, 7 node labels"),
    ("PROTEINS", True, "PROTEINS: 1,113 graphs, 2 classes, 3 node labels"),
    ("PROTEINS_full", False, "PROTEINS_full: 1,113 graphs, 2 classes, 3 node labels + 29 attrs"),
    ("IMDB-BINARY", False, "IMDB-BINARY ego networks: 1,000 graphs, 2 classes, no node features"),
):
    _add(
        DatasetSpec(
            _normalize(_tu),
            Kind.GRAPH,
            _description,
            subpath=f"tudataset/{_tu}/raw",
            raw_files=(f"{_tu}_A.txt", f"{_tu}_graph_indicator.txt", f"{_tu}_graph_labels.txt"),
            urls=(f"https://www.chrsmrrs.com/graphkerneldatasets/{_tu}.zip",),
            auto_download=not _offline,
            can_download=True,
            loader=functools.partial(readers.CachedTUDataset, name=_tu),
            extra={"options": ("use_node_attr", "use_edge_attr")},
        ),
        f"tudataset/{_tu}",
        f"tu/{_tu}",
        *((_tu.replace("-", ""),) if "-" in _tu else ()),
    )
_add(_SPECS["imdb-binary"], "imdb-b")
_add(
    DatasetSpec(
        "facebook100-all",
        Kind.NODE,
        "all Facebook100 schools in the data root merged into one graph (FB-100)",
        subpath="facebook100",
        urls=(FACEBOOK100_URL,),
        targets=_FB100_TARGETS,
        default_min_class_size=0.01,
        loader=readers.read_facebook100_merged,
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
        f"facebook100/{school}",
        Kind.NODE,
        f"Facebook100 school network {school} (Sept. 2005)",
        subpath=f"facebook100/{school}.mat",
        urls=(FACEBOOK100_URL, "https://github.com/sisaman/pyg-datasets"),
        targets=_FB100_TARGETS,
        # 1% of the labelled nodes: works for every school (the papers' absolute 1000 would
        # empty the small ones); the GAP/ProGAP benchmarks and recipes pass 1000 explicitly
        default_min_class_size=0.01,
        loader=_read_facebook100,
        extra={"options": ("features", "vocabulary")},
    )


def available_datasets(kind: Kind | None = None) -> list[str]:
    """Names accepted by :func:`load_dataset` and the data modules, of one ``kind`` (``"node"``,
    ``"graph"``; ``None``: all); Facebook100 schools listed one by one as ``facebook100/<School>``.
    """
    names = [s.name for s in _SPECS.values() if kind is None or s.kind == kind]
    if kind in (None, Kind.NODE):
        names += [f"facebook100/{s}" for s in FACEBOOK100_SCHOOLS]
    return names


def _known_summary() -> str:
    base = sorted(s.name for s in _SPECS.values())
    return ", ".join(base) + ", facebook100/<School> (e.g. facebook100/Caltech36; 100 schools)"


def get_spec(name: str, kind: Kind | None = None) -> DatasetSpec:
    """The :class:`DatasetSpec` of a name or alias (case-insensitive): an unknown name raises
    :class:`UnknownDatasetError` listing the known ones, a dataset of another ``kind``
    :class:`DatasetKindError` naming what loads it."""
    spec = _find_spec(name)
    if kind is not None and spec.kind != kind:
        if spec.kind == Kind.NODE:
            load, known = "load_dataset() or NodeDataModule", ", ".join(available_datasets(kind))
        else:
            load, known = "load_graph_dataset() or GraphDataModule", _known_summary()
        raise DatasetKindError(
            f"{spec.name!r} is a {spec.kind}-classification dataset; use {load}. "
            f"{kind.title()} datasets: {known}"
        )
    return spec


def _find_spec(name: str) -> DatasetSpec:
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
    """Register a custom node-classification dataset (then ``NodeDataModule(name)`` works).

    ``loader(root=<Path or None>, target=<str>, **kwargs)`` returns a ``Data`` with ``x``,
    ``edge_index``, ``y`` and, if it drops nodes of the raw data, ``node_id`` (each node's raw
    index; default ``arange(num_nodes)``). A taken name raises unless ``overwrite``.
    """
    key = _normalize(name)
    if key in _ALIASES and not overwrite:
        raise ValueError(f"dataset name {name!r} is already registered (pass overwrite=True)")

    spec = DatasetSpec(
        name=name,
        kind=Kind.NODE,
        description=description or f"custom dataset {name}",
        targets=tuple(targets),
        default_min_class_size=default_min_class_size,
        loader=loader,
        extra={"custom": True, "options": None},
    )
    _add(spec)
    return spec


def _missing(spec: DatasetSpec, where: Path) -> list[Path]:
    if spec.extra.get("mat_folder"):
        return [] if where.is_dir() and any(where.glob("*.mat")) else [where / "*.mat"]
    return [path for path in _raw_file_keys(spec, where).values() if not path.is_file()]


def locate_raw(
    spec: DatasetSpec,
    root: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool | None = None,
) -> Path:
    """The folder (or file) holding the raw files of ``spec``: ``<root>/<subpath>``, else the
    cache's ``<cache>/datasets/<subpath>``, which is also where a download goes (never into the
    root). Raises :class:`RawFilesNotFoundError`, saying where it looked and how to get them."""
    root_path = resolve_root(root)
    cache = resolve_cache_dir(cache_dir)
    candidates = []
    if root_path is not None:
        candidates.append(root_path / spec.subpath)
    cached = cache / "datasets" / spec.subpath
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

    Raw files are read from ``root`` (default ``$DPGNN_DATA``, read-only is fine); processed
    caches and downloads go to ``cache_dir``. ``download=None`` downloads only the datasets not
    shipped offline (Reddit, Amazon, PubMed, LastFM). ``kwargs`` are dataset options (e.g. the
    :func:`~lightning_dpgnn.data.make_csbm` parameters).

    Returns ``x``, ``edge_index`` (both directions for undirected graphs), ``y`` (``0..c-1``),
    ``node_id`` (each node's index in the raw dataset, what the default split is keyed on), the
    source's public split masks if any, and for Facebook100 ``label_values`` (the raw target
    value of each label). A raw file that cannot be parsed, or a graph that does not match the
    known dataset's counts, raises :class:`CorruptDataError` and writes nothing to the cache.
    """
    spec = get_spec(name, Kind.NODE)
    tgt = _resolve_target(spec, target)
    _check_options(spec, kwargs)
    if spec.extra.get("custom"):
        data = spec.loader(root=resolve_root(root), target=tgt, **kwargs)  # type: ignore[misc]
    elif not spec.needs_files:
        data = spec.loader(None, None, tgt, **kwargs)  # type: ignore[misc]
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
            lambda folder: spec.loader(raw, folder, tgt, **kwargs),  # type: ignore[misc]
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
    """Run ``load(cache folder)`` through the validated processed cache: a fresh read is compared
    with the known dataset (its counts with the default target and options, its raw-file digests
    always) before anything reaches the cache (:mod:`~lightning_dpgnn.data.validation`)."""
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
    """Load a TU graph-classification dataset (raw files in ``<root>/tudataset/<NAME>/raw``) as a
    PyG ``InMemoryDataset``; ``use_node_attr`` appends the continuous node attributes to ``x``,
    ``use_edge_attr`` loads edge attributes. The other arguments are :func:`load_dataset`'s."""
    spec = get_spec(name, Kind.GRAPH)
    raw = locate_raw(spec, root, cache_dir, download)
    cache = resolve_cache_dir(cache_dir)
    processed = _processed_dir(spec, raw, cache, use_node_attr, use_edge_attr)
    return _load_checked(
        spec,
        raw,
        processed,
        lambda folder: spec.loader(  # type: ignore[misc]
            raw, folder, use_node_attr=use_node_attr, use_edge_attr=use_edge_attr
        ),
        default=not (use_node_attr or use_edge_attr),
    )
