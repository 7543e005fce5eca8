"""A differentially private choice of the degree bound D (issue 27; design invariant 1).

Node-level models take ``max_degree = D``, a promise that every in- and out-degree is at most
D (docs/privacy.md, "Node level: the degree bound"). D must not be read off the private graph:
the observed maximum degree is one node's private data (a published D of 709 says that a node of
degree exactly 709 is in the graph). D is either declared from public knowledge (a platform's
friend cap) or released by this mechanism and paid for in the ledger.

**The statistic.** Let ``deg(v) = max(in_degree(v), out_degree(v))`` on the simple graph
(repeated pairs counted once), ``c_t(G) = #{v : deg(v) > t}`` the number of nodes above ``t``,
and the *excess profile*

    phi_t(G) = min_{j >= 0} ( c_{t+j}(G) + j ).

``phi_t`` is non-increasing and 1-Lipschitz in ``t`` (``phi_t = min(c_t, phi_{t+1} + 1)``), it is
0 exactly when ``t >= max deg``, and below that it grows with the number of nodes above ``t``: it
measures how far ``t`` is from being a valid bound, in nodes.

**Sensitivity (the proof the ledger relies on).** Node level, remove a node ``v`` (``G' = G -
v``; adding is the same pair read backwards). In a simple graph ``v`` holds at most one edge to
and one from each other node, so every other ``deg`` drops by at most 1 and none grows; ``v``
itself leaves. Hence ``c_s(G') <= c_s(G)`` and ``c_s(G') >= c_{s+1}(G) - 1`` for every ``s``
(a node above ``s + 1`` in G other than ``v`` is still above ``s``). So
``phi_t(G') <= phi_t(G)``, and ``phi_t(G') >= min_j (c_{t+j+1}(G) + j + 1) - 2 >= phi_t(G) - 2``:
``|phi_t(G) - phi_t(G')| <= 2`` for every ``t``, on every simple graph, with no promise needed.
Edge level (one friendship, both directions, or one directed edge): no node leaves and two
degrees drop by at most 1, so ``c_s(G') >= c_{s+1}(G)`` and the sensitivity is 1. The plain
count ``c_t`` has no such bound: removing the centre of a star moves ``c_0`` by the star's size
(``tests/privacy/test_degree.py``). A repeated edge would let one node move a degree by its
multiplicity, so degrees are counted on distinct pairs (invariant 12).

**The release.** The exponential mechanism (McSherry and Talwar 2007) over a public, ascending
list of candidate bounds with utility ``u(t) = -|phi_t(G) - exceed|`` (sensitivity ``Delta`` =
2 node level, 1 edge level) and a public base measure ``t^-a`` (``prefer_small = a``; it does
not depend on the graph, so it leaves the guarantee unchanged): ``Pr[t] ∝ t^-a exp(epsilon u(t)
/ (2 Delta))``. Pure ``epsilon``-DP; :meth:`PrivateDegreeBound.account` records one ``"pure"``
ledger entry. With ``exceed = 0`` it favours the candidates at or above the maximum degree and,
among the ones below, those few nodes exceed. Since ``phi_t <= max deg - t``, a candidate ``m``
below the maximum keeps at least ``exp(-epsilon m / (2 Delta))`` of a valid one's weight.
Noise comes from :mod:`lightning_dpgnn.privacy.random`
(entropy-seeded unless a generator is passed; secure mode covers it).

**What it cannot do.** Under node-level DP no mechanism can certify the maximum degree: it is
one node's data. The release lands below the maximum with a probability that grows with how few
nodes are near the top (at ``epsilon = 1``, node level, a candidate that only one node exceeds
has ``e^{-1/4}`` ≈ 0.78 of the weight of a valid one). A fit at a bound below the maximum is
refused (``DegreeBoundError``); the refusal is seen by whoever runs the fit, and estimating
again or raising D by hand after it is another read of the graph (a second release must be
recorded; a hand-raised D is a read outside any mechanism). See docs/privacy.md, "Choosing D".

Pure torch: no Lightning imports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .mechanism import EDGES, draw

__all__ = ["PrivateDegreeBound", "degree_excess", "round_candidates"]

#: sensitivity of the excess profile per protected level
SENSITIVITY = {"node": 2.0, "edge": 1.0}


def round_candidates(max_bound: int, min_bound: int = 1) -> list[int]:
    """The 1-2-5 round numbers in ``[min_bound, max_bound]``, plus ``max_bound`` itself:
    ``1, 2, 5, 10, 20, 50, ...`` (a public grid: it depends on the two public ends only)."""
    max_bound, min_bound = int(max_bound), int(min_bound)
    if min_bound < 1 or max_bound < min_bound:
        raise ValueError(f"need 1 <= min_bound <= max_bound, got {min_bound}, {max_bound}")
    out, scale = [], 1
    while scale <= max_bound:
        out += [m * scale for m in (1, 2, 5) if min_bound <= m * scale <= max_bound]
        scale *= 10
    return sorted(set(out) | {max_bound})


def _distinct_degrees(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``max(in, out)`` degree of every node over distinct ``(source, target)`` pairs."""
    n = int(num_nodes)
    if edge_index.numel() == 0:
        return torch.zeros(n, dtype=torch.long)
    ei = edge_index.to(torch.long).cpu()
    pairs = torch.unique(ei[0] * max(n, 1) + ei[1])
    src, dst = pairs // max(n, 1), pairs % max(n, 1)
    out_deg = torch.bincount(src, minlength=n)
    in_deg = torch.bincount(dst, minlength=n)
    return torch.maximum(in_deg, out_deg)


