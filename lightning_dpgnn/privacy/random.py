"""Noise sources for every mechanism, with a secure-randomness switch (invariant no-replay).

A draw without a generator comes from a per-device generator seeded from ``os.urandom``, never
torch's global one, so no seed replays privacy noise; an explicit generator
(:func:`reproducible_generator`) gives reproducible noise, *not private against anyone who
knows the seed* (the draw marks its accountant so), drawn where it lives and copied over.
Secure mode (:func:`secure_mode`) builds every uniform from the OS CSPRNG and refuses
generators; its Gaussian noise is the sum of two Box–Muller draws of variance ``std**2 / 2``
(opacus' mitigation of floating-point attacks).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

__all__ = [
    "SecureModeError",
    "set_secure_mode",
    "is_secure_mode",
    "secure_mode",
    "uniform",
    "normal",
    "laplace",
    "bernoulli",
    "categorical",
    "permutation",
    "bernoulli_positions",
    "secure_draw_count",
    "reproducible_generator",
    "entropy_generator",
]

_SECURE = False
_SECURE_DRAWS = 0  # number of draws served from the OS CSPRNG (lets tests see the switch work)


class SecureModeError(RuntimeError):
    """Raised when a seeded generator is used while secure mode is on."""


def set_secure_mode(enabled: bool) -> None:
    """Turn secure randomness on or off for every mechanism in the process."""
    global _SECURE
    _SECURE = bool(enabled)


def is_secure_mode() -> bool:
    """Whether noise is currently drawn from the OS CSPRNG."""
    return _SECURE


@contextmanager
def secure_mode(enabled: bool = True) -> Iterator[None]:
    """Context manager that switches secure randomness on (or off) for its body."""
    previous = _SECURE
    set_secure_mode(enabled)
    try:
        yield
    finally:
        set_secure_mode(previous)


def secure_draw_count() -> int:
    """How many draws were served from the OS CSPRNG so far (diagnostics and tests)."""
    return _SECURE_DRAWS


_ENTROPY: dict[str, torch.Generator] = {}


def entropy_generator(device=None) -> torch.Generator:
    """The process-wide generator of ``device``, seeded once from 63 bits of ``os.urandom``
    (no seed an attacker can read replays it); a forked child re-seeds its own (pid in the key)."""
    dev = torch.device(device if device is not None else "cpu")
    key = f"{dev}:{os.getpid()}"
    gen = _ENTROPY.get(key)
    if gen is None:
        gen = torch.Generator(device=dev)
        gen.manual_seed(int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))
        _ENTROPY[key] = gen
    return gen


def reproducible_generator(seed: int, stream: int = 0, device=None) -> torch.Generator:
    """An explicitly seeded generator for *reproducible* noise (research runs, tests), not
    private against anyone who knows ``seed`` (the accountant is marked so); ``stream``
    separates independent draws from one seed. Refused in secure mode."""
    if _SECURE:
        raise SecureModeError("secure mode is on: reproducible (seeded) noise is refused")
    gen = torch.Generator(device=torch.device(device if device is not None else "cpu"))
    return gen.manual_seed((int(seed) * 1_000_003 + int(stream)) & ((1 << 63) - 1))


def _check_generator(generator: torch.Generator | None) -> None:
    if _SECURE and generator is not None:
        raise SecureModeError(
            "secure mode is on but a torch.Generator was passed: seeded noise is predictable. "
            "Drop the generator/seed, or turn secure mode off for reproducible research runs."
        )


def _secure_uniform(shape: Sequence[int], dtype: torch.dtype, device) -> torch.Tensor:
    """Uniform(0, 1) variates from os.urandom, 53 random bits each, never exactly 0."""
    global _SECURE_DRAWS
    n = int(np.prod(shape)) if len(shape) else 1
    raw = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    u = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    _SECURE_DRAWS += 1
    return torch.from_numpy(u.reshape(tuple(shape))).to(device=device, dtype=dtype)


def _device_of(generator: torch.Generator | None, device) -> torch.device:
    """The device of a draw (checking first that ``generator`` is allowed in this mode)."""
    _check_generator(generator)
    if device is not None:
        return torch.device(device)
    if generator is not None:
        return generator.device
    return torch.device("cpu")


def _draw(shape, generator, dtype, device, secure, plain) -> torch.Tensor:
    """``secure(shape, dtype, device)`` in secure mode, else ``plain`` (``torch.rand`` or
    ``torch.randn``) from ``generator`` (or the device's entropy generator) on its own device,
    moved to ``device``."""
    device = _device_of(generator, device)
    if _SECURE:
        return secure(shape, dtype, device)
    gen = generator if generator is not None else entropy_generator(device)
    return plain(tuple(shape), generator=gen, dtype=dtype, device=gen.device).to(device)


def uniform(
    shape: Sequence[int],
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> torch.Tensor:
    """Uniform(0, 1) variates of ``shape``."""
    return _draw(shape, generator, dtype, device, _secure_uniform, torch.rand)


def _secure_standard_normal(shape: Sequence[int], device) -> torch.Tensor:
    """N(0, 1) in float64 as two independent Box–Muller draws of variance 1/2 each (opacus'
    mitigation of floating-point attacks)."""
    z = torch.zeros(tuple(shape), dtype=torch.float64, device=device)
    for _ in range(2):
        u1 = _secure_uniform(shape, torch.float64, device)
        u2 = _secure_uniform(shape, torch.float64, device)
        z = z + torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)
    return z / math.sqrt(2.0)


def normal(
    shape: Sequence[int],
    std: float | torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> torch.Tensor:
    """Centred Gaussian noise N(0, std^2) of ``shape``."""

    def secure(shape, dtype, device):  # scaled in float64, then cast
        return (_secure_standard_normal(shape, device) * std).to(dtype)

    noise = _draw(shape, generator, dtype, device, secure, torch.randn)
    return noise if _SECURE else noise * std


def laplace(
    shape: Sequence[int], scale: float | torch.Tensor, *, dtype: torch.dtype = torch.float32, **at
) -> torch.Tensor:
    """Centred Laplace noise Lap(scale) of ``shape`` (inverse-CDF from :func:`uniform`
    variates; ``at``: its ``generator`` and ``device``)."""
    u = uniform(shape, dtype=torch.float64, **at) - 0.5
    # guard the measure-zero endpoint u = -1/2 of torch.rand
    u = u.clamp(min=-0.5 + 1e-16)
    noise = -torch.sign(u) * torch.log1p(-2.0 * u.abs())
    return (noise * scale).to(dtype)


def bernoulli(p: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Bernoulli(p) draws (as a bool tensor) with the shape and device of ``p``."""
    u = uniform(p.shape, generator=generator, dtype=torch.float64, device=p.device)
    return u < p.to(torch.float64)


def categorical(probs: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """One draw per row of the row-stochastic matrix ``probs`` (inverse-CDF sampling)."""
    u = uniform((probs.shape[0], 1), generator=generator, dtype=torch.float64, device=probs.device)
    cdf = probs.to(torch.float64).cumsum(dim=1)
    idx = (u > cdf).sum(dim=1)
    return idx.clamp(max=probs.shape[1] - 1)


def permutation(n: int, generator: torch.Generator | None = None) -> np.ndarray:
    """A uniformly random order of ``range(n)`` (argsort of uniform draws)."""
    return torch.argsort(uniform((int(n),), generator=generator, dtype=torch.float64)).numpy()


def bernoulli_positions(
    totals: torch.Tensor,
    rates: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The successes of independent Bernoulli trials: segment ``s`` has ``totals[s]``
    positions, each a success with probability ``rates[s]`` (clipped to [0, 1]). Drawn exactly
    as geometric gaps ``floor(log U / log(1 - rate)) + 1`` between successes, in
    ``O(#successes)``, all segments' uniforms together through :func:`uniform`. Returns
    ``(segment, position)``, ``int64``, sorted (EdgeRand's flipped non-edges, HRG sampling)."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    totals = torch.as_tensor(totals, dtype=torch.long).cpu()
    rates = torch.as_tensor(rates, dtype=torch.float64).cpu().clamp(0.0, 1.0)
    if totals.shape != rates.shape or totals.dim() != 1:
        raise ValueError("totals and rates must be 1-d tensors of the same length")
    segs, poss = [], []
    full = torch.nonzero((rates >= 1.0) & (totals > 0)).flatten()
    for s in full.tolist():  # every position: no draw needed
        poss.append(torch.arange(int(totals[s]), dtype=torch.long))
        segs.append(torch.full((int(totals[s]),), s, dtype=torch.long))
    live = torch.nonzero((rates > 0.0) & (rates < 1.0) & (totals > 0)).flatten()
    last = torch.full_like(totals, -1)
    log_miss = torch.log1p(-rates)
    while live.numel():
        remaining = (totals[live] - 1 - last[live]).double()
        mu = remaining * rates[live]
        k = torch.ceil(mu * 1.05 + 4.0 * mu.sqrt() + 8.0).long()
        k = torch.minimum(k, remaining.long() + 1)
        seg = torch.repeat_interleave(live, k)
        u = uniform((int(k.sum()),), generator=generator, dtype=torch.float64)
        gaps = torch.floor(torch.log(u) / log_miss[seg]) + 1.0
        gaps = torch.minimum(gaps, (remaining + 1.0).repeat_interleave(k)).long()
        csum = torch.cumsum(gaps, 0)
        ends = torch.cumsum(k, 0)
        before = torch.cat([csum.new_zeros(1), csum[ends[:-1] - 1]])
        pos = last[seg] + csum - before.repeat_interleave(k)
        keep = pos < totals[seg]
        segs.append(seg[keep])
        poss.append(pos[keep])
        last[live] = pos[ends - 1]
        live = live[last[live] < totals[live] - 1]
    if not segs:
        empty = torch.empty(0, dtype=torch.long, device=device)
        return empty, empty.clone()
    seg, pos = torch.cat(segs), torch.cat(poss)
    order = torch.argsort(seg * (int(totals.max()) + 1) + pos)
    return seg[order].to(device), pos[order].to(device)
