"""Checks that keep corrupted or partial data out of the processed cache.

A raw-file parse error becomes a :class:`~.errors.CorruptDataError` naming the file (and line).
A fresh read of a known dataset is compared with its counts and raw-file digests, measured from
the shared copy (``known_datasets.json``, by ``benchmarks/measure_datasets.py``): other counts
are refused, other bytes with the same counts only warn. A cache entry is built in a temporary
folder and renamed into place after these checks, with a ``manifest.json`` of its counts and
file sizes; an entry that does not match its manifest is rebuilt, never loaded silently.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from torch_geometric.data import Data, InMemoryDataset

from .errors import CorruptCacheError, CorruptDataError, DataError

log = logging.getLogger(__name__)

KNOWN_FILE = Path(__file__).with_name("known_datasets.json")
"""Expected counts (by dataset name) and raw-file digests (by path under the data root)."""

MANIFEST = "manifest.json"
"""Written last into a cache entry; an entry without it is incomplete and gets rebuilt."""

_FORMAT = 1
_REPLACE = (
    "replace it with a fresh copy of the dataset and run again (nothing was written to the "
    "processed cache)."
)

T = TypeVar("T")


@functools.cache
def known_datasets() -> dict[str, dict[str, Any]]:
    """``{"counts": {name: counts}, "files": {path under the root: {"size", "sha256"}}}``."""
    if not KNOWN_FILE.is_file():
        return {"counts": {}, "files": {}}
    return json.loads(KNOWN_FILE.read_text())


def file_digest(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of a file."""
    with open(path, "rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    return {"size": path.stat().st_size, "sha256": sha256}


def graph_counts(data: Data | InMemoryDataset) -> dict[str, int]:
    """Counts that identify a loaded dataset: nodes, directed edges, features and classes of a
    graph; number of graphs, features and classes of a graph-classification dataset."""
    if isinstance(data, InMemoryDataset):
        return {
            "graphs": len(data),
            "features": int(data.num_features),
            "classes": int(data.num_classes),
        }
    counts = {"nodes": int(data.num_nodes), "edges": int(data.edge_index.size(1))}
    if getattr(data, "x", None) is not None:
        counts["features"] = int(data.x.size(1))
    if getattr(data, "y", None) is not None and data.y.numel():
        counts["classes"] = int(data.y.max()) + 1
    return counts


def corrupt_file(path: Path, problem: object, line: int | None = None) -> CorruptDataError:
    """The error for a raw file that cannot be parsed."""
    where = f"{path}, line {line}" if line else str(path)
    return CorruptDataError(
        f"{where}: cannot read this file ({problem}). It is truncated or damaged: {_REPLACE}"
    )


def _line_of(err: BaseException) -> int | None:
    line = getattr(err, "lineno", None)
    if isinstance(line, int):
        return line
    match = re.search(r"\bline (\d+)", str(err))
    return int(match.group(1)) if match else None


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Re-raise any parse error inside the block as :class:`CorruptDataError` naming ``path``."""
    try:
        yield
    except DataError:
        raise
    except Exception as err:
        raise corrupt_file(path, f"{type(err).__name__}: {err}", _line_of(err)) from err


def _differing(files: Mapping[str, Path]) -> list[str]:
    """Descriptions of the raw files that differ from their known digest."""
    known = known_datasets()["files"]
    out = []
    for key, path in files.items():
        want = known.get(key)
        if want is None or not path.is_file():
            continue
        size = path.stat().st_size
        if size != want["size"]:
            out.append(f"{path} ({size:,} bytes, the known copy has {want['size']:,})")
        elif file_digest(path)["sha256"] != want["sha256"]:
            out.append(f"{path} (same size, different SHA-256)")
    return out


def _hint(differ: list[str]) -> str:
    return f" Files that differ from the known copy: {'; '.join(differ)}." if differ else ""


def check_known(name: str, files: Mapping[str, Path], counts: Mapping[str, int] | None) -> None:
    """Compare a freshly read dataset (its raw ``files`` by path under the data root, its
    :func:`graph_counts`, ``None`` with non-default options) with the known one: other counts
    raise :class:`CorruptDataError`, raw files that differ only warn."""
    expected = known_datasets()["counts"].get(name) if counts is not None else None
    wrong = [
        f"{key} {counts.get(key, 0):,} (expected {value:,})"
        for key, value in (expected or {}).items()
        if counts is not None and counts.get(key) != value
    ]
    differ = _differing(files)
    if wrong:
        raise CorruptDataError(
            f"dataset {name!r} does not match the known dataset: {', '.join(wrong)}."
            f"{_hint(differ)} A raw file is incomplete or altered: {_REPLACE}"
        )
    if differ:
        warnings.warn(
            f"dataset {name!r}: {'; '.join(differ)} differs from the copy the package was "
            "measured on (the loaded counts agree); results may not match the documented ones",
            stacklevel=3,
        )


def _cache_files(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def _check_entry(folder: Path) -> dict[str, Any]:
    """The manifest of a complete cache entry (raises :class:`CorruptCacheError` otherwise)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as err:
        raise CorruptCacheError(
            f"{folder}: no readable {MANIFEST} (incomplete, or written by an older version)"
        ) from err
    if manifest.get("format") != _FORMAT:
        raise CorruptCacheError(f"{folder}: cache format {manifest.get('format')!r}")
    if _cache_files(folder) != manifest["files"]:
        raise CorruptCacheError(f"{folder}: files differ from the manifest")
    return manifest


def corrupt_dataset(name: str, raw: Path, files: Mapping[str, Path], err: Exception):
    """The error for a dataset whose reader failed on a file it did not name."""
    hint = _hint(_differing(files)) or f" Check the files in {raw}."
    return CorruptDataError(
        f"cannot read dataset {name!r} from {raw} ({type(err).__name__}: {err}).{hint} A raw "
        f"file is truncated or damaged: {_REPLACE}"
    )


def cached_build(
    entry: Path,
    load: Callable[[Path], T],
    validate: Callable[[T], None],
    on_error: Callable[[Exception], Exception],
) -> T:
    """Load the processed-cache folder ``entry`` or build it, never keeping unchecked data:
    ``load(folder)`` reads the raw files, reading or writing its processed files in ``folder``.
    A build runs in a temporary folder, renamed to ``entry`` once ``validate(data)`` passed
    (errors other than :class:`DataError` re-raised as ``on_error(err)``); a damaged entry is
    rebuilt."""
    if entry.exists():
        try:
            manifest = _check_entry(entry)
            data = load(entry)
            if graph_counts(data) != manifest["counts"]:
                raise CorruptCacheError(f"{entry}: loaded counts differ from the manifest")
            return data
        except CorruptCacheError as err:
            log.warning("processed cache is damaged (%s); rebuilding it", err)
        except DataError:
            raise
        except Exception as err:  # unreadable cache files
            log.warning("processed cache %s is unreadable (%s); rebuilding it", entry, err)
        shutil.rmtree(entry, ignore_errors=True)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}.tmp-"))
    try:
        try:
            data = load(tmp)
        except DataError:
            raise
        except Exception as err:
            raise on_error(err) from err
        validate(data)
        manifest = {"format": _FORMAT, "counts": graph_counts(data), "files": _cache_files(tmp)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        try:
            os.rename(tmp, entry)
        except OSError:  # another process built the same entry first; keep theirs
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return data
