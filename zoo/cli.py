"""``dpgnn zoo``: list, inspect, build, publish and fetch the zoo's private models.

    dpgnn zoo list
    dpgnn zoo info NAME
    dpgnn zoo build NAME [--out DIR] [--override ARG ...]     # or: dpgnn zoo build --all
    dpgnn zoo push NAME --repo-id ORG/NAME [--dir DIR]
    dpgnn zoo pull NAME [--repo-id ORG/NAME] [--revision REV]

Hub calls honour ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE``; an unreachable hub is
asked once, with a short timeout (``DPGNN_HUB_TIMEOUT``, seconds). ``push`` applies the
publishing gate to the folder's own report (reproducible noise, missing report, halted or
over-budget fit, a report edited after it was written) before anything leaves the machine.
"""

from __future__ import annotations

import argparse
import math
import sys

from lightning_dpgnn.levels import Level  # light: an enum

from . import registry  # `hub` (torch, the privacy layer) only where a command needs it

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpgnn zoo", description=__doc__.split("\n\n")[0],
                                exit_on_error=False)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the registry as a table")
    info = sub.add_parser("info", help="one entry, and its built model's report if built")
    info.add_argument("name")
    b = sub.add_parser("build", help="train an entry's recipe and write a hub-ready folder")
    b.add_argument("name", nargs="?")
    b.add_argument("--all", action="store_true", help="build every entry")
    b.add_argument("--out", default=None, help="root folder (default $DPGNN_ZOO_DIR or zoo-build)")
    b.add_argument("--override", nargs=argparse.REMAINDER, default=[],
                   help="extra `dpgnn fit` arguments (recorded in the card); must come last")
    push = sub.add_parser("push", help="publish a built entry to the hub")
    push.add_argument("name")
    push.add_argument("--repo-id", required=True)
    push.add_argument("--dir", default=None, help="built folder (default: the build folder)")
    pull = sub.add_parser("pull", help="download an entry from the hub and verify its report")
    pull.add_argument("name")
    pull.add_argument("--repo-id", default=None)
    pull.add_argument("--revision", default=None)
    return p


def _info(name: str) -> str:
    e = registry.entry(name)
    lines = [f"{e.name}: {e.method} on {e.dataset} ({e.split})",
             f"  guarantee: {e.level}-level, epsilon {e.epsilon:g}; protects {e.unit}",
             f"  recipe: {e.recipe_path}",
             f"  hub: {e.repo_id} ({'published' if e.published else 'not published yet'})"]
    if e.accuracy:
        a = e.accuracy
        lines.append(f"  expected test accuracy: {a['mean']}% (95% CI {a['low']}–{a['high']}, "
                     f"{a.get('seeds', '?')} seeds; {a.get('source', '')})")
    if e.note:
        lines.append(f"  note: {e.note}")
    folder = registry.build_dir(name)
    if folder.is_dir():
        report = _folder_report(folder)
        lines.append(f"  built: {folder} ({_guarantee_line(report)}; verified)"
                     f"{_built_accuracy(folder)}")
    else:
        lines.append(f"  built: no (dpgnn zoo build {name})")
    return "\n".join(lines)


def _measured(folder) -> float | None:
    """The test accuracy (a fraction) a built folder's card records, if any."""
    from huggingface_hub import ModelCard

    from lightning_dpgnn.publish import hub

    card = folder / hub.CARD
    if not card.is_file():
        return None
    return ModelCard.load(card).data.to_dict().get("measured_test_accuracy")


def _built_accuracy(folder) -> str:
    """``; test accuracy 84.7% (this build)`` from a built folder's card, when it says."""
    acc = _measured(folder)
    return "" if acc is None else f"; test accuracy {100 * acc:.1f}% (this build)"


def _folder_report(folder):
    """The verified privacy report of a built folder."""
    from lightning_dpgnn.privacy import report_from_dict
    from lightning_dpgnn.publish import hub

    return report_from_dict(hub.read_report(folder)["report"])


def _guarantee_line(report) -> str:
    """Each guarantee of ``report`` (one, or several never added): level, epsilon, delta."""
    parts = report.guarantees
    return "; ".join(
        f"{n + ': ' if len(parts) > 1 else ''}{Level.of(g.level).phrase}, epsilon "
        f"{'inf' if math.isinf(g.epsilon) else f'{g.epsilon:.4g}'}, delta {g.delta:.3g}"
        for n, g in parts.items()
    )


#: the columns ``dpgnn zoo list`` prints (``zoo.list()`` has them all)
LIST_COLUMNS = ["method", "dataset", "level", "epsilon", "test acc % (95% CI)"]


def _narrow(table) -> str:
    """The registry as a table that fits a terminal (under 100 columns): the dataset's name
    without its description, no unit or hub repository (``dpgnn zoo info NAME`` has them)."""
    table = table[LIST_COLUMNS].copy()
    table["dataset"] = table["dataset"].str.split(" (", regex=False).str[0]
    return table.to_string()


def run(args: list[str]) -> None:
    ns = _parser().parse_args(args)
    if ns.command == "list":
        print(_narrow(registry.table()))
        print("(dpgnn zoo info NAME: the unit, split, hub repository and notes)")
    elif ns.command == "info":
        print(_info(ns.name))
    elif ns.command == "build":
        if ns.all == bool(ns.name):
            raise ValueError("give one entry name or --all")
        names = list(registry.entries()) if ns.all else [ns.name]
        for name in names:
            out = registry.build_dir(name, ns.out)
            folder = registry.build(name, out, overrides=ns.override)
            print(f"{name}: built {folder} ({_guarantee_line(_folder_report(folder))})"
                  f"{_built_accuracy(folder)}", flush=True)
            if not ns.override:
                print(f"  {registry.entry(name).compare_build(_measured(folder))}", flush=True)
    elif ns.command == "push":
        url = registry.push(ns.name, ns.repo_id, local_dir=ns.dir)
        print(f"{ns.name}: pushed to {ns.repo_id} ({url})")
    elif ns.command == "pull":
        model = registry.load(ns.name, repo_id=ns.repo_id, revision=ns.revision,
                              prefer_local=False)
        print(f"{ns.name}: {type(model).__name__}, verified; "
              f"{_guarantee_line(model.privacy_spent())}")


def main(args: list[str] | None = None) -> None:
    """``dpgnn zoo ...``; errors (bad arguments, unknown entries, refusals to publish or load,
    an unreachable hub, hub errors) end with one ``error:`` message and exit status 2."""
    given = list(sys.argv[1:] if args is None else args)
    try:
        run(given)
    except (ValueError, KeyError, OSError, argparse.ArgumentError) as err:
        # OSError: missing files, ConnectionError (HubUnreachableError), hub HTTP errors
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
