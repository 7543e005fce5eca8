"""The few collectives the privacy layer needs under data-parallel training (pure torch).

Under DDP every mechanism's noise is drawn once for the whole process group (invariant 5): the
first process (rank 0) draws, the others receive. The privacy layer does that with
``torch.distributed`` only — no Lightning import — and only when a process group of more than
one process is initialized; a single process never touches ``torch.distributed``.

* :func:`process_group` — ``(rank, world_size)`` of the default group (``(0, 1)`` without one).
* :func:`broadcast_from_first` — rank 0's tensor on every rank (e.g. a Poisson batch mask).
* :func:`all_reduce_sum` — the sum over ranks (DP-SGD's noisy clipped gradient sums).

NCCL moves only CUDA tensors: with it, tensors travel through the current CUDA device and come
back on the device they came from.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["process_group", "broadcast_from_first", "all_reduce_sum"]


def process_group() -> tuple[int, int]:
    """``(rank, world_size)`` of the default process group; ``(0, 1)`` when none is running."""
    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


def _wire_device(tensor: torch.Tensor) -> torch.device:
    """Where ``tensor`` must be to travel over the default group's backend."""
    if dist.get_backend() == "nccl" and tensor.device.type != "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return tensor.device


def broadcast_from_first(tensor: torch.Tensor) -> torch.Tensor:
    """Rank 0's ``tensor`` on every rank (same shape and dtype on all of them); ``tensor``
    itself when there is one process."""
    if process_group()[1] == 1:
        return tensor
    wire = tensor.to(_wire_device(tensor))
    dist.broadcast(wire, src=0)
    return wire.to(tensor.device)


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` summed over every rank (in place when it can travel as it is)."""
    if process_group()[1] == 1:
        return tensor
    wire = tensor.to(_wire_device(tensor))
    dist.all_reduce(wire, op=dist.ReduceOp.SUM)
    return wire.to(tensor.device)
