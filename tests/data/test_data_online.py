"""Loaders of the online-only datasets (Reddit, Amazon, PubMed, LastFM) on tiny raw files.

The tests write minimal raw files in each source's own format into a temp dir, so the real
readers run without any download. The download path itself is exercised by replacing the
downloader with one that writes the tiny files (the network is blocked in conftest).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

from lightning_dpgnn.data import NodeDataModule, load_dataset, readers, registry

RNG = np.random.default_rng(0)


def _random_edges(n: int, e: int) -> np.ndarray:
    edges = RNG.integers(0, n, size=(e, 2))
    return edges[edges[:, 0] != edges[:, 1]]


def write_reddit(raw: Path, n: int = 60, f: int = 6, c: int = 4) -> dict[str, np.ndarray]:
    """``reddit_data.npz`` (feature, label, node_types) and ``reddit_graph.npz`` (scipy COO)."""
    raw.mkdir(parents=True, exist_ok=True)
    feature = RNG.normal(size=(n, f)).astype(np.float32)
    label = RNG.integers(0, c, size=n)
    node_types = RNG.integers(1, 4, size=n)
    np.savez(raw / "reddit_data.npz", feature=feature, label=label, node_types=node_types)
    e = _random_edges(n, 200)
    e = np.unique(np.concatenate([e, e[:, ::-1]]), axis=0)
    adj = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    sp.save_npz(raw / "reddit_graph.npz", adj)
    return {"x": feature, "y": label, "edges": e, "types": node_types}


def write_lastfm(raw: Path, n: int = 50, f: int = 8, c: int = 5) -> dict[str, np.ndarray]:
    """``lastfm_asia.npz`` with ``features``, ``target``, ``edges`` (E x 2)."""
    raw.mkdir(parents=True, exist_ok=True)
    features = (RNG.random((n, f)) < 0.3).astype(np.float32)
    target = RNG.integers(0, c, size=n)
    e = _random_edges(n, 150)
    e = np.unique(np.concatenate([e, e[:, ::-1]]), axis=0)
    np.savez(raw / "lastfm_asia.npz", features=features, target=target, edges=e)
    return {"x": features, "y": target, "edges": e}


def write_pubmed(raw: Path, n: int = 600, f: int = 5, c: int = 3) -> dict[str, np.ndarray]:
    """Planetoid ``ind.pubmed.*`` pickles (PyG needs >= len(y) + 500 nodes for its val mask)."""
    raw.mkdir(parents=True, exist_ok=True)
    feats = RNG.random((n, f)).astype(np.float32)
    labels = RNG.integers(0, c, size=n)
    onehot = np.eye(c, dtype=np.int64)[labels]
    n_all, n_train = 560, 20
    test_index = RNG.permutation(np.arange(n_all, n))  # unsorted on purpose

    def dump(name: str, obj: object) -> None:
        with open(raw / f"ind.pubmed.{name}", "wb") as fh:
            pickle.dump(obj, fh)

    dump("x", sp.csr_matrix(feats[:n_train]))
    dump("y", onehot[:n_train])
    dump("allx", sp.csr_matrix(feats[:n_all]))
    dump("ally", onehot[:n_all])
    dump("tx", sp.csr_matrix(feats[test_index]))
    dump("ty", onehot[test_index])
    edges = _random_edges(n, 1500)
    graph: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in edges.tolist():
        graph[a].append(b)
        graph[b].append(a)
    dump("graph", graph)
    (raw / "ind.pubmed.test.index").write_text("\n".join(map(str, test_index.tolist())) + "\n")
    und = np.unique(np.concatenate([edges, edges[:, ::-1]]), axis=0)
    return {"x": feats, "y": labels, "edges": und}


def write_ogbn_products(folder: Path, n: int = 80, f: int = 4, c: int = 6) -> dict:
    """OGB ``products/`` layout: raw/*.csv.gz (no header) and split/sales_ranking/*.csv.gz."""
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    (folder / "split" / "sales_ranking").mkdir(parents=True, exist_ok=True)
    feats = RNG.normal(size=(n, f)).astype(np.float32)
    labels = RNG.integers(0, c, size=n)
    edges = np.unique(np.sort(_random_edges(n, 300), axis=1), axis=0)  # each edge once

    def csv(rel: str, arr: np.ndarray) -> None:
        pd.DataFrame(arr).to_csv(folder / rel, header=False, index=False, compression="gzip")

    csv("raw/node-feat.csv.gz", feats)
    csv("raw/node-label.csv.gz", labels.reshape(-1, 1))
    csv("raw/edge.csv.gz", edges)
    csv("raw/num-node-list.csv.gz", np.array([[n]]))
    csv("raw/num-edge-list.csv.gz", np.array([[len(edges)]]))
    perm = RNG.permutation(n)
    parts = {"train": perm[:50], "valid": perm[50:60], "test": perm[60:]}
    for name, idx in parts.items():
        csv(f"split/sales_ranking/{name}.csv.gz", idx.reshape(-1, 1))
    und = np.unique(np.concatenate([edges, edges[:, ::-1]]), axis=0)
    return {"x": feats, "y": labels, "edges": und, "parts": parts}


def _edge_set(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return set(zip(edge_index[0].tolist(), edge_index[1].tolist(), strict=True))


def _np_edge_set(edges: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in edges}


# ------------------------------------------------------------------ readers on tiny raw files
def test_reddit_tiny(tmp_path: Path) -> None:
    truth = write_reddit(tmp_path / "root" / "reddit" / "raw")
    data = load_dataset("reddit", root=tmp_path / "root", cache_dir=tmp_path / "cache")
    assert torch.allclose(data.x, torch.from_numpy(truth["x"]))
    assert torch.equal(data.y, torch.from_numpy(truth["y"]))
    assert _edge_set(data.edge_index) == _np_edge_set(truth["edges"])
    assert torch.equal(data.train_mask, torch.from_numpy(truth["types"] == 1))
    assert not (tmp_path / "root" / "reddit" / "processed").exists()
    assert any((tmp_path / "cache" / "processed").rglob("data.pt"))
    dm = NodeDataModule(
        "reddit", root=str(tmp_path / "root"), cache_dir=str(tmp_path / "cache"), min_class_size=0
    )
    assert dm.num_features == 6 and dm.num_nodes <= 60


def test_reddit_default_class_filter(tmp_path: Path) -> None:
    write_reddit(tmp_path / "reddit" / "raw")
    # GAP keeps Reddit classes with >= 10,000 nodes: nothing survives on 60 nodes
    with pytest.raises(ValueError, match="removes every class"):
        NodeDataModule("reddit", root=str(tmp_path), cache_dir=str(tmp_path / "c")).setup()


def test_lastfm_tiny(tmp_path: Path) -> None:
    truth = write_lastfm(tmp_path / "lastfm" / "raw")
    data = load_dataset("LastFM", root=tmp_path, cache_dir=tmp_path / "cache")
    assert torch.equal(data.x, torch.from_numpy(truth["x"]))
    assert torch.equal(data.y, torch.from_numpy(truth["y"]))
    assert _edge_set(data.edge_index) == _np_edge_set(truth["edges"])
    dm = NodeDataModule(
        "lastfm-asia",
        root=str(tmp_path),
        cache_dir=str(tmp_path / "cache"),
        split="lpgnn",
        split_by="position",
    )
    assert dm.num_features == 8
    assert abs(dm.dataset_info()["num_train"] - dm.num_nodes * 0.5) <= 1


def test_pubmed_tiny(tmp_path: Path) -> None:
    truth = write_pubmed(tmp_path / "planetoid" / "PubMed" / "raw")
    data = load_dataset("pubmed", root=tmp_path, cache_dir=tmp_path / "cache")
    assert data.num_nodes == 600
    assert torch.allclose(data.x, torch.from_numpy(truth["x"]))
    assert torch.equal(data.y, torch.from_numpy(truth["y"]))
    assert _edge_set(data.edge_index) == _np_edge_set(truth["edges"])
    assert int(data.train_mask.sum()) == 20 and int(data.test_mask.sum()) == 40


def test_amazon_ogbn_products_tiny(tmp_path: Path) -> None:
    truth = write_ogbn_products(tmp_path / "amazon" / "products")
    data = load_dataset("amazon", root=tmp_path, cache_dir=tmp_path / "cache")
    assert torch.allclose(data.x, torch.from_numpy(truth["x"]))
    assert torch.equal(data.y, torch.from_numpy(truth["y"]))
    assert _edge_set(data.edge_index) == _np_edge_set(truth["edges"])  # both directions
    train = torch.tensor(sorted(truth["parts"]["train"]))
    assert torch.equal(data.train_mask.nonzero().view(-1), train)
    assert int(data.val_mask.sum()) == 10 and int(data.test_mask.sum()) == 20
    # second load comes from the tensor cache
    cached = list((tmp_path / "cache" / "processed").rglob("ogbn-products.pt"))
    assert len(cached) == 1
    again = load_dataset("ogbn-products", root=tmp_path, cache_dir=tmp_path / "cache")
    assert torch.equal(again.edge_index, data.edge_index)
    cache = str(tmp_path / "cache")
    dm = NodeDataModule("amazon", str(tmp_path), cache_dir=cache, min_class_size=0, split="public")
    assert dm.num_features == 4
    assert int(dm.data.train_mask.sum()) <= 50


# ------------------------------------------------------------------ download path
def _fake_downloader(writer: Callable[[Path], object], calls: list[str]) -> Callable:
    def download(self: object) -> None:
        calls.append(self.raw_dir)  # type: ignore[attr-defined]
        writer(Path(self.raw_dir))  # type: ignore[attr-defined]

    return download


@pytest.mark.parametrize(
    ("name", "cls", "writer", "subpath"),
    [
        ("reddit", readers._Reddit, write_reddit, "reddit/raw"),
        ("lastfm", readers._LastFMAsia, write_lastfm, "lastfm/raw"),
        ("pubmed", readers._Planetoid, write_pubmed, "planetoid/PubMed/raw"),
    ],
)
def test_online_datasets_download_into_cache(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data_root: Path,
    name: str,
    cls: type,
    writer: Callable[[Path], object],
    subpath: str,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(cls, "download", _fake_downloader(writer, calls))
    cache = tmp_path / "cache"
    # the shared root does not ship these datasets: they are downloaded into the cache dir
    data = load_dataset(name, root=data_root, cache_dir=cache)
    assert calls == [str(cache / "datasets" / subpath)]
    assert data.num_nodes > 0
    assert not (data_root / subpath).exists()
    # second time the cached download is found: no new download
    load_dataset(name, cache_dir=cache)
    assert len(calls) == 1
    # download=False never downloads
    with pytest.raises(FileNotFoundError):
        load_dataset(name, root=tmp_path / "nowhere", cache_dir=tmp_path / "c2", download=False)
    assert len(calls) == 1


def test_amazon_downloads_into_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def fake(raw: Path) -> None:
        calls.append(raw)
        write_ogbn_products(raw)

    monkeypatch.setattr(registry, "_download_ogb_products", fake)
    monkeypatch.delenv("DPGNN_DATA")
    data = load_dataset("amazon", cache_dir=tmp_path)
    assert calls == [tmp_path / "datasets" / "amazon" / "products"]
    assert data.num_nodes == 80
    assert registry._AMAZON_URL == "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip"


def test_cora_does_not_download_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_root: Path
) -> None:
    calls: list[str] = []
    src = data_root / "planetoid" / "Cora" / "raw"

    def copy_cora(raw: Path) -> None:
        raw.mkdir(parents=True, exist_ok=True)
        for p in src.iterdir():
            (raw / p.name).write_bytes(p.read_bytes())

    monkeypatch.setattr(readers._Planetoid, "download", _fake_downloader(copy_cora, calls))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError):
        load_dataset("cora", root=empty, cache_dir=tmp_path / "c")
    assert calls == []
    data = load_dataset("cora", root=empty, cache_dir=tmp_path / "c", download=True)
    assert data.num_nodes == 2708 and len(calls) == 1
