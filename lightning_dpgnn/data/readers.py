"""Readers that turn raw dataset files into :class:`torch_geometric.data.Data`.

Each reader reads the raw files from their folder (possibly read-only) and writes processed files
only into a cache folder. Undirected graphs hold both directions, coalesced.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.datasets import LastFMAsia, Planetoid, Reddit, TUDataset
from torch_geometric.utils import coalesce, to_undirected

from .errors import CorruptCacheError, DataError, UnknownTargetError
from .validation import corrupt_file, reading

FACEBOOK100_COLUMNS: tuple[str, ...] = (
    "status", "gender", "major", "minor", "housing", "year", "high_school",
)  # fmt: skip
"""Columns of ``local_info`` in the Facebook100 ``.mat`` files (0 = missing)."""

FACEBOOK100_TARGETS: tuple[str, ...] = FACEBOOK100_COLUMNS[:6]
"""Columns that can be used as the prediction target (high school has too many values)."""

FACEBOOK100_FEATURES: tuple[str, ...] = ("status", "gender", "major", "minor", "housing")
"""The papers' feature columns (thesis §4.7.1)."""

FACEBOOK100_CODEBOOK: dict[str, int] = {
    "status": 12, "gender": 3, "major": 600, "minor": 600, "housing": 600,
}
"""Public code-book sizes (codes ``1..size-1``) of ``vocabulary="public"``: above every code of
the published dataset, fixed before looking at any graph."""

FACEBOOK100_VOCABULARIES = ("data", "public")


class _RedirectDirs:
    """Mixin for a PyG dataset: raw files are read from ``raw_dir`` and processed files written
    to ``processed_dir`` (a cache), never next to the raw files."""

    _raw_dir: str
    _processed_dir: str

    def __init__(self, raw_dir: Path, processed_dir: Path, *args: Any, **kwargs: Any) -> None:
        self._raw_dir, self._processed_dir = str(raw_dir), str(processed_dir)
        super().__init__(str(processed_dir.parent), *args, **kwargs)

    raw_dir = property(lambda self: self._raw_dir)
    processed_dir = property(lambda self: self._processed_dir)


class _Planetoid(_RedirectDirs, Planetoid):
    pass


class _Reddit(_RedirectDirs, Reddit):
    pass


class _LastFMAsia(_RedirectDirs, LastFMAsia):
    pass


class CachedTUDataset(_RedirectDirs, TUDataset):
    """:class:`~torch_geometric.datasets.TUDataset` with redirected raw/processed folders."""


def _load_cache(path: Path, mmap: bool = False) -> dict[str, Any] | None:
    """The cached tensors (``mmap=True``: memory-mapped), ``None`` when not built yet; cache
    files are written into the entry's temporary folder (validation.cached_build)."""
    if not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True, mmap=mmap)
    except Exception as err:
        raise CorruptCacheError(f"{path}: {err}") from err


def _read_csv(path: Path, **kwargs: Any) -> pd.DataFrame:
    with reading(path):
        return pd.read_csv(path, **kwargs)


def load_mat(path: Path, names: list[str]) -> dict[str, Any]:
    """``scipy.io.loadmat`` of ``names``, with an error naming the file when it is damaged."""
    with reading(path):
        mat = scipy.io.loadmat(str(path), variable_names=names)
    missing = [n for n in names if n not in mat]
    if missing:
        raise corrupt_file(path, f"no variable {', '.join(missing)}")
    return mat


