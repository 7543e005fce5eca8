"""Real datasets from the shared folder: counts match ../shared/datasets/README.md."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.io
import torch

from lightning_dpgnn.data import GraphDataModule, NodeDataModule, load_dataset, load_graph_dataset


def _num_undirected_pairs(edge_index: torch.Tensor, n: int) -> int:
    lo = torch.minimum(edge_index[0], edge_index[1])
    hi = torch.maximum(edge_index[0], edge_index[1])
    return int(torch.unique(lo * n + hi).numel())


def _is_symmetric(edge_index: torch.Tensor, n: int) -> bool:
    a = edge_index[0] * n + edge_index[1]
    b = edge_index[1] * n + edge_index[0]
    return torch.equal(torch.sort(a).values, torch.sort(b).values)


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_cora_raw_and_module(data_root: Path) -> None:
    raw = load_dataset("cora", root=data_root)
    assert raw.num_nodes == 2708
    assert raw.x.shape == (2708, 1433)
    assert int(raw.y.max()) + 1 == 7
    assert raw.num_edges == 10556  # 5,278 undirected edges, both directions
    assert _is_symmetric(raw.edge_index, raw.num_nodes)
    dm = NodeDataModule("cora", root=str(data_root))
    dm.setup()
    assert (dm.num_features, dm.num_classes, dm.num_nodes) == (1433, 7, 2708)
    info = dm.dataset_info()
    assert info["num_train"] + info["num_val"] + info["num_test"] == 2708
    assert info["num_self_loops"] == 0 and info["num_isolated_nodes"] == 0


def test_citeseer_raw_and_module(data_root: Path) -> None:
    raw = load_dataset("CiteSeer", root=data_root)
    assert raw.num_nodes == 3327
    assert raw.x.shape[1] == 3703
    assert int(raw.y.max()) + 1 == 6
    isolated = raw.num_nodes - torch.unique(raw.edge_index).numel()
    assert isolated == 48
    dm = NodeDataModule("citeseer", root=str(data_root), split="lpgnn")
    dm.setup()
    assert dm.num_nodes == 3327  # isolated nodes kept by default
    assert dm.dataset_info()["num_isolated_nodes"] == isolated
    papers = NodeDataModule(
        "citeseer", root=str(data_root), split="lpgnn", remove_isolated=True, split_by="position"
    )
    assert papers.num_nodes == 3327 - isolated
    assert papers.num_classes == 6 and papers.num_features == 3703
    info = papers.dataset_info()
    assert abs(info["num_train"] - 0.5 * papers.num_nodes) <= 1
    assert abs(info["num_val"] - 0.25 * papers.num_nodes) <= 1
    # the raw index survives isolated-node removal
    assert torch.equal(papers.data.node_id, torch.unique(raw.edge_index))


def test_planetoid_public_split_kept(data_root: Path) -> None:
    dm = NodeDataModule("cora", root=str(data_root), split="public")
    assert int(dm.data.train_mask.sum()) == 140
    assert int(dm.data.val_mask.sum()) == 500
    assert int(dm.data.test_mask.sum()) == 1000


def test_musae_facebook(data_root: Path) -> None:
    raw = load_dataset("musae-facebook", root=data_root)
    assert raw.num_nodes == 22470
    assert raw.x.shape == (22470, 4714)
    assert bool(((raw.x == 0) | (raw.x == 1)).all()) and float(raw.x.max()) == 1.0
    assert int(raw.y.max()) + 1 == 4
    self_loops = int((raw.edge_index[0] == raw.edge_index[1]).sum())
    assert self_loops == 179
    # 171,002 undirected edges; stored in both directions, a self-loop once
    assert _num_undirected_pairs(raw.edge_index, raw.num_nodes) == 171002
    assert raw.num_edges == 2 * 171002 - self_loops
    assert _is_symmetric(raw.edge_index, raw.num_nodes)
    # page_type categories sorted: company, government, politician, tvshow
    import pandas as pd

    tgt = pd.read_csv(data_root / "musae/facebook/target.csv")
    assert raw.y[0].item() == ["company", "government", "politician", "tvshow"].index(
        tgt.loc[tgt.id == 0, "page_type"].item()
    )
    dm = NodeDataModule("facebook-page-page", root=str(data_root))
    dm.setup()
    assert dm.num_classes == 4 and dm.num_features == 4714
    assert dm.dataset_info()["num_self_loops"] == 0
    assert dm.data.num_edges == raw.num_edges - self_loops


def test_musae_twitch_en(data_root: Path) -> None:
    raw = load_dataset("musae/twitch_en", root=data_root)
    assert raw.num_nodes == 7126
    assert raw.x.shape == (7126, 3170)
    assert int(raw.y.max()) + 1 == 2
    assert raw.num_edges == 2 * 35324
    # y is indexed by new_id (the id used in edges.csv and features.json)
    import pandas as pd

    tgt = pd.read_csv(data_root / "musae/twitch_en/target.csv")
    expect = torch.zeros(7126, dtype=torch.long)
    expect[torch.tensor(tgt.new_id.to_numpy())] = torch.tensor(tgt.mature.to_numpy().astype(int))
    assert torch.equal(raw.y, expect)
    partner = load_dataset("twitch", root=data_root, target="partner")
    assert not torch.equal(partner.y, raw.y)
    dm = NodeDataModule("twitch", root=str(data_root))
    assert (dm.num_nodes, dm.num_classes, dm.num_features) == (7126, 2, 3170)


def test_facebook100_caltech_year(data_root: Path) -> None:
    mat = scipy.io.loadmat(str(data_root / "facebook100" / "Caltech36.mat"))
    info = mat["local_info"].astype(np.int64)
    year = info[:, 5]
    keep = year != 0
    raw = load_dataset("facebook100/Caltech36", root=data_root, target="year")
    # unlabeled (year == 0) nodes dropped
    assert raw.num_nodes == int(keep.sum()) == 769 - 114
    years = np.unique(year[keep])
    assert int(raw.y.max()) + 1 == len(years)
    assert np.array_equal(years[raw.y.numpy()], year[keep])
    # features: one-hot of status, gender, major, minor, housing (the papers' columns)
    blocks = []
    for j in (0, 1, 2, 3, 4):
        col = info[keep, j]
        values = np.unique(col[col != 0])
        blocks.append((col[:, None] == values[None, :]).astype(np.float32))
    expected = np.concatenate(blocks, axis=1)
    assert raw.x.shape == expected.shape
    assert np.array_equal(raw.x.numpy(), expected)
    assert raw.x.sum(1).max() <= 5
    # edges: adjacency restricted to the kept nodes
    adj = mat["A"].tocsr()[keep][:, keep]
    assert raw.num_edges == adj.nnz
    dense = torch.zeros(raw.num_nodes, raw.num_nodes)
    dense[raw.edge_index[0], raw.edge_index[1]] = 1
    assert np.array_equal(dense.numpy(), adj.toarray().astype(np.float32))


def test_facebook100_module_default_filter(data_root: Path) -> None:
    dm = NodeDataModule("facebook100/Caltech36", target="year", root=str(data_root))
    counts = dm.dataset_info()["class_counts"]
    labeled = 769 - 114
    # default threshold for Facebook100: classes holding >= 1% of the labeled nodes
    raw = load_dataset("facebook100/Caltech36", root=data_root)
    raw_counts = torch.bincount(raw.y)
    assert dm.num_classes == int((raw_counts >= np.ceil(0.01 * labeled)).sum())
    raw_kept = raw_counts[raw_counts >= np.ceil(0.01 * labeled)]
    assert counts == raw_kept.tolist()  # isolated nodes are kept by default
    dm2 = NodeDataModule(
        "facebook100/caltech36", target="gender", root=str(data_root), min_class_size=0
    )
    assert dm2.num_classes == 2
    assert dm2.target == "gender"


def test_facebook100_largest_school_loads_fast(data_root: Path) -> None:
    import time

    start = time.perf_counter()
    dm = NodeDataModule("facebook100/Wisconsin87", root=str(data_root), subsample_in_degree=50)
    dm.setup()
    elapsed = time.perf_counter() - start
    assert dm.data.num_edges > 500_000
    assert int(torch.bincount(dm.data.edge_index[1]).max()) <= 50
    assert elapsed < 15.0, f"Wisconsin87 took {elapsed:.1f}s"


def test_tudatasets(data_root: Path) -> None:
    mutag = GraphDataModule("mutag", root=str(data_root), batch_size=16)
    mutag.setup()
    assert len(mutag.dataset) == 188
    assert mutag.num_classes == 2 and mutag.num_features == 7
    info = mutag.dataset_info()
    assert info["num_train"] + info["num_val"] + info["num_test"] == 188
    batch = next(iter(mutag.train_dataloader()))
    assert batch.num_graphs == 16 and batch.y.shape == (16,)
    proteins = load_graph_dataset("PROTEINS", root=data_root)
    assert len(proteins) == 1113
    assert proteins.num_classes == 2
    assert proteins.num_node_features == 3
    with_attr = load_graph_dataset("proteins", root=data_root, use_node_attr=True)
    assert with_attr.num_node_features == 4


def test_nothing_written_into_root(data_root: Path, tmp_path: Path) -> None:
    before = _snapshot(data_root)
    cache = tmp_path / "fresh-cache"
    load_dataset("cora", root=data_root, cache_dir=cache)
    load_dataset("musae-twitch-en", root=data_root, cache_dir=cache)
    load_graph_dataset("mutag", root=data_root, cache_dir=cache)
    assert _snapshot(data_root) == before
    written = [p for p in cache.rglob("*") if p.is_file()]
    assert any(p.name == "data.pt" for p in written)  # PyG caches landed in the cache dir
    assert any(p.name.startswith("musae-") for p in written)


def test_env_var_root_is_used(data_root: Path, monkeypatch) -> None:
    monkeypatch.setenv("DPGNN_DATA", os.path.relpath(data_root))
    assert load_dataset("cora").num_nodes == 2708
