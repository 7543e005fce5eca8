"""Link stealing: posterior similarity (He et al. 2021: neighbours' posteriors are more alike)
and LinkTeller's influence attack (Wu et al. 2022). Both return the AUC of edges against as many
sampled non-edges (0.5: nothing leaks). Pure torch."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .membership import attack_auc

__all__ = ["METRICS", "influence_attack", "posterior_similarity_attack", "sample_pairs"]


def sample_pairs(
    edge_index: torch.Tensor, num_nodes: int, pairs: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[2, 2k]`` node pairs and 0/1 labels: ``k`` uniform edges and ``k`` uniform non-edges."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    src, dst = edge_index
    keep = src != dst
    und = torch.stack([torch.minimum(src, dst), torch.maximum(src, dst)])[:, keep]
    codes = torch.unique(und[0] * num_nodes + und[1])
    if len(codes) == 0:
        raise ValueError("the graph has no edges to steal")
    k = min(pairs, len(codes))
    pos = codes[torch.randperm(len(codes), generator=generator)[:k]]
    neg = torch.empty(0, dtype=torch.long)
    while len(neg) < k:  # rejection sampling: uniform pairs u < v that are not edges
        draw = torch.randint(0, num_nodes, (2, 4 * k), generator=generator)
        u, v = draw.min(0).values, draw.max(0).values
        c = (u * num_nodes + v)[u != v]
        c = c[~torch.isin(c, codes)]
        neg = torch.unique(torch.cat([neg, c]))
    neg = neg[torch.randperm(len(neg), generator=generator)[:k]]
    chosen = torch.cat([pos, neg])
    pair_index = torch.stack([chosen // num_nodes, chosen % num_nodes])
    return pair_index, torch.cat([torch.ones(k), torch.zeros(k)])


def _correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a - a.mean(-1, keepdim=True), b - b.mean(-1, keepdim=True)
    return 1 - torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


#: distances between two posteriors (smaller: more likely an edge)
METRICS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "correlation": _correlation,
    "cosine": lambda a, b: 1 - torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12),
    "euclidean": lambda a, b: (a - b).norm(dim=-1),
}


def posterior_similarity_attack(
    posteriors: torch.Tensor,
    edge_index: torch.Tensor,
    *,
    pairs: int = 2000,
    metric: str = "correlation",
    generator: torch.Generator | None = None,
) -> float:
    """AUC of ``-distance(posterior_u, posterior_v)`` on sampled edges vs non-edges."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    pair_index, labels = sample_pairs(edge_index, len(posteriors), pairs, generator)
    p = posteriors.detach().double()
    dist = METRICS[metric](p[pair_index[0]], p[pair_index[1]])
    return attack_auc(-dist, labels)


def influence_attack(
    query: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    edge_index: torch.Tensor,
    *,
    pairs: int = 200,
    step: float = 1e-2,
    generator: torch.Generator | None = None,
) -> float:
    """LinkTeller influence attack: AUC of ``||query(x')_v - query(x)_v||`` on sampled edges vs
    non-edges, ``x'`` adding ``step`` to the features of node ``u``."""
    pair_index, labels = sample_pairs(edge_index, len(x), pairs, generator)
    with torch.no_grad():
        base = query(x)
        scores = torch.empty(pair_index.size(1), dtype=torch.float64)
        for u in pair_index[0].unique():
            moved = x.clone()
            moved[u] = moved[u] + step
            out = query(moved)
            at = (pair_index[0] == u).nonzero().view(-1)
            scores[at] = (out[pair_index[1, at]] - base[pair_index[1, at]]).norm(dim=-1).double()
    return attack_auc(scores, labels)
