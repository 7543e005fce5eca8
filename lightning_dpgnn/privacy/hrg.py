"""Private hierarchical random graphs: EdgeRR (HeteroRR, Tran et al.) and PrivHRG (Xiao et al.).

An HRG (Clauset, Moore and Newman 2008) over a dendrogram has log-likelihood
``sum_r N_r chi(e_r / N_r)``, ``N_r = L_r R_r`` pairs under internal node ``r``, ``e_r`` edges
across it, ``chi(t) = t log t + (1 - t) log(1 - t)``. This is a sound EdgeRR (eqs. 10-15;
docs/heterorr.md lists the paper's and code's gaps):

* counts are over all ``n`` (public) nodes; one private edge moves one ``e_r`` by one, so
  ``L_pri`` has sensitivity ``Delta = log N + (N - 1) log(1 + 1 / (N - 1))``,
  ``N = ceil(n/2) floor(n/2)`` (Lemma 4 as proven in the supplement);
* **one** Metropolis chain of subtree swaps targets ``exp(L_pub + eps_e1 / (2 Delta) L_pri)``:
  the exponential mechanism over the public base measure ``exp(L_pub)`` (eq. 14 omits the 2);
* ``Laplace(1 / eps_e2)`` on each internal node's private-edge count (sensitivity 1), then
  Bernoulli draws ``p_r = clip(noisy / (N_r - e_r), 0, 1)`` on its non-public pairs.

**Equilibrium condition.** The exponential mechanism is ``eps_e1``-DP for an exact draw; a
finite chain only approaches it, and no mixing bound is proven, so :class:`EdgeRR` states the
condition (:meth:`EdgeRR.condition`) and refuses chains shorter than
:data:`MIN_STEPS_PER_NODE` ``* n`` moves (PrivHRG's burn-in, far above the coupon-collector
bound). The chain's plain-Python loop is the reference that numba compiles.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from . import random as R
from .accountant import PrivacyAccountant, check_epsilon
from .edgerand import both_directions, check_nodes, pair_keys
from .mechanism import EDGES, fields_repr

__all__ = [
    "MIN_STEPS_PER_NODE", "Dendrogram", "HRGFit", "EdgeRR", "PaperCodeEdgeRR", "sensitivity",
    "pair_log_likelihood", "log_likelihood", "fit_dendrogram", "edge_split", "keyed_uniform",
    "split_pairs", "sample_private_part", "numba_available",
]

BACKENDS = ("auto", "numba", "python")

#: the shortest chain :class:`EdgeRR` runs, in moves per node: PrivHRG's burn-in (module doc)
MIN_STEPS_PER_NODE = 1000.0

#: rough CPU seconds per move of each kernel (measured on a 300-node csbm: 36 us in Python,
#: 0.33 us compiled), for :func:`shows_progress`
_SECONDS_PER_MOVE = {"python": 3e-5, "numba": 3e-7}

#: a chain expected to run longer than this many seconds shows a progress bar by default
PROGRESS_AFTER_SECONDS = 3.0


def sensitivity(num_nodes: int) -> float:
    """Lemma 4: the global sensitivity of ``L_pri`` to one private edge over ``num_nodes``
    public leaves, ``log N + (N - 1) log(1 + 1 / (N - 1))`` with
    ``N = ceil(n / 2) * floor(n / 2)`` the largest ``N_r`` (``log 1 = 0`` when ``N = 1``)."""
    n = int(num_nodes)
    if n < 3:
        raise ValueError(f"the private HRG needs at least three nodes, got {n}")
    big = ((n + 1) // 2) * (n // 2)
    return math.log(big) + (big - 1) * math.log1p(1.0 / (big - 1))


def pair_log_likelihood(e: np.ndarray | float, n_pairs: np.ndarray | float) -> np.ndarray:
    """``N chi(e / N) = e log(e / N) + (N - e) log(1 - e / N)`` (0 at ``e`` = 0 or ``N``)."""
    e = np.asarray(e, dtype=np.float64)
    big = np.asarray(n_pairs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(e > 0, e * np.log(e / big), 0.0)
        b = np.where(big - e > 0, (big - e) * np.log((big - e) / big), 0.0)
    return a + b


# -- the dendrogram -----------------------------------------------------------------------------
@dataclass
class Dendrogram:
    """A binary tree over ``n`` leaves: internal nodes ``0 .. n - 2``, leaf ``i`` is node
    ``n - 1 + i``; ``left``/``right`` are the internal nodes' children, ``parent`` every
    node's parent (``-1`` at the root)."""

    num_leaves: int
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray

    @property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent[: self.num_leaves - 1] < 0)[0])

    @classmethod
    def random(cls, n: int, generator: torch.Generator | None = None) -> Dendrogram:
        """A balanced dendrogram over a uniformly random order of the leaves (the chain's
        start; drawn through :mod:`~lightning_dpgnn.privacy.random`)."""
        n = int(n)
        if n < 2:
            raise ValueError(f"a dendrogram needs at least two nodes, got {n}")
        return cls.from_order(R.permutation(n, generator))

    @classmethod
    def from_order(cls, order: np.ndarray) -> Dendrogram:
        """The balanced dendrogram whose leaves, left to right, are ``order``."""
        n = len(order)
        left = np.empty(n - 1, dtype=np.int64)
        right = np.empty(n - 1, dtype=np.int64)
        parent = np.full(2 * n - 1, -1, dtype=np.int64)
        nxt = 0
        stack: list[tuple[int, int, int, int]] = [(0, n, -1, 0)]  # lo, hi, parent, side
        while stack:
            lo, hi, par, side = stack.pop()
            if hi - lo == 1:
                node = n - 1 + int(order[lo])
            else:
                node = nxt
                nxt += 1
                mid = (lo + hi) // 2
                stack.append((mid, hi, node, 1))
                stack.append((lo, mid, node, 0))
            if par >= 0:
                (left if side == 0 else right)[par] = node
                parent[node] = par
        return cls(n, left, right, parent)

    def sizes(self) -> np.ndarray:
        """Leaves below every node (1 at a leaf)."""
        n = self.num_leaves
        size = np.ones(2 * n - 1, dtype=np.int64)
        for node in self._postorder():
            size[node] = size[self.left[node]] + size[self.right[node]]
        return size

    def _postorder(self) -> list[int]:
        """Internal nodes, children before parents."""
        n = self.num_leaves
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            for child in (self.left[node], self.right[node]):
                if child < n - 1:
                    stack.append(int(child))
        return out[::-1]

    def depths(self) -> np.ndarray:
        n = self.num_leaves
        depth = np.zeros(2 * n - 1, dtype=np.int64)
        for node in self._postorder()[::-1]:  # parents first
            depth[self.left[node]] = depth[node] + 1
            depth[self.right[node]] = depth[node] + 1
        return depth

    def lca(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The lowest common ancestor (an internal node) of each leaf pair ``(src, dst)``
        (node indices ``0 .. n - 1``, ``src != dst``), vectorised over the pairs."""
        depth = self.depths()
        a = np.asarray(src, dtype=np.int64) + self.num_leaves - 1  # leaf i is node n - 1 + i
        b = np.asarray(dst, dtype=np.int64) + self.num_leaves - 1
        if np.any(a == b):
            raise ValueError("a pair of a node with itself has no lowest common ancestor")
        while np.any(a != b):  # the deeper of two different nodes climbs (both at equal depth)
            differ = a != b
            up_a, up_b = differ & (depth[a] >= depth[b]), differ & (depth[b] >= depth[a])
            a, b = np.where(up_a, self.parent[a], a), np.where(up_b, self.parent[b], b)
        return a

    def leaf_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(order, start, size)``: the leaves left to right (node indices ``0 .. n - 1``)
        and, for every tree node, where its leaves start in that order and how many they are
        (a subtree's leaves are contiguous)."""
        n = self.num_leaves
        size = self.sizes()
        start = np.zeros(2 * n - 1, dtype=np.int64)
        order = np.empty(n, dtype=np.int64)
        for node in self._postorder()[::-1]:  # parents first
            start[self.left[node]] = start[node]
            start[self.right[node]] = start[node] + size[self.left[node]]
        leaves = np.arange(n - 1, 2 * n - 1)
        order[start[leaves]] = leaves - (n - 1)
        return order, start, size


def _check_pairs(edges: np.ndarray, n: int, what: str) -> np.ndarray:
    edges = np.asarray(edges, dtype=np.int64).reshape(2, -1)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"{what}: node indices must be in [0, {n})")
    if np.any(edges[0] == edges[1]):
        raise ValueError(f"{what}: self-loops are not pairs of the dendrogram")
    return edges


