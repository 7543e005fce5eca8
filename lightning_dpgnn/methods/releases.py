"""Releases: the private outputs a method publishes, and the release half of the lifecycle.

A *release* is the output of a mechanism run on private data — GAP's noisy hops, ProGAP's NAP
outputs, the label counts, EdgeRand's randomized graph, DPGNN's noisy aggregate, what the
nodes of an LDP method sent. A method **declares** its releases (:class:`Release`: a name, what
one draw costs, the draw itself, the stage before which the fit needs it) and nothing else;
:class:`Releases`, held by :class:`~lightning_dpgnn.methods.base.PrivateModule`, owns what
every method used to write for itself:

* **plan** — the releases not drawn yet are recorded on a planning accountant at a noise
  multiplier (:meth:`Releases.plan`): the calibration sees them before anything is drawn;
* **draw once** — ``PrivateModule.draw_releases`` runs a release's mechanism on the training
  graph once per fit (:meth:`Releases.store` caches it); under DDP rank 0 alone draws (or,
  for a ``collective`` release that sums over edge partitions first, every rank calls it and
  the noise is drawn once inside it), the output is broadcast with the ledger (invariant
  one-draw-under-ddp, docs/privacy.md);
* **cache** — the outputs stay in :attr:`Releases.values` (the only private-data-derived values
  a checkpoint or a published folder holds besides parameters);
* **checkpoint and restore** — :meth:`Releases.state_dict` / :meth:`Releases.load_state_dict`:
  a restored release is never drawn again;
* **new graphs** — :meth:`Releases.on_graph` draws the releases of a graph the model did not
  train on with fresh noise, on that graph's own ledger, keyed by a digest of the graph: a
  repeated call on the same graph returns the cached release (no new noise, nothing more
  spent); once that cache has dropped the graph, a new draw composes into the same ledger.

Stage switches draw in Lightning hooks (``on_fit_start`` for the first stage, the end of a
stage's last epoch for the next), never from a dataloader request.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch_geometric.data import Data

from ..privacy import PrivacyAccountant

__all__ = ["Draw", "Release", "Releases", "graph_digest"]


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
    """

    graph: Data
    accountant: PrivacyAccountant
    generator: torch.Generator | None
    outputs: dict[str, Any]
    fit: bool


@dataclass(frozen=True)
class Release:
    """One declared release.

    Attributes:
        name: cache, checkpoint and hub key (the ledger names are the mechanism's own).
        plan: ``plan(accountant, noise_multiplier)`` records on ``accountant`` what one draw
            costs (the mechanism plans itself, e.g. ``GaussianAggregation.account``).
        draw: ``draw(Draw) -> output``: runs the mechanism, recording on ``draw.accountant``.
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
    """

    name: str
    plan: Callable[[PrivacyAccountant, float | None], None]
    draw: Callable[[Draw], Any]
    stage: int = 0
    stream: int = 0
    collective: bool = False
    inductive: bool = True
    guarantee: str | None = None
    save: Callable[[Any], Any] = _identity
    load: Callable[[Any], Any] = _identity


def graph_digest(graph: Data) -> str:
    """A digest of everything a release may read of ``graph``: its size, edges, features,
    labels and training mask (two graphs with the same digest get the same cached release).

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

    edges = graph.edge_index.long()
    update("edge_index", edges[:, torch.argsort(edges[0] * max(n, 1) + edges[1])])
    x = getattr(graph, "x", None)
    if x is not None:
        coo = (x.to_sparse_coo() if x.layout != torch.strided else x.to_sparse()).coalesce()
        update("x", torch.tensor(x.shape), coo.indices(), coo.values().double())
    for key, dtype in (("y", torch.long), ("train_mask", torch.bool)):
        t = getattr(graph, key, None)
        if t is None:
            h.update(f"{key}:-".encode())
        else:
            update(key, t.to(dtype))
    return h.hexdigest()


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

    # -- declaration -----------------------------------------------------------------------
    def declare(self, *releases: Release) -> None:
        """Declare ``releases`` (in draw order); re-declaring a name replaces it."""
        for r in releases:
            self.declared[r.name] = r
            self.values.setdefault(r.name, None)

    def get(self, name: str) -> Any:
        """The cached output of ``name`` (``None``: not drawn)."""
        return self.values.get(name)

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
                r.plan(accountant, noise_multiplier)

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
    ) -> tuple[dict[str, Any], dict[str | None, PrivacyAccountant]]:
        """The releases of a graph the model did not train on, and that graph's ledgers (one
        per guarantee; ``None``: the model's own).

        A graph seen before (same :func:`graph_digest`) whose releases are still cached gets
        them back: no new noise, nothing spent. Otherwise each inductive release (``until``
        selects them) is drawn with fresh noise on the graph's own ledger, which composes with
        what earlier calls on the same graph spent. ``given`` supplies outputs computed
        elsewhere (e.g. what the nodes of an LDP method sent from their devices): they are not
        drawn here and cost nothing here (their spend is reported where they were made)."""
        key = graph_digest(graph)
        if not given and key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key], self._ledgers[key]
        ledgers = self._ledgers.get(key) or {}
        outputs: dict[str, Any] = dict(given or {})
        for r in self.declared.values():
            if not r.inductive or not until(r) or r.name in outputs:
                continue
            if r.guarantee not in ledgers:
                ledgers[r.guarantee] = new_accountant(r.guarantee)
            outputs[r.name] = r.draw(Draw(graph, ledgers[r.guarantee], None, outputs, fit=False))
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
        return self._ledgers.get(graph_digest(graph))
