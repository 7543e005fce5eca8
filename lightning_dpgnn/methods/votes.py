"""Votes: at edge level, the private graph as an *addition* to the free path (issue 40).

At edge level the features and every label are public, so a model of the features alone (the
stage-0 network: GAP's and PoinDP's encoder, ProGAP's first stage) costs nothing. On graphs
with few labels the papers' classification modules, trained on the noisy aggregates, fall
below that free model (Cora, CiteSeer: ``benchmarks/results/poindp_accuracy.md``). The votes
make the edges an addition instead:

1. ``q``: the free model's class probabilities, with the one-hot label of every training node
   in place of its prediction (public at edge level), rows L2-normalized;
2. the release ``votes = A^T q + N(0, sigma^2)``: one Gaussian sum aggregation (sensitivity 1
   per directed edge, sqrt(2) per undirected edge, as a hop of normalized rows), drawn once
   when stage 1 starts, cached and checkpointed like the hops, accounted in the model's plan
   at ``votes_share`` of its Rényi cost (the method's own aggregations share the rest);
3. the answer: ``(1 - alpha) log p_free + alpha log p_method + beta votes``, with ``alpha``
   and ``beta`` chosen on the validation labels (public at edge level) from fixed grids that
   hold ``(0, 0)`` (the free model) and ``(1, 0)`` (the method alone): post-processing of the
   releases and of public data, so the guarantee is the plan's.

Node level is refused: the labels, hence ``q`` and the validation labels, are private there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch_geometric.data import Data

from ..privacy.aggregation import GaussianAggregation
from ..privacy.mechanism import Steps
from .releases import EDGES, FEATURES, TRAIN_LABELS, Draw, Release

if TYPE_CHECKING:
    from .ap import AggregationPerturbationModule

__all__ = ["VOTES", "Votes"]

#: cache, checkpoint and ledger name of the release
VOTES = "votes"
#: what the votes read: the edges, the features (through the free model) and training labels
VOTE_READS = (EDGES, FEATURES, TRAIN_LABELS)
#: the grids the answer's weights are chosen from on validation labels
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
BETAS = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)


class Votes:
    """The votes of a GAP, ProGAP or PoinDP model (see the module docstring); the model holds
    it as ``model.votes`` and its chosen ``(alpha, beta)`` in the buffer ``vote_weights``
    (NaN until the fit chooses them)."""

    def __init__(self, module: AggregationPerturbationModule, share: float) -> None:
        self.module, self.share = module, float(share)
        module.register_buffer("vote_weights", torch.full((2,), math.nan, dtype=torch.float64))
        module.declare_releases(Release(
            VOTES, self.mechanisms, self.draw, stage=1, collective=True, reads=VOTE_READS,
        ))  # fmt: skip

    # -- the release -------------------------------------------------------------------------
    def scale(self) -> float:
        """The votes' noise multiplier relative to the method's aggregations: with ``n`` of
        those at ``z``, the votes at ``z * sqrt((1 - share) / (share * n))`` take ``share`` of
        the plan's Rényi cost (Gaussian cost ``~ 1 / multiplier^2``)."""
        m = self.module
        n = m.total_aggregations() + (1 if m.label_counts else 0)
        return math.sqrt((1.0 - self.share) / (self.share * max(n, 1)))

    def mechanisms(self, z: float | None) -> list[GaussianAggregation]:
        m = self.module
        if not m.level.private:
            return []
        return [m._mechanism_for(z, VOTES, VOTE_READS).scaled(self.scale())]

    def draw(self, d: Draw) -> Steps:
        """``A^T normalize_rows(q) + noise`` on ``d.graph`` (every rank together on the fit's
        graph, each computing ``q`` for its rows)."""
        m = self.module
        if d.fit:
            q = m._gather(self.rows(m._local(d.graph)))
        else:
            q = self.rows(d.graph)
        return (yield from m._aggregate(q, d, 0))

    @torch.no_grad()
    def rows(self, graph: Data) -> torch.Tensor:
        """``q``: the free model's probabilities, a training node's one-hot label in place."""
        q = self.module.free_logits(graph).softmax(-1)
        known = self.module._known_labels(graph).to(q)
        has = known.sum(-1) > 0
        q[has] = known[has]
        return q

    # -- the answer --------------------------------------------------------------------------
    @property
    def chosen(self) -> bool:
        return not bool(torch.isnan(self.module.vote_weights).any())

    @staticmethod
    def _combine(free: torch.Tensor, method: torch.Tensor, votes: torch.Tensor,
                 alpha: float, beta: float) -> torch.Tensor:  # fmt: skip
        return (1 - alpha) * free.log_softmax(-1) + alpha * method.log_softmax(-1) + beta * votes

    @torch.no_grad()
    def choose(self, graph: Data, method: torch.Tensor, votes: torch.Tensor) -> None:
        """Pick ``(alpha, beta)`` on ``graph.val_mask`` (ties: the smaller ``beta``, then the
        smaller ``alpha``: the free model first)."""
        free, y, mask = self.module.free_logits(graph), graph.y, graph.val_mask
        votes = votes.to(free)
        best = None
        for beta in BETAS:
            for alpha in ALPHAS:
                scores = self._combine(free[mask], method[mask], votes[mask], alpha, beta)
                acc = float((scores.argmax(-1) == y[mask]).float().mean())
                if best is None or acc > best[0]:
                    best = (acc, alpha, beta)
        self.module.vote_weights.copy_(torch.tensor(best[1:], dtype=torch.float64))

    def answer(self, graph: Data, method: torch.Tensor, votes: Any) -> torch.Tensor:
        """The blended scores (log-probabilities up to a per-node constant) of ``graph``."""
        alpha, beta = (float(w) for w in self.module.vote_weights)
        free = self.module.free_logits(graph)
        return self._combine(free, method, votes.to(free), alpha, beta)
