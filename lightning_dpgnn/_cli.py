"""The Lightning side of ``dpgnn`` (imported by :mod:`lightning_dpgnn.cli` only for a command
that needs a model): a LightningCLI over the methods and DataModules."""

from __future__ import annotations

import csv
import json
import logging
import math
import sys
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI

from ._cli_args import (
    CLI_MAX_EPOCHS,
    DEFAULT_DATA,
    DEFAULT_MODEL,
    PREDICTIONS_FILE,
    RUN_FILE,
    _audit_parser,
    _named_in_configs,
    _run_guarded,
)
from ._quiet import quiet_lightning
from .data.datamodules import majority_rate
from .levels import Level
from .methods import PrivateModel
from .privacy.report import PrivacyReport, SeveralGuarantees


class DPGNNCLI(LightningCLI):
    """LightningCLI that keeps ``fit``'s last checkpoint, tests after ``fit``, ends ``fit`` and
    ``test`` with :func:`fit_summary` and :data:`RUN_FILE`, and writes ``predict``'s
    :data:`PREDICTIONS_FILE`."""

    #: callbacks added to every Trainer this CLI builds (``dpgnn audit`` adds PrivacyAudit)
    extra_callbacks: tuple[L.Callback, ...] = ()

    def add_arguments_to_parser(self, parser) -> None:
        # no default model/data class here: jsonargparse carries a default class's init_args
        # over to the class a user or recipe names (PGC would get GAP's hidden=16);
        # parse_arguments names DEFAULT_MODEL / DEFAULT_DATA only when the command names none
        parser.set_defaults(
            {
                "trainer.max_epochs": CLI_MAX_EPOCHS,
                "trainer.enable_model_summary": False,
                "trainer.logger": False,
            }
        )

    def parse_arguments(self, parser: Any, args: Any) -> None:
        """Name :data:`DEFAULT_MODEL` / :data:`DEFAULT_DATA` when the command names none."""
        if args is None:  # the command line (LightningCLI warns if both are given)
            sys.argv = [sys.argv[0], *_with_default_classes(sys.argv[1:])]
        elif isinstance(args, (list, tuple)):
            args = _with_default_classes(list(args))
        super().parse_arguments(parser, args)
        # "Seed set to 0" is logged next: held back until the model and data are built, so a
        # bad argument's `error:` line is the first line a user reads
        self._seed_log = _HeldLog(SEED_LOGGER)

    def instantiate_classes(self) -> None:
        """LightningCLI's, then the held seed line (dropped if building the classes failed)."""
        try:
            super().instantiate_classes()
        except BaseException:
            self._seed_log.release(emit=False)
            raise
        self._seed_log.release(emit=True)

    def instantiate_trainer(self, **kwargs: Any) -> L.Trainer:
        """The configured Trainer, with a last-checkpoint callback unless the config says."""
        config = self._get(self.config_init, "trainer", default={})
        given = config.get("callbacks") or []
        given = given if isinstance(given, list) else [given]
        if config.get("enable_checkpointing") is not False and not any(
            isinstance(c, ModelCheckpoint) for c in given
        ):
            # no version counter: a second fit in the same root replaces last.ckpt (the documented
            # `--ckpt_path RUN/checkpoints/last.ckpt` then reads the newest model, not the first)
            last = ModelCheckpoint(save_last=True, save_top_k=0, enable_version_counter=False)
            kwargs.setdefault("callbacks", [*given, last])
        if self.extra_callbacks:
            kwargs["callbacks"] = [*kwargs.get("callbacks", given), *self.extra_callbacks]
        own = _epochs_set_by(self.model)
        if own is not None and config.get("max_epochs") == CLI_MAX_EPOCHS:
            kwargs["max_epochs"] = own  # the CLI's default, not the user's: the model's length
        return super().instantiate_trainer(**kwargs)

    def after_fit(self) -> None:
        self._save_final_checkpoint()
        self.trainer.test(self.model, datamodule=self.datamodule, verbose=False)
        self._report()

    def after_test(self) -> None:
        self._report()

    def after_predict(self) -> None:
        predictions = self.trainer.predict_loop.predictions
        if not self.trainer.is_global_zero or not predictions:
            return
        path = self._output_dir() / PREDICTIONS_FILE
        rows = write_predictions(path, predictions, self.datamodule)
        print(f"predictions ({rows} rows): {path}", flush=True)

    def _report(self) -> None:
        metrics = {
            k: float(v)
            for k, v in self.trainer.callback_metrics.items()
            if k.startswith("test/") and not k.endswith("loss")
        }
        report = self.model.privacy_spent() if isinstance(self.model, PrivateModel) else None
        if not self.trainer.is_global_zero:
            return
        path = self._output_dir() / RUN_FILE
        checkpoint = self._checkpoint_path()
        write_run(path, self.model, self.datamodule, metrics, report, checkpoint,
                  command=self.subcommand)
        graph = _node_graph(self.datamodule)
        print(fit_summary(
            metrics, report, units=_private_units(self.model, graph, report),
            majority=majority_rate(graph) if graph is not None else None,
        ), flush=True)
        if checkpoint and self.subcommand == "fit":
            print(f"checkpoint: {checkpoint}", flush=True)
        print(f"run summary: {path}", flush=True)

    def _given_checkpoint(self) -> Path | None:
        if self.subcommand == "fit":
            return None
        path = self._get(self.config, "ckpt_path")
        return Path(path) if path and Path(path).is_file() else None

    def _output_dir(self) -> Path:
        """``--trainer.default_root_dir``, else the run folder of the checkpoint read."""
        given = self._get(self.config, "trainer", default={}).get("default_root_dir")
        ckpt = self._given_checkpoint()
        if given is None and ckpt is not None:
            parent = ckpt.resolve().parent
            return parent.parent if parent.name == "checkpoints" else parent
        return Path(self.trainer.default_root_dir)

    def _save_final_checkpoint(self) -> None:
        """Rewrite ``last.ckpt`` with the model as the fit left it (staged: each stage's best)."""
        ckpt = self.trainer.checkpoint_callback
        if ckpt is not None and getattr(ckpt, "last_model_path", ""):
            self.trainer.save_checkpoint(ckpt.last_model_path, weights_only=False)

    def _checkpoint_path(self) -> str | None:
        """The absolute path of the checkpoint ``fit`` wrote or ``test`` read."""
        given = self._given_checkpoint()
        if given is not None:
            return str(given.resolve())
        ckpt = self.trainer.checkpoint_callback
        if ckpt is None or self.subcommand != "fit":
            return None
        path = ckpt.last_model_path or ckpt.best_model_path
        return str(Path(path).resolve()) if path else None


