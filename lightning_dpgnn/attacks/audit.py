"""Empirical audit of an aggregation mechanism (Jagielski et al. 2020; docs/audits.md): test
scores with and without a canary, over disjoint copies of a gadget in one graph, bound epsilon
from below through Clopper-Pearson error rates. No private data, no Lightning."""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from typing import Literal

import numpy as np
import torch
from scipy.stats import binomtest

from ..levels import Level
from ..privacy import PrivacyAccountant
from ..privacy.aggregation import GaussianAggregation
from ..privacy.mechanism import draw

__all__ = [
    "AuditResult", "audit_aggregation", "audit_mechanism", "clopper_pearson",
    "epsilon_lower_bound",
]  # fmt: skip

Unit = Literal["edge-directed", "edge-undirected", "node"]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Two-sided ``1 - alpha`` Clopper-Pearson interval of a binomial proportion."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    ci = binomtest(successes, trials).proportion_ci(1 - alpha, method="exact")
    return float(ci.low), float(ci.high)


def _bound(fpr_hi: float, fnr_hi: float, delta: float) -> float:
    """``max`` of the two hypothesis-testing bounds at upper-bounded error rates."""
    best = 0.0
    for a, b in ((fpr_hi, fnr_hi), (fnr_hi, fpr_hi)):
        if a > 0 and 1 - delta - b > a:
            best = max(best, math.log((1 - delta - b) / a))
    return best


def _point_bound(out_scores: np.ndarray, in_scores: np.ndarray, t: float, delta: float) -> float:
    fpr = float((out_scores > t).mean())
    fnr = float((in_scores <= t).mean())
    return _bound(max(fpr, 1.0 / len(out_scores)), max(fnr, 1.0 / len(in_scores)), delta)


@dataclass(frozen=True)
class EpsilonBound:
    """A lower bound on epsilon from one threshold test, and the rates it came from."""

    epsilon: float
    threshold: float
    fpr_upper: float
    fnr_upper: float


def epsilon_lower_bound(
    out_scores: np.ndarray | torch.Tensor,
    in_scores: np.ndarray | torch.Tensor,
    delta: float,
    confidence: float = 0.95,
    candidates: int = 400,
) -> EpsilonBound:
    """Lower bound on epsilon, valid with probability ``confidence``: a threshold chosen on half of
    the scores without / with the canary, its error rates bounded on the other half."""
    out_s = np.asarray(out_scores, dtype=np.float64).ravel()
    in_s = np.asarray(in_scores, dtype=np.float64).ravel()
    if len(out_s) < 4 or len(in_s) < 4:
        raise ValueError("need at least 4 scores per hypothesis")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    h_out, h_in = len(out_s) // 2, len(in_s) // 2
    sel_out, ev_out = out_s[:h_out], out_s[h_out:]
    sel_in, ev_in = in_s[:h_in], in_s[h_in:]
    pooled = np.concatenate([sel_out, sel_in])
    qs = np.quantile(pooled, np.linspace(0.0, 1.0, candidates + 2)[1:-1])
    t = max(qs, key=lambda q: _point_bound(sel_out, sel_in, float(q), delta))
    alpha = 1 - confidence
    _, fpr_hi = clopper_pearson(int((ev_out > t).sum()), len(ev_out), alpha)
    _, fnr_hi = clopper_pearson(int((ev_in <= t).sum()), len(ev_in), alpha)
    return EpsilonBound(_bound(fpr_hi, fnr_hi, delta), float(t), fpr_hi, fnr_hi)


@dataclass(frozen=True)
class AuditResult:
    """What :func:`audit_aggregation` measured, next to what the mechanism recorded."""

    unit: str
    trials: int
    delta: float
    confidence: float
    epsilon_accounted: float
    epsilon_lower: float
    threshold: float
    fpr_upper: float
    fnr_upper: float

    @property
    def consistent(self) -> bool:
        """``True`` when the measured lower bound does not exceed the accounted epsilon."""
        return self.epsilon_lower <= self.epsilon_accounted

    @property
    def table_cells(self) -> str:
        """``accounted | measured | verdict``: the last cells of a markdown results row."""
        verdict = "consistent" if self.consistent else "**violation**"
        return f"{self.epsilon_accounted:.3f} | {self.epsilon_lower:.3f} | {verdict}"

    def __str__(self) -> str:
        verdict = "consistent" if self.consistent else "VIOLATION"
        return (
            f"audit ({self.unit}, {self.trials} trials per hypothesis, {self.confidence:.0%} "
            f"confidence): empirical epsilon >= {self.epsilon_lower:.3f} vs accounted "
            f"{self.epsilon_accounted:.3f} at delta={self.delta:.1e}: {verdict}"
        )


