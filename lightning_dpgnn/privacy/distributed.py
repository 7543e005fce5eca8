"""The few collectives the privacy layer needs under data-parallel training (pure torch).

Under DDP every mechanism's noise is drawn once for the whole group (invariant
one-draw-under-ddp): rank 0 draws, the others receive, through ``torch.distributed`` only, and
only when a group of several processes is initialized. NCCL moves CUDA tensors only: tensors
travel through the current CUDA device and come back where they came from.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from .aggregation import in_adjacency

__all__ = [
    "process_group", "broadcast_from_first", "all_reduce_sum", "row_blocks", "gather_rows",
    "block_sum_aggregate",
]


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


def _in_place(tensor: torch.Tensor, collective: Callable[[torch.Tensor], object]) -> torch.Tensor:
    """``collective`` on ``tensor`` where the backend moves it; ``tensor`` on one process."""
    if process_group()[1] == 1:
        return tensor
    wire = tensor.to(_wire_device(tensor))
    collective(wire)
    return wire.to(tensor.device)


def broadcast_from_first(tensor: torch.Tensor) -> torch.Tensor:
    """Rank 0's ``tensor`` on every rank (same shape and dtype on all of them)."""
    return _in_place(tensor, lambda wire: dist.broadcast(wire, src=0))


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` summed over every rank (in place when it can travel as it is)."""
    return _in_place(tensor, lambda wire: dist.all_reduce(wire, op=dist.ReduceOp.SUM))


def row_blocks(num_rows: int, world_size: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` of the rows each rank holds: ``world_size`` contiguous blocks covering
    ``range(num_rows)``, sizes differing by at most one (as ``numpy.array_split``). A function of
    the row count alone: no randomness, nothing read from the data."""
    if num_rows < 0 or world_size < 1:
        raise ValueError(f"need num_rows >= 0 and world_size >= 1, got {num_rows}, {world_size}")
    size, extra = divmod(int(num_rows), int(world_size))
    bounds = [r * size + min(r, extra) for r in range(world_size + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def gather_rows(block: torch.Tensor, num_rows: int) -> torch.Tensor:
    """The ``[num_rows, ...]`` tensor whose :func:`row_blocks` block ``r`` is rank ``r``'s
    ``block`` (every rank calls it, each with its own block; a collective). ``block`` itself
    on one process."""
    rank, world = process_group()
    if world == 1:
        return block
    blocks = row_blocks(num_rows, world)
    lo, hi = blocks[rank]
    if block.shape[0] != hi - lo:
        raise ValueError(f"rank {rank} holds rows [{lo}, {hi}) but gave {block.shape[0]} rows")
    longest = max(h - lo_ for lo_, h in blocks)
    device = _wire_device(block)
    padded = block.new_zeros((longest, *block.shape[1:]), device=device)
    padded[: hi - lo] = block.to(device)
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    full = torch.cat([p[: h - lo_] for p, (lo_, h) in zip(parts, blocks, strict=True)])
    return full.to(block.device)


def block_sum_aggregate(
    x: torch.Tensor, edge_index: torch.Tensor, rows: tuple[int, int]
) -> torch.Tensor:
    """Rows ``[lo, hi)`` of ``A^T X`` from the edges whose target lies in the block (the edge
    partition of a distributed aggregation: each row is summed by one rank, in the order one
    process sums it; the sparse block is cached, :func:`~.aggregation.in_adjacency`)."""
    lo, hi = int(rows[0]), int(rows[1])
    return in_adjacency(edge_index, x.shape[0], x.dtype, rows=(lo, hi)) @ x
