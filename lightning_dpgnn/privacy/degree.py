"""A differentially private degree bound D (docs/privacy.md, "Choosing D").

Node-level models promise every in- and out-degree is at most D, which must be public or
released here and recorded (the observed maximum is one node's data).

**Statistic and sensitivity.** ``deg(v) = max(in, out)`` on distinct pairs,
``c_t = #{v : deg(v) > t}`` and ``phi_t = min_{j >= 0} (c_{t+j} + j)`` (0 exactly when
``t >= max deg``). Removing a node drops every other ``deg`` by at most 1 and removes ``v``, so
``|phi_t(G) - phi_t(G')| <= 2`` on every simple graph; one edge moves it by at most 1.
(``c_t`` itself has no bound: a star's centre moves ``c_0`` by its size.)

**Release.** The exponential mechanism over public candidates, ``Pr[t] ∝ t^-a exp(epsilon u(t)
/ (2 Delta))``, ``u(t) = -|phi_t - exceed|``: pure ``epsilon``-DP. A release below the maximum
makes the fit refuse (``DegreeBoundError``); estimating again is another recorded read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .mechanism import EDGES, fields_repr

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
    ei, m = edge_index.to(torch.long).cpu(), max(n, 1)
    pairs = torch.unique(ei[0] * m + ei[1])
    src, dst = pairs // m, pairs % m
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
    t = torch.arange(top + 2, dtype=torch.float64)  # phi_t = min_{s >= t} (c_s + s) - t
    phi = (c + t).flip(0).cummin(0).values.flip(0) - t
    return phi[torch.tensor(cands)]


class PrivateDegreeBound:
    """Release a degree bound D under pure epsilon-DP (module doc), e.g.
    ``draw(PrivateDegreeBound(0.5, max_bound=5000), acc, None, edge_index, num_nodes)``, over
    public ``candidates`` (default :func:`round_candidates` up to a public ``max_bound``);
    ``exceed`` nodes may stay above the optimum, and ``prefer_small`` is the data-independent
    exponent ``a`` of the base measure ``t^-a``."""

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
        self.epsilon = check_epsilon(epsilon, finite="(an infinite budget reads the degrees)")
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

    def sample(
        self, edge_index: torch.Tensor, num_nodes: int, generator: torch.Generator | None = None
    ) -> int:
        """One of :attr:`candidates`, drawn from :meth:`probabilities`."""
        probs = self.probabilities(edge_index, num_nodes)
        return self.candidates[int(R.categorical(probs.view(1, -1), generator=generator)[0])]

    def __repr__(self) -> str:
        c = self.candidates
        return fields_repr(self, "epsilon", candidates=f"{c[0]}..{c[-1]} ({len(c)})",
                           exceed=self.exceed, level=self.level)