def _int_rows(frame: pd.DataFrame, path: Path, low: int, high: int) -> np.ndarray:
    """The integer table ``frame`` read from ``path``, every value in ``[low, high)``; else an
    error naming the first bad line."""
    numbers = frame.apply(pd.to_numeric, errors="coerce")  # not a number: NaN
    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        ok = (values == np.round(values)) & (values >= low) & (values < high)  # NaN: False
    bad = ~ok.all(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = ",".join(
            "" if pd.isna(v) else str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
            for v in frame.iloc[row].tolist()
        )
        raise corrupt_file(path, f"expected integers in [{low}, {high}), got {shown!r}", row + 2)
    return values.astype(np.int64)


def read_musae(raw_dir: Path, processed_dir: Path, target: str, id_column: str) -> Data:
    """Read a MUSAE graph (``edges.csv``, ``features.json``, ``target.csv``): dense binary
    ``x``, ``y`` from the categorical or boolean ``target`` column, and an undirected
    ``edge_index``. ``id_column`` holds the node ids (``id`` for Facebook, ``new_id`` for Twitch).
    """
    cache_file = processed_dir / f"musae-{target}.pt"
    cached = _load_cache(cache_file)
    if cached is None:
        frame = _read_csv(raw_dir / "target.csv")
        if target not in frame.columns or id_column not in frame.columns:
            raise UnknownTargetError(
                f"target {target!r} not found in {raw_dir / 'target.csv'}; "
                f"columns there: {list(frame.columns)}"
            )
        num_nodes = len(frame)
        ids = _int_rows(frame[[id_column]], raw_dir / "target.csv", 0, num_nodes)[:, 0]
        if not np.array_equal(np.sort(ids), np.arange(num_nodes)):
            raise DataError(f"{raw_dir / 'target.csv'}: column {id_column!r} is not 0..N-1")
        y = np.empty(num_nodes, dtype=np.int64)
        if frame[target].dtype == bool:  # False/True -> 0/1 even when one value is absent
            y[ids] = frame[target].to_numpy()
        else:
            y[ids] = pd.factorize(frame[target], sort=True)[0]

        edges_csv = raw_dir / "edges.csv"
        edges = _int_rows(_read_csv(edges_csv), edges_csv, 0, num_nodes)
        if edges.shape[1] != 2:
            raise corrupt_file(edges_csv, f"expected 2 columns, got {edges.shape[1]}")
        edge_index = to_undirected(torch.from_numpy(edges.T.copy()), num_nodes=num_nodes)

        features_json = raw_dir / "features.json"
        with reading(features_json), open(features_json) as fh:
            feats: dict[str, list[int]] = json.load(fh)
            lengths = np.fromiter((len(v) for v in feats.values()), np.int64, len(feats))
            rows = np.repeat(np.fromiter(map(int, feats.keys()), np.int64, len(feats)), lengths)
            cols = np.fromiter(
                (c for v in feats.values() for c in v), dtype=np.int64, count=int(lengths.sum())
            )
        if rows.size and (rows.min() < 0 or rows.max() >= num_nodes or cols.min() < 0):
            raise corrupt_file(features_json, f"a node id outside 0..{num_nodes - 1}")
        num_features = int(cols.max()) + 1 if cols.size else 0
        cached = {
            "edge_index": edge_index,
            "y": torch.from_numpy(y),
            "feat_rows": torch.from_numpy(rows),
            "feat_cols": torch.from_numpy(cols),
            "num_features": torch.tensor(num_features),
        }
        torch.save(cached, cache_file)

    num_nodes = cached["y"].numel()
    x = torch.zeros(num_nodes, int(cached["num_features"]), dtype=torch.float)
    x[cached["feat_rows"], cached["feat_cols"]] = 1.0
    return Data(x=x, edge_index=cached["edge_index"], y=cached["y"])


def _check_facebook100_target(target: str) -> None:
    if target not in FACEBOOK100_TARGETS:
        raise UnknownTargetError(
            f"target {target!r} is not a Facebook100 target; "
            f"valid targets: {list(FACEBOOK100_TARGETS)}"
        )


def _check_facebook100_columns(
    target: str, features: Sequence[str], vocabulary: str
) -> list[int]:
    _check_facebook100_target(target)
    if vocabulary not in FACEBOOK100_VOCABULARIES:
        raise ValueError(
            f"vocabulary must be one of {FACEBOOK100_VOCABULARIES}, got {vocabulary!r}"
        )
    features = [str(f) for f in features]
    unknown = [f for f in features if f not in FACEBOOK100_COLUMNS]
    if unknown or not features or len(set(features)) != len(features):
        raise ValueError(
            f"features must be distinct Facebook100 columns from {list(FACEBOOK100_COLUMNS)}, "
            f"got {features}"
        )
    if vocabulary == "public":
        no_book = [f for f in features if f not in FACEBOOK100_CODEBOOK]
        if no_book:
            raise ValueError(
                f"vocabulary='public' has a public code book for {list(FACEBOOK100_CODEBOOK)} "
                f"only, not for {no_book}"
            )
    return [FACEBOOK100_COLUMNS.index(f) for f in features if f != target]


def _one_hot_columns(
    info: np.ndarray, columns: list[int], vocabulary: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Row and column indices of the one-hot encoding of ``columns`` of ``info`` (0 = missing)
    and its width: one column per value present, or per code of the public code book."""
    rows, cols, width = [], [], 0
    node_ids = np.arange(info.shape[0])
    for j in columns:
        col = info[:, j]
        present = col != 0
        if vocabulary == "data":
            values, inv = np.unique(col[present], return_inverse=True)
            size = len(values)
        else:
            size = FACEBOOK100_CODEBOOK[FACEBOOK100_COLUMNS[j]]
            inv = col[present]
            if inv.size and (int(inv.max()) >= size or int(inv.min()) < 0):
                raise DataError(
                    f"Facebook100 column {FACEBOOK100_COLUMNS[j]!r} has a code outside the "
                    f"public code book 1..{size - 1}; use vocabulary='data'"
                )
            inv = inv - 1  # code c -> column c-1 (code 0 is "missing")
            size -= 1
        rows.append(node_ids[present])
        cols.append(inv + width)
        width += size
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    return np.concatenate(rows), np.concatenate(cols), width


def read_facebook100(
    path: Path,
    target: str,
    features: Sequence[str] = FACEBOOK100_FEATURES,
    vocabulary: str = "data",
) -> Data:
    """Read one Facebook100 school (``<School>.mat``: adjacency ``A``, ``local_info`` columns
    :data:`FACEBOOK100_COLUMNS`, 0 = missing).

    Nodes whose ``target`` is missing are dropped with their edges (a function of each node's
    own data); labels are the sorted distinct target values; ``node_id`` is each kept node's row
    in the file and ``label_values`` the raw target value of every label. Features are the
    one-hot encodings of the ``features`` columns other than the target, all-zero when missing:
    ``vocabulary="data"`` has one column per value present (the papers' encoding: the layout
    depends on the data, a private read at node level), ``"public"`` the public code book
    :data:`FACEBOOK100_CODEBOOK`.
    """
    columns = _check_facebook100_columns(target, features, vocabulary)
    mat = load_mat(path, ["A", "local_info"])
    info = np.asarray(mat["local_info"], dtype=np.int64)
    t = FACEBOOK100_COLUMNS.index(target)
    keep = info[:, t] != 0
    info = info[keep]
    label_values, y = np.unique(info[:, t], return_inverse=True)
    num_nodes = info.shape[0]
    rows, cols, width = _one_hot_columns(info, columns, vocabulary)
    x = torch.zeros(num_nodes, width, dtype=torch.float)
    x[torch.from_numpy(rows), torch.from_numpy(cols)] = 1.0

    adj = sp.csr_matrix(mat["A"])[keep][:, keep].tocoo()
    edge_index = torch.from_numpy(np.vstack([adj.row, adj.col]).astype(np.int64))
    edge_index = coalesce(edge_index, num_nodes=num_nodes)
    return Data(
        x=x,
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
        node_id=torch.from_numpy(np.flatnonzero(keep).astype(np.int64)),
        label_values=torch.from_numpy(label_values.astype(np.int64)),
    )


FACEBOOK100_MERGED_EXCLUDED = ("high_school",)
"""Left out of the merged graph's features (tens of thousands of per-school codes)."""


def read_facebook100_merged(folder: Path, processed_dir: Path | None, target: str) -> Data:
    """All Facebook100 schools in ``folder`` as one graph ("FB-100" of ProGAP, Table 5.1).

    Schools are stacked block-diagonally in name order, as :func:`read_facebook100` reads one
    (``node_id`` offset by the schools before), with one-hot features over the codes pooled
    across schools (all columns but :data:`FACEBOOK100_MERGED_EXCLUDED`), kept as a sparse COO
    float32 matrix (dense: 4.2 GB at FB-scale). It is cached in ``processed_dir`` as int32 CSR
    tensors, read back memory-mapped.
    """
    _check_facebook100_target(target)
    files = sorted(Path(folder).glob("*.mat"))
    if not files:
        raise DataError(f"no Facebook100 .mat files in {folder}")
    cache_file = None if processed_dir is None else Path(processed_dir) / f"merged-{target}.pt"
    cached = None if cache_file is None else _load_cache(cache_file, mmap=True)
    if cached is None:
        cached = _merge_facebook100(files, target)
        if cache_file is not None:
            torch.save(cached, cache_file)
    return _merged_graph(cached)


def _merge_facebook100(files: list[Path], target: str) -> dict[str, Tensor]:
    """The merged graph of ``files`` as CSR tensors (see :func:`read_facebook100_merged`)."""
    t = FACEBOOK100_COLUMNS.index(target)
    feature_cols = [
        j
        for j, c in enumerate(FACEBOOK100_COLUMNS)
        if j != t and c not in FACEBOOK100_MERGED_EXCLUDED
    ]
    infos, node_ids, degrees, cols = [], [], [], []
    offset = raw_offset = 0
    for f in files:
        mat = load_mat(f, ["A", "local_info"])
        info = np.asarray(mat["local_info"], dtype=np.int64)
        keep = info[:, t] != 0
        adj = sp.csr_matrix(mat["A"])[keep][:, keep]  # the edges in the order of its CSR
        del mat  # the raw structures go as soon as the school is read
        degrees.append(np.diff(adj.indptr))
        cols.append(adj.indices.astype(np.int32) + np.int32(offset))
        del adj
        infos.append(info[keep])
        node_ids.append(np.flatnonzero(keep) + raw_offset)
        offset += int(keep.sum())
        raw_offset += info.shape[0]
    info = np.concatenate(infos)
    label_values, y = np.unique(info[:, t], return_inverse=True)
    frows, fcol, width = _one_hot_columns(info, feature_cols, "data")
    order = np.lexsort((fcol, frows))  # row-major: the CSR order of the feature matrix
    num_nodes = info.shape[0]
    rowptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.concatenate(degrees), out=rowptr[1:])
    feat_rowptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(frows, minlength=num_nodes), out=feat_rowptr[1:])
    return {
        "rowptr": torch.from_numpy(rowptr),
        "col": torch.from_numpy(np.concatenate(cols)),
        "y": torch.from_numpy(y.astype(np.int64)),
        "feat_rowptr": torch.from_numpy(feat_rowptr),
        "feat_col": torch.from_numpy(fcol[order].astype(np.int32)),
        "num_features": torch.tensor(width),
        "node_id": torch.from_numpy(np.concatenate(node_ids).astype(np.int64)),
        "label_values": torch.from_numpy(label_values.astype(np.int64)),
    }