def _gadget(unit: Unit, copies: int, dim: int, degree: int, generator: torch.Generator):
    """Features, the edges without / with the canaries, and an output's score: per copy, target(s)
    with a background in-neighbour and a canary node of feature ``e_0`` linked to them."""
    targets = degree if unit == Level.NODE else 1
    per = targets + 2  # targets, one background node, the canary
    n = copies * per
    x = torch.randn(n, dim, generator=generator)
    base = torch.arange(copies) * per
    canary = base + per - 1
    background = base + targets
    x[canary] = 0.0
    x[canary, 0] = 1.0
    tgt = base[:, None] + torch.arange(targets)[None, :]  # [copies, targets]
    bg_edges = torch.stack([background.repeat_interleave(targets), tgt.reshape(-1)])
    can_edges = torch.stack([canary.repeat_interleave(targets), tgt.reshape(-1)])
    if unit == "edge-undirected":
        can_edges = torch.cat([can_edges, can_edges.flip(0)], dim=1)
    edges_in = torch.cat([bg_edges, can_edges], dim=1)
    t_dirs = torch.nn.functional.normalize(x[tgt[:, 0]], dim=-1)

    def score(out: torch.Tensor) -> torch.Tensor:
        s = out[tgt, 0].sum(1)  # every target row, along the canary's direction e_0
        if unit == "edge-undirected":  # the canary's own row moves along the target's row
            s = s + (out[canary] * t_dirs).sum(-1)
        return s

    return x, bg_edges, edges_in, n, score


def audit_aggregation(
    mechanism: GaussianAggregation,
    unit: Unit = "edge-directed",
    *,
    trials: int = 100_000,
    delta: float = 1e-5,
    confidence: float = 0.95,
    dim: int = 4,
    degree: int = 4,
    level: Literal["edge", "node"] | None = None,
    generator: torch.Generator | None = None,
    noise_generator: torch.Generator | None = None,
) -> AuditResult:
    """Audit one aggregation mechanism (``aggregate(x, edge_index, num_nodes)`` and the
    mechanism protocol, drawn through :func:`~..privacy.mechanism.draw`) against the epsilon it
    records for one call, with ``trials`` gadget copies per hypothesis."""
    if trials < 8:
        raise ValueError(f"trials must be >= 8, got {trials}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    x, edges_out, edges_in, n, score = _gadget(unit, trials, dim, degree, gen)
    acc_level = level or (Level.NODE if unit == Level.NODE else Level.EDGE)
    scores, eps = [], []
    for edges in (edges_out, edges_in):
        acc = PrivacyAccountant(acc_level, delta)
        out = draw(mechanism, acc, noise_generator, mechanism.aggregate(x, edges, n))
        scores.append(score(out).numpy())
        if len(acc.ledger) != 1:
            raise ValueError(f"the mechanism must record one entry per call, got {acc.ledger}")
        eps.append(acc.epsilon(delta))
    bound = epsilon_lower_bound(scores[0], scores[1], delta, confidence)
    return AuditResult(unit, trials, delta, confidence, max(eps), *astuple(bound))


#: most gadget nodes one :func:`audit_mechanism` call builds (node level: ``D + 2`` per trial)
MAX_GADGET_NODES = 4_000_000


def audit_mechanism(
    mechanism: GaussianAggregation,
    *,
    trials: int = 20_000,
    delta: float = 1e-5,
    confidence: float = 0.95,
    max_nodes: int = MAX_GADGET_NODES,
    noise_generator: torch.Generator | None = None,
) -> AuditResult:
    """Audit a model's aggregation on the unit it protects (node level: a node with
    ``max_degree`` out-edges, ``trials`` lowered to fit ``max_nodes``, never below 1,000)."""
    if not isinstance(mechanism, GaussianAggregation):
        raise TypeError(f"expected a GaussianAggregation, got {type(mechanism).__name__}")
    if Level.of(mechanism.level) is Level.NODE:
        degree = int(mechanism.max_degree)  # type: ignore[arg-type]
        trials = max(1000, min(int(trials), max_nodes // (degree + 2)))
        unit: Unit = "node"
    else:
        degree, unit = 1, f"edge-{mechanism.edge_unit}"  # type: ignore[assignment]
    return audit_aggregation(
        mechanism, unit, trials=trials, delta=delta, confidence=confidence, degree=degree,
        noise_generator=noise_generator,
    )  # fmt: skip
