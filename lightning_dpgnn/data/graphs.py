"""Many small graphs: simple graphs on entry, federated client partitions (GW-LDP §4), ego
subgraphs and GW-LDP's Table 3 statistics."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform, LargestConnectedComponents
from torch_geometric.utils import coalesce, k_hop_subgraph

from .transforms import NodeSplit


class SimpleGraph(BaseTransform):
    """Make a graph simple: merge repeated edges (edge attributes of merged edges are summed),
    drop self-loops; give it ``x = ones(n, 1)`` when it has no node features."""

    def forward(self, data: Data) -> Data:
        n = int(data.num_nodes)
        keep = data.edge_index[0] != data.edge_index[1]
        attr = getattr(data, "edge_attr", None)
        ei, attr = coalesce(
            data.edge_index[:, keep], None if attr is None else attr[keep], num_nodes=n,
            reduce="sum",
        )
        if not torch.equal(ei, data.edge_index) or getattr(data, "x", None) is None:
            data = copy.copy(data)
            data.edge_index = ei
            if attr is not None:
                data.edge_attr = attr
            if getattr(data, "x", None) is None:
                data.x = torch.ones(n, 1)
        return data


def keyed_partition(num_graphs: int, num_clients: int, seed: int = 0) -> Tensor:
    """The client of every graph: a permutation of the positions seeded by the public ``seed``,
    dealt to the clients in turn. It reads no label and no graph."""
    n, k = int(num_graphs), int(num_clients)
    if k < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if k > n:
        raise ValueError(f"{n} graphs cannot give {k} clients one graph each")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(int(seed)))
    owner = torch.empty(n, dtype=torch.long)
    owner[order] = torch.arange(n) % k
    return owner


def dirichlet_partition(
    labels: Sequence[int] | Tensor,
    num_clients: int,
    alpha: float = 0.5,
    seed: int = 0,
    min_size: int = 1,
    max_tries: int = 1000,
) -> Tensor:
    """The client of every graph: each class's graphs, in a seeded order, are cut at client
    shares drawn from ``Dirichlet(alpha)``, redrawn until every client holds ``min_size``
    graphs (Wang et al. 2020, GW-LDP §4). It reads every label: a data module using it declares
    the graph labels public."""
    y = np.asarray(torch.as_tensor(labels).view(-1).tolist(), dtype=np.int64)
    k = int(num_clients)
    if k < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if k * int(min_size) > len(y):
        raise ValueError(
            f"{len(y)} graphs cannot give {k} clients at least {min_size} graphs each"
        )
    rng = np.random.default_rng(int(seed))
    for _ in range(int(max_tries)):
        owner = np.empty(len(y), dtype=np.int64)
        for c in np.unique(y):
            idx = np.flatnonzero(y == c)
            rng.shuffle(idx)
            shares = rng.dirichlet(np.full(k, float(alpha)))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).round().astype(int)
            for client, part in enumerate(np.split(idx, cuts)):
                owner[part] = client
        if np.bincount(owner, minlength=k).min() >= min_size:
            return torch.from_numpy(owner)
    raise ValueError(
        f"no Dirichlet(alpha={alpha}) partition of {len(y)} graphs over {k} clients gave every "
        f"client {min_size} graph(s) in {max_tries} draws: raise alpha or lower num_clients"
    )


@dataclass(frozen=True)
class ClientSplit:
    """One client's graphs (indices into the dataset) split into train / val / test."""

    client: int
    train: Tensor
    val: Tensor
    test: Tensor

    @property
    def all(self) -> Tensor:
        return torch.cat([self.train, self.val, self.test])


def client_splits(
    owner: Tensor, fractions: tuple[float, float, float], seed: int = 0
) -> list[ClientSplit]:
    """Each client splits its own graphs at random (seeded per client) by ``fractions``."""
    out = []
    for client in range(int(owner.max()) + 1 if owner.numel() else 0):
        idx = torch.nonzero(owner == client).view(-1)
        gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + client)
        idx = idx[torch.randperm(idx.numel(), generator=gen)]
        n_train, n_val, _ = NodeSplit(*fractions).sizes(idx.numel())
        out.append(ClientSplit(
            client, idx[:n_train].sort().values, idx[n_train:n_train + n_val].sort().values,
            idx[n_train + n_val:].sort().values,
        ))
    return out


def largest_connected_component(data: Data) -> Data:
    """The subgraph of ``data`` induced by its largest connected component (weakly connected,
    edges read as undirected); ``node_id`` keeps each node's index in ``data``."""
    n = int(data.num_nodes)
    base = getattr(data, "node_id", None)
    out = Data(edge_index=data.edge_index, num_nodes=n)
    for key in ("x", "y"):
        if getattr(data, key, None) is not None:
            out[key] = data[key]
    out.node_id = base if base is not None else torch.arange(n)
    return LargestConnectedComponents(connection="weak")(out)


def ego_graphs(
    data: Data,
    hops: int = 1,
    centres: Tensor | Sequence[int] | None = None,
    largest_component: bool = True,
) -> list[Data]:
    """The ``hops``-hop ego subgraph around every centre (default: every node) of ``data``'s
    largest connected component, with ``x``, ``y`` (the centre's label), ``centre`` (its
    position) and ``node_id`` (the nodes' ids in ``data``)."""
    g = largest_connected_component(data) if largest_component else data
    n = int(g.num_nodes)
    chosen = torch.arange(n) if centres is None else torch.as_tensor(centres).view(-1)
    node_id = getattr(g, "node_id", None)
    out = []
    for c in chosen.tolist():
        subset, edge_index, mapping, _ = k_hop_subgraph(
            int(c), int(hops), g.edge_index, relabel_nodes=True, num_nodes=n
        )
        sub = Data(edge_index=edge_index, num_nodes=int(subset.numel()))
        if getattr(g, "x", None) is not None:
            sub.x = g.x[subset]
        sub.y = g.y[c].view(1)
        sub.centre = mapping.view(1)
        sub.node_id = (node_id[subset] if node_id is not None else subset)
        out.append(sub)
    return out


def graph_stats(graphs: Sequence[Data]) -> dict[str, float]:
    """GW-LDP Table 3: number of graphs, mean nodes and mean edges (both directions counted, as
    the paper's 39.58 for MUTAG)."""
    nodes = np.array([int(g.num_nodes) for g in graphs], dtype=float)
    edges = np.array([int(g.edge_index.size(1)) for g in graphs], dtype=float)
    return {
        "num_graphs": len(graphs),
        "mean_nodes": float(nodes.mean()) if len(nodes) else 0.0,
        "max_nodes": int(nodes.max()) if len(nodes) else 0,
        "mean_edges": float(edges.mean()) if len(edges) else 0.0,
        "mean_undirected_edges": float(edges.mean() / 2) if len(edges) else 0.0,
    }