def _epochs_set_by(model: L.LightningModule) -> int | None:
    """The ``max_epochs`` a staged (-1) or calibrated DP-SGD model sets itself, else ``None``."""
    if getattr(model, "staged", None) is not None:
        return -1
    phase = getattr(getattr(model, "row_trainer", None), "phase", None)
    if phase is not None and model.target_epsilon is not None:
        return phase.epochs
    return None


SEED_LOGGER = "lightning.fabric.utilities.seed"


class _HeldLog(logging.Filter):
    """Hold back the records of one logger until :meth:`release`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.logger = logging.getLogger(name)
        self.records: list[logging.LogRecord] = []
        self.logger.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False

    def release(self, emit: bool) -> None:
        self.logger.removeFilter(self)
        for record in self.records if emit else ():
            self.logger.handle(record)
        self.records = []


def fit_summary(
    metrics: dict[str, float],
    report: PrivacyReport | SeveralGuarantees | None,
    units: int | None = None,
    majority: float | None = None,
) -> str:
    """The summary every ``dpgnn fit``/``test`` ends with: test metrics, epsilon (and how it
    composes), delta (and ``n * delta`` over ``units``), level and protected unit."""
    lines = []
    for key, value in sorted(metrics.items()):
        name = {"acc": "accuracy", "auc": "AUC"}.get(key.split("/", 1)[1], key.split("/", 1)[1])
        line = f"test {name}: {value:.4f}"
        if name == "accuracy" and majority is not None:
            line += f" (majority class: {majority:.4f})"
        lines.append(line)
    if any(k.startswith("test/") for k in metrics):
        lines.append("  (read from the test labels: evaluation only, not covered by epsilon)")
    if report is None:
        return "\n".join(lines)
    if len(report.guarantees) > 1:  # several guarantees over different units: each, never added
        for i, (name, part) in enumerate(report.guarantees.items()):
            text = fit_summary({}, part, units=units if i == 0 else None)  # n: the model's own
            lines += [f"[{name}]", *(f"  {line}" for line in text.splitlines())]
        return "\n".join(lines)
    if not report.level.private or math.isinf(report.epsilon):
        lines.append("epsilon spent: inf (non-private)")
        lines.append("delta: n/a")
    else:
        lines.append(f"epsilon spent: {report.epsilon:.4g}{_composition(report)}")
        line = f"delta: {report.delta:.3g}" + (" (pure epsilon)" if not report.delta else "")
        if report.delta and units:
            risk = report.delta * units
            line += f" (n*delta = {risk:.3g} over n = {units:,} protected units"
            line += "; delta >= 1/n: not every unit is protected)" if risk >= 1 else ")"
        lines.append(line)
    level = report.level.phrase
    if _per_graph(report):
        level = "local DP, each client perturbs its own graph's release"
    elif report.level is Level.LDP:
        level += ", each node perturbs its own data"
    lines.append(f"level: {report.level.value} ({level})")
    if report.unit:
        lines.append(f"protects: {report.unit}")
    if report.reproducible_noise:
        lines.append("reproducible noise: not private against anyone who knows the seed")
    return "\n".join(lines)


def _node_graph(datamodule: Any) -> Any:
    graph = getattr(datamodule, "_data", None)
    return graph if graph is not None and hasattr(graph, "num_nodes") else None


def _private_units(model: Any, graph: Any, report: Any) -> int | None:
    """``n``, the units the delta of the model's own guarantee is over (``None``: unknown)."""
    own = None if report is None else next(iter(report.guarantees.values()))
    if own is None or not own.delta or graph is None:
        return None
    try:
        return int(model.private_units(graph))
    except Exception:  # noqa: BLE001 - a model without units (LDP): no n*delta line
        return None


