"""Local DP on a graph's node-embedding matrix (GW-LDP, Jin & Chen, IJCAI 2022, Alg. 1).

A client sends ``M(H)``, ``H = f(A, X)`` in a *public* range ``[alpha, beta]^{n x h}``:
:class:`MatrixMultiBit` runs LPGNN's multi-bit encoder on each of the ``r`` released rows at
``epsilon / r``, so a graph spends exactly ``epsilon`` (sequential composition over its rows).
The protected unit is one client's whole graph: independent graphs compose in parallel, graphs
cut from one source graph sequentially by :func:`multiplicity` (``k * epsilon``, ``k`` from
public source edges). ``size="public"`` releases each graph's node count, ``size="padded"``
(a public ``n_max``) protects it. The guarantee holds *given the model* ``f`` (sent in the
clear by the paper's FedAvg). :class:`PaperCodeGaussian` reproduces the authors' code: noise on
unbounded embeddings, no guarantee.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch

from . import random as R
from .accountant import LedgerEntry, PrivacyAccountant, check_epsilon
from .ldp import MultiBit
from .mechanism import EDGES, FEATURES, fields_repr

__all__ = [
    "MatrixMultiBit",
    "PaperCodeGaussian",
    "GraphRelease",
    "graph_unit",
    "fedavg_unit",
    "multiplicity",
    "SIZE_MODES",
    "PAPER_CODE_UNIT",
]

SIZE_MODES = ("public", "padded")
SizeMode = Literal["public", "padded"]

PAPER_CODE_UNIT = (
    "NOT differentially private: paper-code reference mode (the authors' code adds Gaussian "
    "noise whose standard deviation it calls epsilon to unbounded embeddings; no sensitivity "
    "bound, no guarantee)"
)


def multiplicity(
    node_ids: Sequence[torch.Tensor] | None, groups: Sequence[int] | None = None
) -> int:
    """The largest number of graphs (or, with ``groups``, of distinct groups of graphs, e.g.
    clients) that hold one node of the source graph; ``node_ids[i]``: graph ``i``'s nodes in it
    (``None``: independent graphs, 1). Never a function of features or labels."""
    if not node_ids:
        return 1
    holders: dict[int, set[int]] = {}
    for ids, group in zip(node_ids, range(len(node_ids)) if groups is None else groups,
                          strict=True):
        for node in ids.view(-1).tolist():
            holders.setdefault(int(node), set()).add(int(group))
    return max((len(h) for h in holders.values()), default=1)


def graph_unit(
    size: SizeMode,
    n_max: int | None = None,
    fedavg: str = "clear",
    *,
    overlap: int | None = None,
    public: Sequence[str] = (),
) -> str:
    """The protected unit and scope of the GW-LDP release's guarantee, in words (for reports).
    ``overlap``: a source node is in up to ``overlap`` released graphs (``None``: independent
    graphs); ``fedavg``: ``"dp"`` (DP-FedAvg updates, :func:`fedavg_unit`) or ``"clear"``;
    ``public``: what the data module treats as public (invariant 15)."""
    rows = ("one row per node, so each graph's number of nodes is public" if size == "public"
            else f"every released matrix is padded or truncated to n_max={n_max} rows")
    if overlap is None:
        what = ("one client's whole graph (edges, node features, node labels)"
                + ("; its number of nodes is public (the released matrix has one row per node)"
                   if size == "public" else f" and its number of nodes ({rows})"))
    else:
        what = (
            f"one node of the source graph the released graphs are cut from (its features and "
            f"label), in up to {overlap} released graph(s): their releases compose sequentially "
            f"({overlap} x epsilon per graph); {rows}"
        )
    if fedavg == "dp":
        scope = (
            "; covers the released node-embedding matrices (local DP: against the server too); "
            "the DP-FedAvg model updates are the dp-fedavg guarantee's, and whoever sees both "
            "the weights and this release faces the two composed (at most the sum of the "
            "epsilons); graph labels given to the server for its classifier are not covered"
        )
    else:
        scope = (
            "; covers the released node-embedding matrices given the trained model only: the "
            "FedAvg model updates are sent in the clear (the paper's protocol) and are NOT "
            "private, nor are the graph labels given to the server"
        )
    assumed = "; public: " + "; ".join(public) if public else ""
    return what + scope + assumed


def fedavg_unit(clients_per_node: int = 1, public: Sequence[str] = ()) -> str:
    """The unit and scope of GW-LDP's DP-FedAvg guarantee (client-level, central: the server
    adds the noise), in words; ``clients_per_node``: how many clients' updates one source node
    can change."""
    spread = ("" if clients_per_node == 1 else
              f"; one source node is in the training graphs of up to {clients_per_node} "
              "clients, and the recorded sensitivity covers all of them")
    assumed = "; public: " + "; ".join(public) if public else ""
    return (
        "replacement of one graph of one client: the trained weights (client-level DP-FedAvg "
        "model updates, noise added by the server, which sees each clipped update and is "
        f"trusted with it){spread}; the released embedding matrices are the release "
        "guarantee's, and whoever sees both faces the two composed (at most the sum of the "
        f"epsilons){assumed}"
    )


@dataclass
class GraphRelease:
    """What the server received: one matrix per graph (``[r_i, h]``; ``kind``: ``"codes"``,
    ``int8`` multi-bit codes to rectify, or ``"values"``), in the order of ``graph_ids``."""

    kind: Literal["codes", "values"]
    matrices: list[torch.Tensor]
    graph_ids: torch.Tensor
    meta: dict[str, Any] = field(default_factory=dict)

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "matrices": [m.cpu() for m in self.matrices],
            "graph_ids": self.graph_ids.cpu(),
            "meta": dict(self.meta),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> GraphRelease:
        return cls(state["kind"], list(state["matrices"]), state["graph_ids"], state["meta"])

    def __len__(self) -> int:
        return len(self.matrices)


class MatrixMultiBit:
    """The matrix multi-bit encoder of GW-LDP Alg. 1, ``epsilon``-LDP per graph (module
    docstring). ``alpha, beta``: the entries' public range (inputs are clipped into it); ``m``:
    entries sampled per row (``None``: LPGNN's ``m*``); ``size``: ``"public"`` or ``"padded"``
    to the public ``n_max`` rows."""

    name: ClassVar[str] = "gwldp/multibit"
    level: ClassVar[str] = "ldp"
    reads: ClassVar[tuple[str, ...]] = (EDGES, FEATURES)  # one client's whole graph

    def __init__(
        self,
        epsilon: float,
        alpha: float = 0.0,
        beta: float = 1.0,
        m: int | None = None,
        *,
        size: SizeMode = "public",
        n_max: int | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon, finite="(use the clear embeddings for epsilon=inf)")
        if size not in SIZE_MODES:
            raise ValueError(f"size must be one of {SIZE_MODES}, got {size!r}")
        if size == "padded":
            if n_max is None or isinstance(n_max, bool) or int(n_max) < 1:
                raise ValueError("size='padded' needs a public n_max >= 1")
            n_max = int(n_max)
        self.alpha, self.beta = float(alpha), float(beta)
        if not self.alpha < self.beta:
            raise ValueError(f"need alpha < beta, got ({alpha}, {beta})")
        self.m = m
        self.size: SizeMode = size
        self.n_max = n_max
        #: in how many released graphs one node sits at most (:meth:`at_overlap`)
        self.overlap = 1
        MultiBit(self.epsilon, self.alpha, self.beta, m=m)  # validates m early

    def randomizer(self, rows: int) -> MultiBit:
        """The row mechanism of a ``rows``-row matrix: ``epsilon / rows`` (composed over rows)."""
        return MultiBit(self.epsilon / int(rows), self.alpha, self.beta, m=self.m)

    def prepare(self, h: torch.Tensor) -> torch.Tensor:
        """``h``, or padded (with the range's midpoint) / truncated to ``n_max`` rows: a fixed
        function of the graph, which the LDP bound covers."""
        if h.dim() != 2 or h.size(0) < 1 or h.size(1) < 1:
            raise ValueError(
                f"the embedding must be a [n >= 1, h >= 1] matrix, got {tuple(h.shape)}"
            )
        if self.size == "public":
            return h
        r = int(self.n_max)  # type: ignore[arg-type]
        if h.size(0) >= r:
            return h[:r]
        pad = torch.full((r - h.size(0), h.size(1)), (self.alpha + self.beta) / 2, dtype=h.dtype,
                         device=h.device)
        return torch.cat([h, pad])

    def encode(self, h: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Alg. 1 on one graph's embedding ``h`` (``[n, h]``): ``int8`` codes in {-1, 0, 1}."""
        x = self.prepare(h.detach())
        return self.randomizer(x.size(0)).sample(x, generator)

    def rectify(self, codes: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """The unbiased estimate of the encoded matrix (LPGNN eq. 3.10 per row)."""
        return self.randomizer(codes.size(0)).rectify(codes, dtype)

    def log_prob(self, h: torch.Tensor, codes: torch.Tensor) -> float:
        """Exact ``log Pr[encode(h) = codes]`` (product over rows)."""
        x = self.prepare(h.detach().to(torch.float64))
        if x.shape != codes.shape:
            return -math.inf
        return float(self.randomizer(x.size(0)).log_prob(x, codes).sum())

    def output_probabilities(self, h: torch.Tensor) -> torch.Tensor:
        """Exact marginals ``[Pr[-1], Pr[0], Pr[1]]`` of every released entry."""
        x = self.prepare(h.detach().to(torch.float64))
        return self.randomizer(x.size(0)).output_probabilities(x)

    def at_overlap(self, overlap: int) -> MatrixMultiBit:
        """This encoder over graphs whose nodes sit in up to ``overlap`` of them."""
        out = copy.copy(self)
        out.overlap = int(overlap)
        return out

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> LedgerEntry:
        """Record ``count`` release rounds, ``epsilon`` per graph: in parallel over independent
        graphs, ``overlap * epsilon`` when a source node is in :attr:`overlap` graphs."""
        overlap = self.overlap
        m = "m* (optimal)" if self.m is None else f"m={self.m}"
        rows = "n rows (n public)" if self.size == "public" else f"n_max={self.n_max} rows"
        across = ("graphs compose in parallel" if overlap == 1 else
                  f"a node of the source graph is in up to {overlap} released graphs: "
                  f"sequential composition, {overlap} x {self.epsilon:g}")
        note = (
            f"GW-LDP matrix multi-bit encoder, epsilon {self.epsilon:g} per graph = "
            f"epsilon/r per row over r = {rows}, {m} entries per row; {across}"
        )
        return accountant.add_pure(self.name, self.epsilon * int(overlap), count=count,
                                   note=note)

    def sample(
        self, embeddings: list[torch.Tensor], generator: torch.Generator | None = None
    ) -> list[torch.Tensor]:
        """One round: every graph's embedding encoded once, recording nothing."""
        codes = []
        for h in embeddings:  # not through encode: the draw stays close to run (docs/index.md)
            x = self.prepare(h.detach())
            codes.append(self.randomizer(x.size(0)).sample(x, generator).cpu())
        return codes

    def graph_release(self, codes: list[torch.Tensor], graph_ids: torch.Tensor) -> GraphRelease:
        """What the server receives from one round (:meth:`sample`)."""
        meta = {"mechanism": self.name, "epsilon": self.epsilon, "size": self.size,
                "n_max": self.n_max, "alpha": self.alpha, "beta": self.beta, "m": self.m}
        return GraphRelease("codes", codes, graph_ids.cpu(), meta)

    def __repr__(self) -> str:
        return fields_repr(self, "epsilon", "alpha", "beta", "m", "size", "n_max")


class PaperCodeGaussian:
    """The authors' code's embedding perturbation (``gwldp/ldp.py::ldp_emb``): ``H + N(0, s^2)``
    with ``s`` (``std``) their "epsilon". **Not differentially private** (no bound on ``H``, so
    no sensitivity): it records an infinite spend with a note saying so. Their default ``1/n``
    is set once, from the *first* graph (``std=None``); ``per_graph=True`` gives each graph
    ``1 / n`` (the text's reading)."""

    name: ClassVar[str] = "gwldp/paper-code-gaussian"
    level: ClassVar[str] = "ldp"
    reads: ClassVar[tuple[str, ...]] = (EDGES, FEATURES)

    def __init__(self, std: float | None = None, per_graph: bool = False) -> None:
        if std is not None and not (float(std) >= 0 and math.isfinite(float(std))):
            raise ValueError(f"std must be a finite number >= 0 or None, got {std!r}")
        self.std = None if std is None else float(std)
        self.per_graph = bool(per_graph)

    def stds(self, sizes: list[int]) -> list[float]:
        """The std each graph gets (see the class docstring)."""
        if self.std is not None:
            return [self.std] * len(sizes)
        if self.per_graph:
            return [1.0 / int(n) for n in sizes]
        return [1.0 / int(sizes[0])] * len(sizes) if sizes else []

    def at_overlap(self, overlap: int) -> PaperCodeGaussian:
        return self  # an infinite spend whatever the overlap

    def account(self, accountant: PrivacyAccountant, count: int = 1) -> LedgerEntry:
        """Record ``count`` release rounds at an infinite spend."""
        std = f"{self.std:g}" if self.std is not None else (
            "1/n" if self.per_graph else "1/n of the first graph")
        note = (
            f"NOT differentially private: paper-code reference mode, Gaussian noise of std {std} "
            "(called epsilon in the authors' code) on unbounded embeddings"
        )
        return accountant.add_pure(self.name, math.inf, count=count, note=note)

    def sample(
        self, embeddings: list[torch.Tensor], generator: torch.Generator | None = None
    ) -> list[torch.Tensor]:
        stds = self.stds([int(h.size(0)) for h in embeddings])
        values = []
        for h, std in zip(embeddings, stds, strict=True):
            hd = h.detach().to(torch.float64)
            noise = R.normal(tuple(hd.shape), float(std), generator=generator,
                             dtype=torch.float64, device=hd.device)
            values.append((hd + noise).float().cpu())
        return values

    def graph_release(self, values: list[torch.Tensor], graph_ids: torch.Tensor) -> GraphRelease:
        meta = {"mechanism": self.name, "std": self.std, "per_graph": self.per_graph,
                "differentially_private": False}
        return GraphRelease("values", values, graph_ids.cpu(), meta)

    def __repr__(self) -> str:
        return fields_repr(self, "std", "per_graph")
