"""Releases: the private outputs a method publishes. A method **declares** them
(:class:`Release`); :class:`Releases` plans them before anything is drawn, caches each fit's
draw (once, through :func:`~lightning_dpgnn.privacy.mechanism.run`; under DDP rank 0 draws,
invariant one-draw-under-ddp), checks every draw against its plan, checkpoints the outputs
(never drawn again) and draws them with fresh noise on a new graph's own ledger; a "new" graph
sharing private data with the training graph composes into the training ledgers (invariant
overlapping-releases, docs/privacy.md). Releases are drawn in hooks, never from a dataloader.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.apply_func import apply_to_collection
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
    draw costs: its epsilon would be wrong."""


def _identity(value: Any) -> Any:
    return value


def _away(value: Any, device: torch.device) -> bool:
    """Whether a tensor of ``value`` is not on ``device``."""
    devices: list[torch.device] = []
    apply_to_collection(value, torch.Tensor, lambda t: devices.append(t.device))
    return any(d != device for d in devices)


@dataclass
class Draw:
    """What a release's ``draw`` receives: the graph it reads (on the module's device), the
    ledger it records on, the noise generator (``None``: OS entropy), the releases of this graph
    drawn before it, whether it is the fit's graph, and its mechanisms at the model's noise
    multiplier (empty without privacy)."""

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
        name: cache, checkpoint and hub key.
        mechanisms: ``mechanisms(noise_multiplier)``: what one draw runs, each once (the plan).
        draw: ``draw(Draw)``: a generator yielding ``(mechanism, *inputs)`` for each of
            ``Draw.mechanisms``, sent the noisy output, returning the release.
        stage: the fit draws it when it enters this stage (0: at the start of the fit).
        stream: the noise stream under an explicit ``noise_seed`` (research only).
        collective: under DDP every rank calls ``draw``, each mechanism sampling on rank 0.
        inductive: drawn again, with fresh noise, on a new graph.
        guarantee: the guarantee it counts in (``None``: the model's own).
        save, load: the output to and from what checkpoints and published folders store.
        reads: what the draw reads of its graph (:data:`EDGES`, :data:`FEATURES`,
            :data:`TRAIN_LABELS`, :data:`LABELS`): what a new graph's key covers.
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
    """A digest of what releases that read ``reads`` see of ``graph``: two graphs with the same
    digest get the same cached release and ledger.

    Canonical where the same graph can be written differently, so rewriting it buys no fresh
    release: edges hashed in sorted order, features by their non-zeros as float64 whatever
    their layout or dtype, labels as int64, the mask as bool. A relabelled copy is another
    graph here (no canonical form is cheap); the docs leave such overlaps to the user."""
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
    graph ``fit`` again (``None``: no sign of it): the same content, node identities (``n_id``)
    naming a training node, or the same nodes with half or more of ``graph``'s edges among
    ``fit``'s (an edited copy). A relabelled copy without ``n_id`` is not detected."""
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


class Releases:
    """The declared releases of one model and their cached outputs: ``releases[name]`` is a
    drawn output (the one "not drawn yet" error otherwise), ``releases.get(name)`` it or
    ``None``.

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
        #: the graph the fit's releases read, in memory only (a checkpointed digest would tell
        #: neighbouring graphs apart): a "new" graph is compared with it
        self.fit_graph: Data | None = None
        #: why the last new graph was found to share private data with the training graph
        self.last_overlap: str | None = None

    def declare(self, *releases: Release) -> None:
        """Declare ``releases`` (in draw order); re-declaring a name replaces it."""
        for r in releases:
            self.declared[r.name] = r
            self.values.setdefault(r.name, None)

    def undeclare(self, name: str) -> None:
        """Forget the release ``name`` (a model restored from before it existed)."""
        self.declared.pop(name, None)
        self.values.pop(name, None)

    def get(self, name: str) -> Any:
        """The cached output of ``name`` (``None``: not drawn)."""
        return self.values.get(name)

    def __getitem__(self, name: str) -> Any:
        return self.require(name)

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

    def to(self, device: torch.device) -> bool:
        """Move every cached output to ``device`` (restored ones come on the CPU): the one
        device move of the releases. Whether any moved."""
        away = [name for name, value in self.values.items() if _away(value, device)]
        for name in away:
            self.values[name] = apply_to_collection(
                self.values[name], torch.Tensor, lambda t: t.to(device))
        return bool(away)

    def drawn(self, name: str) -> bool:
        return self.values.get(name) is not None

    def pending(self, stage: int | None = None) -> list[Release]:
        """Declared releases not drawn yet (those of stages up to ``stage`` when given)."""
        return [
            r for r in self.declared.values()
            if not self.drawn(r.name) and (stage is None or r.stage <= stage)
        ]

    def plan(
        self, accountant: PrivacyAccountant, noise_multiplier: float | None,
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

    @staticmethod
    def check_spend(
        release: Release, before: PrivacyAccountant, after: PrivacyAccountant,
        noise_multiplier: float | None,
    ) -> None:
        """Raise :class:`UnaccountedRelease` unless drawing ``release`` took its ledger from
        ``before`` to ``after`` by exactly what its plan says one draw costs at
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

    def store(self, name: str, value: Any) -> None:
        """Cache the fit's draw of ``name`` (a release must draw something)."""
        if value is None:
            raise RuntimeError(f"release {name!r} drew nothing")
        self.set(name, value)

    def outputs(self) -> dict[str, Any]:
        """The releases drawn so far, by name (what a later release may read)."""
        return {k: v for k, v in self.values.items() if v is not None}

    def state_dict(self) -> dict[str, Any]:
        """The cached outputs (what a checkpoint and a published folder store)."""
        return {
            name: None if value is None else self.declared[name].save(value)
            for name, value in self.values.items()
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore cached outputs (never drawn again); names not declared are refused."""
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
        """The releases of a graph the model did not train on, and its ledgers (one per
        guarantee; ``None``: the model's own).

        A graph seen before (same :func:`graph_digest`) whose releases are still cached gets
        them back: no new noise, nothing spent. Otherwise each inductive release (``until``
        selects them) is drawn with fresh noise on the graph's own ledger, composing with
        earlier calls on it, and checked against its plan (``check``). A graph that shares
        private data with the training graph composes into the training ledgers
        (``fit_accountant``; without one it is refused). ``given``: outputs computed elsewhere
        (e.g. what an LDP method's nodes sent), not drawn here and not spent here."""
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
