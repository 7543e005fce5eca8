"""Corrupted or partial raw files: a named error and nothing in the processed cache; a damaged
cache entry is rebuilt, never loaded silently. Corrupted copies are built in temporary folders
from small real files (the shared datasets are never modified)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import torch

from lightning_dpgnn.data import CorruptDataError, load_dataset
from lightning_dpgnn.data.validation import MANIFEST


def _copy(data_root: Path, sub: str, dest_root: Path) -> Path:
    src, dest = data_root / sub, dest_root / sub
    dest.parent.mkdir(parents=True, exist_ok=True)
    (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dest)
    return dest


def _cache_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file()]


@pytest.fixture
def twitch(data_root: Path, tmp_path: Path) -> Path:
    """A writable copy of the Twitch EN raw files (root ``tmp_path/root``)."""
    return _copy(data_root, "musae/twitch_en", tmp_path / "root")


def test_truncated_mat_is_named_and_not_cached(data_root: Path, tmp_path: Path) -> None:
    mat = _copy(data_root, "facebook100/Caltech36.mat", tmp_path / "root")
    mat.write_bytes(mat.read_bytes()[: mat.stat().st_size // 2])
    cache = tmp_path / "cache"
    with pytest.raises(CorruptDataError, match=r"Caltech36\.mat: cannot read this file") as err:
        load_dataset("facebook100/Caltech36", root=tmp_path / "root", cache_dir=cache)
    assert "fresh copy" in str(err.value)
    assert _cache_files(cache) == []


def test_edges_csv_with_a_partial_last_line(twitch: Path, tmp_path: Path) -> None:
    lines = (twitch / "edges.csv").read_text().splitlines()
    (twitch / "edges.csv").write_text("\n".join(lines[:100]) + "\n2134,")
    cache = tmp_path / "cache"
    with pytest.raises(CorruptDataError, match=r"edges\.csv, line 101: cannot read") as err:
        load_dataset("twitch", root=tmp_path / "root", cache_dir=cache)
    assert "'2134,'" in str(err.value)
    assert _cache_files(cache) == []


def test_edges_csv_cut_at_a_line_boundary(twitch: Path, tmp_path: Path) -> None:
    lines = (twitch / "edges.csv").read_text().splitlines()
    (twitch / "edges.csv").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    cache = tmp_path / "cache"
    with pytest.raises(CorruptDataError, match="does not match the known dataset") as err:
        load_dataset("twitch", root=tmp_path / "root", cache_dir=cache)
    message = str(err.value)
    assert "(expected 70,648)" in message  # the edge count
    assert f"{twitch / 'edges.csv'} (" in message and "the known copy has 342,162" in message
    assert _cache_files(cache) == []


def test_same_counts_other_bytes_warns(twitch: Path, tmp_path: Path) -> None:
    lines = (twitch / "edges.csv").read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]  # same edges, same size, other bytes
    (twitch / "edges.csv").write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="same size, different SHA-256"):
        data = load_dataset("twitch", root=tmp_path / "root", cache_dir=tmp_path / "cache")
    assert data.edge_index.size(1) == 70_648


def test_damaged_cache_entry_is_rebuilt(
    data_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    first = load_dataset("twitch", root=data_root, cache_dir=cache)
    (entry,) = (cache / "processed").iterdir()
    assert (entry / MANIFEST).is_file()
    (tensors,) = entry.glob("*.pt")
    tensors.write_bytes(tensors.read_bytes()[:1000])  # truncated cache file
    with caplog.at_level(logging.WARNING):
        again = load_dataset("twitch", root=data_root, cache_dir=cache)
    assert "processed cache is damaged" in caplog.text
    assert torch.equal(again.edge_index, first.edge_index) and torch.equal(again.x, first.x)

    (entry / MANIFEST).unlink()  # an entry without a manifest is incomplete
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_dataset("twitch", root=data_root, cache_dir=cache)
    assert "no readable manifest.json" in caplog.text
    assert (entry / MANIFEST).is_file()