def _pairs(edge_index: torch.Tensor, n: int) -> np.ndarray:
    """The distinct unordered pairs ``i < j`` of ``edge_index`` (either direction), ``[2, m]``."""
    keys = pair_keys(edge_index.cpu(), n).numpy()
    return np.stack([keys // n, keys % n])


def edge_counts(dendrogram: Dendrogram, edges: np.ndarray) -> np.ndarray:
    """How many of the unordered pairs ``edges`` (``[2, m]``) have each internal node as their
    lowest common ancestor (``[n - 1]``)."""
    n = dendrogram.num_leaves
    edges = _check_pairs(edges, n, "edges")
    if edges.shape[1] == 0:
        return np.zeros(n - 1, dtype=np.int64)
    return np.bincount(dendrogram.lca(edges[0], edges[1]), minlength=n - 1).astype(np.int64)


def log_likelihood(
    dendrogram: Dendrogram, public: np.ndarray, private: np.ndarray
) -> tuple[float, float]:
    """``(L_pub, L_pri)`` of the dendrogram: ``sum_r N_r chi(e_r / N_r)`` over the public and
    the private pairs, with ``N_r = L_r R_r`` counted over all ``n`` (public) leaves."""
    size = dendrogram.sizes()
    pairs = size[dendrogram.left] * size[dendrogram.right]
    return (float(pair_log_likelihood(edge_counts(dendrogram, public), pairs).sum()),
            float(pair_log_likelihood(edge_counts(dendrogram, private), pairs).sum()))


# -- the chain ------------------------------------------------------------------------------------
def _mcmc_kernel(  # noqa: PLR0913, PLR0912, PLR0915 - one flat loop, compiled by numba
    left, right, parent, size, epub, epri, lca, adj_ptr, adj_edge, edge_ends, edge_private,
    root, n_internal, n_leaves_offset, u, temperature, totals, stack, leaves, mark, trace,
    trace_every, step0, pub_weight=1.0,
):
    """Run ``len(u) // 3`` Metropolis moves in place towards ``exp(pub_weight * L_pub +
    temperature * L_pri)`` (``u``: which node, which child stays, acceptance), updating
    ``totals = [L_pub, L_pri]`` and ``trace`` every ``trace_every`` moves; returns the accepted
    moves. The pure-Python reference, which numba compiles.

    A move at ``r`` (children ``a`` that stays and ``b``, parent ``p``, sibling ``s``) turns
    ``p = ((a, b), s)`` into ``((a, s), b)``; only ``r`` and ``p`` change, and their counts need
    ``E(a, s)`` (the smaller of ``a``, ``b`` is walked). Accepted, edges ``a-b`` move their
    ancestor ``r -> p`` and ``a-s`` ``p -> r`` (walking ``a``, or ``b`` then ``s`` if smaller)."""

    def leaves_of(node):  # the leaves below ``node`` into ``leaves``; how many (numba inlines it)
        stack[0] = node
        top, count = 1, 0
        while top > 0:
            top -= 1
            node = stack[top]
            if node >= n_leaves_offset:
                leaves[count] = node - n_leaves_offset
                count += 1
            else:
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        return count

    n_moves = len(u) // 3
    accepted = 0
    for i in range(n_moves):
        k = int(u[3 * i] * (n_internal - 1))
        if k >= n_internal - 1:
            k = n_internal - 2
        r = k + 1 if k >= root else k  # uniform over the non-root internal nodes
        p = parent[r]
        sib = right[p] if left[p] == r else left[p]
        if u[3 * i + 1] < 0.5:
            a = left[r]
            b = right[r]
        else:
            a = right[r]
            b = left[r]
        sa = size[a]
        sb = size[b]
        su = size[sib]
        # E(a, s): the edges of the smaller of a and b whose lowest common ancestor is p
        c_pub = 0
        c_pri = 0
        for t in range(leaves_of(a if sa <= sb else b)):
            for j in range(adj_ptr[leaves[t]], adj_ptr[leaves[t] + 1]):
                e = adj_edge[j]
                if lca[e] == p:
                    if edge_private[e]:
                        c_pri += 1
                    else:
                        c_pub += 1
        if sa <= sb:
            x_pub = c_pub
            x_pri = c_pri
        else:
            x_pub = epub[p] - c_pub
            x_pri = epri[p] - c_pri
        nr0 = float(sa * sb)
        np0 = float((sa + sb) * su)
        nr1 = float(sa * su)
        np1 = float((sa + su) * sb)
        d_pub = 0.0
        d_pri = 0.0
        for t in range(8):  # N chi(e / N) of r and p, after (+) and before (-), pub and pri
            if t < 4:
                e_r = x_pub if t < 2 else epub[r]
                e_both = epub[r] + epub[p]
            else:
                e_r = x_pri if t < 6 else epri[r]
                e_both = epri[r] + epri[p]
            q = t % 4
            if q == 0:
                ef, big = float(e_r), nr1
            elif q == 1:
                ef, big = float(e_both - e_r), np1
            elif q == 2:
                ef, big = float(e_r), nr0
            else:
                ef, big = float(e_both - e_r), np0
            v = 0.0
            if ef > 0.0:
                v += ef * math.log(ef / big)
            if big - ef > 0.0:
                v += (big - ef) * math.log((big - ef) / big)
            if q >= 2:
                v = -v
            if t < 4:
                d_pub += v
            else:
                d_pri += v
        log_ratio = pub_weight * d_pub + temperature * d_pri
        uu = u[3 * i + 2]
        if log_ratio >= 0.0 or uu <= 0.0 or math.log(uu) < log_ratio:
            accepted += 1
            stamp = step0 + i + 1
            if sa <= sb + su:
                # the edges of a: to b (ancestor r -> p), to the sibling (p -> r)
                for t in range(leaves_of(a)):
                    for j in range(adj_ptr[leaves[t]], adj_ptr[leaves[t] + 1]):
                        e = adj_edge[j]
                        if lca[e] == r:
                            lca[e] = p
                        elif lca[e] == p:
                            lca[e] = r
            else:
                # the edges of b to a (r -> p), b's leaves marked; then the sibling's edges
                # with ancestor p not into b go to a (p -> r)
                for t in range(leaves_of(b)):
                    mark[leaves[t]] = stamp
                    for j in range(adj_ptr[leaves[t]], adj_ptr[leaves[t] + 1]):
                        e = adj_edge[j]
                        if lca[e] == r:
                            lca[e] = p
                for t in range(leaves_of(sib)):
                    for j in range(adj_ptr[leaves[t]], adj_ptr[leaves[t] + 1]):
                        e = adj_edge[j]
                        if lca[e] == p:
                            other = edge_ends[e, 0] + edge_ends[e, 1] - leaves[t]
                            if mark[other] != stamp:
                                lca[e] = r
            # r = (a, sibling), p = (r, b)
            left[r] = a
            right[r] = sib
            parent[sib] = r
            left[p] = r
            right[p] = b
            parent[b] = p
            size[r] = sa + su
            epub[p] = epub[r] + epub[p] - x_pub
            epri[p] = epri[r] + epri[p] - x_pri
            epub[r] = x_pub
            epri[r] = x_pri
            totals[0] += d_pub
            totals[1] += d_pri
        step = step0 + i + 1
        if trace_every > 0 and step % trace_every == 0:
            slot = step // trace_every - 1
            if slot < trace.shape[0]:
                trace[slot, 0] = totals[0]
                trace[slot, 1] = totals[1]
    return accepted


def numba_available() -> bool:
    """Whether the compiled kernel can be used (numba, a dependency, imports)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(backend: str) -> str:
    """The kernel ``backend`` runs: ``"numba"``, or ``"python"`` (``"auto"`` without numba)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "numba" if numba_available() else "python"
    return backend


def shows_progress(steps: int, backend: str = "auto") -> bool:
    """Whether a chain of ``steps`` moves shows its progress bar by default: when it is expected
    to take more than :data:`PROGRESS_AFTER_SECONDS`."""
    return int(steps) * _SECONDS_PER_MOVE[resolve_backend(backend)] > PROGRESS_AFTER_SECONDS


def _kernel(backend: str) -> Callable[..., int]:
    return _mcmc_kernel if resolve_backend(backend) == "python" else _compiled()


@functools.cache
def _compiled() -> Callable[..., int]:
    try:
        import numba
    except ImportError:
        raise ImportError(
            "backend='numba' needs numba (a dependency of lightning-dpgnn: pip install "
            "numba), or use backend='python'/'auto'"
        ) from None
    return numba.njit(cache=True, nogil=True)(_mcmc_kernel)


@dataclass
class HRGFit:
    """The chain's final state: dendrogram, each internal node's public and private edge counts
    and ``N_r``, the trace ``[(step, L_pub, L_pri)]`` and run facts; the private counts and
    ``L_pri`` are the curator's diagnostics, not covered by epsilon (never released)."""

    dendrogram: Dendrogram
    public_counts: np.ndarray
    private_counts: np.ndarray
    pairs: np.ndarray
    trace: np.ndarray
    steps: int
    accepted: int
    seconds: float
    backend: str
    temperature: float


def fit_dendrogram(
    num_nodes: int,
    public: np.ndarray,
    private: np.ndarray,
    temperature: float,
    steps: int,
    *,
    generator: torch.Generator | None = None,
    backend: str = "auto",
    progress: bool | None = None,
    trace_points: int = 200,
    chunk: int = 1 << 16,
    rounds: tuple[int, int] | None = None,
) -> HRGFit:
    """Run one Metropolis chain of ``steps`` subtree swaps from a random dendrogram towards
    ``exp(L_pub + temperature * L_pri)`` over the disjoint unordered pairs ``public`` and
    ``private`` and return its final state (uniforms drawn ``chunk`` moves at a time; a tqdm
    bar of the moves, never of the private likelihood, when ``progress`` or a long chain).
    ``rounds=(p, q)``: the authors' alternation of ``p`` moves on ``L_pub`` alone and ``q`` on
    ``temperature * L_pri`` alone instead (paper-code mode: NOT the exponential mechanism)."""
    n = int(num_nodes)
    if n < 3:
        raise ValueError(f"the chain needs at least three nodes (one non-root move), got {n}")
    steps = int(steps)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if rounds is not None and (min(rounds) < 0 or sum(rounds) < 1):
        raise ValueError(f"rounds must be two move counts >= 0, not both 0; got {rounds!r}")
    public = _check_pairs(public, n, "public edges")
    private = _check_pairs(private, n, "private edges")
    kernel = _kernel(backend)
    used = "python" if kernel is _mcmc_kernel else "numba"
    start_time = time.perf_counter()
    den = Dendrogram.from_order(R.permutation(n, generator))  # the chain's random start
    edges = np.concatenate([public, private], axis=1)
    is_private = np.concatenate([np.zeros(public.shape[1], dtype=np.bool_),
                                 np.ones(private.shape[1], dtype=np.bool_)])
    m = edges.shape[1]
    lca = den.lca(edges[0], edges[1]) if m else np.zeros(0, dtype=np.int64)
    epub = np.bincount(lca[~is_private], minlength=n - 1).astype(np.int64)
    epri = np.bincount(lca[is_private], minlength=n - 1).astype(np.int64)
    size = den.sizes()
    # adjacency: every edge listed at both endpoints, by edge id
    ends = np.concatenate([edges[0], edges[1]])
    ids = np.concatenate([np.arange(m), np.arange(m)])
    order = np.argsort(ends, kind="stable")
    adj_edge = ids[order].astype(np.int64)
    adj_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=n), out=adj_ptr[1:])
    pairs = size[den.left] * size[den.right]
    totals = np.array([pair_log_likelihood(epub, pairs).sum(),
                       pair_log_likelihood(epri, pairs).sum()], dtype=np.float64)
    trace_every = max(1, steps // max(1, int(trace_points))) if steps else 0
    trace = np.zeros((steps // trace_every if trace_every else 0, 2), dtype=np.float64)
    stack, leaves = np.zeros(2 * n + 2, dtype=np.int64), np.zeros(n, dtype=np.int64)
    mark = np.zeros(n, dtype=np.int64)  # leaves of b, stamped with the move's step
    edge_ends = np.ascontiguousarray(edges.T)
    root = den.root
    accepted, done = 0, 0
    bar = None
    if progress or (progress is None and shows_progress(steps, used)):
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"HRG MCMC ({used})", unit="move", unit_scale=True)
    try:
        while done < steps:
            k, weight, temp = min(int(chunk), steps - done), 1.0, float(temperature)
            if rounds is not None:  # the authors' alternation: where in the current round
                at = done % (rounds[0] + rounds[1])
                public_round = at < rounds[0]
                left_in_round = rounds[0] - at if public_round else rounds[0] + rounds[1] - at
                k = min(k, left_in_round)
                weight, temp = (1.0, 0.0) if public_round else (0.0, temp)
            u = R.uniform((3 * k,), generator=generator, dtype=torch.float64).numpy()
            accepted += int(kernel(
                den.left, den.right, den.parent, size, epub, epri, lca, adj_ptr, adj_edge,
                edge_ends, is_private, root, n - 1, n - 1, u, temp, totals, stack, leaves,
                mark, trace, trace_every, done, weight,
            ))
            done += k
            if bar is not None:
                bar.update(k)
    finally:
        if bar is not None:
            bar.close()
    pairs = size[den.left] * size[den.right]  # the final dendrogram's
    steps_at = (np.arange(1, trace.shape[0] + 1) * trace_every).astype(np.float64)
    return HRGFit(
        dendrogram=den, public_counts=epub, private_counts=epri, pairs=pairs,
        trace=np.column_stack([steps_at, trace]) if trace.size else np.zeros((0, 3)),
        steps=steps, accepted=accepted, seconds=time.perf_counter() - start_time,
        backend=used, temperature=float(temperature),
    )


# -- the public / private split ----------------------------------------------------------------
def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def keyed_uniform(keys: np.ndarray, seed: int) -> np.ndarray:
    """A uniform in [0, 1) per ``uint64`` key, a hash (splitmix64) of the key and a **public**
    ``seed``: the same key always gets the same value, whatever else is in the data."""
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        salt = _splitmix64(np.full_like(keys, np.uint64(int(seed) & (2**64 - 1))))
        h = _splitmix64(keys ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def edge_split(edge_index: torch.Tensor, rho: float, seed: int = 0) -> torch.Tensor:
    """A public/private split for benchmarks: each undirected edge is private with probability
    ``rho``, by a hash of the **public** ``seed`` and the edge itself (both directions agree;
    adding or removing one edge changes no other edge's side). Returns a bool mask over the
    columns of ``edge_index``: ``True`` where the edge is private."""
    rho = float(rho)
    if not 0.0 < rho <= 1.0:
        raise ValueError(f"rho (the share of private edges) must be in (0, 1], got {rho!r}")
    e = edge_index.detach().cpu().long()
    lo, hi = torch.minimum(e[0], e[1]).numpy(), torch.maximum(e[0], e[1]).numpy()
    key = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
    return torch.from_numpy(keyed_uniform(key, seed) < rho).to(edge_index.device)


# -- EdgeRR: the release ------------------------------------------------------------------------
class EdgeRR:
    """HeteroRR's edge release (module doc), PrivHRG (Xiao, Chen and Tan, KDD'14) when every
    edge is private: ``epsilon`` per private edge, pure DP at the chain's equilibrium
    (:meth:`condition`), ``mcmc_share`` of it for the chain and the rest for the Laplace
    counts. The chain runs ``steps`` or ``steps_per_node * n`` moves, at least
    :data:`MIN_STEPS_PER_NODE` ``* n`` (:meth:`check_chain`); ``backend``: ``"auto"`` (numba,
    else Python), ``"numba"`` or ``"python"``; ledger entries ``<name>/mcmc``, ``<name>/counts``."""

    #: the shortest chain run, in moves per node (0 in the paper-code mode, which is not DP)
    min_steps_per_node: float = MIN_STEPS_PER_NODE

    def __init__(
        self,
        epsilon: float,
        *,
        mcmc_share: float = 0.5,
        steps_per_node: float = MIN_STEPS_PER_NODE,
        steps: int | None = None,
        backend: str = "auto",
        progress: bool | None = None,
        name: str = "edgerr",
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if not 0.0 < float(mcmc_share) < 1.0:
            raise ValueError(f"mcmc_share must be in (0, 1), got {mcmc_share!r}")
        if steps is not None and int(steps) < 0:
            raise ValueError(f"steps must be >= 0, got {steps!r}")
        if steps is None and not float(steps_per_node) >= self.min_steps_per_node:
            raise ValueError(
                f"steps_per_node must be >= {self.min_steps_per_node:g} (PrivHRG's burn-in: "
                f"the epsilon of the HRG chain holds at equilibrium only, and a shorter chain "
                f"is refused), got {steps_per_node!r}"
            )
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.mcmc_share = float(mcmc_share)
        self.eps_mcmc = self.epsilon * self.mcmc_share
        self.eps_counts = self.epsilon * (1.0 - self.mcmc_share)
        self.steps_per_node = float(steps_per_node)
        self.steps = None if steps is None else int(steps)
        self.backend = backend
        self.progress = None if progress is None else bool(progress)
        self.name = str(name)
        self.level, self.reads = "edge", (EDGES,)  # on the private edges only
        #: the last run's chain: the curator's diagnostics, **not covered by epsilon** (never
        #: released, checkpointed or published)
        self.last_fit: HRGFit | None = None

    #: the authors' alternation of public and private rounds (``None``: one chain)
    rounds: tuple[int, int] | None = None

    def check_chain(self, num_nodes: int) -> int:
        """The chain length on ``num_nodes`` nodes, refused below ``min_steps_per_node * n``
        moves (one sentence naming the fix); nothing is drawn or spent before it."""
        steps = self.steps if self.steps is not None else int(self.steps_per_node * num_nodes)
        least = math.ceil(self.min_steps_per_node * num_nodes)
        if steps < least:
            raise ValueError(
                f"{self.name}: a chain of {steps} moves on {num_nodes} nodes is shorter than "
                f"the minimum {self.min_steps_per_node:g} n = {least} (PrivHRG's burn-in; the "
                "epsilon holds at the chain's equilibrium only): give steps (HeteroRR: "
                f"mcmc_steps) >= {least}, or leave the default"
            )
        return steps

    def condition(self) -> str:
        """The condition the epsilon holds under, in words (printed in the unit)."""
        length = (f"{self.steps} moves" if self.steps is not None
                  else f"{self.steps_per_node:g} n moves")
        return (f"at the HRG chain's equilibrium only, assumed reached after {length} "
                f"(PrivHRG's burn-in, at least {self.min_steps_per_node:g} n; no mixing bound "
                "is proven)")

    def chain_temperature(self, num_nodes: int, private: np.ndarray) -> float:
        """The factor on ``L_pri`` in the chain (the private edges are not read here)."""
        return self.temperature(num_nodes)

    def temperature(self, num_nodes: int) -> float:
        """``eps_e1 / (2 Delta)``: the exponential mechanism's factor on ``L_pri``."""
        return self.eps_mcmc / (2.0 * sensitivity(num_nodes))

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        """Record ``count`` releases: the chain (exponential mechanism), the Laplace counts."""
        accountant.add_pure(
            f"{self.name}/mcmc", self.eps_mcmc, count=count,
            note="exponential mechanism over dendrograms (utility L_pri, Lemma 4 sensitivity), "
            "one Metropolis chain: DP at equilibrium only",
        )
        accountant.add_pure(
            f"{self.name}/counts", self.eps_counts, count=count,
            note="Laplace(1/eps) on each internal node's private-edge count, sensitivity 1",
        )

    def sample(
        self,
        edge_index: torch.Tensor,
        num_nodes: int,
        private_mask: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """The released graph ``G_pub + sampled private part`` as a sorted, symmetric
        ``[2, E']`` edge index. ``private_mask``: bool per column of ``edge_index`` (``True``:
        private); both directions of an edge must agree."""
        n = int(num_nodes)
        steps = self.check_chain(n)
        public, private = split_pairs(edge_index, n, private_mask)
        self.last_fit = fit = fit_dendrogram(
            n, public, private, self.chain_temperature(n, private), steps,
            generator=generator, backend=self.backend, progress=self.progress,
            rounds=self.rounds,
        )
        sampled = sample_private_part(fit, public, self.eps_counts, generator)
        pairs = np.concatenate([public, sampled], axis=1)
        return both_directions(torch.from_numpy(pairs[0] * n + pairs[1]), n).to(edge_index.device)

    def __repr__(self) -> str:
        return fields_repr(self, "epsilon", "mcmc_share", "steps_per_node", "steps")


#: what :class:`PaperCodeEdgeRR` reproduces of the authors' code, and why it is not DP
PAPER_CODE_FLAW = (
    "the authors' HeteroRR edge code: the sensitivity over the nodes that have a private edge "
    "(a set one private edge changes), public and private Metropolis rounds in turn (not the "
    "exponential mechanism's chain), 50 n moves"
)


class PaperCodeEdgeRR(EdgeRR):
    """The authors' HeteroRR edge release (``khangtran2020/DPGNN``, ``ERand/src/main.cpp``),
    for side-by-side figures only: **NOT differentially private** (:data:`PAPER_CODE_FLAW`;
    ``rounds``: the README's 1000 / 10), with the sound sampler and one released graph. It
    records an infinite spend, so reports say so and ``PrivacyBudget`` refuses it."""

    min_steps_per_node = 0.0  # the code's 50 n: not DP at any length (its account: infinite)

    def __init__(self, epsilon: float, *, rounds: tuple[int, int] = (1000, 10),
                 steps_per_node: float = 50.0, **kwargs) -> None:
        super().__init__(epsilon, steps_per_node=steps_per_node, **kwargs)
        if len(rounds) != 2 or min(int(r) for r in rounds) < 1:
            raise ValueError(f"rounds must be two move counts >= 1, got {rounds!r}")
        self.rounds = (int(rounds[0]), int(rounds[1]))

    def chain_temperature(self, num_nodes: int, private: np.ndarray) -> float:
        n_priv = int(np.unique(private).size)  # read off the private edges: not DP
        return self.eps_mcmc / (2.0 * sensitivity(max(n_priv, 3)))

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> None:
        accountant.add_pure(f"{self.name}/paper-code", math.inf, count=count,
                            note=f"NOT differentially private: {PAPER_CODE_FLAW}")


def split_pairs(
    edge_index: torch.Tensor, n: int, private_mask: torch.Tensor
) -> tuple[np.ndarray, np.ndarray]:
    """``(public, private)`` unordered pairs of ``edge_index`` split by ``private_mask`` (a bool
    per column; the two directions of an edge must agree)."""
    check_nodes("the HRG release", edge_index, n, least=3)
    mask = torch.as_tensor(private_mask)
    if mask.dtype != torch.bool or mask.shape != (edge_index.size(1),):
        raise ValueError(
            f"private_mask must be a bool tensor with one entry per edge column "
            f"({edge_index.size(1)}), got {tuple(mask.shape)} {mask.dtype}"
        )
    mask = mask.to(edge_index.device)
    public, private = _pairs(edge_index[:, ~mask], n), _pairs(edge_index[:, mask], n)
    if np.intersect1d(public[0] * n + public[1], private[0] * n + private[1]).size:
        raise ValueError(
            "an edge is marked private in one direction and public in the other: the "
            "private_mask must agree on both directions of every edge"
        )
    return public, private


def sample_private_part(
    fit: HRGFit, public: np.ndarray, eps_counts: float, generator: torch.Generator | None
) -> np.ndarray:
    """The sampled unordered pairs ``[2, k]``: Laplace(1/eps) on each internal node's
    private-edge count, then Bernoulli(``clip(noisy / (N_r - e_r), 0, 1)``) on the pairs under
    ``r`` that are not public edges (geometric gaps over the ``N_r`` pairs, public hits
    dropped)."""
    den = fit.dendrogram
    n = den.num_leaves
    noisy = fit.private_counts.astype(np.float64) + R.laplace(
        (n - 1,), 1.0 / check_epsilon(eps_counts, "eps_counts"), generator=generator,
        dtype=torch.float64,
    ).numpy()
    free = (fit.pairs - fit.public_counts).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(free > 0, np.clip(noisy / free, 0.0, 1.0), 0.0)
    seg, pos = R.bernoulli_positions(
        torch.from_numpy(fit.pairs.astype(np.int64)), torch.from_numpy(rate),
        generator=generator,
    )
    seg, pos = seg.numpy(), pos.numpy()
    order, start, size = den.leaf_order()
    width = size[den.right[seg]]
    src = order[start[den.left[seg]] + pos // width]
    dst = order[start[den.right[seg]] + pos % width]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keys = lo * n + hi
    keys = keys[~np.isin(keys, public[0] * n + public[1])]
    return np.stack([keys // n, keys % n])