def _per_graph(report: PrivacyReport) -> bool:
    """GW-LDP: the LDP unit is one client's graph, not one node."""
    return report.level is Level.LDP and any(e.name.startswith("gwldp/") for e in report.ledger)


def _composition(report: PrivacyReport) -> str:
    """How a pure-epsilon total adds up (empty for Gaussian ledgers)."""
    if not report.ledger or any(e.kind != "pure" or e.epsilon is None for e in report.ledger):
        return ""
    per = "per node" if report.level is Level.LDP else "in all"
    if _per_graph(report):
        per = "per graph"
    parts = [
        f"{e.name} {e.epsilon * e.count:g}"
        + (f" ({e.count} x {e.epsilon:g})" if e.count > 1 else "")
        + (f" ({e.note})" if e.note else "")
        for e in report.ledger
    ]
    return f" {per} = " + " + ".join(parts)


def write_run(
    path: Path,
    model: L.LightningModule,
    datamodule: L.LightningDataModule | None,
    metrics: dict[str, float],
    report: PrivacyReport | SeveralGuarantees | None,
    checkpoint: str | None,
    command: str = "fit",
) -> None:
    """Write one run's record (see :data:`RUN_FILE`)."""
    hparams = getattr(datamodule, "hparams", {}) if datamodule is not None else {}
    record = {
        "method": type(model).__name__,
        "dataset": hparams.get("name"),
        "seed": hparams.get("seed"),
        "metrics": metrics,
        "privacy": report.to_dict() if report is not None else None,
        "checkpoint": checkpoint,
        "command": command,
    }
    if getattr(model, "empirical_audit", None):  # dpgnn audit / PrivacyAudit
        record["empirical_audit"] = model.empirical_audit
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + "\n")


