"""``dpgnn``: the command line.

``dpgnn fit`` with no arguments trains the default model on the embedded synthetic graph
(``NodeDataModule("csbm")``, generated in code) and prints test accuracy and the privacy spent.
``dpgnn fit --config zoo/recipes/<name>.yaml`` runs a recipe. ``dpgnn plot <folder>`` draws
accuracy vs epsilon from the runs below a folder (:func:`lightning_dpgnn.plot`). ``dpgnn audit
<fit arguments>`` is ``dpgnn fit`` with the ``PrivacyAudit`` callback: membership inference,
link stealing and (DP-SGD models) an empirical epsilon bound after the fit. ``dpgnn zoo`` lists,
builds, publishes and fetches the model zoo.

This module is light on purpose: ``dpgnn --help``, ``dpgnn zoo list`` and ``dpgnn plot`` never
import Lightning or PyG. The Lightning subcommands live in :mod:`lightning_dpgnn._cli`, whose
public names (``DPGNNCLI``, ``fit_summary``, ``write_run``, ...) are importable from here too.
"""

from __future__ import annotations

import os
import sys
from argparse import ArgumentError, ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "lightning_dpgnn.GAP"
DEFAULT_DATA = "lightning_dpgnn.data.NodeDataModule"
CLI_MAX_EPOCHS = 100
"""``--trainer.max_epochs`` unless given: the length of a one-stage fit (LPGNN, PGC, GNN); a
staged model (GAP, ProGAP, MLP, SAGE, ...) and a calibrated DP-SGD one (DP-MLP, DPGNN) set
their own from their epoch arguments."""

RUN_FILE = "dpgnn-run.json"
"""Written into ``trainer.default_root_dir`` after ``fit`` (and, for the checkpoint it tested,
by ``test``): the method, dataset, seed, test metrics and privacy report of the run (what
``dpgnn plot`` reads)."""

PREDICTIONS_FILE = "predictions.csv"
"""Written by ``dpgnn predict`` into the run folder of the checkpoint it read (or
``--trainer.default_root_dir`` when given)."""

LIGHTNING_COMMANDS = ("fit", "validate", "test", "predict")
CHECKPOINT_COMMANDS = ("validate", "test", "predict")

HELP = """usage: dpgnn [-h] COMMAND ...

Differentially private graph learning with PyTorch Lightning.

commands:
  fit        train a model, test it and print its privacy guarantee
             (no arguments: GAP, edge-level DP, epsilon 1, on the embedded csbm graph)
  validate   evaluate a fitted checkpoint on the validation split (--ckpt_path)
  test       evaluate a fitted checkpoint on the test split (--ckpt_path)
  predict    write predictions.csv from a fitted checkpoint (--ckpt_path)
  audit      fit, then audit the model empirically (membership inference, link stealing,
             mechanism epsilon bounds; --audit_* options)
  plot       accuracy vs epsilon from the dpgnn-run.json files below a folder
  zoo        list, inspect, build, publish and fetch the model zoo's private models

Every command has its own --help, e.g. `dpgnn fit --help`, `dpgnn zoo --help`.
A bad argument ends with one `error:` line and exit status 2; --debug (or DPGNN_DEBUG=1)
shows the traceback instead.
"""

_HEAVY = {
    "DPGNNCLI", "fit_summary", "write_run", "write_predictions", "run", "_audit_cli",
    "_with_default_classes", "_epochs_set_by", "_leave_process_group",
}


