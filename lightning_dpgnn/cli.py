"""``dpgnn``, the command line. Light on purpose: ``--help``, ``zoo list`` and ``plot`` never
import Lightning or PyG; the Lightning subcommands live in :mod:`lightning_dpgnn._cli`."""
from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from pathlib import Path

from ._cli_args import (
    _audit_parser,
    _named_in_configs,
    _option_values,
    _run_guarded,
    spell_infinity,
)
from ._lazy import lazy_exports

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

#: names importable from here too: the run's constants, and the Lightning side on first use
_EXPORTS = {
    **dict.fromkeys(
        ("CLI_MAX_EPOCHS", "DEFAULT_DATA", "DEFAULT_MODEL", "PREDICTIONS_FILE", "RUN_FILE"),
        "_cli_args",
    ),
    **dict.fromkeys(
        ("DPGNNCLI", "fit_summary", "write_run", "write_predictions", "run", "_audit_cli"), "_cli"
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``dpgnn`` command (``args`` defaults to ``sys.argv[1:]``); bad input
    ends with one ``error: ...`` line and exit status 2 unless ``--debug``."""
    given = list(sys.argv[1:] if args is None else args)
    if given[:1] == ["zoo"]:  # the model zoo's own subcommands (lightning_dpgnn.zoo.cli)
        from lightning_dpgnn.zoo.cli import main as zoo_main

        return zoo_main(given[1:])
    debug = "--debug" in given or os.environ.get("DPGNN_DEBUG", "") not in ("", "0")
    cleaned = spell_infinity([a for a in given if a != "--debug"])
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
        known = ", ".join((*LIGHTNING_COMMANDS, "audit", "plot", "zoo"))
        print(f"error: unknown command {command!r}: use one of {known}", file=sys.stderr)
        raise SystemExit(2)
    if command == "audit" and ("-h" in cleaned or "--help" in cleaned):
        _audit_parser().print_help()
        print("\nThe other arguments are those of `dpgnn fit`:\n")
        cleaned = ["fit", "--help"]
    elif command in CHECKPOINT_COMMANDS and not {"-h", "--help", "--print_config"} & set(cleaned):
        _run_guarded(lambda: _check_checkpoint(command, cleaned[1:]), debug)
    from ._cli import run

    run(cleaned, from_command_line=args is None, debug=debug)


def _check_checkpoint(command: str, argv: list[str]) -> None:
    """Refuse a missing ``--ckpt_path``, or one that is not a file, before Lightning starts."""
    given = _option_values(argv, "--ckpt_path")
    path = given[-1] if given else None  # the last one given
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
