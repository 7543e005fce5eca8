"""Base LightningModule of every private method: the one privacy lifecycle, **plan ->
calibrate -> record -> enforce -> report** (invariant one-lifecycle, docs/privacy.md), in
components the module holds: ``releases`` (:mod:`.releases`), ``ledgers`` (:mod:`.ledgers`, the
only source of epsilon), ``guard`` (:mod:`.guard`), the staged fit and the row trainer. Noise
comes from OS entropy unless ``noise_seed=`` is given (the report says so); checkpoints hold
parameters, hyper-parameters, the report and the releases' outputs only (invariant
releases-only).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import lightning as L
import torch
from huggingface_hub import ModelHubMixin
from torch_geometric.data import Data

from .._init_args import init_arguments
from ..levels import CENTRAL_LEVELS, Level
from ..privacy import PrivacyAccountant, PrivacyReport, SeveralGuarantees
from ..privacy.dpsgd import DPSGDPhase
from ..privacy.guarantee import Guarantee
from ..privacy.mechanism import run
from ..privacy.random import reproducible_generator
from ..publish import hub
from ..publish.card import MethodCard, model_card
from . import inductive, metrics, runtime, sources
from .arguments import check_argument_names, check_arguments
from .guard import FitGuard
from .ledgers import (
    CHECKPOINT_KEY,
    Ledgers,
    check_privacy_arguments,
    checkpoint_state,
    unit_of,
)
from .metrics import accuracy, cross_entropy
from .releases import Release, Releases
from .sources import AccountingError

if TYPE_CHECKING:
    from ..loops import StagedFit
    from .paper_code import PaperCode
    from .rows import RowTrainer

__all__ = [
    "PrivateModule",
    "PrivateModel",
    "require_private_model",
    "PRIVACY_LEVELS",
    "AccountingError",
    "accuracy",
    "cross_entropy",
]

PRIVACY_LEVELS = CENTRAL_LEVELS
T = TypeVar("T")
Report = PrivacyReport | SeveralGuarantees


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
    """The privacy lifecycle shared by every method (also a ``ModelHubMixin``:
    ``save_pretrained``, ``push_to_hub``, ``from_pretrained``).

    Args:
        privacy: ``"none"``, ``"edge"`` or ``"node"`` (LDP methods use ``"ldp"``).
        epsilon: target epsilon; ``math.inf``: no privacy (level ``"none"``). ``None``: no
            target (a method that reads no private data at its level, or a user-fixed noise
            multiplier whose spend is reported, not capped).
        delta: target delta, ``"auto"`` (``n * delta <= 0.01`` for the ``n`` protected units)
            or ``"paper"`` (just below ``1/n``), resolved when the data is known.
        levels: the privacy levels this method supports.
        noise_seed: ``None``: noise and Poisson batches from an OS-entropy-seeded generator
            nobody can replay; an integer makes them reproducible, for research only (the
            report says so and the zoo refuses the model).
        edge_unit: ``"undirected"`` (one friendship, both directions) or ``"directed"``.
        log_private_metrics: node level: log ``val/*`` on private labels (not covered by
            epsilon).
        lr, weight_decay: the Adam settings (DP-Adam under DP-SGD).
    """

    #: arguments of a base class that the subclass sets itself: not the user's to pass
    fixed_arguments: tuple[str, ...] = ()
    #: attributes holding views of the data or the releases (each class lists its own;
    #: :meth:`reset_caches` drops every one of the hierarchy)
    caches: tuple[str, ...] = ("_graph_on_device",)
    #: the components a method holds (``None``: none): its staged fit and its row trainer
    staged: StagedFit | None = None
    row_trainer: RowTrainer | None = None
    #: what a guarantee of a level protects and uses in the clear, beyond the default words
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
    #: the paper-code reference mode, when the model runs in it (NOT private; :mod:`.paper_code`)
    paper_code: PaperCode | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> PrivateModule:
        """Refuse a keyword argument the class does not take, naming the class the user
        called; a mode that is a sibling class (:meth:`sibling_for`) builds that class."""
        sibling = cls.sibling_for(kwargs)
        if sibling is not None:
            taken = init_arguments(sibling)
            return sibling(*args, **{k: v for k, v in kwargs.items() if k in taken})
        accepted = init_arguments(cls) - {"levels", *cls.fixed_arguments}
        check_argument_names(cls, kwargs, accepted)
        instance = super().__new__(cls, *args, **kwargs)  # ModelHubMixin records them
        #: the keyword arguments the caller gave (a default is not a choice the user made)
        object.__setattr__(instance, "given_arguments", frozenset(kwargs))
        return instance

    @classmethod
    def sibling_for(cls, kwargs: dict[str, Any]) -> type[PrivateModule] | None:
        """The sibling class these arguments ask for (e.g. a paper-code mode), or ``None``."""
        return None

    def save_hyperparameters(self, *args: Any, frame: Any = None, **kwargs: Any) -> None:
        """Lightning's, then the argument checks every method shares (:func:`.check_arguments`)."""
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
        #: the privacy level (``str``: as the user wrote it; :attr:`level`: what it means)
        self.level, self.target_epsilon = check_privacy_arguments(
            privacy, levels, epsilon, delta, edge_unit, noise_seed, type(self).__name__)
        self.privacy = str(privacy) if self.level.private else Level.NONE.value
        self.target_delta, self.noise_seed, self.edge_unit = delta, noise_seed, edge_unit
        self.log_private_metrics = bool(log_private_metrics)
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.accountant = PrivacyAccountant(level=self.privacy, unit=unit_of(self.level, edge_unit))
        #: the name of the model's own guarantee, when it declares others (``None``: one only)
        self.guarantee_name: str | None = None
        #: the guarantees, their calibration and reports (:class:`~.ledgers.Ledgers`)
        self.ledgers = Ledgers(self)
        #: the noise multiplier of the whole fit (``None`` until calibrated, or not calibrated)
        self.noise_multiplier: float | None = None
        #: why a fit is refused or ends (:class:`~.guard.FitGuard`); the last fit's reason
        self.guard = FitGuard(self)
        self.fit_end_reason: str | None = None
        #: the fit was stopped before its plan by :meth:`halt_privately` (``PrivacyBudget``);
        #: kept in checkpoints, and the zoo refuses to publish such a model
        self.privacy_halted = False
        #: the declared releases and their cached outputs (:mod:`.releases`)
        self.releases = Releases()
        #: the report of the last new graph predicted on (:meth:`predict_inductive`)
        self.last_inference_report: PrivacyReport | None = None

    # -- data (:mod:`.sources`), noise, devices, networks ------------------------------------
    def _datamodule_graph(self) -> Data:
        return sources.training_graph(self)

    def check_feature_width(self, data: Data, encoding: str) -> None:
        """Refuse a new graph unlike the training graph (:func:`.sources.check_feature_width`)."""
        sources.check_feature_width(self, data, encoding)

    def labels_private(self) -> bool:
        """Whether this fit protects the labels (node level; LDP methods that perturb them)."""
        return self.level is Level.NODE

    def noise_generator(self, stream: int = 0) -> torch.Generator | None:
        """Generator for privacy noise: ``None`` (OS entropy) unless ``noise_seed`` is given."""
        return None if self.noise_seed is None else reproducible_generator(self.noise_seed, stream)

    #: run the body (e.g. weight initialisation) under a seed (:func:`.runtime.seeded`)
    seeded = staticmethod(runtime.seeded)

    def _build(self, num_features: int, num_classes: int) -> None:
        """Create the networks for ``num_features`` inputs and ``num_classes`` classes."""
        raise NotImplementedError

    def build(self, num_features: int | None, num_classes: int | None) -> None:
        """:meth:`_build` once both public sizes are known, recorded in the hyper-parameters
        (checkpoints and published folders are rebuilt from them)."""
        if num_features is not None and num_classes is not None:
            self.hparams.update(num_features=int(num_features), num_classes=int(num_classes))
            self._build(int(num_features), int(num_classes))

    def build_for(self, data: Data, seed: int | None = None) -> None:
        """:meth:`build` for ``data``'s width and public classes, the weights under ``seed``."""
        with self.seeded(seed):
            self.build(data.num_features, sources.num_classes(self, data))

    @property
    def is_built(self) -> bool:
        """Whether the networks exist (default: the module has a parameter)."""
        return any(True for _ in self.parameters())

    # -- setup: the one template of every method -----------------------------------------------
    def setup(self, stage: str) -> None:
        """Lightning's hook, the one template of every method: the data (:meth:`setup_data`),
        the networks once (:meth:`build_for`), what the releases need from public data
        (:meth:`prepare`), delta (:meth:`resolve_delta`), then the noise (:meth:`calibrate`)."""
        data = self.setup_data(stage)
        if not self.is_built:
            self.build_for(data, self.hparams.get("seed"))
        self.prepare(data, stage)
        self.resolve_delta(data)
        self.calibrate()

    def setup_data(self, stage: str) -> Any:
        """What the fit reads (default: the data module's one graph, checked)."""
        return self._datamodule_graph()

    def prepare(self, data: Any, stage: str) -> None:
        """Hook of :meth:`setup`: what the fit needs from public data (default: nothing)."""

    def on_device(self, obj: T) -> T:
        """``obj`` on this module's device, a graph copied once (:func:`.runtime.on_device`)."""
        return runtime.on_device(self, obj)

    # -- one draw for the whole process group (invariant one-draw-under-ddp) ------------------
    #: run a one-time mechanism once for the whole process group (:func:`.runtime.run_once`)
    run_once = runtime.run_once

    # -- releases: drawn once, in hooks (never from a dataloader) ------------------------------
    def release_graph(self) -> Data:
        """The training graph the fit's releases read, on this module's device."""
        return self.on_device(self._datamodule_graph())

    def draw_releases(self, stage: int | None = 0, graph: Data | None = None) -> list[str]:
        """Draw the releases the fit needs up to ``stage`` (``None``: every one) that are not
        cached yet, each once through the one preamble (:func:`~..privacy.mechanism.run`) and
        checked against its plan; return the names drawn now. Under DDP rank 0 alone draws and
        broadcasts with the ledger (:meth:`run_once`); a ``collective`` release runs on every
        rank and each of its mechanisms samples once, on rank 0."""
        drawn, group = [], runtime.draws_as_group(self)
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

    # -- prediction, and inference on a new graph (:mod:`.inductive`; the method's hooks) -----
    def predict_step(self, data: Data, batch_idx: int = 0) -> torch.Tensor:
        """Class probabilities of every node of ``data``: the training graph through its cached
        releases (no spend), or a new graph marked ``data.inductive = True``, its releases drawn
        on it (never guessed from the data: releasing on the training graph spends more)."""
        if getattr(data, "inductive", False):
            return self.predict_inductive(data)
        with runtime.evaluating(self):
            return self.transductive_probs(data)

    def transductive_probs(self, data: Data) -> torch.Tensor:
        """Class probabilities on the training graph, from the cached releases only."""
        return self._logits(data).softmax(-1)

    def predict_inductive(self, data: Data, given: dict[str, Any] | None = None) -> torch.Tensor:
        """Class probabilities on a new graph (:func:`.inductive.predict_inductive`)."""
        return inductive.predict_inductive(self, data, given)

    def inference_report(self, data: Data) -> Report | None:
        """What the releases on the new graph ``data`` have spent so far (``None``: none)."""
        return inductive.inference_report(self, data)

    def inductive_graph(self, data: Data) -> Data:
        """A new graph, checked before any release reads it, on this module's device."""
        return inductive.checked_graph(self, data)

    def inductive_accountant(self, graph: Data, guarantee: str | None = None) -> PrivacyAccountant:
        """A new graph's own ledger of ``guarantee`` (:meth:`.Ledgers.for_new_graph`)."""
        return self.ledgers.for_new_graph(graph, guarantee)

    def inductive_release(self, release: Release) -> bool:
        """Whether ``release`` is drawn on a new graph (default: every inductive release)."""
        return True

    def inductive_logits(self, graph: Data, outputs: dict[str, Any]) -> torch.Tensor:
        """Logits of every node of a new graph from its releases ``outputs``."""
        raise NotImplementedError(f"{type(self).__name__} offers no inductive inference")

    # -- plan (the method declares) ----------------------------------------------------------
    def declare_releases(self, *releases: Release) -> None:
        """Declare the method's releases, in draw order (:mod:`.releases`)."""
        self.releases.declare(*releases)

    def plan_mechanisms(
        self, accountant: PrivacyAccountant, noise_multiplier: float | None
    ) -> bool:
        """Record on ``accountant`` every mechanism the *rest* of the fit will run at
        ``noise_multiplier`` (releases not drawn yet, then :meth:`plan_steps`); ``False``: the
        plan is open-ended."""
        if self.level.private and (noise_multiplier is not None or not self.calibrates_noise()):
            self.releases.plan(accountant, noise_multiplier, guarantee=None)
        return self.plan_steps(accountant, noise_multiplier)

    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """Record the DP-SGD steps the rest of the fit will take (``False``: not known in
        advance). Default: the row trainer's one phase (:meth:`RowTrainer.plan`), else none."""
        return self.row_trainer is None or self.row_trainer.plan(accountant, noise_multiplier)

    def dpsgd_phase(self) -> DPSGDPhase | None:
        """The DP-SGD phase of the next optimizer step (``None``: steps are free)."""
        return None if self.row_trainer is None else self.row_trainer.phase

    def aggregation_mechanism(self) -> Any:
        """The Gaussian aggregation the model releases, for ``PrivacyAudit`` (``None``: none)."""
        return None

    def calibrates_noise(self) -> bool:
        """Whether the noise multiplier is solved from the target (default: one DP-SGD phase)."""
        return self.dpsgd_phase() is not None

    # -- calibrate, guarantees, report (:class:`~.ledgers.Ledgers`) ----------------------------
    def calibrate(self) -> None:
        """Solve the noise multiplier for the target epsilon, or check a fixed one."""
        self.ledgers.calibrate()

    def resolve_delta(self, data: Data) -> float | None:
        """Fix delta once the private units of ``data`` are known (:meth:`private_units`)."""
        return self.ledgers.resolve_delta(data)

    def private_units(self, data: Data) -> int:
        """How many units ``data`` protects (``delta="auto"`` stays below one over it):
        undirected or directed edges at edge level, nodes at node level."""
        return self.ledgers.units(data)

    def declare_guarantee(self, name: str, level: str, unit: str, delta: float | None = None,
                          epsilon: float | None = None) -> PrivacyAccountant:
        """Declare a guarantee besides the model's own (:meth:`.Ledgers.declare`)."""
        return self.ledgers.declare(name, level, unit, delta, epsilon)

    def accountant_of(self, guarantee: str | None) -> PrivacyAccountant:
        """The accountant of ``guarantee`` (``None``: the model's own)."""
        return self.ledgers.of(guarantee)

    def guarantees(self) -> list[Guarantee]:
        """The model's guarantees, its own first (:meth:`.Ledgers.guarantees`)."""
        return self.ledgers.guarantees()

    def privacy_spent(self) -> Report:
        """The guarantee(s) of what has run so far — the only source of epsilon."""
        return self.ledgers.spent()

    def privacy_planned(self) -> Report | None:
        """Spend of the whole fit (``None`` when it cannot be known in advance)."""
        return self.ledgers.planned()

    def privacy_if_next_step(self) -> Report | None:
        """Spend if one more optimizer step ran; ``None`` when steps read no private data."""
        return self.ledgers.if_next_step()

    def describe(self) -> MethodCard:
        """What the model card says of the method (``publish/`` reads this only)."""
        return MethodCard(self.card_method or type(self).__name__, self.card_paper)

    def publication_blockers(self) -> list[str]:
        """Reasons the zoo refuses this model beyond the common ones: its paper-code mode."""
        return [] if self.paper_code is None else self.paper_code.blockers()

    # -- the fit's hooks ---------------------------------------------------------------------
    def halt_privately(self, reason: str = "halted by a privacy callback") -> None:
        """End the fit before the next optimizer step (PrivacyBudget); marks the model
        :attr:`privacy_halted` (kept in checkpoints; the zoo refuses to publish it)."""
        self.guard.halt(reason)

    def reset_caches(self) -> None:
        """Drop every declared cache (:attr:`caches`), when a fit starts and ends."""
        runtime.reset_caches(self)

    def configure_model(self) -> None:
        """After ``setup``, before any loader is read: quiet from here (:func:`.runtime.quiet`)."""
        runtime.quiet(self)

    def teardown(self, stage: str) -> None:
        runtime.quiet(self, False)
        super().teardown(stage)

    def on_fit_start(self) -> None:
        self.reset_caches()  # views built before this fit (another data module, a restore)
        self.guard.start()  # forget the last fit's reasons; refuse a bad trainer
        self.draw_releases(0)  # the releases the first steps read (a restored one is kept)
        if self.staged is not None:
            self.staged.start()  # the stage the fit starts or resumes in, and its releases

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        """Stop or skip before a step the guard refuses (:meth:`.FitGuard.before_batch`)."""
        if self.row_trainer is not None:
            self.row_trainer.sync_gradients(self.trainer)
        return self.guard.before_batch()

    def on_train_end(self) -> None:
        self.guard.end()  # why the fit ended: fit_end_reason, logged

    def on_fit_end(self) -> None:
        self.reset_caches()  # the fit's copy of the graph, its rows, views and derived forms

    def adam(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Adam:
        """Adam over ``params`` with the model's ``lr`` and ``weight_decay``."""
        return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer of the stage now training, else Adam over every trainable parameter."""
        if self.staged is not None:
            return self.staged.optimizer()
        return self.adam(p for p in self.parameters() if p.requires_grad)

    def configure_callbacks(self) -> list[L.Callback]:
        """The staged fit, when the method trains in stages (its hooks switch them), and the
        end of the quiet when a fit raises."""
        return [runtime.QuietEnds()] + ([] if self.staged is None else [self.staged])

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """The row trainer's ghost clipping (:meth:`RowTrainer.backward`), or Lightning's."""
        if self.row_trainer is None or not self.row_trainer.backward(loss):
            super().backward(loss, *args, **kwargs)

    # -- checkpoints (what they hold: :meth:`.Ledgers.privacy_state`) -------------------------
    def mechanism_outputs(self) -> dict[str, Any]:
        """The releases' cached outputs (:meth:`.Releases.state_dict`)."""
        return self.releases.state_dict()

    def public_state(self) -> dict[str, Any]:
        """Values computed only from data public at this privacy level, kept in checkpoints."""
        return {}

    def load_public_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`public_state` saved."""

    def privacy_state(self) -> dict[str, Any]:
        """What checkpoints and published models hold (:meth:`.Ledgers.privacy_state`)."""
        return self.ledgers.privacy_state()

    def load_privacy_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`privacy_state` returned (never re-running a mechanism)."""
        self.ledgers.load_privacy_state(state)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[CHECKPOINT_KEY] = self.privacy_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        hp = self.hparams
        if not self.is_built and hp.get("num_features"):  # before Lightning's load_state_dict
            with self.seeded(hp.get("seed")):
                self._build(int(hp["num_features"]), int(hp.get("num_classes") or 0))
        self.load_privacy_state(checkpoint_state(checkpoint))

    # -- the hub: ModelHubMixin's methods, written over any publishable model in publish/hub.py
    #: write the model in the hub layout, or refuse (:func:`.hub.save_pretrained`)
    save_pretrained = hub.save_pretrained
    #: publish the model to a hub repository, or refuse (:func:`.hub.push_to_hub`)
    push_to_hub = hub.push_to_hub
    #: load and verify a published model, of whichever method (:func:`.hub.from_pretrained`)
    from_pretrained = classmethod(hub.from_pretrained)
    _save_pretrained = hub.write_folder
    generate_model_card = model_card

    # -- full-batch steps: the default of a method that defines ``_logits`` ----------------------
    def _logits(self, data: Data) -> torch.Tensor:
        """The logits of every node of ``data``; the default steps below log its split's rows."""
        raise NotImplementedError(f"{type(self).__name__} defines no _logits nor its own steps")

    def training_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return metrics.log_accuracy(self, self._logits(data), data, "train")

    def validation_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        if not metrics.logs_metrics(self, "val"):  # private labels: not even computed
            return None
        return metrics.log_accuracy(self, self._logits(data), data, "val")

    def test_step(self, data: Data, batch_idx: int) -> torch.Tensor | None:
        return metrics.log_accuracy(self, self._logits(data), data, "test")