def degree_excess(
    edge_index: torch.Tensor, num_nodes: int, candidates: Sequence[int]
) -> torch.Tensor:
    """``phi_t(G)`` (the excess profile of the module doc) at every candidate ``t``: float64,
    one entry per candidate. Exact, ``O(E log E + max(candidates))``."""
    cands = [int(t) for t in candidates]
    if not cands or min(cands) < 0:
        raise ValueError(f"candidates must be non-negative integers, got {list(candidates)}")
    deg = _distinct_degrees(edge_index, num_nodes)
    top = max(max(cands), int(deg.max()) if deg.numel() else 0)
    hist = torch.bincount(deg, minlength=top + 2).to(torch.float64)
    # c[t] = #{deg > t} for t = 0..top+1
    above = hist.flip(0).cumsum(0).flip(0)  # above[t] = #{deg >= t}
    c = torch.cat([above[1:], above.new_zeros(1)])[: top + 2]
    phi = c.clone()
    for t in range(top, -1, -1):  # phi_t = min(c_t, phi_{t+1} + 1); phi_{top+1} = 0
        phi[t] = min(float(c[t]), float(phi[t + 1]) + 1.0)
    return phi[torch.tensor(cands)]


class PrivateDegreeBound:
    """Release a degree bound D under differential privacy (module doc: statistic, proof).

    Example::

        mech = PrivateDegreeBound(epsilon=0.5, max_bound=5000)   # public grid 1, 2, 5, ...
        acc = PrivacyAccountant("node", delta=1e-6)
        d = mech(data.edge_index, data.num_nodes, acc)          # recorded in acc's ledger
        model = GAP(privacy="node", epsilon=8.0, max_degree=d)   # the fit spends its own

    Args:
        epsilon: budget of the release (pure epsilon-DP).
        candidates: public ascending candidate bounds; default :func:`round_candidates` of
            ``max_bound`` (a 1-2-5 grid). Never derived from the graph.
        max_bound: public largest candidate (e.g. ``num_nodes - 1``, public metadata, or a
            platform cap); used when ``candidates`` is not given.
        exceed: how many nodes (in units of the excess profile) may lie above the released
            bound at the utility's optimum; ``0`` aims at the maximum degree.
        prefer_small: exponent ``a`` of the public base measure ``t^-a`` over the candidates
            (``0``: uniform). Every candidate at or above the maximum degree has the best
            utility; the base measure makes the smaller of them likelier (less noise in the
            fit). Data-independent, so the guarantee is unchanged.
        level: ``"node"`` (sensitivity 2) or ``"edge"`` (sensitivity 1).
        name: ledger name.
    """

    def __init__(
        self,
        epsilon: float,
        candidates: Sequence[int] | None = None,
        *,
        max_bound: int | None = None,
        exceed: int = 0,
        prefer_small: float = 1.0,
        level: str = "node",
        name: str = "degree_bound",
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if math.isinf(self.epsilon):
            raise ValueError("epsilon must be finite: an infinite budget reads the degrees")
        if level not in SENSITIVITY:
            raise ValueError(f"level must be one of {tuple(SENSITIVITY)}, got {level!r}")
        if candidates is None:
            if max_bound is None:
                raise ValueError("give the public candidates or a public max_bound")
            candidates = round_candidates(max_bound)
        cands = [int(t) for t in candidates]
        if not cands or cands != sorted(set(cands)) or cands[0] < 1:
            raise ValueError(f"candidates must be distinct ascending integers >= 1, got {cands}")
        if int(exceed) < 0:
            raise ValueError(f"exceed must be >= 0, got {exceed!r}")
        if not (math.isfinite(float(prefer_small)) and float(prefer_small) >= 0):
            raise ValueError(f"prefer_small must be a finite number >= 0, got {prefer_small!r}")
        self.prefer_small = float(prefer_small)
        self.candidates = cands
        self.exceed = int(exceed)
        self.level = level
        self.name = str(name)
        self.reads = (EDGES,)

    @property
    def sensitivity(self) -> float:
        """Sensitivity of the utility: 2 at node level, 1 at edge level (module doc)."""
        return SENSITIVITY[self.level]

    def utility(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """``-|phi_t(G) - exceed|`` at every candidate (float64)."""
        return -(degree_excess(edge_index, num_nodes, self.candidates) - self.exceed).abs()

    def probabilities(self, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
        """The output distribution over :attr:`candidates` (float64; tests and diagnostics —
        it is a function of the private graph, not a release)."""
        logits = self.epsilon * self.utility(edge_index, num_nodes) / (2.0 * self.sensitivity)
        base = -self.prefer_small * torch.log(torch.tensor(self.candidates, dtype=torch.float64))
        return torch.softmax(logits + base, dim=0)

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record ``count`` releases (pure epsilon-DP each) on ``accountant``."""
        accountant.add_pure(
            self.name, self.epsilon, count=count,
            note=(
                f"exponential mechanism over {len(self.candidates)} public candidates "
                f"({self.candidates[0]}..{self.candidates[-1]}, base measure "
                f"t^-{self.prefer_small:g}), utility -|phi_t - {self.exceed}| of the degree "
                "excess profile, sensitivity "
                f"{self.sensitivity:g} ({self.level} level; privacy/degree.py)"
            ),
        )

    def __call__(
        self,
        edge_index: torch.Tensor,
        num_nodes: int,
        accountant: PrivacyAccountant,
        generator: torch.Generator | None = None,
    ) -> int:
        """Draw the bound (:meth:`sample`) and record the release on ``accountant``
        (required; a node-level release also covers one edge, not the reverse)."""
        return draw(self, accountant, generator, edge_index, num_nodes)

    def sample(
        self, edge_index: torch.Tensor, num_nodes: int, generator: torch.Generator | None = None
    ) -> int:
        """One of :attr:`candidates`, drawn from :meth:`probabilities`."""
        probs = self.probabilities(edge_index, num_nodes)
        return self.candidates[int(R.categorical(probs.view(1, -1), generator=generator)[0])]

    def __repr__(self) -> str:
        return (
            f"PrivateDegreeBound(epsilon={self.epsilon}, candidates={self.candidates[0]}.."
            f"{self.candidates[-1]} ({len(self.candidates)}), exceed={self.exceed}, "
            f"level={self.level!r})"
        )