def __getattr__(name: str) -> Any:  # PEP 562: the Lightning side, on first use
    if name in _HEAVY:
        from . import _cli

        return getattr(_cli, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``dpgnn`` command (``args`` defaults to ``sys.argv[1:]``).

    A bad argument, an unknown dataset, a missing checkpoint or a fit the privacy checks refuse
    ends with one ``error: ...`` message on stderr and exit status 2; ``--debug`` (or
    ``DPGNN_DEBUG=1``) shows the full traceback instead."""
    given = list(sys.argv[1:] if args is None else args)
    if given[:1] == ["zoo"]:  # the model zoo's own subcommands (lightning_dpgnn.zoo.cli)
        from lightning_dpgnn.zoo.cli import main as zoo_main

        return zoo_main(given[1:])
    debug = "--debug" in given or os.environ.get("DPGNN_DEBUG", "") not in ("", "0")
    cleaned = [a for a in given if a != "--debug"]
    if not cleaned or cleaned[0] in ("-h", "--help"):
        print(HELP, end="")
        if not cleaned:
            raise SystemExit(2)
        return
    command = cleaned[0]
    if command == "plot":
        _run_guarded(lambda: _plot_command(cleaned[1:]), debug)
        return
    if command not in (*LIGHTNING_COMMANDS, "audit"):
        print(HELP, end="", file=sys.stderr)
        _fail(f"unknown command {command!r}: use one of "
              f"{', '.join((*LIGHTNING_COMMANDS, 'audit', 'plot', 'zoo'))}")
    if command == "audit" and ("-h" in cleaned or "--help" in cleaned):
        _audit_parser().print_help()
        print("\nThe other arguments are those of `dpgnn fit`:\n")
        cleaned = ["fit", "--help"]
    elif command in CHECKPOINT_COMMANDS and not {"-h", "--help", "--print_config"} & set(cleaned):
        _run_guarded(lambda: _check_checkpoint(command, cleaned[1:]), debug)
    from ._cli import run

    run(cleaned, from_command_line=args is None, debug=debug)


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _check_checkpoint(command: str, argv: list[str]) -> None:
    """``validate``/``test``/``predict`` read a fitted model: refuse a missing ``--ckpt_path``
    (an untrained model has nothing to evaluate) or a path that is not a file, before Lightning
    starts."""
    path = _option(argv, "--ckpt_path")
    if path is None and not _named_in_configs(argv, "ckpt_path"):
        raise ValueError(
            f"dpgnn {command} evaluates a fitted model: give --ckpt_path, e.g. "
            f"`dpgnn {command} --ckpt_path RUN/checkpoints/last.ckpt` for the checkpoint "
            "`dpgnn fit --trainer.default_root_dir RUN` wrote"
        )
    if path is not None and path not in ("best", "last", "hpc", "registry") and not Path(
        path
    ).is_file():
        raise ValueError(f"--ckpt_path {path}: no such checkpoint file")


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` (the last one given)."""
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def _named_in_configs(args: list[str], key: str, class_path: bool = False) -> bool:
    """Whether a ``--config`` file among ``args`` sets ``key`` (unreadable files: no);
    ``class_path``: a mapping under ``key`` counts only if it names its ``class_path``."""
    import yaml

    paths = [b for a, b in zip(args, args[1:], strict=False) if a == "--config"]
    paths += [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
    for path in paths:
        try:
            config = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError):
            continue  # LightningCLI reports it
        if isinstance(config, dict) and config.get(key) is not None:
            value = config[key]
            # `data: {init_args: ...}` without a class_path does not name the class
            if not class_path or not isinstance(value, dict) or "class_path" in value:
                return True
    return False


def _audit_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="dpgnn audit",
        usage="dpgnn audit [--audit_* options] <dpgnn fit arguments>",
        description="`dpgnn fit`, then the PrivacyAudit callback: membership inference, link "
        "stealing and empirical epsilon bounds of the model's mechanisms. The run file gets "
        "an `empirical_audit` block.",
        add_help=False,
        exit_on_error=False,
    )
    parser.add_argument("--audit_repeats", type=int, default=3,
                        help="shadow fits of the membership attack (default: 3)")
    parser.add_argument("--audit_epsilon_trials", type=int, default=20_000,
                        help="trials per hypothesis of the DP-SGD audit, 0 to skip "
                        "(default: 20000)")
    parser.add_argument("--audit_aggregation_trials", type=int, default=1_000_000,
                        help="trials per hypothesis of the aggregation audit, 0 to skip "
                        "(default: 1000000)")
    parser.add_argument("--audit_noise_seed", type=int, default=None,
                        help="seed the noise of the audit's canary simulations, for "
                        "reproducible bounds (default: fresh entropy; never the model's noise)")
    parser.add_argument("--audit_no_links", action="store_true",
                        help="skip the link-stealing attack")
    parser.add_argument("--audit_no_membership", action="store_true",
                        help="skip the membership-inference attack")
    return parser