def _csr_rows(rowptr: Tensor) -> Tensor:
    """The row index of every entry of a CSR matrix with row pointers ``rowptr``."""
    n = rowptr.numel() - 1
    return torch.repeat_interleave(torch.arange(n), rowptr.diff(), output_size=int(rowptr[-1]))


def _merged_graph(cached: dict[str, Tensor]) -> Data:
    """``Data`` of the cached CSR tensors (features: a coalesced sparse COO matrix)."""
    num_nodes = cached["y"].numel()
    edge_index = torch.empty(2, cached["col"].numel(), dtype=torch.long)
    edge_index[0] = _csr_rows(cached["rowptr"])
    edge_index[1] = cached["col"]
    feat_col = cached["feat_col"]
    indices = torch.stack([_csr_rows(cached["feat_rowptr"]), feat_col.long()])
    x = torch.sparse_coo_tensor(
        indices,
        torch.ones(feat_col.numel()),
        (num_nodes, int(cached["num_features"])),
        is_coalesced=True,  # row-major and distinct by construction
        check_invariants=False,
    )
    return Data(
        x=x,
        edge_index=edge_index,
        y=cached["y"].clone(),
        node_id=cached["node_id"].clone(),
        label_values=cached["label_values"].clone(),
    )


OGB_PRODUCTS_FILES: tuple[str, ...] = (
    "raw/edge.csv.gz", "raw/node-feat.csv.gz", "raw/node-label.csv.gz",
    "split/sales_ranking/train.csv.gz", "split/sales_ranking/valid.csv.gz",
    "split/sales_ranking/test.csv.gz",
)  # fmt: skip
"""Files of the extracted OGB ``products.zip`` that :func:`read_ogbn_products` needs."""


