"""Simple graphs by construction (design invariant 12): every sensitivity assumes each directed
pair ``(source, target)`` is stored at most once, since the sum aggregation counts every copy.
Data modules merge repeated edges (:func:`simple_graph`, stable under the neighbouring relation);
graphs a model receives are refused when repeated (:func:`require_simple`). docs/data.md,
"Simple graphs"."""

from __future__ import annotations

import logging
import warnings

import torch
from torch import Tensor
from torch_geometric.data import Data

from .errors import DataError
from .transforms import keep_edges

log = logging.getLogger(__name__)

REPEATED = ("merge", "refuse")


class MultigraphError(DataError, ValueError):
    """A graph stores some directed edge more than once (a multigraph), where the privacy
    guarantees need a simple graph (design invariant 12)."""


class RepeatedEdgesWarning(UserWarning):
    """Repeated edges were merged into one (the count is in the message)."""


def _keys(edge_index: Tensor, num_nodes: int) -> Tensor:
    """``source * num_nodes + target``: one int64 key per directed pair."""
    ei = edge_index.to(torch.long)
    return ei[0] * max(int(num_nodes), 1) + ei[1]


_CHUNK = 1 << 24  # edges per pass of the sorted check (bounded temporary memory)


def _strictly_increasing(edge_index: Tensor, num_nodes: int) -> bool:
    """Whether the pair keys are strictly increasing (a sorted simple graph), in chunks."""
    e, last = int(edge_index.size(1)), None
    for lo in range(0, e, _CHUNK):
        key = _keys(edge_index[:, lo : lo + _CHUNK], num_nodes)
        if last is not None and not bool(key[0] > last):
            return False
        if not bool((key[1:] > key[:-1]).all()):
            return False
        last = key[-1]
    return True


def _first_copies(edge_index: Tensor, num_nodes: int) -> tuple[Tensor | None, int]:
    """``(keep, repeated)``: a mask of the first stored copy of every pair (``None`` when the
    graph is simple) and the number of copies beyond the first (sorted input: one pass)."""
    e = int(edge_index.size(1))
    if e < 2 or _strictly_increasing(edge_index, num_nodes):  # sorted and simple
        return None, 0
    key = _keys(edge_index, num_nodes)
    ordered, perm = torch.sort(key, stable=True)
    first = torch.ones(e, dtype=torch.bool, device=key.device)
    first[1:] = ordered[1:] != ordered[:-1]
    repeated = e - int(first.sum())
    if repeated == 0:
        return None, 0
    keep = torch.empty_like(first)
    keep[perm] = first  # stable sort: the first stored copy of each pair is kept
    return keep, repeated


def count_repeated_edges(edge_index: Tensor, num_nodes: int | None = None) -> int:
    """The number of stored edges that repeat an earlier ``(source, target)`` pair (0 for a
    simple graph; a friendship stored twice in both directions counts 2)."""
    n = int(edge_index.max()) + 1 if num_nodes is None and edge_index.numel() else num_nodes
    return _first_copies(edge_index, int(n or 0))[1]


def simple_graph(data: Data, what: str = "the graph", repeated: str = "merge") -> Data:
    """``data`` with every repeated directed edge merged into one (``repeated="merge"``: the
    first stored copy and its attributes are kept, in order, and the number merged is stated in
    a :class:`RepeatedEdgesWarning` and a log line) or refused (``"refuse"``:
    :class:`MultigraphError`). A simple graph is returned as it is; nodes are never touched."""
    if repeated not in REPEATED:
        raise ValueError(f"repeated must be one of {REPEATED}, got {repeated!r}")
    keep, count = _first_copies(data.edge_index, int(data.num_nodes))
    if keep is None:
        return data
    num_edges = int(data.edge_index.size(1))
    if repeated == "refuse":
        raise _error(what, count, num_edges)
    message = (
        f"{what}: merged {count:,} repeated edges (copies of a (source, target) pair already "
        f"stored; {num_edges:,} -> {num_edges - count:,} directed edges). Every sensitivity "
        "assumes a simple graph: each copy would be summed again (docs/data.md, 'Simple graphs')"
    )
    warnings.warn(message, RepeatedEdgesWarning, stacklevel=2)
    log.info(message)
    return keep_edges(data, keep)


def require_simple(data: Data, what: str = "the graph") -> None:
    """Raise :class:`MultigraphError` if ``data`` stores some ``(source, target)`` pair more than
    once (every graph a model receives: the training graph, inductive inference)."""
    count = _first_copies(data.edge_index, int(data.num_nodes))[1]
    if count:
        raise _error(what, count, int(data.edge_index.size(1)))


def _error(what: str, count: int, num_edges: int) -> MultigraphError:
    return MultigraphError(
        f"{what} is a multigraph: {count:,} of its {num_edges:,} directed edges repeat a "
        "(source, target) pair already stored. Every sensitivity assumes each pair is stored "
        "once (a repeated edge is summed once per copy, so removing it moves the release by a "
        "multiple of the accounted sensitivity). Merge the copies first, e.g. "
        "data = lightning_dpgnn.data.simple_graph(data) (keeps the first copy, says how many "
        "were merged) or torch_geometric.utils.coalesce; see docs/data.md, 'Simple graphs'"
    )
