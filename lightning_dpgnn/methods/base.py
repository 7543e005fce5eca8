"""Base LightningModule of every private method: the one privacy lifecycle (invariant 11).

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
  :meth:`privacy_planned` / :meth:`privacy_if_next_step` / :meth:`halt_privately`.
* *report*: :meth:`privacy_spent` snapshots the accountant into a :class:`PrivacyReport` with
  the protected unit and the provenance of the noise.

Noise is never replayable: every mechanism draws from an OS-entropy-seeded generator
(:mod:`lightning_dpgnn.privacy.random`) unless the user passes ``noise_seed=`` explicitly, which
the report then states. Checkpoints hold parameters, hyper-parameters, the report and the
outputs of recorded mechanisms (:meth:`mechanism_outputs`) — nothing else computed from private
data (invariant 9).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from huggingface_hub import ModelCard, ModelHubMixin
from torch_geometric.data import Data

from ..nn.mlp import compact_features
from ..privacy import PrivacyAccountant, PrivacyReport, check_epsilon, resolve_delta
from ..privacy.aggregation import EDGE_UNITS
from ..privacy.calibration import calibrate_noise_multiplier
from ..privacy.dpsgd import DPSGDPhase, GhostDPOptimizer, ghost_backward
from ..privacy.random import reproducible_generator

__all__ = ["PrivateModule", "PRIVACY_LEVELS", "AccountingError"]

PRIVACY_LEVELS = ("none", "edge", "node")
CHECKPOINT_KEY = "dpgnn_privacy"

UNITS = {
    ("edge", "undirected"): "one undirected edge (both of its directions)",
    ("edge", "directed"): "one directed edge (the thesis' unit; a friendship is two of them)",
    ("node", None): "one node with all its edges, features and label",
    ("ldp", None): "each node's features and label, perturbed on the node (edges are public)",
    ("ldp", "features"): "each node's features, perturbed on the node (edges and labels are "
    "public)",
}


class AccountingError(ValueError):
    """A setting would make the accounted epsilon wrong; the fit is refused before any step."""


class PrivateModule(
    L.LightningModule,
    ModelHubMixin,
    library_name="lightning-dpgnn",
    tags=["differential-privacy", "graph-neural-network", "lightning-dpgnn"],
):
    """The privacy lifecycle shared by every method.

    Every method is also a :class:`huggingface_hub.ModelHubMixin`: ``save_pretrained(dir)``,
    ``push_to_hub(repo_id)`` and ``Method.from_pretrained(repo_id_or_dir)`` write, publish and
    load the model with its privacy report and model card (:mod:`lightning_dpgnn.zoo.hub`);
    publishing refuses models whose guarantee would not hold.

    Args:
        privacy: ``"none"``, ``"edge"`` or ``"node"`` (LDP methods use ``"ldp"``).
        epsilon: target epsilon (ignored for ``privacy="none"``). ``None`` means "no target":
            allowed for methods that read no private data at their level (MLP at edge level)
            or that run at a user-fixed noise multiplier (their spend is reported, not capped).
        delta: target delta, or ``"auto"`` (below 1 / #units: undirected or directed edges at
            edge level, nodes at node level), resolved when the data is known.
        levels: the privacy levels this method supports.
        noise_seed: ``None`` (default): privacy noise and Poisson batches come from an
            OS-entropy-seeded generator nobody can replay. An integer makes them reproducible
            — for research only: the report then says the guarantee does not hold against
            anyone who knows the seed, and the zoo refuses to publish the model.
        edge_unit: at edge level, what one unit of privacy is: ``"undirected"`` (default: one
            friendship, both stored directions) or ``"directed"`` (the thesis' unit).
        log_private_metrics: node level only: log ``val/*`` metrics computed on private labels
            during the fit (not covered by epsilon; off by default).
    """

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
    ) -> None:
        super().__init__()
        if privacy not in levels:
            raise ValueError(f"privacy must be one of {levels}, got {privacy!r}")
        self.privacy = privacy
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
        if not (delta == "auto" or delta is None or isinstance(delta, (int, float))):
            raise ValueError(f"delta must be a number in (0, 1) or 'auto', got {delta!r}")
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
        self.accountant = PrivacyAccountant(level=privacy if privacy != "none" else "none")
        self.accountant.unit = UNITS.get((privacy, edge_unit if privacy == "edge" else None), "")
        #: the noise multiplier of the whole fit (``None`` until calibrated, or not calibrated)
        self.noise_multiplier: float | None = None
        self._privacy_halt = False
        #: the fit was stopped before its plan by :meth:`halt_privately` (``PrivacyBudget``);
        #: kept in checkpoints, and the zoo refuses to publish such a model
        self.privacy_halted = False
        #: ``(GradSampleModule, optimizer)`` of the DP-SGD run now training (``None``: none);
        #: with ghost clipping, :meth:`backward` clips through it
        self.dp_training: tuple[Any, Any] | None = None
        self._loss_per_sample: torch.Tensor | None = None

    def _datamodule(self) -> Any:
        dm = self.trainer.datamodule if self._trainer is not None else None
        if dm is None or not hasattr(dm, "data"):
            raise RuntimeError(
                f"{type(self).__name__} needs a NodeDataModule: trainer.fit(model, datamodule=dm)"
            )
        return dm

    def _datamodule_graph(self) -> Data:
        """The preprocessed graph of the attached ``NodeDataModule``, with a clear error.

        Preprocessing is a read of private data too: a data module that read data protected at
        this level outside a mechanism (``private_reads``) is refused here, before any step."""
        dm = self._datamodule()
        reads = dm.private_reads(self.privacy) if hasattr(dm, "private_reads") else []
        if reads:
            raise AccountingError(
                f"{type(self).__name__}(privacy={self.privacy!r}): the data module's "
                "preprocessing reads private data outside any mechanism, so the epsilon would "
                "not hold:\n  - " + "\n  - ".join(reads)
            )
        return dm.data

    @property
    def num_classes_public(self) -> int | None:
        """Number of classes known as public metadata: the model's ``num_classes`` argument,
        or the data module's declared class list."""
        given = self.hparams.get("num_classes")
        if given is not None:
            return int(given)
        dm = self.trainer.datamodule if self._trainer is not None else None
        declared = getattr(dm, "public_num_classes", None)
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

    def labels_private(self) -> bool:
        """Whether this fit protects the labels (node level; LDP methods that perturb them)."""
        return self.privacy == "node"

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

    # -- plan (the method declares) ----------------------------------------------------------
    def plan_mechanisms(
        self, accountant: PrivacyAccountant, noise_multiplier: float | None
    ) -> bool:
        """Record on ``accountant`` every mechanism the *rest* of the fit will run at
        ``noise_multiplier``. Return ``False`` when the plan is open-ended (its length is not
        known in advance). Default: nothing more will run."""
        return True

    def dpsgd_phase(self) -> DPSGDPhase | None:
        """The DP-SGD phase the next optimizer step belongs to (``None``: steps are free)."""
        return None

    def calibrates_noise(self) -> bool:
        """Whether the noise multiplier is solved from the target epsilon (Gaussian methods)."""
        return False

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
        if self.privacy == "none" or not self.calibrates_noise():
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
        if self.privacy == "edge":
            units = data.num_edges // 2 if self.edge_unit == "undirected" else data.num_edges
        else:
            units = data.num_nodes
        return max(int(units), 1)

    def resolve_delta(self, data: Data) -> float | None:
        """Fix delta once the private units are known (edges or nodes)."""
        if self.privacy == "none":
            return None
        if self.accountant.delta is not None and self.target_delta == "auto":
            return self.accountant.delta  # already resolved (e.g. restored from a checkpoint)
        self.accountant.delta = resolve_delta(self.target_delta, self.private_units(data))
        return self.accountant.delta

    # -- report ------------------------------------------------------------------------------
    def privacy_spent(self) -> PrivacyReport:
        """The guarantee of what has run so far — the only source of epsilon."""
        return PrivacyReport.from_accountant(self.accountant, private=self.privacy != "none")

    def privacy_planned(self) -> PrivacyReport | None:
        """Spend of the whole fit (``None`` when it cannot be known in advance)."""
        if self.privacy == "none":
            return self.privacy_spent()
        acc = self.planned_accountant(self.noise_multiplier)
        return None if acc is None else PrivacyReport.from_accountant(acc)

    def privacy_if_next_step(self) -> PrivacyReport | None:
        """Spend if one more optimizer step ran; ``None`` when steps read no private data."""
        phase = self.dpsgd_phase()
        if phase is None or self.noise_multiplier is None:
            return None
        acc = self.accountant.copy()
        phase.plan(acc, self.noise_multiplier, 1)
        return PrivacyReport.from_accountant(acc)

    # -- enforce -----------------------------------------------------------------------------
    def halt_privately(self) -> None:
        """Skip the rest of the fit before the next optimizer step (used by PrivacyBudget)."""
        self._privacy_halt = True
        self.privacy_halted = True

    def uses_dpsgd(self) -> bool:
        """Whether any training step of this fit is a DP-SGD step (Poisson batches)."""
        return False

    def check_trainer(self) -> None:
        """Refuse trainer settings that break the accounting, before any step (invariant 7)."""
        trainer = self.trainer
        world = getattr(trainer, "world_size", 1)
        if self.privacy != "none" and world > 1:
            raise NotImplementedError(
                f"private training on {world} processes is not supported yet: each rank would "
                "draw its own aggregation/gradient noise and the accounting would not hold "
                "(design invariant 5). Train private models on a single device for now."
            )
        if not self.uses_dpsgd():
            return
        bad = []
        if getattr(trainer, "accumulate_grad_batches", 1) != 1:
            bad.append(
                f"accumulate_grad_batches={trainer.accumulate_grad_batches}: several Poisson "
                "batches would go into one noised step accounted as one batch"
            )
        if getattr(trainer, "overfit_batches", 0):
            bad.append(
                f"overfit_batches={trainer.overfit_batches}: the same batches would be replayed "
                "instead of fresh Poisson samples"
            )
        limit = getattr(trainer, "limit_train_batches", 1.0)
        if limit is not None and not (isinstance(limit, float) and limit == 1.0):
            bad.append(
                f"limit_train_batches={limit}: epochs would be cut short of the calibrated plan "
                "of Poisson-sampled steps"
            )
        if bad:
            raise AccountingError(
                f"{type(self).__name__} trains with DP-SGD; these Trainer settings break its "
                "privacy accounting:\n  - " + "\n  - ".join(bad)
            )

    def on_fit_start(self) -> None:
        self._privacy_halt = False
        self.privacy_halted = False
        self.check_trainer()

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        phase = self.dpsgd_phase()
        if (
            phase is not None
            and self.target_epsilon is not None
            and self.accountant.total_count(phase.name) >= phase.total_steps
        ):
            self._privacy_halt = True  # the calibrated plan is used up: never exceed it
        if self._privacy_halt:
            self.trainer.should_stop = True
            return -1
        return None

    # -- checkpoints -------------------------------------------------------------------------
    def mechanism_outputs(self) -> dict[str, Any]:
        """The recorded mechanisms' cached outputs (the only private-data-derived values a
        checkpoint may hold besides parameters)."""
        return {}

    def load_mechanism_outputs(self, outputs: dict[str, Any]) -> None:
        """Restore what :meth:`mechanism_outputs` saved."""

    def public_state(self) -> dict[str, Any]:
        """Values computed only from data that is public at this privacy level (e.g. the edge
        split of an LDP link predictor: the graph is public there), kept in checkpoints."""
        return {}

    def load_public_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`public_state` saved."""

    def privacy_state(self) -> dict[str, Any]:
        """Everything a checkpoint (and a published model) holds besides the parameters and
        hyper-parameters: the accountant, the report, the noise multiplier, the recorded
        mechanisms' outputs and the state public at this level (invariant 9)."""
        return {
            "accountant": self.accountant.state_dict(),
            "report": self.privacy_spent().to_dict(),
            "noise_multiplier": self.noise_multiplier,
            "outputs": self.mechanism_outputs(),
            "public": self.public_state(),
            "halted": self.privacy_halted,
        }

    def load_privacy_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`privacy_state` returned (never re-running a mechanism)."""
        self.accountant.load_state_dict(state["accountant"])
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

    # -- the hub (huggingface_hub.ModelHubMixin; the format lives in lightning_dpgnn.zoo.hub) ---
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

        Refuses (:class:`~lightning_dpgnn.zoo.hub.PublishError`) models whose noise was
        reproducible, whose report is missing, or whose fit was halted or over budget.
        ``model_card_kwargs`` go to :func:`lightning_dpgnn.zoo.card.model_card` (dataset,
        split, accuracy, command, ...)."""
        from lightning_dpgnn.zoo import hub

        hub.check_publishable(self)  # before anything is written
        folder = Path(save_directory)
        (folder / hub.CARD).unlink(missing_ok=True)  # the card describes these weights only
        return super().save_pretrained(
            folder, config=hub.model_config(self), repo_id=repo_id, push_to_hub=push_to_hub,
            model_card_kwargs=model_card_kwargs, **push_to_hub_kwargs,
        )

    def _save_pretrained(self, save_directory: Path) -> None:
        from lightning_dpgnn.zoo import hub

        hub.write_folder(self, save_directory)

    def generate_model_card(self, *args: Any, **kwargs: Any) -> ModelCard:
        from lightning_dpgnn.zoo.card import model_card

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

        from lightning_dpgnn.zoo import hub

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
        weights and cached outputs (:class:`~lightning_dpgnn.zoo.hub.VerificationError`).
        ``PrivateModule.from_pretrained`` builds whichever method the folder holds."""
        from lightning_dpgnn.zoo import hub

        folder = hub.resolve_folder(
            pretrained_model_name_or_path, revision=revision, cache_dir=cache_dir,
            force_download=force_download, token=token, local_files_only=local_files_only,
        )
        return hub.read_folder(cls, folder, **model_kwargs)

    # -- shared training / evaluation -------------------------------------------------------
    def _train_rows(
        self,
        key: Any,
        data: Data,
        tensors: Callable[[], tuple[torch.Tensor, ...]],
        *,
        compact: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """Training-node rows of ``tensors()`` plus the labels, gathered once per ``key`` and
        graph (loaders are rebuilt every epoch; re-indexing wide features each time is slow).

        ``compact=True`` (full-batch training only, never DP-SGD) stores wide one-hot rows as
        sparse CSR (:func:`~lightning_dpgnn.nn.mlp.compact_features`)."""
        cache_key = (key, id(data), data.num_nodes, compact)
        cached = getattr(self, "_rows_cache", None)
        if cached is None or cached[0] != cache_key:
            m = data.train_mask
            rows = tuple(t[m] for t in tensors())
            if compact:
                rows = tuple(compact_features(r) for r in rows)
            self._rows_cache = (cache_key, (*rows, data.y[m]))
        return self._rows_cache[1]

    def _input_features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` for a full-graph forward pass: a cached CSR copy when it is wide one-hot."""
        cached = getattr(self, "_features_cache", None)
        if cached is None or cached[0] is not x:
            self._features_cache = (x, compact_features(x))
        return self._features_cache[1]

    def _rows_step(self, net: torch.nn.Module, batch: tuple[torch.Tensor, ...]):
        """Cross-entropy on a batch of (*input rows, labels); empty Poisson batches give 0."""
        *inputs, y = batch
        logits = net(*inputs)
        self._loss_per_sample = F.cross_entropy(logits, y, reduction="none")  # ghost clipping
        if len(y) == 0:  # still a forward pass through the GradSampleModule, loss 0
            return logits.sum() * 0.0
        loss = self._loss_per_sample.mean()
        if not self._logs_metrics("train"):
            return loss  # node level: batch loss/accuracy on private labels are not released
        self.log("train/loss", loss, batch_size=len(y), on_step=False, on_epoch=True)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("train/acc", acc, batch_size=len(y), on_step=False, on_epoch=True)
        return loss

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Plain backward, or ghost clipping when a ghost-clipped DP-SGD run is training."""
        dp = self.dp_training
        if dp is not None and isinstance(dp[1], GhostDPOptimizer):
            if self._loss_per_sample is None:
                raise RuntimeError("ghost clipping needs the per-sample losses of the batch")
            ghost_backward(dp[0], dp[1], self._loss_per_sample)
            self._loss_per_sample = None
            return
        super().backward(loss, *args, **kwargs)

    def _logs_metrics(self, stage: str) -> bool:
        """Node level: no metric on private labels (training batches, validation) during the
        fit unless asked for; such metrics are not covered by epsilon."""
        in_fit = self._trainer is not None and self.trainer.state.fn == "fit"
        return not (self.privacy == "node" and stage in ("train", "val") and in_fit
                    and not self.log_private_metrics)

    def _log_accuracy(self, logits: torch.Tensor, data: Data, stage: str) -> torch.Tensor | None:
        if not self._logs_metrics(stage):
            return None
        mask = getattr(data, f"{stage}_mask")
        y = data.y[mask]
        loss = F.cross_entropy(logits[mask], y)
        acc = (logits[mask].argmax(-1) == y).float().mean()
        n = int(mask.sum())
        self.log(f"{stage}/loss", loss, batch_size=n, prog_bar=False)
        self.log(f"{stage}/acc", acc, batch_size=n, prog_bar=True)
        return loss
