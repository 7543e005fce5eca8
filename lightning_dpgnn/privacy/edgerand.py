"""EdgeRand's graph perturbation: asymmetric randomized response on the adjacency (ARR).

The edge-level baseline of the GAP paper and thesis §4.7.2 (SAGE-EDP / EdgeRand) perturbs the
adjacency matrix once and trains a GNN on the noisy graph. Plain randomized response on every
entry (F. Wu et al. 2021) turns a sparse graph into a dense one; the asymmetric randomized
response (Imola, Murakami and Chaudhuri 2022), as the GAP paper uses it, keeps the output as
sparse as the input:

1. *Density* (``density_share`` of epsilon, pure DP): the number of edge units ``m`` plus
   ``Laplace(1 / eps_density)`` (one unit changes ``m`` by 1), giving the density
   ``d = m~ / P`` over the ``P`` candidate pairs.
2. *Randomized response* (the rest, ``eps_link``): every candidate pair is reported present
   with probability ``p * q`` if it is an edge and ``(1 - p) * q`` if it is not, where
   ``p = e^eps_link / (1 + e^eps_link)`` is randomized response's keep probability and
   ``q = d / (p d + (1 - p)(1 - d))`` (capped at 1) is the sub-sampling that makes the expected
   number of output edges ``P (d p q + (1 - d)(1 - p) q) = d P``, the (noisy) number of input
   edges. Both probabilities keep the ratio ``p / (1 - p) = e^eps_link``, and for the absent
   outcome ``(1 - (1-p) q) / (1 - p q) <= e^eps_link``: each pair is ``eps_link``-DP, and one
   unit is one pair, so the whole release is ``eps_link + eps_density``-DP (pure, delta 0).

The candidate pairs depend on the protected unit: ``edge_unit="undirected"`` (one friendship)
perturbs the unordered pairs ``i < j`` once and returns a symmetric graph; ``"directed"``
(the thesis' unit) perturbs every ordered pair ``i != j``. Self-loops are never candidates.

Memory: never an ``N x N`` matrix. The existing units are kept by one Bernoulli draw each; the
non-edges that flip to present are the successes of a Bernoulli(``(1 - p) q``) process over
the ``N^2`` ordered positions, drawn as geometric gaps between successes (exactly that process,
``O(#successes)`` memory and time); positions that are not candidates (``i >= j`` for the
undirected unit, the diagonal) or that hold an existing edge are dropped, which leaves exactly
an independent Bernoulli draw on every candidate non-edge. The output is sorted, so its order
does not tell kept edges from new ones.

Every draw goes through :mod:`lightning_dpgnn.privacy.random` (entropy-seeded unless a
``generator`` is passed; secure mode covers it). Pure torch: no Lightning imports.
"""

from __future__ import annotations

import math

import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .aggregation import EDGE_UNITS
from .mechanism import EDGES, draw
from .random import bernoulli_positions

__all__ = ["AsymmetricRandomizedResponse", "arr_probabilities", "bernoulli_positions"]


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
    """Edge-level DP release of a perturbed graph (EdgeRand with ARR; see the module doc).

    Args:
        epsilon: total budget of the release (pure epsilon-DP for one edge unit).
        edge_unit: ``"undirected"`` (one friendship; symmetric output) or ``"directed"``.
        density_share: the share of epsilon spent on the noisy edge count (the GAP paper's
            reference implementation spends 10%).
        name: ledger name prefix (entries ``<name>/density`` and ``<name>/link``).
    """

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
        self.name = str(name)
        self.level, self.reads = "edge", (EDGES,)

    @property
    def eps_density(self) -> float:
        return self.epsilon * self.density_share

    @property
    def eps_link(self) -> float:
        return self.epsilon * (1.0 - self.density_share)

    def num_pairs(self, num_nodes: int) -> int:
        """Candidate pairs ``P``: ``N (N - 1) / 2`` (undirected) or ``N (N - 1)``."""
        n = int(num_nodes)
        return n * (n - 1) // (2 if self.edge_unit == "undirected" else 1)

    def units(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """The distinct candidate pairs present in ``edge_index`` as keys ``i * N + j``
        (``i < j`` for the undirected unit: a pair stored in either direction is one unit)."""
        src, dst = edge_index[0].long(), edge_index[1].long()
        if self.edge_unit == "undirected":
            src, dst = torch.minimum(src, dst), torch.maximum(src, dst)
        keep = src != dst
        return torch.unique(src[keep] * int(num_nodes) + dst[keep])

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

    def __call__(
        self,
        edge_index: torch.Tensor,
        num_nodes: int,
        accountant: PrivacyAccountant,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """The perturbed graph (:meth:`sample`), recorded on ``accountant`` (required)."""
        return draw(self, accountant, generator, edge_index, num_nodes)

    def sample(
        self, edge_index: torch.Tensor, num_nodes: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The perturbed graph as a sorted ``[2, E']`` edge index (both directions of every
        pair for the undirected unit). The candidate non-edges reported present are a
        Bernoulli(``p01``) process over the ``n^2`` ordered positions
        (:func:`bernoulli_positions`), restricted to candidate non-edges (see the module doc)."""
        n = int(num_nodes)
        if n < 2:
            raise ValueError(f"{self.name}: needs at least two nodes, got {n}")
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
            raise ValueError(f"{self.name}: edge_index refers to nodes outside [0, {n})")
        device = edge_index.device
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
        src, dst = out // n, out % n
        if self.edge_unit == "undirected":
            src, dst = torch.cat([src, dst]), torch.cat([dst, src])
            order = torch.argsort(src * n + dst)
            src, dst = src[order], dst[order]
        return torch.stack([src, dst])

    def __repr__(self) -> str:
        return (
            f"AsymmetricRandomizedResponse(epsilon={self.epsilon}, edge_unit={self.edge_unit!r},"
            f" density_share={self.density_share})"
        )
