"""The hyperbolic Gaussian mechanism of PoinDP (Wei et al., AAAI 2024), made sound
(``docs/poindp.md``: the paper's per-node sensitivities are local, not DP).

Each node's point is mapped to the tangent space at the origin, clipped to a public norm ``C``
and split into radius ``r_v`` (*inter*) and direction ``u_v`` (*intra*); released are the
in-neighbour sums ``R_v = sum_w r_w / C`` and ``U_v = sum_w u_w`` with Gaussian noise (one
:class:`~lightning_dpgnn.privacy.aggregation.GaussianAggregation` each, entries
``<name>/inter`` and ``<name>/intra``). Every summed row has norm at most 1, so each part is a
GAP hop (sensitivity 1, ``sqrt(2)`` or ``sqrt(D)``). The parts run at ``z / sqrt(beta)`` and
``z / sqrt(1 - beta)``: they compose exactly to one Gaussian at ``z`` (``beta`` splits rho, not
epsilon). Mapping back (:meth:`HyperbolicGaussian.recombine`) is post-processing.
"""

from __future__ import annotations

import copy
import math
from typing import Literal

import torch

from .. import hyperbolic as H
from ..levels import Level
from .accountant import PrivacyAccountant
from .aggregation import GaussianAggregation, check_degree_promise, normalize_rows, sum_aggregate
from .mechanism import Steps, fields_repr, sample_steps

__all__ = ["HyperbolicGaussian", "check_beta", "check_clip", "optimal_beta"]


def _number(value: float, what: str, ok, why: str) -> float:
    """``value`` as a float, finite and passing ``ok`` (a bool is not a number)."""
    try:
        v = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what}, got {value!r}") from err
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{what}{why}, got {value!r}")
    return v


def check_beta(beta: float) -> float:
    """The inter-hierarchy (radius) share of the budget: a number in ``[0, 1]``. ``0`` releases
    the directions only (ablation "without inter"), ``1`` the radii only ("without intra")."""
    why = " (the inter-hierarchy share of the budget; 0 or 1 release one part only)"
    return _number(beta, "beta must be a number in [0, 1]", lambda b: 0.0 <= b <= 1.0, why)


def check_clip(clip: float) -> float:
    """The public clipping norm ``C`` of the tangent vectors: a finite number > 0."""
    return _number(clip, "clip must be a finite number > 0", lambda c: c > 0,
                   " (the public tangent norm C)")