def _user_message(err: BaseException) -> str:
    """The sentence a user needs from a configuration or privacy error: jsonargparse wraps
    our errors in a list (``Errors: - ...``) followed by noise about other type options."""
    import re

    from .methods.arguments import refused_value_message  # torch: only on an error

    text = str(err).strip()
    refused = re.search(r'Parser key "(\w+)":(?:(?!Parser key).)*?(?:Given|Got) value: ([^\s,]+)',
                        text, re.S)
    if refused and (own := refused_value_message(*refused.groups())):
        return own  # a number of the right type that the constructor refuses (nan, -1)
    if "Errors:" not in text:
        return text
    lines = text.splitlines()
    for i, line in enumerate(lines):
        item = line.strip()
        if not item.startswith("- ") or "Expected a <class" in item:
            continue
        indent = len(line) - len(line.lstrip())
        parts = [item[2:]]
        for more in lines[i + 1 :]:  # the item's own, more indented, continuation lines
            if len(more) - len(more.lstrip()) <= indent:
                break
            parts.append(more.strip())
        return " ".join(parts)
    return text


#: top-level keys of a ``dpgnn fit`` config
CONFIG_KEYS = ("model", "data", "trainer", "seed_everything", "optimizer", "lr_scheduler",
               "ckpt_path", "config", "print_config")


def _did_you_mean(text: str) -> str:
    """`` (did you mean 'epsilon'?)`` for an unknown option or config key, else ``""``."""
    import difflib
    import re

    name, candidates = None, ()
    m = re.search(r"class_path '([\w.]+)': Option '(\w+)' is not accepted", text)
    if m:
        name, candidates = m[2], _class_arguments(m[1])
    else:
        m = re.search(r"does not accept option '([\w.]+)'", text) or re.search(
            r"unrecognized arguments: --([\w.]+)", text
        )
        if m:
            key = m[1]
            head, _, rest = key.partition(".")
            if head == "trainer" and rest and "." not in rest:
                name, candidates = rest, _class_arguments("lightning.Trainer")
            elif head in ("model", "data") and rest.startswith("init_args."):
                name = rest.split(".", 2)[1]
            else:
                name, candidates = head, CONFIG_KEYS
    if not name or not candidates:
        return ""
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _class_arguments(path: str) -> tuple[str, ...]:
    """The keyword arguments of the class at ``path`` (``()`` if it does not import)."""
    import importlib

    from ._init_args import init_arguments

    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
        return tuple(sorted(init_arguments(cls)))
    except Exception:  # noqa: BLE001 - no suggestion rather than a second error
        return ()


def _run_guarded(run: Callable[[], Any], debug: bool) -> None:
    """Run a command; bad input (arguments, missing or damaged data, a missing checkpoint) ends
    with one ``error:`` message and exit status 2."""
    from .data.errors import DataError

    try:
        run()
    except (ValueError, TypeError, KeyError, ImportError, ArgumentError, DataError,
            FileNotFoundError) as err:
        if debug:
            raise
        message = _user_message(err)
        print(f"error: {message}{_did_you_mean(message)}", file=sys.stderr)
        print("(run with --debug or DPGNN_DEBUG=1 for the traceback)", file=sys.stderr)
        raise SystemExit(2) from None


def _plot_command(argv: list[str]) -> None:
    """``dpgnn plot FOLDER [--output PNG] [--metric test/acc]``."""
    from .plotting import DEFAULT_OUTPUT, plot

    parser = ArgumentParser(
        prog="dpgnn plot",
        description="Accuracy vs epsilon per method, from the dpgnn-run.json files of your runs "
        "(95% CI over repeated runs).",
        exit_on_error=False,
    )
    parser.add_argument("folder", help="folder searched (recursively) for run files")
    parser.add_argument(
        "--output", default=None, help=f"image path (default: FOLDER/{DEFAULT_OUTPUT})"
    )
    parser.add_argument("--metric", default="test/acc", help="metric on the y axis")
    ns = parser.parse_args(argv)
    path = plot(ns.folder, ns.output, ns.metric)
    print(f"plot: {path}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
