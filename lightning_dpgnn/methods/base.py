"""Base LightningModule of every private method: the one privacy lifecycle (invariant
one-lifecycle, docs/privacy.md).

**plan -> calibrate -> record -> enforce -> report**, written once here:

* *plan*: a method declares the mechanisms the rest of its fit will run by implementing
  :meth:`PrivateModule.plan_mechanisms` (record them on a planning accountant at a noise
  multiplier) and, when it trains with DP-SGD, :meth:`PrivateModule.dpsgd_phase` (the phase the
  next optimizer step belongs to).
* *calibrate*: :meth:`PrivateModule.calibrate` finds the smallest noise multiplier whose plan
  meets the target epsilon (or checks a user-fixed one against it).
* *record*: mechanisms record every invocation on ``self.accountant`` (the only source of
  epsilon) and mark it when they drew reproducible noise.
* *enforce*: before any step the trainer is checked for settings that break accounting
  (:meth:`PrivateModule.check_trainer`); a DP-SGD phase whose calibrated steps are used up
  halts the fit; ``PrivacyBudget`` refuses or stops over-budget fits through
  :meth:`privacy_planned` / :meth:`privacy_if_next_step` / :meth:`halt_privately`. Every
  reason a fit ends is gathered in :meth:`stop_reason` and logged (``fit_end_reason``).
* *report*: :meth:`privacy_spent` snapshots the accountant into a :class:`PrivacyReport` with
  the protected unit and the provenance of the noise.

Noise is never replayable: every mechanism draws from an OS-entropy-seeded generator
(:mod:`lightning_dpgnn.privacy.random`) unless the user passes ``noise_seed=`` explicitly, which
the report then states. Checkpoints hold parameters, hyper-parameters, the report and the
outputs of recorded mechanisms (:meth:`mechanism_outputs`) — nothing else computed from private
data (invariant releases-only).
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import lightning as L
import torch
import torch.nn.functional as F
from huggingface_hub import ModelCard, ModelHubMixin
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.strategies.launchers import _SubprocessScriptLauncher
from lightning.pytorch.trainer.states import TrainerStatus
from lightning.pytorch.utilities import rank_zero_info
from torch_geometric.data import Data
from torchmetrics.functional.classification import multiclass_accuracy

from .._init_args import init_arguments
from .._quiet import quiet_lightning
from ..caches import clear_caches
from ..data.datamodules import NodeDataSource
from ..data.simple import require_simple
from ..levels import CENTRAL_LEVELS, EDGE_UNITS, Level, Unit
from ..privacy import (
    PrivacyAccountant,
    PrivacyReport,
    SeveralGuarantees,
    check_epsilon,
    resolve_delta,
)
from ..privacy.accountant import DELTA_RULES
from ..privacy.calibration import calibrate_noise_multiplier
from ..privacy.dpsgd import DPSGDPhase
from ..privacy.guarantee import Guarantee, default_words
from ..privacy.mechanism import run
from ..privacy.random import reproducible_generator
from ..publish.card import MethodCard
from .arguments import check_argument_names, check_arguments
from .releases import Release, Releases

if TYPE_CHECKING:
    from ..loops import StagedFit
    from .rows import RowTrainer

__all__ = [
    "PrivateModule",
    "WholeGraphSteps",
    "PrivateModel",
    "require_private_model",
    "PRIVACY_LEVELS",
    "AccountingError",
]

PRIVACY_LEVELS = CENTRAL_LEVELS
CHECKPOINT_KEY = "dpgnn_privacy"
T = TypeVar("T")



def accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Share of rows whose highest logit is the label (torchmetrics' micro accuracy)."""
    return multiclass_accuracy(logits, y, num_classes=logits.size(-1), average="micro")


