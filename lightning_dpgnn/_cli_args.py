"""What both sides of ``dpgnn`` share (the run's constants, the audit options, reading config
files, turning bad input into one ``error:`` line), with no Lightning, PyG or torch at import."""

from __future__ import annotations

import re
import sys
from argparse import ArgumentError, ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "lightning_dpgnn.GAP"
DEFAULT_DATA = "lightning_dpgnn.data.NodeDataModule"
#: ``--trainer.max_epochs`` unless given (staged and calibrated DP-SGD models set their own)
CLI_MAX_EPOCHS = 100
#: the record of a run (method, dataset, seed, test metrics, privacy report) ``dpgnn plot`` reads
RUN_FILE = "dpgnn-run.json"
#: what ``dpgnn predict`` writes into the run folder
PREDICTIONS_FILE = "predictions.csv"


#: the model's budgets, whose ``inf`` a command line means as Python's ``math.inf``
_BUDGET_OPTION = re.compile(r"--model\.(?:init_args\.)?(?:x_|y_|fedavg_)?epsilon")
_INFINITY = ("inf", "+inf", "infinity", "+infinity")


def spell_infinity(argv: list[str]) -> list[str]:
    """``argv`` with a budget's ``inf`` (``--model.epsilon inf``) written as YAML's ``.inf``."""
    out = list(argv)
    for i, arg in enumerate(out):
        option, eq, value = arg.partition("=")
        if not _BUDGET_OPTION.fullmatch(option):
            continue
        if eq and value.strip().lower() in _INFINITY:
            out[i] = f"{option}=.inf"
        elif not eq and i + 1 < len(out) and out[i + 1].strip().lower() in _INFINITY:
            out[i + 1] = ".inf"
    return out


def _option_values(argv: list[str], name: str) -> list[str]:
    values = []
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif a.startswith(name + "="):
            values.append(a.split("=", 1)[1])
    return values


def _named_in_configs(args: list[str], key: str, class_path: bool = False) -> bool:
    """Whether a ``--config`` file among ``args`` sets ``key`` (unreadable files: no);
    ``class_path``: a mapping under ``key`` counts only if it names its ``class_path``."""
    import yaml

    for path in _option_values(args, "--config"):
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
    """The sentence a user needs from a configuration or privacy error."""
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
    """Run a command; bad input ends with one ``error:`` message and exit status 2."""
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
