"""Synthetic graphs generated in code: :func:`make_csbm`, the default dataset of ``dpgnn fit``
(weakly informative features on a homophilous graph, so a GNN clearly beats an MLP)."""

from __future__ import annotations

import inspect

import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected


def make_csbm(
    num_nodes: int = 2000, num_classes: int = 5, avg_degree: float = 10.0, homophily: float = 0.8,
    num_features: int = 64, feature_signal: float = 1.0, seed: int = 0,
) -> Data:
    """A contextual stochastic block model ``Data(x, edge_index, y)``, deterministic in ``seed``:
    balanced classes; ``round(num_nodes * avg_degree / 2)`` undirected edges from a uniform node
    to one of its own class with probability ``homophily``, else of another class (self-loops
    and duplicates dropped); features ``mu[y] + N(0, I)`` with ``|mu| = feature_signal``."""
    if num_nodes < num_classes or num_classes < 2:
        raise ValueError(
            f"csbm needs num_classes >= 2 and num_nodes >= num_classes, "
            f"got num_nodes={num_nodes}, num_classes={num_classes}"
        )
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"csbm homophily must be in [0, 1], got {homophily}")
    if avg_degree < 0 or num_features < 1 or feature_signal < 0:
        raise ValueError(
            "csbm needs avg_degree >= 0, num_features >= 1 and feature_signal >= 0, got "
            f"avg_degree={avg_degree}, num_features={num_features}, feature_signal={feature_signal}"
        )
    gen = torch.Generator().manual_seed(int(seed))
    n, c = int(num_nodes), int(num_classes)

    y = (torch.arange(n) % c)[torch.randperm(n, generator=gen)]
    members = torch.argsort(y, stable=True)  # node ids grouped by class
    sizes = torch.bincount(y, minlength=c)
    starts = torch.cumsum(sizes, 0) - sizes

    m = int(round(n * avg_degree / 2))
    src = torch.randint(0, n, (m,), generator=gen)
    same = torch.rand(m, generator=gen) < homophily
    shift = torch.randint(1, c, (m,), generator=gen)
    dst_class = torch.where(same, y[src], (y[src] + shift) % c)
    pick = (torch.rand(m, generator=gen) * sizes[dst_class]).long()
    pick = torch.minimum(pick, sizes[dst_class] - 1)
    dst = members[starts[dst_class] + pick]

    edge_index, _ = remove_self_loops(torch.stack([src, dst]))
    edge_index = coalesce(to_undirected(edge_index, num_nodes=n), num_nodes=n)

    mu = torch.randn(c, num_features, generator=gen)
    mu = feature_signal * mu / mu.norm(dim=1, keepdim=True).clamp_min(1e-12)
    x = mu[y] + torch.randn(n, num_features, generator=gen)
    return Data(x=x, edge_index=edge_index, y=y)


CSBM_DEFAULTS: dict[str, float | int] = {
    k: p.default for k, p in inspect.signature(make_csbm).parameters.items()
}
"""Default parameters of :func:`make_csbm`."""
