"""FeatureRR: HeteroRR's per-feature local-DP randomizer (Tran et al., eqs. 5-9, Theorem 3).

Feature ``i`` of a row is binned into one of ``k`` bins, ``t = ceil(k (z_i - alpha) / (beta -
alpha))``, and bin ``u`` is reported with ``Pr[u | t] ~ exp(-|u - t| / (k sigma_i))`` (eqs.
8-9) at Theorem 3's ``sigma_i = (k - 1) / (k epsilon_i)``, ``epsilon_i = epsilon * theta_i``:
the worst ratio is exactly ``e^{epsilon_i}`` and the row is ``epsilon * sum_i theta_i``-LDP by
sequential composition. So **theta must sum to 1** (the supplement normalises, eq. 7 does not)
**and be public**: a theta from a node's own data makes the noise depend on the input
(:func:`public_feature_weights` computes it once, on public data). The report is the bin's
centre (the paper's ``u/k`` is its upper edge; the privacy analysis is over bin indices), so
FeatureRR is **biased** towards the middle of the range.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import ClassVar

import torch

from . import random as R
from .accountant import PrivacyAccountant
from .ldp import Bounds, FeatureRandomizer, _check_d, _log_prob_of, _per_entry
from .mechanism import fields_repr

__all__ = ["FeatureRR", "public_feature_weights", "check_theta", "DEFAULT_K"]

#: default number of bins. FeatureRR's expected error is nearly flat in k once the bins are
#: narrower than the noise (the randomizer tends to a truncated Laplace as k grows, with the same
#: epsilon_i), while the discretisation error falls as 1/(4k): 32 bins keep it under 0.008 of the
#: range and cost nothing (sampling is O(1) per entry, one uniform each, for every k).
DEFAULT_K = 32

#: relative tolerance within which theta already counts as summing to one
_THETA_SUM_RTOL = 1e-6


def check_theta(theta: torch.Tensor | list | tuple, d: int | None = None) -> torch.Tensor:
    """Validate public feature weights (a 1-D sequence of finite, non-negative numbers with a
    positive sum, ``d`` of them when given) and return them as float64 normalised to sum 1, with
    a ``UserWarning`` when they did not (Theorem 3's ``epsilon`` per node needs it)."""
    if isinstance(theta, torch.Tensor):
        th = theta.detach().to(device="cpu", dtype=torch.float64)
    else:
        try:
            th = torch.as_tensor(theta, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(f"theta must be a 1-D sequence of numbers, got {theta!r}") from err
    if th.ndim != 1 or th.numel() == 0:
        raise ValueError(f"theta must be a non-empty 1-D vector (one weight per feature), "
                         f"got shape {tuple(th.shape)}")
    if d is not None and th.numel() != int(d):
        raise ValueError(f"theta has {th.numel()} weights but the rows have d = {d} features")
    if not bool(torch.isfinite(th).all()):
        raise ValueError("theta must be finite (no NaN or inf)")
    if bool((th < 0).any()):
        raise ValueError(f"theta must be non-negative, got min {float(th.min()):g}")
    total = float(th.sum())
    if not total > 0:
        raise ValueError("theta must have a positive sum (at least one feature with weight > 0)")
    if abs(total - 1.0) > _THETA_SUM_RTOL:
        warnings.warn(
            f"theta sums to {total:.9g}, not 1; it was normalised (Theorem 3 spends "
            f"epsilon * sum(theta) per node, so the weights must sum to one)",
            UserWarning,
            stacklevel=3,
        )
    return th / total


class FeatureRR(FeatureRandomizer):
    """FeatureRR (HeteroRR eqs. 8-9, Theorem 3): ``k``-bin exponential randomized response at
    ``epsilon_i = epsilon * theta_i`` per feature, epsilon-LDP per row; nodes send the reported
    bins' centres. ``theta``: public weights (:func:`check_theta`; ``None``: uniform; a zero
    weight makes its feature's report uniform, independent of the input)."""

    name: ClassVar[str] = "featurerr"

    def __init__(
        self,
        epsilon: float,
        theta: torch.Tensor | list | tuple | None = None,
        k: int = DEFAULT_K,
        alpha: Bounds = 0.0,
        beta: Bounds = 1.0,
    ) -> None:
        super().__init__(epsilon, alpha, beta)
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise ValueError(f"k (the number of bins) must be an integer >= 2, got {k!r}")
        self.k = k
        self.theta = None if theta is None else check_theta(theta)

    def __repr__(self) -> str:
        th = "uniform" if self.theta is None else f"tensor[{self.theta.numel()}]"
        return fields_repr(self, "epsilon", theta=th, k=self.k, alpha=self.alpha, beta=self.beta)

    def theta_for(self, d: int) -> torch.Tensor:
        """The weights for ``d`` features (float64, sum 1): theta, or uniform when ``None``."""
        d = _check_d(d)
        if self.theta is None:
            return torch.full((d,), 1.0 / d, dtype=torch.float64)
        if self.theta.numel() != d:
            raise ValueError(
                f"{self.name}: theta has {self.theta.numel()} weights but the rows have "
                f"d = {d} features"
            )
        return self.theta

    def _check_width(self, d: int) -> None:
        self.theta_for(d)

    def per_feature_epsilon(self, d: int) -> torch.Tensor:
        """``epsilon_i = epsilon * theta_i`` (float64, shape ``[d]``)."""
        return self.epsilon * self.theta_for(d)

    def sigma(self, d: int) -> torch.Tensor:
        """Theorem 3's noise scale ``sigma_i = (k - 1) / (k epsilon_i)`` (inf where theta_i = 0)."""
        return (self.k - 1) / (self.k * self.per_feature_epsilon(d))

    def _rate(self, d: int, device=None) -> torch.Tensor:
        """``1 / (k sigma_i) = epsilon_i / (k - 1)``: eq. 8 is ``exp(-rate |u - t|)``."""
        return (self.per_feature_epsilon(d) / (self.k - 1)).to(device)

    def transition_matrices(self, d: int) -> torch.Tensor:
        """``P[i, t, u] = Pr[u | t]`` of eq. 8 per feature, float64 ``[d, k, k]`` (0-based)."""
        idx = torch.arange(self.k, dtype=torch.float64)
        dist = (idx[:, None] - idx[None, :]).abs()
        logits = -self._rate(d)[:, None, None] * dist
        return torch.softmax(logits, dim=-1)

    def bin_index(self, x: torch.Tensor) -> torch.Tensor:
        """0-based bin of every entry: ``ceil(k s) - 1`` clipped to ``[0, k - 1]``, where
        ``s = (x - alpha) / (beta - alpha)`` (the paper's ``(t-1)/k <= s <= t/k``)."""
        return self._bins(self._prepare(x))

    def _bins(self, xd: torch.Tensor) -> torch.Tensor:
        a, b = self._bounds(xd)
        s = (xd - a) / (b - a)
        return (torch.ceil(s * self.k) - 1.0).clamp_(0, self.k - 1).to(torch.long)

    def bin_values(self, d: int) -> torch.Tensor:
        """Bin centres ``alpha + (u + 1/2)/k (beta - alpha)``, float64 ``[d, k]`` (0-based u)."""
        a = torch.as_tensor(self.alpha, dtype=torch.float64).expand(d)
        b = torch.as_tensor(self.beta, dtype=torch.float64).expand(d)
        u = (torch.arange(self.k, dtype=torch.float64) + 0.5) / self.k
        return a[:, None] + (b - a)[:, None] * u[None, :]

    def _to_values(self, u: torch.Tensor) -> torch.Tensor:
        """Bin indices ``[n, d]`` -> bin centres (float64)."""
        a, b = self._bounds(u.to(torch.float64))
        return a + (b - a) * (u.to(torch.float64) + 0.5) / self.k

    def _sample_rows(self, x, d, generator):
        return self._to_values(self._sample_bins(self._bins(x), d, generator))

    def _sample_bins(
        self, t: torch.Tensor, d: int, generator: torch.Generator | None
    ) -> torch.Tensor:
        """Draw ``u ~ Pr[. | t]`` (eq. 8) for the 0-based bins ``t``, by exact inverse CDF with one
        uniform per entry: with ``q = exp(-rate)`` the masses are 1 at ``u = t``, ``G(t)`` below
        and ``G(k-1-t)`` above, ``G(n) = q (1 - q^n) / (1 - q)`` (``n`` at rate 0); a uniform on
        ``[0, C_t)`` picks the side and the distance ``j = floor(log(1 - v (1 - q)/q) / log q) +
        1``."""
        rate = self._rate(d, t.device).expand_as(t)
        k = self.k
        tf = t.to(torch.float64)
        below, above = tf, (k - 1) - tf
        flat = rate == 0  # zero-weight features: uniform over the bins

        # 1 - q and q / (1 - q) computed stably for tiny rates
        one_minus_q = -torch.expm1(-rate)
        q = torch.exp(-rate)
        safe = torch.where(flat, torch.ones_like(one_minus_q), one_minus_q)

        def mass(n: torch.Tensor) -> torch.Tensor:
            geo = q * (-torch.expm1(-rate * n)) / safe
            return torch.where(flat, n, geo)

        m_below, m_above = mass(below), mass(above)
        total = 1.0 + m_below + m_above
        v = R.uniform(tuple(t.shape), generator=generator, dtype=torch.float64,
                      device=t.device) * total

        def distance(w: torch.Tensor, limit: torch.Tensor) -> torch.Tensor:
            # smallest j >= 1 with G(j) > w; log q = -rate
            # log1p(arg) = log(1 - w (1-q)/q); arg > -1 exactly, kept so under rounding
            arg = (-w * safe / q).clamp(min=-1.0 + 2.0**-53)
            j_geo = torch.floor(torch.log1p(arg) / (-rate)) + 1.0
            j = torch.where(flat, torch.floor(w) + 1.0, j_geo)
            j = torch.nan_to_num(j, nan=1.0, posinf=float(k), neginf=1.0)
            return torch.minimum(torch.clamp(j, min=1.0), limit.clamp(min=1.0))

        w = v - 1.0
        go_below = (v >= 1.0) & (w < m_below)
        go_above = (v >= 1.0) & ~go_below
        u = tf.clone()
        u = torch.where(go_below, tf - distance(w, below), u)
        u = torch.where(go_above, tf + distance(w - m_below, above), u)
        return u.clamp_(0, k - 1).to(torch.long)

    def output_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact ``Pr[report = bin u | x]`` per entry, float64 ``x.shape + (k,)`` (0-based u)."""
        xd = self._prepare(x)
        d = xd.shape[-1]
        t = self._bins(xd)
        idx = torch.arange(self.k, dtype=torch.float64, device=xd.device)
        dist = (idx - t.to(torch.float64).unsqueeze(-1)).abs()
        rate = self._rate(d, xd.device).unsqueeze(-1)
        return torch.softmax(-rate * dist, dim=-1)

    def log_prob(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Exact joint log-probability of report rows ``y`` (bin centres, as sent) given input
        rows ``x``: one value per row (sum over features)."""
        u = self._bins(self._clip64(y.to(torch.float64)))
        return _log_prob_of(self.output_probabilities(x), u)

    def _moment(self, xd: torch.Tensor, fn) -> torch.Tensor:
        probs = self.output_probabilities(xd)
        vals = self.bin_values(xd.shape[-1]).to(xd.device)
        return (probs * fn(vals, xd.unsqueeze(-1))).sum(dim=-1)

    @_per_entry
    def expected_output(self, xd: torch.Tensor) -> torch.Tensor:
        """``E[y | x]`` per entry (exact; not ``x``: FeatureRR is biased)."""
        return self._moment(xd, lambda v, _x: v)

    @_per_entry
    def variance(self, xd: torch.Tensor) -> torch.Tensor:
        """Exact ``Var[y | x]`` per entry (the spread of the report around its own mean)."""
        mean = self._moment(xd, lambda v, _x: v)
        return (self._moment(xd, lambda v, _x: v**2) - mean**2).clamp_(min=0.0)

    @_per_entry
    def mean_squared_error(self, xd: torch.Tensor) -> torch.Tensor:
        """Exact ``E[(y - x)^2 | x]`` per entry (variance plus squared bias)."""
        return self._moment(xd, lambda v, xx: (v - xx) ** 2)

    @_per_entry
    def expected_error(self, xd: torch.Tensor) -> torch.Tensor:
        """Exact ``E|y - x|`` per entry (discretisation and randomization together)."""
        return self._moment(xd, lambda v, xx: (v - xx).abs())

    def total_epsilon(self, d: int | None = None) -> float:
        """Per-row spend: the ``epsilon_i`` composed sequentially (Theorem 3) on a scratch
        accountant. Exactly ``epsilon * sum(theta) = epsilon``; the float sum may differ in the
        last bits, so it is checked against ``epsilon`` (relative 1e-9), which is returned."""
        scratch = PrivacyAccountant(level="ldp")
        values, counts = torch.unique(self.per_feature_epsilon(self._resolve_d(d)),
                                      return_counts=True)
        for eps_i, count in zip(values.tolist(), counts.tolist(), strict=True):
            if eps_i > 0:  # a zero-weight feature's report ignores its input: no spend
                scratch.add_pure(f"{self.name}/feature", eps_i, count=int(count))
        composed = scratch.epsilon()
        if not math.isclose(composed, self.epsilon, rel_tol=1e-9):
            raise RuntimeError(  # unreachable while theta is normalised; never under-report
                f"{self.name}: the per-feature budgets compose to {composed!r}, not "
                f"epsilon = {self.epsilon!r}"
            )
        return self.epsilon

    def _note(self, d: int | None = None) -> str:
        d = self._width() if d is None else int(d)
        uniform = self.theta is None or bool((self.theta == self.theta[0]).all())
        split = "uniform theta" if uniform else "public theta"
        tail = "" if d is None else f" over {d} features"
        return (
            f"FeatureRR feature LDP (HeteroRR Theorem 3): k={self.k}, {split}, epsilon_i = "
            f"epsilon * theta_i composed sequentially{tail} = {self.epsilon:g} per node"
        )


def _as_matrix(x, name: str) -> torch.Tensor:
    t = torch.as_tensor(x).detach().to(device="cpu", dtype=torch.float64)
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 1:
        raise ValueError(f"{name} must be a [n >= 2, d >= 1] matrix, got shape {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t


def _normalise(v: torch.Tensor) -> torch.Tensor:
    """``v / sum(v)``; uniform when ``v`` is all zero."""
    s = float(v.sum())
    return v / s if s > 0 else torch.full_like(v, 1.0 / v.numel())


def _sensitivity(
    xp: torch.Tensor, sensitive: torch.Tensor | None, embed, mask_value: float, d: int
) -> torch.Tensor:
    """beta of eq. 5, averaged over the public nodes (uniform without sensitive inputs)."""
    if sensitive is None or not bool(sensitive.any()):
        return torch.full((d,), 1.0 / d, dtype=torch.float64)  # eq. 5 is 0/0: all alike
    masked = xp.clone()
    masked[:, sensitive] = mask_value
    change = (embed(xp) - embed(masked)).abs()
    norms = change.sum(dim=1, keepdim=True)
    rows = norms.squeeze(1) > 0
    if not bool(rows.any()):
        return torch.full((d,), 1.0 / d, dtype=torch.float64)
    return _normalise((change[rows] / norms[rows]).mean(dim=0))


def _importance(z: torch.Tensor, yp: torch.Tensor, coef) -> torch.Tensor:
    """alpha of eq. 6 by exact linear SHAP: ``phi = w (z - E z)``, mean ``|phi|``."""
    if coef is None:
        from sklearn.linear_model import LogisticRegression

        if int(torch.unique(yp).numel()) < 2:
            raise ValueError("the public labels must hold at least two classes")
        model = LogisticRegression(max_iter=2000)
        model.fit(z.numpy(), yp.numpy())
        w = torch.as_tensor(model.coef_, dtype=torch.float64)
    else:
        w = torch.as_tensor(coef, dtype=torch.float64)
        w = w.unsqueeze(0) if w.ndim == 1 else w
        if w.ndim != 2 or w.shape[1] != z.shape[1] or not bool(torch.isfinite(w).all()):
            raise ValueError(f"coef must be a finite [d] or [classes, d] array with d = "
                             f"{z.shape[1]}, got shape {tuple(w.shape)}")
    centred = z - z.mean(dim=0, keepdim=True)  # E z over the public (background) nodes
    shap = w[None, :, :] * centred[:, None, :]  # [n, classes, d]
    return _normalise(shap.abs().mean(dim=(0, 1)))


def public_feature_weights(
    x_public,
    y_public,
    sensitive=None,
    *,
    gamma: float = 0.5,
    embed: Callable[[torch.Tensor], torch.Tensor] | None = None,
    mask_value: float = 0.0,
    coef=None,
    return_scores: bool = False,
):
    """HeteroRR's feature weights theta (eqs. 5-7), float64 ``[d]`` summing to 1 (and
    ``alpha``, ``beta`` with ``return_scores``), from ``x_public``, ``y_public`` of a *public*
    node subset only: theta sets every feature's noise scale, so a theta read off a protected
    node breaks Theorem 3's bound.

    ``theta_i = gamma alpha_i + (1 - gamma) (beta_min + beta_max - beta_i)`` (eq. 7),
    normalised: ``beta_i`` (eq. 5) is the mean ``|z_vi - zhat_vi| / ||z_v - zhat_v||_1`` with
    the ``sensitive`` inputs set to ``mask_value`` (``None``: ``1/d``), ``alpha_i`` (eq. 6) the
    normalised mean exact SHAP value of a public linear model (``coef``, else a logistic
    regression fitted on ``(embed(x_public), y_public)``).
    """
    xp = _as_matrix(x_public, "x_public")
    yp = torch.as_tensor(y_public).detach().to("cpu").reshape(-1)
    if yp.numel() != xp.shape[0]:
        raise ValueError(f"y_public has {yp.numel()} labels for {xp.shape[0]} public nodes")
    if yp.is_floating_point() or yp.dtype == torch.bool:
        raise ValueError(f"y_public must hold integer class labels, got {yp.dtype}")
    if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
    mask = None
    if sensitive is not None:
        mask = torch.as_tensor(sensitive).detach().to("cpu")
        if mask.dtype != torch.bool or mask.ndim != 1 or mask.numel() != xp.shape[1]:
            raise ValueError(f"sensitive must be a boolean mask over the {xp.shape[1]} input "
                             f"features, got {mask.dtype} of shape {tuple(mask.shape)}")
    g = embed if embed is not None else (lambda v: v)

    def embed64(v: torch.Tensor) -> torch.Tensor:
        return _as_matrix(g(v), "embed(x)")

    z = embed64(xp)
    d = z.shape[1]
    beta = _sensitivity(xp, mask, embed64, float(mask_value), d)
    alpha = _importance(z, yp.to(torch.long), coef)
    theta = gamma * alpha + (1.0 - gamma) * (beta.min() + beta.max() - beta)
    theta = _normalise(theta)
    return (theta, alpha, beta) if return_scores else theta
