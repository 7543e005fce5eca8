"""Where raw data is read from (the data root, in the layout of ``../shared/datasets``; nothing
is written below it) and where processed caches (``<cache>/processed/``) and downloads
(``<cache>/datasets/``, laid out like a root) are written."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

DATA_ENV = "DPGNN_DATA"
CACHE_ENV = "DPGNN_CACHE"


def resolve_root(root: str | os.PathLike[str] | None) -> Path | None:
    """Return the data root: ``root`` if given, else ``$DPGNN_DATA``, else ``None``."""
    path = str(root or "") or os.environ.get(DATA_ENV, "")
    return Path(path).expanduser().resolve() if path else None


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Path:
    """Return the writable cache dir: ``cache_dir``, else ``$DPGNN_CACHE``, else the user cache."""
    path = str(cache_dir or "") or os.environ.get(CACHE_ENV, "") or "~/.cache/lightning_dpgnn"
    return Path(path).expanduser().resolve()


def fingerprint(paths: Iterable[Path], *extra: object) -> str:
    """Short hash of file paths, sizes and modification times plus ``extra`` values: the key of
    a processed cache, so that one built from other raw files (or options) is never reused."""
    h = hashlib.sha1()
    for p in sorted(Path(p) for p in paths):
        h.update(str(p).encode())
        try:
            st = p.stat()
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            h.update(b"missing")
    for e in extra:
        h.update(repr(e).encode())
    return h.hexdigest()[:12]
