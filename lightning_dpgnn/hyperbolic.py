"""Poincaré-ball geometry with curvature ``-c`` (``c > 0``): the ball ``{x : c ||x||^2 < 1}``.

The operations PoinDP needs (``docs/poindp.md``), from their closed forms (Ganea, Bécigneul and
Hofmann 2018, *Hyperbolic neural networks*, eqs. 2-7), row-wise on the last dimension, keeping
the input's dtype and device. :func:`project` keeps points ``(1 - eps) / sqrt(c)`` from the
origin at most (:data:`BALL_EPS`, the margins HGCN and geoopt use) so ``artanh`` stays finite.
A leaf of the package (torch only).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "BALL_EPS",
    "MIN_NORM",
    "check_curvature",
    "mobius_add",
    "conformal_factor",
    "expmap0",
    "logmap0",
    "expmap",
    "logmap",
    "dist",
    "project",
    "max_tangent_norm",
]

#: margin from the boundary kept by :func:`project`, per floating-point dtype
BALL_EPS = {torch.float32: 4e-3, torch.float64: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}
#: norms below this are treated as zero (no division by zero)
MIN_NORM = 1e-15


def check_curvature(c: float) -> float:
    """A curvature magnitude: a finite number > 0 (the ball has radius ``1 / sqrt(c)``)."""
    try:
        value = float(c)
    except (TypeError, ValueError) as err:
        raise ValueError(f"curvature must be a number > 0, got {c!r}") from err
    if isinstance(c, bool) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"curvature must be a finite number > 0, got {c!r}")
    return value


def _eps(x: torch.Tensor) -> float:
    return BALL_EPS.get(x.dtype, 4e-3)


def _norm(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(MIN_NORM)


def _artanh(x: torch.Tensor) -> torch.Tensor:
    """``artanh`` clamped inside ``(-1, 1)`` (finite at the dtype's last value below 1)."""
    limit = 1.0 - torch.finfo(x.dtype).eps
    return torch.atanh(x.clamp(-limit, limit))


def project(x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """``x`` with every row of norm above ``(1 - eps) / sqrt(c)`` scaled back to it."""
    c = check_curvature(c)
    limit = (1.0 - _eps(x)) / math.sqrt(c)
    norm = _norm(x)
    return torch.where(norm > limit, x / norm * limit, x)


def max_tangent_norm(dtype: torch.dtype = torch.float32, c: float = 1.0) -> float:
    """The largest tangent norm at the origin whose image under :func:`expmap0` survives
    :func:`project` unchanged: ``artanh(1 - eps) / sqrt(c)`` (float32: about 3.1 at c = 1)."""
    c = check_curvature(c)
    return math.atanh(1.0 - BALL_EPS.get(dtype, 4e-3)) / math.sqrt(c)


def mobius_add(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Möbius addition ``x ⊕_c y``."""
    c = check_curvature(c)
    x2 = (x * x).sum(dim=-1, keepdim=True)
    y2 = (y * y).sum(dim=-1, keepdim=True)
    xy = (x * y).sum(dim=-1, keepdim=True)
    num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
    den = 1 + 2 * c * xy + c**2 * x2 * y2
    return num / den.clamp_min(MIN_NORM)


def conformal_factor(x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """``λ_x^c = 2 / (1 - c |x|²)`` (``[..., 1]``)."""
    c = check_curvature(c)
    return 2.0 / (1.0 - c * (x * x).sum(dim=-1, keepdim=True)).clamp_min(MIN_NORM)


def expmap0(v: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """The exponential map at the origin: a tangent vector to a point of the ball."""
    c = check_curvature(c)
    sc = math.sqrt(c)
    norm = _norm(v)
    return project(torch.tanh(sc * norm) * v / (sc * norm), c)


def logmap0(y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """The logarithmic map at the origin (inverse of :func:`expmap0` inside the ball)."""
    c = check_curvature(c)
    sc = math.sqrt(c)
    norm = _norm(y)
    return _artanh(sc * norm) * y / (sc * norm)


def expmap(x: torch.Tensor, v: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """The exponential map at ``x``: the point reached from ``x`` along the tangent ``v``."""
    c = check_curvature(c)
    sc = math.sqrt(c)
    norm = _norm(v)
    second = torch.tanh(sc * conformal_factor(x, c) * norm / 2) * v / (sc * norm)
    return project(mobius_add(x, second, c), c)


def logmap(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """The logarithmic map at ``x``: the tangent at ``x`` pointing to ``y`` (inverse of
    :func:`expmap`)."""
    c = check_curvature(c)
    sc = math.sqrt(c)
    sub = mobius_add(-x, y, c)
    norm = _norm(sub)
    return 2 / (sc * conformal_factor(x, c)) * _artanh(sc * norm) * sub / norm


def dist(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Geodesic distance ``2 / sqrt(c) artanh(sqrt(c) |-x ⊕ y|)`` (``[...]``)."""
    c = check_curvature(c)
    sc = math.sqrt(c)
    norm = torch.linalg.vector_norm(mobius_add(-x, y, c), dim=-1)
    return 2 / sc * _artanh(sc * norm)
