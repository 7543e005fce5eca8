"""Synthetic graphs generated in code (no files, no download).

:func:`make_csbm` draws a *contextual stochastic block model*: a stochastic block model whose
nodes carry Gaussian features with a class-dependent mean. With the defaults the features alone
are weakly informative while the graph is strongly homophilous, so a GNN that aggregates
neighbours clearly beats an MLP — this is the embedded default dataset of ``dpgnn fit``.
"""

from __future__ import annotations

import inspect

import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

__all__ = ["make_csbm", "CSBM_DEFAULTS"]

def make_csbm(
    num_nodes: int = 2000, num_classes: int = 5, avg_degree: float = 10.0, homophily: float = 0.8,
    num_features: int = 64, feature_signal: float = 1.0, seed: int = 0,
) -> Data:
    """Generate a contextual stochastic block model graph.

    * Labels: balanced, ``num_nodes // num_classes`` (+1 for the first ``num_nodes % num_classes``
      classes) nodes per class, in random order.
    * Edges: ``round(num_nodes * avg_degree / 2)`` undirected edge draws. Each draw picks a source
      uniformly; with probability ``homophily`` the other end is a uniform node of the *same*
      class, otherwise a uniform node of a uniformly chosen *other* class. ``homophily`` is thus
      the expected edge homophily (fraction of intra-class edges); with balanced classes the
      intra/inter connection probability ratio is ``homophily * (c - 1) / (1 - homophily)``.
      Self-loops and duplicate draws are dropped, so the realised mean degree is slightly below
      ``avg_degree``. Stored with both directions.
    * Features: ``x = mu[y] + N(0, I)``, where the class means ``mu`` are random directions of
      norm ``feature_signal``. The smaller ``feature_signal``, the less an MLP can do alone.

    Deterministic given ``seed`` (uses its own ``torch.Generator``); 2,000 nodes take a few ms.

    Args:
        num_nodes: number of nodes.
        num_classes: number of classes (>= 2).
        avg_degree: expected mean degree before removing duplicates.
        homophily: expected fraction of intra-class edges, in ``[0, 1]``.
        num_features: feature dimension.
        feature_signal: norm of each class-mean vector (noise has unit variance per feature).
        seed: random seed.

    Returns:
        ``Data(x, edge_index, y)``.
    """
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