def read_ogbn_products(raw_dir: Path, processed_dir: Path) -> Data:
    """Read the GAP/ProGAP "Amazon" graph ``ogbn-products`` from the extracted ``products/``
    folder of OGB's ``products.zip`` (cached as tensors), with OGB's sales-ranking split as
    ``train_mask``/``val_mask``/``test_mask``."""
    cache_file = processed_dir / "ogbn-products.pt"
    cached = _load_cache(cache_file)
    if cached is None:

        def csv(name: str, dtype: Any) -> np.ndarray:
            with reading(raw_dir / name):
                frame = pd.read_csv(raw_dir / name, header=None, dtype=dtype)
            return frame.to_numpy(copy=True)

        x = torch.from_numpy(csv("raw/node-feat.csv.gz", np.float32))
        y = torch.from_numpy(csv("raw/node-label.csv.gz", np.int64)).view(-1)
        num_nodes = y.numel()
        edges = torch.from_numpy(csv("raw/edge.csv.gz", np.int64).T.copy())
        edge_index = to_undirected(edges, num_nodes=num_nodes)
        cached = {"x": x, "y": y, "edge_index": edge_index}
        for split, key in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            idx = torch.from_numpy(csv(f"split/sales_ranking/{split}.csv.gz", np.int64)).view(-1)
            mask = torch.zeros(num_nodes, dtype=torch.bool)
            mask[idx] = True
            cached[key] = mask
        torch.save(cached, cache_file)
    return Data(**cached)