def cross_entropy(
    logits: torch.Tensor, y: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """``F.cross_entropy(logits, y, reduction=reduction)`` for ``[N, C]`` logits, computed on
    the ``[1, C, N]`` view: the same values and gradients, but the log-softmax then runs along
    the long node axis, which on CPU is ~5x faster for a handful of classes."""
    if logits.dim() != 2 or y.dim() != 1:
        return F.cross_entropy(logits, y, reduction=reduction)
    loss = F.cross_entropy(logits.t().unsqueeze(0), y.unsqueeze(0), reduction=reduction)
    return loss.squeeze(0) if reduction == "none" else loss


def to_host(obj: T) -> T:
    """``obj`` with every tensor in it on the CPU (what checkpoints and the hub store)."""
    return apply_to_collection(obj, torch.Tensor, lambda t: t.cpu())


class AccountingError(ValueError):
    """A setting would make the accounted epsilon wrong; the fit is refused before any step."""


@runtime_checkable
class PrivateModel(Protocol):
    """The contract between a private model and what enforces or reports its guarantee
    (``PrivacyBudget``, ``DropEarlyStopping``, the ``dpgnn`` CLI). :class:`PrivateModule`
    implements it; a model of one's own that implements it works with them too."""

    def privacy_spent(self) -> PrivacyReport:
        """The guarantee of what has run so far."""
        ...

    def privacy_planned(self) -> PrivacyReport | None:
        """The spend of the whole fit (``None``: not known in advance)."""
        ...

    def privacy_if_next_step(self) -> PrivacyReport | None:
        """The spend if one more optimizer step ran (``None``: steps read no private data)."""
        ...

    def halt_privately(self, reason: str) -> None:
        """End the fit before the next optimizer step, for ``reason``."""
        ...


def require_private_model(module: Any, who: str) -> PrivateModel:
    """``module`` if it is a :class:`PrivateModel`, else a ``TypeError`` naming what it lacks."""
    if isinstance(module, PrivateModel):
        return module
    members = [n for n in vars(PrivateModel) if not n.startswith("_")]
    missing = ", ".join(f"{n}()" for n in members if not callable(getattr(module, n, None)))
    raise TypeError(
        f"{who} needs a lightning-dpgnn private model (lightning_dpgnn.methods.PrivateModel: a "
        f"PrivateModule such as GAP or LPGNN); {type(module).__name__} has no {missing}"
    )


class PrivateModule(
    L.LightningModule,
    ModelHubMixin,
    library_name="lightning-dpgnn",
    tags=["differential-privacy", "graph-neural-network", "lightning-dpgnn"],
):
    """The privacy lifecycle shared by every method.

    Every method is also a :class:`huggingface_hub.ModelHubMixin`: ``save_pretrained(dir)``,
    ``push_to_hub(repo_id)`` and ``Method.from_pretrained(repo_id_or_dir)`` write, publish and
    load the model with its privacy report and model card (:mod:`lightning_dpgnn.publish.hub`);
    publishing refuses models whose guarantee would not hold.

    Args:
        privacy: ``"none"``, ``"edge"`` or ``"node"`` (LDP methods use ``"ldp"``).
        epsilon: target epsilon (ignored for ``privacy="none"``). ``None`` means "no target":
            allowed for methods that read no private data at their level (MLP at edge level)
            or that run at a user-fixed noise multiplier (their spend is reported, not capped).
        delta: target delta, ``"auto"`` (``n * delta <= 0.01`` for the ``n`` units: undirected
            or directed edges at edge level, nodes at node level) or ``"paper"`` (the papers'
            convention, just below ``1/n``), resolved when the data is known
            (:func:`~lightning_dpgnn.privacy.resolve_delta`).
        levels: the privacy levels this method supports.
        noise_seed: ``None`` (default): privacy noise and Poisson batches come from an
            OS-entropy-seeded generator nobody can replay. An integer makes them reproducible
            — for research only: the report then says the guarantee does not hold against
            anyone who knows the seed, and the zoo refuses to publish the model.
        edge_unit: at edge level, what one unit of privacy is: ``"undirected"`` (default: one
            friendship, both stored directions) or ``"directed"`` (the thesis' unit).
        log_private_metrics: node level only: log ``val/*`` metrics computed on private labels
            during the fit (not covered by epsilon; off by default).
        lr, weight_decay: settings of the Adam optimizer every method trains with
            (:meth:`adam`; DP-SGD methods wrap it into DP-Adam).
    """

    #: arguments of a base class that the subclass sets itself: not the user's to pass
    fixed_arguments: tuple[str, ...] = ()
    #: declared caches: attributes holding views derived from the data or the releases (each
    #: class lists its own; :meth:`reset_caches` drops every one of the hierarchy)
    caches: tuple[str, ...] = ("_graph_on_device",)
    #: the components a method holds (``None``: it has none): its fit in stages (a Lightning
    #: callback, :meth:`configure_callbacks`) and its trainer on per-node rows
    staged: StagedFit | None = None
    row_trainer: RowTrainer | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> PrivateModule:
        """Refuse a keyword argument the class does not take, naming the class the user
        called (not the base class it forwards its keywords to)."""
        accepted = init_arguments(cls) - {"levels", *cls.fixed_arguments}
        check_argument_names(cls, kwargs, accepted)
        instance = super().__new__(cls, *args, **kwargs)  # ModelHubMixin records them
        #: the keyword arguments the caller gave (a default is not a choice the user made)
        object.__setattr__(instance, "given_arguments", frozenset(kwargs))
        return instance

    def save_hyperparameters(self, *args: Any, frame: Any = None, **kwargs: Any) -> None:
        """Lightning's, then the constructor checks every method shares
        (:func:`~lightning_dpgnn.methods.arguments.check_arguments`): a bad argument is an error
        when the model is built, under the name the user wrote."""
        frame = frame if frame is not None else inspect.currentframe().f_back
        super().save_hyperparameters(*args, frame=frame, **kwargs)
        check_arguments(self.hparams)

    def __init__(
        self,
        privacy: str = "edge",
        epsilon: float | None = 1.0,
        delta: float | str = "auto",
        *,
        levels: tuple[str, ...] = PRIVACY_LEVELS,
        noise_seed: int | None = None,
        edge_unit: str = "undirected",
        log_private_metrics: bool = False,
        lr: float = 0.01,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__()
        check_arguments({"lr": lr, "weight_decay": weight_decay})
        if privacy not in levels:
            raise ValueError(f"privacy must be one of {levels}, got {privacy!r}")
        #: the privacy level (``str``: as the user wrote it; :attr:`level`: what it means)
        self.privacy = str(privacy)
        self.level = Level.of(privacy)
        self.target_epsilon: float | None
        if privacy == "none" or epsilon is None:
            self.target_epsilon = math.inf if privacy == "none" else None
        else:
            if isinstance(epsilon, (int, float)) and math.isinf(epsilon):
                raise ValueError(
                    f"privacy={privacy!r} needs a finite epsilon > 0; use privacy='none' for a "
                    "non-private model"
                )
            self.target_epsilon = check_epsilon(epsilon)
        if not (delta in DELTA_RULES or delta is None or isinstance(delta, (int, float))):
            raise ValueError(
                f"delta must be a number in (0, 1), 'auto' or 'paper', got {delta!r}"
            )
        if isinstance(delta, (int, float)) and not isinstance(delta, bool):
            if not 0 < float(delta) < 1:
                raise ValueError(f"delta must be in the open interval (0, 1), got {delta!r}")
        if edge_unit not in EDGE_UNITS:
            raise ValueError(f"edge_unit must be one of {EDGE_UNITS}, got {edge_unit!r}")
        if noise_seed is not None and (isinstance(noise_seed, bool) or not isinstance(
            noise_seed, int
        )):
            raise ValueError(f"noise_seed must be an integer or None, got {noise_seed!r}")
        self.target_delta = delta
        self.noise_seed = noise_seed
        self.edge_unit = edge_unit
        self.log_private_metrics = bool(log_private_metrics)
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.accountant = PrivacyAccountant(level=self.privacy)
        #: the name of the model's own guarantee, when it declares others (``None``: one only)
        self.guarantee_name: str | None = None
        #: the other guarantees, by name (:meth:`declare_guarantee`; all: :meth:`guarantees`)
        self._other_guarantees: dict[str, Guarantee] = {}
        detail = edge_unit if self.level is Level.EDGE else None
        self.accountant.unit = Unit(self.level, detail).describe()
        #: the noise multiplier of the whole fit (``None`` until calibrated, or not calibrated)
        self.noise_multiplier: float | None = None
        self._halt_reason: str | None = None
        #: why the last fit ended (logged at its end; see :meth:`stop_reason`)
        self.fit_end_reason: str | None = None
        #: the fit was stopped before its plan by :meth:`halt_privately` (``PrivacyBudget``);
        #: kept in checkpoints, and the zoo refuses to publish such a model
        self.privacy_halted = False
        #: the declared releases and their cached outputs (:mod:`.releases`)
        self.releases = Releases()
        #: the report of the last new graph predicted on (:meth:`predict_inductive`)
        self.last_inference_report: PrivacyReport | None = None

    def _datamodule(self) -> NodeDataSource:
        dm = self.trainer.datamodule if self._trainer is not None else None
        if dm is None:
            raise RuntimeError(
                f"{type(self).__name__} needs a NodeDataModule: trainer.fit(model, datamodule=dm)"
            )
        if not isinstance(dm, NodeDataSource):
            missing = [n for n in ("data", "public_num_classes", "private_reads")
                       if not hasattr(dm, n)]
            raise TypeError(
                f"{type(self).__name__} needs a data module of one graph (NodeDataModule, or "
                "one implementing lightning_dpgnn.data.NodeDataSource); "
                f"{type(dm).__name__} has no {', '.join(missing)}"
            )
        return dm

    def _datamodule_graph(self) -> Data:
        """The preprocessed graph of the attached ``NodeDataModule``, with a clear error.

        Preprocessing is a read of private data too: a data module that read data protected at
        this level outside a mechanism (``private_reads``) is refused here, before any step."""
        dm = self._datamodule()
        reads = dm.private_reads(self.privacy)
        if reads:
            raise AccountingError(
                f"{type(self).__name__}(privacy={self.privacy!r}): the data module's "
                "preprocessing reads private data outside any mechanism, so the epsilon would "
                "not hold:\n  - " + "\n  - ".join(reads)
            )
        require_simple(dm.data, "the data module's graph")  # invariant simple-graphs
        return dm.data

    @property
    def num_classes_public(self) -> int | None:
        """Number of classes known as public metadata: the model's ``num_classes`` argument,
        or the data module's declared class list."""
        given = self.hparams.get("num_classes")
        if given is not None:
            return int(given)
        dm = self.trainer.datamodule if self._trainer is not None else None
        declared = dm.public_num_classes if isinstance(dm, NodeDataSource) else None
        return int(declared) if declared else None

    def _num_classes(self, data: Data) -> int:
        """Classes of the data: declared public metadata, or (levels where labels are not
        protected) read from the labels."""
        declared = self.num_classes_public
        if declared is not None:
            return declared
        if self.labels_private():
            raise AccountingError(
                f"privacy={self.privacy!r} protects labels, so the number of classes cannot be "
                "read from them (removing one node could change it): declare the classes as "
                "public metadata, e.g. NodeDataModule(..., classes=[...]), or pass num_classes"
            )
        y = data.y
        return int(y[y >= 0].max()) + 1

    def check_feature_width(self, data: Data, encoding: str) -> None:
        """Refuse a new graph whose nodes have another number of features than the training
        graph's (``encoding``: how to make them match)."""
        expected = self.hparams.get("num_features")
        if expected is not None and data.num_features != expected:
            raise ValueError(
                f"{type(self).__name__} was trained on {expected} features per node; this graph "
                f"has {data.num_features}: encode its features like the training graph's "
                f"({encoding})"
            )
        x = getattr(data, "x", None)
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            values = x.coalesce().values() if x.is_sparse else x
            bad = int((~torch.isfinite(values)).sum())
            if bad:
                raise ValueError(
                    f"{type(self).__name__}: the new graph's features hold {bad} NaN or infinite "
                    "value(s); the model would return normal-looking probabilities for them. "
                    "Impute or drop those nodes first"
                )

    def labels_private(self) -> bool:
        """Whether this fit protects the labels (node level; LDP methods that perturb them)."""
        return self.level is Level.NODE

    # -- noise -----------------------------------------------------------------------------
    def noise_generator(self, stream: int = 0) -> torch.Generator | None:
        """Generator for privacy noise and Poisson batches: ``None`` (OS-entropy-seeded, the
        default) or, with an explicit ``noise_seed``, a reproducible stream."""
        if self.noise_seed is None:
            return None
        return reproducible_generator(self.noise_seed, stream)

    @contextmanager
    def seeded(self, seed: int | None) -> Iterator[None]:
        """Run the body (e.g. weight initialisation) under ``seed`` without touching the
        global RNG state outside it; ``None`` runs it as is. Never used for privacy noise."""
        if seed is None:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            yield

    # -- the networks, built from public sizes -------------------------------------------------
    def _build(self, num_features: int, num_classes: int) -> None:
        """Create the networks for ``num_features`` inputs and ``num_classes`` classes."""
        raise NotImplementedError

    def build_for(self, data: Data, seed: int | None = None) -> None:
        """:meth:`_build` for ``data``'s feature width and public number of classes
        (:meth:`_num_classes`), the weights initialised under ``seed`` (:meth:`seeded`)."""
        with self.seeded(seed):
            self._build(data.num_features, self._num_classes(data))

    # -- devices -------------------------------------------------------------------------------
    def on_device(self, obj: T) -> T:
        """``obj`` (a graph, a tensor, a collection of them) on this module's device, where the
        one-time mechanisms and everything that meets the parameters run (on a GPU: the
        aggregation's sparse matmul too). A graph is copied, never moved in place (the data
        module's graph stays where it is); the copy of the last graph is kept, so the stages
        of a fit copy it once. Nothing is copied when ``obj`` is already there."""
        device = self.device
        if not isinstance(obj, Data):
            return apply_to_collection(obj, torch.Tensor, lambda t: t.to(device))
        if all(t.device == device for _, t in obj() if isinstance(t, torch.Tensor)):
            self.__dict__.pop("_graph_on_device", None)  # e.g. moved in place by a loader
            return obj
        cached = self.__dict__.get("_graph_on_device")
        if cached is None or cached[0] is not obj or cached[1] != device:
            cached = (obj, device, copy.copy(obj).to(device))
            self._graph_on_device = cached
        return cached[2]

    # -- one draw for the whole process group (invariant one-draw-under-ddp) ------------------
    def run_once(self, mechanism: Callable[..., T], *args: Any) -> T:
        """Run a one-time mechanism of the fit (an aggregation, an LDP collection, a noisy
        graph) once, whatever the number of processes.

        On one process, or outside a running fit (e.g. called on rank 0 after it), this is
        ``mechanism(*args)``. Under DDP rank 0 alone runs it, drawing from its entropy-seeded
        generator (or the explicit ``noise_seed``), and broadcasts its output and the model's
        ledger over the process group: every rank then holds bit-identical noisy outputs and the
        single-process ledger, and no rank draws noise of its own. Tensors travel through the
        CPU and land on this rank's device. An error on rank 0 is raised on every rank. Every
        rank must call it at the same point (a collective).

        Inference on new graphs does not go through it: under ``trainer.predict`` each graph is
        given to one rank only, and its mechanism runs there once.
        """
        if not self._draws_as_group():
            return mechanism(*args)
        strategy = self.trainer.strategy
        payload: tuple[Any, dict[str, Any] | None, BaseException | None] = (None, None, None)
        if strategy.global_rank == 0:
            try:
                out = apply_to_collection(mechanism(*args), torch.Tensor, lambda t: t.cpu())
                payload = (out, self._ledgers(), None)
            except BaseException as err:  # noqa: BLE001 - re-raised below, on every rank
                payload = (None, None, err)
        out, ledger, err = strategy.broadcast(payload, src=0)
        if err is not None:
            if strategy.global_rank == 0:
                raise err
            raise RuntimeError(f"rank 0 failed to run a one-time mechanism: {err!r}") from err
        self._load_ledgers(ledger)
        return apply_to_collection(out, torch.Tensor, lambda t: t.to(strategy.root_device))

    def _draws_as_group(self) -> bool:
        """Whether a one-time draw now is made for a process group (a running DDP fit)."""
        trainer = self._trainer
        return (trainer is not None and trainer.world_size > 1
                and trainer.state.status == TrainerStatus.RUNNING)

    def agreed(self, *decisions: bool) -> tuple[bool, ...]:
        """``decisions`` as the whole process group takes them: each true when any rank's is
        (as Lightning's ``EarlyStopping`` reduces ``should_stop``), in one collective;
        themselves on one process."""
        if self._trainer is None or self.trainer.world_size == 1:
            return tuple(bool(d) for d in decisions)
        strategy = self.trainer.strategy
        votes = torch.tensor([float(d) for d in decisions], device=strategy.root_device)
        return tuple(bool(v > 0) for v in strategy.reduce(votes, reduce_op="sum"))

    # -- releases: drawn once, in hooks (never from a dataloader) ------------------------------
    def release_graph(self) -> Data:
        """The training graph the fit's releases read, on this module's device."""
        return self.on_device(self._datamodule_graph())

    def draw_releases(self, stage: int | None = 0, graph: Data | None = None) -> list[str]:
        """Draw the releases the fit needs up to ``stage`` (``None``: every one) that are not
        cached yet, tell the method (:meth:`on_releases_changed`) and return the names drawn
        now. ``graph``: the training graph (default :meth:`release_graph`, the fit's).

        Each release is drawn once through the one preamble (:func:`~..privacy.mechanism.run`):
        under DDP rank 0 alone draws it and broadcasts the output with the ledger
        (:meth:`run_once`); a ``collective`` release is drawn on every rank (it sums over edge
        partitions) and each of its mechanisms samples once, on rank 0. Every draw is checked
        against its plan (:meth:`Releases.check_spend`)."""
        drawn, group = [], self._draws_as_group()
        for r in self.releases.pending(stage):
            d = self.releases.draw_of(
                r, self.release_graph() if graph is None else graph,
                self.accountant_of(r.guarantee), self.noise_generator(r.stream),
                self.releases.outputs(), True, self.noise_multiplier,
            )
            self.releases.fit_graph = d.graph  # in memory only: new graphs are compared with it
            before = d.accountant.copy()
            if group and not r.collective:
                out = self.run_once(run, r.draw(d), d.accountant, d.generator)
            else:
                out = run(r.draw(d), d.accountant, d.generator, self.run_once if group else None)
            if Level.of(d.accountant.level).private:
                self.releases.check_spend(r, before, d.accountant, self.noise_multiplier)
            self.releases.store(r.name, out)
            drawn.append(r.name)
        if drawn:
            self.on_releases_changed(drawn)
        return drawn

    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        """Hook: the releases ``names`` were drawn (or ``restored`` from a checkpoint or a
        published folder): drop views built on the old ones. Post-processing only."""

    # -- prediction --------------------------------------------------------------------------
    def predict_step(self, data: Data, batch_idx: int = 0) -> torch.Tensor:
        """Class probabilities of every node of ``data``, in eval mode without gradient (the
        module's mode is restored): transductive by default — the training graph, read only
        through the cached releases (no spend). A graph marked ``data.inductive = True`` is a
        new graph: its releases are drawn on it (:meth:`predict_inductive`). The choice is
        never guessed from the data: releasing again on the training graph would spend more."""
        if getattr(data, "inductive", False):
            return self.predict_inductive(data)
        with self.evaluating():
            return self.transductive_probs(data)

    def transductive_probs(self, data: Data) -> torch.Tensor:
        """Class probabilities on the training graph, from the cached releases only."""
        raise NotImplementedError

    # -- inference on a new graph (one path for every method) -----------------------------------
    def inductive_graph(self, data: Data) -> Data:
        """Check a new graph before any release reads it (feature width; the node-level degree
        promise in methods that need it) and return it on this module's device."""
        self.check_feature_width(data, "same columns, same public code book")
        require_simple(data, "the graph given to inductive inference")  # invariant simple-graphs
        return self.on_device(data)

    def inductive_accountant(
        self, graph: Data, guarantee: str | None = None
    ) -> PrivacyAccountant:
        """A new graph's own ledger of ``guarantee`` (its data is disjoint from the training
        graph: parallel composition); with ``delta="auto"`` its delta comes from its own
        units. Another guarantee's ledger is a fresh copy of the training one's settings."""
        if guarantee is not None and guarantee != self.guarantee_name:
            own = self.accountant_of(guarantee)
            return PrivacyAccountant(own.level, own.delta, unit=own.unit)
        delta = None
        if self.level.central:
            delta = resolve_delta(self.target_delta, self.private_units(graph))
        elif self.level is Level.LDP:
            delta = self.accountant.delta
        return PrivacyAccountant(self.privacy, delta, unit=self.accountant.unit)

    def inductive_release(self, release: Release) -> bool:
        """Whether ``release`` is drawn on a new graph (default: every inductive release)."""
        return True

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        """Logits of every node of a new graph from its releases ``outputs``."""
        raise NotImplementedError(f"{type(self).__name__} offers no inductive inference")

    def ready_for_inductive(self) -> None:
        """Raise unless the model can release on a new graph (fitted or loaded)."""
        if self.level.private and self.calibrates_noise() and self.noise_multiplier is None:
            raise RuntimeError(
                f"{type(self).__name__} must be fitted (or loaded) before inductive inference"
            )

    @torch.no_grad()
    def predict_inductive(self, data: Data, given: dict[str, Any] | None = None) -> torch.Tensor:
        """Class probabilities on a new graph: its releases drawn with fresh noise on its own
        ledger (``last_inference_report``), or ``given`` (outputs made elsewhere, e.g. on the
        nodes' devices). A repeated call on the same graph returns the cached releases and
        spends nothing more; once the cache has dropped that graph, a new draw composes into
        its ledger (:meth:`inference_report`). Eval mode, no gradient."""
        self.ready_for_inductive()
        graph = self.inductive_graph(data)
        spent = self._ledgers()
        outputs, ledgers = self.releases.on_graph(
            graph, lambda g: self.inductive_accountant(graph, g), given, self.inductive_release,
            fit_accountant=self.accountant_of, noise_multiplier=self.noise_multiplier,
            check=self.level.private,
        )
        if not given:
            self.last_inference_report = self._graph_report(ledgers)
        if self._ledgers() != spent:  # a graph sharing private data with the training graph
            warnings.warn(
                f"{type(self).__name__}: this graph shares private data with the training graph "
                f"({self.releases.last_overlap}): its releases were drawn again and composed into "
                f"the training ledger: epsilon {self.accountant.epsilon():.4g} now "
                f"(target {self.target_epsilon}). "
                "Predict on the training graph without data.inductive (its cached releases, "
                "no spend)", UserWarning, stacklevel=3,
            )
        with self.evaluating():
            return self.inductive_logits(graph, outputs).softmax(-1)

    def inference_report(self, data: Data) -> PrivacyReport | None:
        """What the releases on the new graph ``data`` have spent so far (``None``: none)."""
        ledgers = self.releases.ledgers_of(data)
        return None if ledgers is None else self._graph_report(ledgers)

    def _graph_report(
        self, ledgers: dict[str | None, PrivacyAccountant]
    ) -> PrivacyReport | SeveralGuarantees:
        others = {n: a for n, a in ledgers.items() if n is not None}
        if self.other_accountants:  # every guarantee is reported, drawn on this graph or not
            others = {n: others.get(n) or self.inductive_accountant(None, n)
                      for n in self.other_accountants}
        return self._report(ledgers[None], others)

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Eval mode and no gradient for the body; the module's mode is restored after."""
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                yield
        finally:
            self.train(was_training)

    # -- plan (the method declares) ----------------------------------------------------------
    def declare_releases(self, *releases: Release) -> None:
        """Declare the method's releases (in draw order): the lifecycle plans, draws once,
        caches, checkpoints, publishes and re-runs them on new graphs (:mod:`.releases`)."""
        self.releases.declare(*releases)

    def plan_mechanisms(
        self, accountant: PrivacyAccountant, noise_multiplier: float | None
    ) -> bool:
        """Record on ``accountant`` every mechanism the *rest* of the fit will run at
        ``noise_multiplier``: the releases not drawn yet, then the steps
        (:meth:`plan_steps`). Return ``False`` when the plan is open-ended."""
        if self.level.private and (noise_multiplier is not None or not self.calibrates_noise()):
            self.releases.plan(accountant, noise_multiplier, guarantee=None)
        return self.plan_steps(accountant, noise_multiplier)

    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """Record the optimizer steps the rest of the fit will take on private data (DP-SGD);
        ``False``: their number is not known in advance. Default: the steps of the row
        trainer's one DP-SGD phase (:meth:`RowTrainer.plan`), else none (steps read nothing
        private)."""
        return self.row_trainer is None or self.row_trainer.plan(accountant, noise_multiplier)

    def dpsgd_phase(self) -> DPSGDPhase | None:
        """The DP-SGD phase the next optimizer step belongs to (``None``: steps are free).
        Default: the row trainer's one phase, if any."""
        return None if self.row_trainer is None else self.row_trainer.phase

    def aggregation_mechanism(self) -> Any:
        """The Gaussian aggregation (a :class:`~lightning_dpgnn.privacy.GaussianAggregation`)
        whose noisy outputs this model releases, as it runs, for an audit
        (:class:`~lightning_dpgnn.callbacks.PrivacyAudit`); ``None``: the model has none, or
        its noise is not calibrated yet."""
        return None

    def calibrates_noise(self) -> bool:
        """Whether the noise multiplier is solved from the target epsilon (Gaussian methods).
        Default: when the fit is one DP-SGD phase (DP-MLP, DPGNN)."""
        return self.dpsgd_phase() is not None

    # -- calibrate ---------------------------------------------------------------------------
    def planned_accountant(self, noise_multiplier: float | None) -> PrivacyAccountant | None:
        """What has been spent plus the plan of the rest (``None``: open-ended)."""
        acc = self.accountant.copy()
        return acc if self.plan_mechanisms(acc, noise_multiplier) else None

    def _closed_plan(self, z: float) -> PrivacyAccountant:
        acc = self.planned_accountant(z)
        if acc is None:  # only a fit without a target can be open-ended
            raise RuntimeError(f"{type(self).__name__}: an open-ended plan cannot be calibrated")
        return acc

    def calibrate(self) -> None:
        """Solve the noise multiplier for the target epsilon, or check a fixed one."""
        if not self.level.private or not self.calibrates_noise():
            return
        if self.noise_multiplier is None:
            if self.target_epsilon is None:
                raise ValueError("give epsilon (to calibrate the noise) or a noise_multiplier")
            self.noise_multiplier = calibrate_noise_multiplier(
                self._closed_plan, self.target_epsilon, self.accountant.delta
            )
            self.hparams["noise_multiplier"] = self.noise_multiplier
        elif self.target_epsilon is not None:
            spend = self._closed_plan(self.noise_multiplier).epsilon()
            if spend > self.target_epsilon * (1 + 1e-9):
                raise ValueError(
                    f"noise_multiplier={self.noise_multiplier:g} would spend epsilon {spend:.4g}"
                    f" > target {self.target_epsilon:g}; leave it unset to calibrate"
                )

    def private_units(self, data: Data) -> int:
        """Number of protected units of ``data``: undirected or directed edges at edge level,
        nodes at node level (``delta="auto"`` stays below one over it)."""
        if self.level is Level.EDGE:
            units = data.num_edges // 2 if self.edge_unit == "undirected" else data.num_edges
            if units < 1:
                raise ValueError(
                    f"{type(self).__name__}: the graph has no edges, so edge-level DP has "
                    "nothing to protect (and the model nothing to aggregate); check the edge "
                    "list, or train an MLP"
                )
        else:
            units = data.num_nodes
        return max(int(units), 1)

    def resolve_delta(self, data: Data) -> float | None:
        """Fix delta once the private units are known (edges or nodes)."""
        if not self.level.private:
            return None
        if self.accountant.delta is not None and self.target_delta in DELTA_RULES:
            return self.accountant.delta  # already resolved (e.g. restored from a checkpoint)
        self.accountant.delta = resolve_delta(self.target_delta, self.private_units(data))
        return self.accountant.delta

    # -- guarantees --------------------------------------------------------------------------
    #: what a guarantee of a level (by its value) protects and uses in the clear, where the
    #: method says more than :func:`~lightning_dpgnn.privacy.guarantee.default_words`: data
    guarantee_words: dict[str, tuple[str, str]] = {}
    #: what a guarantee of a level holds only under, in words (besides a degree bound D)
    guarantee_conditions: dict[str, tuple[str, ...]] = {}
    #: the model card's method line and the paper the method implements (data)
    card_method: str = ""
    card_paper: str = "see the lightning-dpgnn documentation"
    #: the value of each hyper-parameter that folders published before it existed had
    legacy_hparams: dict[str, Any] = {}
    #: what an empirical audit measured (set by ``PrivacyAudit``; ``None``: none ran)
    empirical_audit: dict[str, Any] | None = None

    def declare_guarantee(
        self,
        name: str,
        level: str,
        unit: str,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> PrivacyAccountant:
        """Declare a guarantee besides the model's own (``guarantee_name``): releases that
        protect another unit (e.g. features under local DP beside edges under edge-level DP)
        record on its accountant, and the report carries both, never added
        (:class:`~lightning_dpgnn.privacy.SeveralGuarantees`). ``epsilon``: its target (the
        publishing gate and ``PrivacyBudget`` hold it to it)."""
        if self.guarantee_name is None:
            raise ValueError(
                f"{type(self).__name__}: name the model's own guarantee (guarantee_name) before "
                "declaring another one"
            )
        if name == self.guarantee_name or name in self._other_guarantees:
            raise ValueError(f"a guarantee named {name!r} is already declared")
        target = None if epsilon is None else check_epsilon(epsilon, f"{name}: epsilon")
        acc = PrivacyAccountant(level, delta, unit=unit)
        self._other_guarantees[name] = Guarantee(name, acc, target)
        return acc

    def guarantees(self) -> list[Guarantee]:
        """The model's guarantees, its own first: each with its level, unit, accountant,
        target, and in words what it protects, uses in the clear and holds only under."""
        target = self.target_epsilon
        own = Guarantee(self.guarantee_name or self.level.value, self.accountant,
                        target if target is not None and math.isfinite(target) else None)
        return [self._described(g) for g in (own, *self._other_guarantees.values())]

    def _described(self, g: Guarantee) -> Guarantee:
        """``g`` with its words and conditions (the method's data, else the level's)."""
        level = g.level
        protects, public = self.guarantee_words.get(level.value) or default_words(
            level, self.labels_private())
        conditions = self.guarantee_conditions.get(level.value, ())
        bound = self.hparams.get("max_degree") if level is Level.NODE else None
        if bound is not None:
            conditions = (f"on graphs whose every in- and out-degree is at most D = {bound} "
                          "(the fit refuses graphs above it)", *conditions)
        return replace(g, protects=protects, public=public, conditions=conditions)

    @property
    def other_accountants(self) -> dict[str, PrivacyAccountant]:
        """The accountants of the guarantees besides the model's own, by name."""
        return {n: g.accountant for n, g in self._other_guarantees.items()}

    def accountant_of(self, guarantee: str | None) -> PrivacyAccountant:
        """The accountant of ``guarantee`` (``None``: the model's own)."""
        if guarantee is None or guarantee == self.guarantee_name:
            return self.accountant
        try:
            return self._other_guarantees[guarantee].accountant
        except KeyError:
            raise KeyError(
                f"{type(self).__name__} declares no guarantee named {guarantee!r}"
            ) from None

    def describe(self) -> MethodCard:
        """What the model card says of the method (``publish/`` reads this, never a method's
        attributes): its line, its paper, notes on its ledger entries, what a new graph
        needs."""
        return MethodCard(self.card_method or type(self).__name__, self.card_paper)

    def publication_blockers(self) -> list[str]:
        """Reasons the zoo refuses this model beyond the common ones (none by default)."""
        return []

    def _report(
        self, own: PrivacyAccountant, others: dict[str, PrivacyAccountant] | None = None
    ) -> PrivacyReport | SeveralGuarantees:
        """The report of ``own`` (and of the other guarantees' accountants, never added)."""
        main = PrivacyReport.from_accountant(own, private=self.level.private)
        if not self._other_guarantees:
            return main
        others = self.other_accountants if others is None else others
        return SeveralGuarantees(((self.guarantee_name, main), *(
            (n, g.report(others[n])) for n, g in self._other_guarantees.items())))

    # -- report ------------------------------------------------------------------------------
    def privacy_spent(self) -> PrivacyReport | SeveralGuarantees:
        """The guarantee(s) of what has run so far — the only source of epsilon."""
        return self._report(self.accountant)

    def privacy_planned(self) -> PrivacyReport | SeveralGuarantees | None:
        """Spend of the whole fit (``None`` when it cannot be known in advance)."""
        if not self.level.private:
            return self.privacy_spent()
        acc = self.planned_accountant(self.noise_multiplier)
        if acc is None:
            return None
        others = {}
        for name, spent in self.other_accountants.items():
            others[name] = spent.copy()
            self.releases.plan(others[name], self.noise_multiplier, guarantee=name)
        return self._report(acc, others)

    def privacy_if_next_step(self) -> PrivacyReport | SeveralGuarantees | None:
        """Spend if one more optimizer step ran; ``None`` when steps read no private data."""
        phase = self.dpsgd_phase()
        if phase is None or self.noise_multiplier is None:
            return None
        acc = self.accountant.copy()
        phase.plan(acc, self.noise_multiplier, 1)
        return self._report(acc)

    # -- enforce -----------------------------------------------------------------------------
    def halt_privately(self, reason: str = "halted by a privacy callback") -> None:
        """End the fit before the next optimizer step (used by PrivacyBudget); the model is
        marked :attr:`privacy_halted` (kept in checkpoints; the zoo refuses to publish it)."""
        if self._halt_reason is None:
            self._halt_reason = reason
        self.privacy_halted = True

    def check_trainer(self) -> None:
        """Refuse trainer settings that break the accounting, before any step (invariant
        budget-enforced).

        Several processes: private fits run under DDP launched as one script per process
        (``strategy="ddp"``, ``torchrun``, SLURM), where every rank holds the mechanisms'
        outputs and the ledger (:meth:`run_once`). Spawned or forked workers
        (``"ddp_spawn"``, ``"ddp_notebook"``) hand only the weights back to the launching
        process, so its model would report a spend without its cached outputs; sharded
        strategies (FSDP, DeepSpeed) split parameters across ranks, which per-sample clipping
        cannot see. Both are refused. Then the settings DP-SGD accounting cannot live with
        (:meth:`RowTrainer.refused_settings`)."""
        trainer = self.trainer
        world = getattr(trainer, "world_size", 1)
        strategy = trainer.strategy
        launcher = getattr(strategy, "launcher", None)
        if self.level.private and world > 1 and (not isinstance(strategy, DDPStrategy) or (
            launcher is not None and not isinstance(launcher, _SubprocessScriptLauncher)
        )):
            raise AccountingError(
                f"private training on {world} processes needs strategy='ddp' (one script per "
                f"process: the ddp launcher, torchrun or SLURM); {type(strategy).__name__} with "
                f"{type(launcher).__name__} is not supported (see docs/distributed.md)"
            )
        bad = [] if self.row_trainer is None else self.row_trainer.refused_settings(trainer)
        if bad:
            raise AccountingError(
                f"{type(self).__name__} trains with DP-SGD; these Trainer settings break its "
                "privacy accounting:\n  - " + "\n  - ".join(bad)
            )

    def reset_caches(self) -> None:
        """Drop every declared cache (:attr:`caches` of each class of the model) and the
        derived forms of tensors (:func:`~lightning_dpgnn.caches.clear_caches`); they are
        rebuilt on demand. Called when a fit starts and ends."""
        for klass in type(self).__mro__:
            for name in vars(klass).get("caches", ()):
                self.__dict__.pop(name, None)
        if self.row_trainer is not None:
            self.row_trainer.reset()
        clear_caches()

    def on_fit_end(self) -> None:
        self.reset_caches()  # the fit's copy of the graph, its rows, views and derived forms

    # -- quiet by default: the noise the library causes in Lightning, until teardown ----------
    def _quiet(self) -> None:
        """Drop the warnings and lines the library causes in Lightning (one-batch epochs,
        Opacus' hooks, Lightning's deprecations: :mod:`lightning_dpgnn._quiet`) from here to
        :meth:`teardown`; the user's own warnings pass."""
        if self.__dict__.get("_quiet_stack") is None:
            self._quiet_stack = ExitStack()
            self._quiet_stack.enter_context(quiet_lightning())

    def configure_model(self) -> None:
        """Lightning calls it once per ``fit``/``validate``/``test``/``predict``, after
        ``setup`` and before any loader is read: the library's noise is dropped from here."""
        self._quiet()

    def teardown(self, stage: str) -> None:
        quiet = self.__dict__.pop("_quiet_stack", None)
        if quiet is not None:
            quiet.close()
        super().teardown(stage)

    def on_fit_start(self) -> None:
        self.reset_caches()  # views built before this fit (another data module, a restore)
        self._halt_reason = None
        self.fit_end_reason = None
        self.privacy_halted = False
        self.check_trainer()
        self.draw_releases(0)  # the releases the first steps read (a restored one is kept)
        if self.staged is not None:
            self.staged.start()  # the stage the fit starts or resumes in, and its releases

    # -- why a fit ends: every reason in one place (like Lightning's ``_FitLoop.done``) --------
    def stop_reason(self) -> str | None:
        """Why the fit must end before the next optimizer step (``None``: it goes on).

        The reasons, in order: a privacy callback halted it (:meth:`halt_privately`, e.g.
        ``PrivacyBudget`` before a step over the budget); the DP-SGD phase of the next step
        used every step its noise was calibrated for (one more would exceed the target)."""
        if self._halt_reason is not None:
            return self._halt_reason
        phase = self.dpsgd_phase()
        if (
            phase is not None
            and self.target_epsilon is not None
            and self.accountant.total_count(phase.name) >= phase.total_steps
        ):
            return (
                f"DP-SGD phase {phase.name!r} used all {phase.total_steps} steps its noise was "
                f"calibrated for (target epsilon {self.target_epsilon:g})"
            )
        return None

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        """Stop before a step :meth:`stop_reason` refuses; skip the rest of an epoch of a stage
        out of patience (:meth:`StagedFit.out_of_patience`: no step, no spend)."""
        if self.row_trainer is not None:
            self.row_trainer.sync_gradients(self.trainer)
        reason = self.stop_reason()
        skip = self.staged is not None and self.staged.out_of_patience()
        # every rank stops (or skips) before the same step
        stop, skip = self.agreed(reason is not None, skip)
        if stop:
            self._halt_reason = reason or "another process stopped the fit"
            self.trainer.should_stop = True
            return -1
        return -1 if skip else None

    def on_train_end(self) -> None:
        """Record and log why the fit ended: a reason of :meth:`stop_reason`, a callback's
        stop (``trainer.should_stop``, e.g. early stopping), or the trainer's limits."""
        trainer = self.trainer
        if self._halt_reason is not None:
            reason = self._halt_reason
        elif trainer.should_stop:
            reason = "a callback stopped it (trainer.should_stop, e.g. early stopping)"
        elif trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps:
            reason = f"all {trainer.max_steps} steps of the plan ran (max_steps)"
        else:
            reason = f"all {trainer.fit_loop.max_epochs} epochs of the plan ran"
        self.fit_end_reason = reason
        rank_zero_info(f"{type(self).__name__}: fit ended: {reason}")

    # -- optimization ------------------------------------------------------------------------
    def adam(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Adam:
        """Adam over ``params`` with the model's ``lr`` and ``weight_decay``."""
        return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer of the stage now training (:meth:`StagedFit.optimizer`); without
        stages, Adam over every trainable parameter."""
        if self.staged is not None:
            return self.staged.optimizer()
        return self.adam(p for p in self.parameters() if p.requires_grad)

    def configure_callbacks(self) -> list[L.Callback]:
        """The staged fit, when the method trains in stages (its hooks switch them)."""
        return [] if self.staged is None else [self.staged]

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Ghost clipping when a ghost-clipped DP-SGD run trains (:meth:`RowTrainer.backward`),
        else Lightning's backward."""
        if self.row_trainer is None or not self.row_trainer.backward(loss):
            super().backward(loss, *args, **kwargs)

    # -- checkpoints -------------------------------------------------------------------------
    def mechanism_outputs(self) -> dict[str, Any]:
        """The releases' cached outputs (the only private-data-derived values a checkpoint may
        hold besides parameters)."""
        return self.releases.state_dict()

    def load_mechanism_outputs(self, outputs: dict[str, Any]) -> None:
        """Restore what :meth:`mechanism_outputs` saved (never drawing again)."""
        self.releases.load_state_dict(outputs)
        self.on_releases_changed(list(self.releases.declared), restored=True)

    def public_state(self) -> dict[str, Any]:
        """Values computed only from data that is public at this privacy level (e.g. the edge
        split of an LDP link predictor: the graph is public there), kept in checkpoints."""
        return {}

    def load_public_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`public_state` saved."""

    def _ledgers(self) -> dict[str, Any]:
        """Every accountant's state: the model's own, then the other guarantees'."""
        return {"": self.accountant.state_dict(),
                **{n: a.state_dict() for n, a in self.other_accountants.items()}}

    def _load_ledgers(self, states: dict[str, Any]) -> None:
        for name, state in states.items():
            self.accountant_of(name or None).load_state_dict(state)

    def privacy_state(self) -> dict[str, Any]:
        """Everything a checkpoint (and a published model) holds besides the parameters and
        hyper-parameters: the accountant, the report, the noise multiplier, the recorded
        mechanisms' outputs and the state public at this level (invariant releases-only)."""
        return {
            "guarantees": {n: a.state_dict() for n, a in self.other_accountants.items()},
            "accountant": self.accountant.state_dict(),
            "report": self.privacy_spent().to_dict(),
            "noise_multiplier": self.noise_multiplier,
            # CPU tensors: a checkpoint of a GPU fit loads anywhere
            "outputs": to_host(self.mechanism_outputs()),
            "public": to_host(self.public_state()),
            "halted": self.privacy_halted,
        }

    def load_privacy_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`privacy_state` returned (never re-running a mechanism)."""
        self.accountant.load_state_dict(state["accountant"])
        for name, acc_state in state.get("guarantees", {}).items():
            self.accountant_of(name).load_state_dict(acc_state)
        self.noise_multiplier = state.get("noise_multiplier", self.noise_multiplier)
        self.load_mechanism_outputs(state.get("outputs", {}))
        self.load_public_state(state.get("public", {}))
        self.privacy_halted = bool(state.get("halted", False))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[CHECKPOINT_KEY] = self.privacy_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get(CHECKPOINT_KEY)
        if state is None:
            raise KeyError(
                f"checkpoint has no '{CHECKPOINT_KEY}' entry: it was not written by a "
                "lightning-dpgnn model, so its privacy spend is unknown"
            )
        self.load_privacy_state(state)

    # -- the hub (huggingface_hub.ModelHubMixin; the format is lightning_dpgnn.publish.hub) --
    def save_pretrained(  # type: ignore[override]
        self,
        save_directory: str | Path,
        *,
        repo_id: str | None = None,
        push_to_hub: bool = False,
        model_card_kwargs: dict[str, Any] | None = None,
        **push_to_hub_kwargs: Any,
    ) -> str | None:
        """Write the model to ``save_directory`` in the hub layout (safetensors weights,
        ``config.json``, cached mechanism outputs, ``privacy_report.json``, ``README.md``).

        Refuses (:class:`~lightning_dpgnn.publish.hub.PublishError`) models whose noise was
        reproducible, whose report is missing, or whose fit was halted or over budget.
        ``model_card_kwargs`` go to :func:`lightning_dpgnn.publish.card.model_card` (dataset,
        split, accuracy, command, ...)."""
        from lightning_dpgnn.publish import hub

        hub.check_publishable(self)  # before anything is written
        folder = Path(save_directory)
        (folder / hub.CARD).unlink(missing_ok=True)  # the card describes these weights only
        return super().save_pretrained(
            folder, config=hub.model_config(self), repo_id=repo_id, push_to_hub=push_to_hub,
            model_card_kwargs=model_card_kwargs, **push_to_hub_kwargs,
        )

    def _save_pretrained(self, save_directory: Path) -> None:
        from lightning_dpgnn.publish import hub

        hub.write_folder(self, save_directory)

    def generate_model_card(self, *args: Any, **kwargs: Any) -> ModelCard:
        from lightning_dpgnn.publish.card import model_card

        return model_card(self, **kwargs)

    def push_to_hub(  # type: ignore[override]
        self,
        repo_id: str,
        *,
        token: str | None = None,
        private: bool | None = None,
        branch: str | None = None,
        commit_message: str = "Upload private model (lightning-dpgnn)",
        model_card_kwargs: dict[str, Any] | None = None,
        **_: Any,
    ) -> str:
        """Publish the model to ``repo_id`` on the hub (``HF_ENDPOINT`` is honoured); the same
        refusals as :meth:`save_pretrained`. Returns the commit URL."""
        import tempfile

        from lightning_dpgnn.publish import hub

        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "model"
            self.save_pretrained(folder, model_card_kwargs=model_card_kwargs)
            return hub.push_folder(
                folder, repo_id, token=token, private=private, branch=branch,
                commit_message=commit_message,
            )

    @classmethod
    def from_pretrained(  # type: ignore[override]
        cls,
        pretrained_model_name_or_path: str | Path,
        *,
        force_download: bool = False,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        **model_kwargs: Any,
    ) -> PrivateModule:
        """Load a published model from a local folder or a hub repository (cached; offline
        with ``HF_HUB_OFFLINE=1``). The folder's report must verify against its config,
        weights and cached outputs (:class:`~lightning_dpgnn.publish.hub.VerificationError`).
        ``PrivateModule.from_pretrained`` builds whichever method the folder holds."""
        from lightning_dpgnn.publish import hub

        folder = hub.resolve_folder(
            pretrained_model_name_or_path, revision=revision, cache_dir=cache_dir,
            force_download=force_download, token=token, local_files_only=local_files_only,
        )
        return hub.read_folder(cls, folder, **model_kwargs)

    # -- shared training / evaluation -------------------------------------------------------
    def _logs_metrics(self, stage: str) -> bool:
        """Node level: no metric on private labels (training batches, validation) during the
        fit unless asked for; such metrics are not covered by epsilon."""
        in_fit = self._trainer is not None and self.trainer.state.fn == "fit"
        return not (self.level is Level.NODE and stage in ("train", "val") and in_fit
                    and not self.log_private_metrics)

    def _log_accuracy(self, logits: torch.Tensor, data: Data, stage: str) -> torch.Tensor | None:
        if not self._logs_metrics(stage):
            return None
        mask = getattr(data, f"{stage}_mask")
        return self._log_rows(logits[mask], data.y[mask], stage)

    def _log_rows(self, logits: torch.Tensor, y: torch.Tensor, stage: str) -> torch.Tensor:
        """Log ``<stage>/loss`` and ``<stage>/acc`` of the logits of the stage's rows."""
        loss = cross_entropy(logits, y)
        n = len(y)
        values = torch.stack([loss.detach(), accuracy(logits, y).to(loss.dtype)])
        if self._trainer is not None and self.trainer.world_size > 1:
            # under DDP a rank may hold a share of the rows (GAP/ProGAP's sharded rows): the
            # logged values are over every rank's rows, from summed counts (Lightning's own
            # mean over ranks floors an uneven total of batch sizes)
            sums = torch.cat([values * n, values.new_tensor([n])])
            sums = self.trainer.strategy.reduce(sums, reduce_op="sum")
            values, n = sums[:2] / sums[2].clamp(min=1), int(sums[2])
        # equal on every rank now; sync_dist keeps Lightning's epoch-level check quiet
        self.log(f"{stage}/loss", values[0], batch_size=n, prog_bar=False, sync_dist=True)
        self.log(f"{stage}/acc", values[1], batch_size=n, prog_bar=True, sync_dist=True)
        return loss


class WholeGraphSteps:
    """Train, validate and test a :class:`PrivateModule` on the logits of every node of its one
    (full-batch) graph: each step logs the loss and accuracy of its split's rows.

    A method defines ``_logits(data)``, the logits of every node of ``data`` (what it reads:
    the raw graph, a released graph, a collection); this mixin comes before
    :class:`PrivateModule` in the bases.
    """

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return self._log_accuracy(self._logits(data), data, "train")  # type: ignore[attr-defined]

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return self._log_accuracy(self._logits(data), data, "val")  # type: ignore[attr-defined]

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return self._log_accuracy(self._logits(data), data, "test")  # type: ignore[attr-defined]

    def transductive_probs(self, data: Data) -> torch.Tensor:
        return self._logits(data).softmax(-1)  # type: ignore[attr-defined]
