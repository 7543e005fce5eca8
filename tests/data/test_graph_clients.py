"""GraphDataModule for GW-LDP: simple graphs on entry, Dirichlet clients with 7:2:1 splits,
Table 3 of the paper on the offline TU data, the online readers (PROTEINS_full, IMDB-BINARY) on
tiny TU files written here, and ego subgraphs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from lightning_dpgnn.data import (
    GraphDataModule,
    SimpleGraph,
    client_splits,
    dirichlet_partition,
    ego_graphs,
    largest_connected_component,
)


def _data_root() -> Path:
    root = os.environ.get("DPGNN_DATA")
    if not root:
        pytest.fail("DPGNN_DATA is not set: the Table 3 check needs the offline TU datasets")
    return Path(root)


# ------------------------------------------------------------------ Table 3 (paper)
@pytest.mark.parametrize(
    "name,graphs,mean_nodes,mean_edges",
    [("mutag", 188, 17.93, 39.58), ("proteins", 1113, 39.06, 145.63)],
)
def test_table3_of_the_paper(name, graphs, mean_nodes, mean_edges) -> None:
    dm = GraphDataModule(name, root=str(_data_root()), split=(0.7, 0.2, 0.1), num_clients=10)
    stats = dm.graph_stats()
    assert stats["num_graphs"] == graphs
    assert stats["mean_nodes"] == pytest.approx(mean_nodes, abs=0.005)
    assert stats["mean_edges"] == pytest.approx(mean_edges, abs=0.01)  # both directions
    assert sum(len(c.all) for c in dm.clients) == graphs


# ------------------------------------------------------------------ clients
def test_dirichlet_partition_is_seeded_complete_and_non_iid() -> None:
    y = torch.tensor([0] * 60 + [1] * 40)
    a = dirichlet_partition(y, 5, alpha=0.3, seed=3, min_size=4)
    assert torch.equal(a, dirichlet_partition(y, 5, alpha=0.3, seed=3, min_size=4))
    assert not torch.equal(a, dirichlet_partition(y, 5, alpha=0.3, seed=4, min_size=4))
    assert a.numel() == 100 and int(a.min()) == 0 and int(a.max()) == 4
    assert int(torch.bincount(a).min()) >= 4
    # small alpha: label mixes far from the global 60/40; large alpha: close to it
    def spread(alpha: float) -> float:
        owner = dirichlet_partition(y, 5, alpha=alpha, seed=0, min_size=1)
        shares = [float((y[owner == c] == 0).float().mean()) for c in range(5)]
        return float(np.std(shares))

    assert spread(0.1) > spread(1000.0)
    with pytest.raises(ValueError):
        dirichlet_partition(y, 200)


def test_one_flipped_label_moves_no_graph_of_the_default_partition() -> None:
    """N6: the default partition reads no label, so flipping one MUTAG label leaves every
    graph on its client and in its split; the paper's label-Dirichlet partition reads them all
    (one flip moves other graphs), so the module declares the graph labels public."""
    from lightning_dpgnn.data import load_graph_dataset

    mutag = load_graph_dataset("mutag", str(_data_root()))
    graphs = [mutag[i] for i in range(len(mutag))]
    flipped = list(graphs)
    flipped[0] = graphs[0].clone()
    flipped[0].y = 1 - graphs[0].y

    def clients(gs: list[Data], **kw) -> GraphDataModule:
        return GraphDataModule("mutag", graphs=gs, split=(0.7, 0.2, 0.1), num_clients=10, **kw)

    def owners(dm: GraphDataModule) -> list[tuple[int, str]]:
        owner = {}
        for c in dm.clients:
            for part in ("train", "val", "test"):
                owner.update({int(i): (c.client, part) for i in getattr(c, part)})
        return [owner[i] for i in range(len(graphs))]

    assert owners(clients(graphs)) == owners(clients(flipped))  # no graph moved
    assert clients(graphs).declared_public() == []
    skewed = clients(graphs, dirichlet_alpha=0.5)
    a, b = owners(skewed), owners(clients(flipped, dirichlet_alpha=0.5))
    assert sum(x != y for x, y in zip(a[1:], b[1:], strict=True)) > 0  # the flip moved others
    (public,) = skewed.declared_public()
    assert "label" in public and "dirichlet_alpha=0.5" in public
    from lightning_dpgnn.data import keyed_partition

    owner = keyed_partition(188, 10, seed=3)  # every client, near-equal shares, seeded
    assert torch.bincount(owner).tolist() == [19] * 8 + [18] * 2
    assert torch.equal(owner, keyed_partition(188, 10, seed=3))


def test_each_client_splits_its_own_graphs_seven_two_one() -> None:
    owner = torch.tensor([0] * 20 + [1] * 10)
    splits = client_splits(owner, (0.7, 0.2, 0.1), seed=0)
    assert [(len(s.train), len(s.val), len(s.test)) for s in splits] == [(14, 4, 2), (7, 2, 1)]
    for s in splits:
        assert bool((owner[s.all] == s.client).all())
        assert len(set(s.all.tolist())) == len(s.all)


def _graph(n: int, edges: list[tuple[int, int]], label: int, x: bool = True) -> Data:
    ei = torch.tensor(edges, dtype=torch.long).t()
    g = Data(edge_index=torch.cat([ei, ei.flip(0)], 1), y=torch.tensor([label]), num_nodes=n)
    if x:
        g.x = torch.ones(n, 2)
    return g


def test_graphs_are_simple_on_entry() -> None:
    g = Data(
        edge_index=torch.tensor([[0, 0, 1, 1, 2, 2], [1, 1, 0, 2, 2, 1]]),
        y=torch.tensor([1]), num_nodes=3,
    )
    s = SimpleGraph()(g)
    assert s.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]  # duplicate merged, loop gone
    assert s.x.shape == (3, 1)  # featureless graphs get all-one features
    dm = GraphDataModule("toy", graphs=[g, _graph(2, [(0, 1)], 0)], split=(0.5, 0.0, 0.5))
    dm.setup()
    assert all(int(d.edge_index.size(1)) in (2, 4) for d in dm.dataset)


def test_graphs_given_in_memory_with_clients() -> None:
    graphs = [_graph(4, [(0, 1), (1, 2), (2, 3)], i % 2) for i in range(40)]
    dm = GraphDataModule("toy", graphs=graphs, split=(0.7, 0.2, 0.1), num_clients=4,
                         dirichlet_alpha=1.0, batch_size=8)
    dm.setup()
    assert dm.num_classes == 2 and dm.num_features == 2
    assert len(dm.train_dataset) + len(dm.val_dataset) + len(dm.test_dataset) == 40
    assert len(dm.clients) == 4
    batch = next(iter(dm.train_dataloader()))
    assert batch.num_graphs == 8


# ------------------------------------------------------------------ online readers, tiny files
def _write_tu(raw: Path, name: str, attrs: int | None, node_labels: bool) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    sizes = [4, 5, 3, 6]
    edges, indicator, offset = [], [], 0
    for g, n in enumerate(sizes):
        for i in range(n - 1):  # a path, both directions (1-based ids), one edge repeated
            edges += [(offset + i + 1, offset + i + 2), (offset + i + 2, offset + i + 1)]
        edges.append((offset + 1, offset + 2))
        indicator += [g + 1] * n
        offset += n
    (raw / f"{name}_A.txt").write_text("".join(f"{a}, {b}\n" for a, b in edges))
    (raw / f"{name}_graph_indicator.txt").write_text("".join(f"{i}\n" for i in indicator))
    (raw / f"{name}_graph_labels.txt").write_text("1\n2\n1\n2\n")
    if node_labels:
        (raw / f"{name}_node_labels.txt").write_text(
            "".join(f"{int(v)}\n" for v in rng.integers(0, 3, offset))
        )
    if attrs:
        rows = rng.random((offset, attrs))
        (raw / f"{name}_node_attributes.txt").write_text(
            "".join(", ".join(f"{v:.4f}" for v in r) + "\n" for r in rows)
        )


def test_proteins_full_reader_on_tiny_files(tmp_path: Path) -> None:
    _write_tu(tmp_path / "root" / "tudataset" / "PROTEINS_full" / "raw", "PROTEINS_full", 29, True)
    dm = GraphDataModule("PROTEINS_full", root=str(tmp_path / "root"),
                         cache_dir=str(tmp_path / "cache"), use_node_attr=True, download=False)
    dm.setup()
    assert len(dm.dataset) == 4 and dm.num_classes == 2
    assert dm.num_features == 3 + 29  # one-hot node labels + the 29 attributes (Table 3: 32)
    g = dm.dataset[0]
    assert g.edge_index.size(1) == 6  # the repeated edge was merged


def test_imdb_binary_reader_on_tiny_files(tmp_path: Path) -> None:
    _write_tu(tmp_path / "root" / "tudataset" / "IMDB-BINARY" / "raw", "IMDB-BINARY", None, False)
    dm = GraphDataModule("imdb-binary", root=str(tmp_path / "root"),
                         cache_dir=str(tmp_path / "cache"), download=False)
    dm.setup()
    assert len(dm.dataset) == 4
    assert dm.dataset[1].x.shape == (5, 1)  # no node features: all-one features


# ------------------------------------------------------------------ ego subgraphs
def test_ego_graphs_of_the_largest_component() -> None:
    # component {0,1,2,3} (a star on 0 plus 2-3) and a separate edge {4,5}
    ei = torch.tensor([[0, 1, 0, 2, 0, 3, 2, 3, 4, 5], [1, 0, 2, 0, 3, 0, 3, 2, 5, 4]])
    data = Data(edge_index=ei, x=torch.eye(6), y=torch.tensor([0, 1, 1, 2, 0, 0]), num_nodes=6)
    lcc = largest_connected_component(data)
    assert lcc.num_nodes == 4 and lcc.node_id.tolist() == [0, 1, 2, 3]
    egos = ego_graphs(data, hops=1)
    assert len(egos) == 4
    assert [int(g.num_nodes) for g in egos] == [4, 2, 3, 3]
    assert [int(g.y) for g in egos] == [0, 1, 1, 2]  # pseudo-label: the centre's label
    assert int(egos[1].node_id[egos[1].centre]) == 1
    dm = GraphDataModule("ego", graphs=egos)  # cut from one graph: its node ids travel along
    assert [s.tolist() for s in dm.source_nodes] == [g.node_id.tolist() for g in egos]
    assert "source graph's edges" in dm.declared_public()[0]
    assert GraphDataModule("toy", graphs=[_graph(2, [(0, 1)], 0)]).source_nodes is None
    mixed = [egos[0], _graph(2, [(0, 1)], 0)]
    with pytest.raises(ValueError, match="1 of 2 graphs carry node_id"):
        _ = GraphDataModule("mixed", graphs=mixed).source_nodes


@pytest.mark.slow
def test_ego_graphs_of_citeseer_match_table2() -> None:
    dm = GraphDataModule.ego("citeseer", hops=1, num_graphs=None, root=str(_data_root()))
    assert dm.graph_stats()["num_graphs"] == 2120  # Table 2: the largest component of CiteSeer
    assert dm.num_classes == 6
