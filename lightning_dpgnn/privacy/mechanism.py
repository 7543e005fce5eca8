"""The mechanism protocol, and the one place where a mechanism's draw is checked and recorded.

A mechanism has a ``name`` (its ledger entry), the ``level`` it spends under, what private data
it ``reads``, ``account(accountant, count=1)`` (what ``count`` draws cost: the plan, and what a
draw records) and ``sample(*inputs, generator=None)`` (the noisy output, recording nothing);
scale parameters are attributes, so plan and draw read one signature. :func:`run` is the
preamble, written once: it checks the accountant, marks reproducibility and records exactly
``account(..., 1)`` per draw of a release's generator of ``(mechanism, *inputs)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any, Protocol, runtime_checkable

import torch

from ..levels import LEVELS, Level

__all__ = [
    "EDGES", "FEATURES", "TRAIN_LABELS", "LABELS", "READS", "Clear", "Mechanism",
    "check_accountant", "draw", "run", "sample_steps", "fields_repr",
]

#: what a mechanism (and a release) may read of a graph
EDGES, FEATURES, TRAIN_LABELS, LABELS = "edges", "features", "train_labels", "labels"
READS = (EDGES, FEATURES, TRAIN_LABELS, LABELS)

def fields_repr(obj: object, *names: str, **shown: Any) -> str:
    """``Type(name=value, ...)``: the reprs of ``obj``'s attributes ``names``, then ``shown``."""
    pairs = [(k, getattr(obj, k)) for k in names] + list(shown.items())
    return f"{type(obj).__name__}({', '.join(f'{k}={v!r}' for k, v in pairs)})"


#: what a release's draw yields: ``(mechanism, *inputs)``; it is sent the noisy output
Steps = Generator[tuple, Any, Any]


@runtime_checkable
class Mechanism(Protocol):
    """A differentially private mechanism (see the module docstring)."""

    name: str
    level: str
    reads: tuple[str, ...]

    def account(self, accountant: Any, count: int = 1) -> Any: ...

    def sample(self, *inputs: Any, generator: torch.Generator | None = None) -> Any: ...


class Clear:
    """Private data read without a mechanism: an infinite spend, said in the ledger (e.g. an
    LDP collection with ``epsilon=inf``)."""

    def __init__(self, name: str, reads: tuple[str, ...], note: str, level: str = "ldp") -> None:
        self.name, self.reads, self.note, self.level = name, reads, note, level

    def account(self, accountant: Any, count: int = 1) -> None:
        accountant.add_pure(self.name, math.inf, count=count, note=self.note)

    def sample(self, value: torch.Tensor, generator: torch.Generator | None = None) -> Any:
        return value.clone()


def check_accountant(mechanism: Mechanism, accountant: Any) -> None:
    """Refuse a draw without an accountant, or on one whose level the mechanism's spend does
    not cover (a node-level spend also covers one edge; nothing else crosses levels)."""
    if accountant is None or not callable(getattr(accountant, "add_pure", None)):
        raise TypeError(f"{mechanism.name}: an accountant (PrivacyAccountant) is required: "
                        "every private draw must be recorded")
    level = getattr(accountant, "level", None)
    mine, theirs = Level.of(mechanism.level), Level.of(level) if level in LEVELS else None
    if theirs is not mine and not (mine is Level.NODE and theirs is Level.EDGE):
        raise ValueError(
            f"{mechanism.name}: a {mechanism.level}-level mechanism cannot be recorded on a "
            f"{level}-level accountant (its sensitivity holds for {mechanism.level}-level "
            "neighbours only)"
        )


def run(
    steps: Steps,
    accountant: Any,
    generator: torch.Generator | None = None,
    once: Callable[..., Any] | None = None,
) -> Any:
    """Drive a release's draw ``steps`` and return its value: each yielded mechanism is checked,
    sampled from ``generator`` (``None``: entropy-seeded; ``once``: how a process group draws
    it once) and recorded once on ``accountant``, and ``steps`` is sent the noisy output."""
    out = None
    try:
        while True:
            mechanism, *inputs = steps.send(out)
            check_accountant(mechanism, accountant)
            if once is None:
                out = mechanism.sample(*inputs, generator=generator)
            else:
                out = once(_sample, mechanism, generator, *inputs)
            accountant.mark_reproducible(generator)
            mechanism.account(accountant)
    except StopIteration as done:
        return done.value


def sample_steps(steps: Steps, generator: torch.Generator | None = None) -> Any:
    """Drive ``steps`` sampling each yielded mechanism and recording nothing (the ``sample``
    of a mechanism made of several, e.g. the hyperbolic Gaussian's two parts)."""
    out = None
    try:
        while True:
            mechanism, *inputs = steps.send(out)
            out = mechanism.sample(*inputs, generator=generator)
    except StopIteration as done:
        return done.value


def _sample(mechanism: Mechanism, generator: torch.Generator | None, *inputs: Any) -> Any:
    return mechanism.sample(*inputs, generator=generator)


def _single(mechanism: Mechanism, inputs: tuple) -> Steps:
    return (yield (mechanism, *inputs))


def draw(
    mechanism: Mechanism, accountant: Any, generator: torch.Generator | None, *inputs: Any
) -> Any:
    """One draw of ``mechanism`` on ``inputs``, checked and recorded (:func:`run`)."""
    return run(_single(mechanism, inputs), accountant, generator)