def optimal_beta(dim: int) -> float:
    """The share minimising the summed noise variance ``sigma^2 (1 / beta + d / (1 - beta))``
    (one inter coordinate, ``d`` intra ones, both of sensitivity 1): ``1 / (1 + sqrt(d))``, a
    function of the public embedding width only."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
    return 1.0 / (1.0 + math.sqrt(dim))


class HyperbolicGaussian:
    """The sound hyperbolic Gaussian mechanism (module docstring): one Gaussian sum
    aggregation per part (radius, direction) at its share ``beta`` / ``1 - beta`` of the
    budget, the whole release at ``noise_multiplier``. ``clip``: the public tangent norm ``C``;
    ``level``, ``max_degree``, ``edge_unit``: as
    :class:`~lightning_dpgnn.privacy.GaussianAggregation`; ``name``: the ledger prefix."""

    def __init__(
        self,
        noise_multiplier: float,
        *,
        beta: float = 0.5,
        clip: float = 1.0,
        curvature: float = 1.0,
        level: Literal["edge", "node"] = "edge",
        max_degree: int | None = None,
        edge_unit: Literal["undirected", "directed"] = "undirected",
        name: str = "poindp",
    ) -> None:
        self.beta = check_beta(beta)
        self.clip = check_clip(clip)
        self.curvature = H.check_curvature(curvature)
        self.name = str(name)
        kw = dict(level=level, max_degree=max_degree, edge_unit=edge_unit)
        self.inter = GaussianAggregation(noise_multiplier, name=f"{name}/inter", **kw)
        self.intra = GaussianAggregation(noise_multiplier, name=f"{name}/intra", **kw)
        self.noise_multiplier = self.inter.noise_multiplier
        self.level, self.reads = self.inter.level, self.inter.reads

    def parts(self) -> list[tuple[GaussianAggregation, float]]:
        """``(mechanism, scale of its noise multiplier)`` of each released part (inter at
        ``1 / sqrt(beta)``, intra at ``1 / sqrt(1 - beta)``)."""
        out = []
        if self.beta > 0:
            out.append((self.inter, 1.0 / math.sqrt(self.beta)))
        if self.beta < 1:
            out.append((self.intra, 1.0 / math.sqrt(1.0 - self.beta)))
        return out

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of each part's sum (rows of norm <= 1): GaussianAggregation's."""
        return self.inter.sensitivity

    def stds(self) -> dict[str, float]:
        """Noise standard deviation per released part, in the units of the sums."""
        return {m.name: m.std * s for m, s in self.parts()}

    def scaled(self, scale: float) -> HyperbolicGaussian:
        """This release at ``scale`` times its noise multiplier (a hop's share of a budget)."""
        if float(scale) == 1.0:
            return self
        out = copy.copy(self)
        out.inter, out.intra = self.inter.scaled(scale), self.intra.scaled(scale)
        out.noise_multiplier = out.inter.noise_multiplier
        return out

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record what ``count`` releases cost: each part at its share (a plan, or a draw)."""
        for mechanism, part_scale in self.parts():
            mechanism.scaled(part_scale).account(accountant, count=count)

    def split(self, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rho, u)``: each point's clipped tangent radius over ``C`` (``[N, 1]``, in
        ``[0, 1]``) and its direction (``[N, d]``, unit rows or zero)."""
        t = H.logmap0(points, self.curvature)
        norm = torch.linalg.vector_norm(t, dim=-1, keepdim=True)
        radius = norm.clamp(max=self.clip)
        return radius / self.clip, normalize_rows(t)

    def clipped_tangent(self, points: torch.Tensor) -> torch.Tensor:
        """``clip_C(log_0(points))``: what the mechanism reads of each node."""
        rho, u = self.split(points)
        return self.clip * rho * u

    def aggregate(
        self, points: torch.Tensor, edge_index: torch.Tensor, num_nodes: int
    ) -> torch.Tensor:
        """``[N, 1 + d]``: the pre-noise sums ``[R, U]`` (no noise: for tests and audits)."""
        rho, u = self.split(points)
        n = int(num_nodes)
        return torch.cat([sum_aggregate(rho, edge_index, n), sum_aggregate(u, edge_index, n)], 1)

    def steps(self, points: torch.Tensor, edge_index: torch.Tensor, num_nodes: int) -> Steps:
        """The release as draw steps (:func:`~.mechanism.run`): the noisy sums ``[R, U]``,
        ``[N, 1 + d]``, each part yielded as the Gaussian aggregation at its share."""
        if not isinstance(points, torch.Tensor) or not points.is_floating_point():
            raise TypeError(f"{self.name}: points must be a floating-point tensor")
        if points.ndim != 2:
            raise ValueError(f"{self.name}: points must be [num_nodes, d], got "
                             f"{tuple(points.shape)}")
        if not bool(torch.isfinite(points).all()):
            raise ValueError(f"{self.name}: points contain NaN or infinite values")
        radius = 1.0 / math.sqrt(self.curvature)
        top = float(torch.linalg.vector_norm(points, dim=-1).max()) if len(points) else 0.0
        if top >= radius:
            raise ValueError(
                f"{self.name}: points must lie inside the Poincaré ball of radius {radius:g} "
                f"(curvature {self.curvature:g}); the largest norm is {top:.6g} (use "
                "lightning_dpgnn.hyperbolic.project)"
            )
        n = int(num_nodes)
        if self.inter.level is Level.NODE:  # the promise the sqrt(D) sensitivity rests on
            check_degree_promise(edge_index, n, self.inter.max_degree)
        rho, u = self.split(points)
        self.inter.check_input(u, edge_index, n)  # the graph and (node level) the degrees
        shares, out = dict(self.parts()), []
        for mechanism, rows in ((self.inter, rho), (self.intra, u)):
            agg = sum_aggregate(rows, edge_index, n)
            share = shares.get(mechanism)
            out.append(torch.zeros_like(agg) if share is None
                       else (yield mechanism.scaled(share), agg))
        return torch.cat(out, dim=1)

    def sample(
        self, points: torch.Tensor, edge_index: torch.Tensor, num_nodes: int,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """The noisy sums of :meth:`steps`, recording nothing."""
        return sample_steps(self.steps(points, edge_index, num_nodes), generator)

    def recombine(self, release: torch.Tensor) -> torch.Tensor:
        """Points of the ball from a release (post-processing): ``exp_0(C r_hat u_hat)``,
        ``u_hat = U / |U|``, ``r_hat = clamp(R / max(|U|, 1), 0, 1)`` (1 without an inter part;
        the origin without an intra part)."""
        radius, directions = release[:, :1], release[:, 1:]
        length = torch.linalg.vector_norm(directions, dim=-1, keepdim=True)
        if self.beta > 0:
            r_hat = (radius / length.clamp_min(1.0)).clamp(0.0, 1.0)
        else:
            r_hat = torch.ones_like(radius)
        return H.expmap0(self.clip * r_hat * normalize_rows(directions), self.curvature)

    def __repr__(self) -> str:
        hop = self.inter
        return fields_repr(self, "noise_multiplier", "beta", "clip", "curvature",
                           level=hop.level, max_degree=hop.max_degree, edge_unit=hop.edge_unit)
