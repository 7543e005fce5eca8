"""EdgeRand: asymmetric randomized response on the adjacency (ARR; Imola, Murakami and Chaudhuri
2022), the GAP paper's edge-level baseline (thesis §4.7.2), as sparse as its input.

The edge count ``m`` plus ``Laplace(1 / eps_density)`` gives a density ``d = m~ / P`` over the
``P`` candidate pairs; then a pair is reported with probability ``p q`` if an edge and
``(1 - p) q`` if not, ``p = e^eps / (1 + e^eps)``, ``q = d / (p d + (1 - p)(1 - d))`` (capped
at 1). Both ratios are at most ``e^eps_link`` and one unit is one pair: ``eps_link +
eps_density``-DP (pure). Candidates are pairs ``i < j`` (``"undirected"``) or ``i != j``
(``"directed"``); added non-edges are drawn by geometric gaps, and the output is sorted so its
order does not tell kept edges from new ones.
"""

from __future__ import annotations

import math

import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .aggregation import EDGE_UNITS
from .mechanism import EDGES, fields_repr
from .random import bernoulli_positions

__all__ = [
    "AsymmetricRandomizedResponse", "arr_probabilities", "bernoulli_positions", "pair_keys",
    "both_directions", "check_nodes",
]


def check_nodes(name: str, edge_index: torch.Tensor, num_nodes: int, least: int = 2) -> int:
    """``num_nodes`` as an int, refused below ``least`` or when ``edge_index`` is outside it."""
    n = int(num_nodes)
    if n < least:
        raise ValueError(f"{name}: needs at least {least} nodes, got {n}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"{name}: edge_index refers to nodes outside [0, {n})")
    return n


def pair_keys(edge_index: torch.Tensor, num_nodes: int, undirected: bool = True) -> torch.Tensor:
    """The distinct pairs of ``edge_index`` other than self-loops as sorted keys ``i * N + j``
    (``i < j`` when ``undirected``: a pair stored in either direction is one unit)."""
    src, dst = edge_index[0].long(), edge_index[1].long()
    if undirected:
        src, dst = torch.minimum(src, dst), torch.maximum(src, dst)
    keep = src != dst
    return torch.unique(src[keep] * int(num_nodes) + dst[keep])


def both_directions(keys: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Unordered pair keys ``i * N + j`` as a sorted ``[2, 2m]`` edge index, both directions."""
    n = int(num_nodes)
    src, dst = torch.cat([keys // n, keys % n]), torch.cat([keys % n, keys // n])
    order = torch.argsort(src * n + dst)
    return torch.stack([src[order], dst[order]])


def arr_probabilities(eps_link: float, density: float) -> tuple[float, float]:
    """``(Pr[1 -> 1], Pr[0 -> 1])`` of one pair: ``(p q, (1 - p) q)`` with randomized
    response's ``p = e^eps / (1 + e^eps)`` and ``q = d / (p d + (1 - p)(1 - d))`` capped at 1
    (``density`` ``d`` is clamped into ``(0, 1]``)."""
    eps_link = check_epsilon(eps_link, "eps_link")
    p = 1.0 / (1.0 + math.exp(-eps_link))
    d = min(max(float(density), 1e-12), 1.0)
    q = min(1.0, d / (p * d + (1.0 - p) * (1.0 - d)))
    return p * q, (1.0 - p) * q


class AsymmetricRandomizedResponse:
    """Edge-level DP release of a perturbed graph (module doc): pure ``epsilon``-DP for one
    ``edge_unit``, ``density_share`` of it (the GAP code's 10%) on the noisy edge count; ledger
    entries ``<name>/density`` and ``<name>/link``."""

    def __init__(
        self,
        epsilon: float,
        *,
        edge_unit: str = "undirected",
        density_share: float = 0.1,
        name: str = "arr",
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if edge_unit not in EDGE_UNITS:
            raise ValueError(f"edge_unit must be one of {EDGE_UNITS}, got {edge_unit!r}")
        if not 0.0 < float(density_share) < 1.0:
            raise ValueError(f"density_share must be in (0, 1), got {density_share!r}")
        self.edge_unit = edge_unit
        self.density_share = float(density_share)
        self.eps_density = self.epsilon * self.density_share
        self.eps_link = self.epsilon * (1.0 - self.density_share)
        self.name = str(name)
        self.level, self.reads = "edge", (EDGES,)

    def num_pairs(self, num_nodes: int) -> int:
        """Candidate pairs ``P``: ``N (N - 1) / 2`` (undirected) or ``N (N - 1)``."""
        n = int(num_nodes)
        return n * (n - 1) // (2 if self.edge_unit == "undirected" else 1)

    def units(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """The distinct candidate pairs present in ``edge_index`` (:func:`pair_keys`)."""
        return pair_keys(edge_index, num_nodes, self.edge_unit == "undirected")

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record ``count`` releases: the Laplace count and the randomized response (pure)."""
        accountant.add_pure(
            f"{self.name}/density", self.eps_density, count=count,
            note="Laplace(1/eps) edge count, sensitivity 1 unit (ARR density estimate)",
        )
        accountant.add_pure(
            f"{self.name}/link", self.eps_link, count=count,
            note=f"asymmetric randomized response, one {self.edge_unit} pair per unit "
            "(Imola et al. 2022; GAP paper §6)",
        )

    def sample(
        self, edge_index: torch.Tensor, num_nodes: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The perturbed graph as a sorted ``[2, E']`` edge index (both directions of every
        pair for the undirected unit; module doc)."""
        n, device = check_nodes(self.name, edge_index, num_nodes), edge_index.device
        keys = self.units(edge_index, n)
        noisy_m = keys.numel() + float(R.laplace((1,), 1.0 / self.eps_density,
                                                  generator=generator, dtype=torch.float64))
        p11, p01 = arr_probabilities(self.eps_link, max(noisy_m, 1.0) / self.num_pairs(n))
        kept = keys[R.bernoulli(torch.full(keys.shape, p11, dtype=torch.float64, device=device),
                                generator=generator)]
        pos = bernoulli_positions(
            torch.tensor([n * n]), torch.tensor([float(p01)], dtype=torch.float64),
            generator=generator, device=device,
        )[1]
        src, dst = pos // n, pos % n
        pos = pos[src < dst if self.edge_unit == "undirected" else src != dst]
        added = pos[~torch.isin(pos, keys)]
        out = torch.sort(torch.cat([kept, added])).values
        if self.edge_unit == "undirected":
            return both_directions(out, n)
        return torch.stack([out // n, out % n])

    def __repr__(self) -> str:
        return fields_repr(self, "epsilon", "edge_unit", "density_share")
