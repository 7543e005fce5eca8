"""Releases: the private outputs a method publishes, and the release half of the lifecycle.

A *release* is the output of mechanisms run on private data — GAP's noisy hops, ProGAP's NAP
outputs, the label counts, EdgeRand's randomized graph, DPGNN's noisy aggregate, what the
nodes of an LDP method sent. A method **declares** its releases (:class:`Release`: a name, its
mechanisms at a noise multiplier, the draw that feeds them their inputs, the stage before which
the fit needs it) and nothing else;
:class:`Releases`, held by :class:`~lightning_dpgnn.methods.base.PrivateModule`, owns what
every method used to write for itself:

* **plan** — the mechanisms of the releases not drawn yet record what they cost on a planning
  accountant at a noise multiplier (:meth:`Releases.plan`, ``Mechanism.account``): the
  calibration sees them before anything is drawn;
* **draw once** — ``PrivateModule.draw_releases`` runs a release's draw on the training
  graph once per fit through :func:`~lightning_dpgnn.privacy.mechanism.run`, the one preamble
  that checks, samples and records each mechanism (:meth:`Releases.store` caches the output);
  under DDP rank 0 alone draws (or, for a ``collective`` release that sums over edge
  partitions first, every rank computes the inputs and each mechanism samples once, on rank
  0), the output is broadcast with the ledger (invariant one-draw-under-ddp, docs/privacy.md);
* **cache** — the outputs stay in :attr:`Releases.values` (the only private-data-derived values
  a checkpoint or a published folder holds besides parameters);
* **checkpoint and restore** — :meth:`Releases.state_dict` / :meth:`Releases.load_state_dict`:
  a restored release is never drawn again;
* **check** — every draw must record on its ledger exactly what its plan says one draw costs
  (:meth:`Releases.check_spend`): a draw that records nothing, less or more fails loudly
  (:class:`UnaccountedRelease`) before its output is used;
* **new graphs** — :meth:`Releases.on_graph` draws the releases of a graph the model did not
  train on with fresh noise, on that graph's own ledger, keyed by a digest of exactly what the
  releases read (:attr:`Release.reads`): a repeated call on the same graph returns the cached
  release (no new noise, nothing more spent); once that cache has dropped the graph, a new
  draw composes into the same ledger. A "new" graph that shares private data with the
  training graph (the training graph itself, an edited copy of it, or one whose ``n_id``
  names training nodes) composes into the *training* ledgers instead (invariant
  overlapping-releases, docs/privacy.md).

Stage switches draw in Lightning hooks (``on_fit_start`` for the first stage, the end of a
stage's last epoch for the next), never from a dataloader request.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ..privacy import PrivacyAccountant
from ..privacy.mechanism import EDGES, FEATURES, LABELS, READS, TRAIN_LABELS, Mechanism, run

__all__ = [
    "Draw", "Release", "Releases", "UnaccountedRelease", "graph_digest",
    "EDGES", "FEATURES", "TRAIN_LABELS", "LABELS",
]
#: the Rényi orders at which a draw's recorded spend is compared with its plan
_CHECK_ORDERS = np.array([1.25, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 256.0])


class UnaccountedRelease(RuntimeError):
    """A release's draw recorded on its ledger something other than what its plan says one
    draw costs (nothing, less or more): its epsilon would be wrong."""


def _identity(value: Any) -> Any:
    return value


@dataclass
class Draw:
    """What a release's ``draw`` receives.

    Attributes:
        graph: the graph the mechanism reads (on the module's device).
        accountant: where the draw records its spend (the fit's, or the new graph's).
        generator: the noise generator (``None``: OS-entropy seeded).
        outputs: the releases of this graph drawn before this one (e.g. ProGAP's earlier NAPs,
            the label counts a hop's input is built from).
        fit: ``True`` for the training graph of a fit, ``False`` for a new graph.
        mechanisms: the release's mechanisms at the model's noise multiplier, for the draw to
            yield (empty without privacy: nothing is perturbed).
    """

    graph: Data
    accountant: PrivacyAccountant
    generator: torch.Generator | None
    outputs: dict[str, Any]
    fit: bool
    mechanisms: Sequence[Mechanism] = ()


@dataclass(frozen=True)
class Release:
    """One declared release.

    Attributes:
        name: cache, checkpoint and hub key (the ledger names are the mechanism's own).
        mechanisms: ``mechanisms(noise_multiplier)``: the mechanisms one draw runs, each once
            (their ``account`` is the plan, and what the draw must record).
        draw: ``draw(Draw)``: a generator that yields ``(mechanism, *inputs)`` for each of
            ``Draw.mechanisms``, is sent the noisy output, and returns the release
            (:func:`~lightning_dpgnn.privacy.mechanism.run` checks, samples and records).
        stage: the fit draws it when it enters this stage (0: at the start of the fit).
        stream: the noise stream under an explicit ``noise_seed`` (research only).
        collective: under DDP every rank calls ``draw`` together (e.g. sums over edge
            partitions) and ``draw`` draws its noise once itself (``PrivateModule.run_once``);
            otherwise rank 0 alone calls it and broadcasts the output.
        inductive: drawn again, with fresh noise, on a new graph (inductive inference).
        guarantee: the guarantee it counts in (``None``: the model's own; another one is
            declared with ``PrivateModule.declare_guarantee``, e.g. ``"features"`` under
            local DP beside the model's edge-level guarantee).
        save, load: the output to and from what checkpoints and published folders store
            (tensors, numbers, lists and dicts of them); identity by default.
        reads: what the draw reads of its graph, among :data:`EDGES`, :data:`FEATURES`,
            :data:`TRAIN_LABELS` (the labels of ``train_mask``, and the mask) and
            :data:`LABELS` (every label). A new graph's cache and ledger key
            (:func:`graph_digest`) covers exactly the union of what its releases read: a change
            no release reads is the same graph, and buys no fresh ledger.
    """

    name: str
    mechanisms: Callable[[float | None], Sequence[Mechanism]]
    draw: Callable[[Draw], Any]
    stage: int = 0
    stream: int = 0
    collective: bool = False
    inductive: bool = True
    guarantee: str | None = None
    save: Callable[[Any], Any] = _identity
    load: Callable[[Any], Any] = _identity
    reads: tuple[str, ...] = (EDGES, FEATURES)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reads) - set(READS))
        if unknown or not self.reads:
            raise ValueError(f"release {self.name!r}: reads must name some of {READS}, got "
                             f"{self.reads!r}")


def graph_digest(graph: Data, reads: Iterable[str] = READS) -> str:
    """A digest of what releases that read ``reads`` see of ``graph`` (default: everything a
    release may read): its size, and its edges, features, training labels (with the training
    mask) or every label as named (two graphs with the same digest get the same cached
    release and ledger).

    Canonical where the same graph can be written differently, so that rewriting it does not
    buy a fresh release: the edges are hashed in sorted order, features by their non-zeros as
    float64 whatever their layout (dense, COO, CSR) or dtype, labels as int64 and the mask as
    bool. Relabelling the nodes makes another graph to this digest (no canonical form is
    cheap); such overlapping releases compose, which the docs leave to the user."""
    h = hashlib.blake2b(digest_size=20)
    n = int(graph.num_nodes)
    h.update(str(n).encode())

    def update(name: str, *parts: torch.Tensor) -> None:
        h.update(name.encode())
        for part in parts:
            part = part.detach().cpu().contiguous()
            h.update(str(tuple(part.shape)).encode())
            h.update(part.view(torch.uint8).numpy().tobytes() if part.numel() else b"")

    reads = set(reads)
    if EDGES in reads:
        update("edge_index", _edge_keys(graph))
        mask = getattr(graph, "private_edge_mask", None)
        pairs = getattr(graph, "private_pairs", None)
        if isinstance(mask, torch.Tensor):  # which edges are private (HeteroRR), order-free
            update("private_edges", _edge_keys(graph, graph.edge_index[:, mask.bool()]))
        if isinstance(pairs, torch.Tensor):
            update("private_pairs", _edge_keys(graph, pairs))
    x = getattr(graph, "x", None)
    if FEATURES in reads and x is not None:
        coo = (x.to_sparse_coo() if x.layout != torch.strided else x.to_sparse()).coalesce()
        update("x", torch.tensor(x.shape), coo.indices(), coo.values().double())
    y, mask = getattr(graph, "y", None), getattr(graph, "train_mask", None)
    if LABELS in reads:
        if y is None:
            h.update(b"y:-")
        else:
            update("y", y.long())
    if TRAIN_LABELS in reads:  # the training rows' labels only: the others are never read
        if mask is None:
            h.update(b"train_mask:-")
        else:
            mask = mask.bool()
            update("train_mask", mask)
            if y is not None:
                update("train_labels", torch.where(mask, y.long(), -1))
    return h.hexdigest()


def _edge_keys(graph: Data, edges: torch.Tensor | None = None) -> torch.Tensor:
    """``edges`` (default: ``graph``'s) as sorted ``source * n + target`` keys (order-free)."""
    edges = (graph.edge_index if edges is None else edges).long()
    return torch.sort(edges[0] * max(int(graph.num_nodes), 1) + edges[1]).values


def shares_private_data(
    graph: Data, fit: Data, reads: Iterable[str], fit_digest: str | None = None
) -> str | None:
    """Why releases reading ``reads`` on ``graph`` would read private data of the training
    graph ``fit`` again (``None``: no sign of it). Detected: the same content
    (:func:`graph_digest`); node identities (``n_id``, as PyG's loaders and ``subgraph``
    utilities set them) that name a training node; the same number of nodes with half or more
    of ``graph``'s edges among ``fit``'s (an edited copy). A relabelled copy without ``n_id`` is
    not detected (no canonical form is cheap): the docs leave that to the user."""
    fit_digest = graph_digest(fit, reads) if fit_digest is None else fit_digest
    if graph is fit or graph_digest(graph, reads) == fit_digest:
        return "it is the training graph"
    ids, fit_ids = getattr(graph, "n_id", None), getattr(fit, "n_id", None)
    if isinstance(ids, torch.Tensor) and isinstance(fit_ids, torch.Tensor):
        shared = int(torch.isin(ids.cpu(), fit_ids.cpu()).sum())
        if shared:
            return f"{shared} of its nodes (n_id) are training nodes"
    if EDGES in reads and graph.num_nodes == fit.num_nodes and graph.num_edges:
        shared = int(torch.isin(_edge_keys(graph).cpu(), _edge_keys(fit).cpu()).sum())
        if 2 * shared >= graph.num_edges:
            return (f"it has the training graph's {graph.num_nodes} nodes and {shared} of its "
                    f"{graph.num_edges} edges (an edited copy)")
    return None


@dataclass
class _GraphRecord:
    """A new graph's ledger (kept) and its releases (cached while recent)."""

    accountant: PrivacyAccountant
    outputs: dict[str, Any] = field(default_factory=dict)


class Releases:
    """The declared releases of one model and their cached outputs.

    Args:
        graphs_cached: how many new graphs keep their releases in memory (least recently used
            first out); their ledgers are kept for good.
    """

    def __init__(self, graphs_cached: int = 4) -> None:
        self.declared: dict[str, Release] = {}
        #: the fit's cached outputs, by release name (``None``: not drawn yet)
        self.values: dict[str, Any] = {}
        self.graphs_cached = int(graphs_cached)
        self._ledgers: dict[str, dict[str | None, PrivacyAccountant]] = {}
        self._recent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        #: the graph the fit's releases read, in memory only (never checkpointed: a digest of
        #: it would tell neighbouring graphs apart): a "new" graph is compared with it
        self.fit_graph: Data | None = None
        #: why the last new graph was found to share private data with the training graph
        self.last_overlap: str | None = None

    # -- declaration -----------------------------------------------------------------------
    def declare(self, *releases: Release) -> None:
        """Declare ``releases`` (in draw order); re-declaring a name replaces it."""
        for r in releases:
            self.declared[r.name] = r
            self.values.setdefault(r.name, None)

    def get(self, name: str) -> Any:
        """The cached output of ``name`` (``None``: not drawn)."""
        return self.values.get(name)

    def require(self, name: str, owner: str = "the model") -> Any:
        """The cached output of ``name``; the one "not drawn yet" error before a fit."""
        value = self.values.get(name)
        if value is None:
            raise RuntimeError(
                f"{owner} has not collected or released {name!r} yet: fit the model (or load "
                "a fitted checkpoint) before validating, testing or predicting"
            )
        return value

    def set(self, name: str, value: Any) -> None:
        """Replace the cached output of a declared release (e.g. its rows moved to a device or
        sharded across ranks): never a fresh draw."""
        if name not in self.declared:
            raise KeyError(f"no release named {name!r} is declared")
        self.values[name] = value

    def drawn(self, name: str) -> bool:
        return self.values.get(name) is not None

    def pending(self, stage: int | None = None) -> list[Release]:
        """Declared releases not drawn yet (those of stages up to ``stage`` when given)."""
        return [
            r for r in self.declared.values()
            if not self.drawn(r.name) and (stage is None or r.stage <= stage)
        ]

    # -- plan --------------------------------------------------------------------------------
    def plan(
        self,
        accountant: PrivacyAccountant,
        noise_multiplier: float | None,
        guarantee: str | None = None,
    ) -> None:
        """Record the cost of every pending release of ``guarantee`` on ``accountant``."""
        for r in self.pending():
            if r.guarantee == guarantee:
                for mechanism in r.mechanisms(noise_multiplier):
                    mechanism.account(accountant)

    @staticmethod
    def draw_of(
        release: Release, graph: Data, accountant: PrivacyAccountant,
        generator: torch.Generator | None, outputs: dict[str, Any], fit: bool,
        noise_multiplier: float | None,
    ) -> Draw:
        """What ``release``'s draw receives (its mechanisms at ``noise_multiplier``)."""
        mechanisms = tuple(release.mechanisms(noise_multiplier))
        return Draw(graph, accountant, generator, outputs, fit, mechanisms)

    def _fit_digest(self, reads: tuple[str, ...]) -> str:
        """The digest of the fit's graph, hashed once per graph (not on every new graph)."""
        cached = getattr(self, "_fit_key", None)  # (graph, reads, digest): the graph itself,
        if cached is None or cached[0] is not self.fit_graph or cached[1] != reads:  # not its id
            self._fit_key = (self.fit_graph, reads, graph_digest(self.fit_graph, reads))
        return self._fit_key[2]

    def reads(self) -> tuple[str, ...]:
        """What the inductive releases read, together (the new graphs' key covers this)."""
        read = {x for r in self.declared.values() if r.inductive for x in r.reads}
        return tuple(x for x in READS if x in read)

    # -- check: a draw records what its plan says -------------------------------------------
    @staticmethod
    def check_spend(
        release: Release, before: PrivacyAccountant, after: PrivacyAccountant,
        noise_multiplier: float | None,
    ) -> None:
        """Raise :class:`UnaccountedRelease` unless drawing ``release`` took its ledger from
        ``before`` to ``after`` by exactly what ``release.plan`` says one draw costs at
        ``noise_multiplier`` (compared as Rényi curves: the order of entries is free)."""
        planned = PrivacyAccountant(after.level, after.delta)
        for mechanism in release.mechanisms(noise_multiplier):
            mechanism.account(planned)
        was = before.rdp(_CHECK_ORDERS)
        known = np.isfinite(was)  # where the ledger was infinite already, nothing can grow
        grown = after.rdp(_CHECK_ORDERS)[known] - was[known]
        expected = planned.rdp(_CHECK_ORDERS)[known]
        if grown.size and not np.allclose(grown, expected, rtol=1e-6, atol=1e-12):
            what = "nothing" if not np.any(grown) else (
                "less" if np.all(grown <= expected) else "more or other")
            raise UnaccountedRelease(
                f"release {release.name!r} recorded {what} than its plan says one draw costs "
                f"(Rényi epsilon at order {_CHECK_ORDERS[known][0]:g}: {grown[0]:.6g} recorded, "
                f"{expected[0]:.6g} planned): its output is not used, the guarantee would be "
                "wrong"
            )

    # -- the fit: draw once (``PrivateModule.draw_releases`` runs the mechanisms) ----------
    def store(self, name: str, value: Any) -> None:
        """Cache the fit's draw of ``name`` (a release must draw something)."""
        if value is None:
            raise RuntimeError(f"release {name!r} drew nothing")
        self.set(name, value)

    def outputs(self) -> dict[str, Any]:
        """The releases drawn so far, by name (what a later release may read)."""
        return {k: v for k, v in self.values.items() if v is not None}

    # -- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The cached outputs (what a checkpoint and a published folder store)."""
        return {
            name: None if value is None else self.declared[name].save(value)
            for name, value in self.values.items()
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore cached outputs: a restored release is never drawn again. Names not
        declared are refused (a checkpoint of another model)."""
        unknown = sorted(set(state) - set(self.declared))
        if unknown:
            raise KeyError(
                f"the checkpoint holds releases this model does not declare: {unknown} "
                f"(declared: {sorted(self.declared)})"
            )
        self.values = {
            name: None if state.get(name) is None else r.load(state[name])
            for name, r in self.declared.items()
        }

    def clear(self) -> None:
        """Forget every cached output of the fit (a new fit draws afresh)."""
        self.values = dict.fromkeys(self.declared)

    # -- new graphs -------------------------------------------------------------------------
    def on_graph(
        self,
        graph: Data,
        new_accountant: Callable[[str | None], PrivacyAccountant],
        given: dict[str, Any] | None = None,
        until: Callable[[Release], bool] = lambda r: True,
        *,
        fit_accountant: Callable[[str | None], PrivacyAccountant] | None = None,
        noise_multiplier: float | None = None,
        check: bool = True,
    ) -> tuple[dict[str, Any], dict[str | None, PrivacyAccountant]]:
        """The releases of a graph the model did not train on, and that graph's ledgers (one
        per guarantee; ``None``: the model's own).

        A graph seen before (same :func:`graph_digest` of what the releases read) whose
        releases are still cached gets them back: no new noise, nothing spent. Otherwise each
        inductive release (``until`` selects them) is drawn with fresh noise on the graph's
        own ledger, which composes with what earlier calls on the same graph spent; each draw
        is checked against its plan at ``noise_multiplier`` (:meth:`check_spend`, when
        ``check``). A graph that shares private data with the training graph
        (:func:`shares_private_data`) is no new graph: its draws compose into the training
        ledgers (``fit_accountant``; without one, e.g. before a fit, it is refused). ``given``
        supplies outputs computed elsewhere (e.g. what the nodes of an LDP method sent from
        their devices): they are not drawn here and cost nothing here (their spend is
        reported where they were made)."""
        reads = self.reads() or READS
        key = graph_digest(graph, reads)
        if not given and key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key], self._ledgers[key]
        ledgers = self._ledgers.get(key) or {}
        overlap = None if self.fit_graph is None else shares_private_data(
            graph, self.fit_graph, reads, self._fit_digest(reads))
        self.last_overlap = overlap
        if overlap is not None:
            if fit_accountant is None:
                raise ValueError(f"this graph shares private data with the training graph "
                                 f"({overlap}): it is no new graph")
            new_accountant = fit_accountant
            ledgers = {g: fit_accountant(g) for g in ledgers}  # the training ledgers
        outputs: dict[str, Any] = dict(given or {})
        for r in self.declared.values():
            if not r.inductive or not until(r) or r.name in outputs:
                continue
            if r.guarantee not in ledgers:
                ledgers[r.guarantee] = new_accountant(r.guarantee)
            ledger = ledgers[r.guarantee]
            before = ledger.copy()
            d = self.draw_of(r, graph, ledger, None, outputs, False, noise_multiplier)
            outputs[r.name] = run(r.draw(d), ledger)
            if check:
                self.check_spend(r, before, ledgers[r.guarantee], noise_multiplier)
        if None not in ledgers:
            ledgers[None] = new_accountant(None)
        self._ledgers[key] = ledgers
        if not given:
            self._recent[key] = outputs
            while len(self._recent) > self.graphs_cached:
                self._recent.popitem(last=False)
        return outputs, ledgers

    def ledgers_of(self, graph: Data) -> dict[str | None, PrivacyAccountant] | None:
        """The ledgers of releases drawn on ``graph`` so far (``None``: none)."""
        return self._ledgers.get(graph_digest(graph, self.reads() or READS))
