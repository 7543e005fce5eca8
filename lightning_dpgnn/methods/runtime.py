"""Where and how a private model's work runs: on its device (:func:`on_device`), under a seed
for weight initialisation (:func:`seeded`, never for privacy noise), in eval mode without
gradient (:func:`evaluating`), without the noise the library causes in Lightning
(:func:`quiet`), with its caches dropped between fits (:func:`reset_caches`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

import lightning as L
import torch
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.pytorch.trainer.states import TrainerStatus
from torch_geometric.data import Data

from .._quiet import quiet_lightning
from ..caches import clear_caches

__all__ = [
    "on_device", "seeded", "evaluating", "quiet", "reset_caches", "run_once", "draws_as_group",
]

T = TypeVar("T")


def on_device(module: Any, obj: T) -> T:
    """``obj`` (a graph, a tensor, a collection of them) on ``module``'s device. A graph is
    copied, never moved in place; the copy of the last graph is kept (``_graph_on_device``),
    so the stages of a fit copy it once."""
    device = module.device
    if not isinstance(obj, Data):
        return apply_to_collection(obj, torch.Tensor, lambda t: t.to(device))
    if all(t.device == device for _, t in obj() if isinstance(t, torch.Tensor)):
        module.__dict__.pop("_graph_on_device", None)  # e.g. moved in place by a loader
        return obj
    cached = module.__dict__.get("_graph_on_device")
    if cached is None or cached[0] is not obj or cached[1] != device:
        cached = (obj, device, copy.copy(obj).to(device))
        module._graph_on_device = cached
    return cached[2]


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run the body (e.g. weight initialisation) under ``seed`` without touching the global
    RNG state outside it; ``None`` runs it as is. Never used for privacy noise."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield


@contextmanager
def evaluating(module: torch.nn.Module) -> Iterator[None]:
    """Eval mode and no gradient for the body; ``module``'s mode is restored after."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


def quiet(module: Any, on: bool = True) -> None:
    """Drop the warnings the library causes in Lightning (:mod:`lightning_dpgnn._quiet`) until
    ``quiet(module, False)``; the user's own warnings pass."""
    stack = module.__dict__.get("_quiet_stack")
    if on and stack is None:
        module._quiet_stack = ExitStack()
        module._quiet_stack.enter_context(quiet_lightning())
    elif not on and stack is not None:
        module.__dict__.pop("_quiet_stack").close()


class QuietEnds(L.Callback):
    """Ends :func:`quiet` when a fit raises: Lightning skips the module's ``teardown`` then,
    and the library's filters must not outlive its fit."""

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        quiet(pl_module, False)


def reset_caches(module: Any) -> None:
    """Drop every declared cache, the row trainer's rows and tensors' derived forms."""
    for klass in type(module).__mro__:
        for name in vars(klass).get("caches", ()):
            module.__dict__.pop(name, None)
    if module.row_trainer is not None:
        module.row_trainer.reset()
    clear_caches()


def run_once(module: Any, mechanism: Callable[..., T], *args: Any) -> T:
    """Run a one-time mechanism of the fit once, whatever the number of processes (a
    collective under DDP): rank 0 alone runs it and broadcasts its output and the model's
    ledger, so every rank holds bit-identical noisy outputs and the single-process ledger, and
    no rank draws noise of its own; an error on rank 0 is raised on every rank. Outside a
    running DDP fit this is ``mechanism(*args)``."""
    if not draws_as_group(module):
        return mechanism(*args)
    strategy = module.trainer.strategy
    payload: tuple[Any, dict[str, Any] | None, BaseException | None] = (None, None, None)
    if strategy.global_rank == 0:
        try:
            out = apply_to_collection(mechanism(*args), torch.Tensor, lambda t: t.cpu())
            payload = (out, module.ledgers.state_dict(), None)
        except BaseException as err:  # noqa: BLE001 - re-raised below, on every rank
            payload = (None, None, err)
    out, ledger, err = strategy.broadcast(payload, src=0)
    if err is not None:
        if strategy.global_rank == 0:
            raise err
        raise RuntimeError(f"rank 0 failed to run a one-time mechanism: {err!r}") from err
    module.ledgers.load_state_dict(ledger)
    return apply_to_collection(out, torch.Tensor, lambda t: t.to(strategy.root_device))


def draws_as_group(module: Any) -> bool:
    """Whether a one-time draw now is made for a process group (a running DDP fit)."""
    trainer = module._trainer
    return (trainer is not None and trainer.world_size > 1
            and trainer.state.status == TrainerStatus.RUNNING)