def write_predictions(
    path: Path, predictions: list[Any], datamodule: L.LightningDataModule | None
) -> int:
    """Write ``trainer.predict`` outputs as CSV (``node_id`` or ``graph``, then ``class`` and
    ``prob_<k>``, or ``dim_<k>`` for embeddings); return the number of rows."""
    out = torch.cat([p.detach().cpu().float() for p in predictions]).reshape(
        sum(len(p) for p in predictions), -1
    )
    data = getattr(datamodule, "_data", None)
    node_id = getattr(data, "node_id", None)
    if node_id is not None and len(node_id) == len(out):
        ids, id_name = node_id.tolist(), "node_id"
    else:
        ids, id_name = list(range(len(out))), "node_id" if data is not None else "graph"
    probs = bool((out >= 0).all()) and torch.allclose(out.sum(-1), torch.ones(len(out)), atol=1e-4)
    header = [id_name] + (["class"] if probs else [])
    header += [f"{'prob' if probs else 'dim'}_{k}" for k in range(out.size(1))]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        classes = out.argmax(-1).tolist()
        for i, row in enumerate(out.tolist()):
            writer.writerow([ids[i], *([classes[i]] if probs else []), *(f"{v:.6g}" for v in row)])
    return len(out)


def run(given: list[str], from_command_line: bool, debug: bool) -> None:
    """The Lightning subcommands of :func:`lightning_dpgnn.cli.main`."""
    cli_class: type[DPGNNCLI] = DPGNNCLI
    cleaned = list(given)
    if cleaned[:1] == ["audit"]:
        cli_class, rest = _audit_cli(cleaned[1:])
        cleaned = ["fit", *rest]
    args = None if from_command_line else cleaned
    if from_command_line:  # LightningCLI reads sys.argv itself
        sys.argv = [sys.argv[0], *cleaned]
    try:
        with quiet_lightning():
            _run_guarded(
                lambda: cli_class(
                    L.LightningModule,
                    L.LightningDataModule,
                    subclass_mode_model=True,
                    subclass_mode_data=True,
                    seed_everything_default=0,
                    save_config_callback=None,  # no logger by default: no config.yaml in cwd
                    args=args,
                    auto_configure_optimizers=False,
                    parser_kwargs={"exit_on_error": False},
                ),
                debug,
            )
    finally:
        _leave_process_group()


def _leave_process_group() -> None:
    """Leave a DDP process group before exit (gloo's threads can abort the shutdown)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _audit_cli(argv: list[str]) -> tuple[type[DPGNNCLI], list[str]]:
    """A :class:`DPGNNCLI` whose fit ends with ``PrivacyAudit``, and the fit arguments."""
    from lightning_dpgnn.callbacks import PrivacyAudit

    ns, rest = _audit_parser().parse_known_args(argv)
    audit = PrivacyAudit(
        membership=not ns.audit_no_membership, links=not ns.audit_no_links,
        repeats=ns.audit_repeats, epsilon_trials=ns.audit_epsilon_trials,
        aggregation_trials=ns.audit_aggregation_trials, noise_seed=ns.audit_noise_seed,
    )  # fmt: skip
    return type("AuditCLI", (DPGNNCLI,), {"extra_callbacks": (audit,)}), rest


def _with_default_classes(args: list[str]) -> list[str]:
    """``args`` plus ``--model=DEFAULT_MODEL`` / ``--data=DEFAULT_DATA`` when no argument or
    config file names a model / data class."""
    if not args or args[0] not in ("fit", "validate", "test", "predict"):
        return args
    extra = []
    for key, default in (("model", DEFAULT_MODEL), ("data", DEFAULT_DATA)):
        named = any(
            a == f"--{key}" or a.startswith((f"--{key}=", f"--{key}.class_path")) for a in args
        )
        if not named and not _named_in_configs(args, key, class_path=True):
            extra.append(f"--{key}={default}")
    return [args[0], *extra, *args[1:]]
