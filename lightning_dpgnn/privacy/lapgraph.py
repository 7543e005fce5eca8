"""LapGraph (Wu, Long, Zhang and Li, "LinkTeller", IEEE S&P 2022): Laplace noise on the
adjacency, then the top-m pairs; an edge-level baseline of HeteroRR.

``count_share`` of epsilon (``eps_1``) buys the edge count ``m~ = m + Laplace(1 / eps_1)``; the
rest (``eps_2``) adds ``Laplace(1 / eps_2)`` to every entry ``A_ij``, ``i < j``, and the ``m~``
largest are released. One undirected edge changes ``m`` and one entry by one, so the release is
``eps_1 + eps_2``-DP (pure). The noisy entries are drawn in chunks of rows keeping a running
top-``m~`` (exact; memory ``O(chunk + m~)``). Pure torch: no Lightning imports.
"""

from __future__ import annotations

import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .edgerand import both_directions, check_nodes, pair_keys
from .mechanism import EDGES

__all__ = ["LapGraph"]


class LapGraph:
    """Edge-level DP release of a graph by Laplace noise on the adjacency and top-``m~``
    (module doc): pure ``epsilon``-DP per undirected edge, ``count_share`` of it on the count;
    ``chunk`` noisy entries per batch (memory only); ledger ``<name>/count``, ``/adjacency``."""

    def __init__(
        self,
        epsilon: float,
        *,
        count_share: float = 0.01,
        chunk: int = 1 << 23,
        name: str = "lapgraph",
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if not 0.0 < float(count_share) < 1.0:
            raise ValueError(f"count_share must be in (0, 1), got {count_share!r}")
        if int(chunk) < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk!r}")
        self.count_share = float(count_share)
        self.eps_count = self.epsilon * self.count_share
        self.eps_adjacency = self.epsilon * (1.0 - self.count_share)
        self.chunk = int(chunk)
        self.name = str(name)
        self.level, self.reads = "edge", (EDGES,)

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record ``count`` releases: the noisy count and the noisy adjacency (both pure)."""
        accountant.add_pure(f"{self.name}/count", self.eps_count, count=count,
                            note="Laplace(1/eps) edge count, sensitivity 1 (LinkTeller LapGraph)")
        accountant.add_pure(
            f"{self.name}/adjacency", self.eps_adjacency, count=count,
            note="Laplace(1/eps) on every upper-triangular adjacency entry, then top-m~ "
            "(sensitivity 1 per undirected edge)",
        )

    def sample(
        self, edge_index: torch.Tensor, num_nodes: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The released graph as a sorted, symmetric ``[2, E']`` edge index."""
        n = check_nodes(self.name, edge_index, num_nodes)
        keys = pair_keys(edge_index.detach().cpu(), n)
        pairs = n * (n - 1) // 2
        noisy_m = keys.numel() + float(R.laplace((1,), 1.0 / self.eps_count,
                                                  generator=generator, dtype=torch.float64))
        m = int(min(max(round(noisy_m), 0), pairs))
        best_val = torch.empty(0, dtype=torch.float64)
        best_key = torch.empty(0, dtype=torch.long)
        row = 0
        while row < n - 1 and m > 0:
            # rows row .. stop-1, entries j > i: at most ``chunk`` of them (at least one row)
            widths = torch.arange(n - 1 - row, 0, -1, dtype=torch.long)
            stop = row + max(1, int(torch.searchsorted(torch.cumsum(widths, 0),
                                                       self.chunk, right=True)))
            stop = min(stop, n - 1)
            rows = torch.arange(row, stop, dtype=torch.long)
            width = n - 1 - rows
            i = torch.repeat_interleave(rows, width)
            offset = torch.cumsum(width, 0) - width
            j = torch.arange(int(width.sum()), dtype=torch.long) - torch.repeat_interleave(
                offset, width) + i + 1
            k = i * n + j
            value = R.laplace((k.numel(),), 1.0 / self.eps_adjacency, generator=generator,
                              dtype=torch.float64)
            value += torch.isin(k, keys).double()
            vals = torch.cat([best_val, value])
            ks = torch.cat([best_key, k])
            top = torch.topk(vals, min(m, vals.numel())).indices
            best_val, best_key = vals[top], ks[top]
            row = stop
        return both_directions(torch.sort(best_key).values, n).to(edge_index.device)

    def __repr__(self) -> str:
        return f"LapGraph(epsilon={self.epsilon}, count_share={self.count_share})"
