"""The tables ``summarize.py`` makes, declared: which results file, grouping, columns, title,
notes, docs page and marker (:class:`summarize.Table`). ``TABLES`` maps each name of the
command line to its declaration(s); a table whose layout is not one grouped table declares a
``body`` here, and the GAP / ProGAP / baselines family and the defaults history (several
files, pages and plots each) are functions. Which file each table reads and which page it
splices: ``benchmarks/README.md``, "Tables and the docs pages that splice them".

GAP / ProGAP / baselines: a setting is (dataset, method, epsilon, protected unit,
preprocessing protocol). Rows written before units and protocols were recorded count as
protocol ``paper-v0`` with the unit ``common.row_unit`` gives them (edge level:
``edge-directed``, the thesis' unit). The old node-level GAP/ProGAP rows (degree bounded by
sampling D = 100 edges per node, an unstable projection, so their epsilon was not delivered)
are left out of every table and plot; a separate table puts them, struck through, beside the
new node-level rows. ``degree_bound`` and ``audit_power`` keep the format they were committed
with (no provenance line: the commands).
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import settings as S
from common import (
    CODE_VERSION,
    DOCS,
    INVALID_NODE_UNIT,
    LEGACY_PROTOCOL,
    PROTOCOL,
    RESULTS,
    ROOT,
    bootstrap_ci,
    invalid_reason,
    is_valid,
    load_rows,
    row_protocol,
    row_unit,
    seed_stats,
)
from summarize import Table, ci, eps_text, field_names, grouped, made_by, publish, splice_doc


def _commands(rows: list[dict], bullet: str = "- `{}`") -> list[str]:
    return [bullet.format(c) for c in sorted({r["command"] for r in rows})]


def col(name: str, fmt: str = "{}"):
    """A column cell: the group's value of ``name`` (or its first row's), formatted."""
    return lambda key, rows: fmt.format(key[name] if name in key else rows[0][name])


def summaries(rows: list[dict], fields: tuple, order, extra, metric: str = "test_acc"
              ) -> list[dict]:
    """One summary per group of ``fields`` (:func:`summarize.grouped`), sorted by ``order``
    (of a summary): the group's values, ``extra(key, rows)`` and :func:`common.seed_stats` of
    ``metric`` (mean and 95% bootstrap CI over seeds, timings)."""
    out = []
    for values, rs in grouped(rows, fields).items():
        key = dict(zip(field_names(fields), values, strict=True))
        out.append({**key, **extra(key, rs), **seed_stats(rs, metric)})
    return sorted(out, key=order)


def _reported(rows: list[dict]) -> float | None:
    """The largest epsilon the rows report (``None``: one is infinite)."""
    eps = [r["epsilon"] for r in rows]
    return None if any(e is None for e in eps) else max(eps)


def _rank(order, value, missing: int) -> int:
    """The position of ``value`` in ``order`` (``missing`` when it is not there)."""
    return order.index(value) if value in order else missing


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# == GAP, ProGAP, baselines ================================================================
BENCHMARKS = {
    "gap": dict(
        inputs=("gap_accuracy.jsonl",),
        doc="gap.md",
        curves=("GAP-EDP", "GAP-NDP", "DP-MLP"),
        lines=(("GAP-inf", "--"), ("MLP", ":")),
    ),
    "progap": dict(
        inputs=("progap_accuracy.jsonl", "gap_accuracy.jsonl"),
        keep=("ProGAP", "GAP-EDP", "GAP-NDP", "GAP-inf"),
        doc="progap.md",
        curves=("ProGAP-EDP", "GAP-EDP", "ProGAP-NDP", "GAP-NDP"),
        lines=(("ProGAP-inf", "--"), ("GAP-inf", ":")),
        compare=(("ProGAP-EDP", "GAP-EDP"), ("ProGAP-NDP", "GAP-NDP"), ("ProGAP-inf", "GAP-inf")),
        depth=(("ProGAP-EDP", "ProGAP-EDP-K"), ("GAP-EDP", "GAP-EDP-K")),
    ),
    "baselines": dict(
        inputs=("baselines.jsonl", "gap_accuracy.jsonl", "progap_accuracy.jsonl"),
        # exact method names, on the datasets and protocol of the first input only
        methods=("SAGE-inf", "EdgeRand", "DPGNN", "GAP-inf", "GAP-EDP", "GAP-NDP",
                 "ProGAP-inf", "ProGAP-EDP", "ProGAP-NDP", "MLP", "DP-MLP"),
        doc="baselines.md",
        curves=("GAP-EDP", "EdgeRand", "GAP-NDP", "ProGAP-NDP", "DPGNN", "DP-MLP"),
        lines=(("SAGE-inf", "--"),),
        compare=(("GAP-EDP", "EdgeRand"), ("ProGAP-EDP", "EdgeRand"), ("GAP-NDP", "DPGNN"),
                 ("ProGAP-NDP", "DPGNN"), ("DP-MLP", "DPGNN")),
        sections=False,  # no superseded / unit-cost tables: the GAP pages have them
        show_commands=True,
        # the baselines' rows also go into the GAP and ProGAP pages, beside their methods
        splice={"gap.md": "GAP-", "progap.md": "ProGAP-"},
    ),
}
BASELINES = ("SAGE-inf", "EdgeRand", "DPGNN")


def baseline_rows(summary: list[dict], pairs, prefix: str, stem: str) -> str:
    """The baselines beside the methods named ``prefix*``: the comparison and every setting."""
    mine = [(a, b) for a, b in pairs if a.startswith(prefix)]
    rows = [s for s in summary if s["method"] in BASELINES or s["method"].startswith(prefix)]
    return (
        f"Generated by `python benchmarks/summarize.py baselines` from "
        f"`benchmarks/results/{stem}.md` (its commands are there):\n\n"
        + comparison(summary, mine) + "\n\n" + table(rows)
    )


PROTOCOLS = {
    LEGACY_PROTOCOL: "min_class_size=1000 (reads labels), isolated nodes removed, positional "
    "split, seeded noise",
    PROTOCOL: "declared classes (schools: years 2005-2009; page-page: its 4 page types), "
    "isolated nodes kept, identity-keyed split (binomial sizes), Facebook100 features from the "
    "papers' five columns with the public code book, OS-entropy noise",
}


def summarize(rows: list[dict]) -> list[dict]:
    """A summary per setting (:func:`common.cell_of`): its degree bound(s), largest epsilon,
    defaults and :func:`common.seed_stats`."""

    def extra(key: dict, rs: list[dict]) -> dict:
        bounds = sorted({r["degree_bound"] for r in rs if r.get("degree_bound") is not None})
        return dict(degree_bound=bounds[0] if len(bounds) == 1 else bounds or None,
                    epsilon_max=(max((r["epsilon"] or 0.0) for r in rs)
                                 if key["target_epsilon"] is not None else None),
                    defaults=rs[0].get("defaults", "old"))  # fmt: skip

    fields = ("dataset", "method", "target_epsilon", ("unit", row_unit), ("protocol", row_protocol))
    return summaries(rows, fields, lambda s: (
        s["dataset"], s["method"], s["unit"], s["protocol"] != LEGACY_PROTOCOL,
        -1 if s["target_epsilon"] is None else s["target_epsilon"]), extra)


def superseded(summary: list[dict], invalid: list[dict]) -> str:
    """New node-level settings beside the old, invalid sampled-D100 rows of the same
    (dataset, method, epsilon), the old ones struck through. ``invalid`` holds only the
    sampled-D100 rows."""
    old = {(s["dataset"], s["method"], s["target_epsilon"]): s for s in summarize(invalid)}
    lines = [
        f"| dataset | method | epsilon | D | test acc % (95% CI), node, {PROTOCOL} | seeds | "
        "old: sampled D=100, paper-v0 (invalid) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        if s["unit"] != "node" or s["protocol"] != PROTOCOL:
            continue
        o = old.get((s["dataset"], s["method"], s["target_epsilon"]))
        was = "–" if o is None else f"<del>{_ci(o)}</del>"
        lines.append(
            f"| {s['dataset']} | {s['method']} | {eps_text(s['target_epsilon'])} | "
            f"{s['degree_bound'] or '–'} | {_ci(s)} | {s['seeds']} | {was} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def _ci(s: dict) -> str:
    return f"{s['acc_mean']:.1f} ({s['acc_ci95'][0]:.1f}–{s['acc_ci95'][1]:.1f})"


def table(summary: list[dict]) -> str:
    lines = [
        "| dataset | method | unit | protocol | defaults | epsilon | test acc % (95% CI) | seeds | "
        "wall s | CPU s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        unit = s["unit"] + (f" (D={s['degree_bound']})" if s.get("degree_bound") else "")
        lines.append(
            f"| {s['dataset']} | {s['method']} | {unit} | {s['protocol']} | "
            f"{s.get('defaults', 'old')} | {eps_text(s['target_epsilon'])} | {_ci(s)} | "
            f"{s['seeds']} | {s['wall_s_median']} | {s['cpu_s_median']} | "
            f"{s['peak_rss_mb_max']:.0f} |"
        )
    return "\n".join(lines)


def _by_setting(summary: list[dict]) -> dict[tuple, dict]:
    """Summaries keyed by (dataset, method, epsilon, unit, protocol)."""
    return {
        (s["dataset"], s["method"], s["target_epsilon"], s["unit"], s["protocol"]): s
        for s in summary
    }


def comparison(summary: list[dict], pairs) -> str:
    """``A`` vs ``B`` at each (dataset, epsilon, unit, protocol) both have: difference of the
    means."""
    index = _by_setting(summary)
    lines = [
        "| dataset | unit | protocol | epsilon | method | acc % | baseline | acc % | "
        "gain (points) | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, method, eps, unit, protocol), s in index.items():
        for a, b in pairs:
            base = index.get((dataset, b, eps, unit, protocol))
            if method != a or base is None:
                continue
            lines.append(
                f"| {dataset} | {unit} | {protocol} | {eps_text(eps)} | {a} | "
                f"{s['acc_mean']:.1f} | {b} | {base['acc_mean']:.1f} | "
                f"{s['acc_mean'] - base['acc_mean']:+.1f} | "
                f"{s['seeds']} / {base['seeds']} |"
            )
    return "\n".join(lines)


def depth_selection(rows: list[dict], prefix: str) -> dict[tuple, dict]:
    """The thesis' depth tuning: per (dataset, epsilon), the ``K`` of ``{prefix}K`` with the
    best mean validation accuracy over seeds, its test accuracy, and the test accuracy of
    every ``K``."""
    by_setting: dict[tuple, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["method"].startswith(prefix) and r.get("val_acc") is not None:
            key = (r["dataset"], r["target_epsilon"], row_unit(r), row_protocol(r))
            by_setting[key][int(r["method"].removeprefix(prefix))].append(r)
    out = {}
    for key, ks in sorted(by_setting.items()):
        val = {k: seed_stats(rs, "val_acc")["acc_mean"] for k, rs in ks.items()}
        best = max(val, key=val.get)
        test = {k: seed_stats(rs)["acc_mean"] for k, rs in ks.items()}
        out[key] = dict(
            dataset=key[0],
            target_epsilon=key[1],
            unit=key[2],
            protocol=key[3],
            depth=best,
            val_acc_mean=val[best],
            test_acc_by_depth=test,
            **seed_stats(ks[best]),
        )
    return out


def depth_table(chosen: dict[str, dict[tuple, dict]]) -> str:
    """Tuned-depth comparison of two methods: test accuracy per K and at the chosen K."""
    (a, tuned_a), (b, tuned_b) = chosen.items()
    depths = sorted({k for t in tuned_a.values() for k in t["test_acc_by_depth"]})
    lines = [
        f"| dataset | unit | protocol | epsilon | {a} K={'/'.join(map(str, depths))} | "
        f"{a} tuned (K) | {b} K={'/'.join(map(str, depths))} | {b} tuned (K) | gain |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def per_k(t):
        return " / ".join(
            f"{t['test_acc_by_depth'][k]:.1f}" if k in t["test_acc_by_depth"] else "–"
            for k in depths
        )

    def tuned(t):
        lo, hi = t["acc_ci95"]
        return f"{t['acc_mean']:.1f} ({lo:.1f}–{hi:.1f}) (K={t['depth']}, {t['seeds']} seeds)"

    for key, ta in tuned_a.items():
        tb = tuned_b.get(key)
        gain = "–" if tb is None else f"{ta['acc_mean'] - tb['acc_mean']:+.1f}"
        lines.append(
            f"| {key[0]} | {key[2]} | {key[3]} | {key[1]:g} | {per_k(ta)} | {tuned(ta)} | "
            f"{'–' if tb is None else per_k(tb)} | {'–' if tb is None else tuned(tb)} | {gain} |"
        )
    return "\n".join(lines)


def unit_cost(summary: list[dict]) -> str:
    """Accuracy of each edge-level setting run with both units under one protocol: the thesis'
    directed edge (sensitivity 1) vs one undirected edge (sensitivity sqrt(2))."""
    index = _by_setting(summary)
    lines = [
        "| dataset | method | epsilon | edge-directed (95% CI) | edge-undirected (95% CI) | "
        "cost (points) | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for (dataset, method, eps, unit, protocol), d in index.items():
        u = index.get((dataset, method, eps, "edge-undirected", protocol))
        if unit != "edge-directed" or u is None:
            continue
        lines.append(
            f"| {dataset} | {method} | {eps_text(eps)} | {_ci(d)} | {_ci(u)} | "
            f"{u['acc_mean'] - d['acc_mean']:+.1f} | {d['seeds']} / {u['seeds']} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def _variant(s: dict) -> str:
    """Legend label: the method, its unit and protocol."""
    unit = {"edge-directed": "edge-dir", "edge-undirected": "edge-undir"}.get(s["unit"], s["unit"])
    return f"{s['method']} [{unit}, {s['protocol']}]"


def plot(summary: list[dict], path: Path, curves, lines) -> None:
    plt = _plt()
    datasets = sorted({s["dataset"] for s in summary})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        rows = [s for s in summary if s["dataset"] == ds]
        variants = sorted({_variant(s) for s in rows if s["method"] in curves})
        for variant in variants:
            pts = [s for s in rows if _variant(s) == variant]
            if pts:
                x = [s["target_epsilon"] for s in pts]
                y = [s["acc_mean"] for s in pts]
                err = [
                    [s["acc_mean"] - s["acc_ci95"][0] for s in pts],
                    [s["acc_ci95"][1] - s["acc_mean"] for s in pts],
                ]
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=variant)
        for method, style in lines:
            for s in (s for s in rows if s["method"] == method):
                ax.axhline(s["acc_mean"], linestyle=style, color="gray", label=_variant(s))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(ds)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)




@functools.cache
def _has_commit(revision: str | None, commit: str) -> bool:
    return _contains(revision, commit)


def _defaults(row: dict, bench: str) -> str:
    """``"current"`` when the row's library revision already had the last default change of
    its method (:func:`since`), else ``"old"``; rows of a benchmark whose defaults never
    changed are current."""
    if bench not in SINCE:
        return "current"
    return "current" if _has_commit(row.get("revision"), since(row["method"], bench)) else "old"


def current_rows(name: str) -> list[dict]:
    """The rows of ``results/<name>``, each saying whether it has today's defaults
    (``defaults``). The file holds only current cells: a cell re-run under later defaults
    replaced its old rows there (the re-run generations and the rows they replaced are in git
    history, see :data:`GENERATIONS_REV`)."""
    path = RESULTS / name
    if not path.exists():
        return []
    bench = name.removesuffix("_accuracy.jsonl")
    return [dict(r, defaults=_defaults(r, bench)) for r in load_rows(path)]


def accuracy(name: str = "gap", path: Path | None = None, doc: bool = True) -> str:
    """The tables and the plot of the GAP, ProGAP or baselines benchmark (:data:`BENCHMARKS`)."""
    bench = BENCHMARKS[name]
    rows = [r for f in bench["inputs"] for r in current_rows(f)]
    keep = bench.get("keep")
    if keep:
        rows = [r for r in rows if r["method"].startswith(keep)]
    if bench.get("methods"):  # the settings of the first input, beside the others' same ones
        first = load_rows(RESULTS / bench["inputs"][0])
        scope = {(r["dataset"], row_protocol(r)) for r in first}
        rows = [r for r in rows if r["method"] in bench["methods"]
                and (r["dataset"], row_protocol(r)) in scope]
    provenance = made_by(name, bench["inputs"], rows)
    excluded = Counter(invalid_reason(r) for r in rows if not is_valid(r))
    invalid = [r for r in rows if invalid_reason(r) == INVALID_NODE_UNIT]
    rows = [r for r in rows if is_valid(r)]
    summary = summarize(rows)
    sections = bench.get("sections", True)
    replaced_md = superseded(summary, invalid) if sections else ""
    cost_md = unit_cost(summary) if sections else ""
    depth_md, depth = "", []
    if bench.get("depth"):
        chosen = {name: depth_selection(rows, prefix) for name, prefix in bench["depth"]}
        depth_md = depth_table(chosen)
        depth = [dict(method=name, **t) for name, ts in chosen.items() for t in ts.values()]
    commands = sorted({r["command"] for r in rows})
    hardware = sorted({r["hardware"] for r in rows})
    stem = bench["inputs"][0].removesuffix(".jsonl")
    (RESULTS / f"{stem}.json").write_text(
        json.dumps(
            {
                "commands": commands,
                "hardware": hardware,
                "protocols": PROTOCOLS,
                "excluded": dict(excluded),
                "summary": summary,
                "depth": depth,
            },
            indent=1,
        )
    )
    md = table(summary)
    if bench.get("compare"):
        md = comparison(summary, bench["compare"]) + "\n\nAll settings:\n\n" + md
    if cost_md:
        md = (
            "Cost of the honest edge unit (same protocol, seeds and settings; one undirected "
            "edge has sensitivity sqrt(2) where one directed edge has 1):\n\n"
            + cost_md
            + "\n\n"
            + md
        )
    if replaced_md:
        md = (
            "Node level under the degree promise (D = the dataset's maximum in/out degree, "
            "taken from the data; no edge dropped) beside the old rows that bounded the degree "
            "by sampling 100 edges per node (not a stable projection: the epsilon they print "
            "was not delivered; struck through, excluded from every other table):\n\n"
            + replaced_md
            + "\n\n"
            + md
        )
    if depth_md:
        md = (
            "Depth tuned on validation accuracy (test accuracy % per K; mean over seeds):\n\n"
            + depth_md
            + "\n\n"
            + md
        )
    md = provenance + "\n\n" + md
    md += (
        "\n\nWall and CPU seconds are medians per run, peak MB the largest resident set of one "
        f"run (each in its own process), over runs of the current code ({CODE_VERSION!r}). "
        f"Plot: `benchmarks/results/{stem}.png`. Hardware: {'; '.join(hardware)}.\n\n"
        "Defaults: `current` rows were run with the library's current defaults (the cells a "
        "default change moved were re-run, first for the normalization changes, then, since "
        "GAP and ProGAP count labels by default at edge level and without privacy, for label "
        "counts, and the re-run rows replaced the old ones; the replaced rows and the re-run "
        f"generations are in git history: `git show {GENERATIONS_REV}:benchmarks/results/FILE` "
        "for `gap_accuracy.jsonl`, `progap_accuracy.jsonl` and their `*_defaults_v2.jsonl`, "
        "`*_defaults_v3.jsonl`), `old` rows before a default change and not re-run "
        "(`benchmarks/results/defaults_change.md` puts the re-run cells beside their old rows). "
        "Units: `edge-directed` (one directed edge, the thesis' unit, sensitivity 1), "
        "`edge-undirected` (one friendship, sensitivity sqrt(2)), `node` (a node with its edges, "
        "features and label; D is the promised degree bound), `none` (not private). Protocols: "
        + "; ".join(f"`{k}`: {v}" for k, v in PROTOCOLS.items())
        + ". Left out of every table: "
        + "; ".join(f"{n} rows {reason}" for reason, n in sorted(excluded.items()))
        + "."
    )
    if bench.get("show_commands"):
        md += "\n\nCommands of the rows: " + "; ".join(f"`{c}`" for c in commands) + "."
    (RESULTS / f"{stem}.md").write_text(md + "\n")
    plot(summary, RESULTS / f"{stem}.png", bench["curves"], bench["lines"])
    if doc:
        splice_doc(bench["doc"], "BENCHMARK", md)
        for page, prefix in bench.get("splice", {}).items():
            splice_doc(page, "BASELINES", baseline_rows(summary, bench["compare"], prefix, stem))
    return md


# == defaults: old rows beside the re-runs (issue 13) =======================================
#: the last revision that kept the re-run generations beside the published rows; the defaults
#: table reads these files there (``git show``): the results folder now holds only the current

#: cells (each re-run cell's rows replaced its old ones in ``<benchmark>_accuracy.jsonl``)
GENERATIONS_REV = "7bd1219"
#: each benchmark's published rows, then its re-runs under later defaults, oldest first (at
#: :data:`GENERATIONS_REV`): a re-run cell (>= 5 seeds) replaced the cell of every earlier file
FILES = {
    "gap": ("gap_accuracy.jsonl", "gap_accuracy_defaults_v2.jsonl",
            "gap_accuracy_defaults_v3.jsonl"),
    "progap": ("progap_accuracy.jsonl", "progap_accuracy_defaults_v2.jsonl",
               "progap_accuracy_defaults_v3.jsonl"),
}  # fmt: skip
#: the default changes, oldest first: (commit, the (method, level) families it moved, what)
_GAP_EDGE = {("GAP", "EDP"), ("GAP", "inf")}
_PROGAP_EDGE = {("ProGAP", "EDP"), ("ProGAP", "inf")}
CHANGES = (
    ("1326a07", _GAP_EDGE, "normalization auto (BatchNorm), normalize_combine"),
    ("1326a07", {("GAP", "NDP")},
     "normalize_combine (normalization 'auto' is none at node level, as before)"),
    ("5c618de", _PROGAP_EDGE | {("ProGAP", "NDP")}, "act -> norm blocks, normalize_jk"),
    ("5c618de", {("MLP", None)},
     "100 epochs, best validation epoch (was: the trainer's 1000, last)"),
    ("c0fdf5a", _GAP_EDGE | _PROGAP_EDGE,
     "label_counts on (noisy counts of the in-neighbours' training labels, same epsilon)"),
)  # fmt: skip
#: a method none of CHANGES names is current from this commit on
SINCE = {"gap": "1326a07", "progap": "5c618de"}


def family(method: str) -> tuple[str, str | None]:
    """``("ProGAP", "EDP")`` of ``ProGAP-LW-EDP``, ``("GAP", "EDP")`` of ``GAP-EDP-K3``,
    ``("MLP", None)`` of ``MLP``: the model and its level (``EDP``, ``NDP``, ``inf``)."""
    parts = method.split("-")
    return parts[0], next((p for p in parts if p in ("EDP", "NDP", "inf")), None)


def changes_of(method: str) -> list[tuple[str, str]]:
    """``(commit, what)`` of every default change that moved ``method``'s rows, oldest first."""
    return [(commit, what) for commit, fams, what in CHANGES if family(method) in fams]


def since(method: str, bench: str) -> str:
    """The commit of ``method``'s last default change: its rows are current from there on."""
    moved = changes_of(method)
    return moved[-1][0] if moved else SINCE[bench]


DEFAULTS_OUT = "defaults_change.md"
DEFAULTS_PLOT = "defaults_change.png"
#: reference_parity.REFERENCE cells matching each benchmark's method at its default depth
REFERENCE_CELLS = {"gap": "GAP-K2", "progap": "ProGAP-K2"}


def _contains(revision: str | None, commit: str) -> bool:
    """Whether library ``revision`` (``"<sha>[+dirty]"``) includes ``commit``."""
    if not revision:
        return False
    rev = revision.split("+")[0]
    cmd = ["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, rev]
    return subprocess.run(cmd, capture_output=True).returncode == 0


@functools.cache
def _rows_at(name: str, rev: str = GENERATIONS_REV) -> tuple[dict, ...]:
    """The rows of ``results/<name>`` at git revision ``rev``."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:benchmarks/results/{name}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def _settings(name: str) -> dict[tuple, list[float]]:
    acc = defaultdict(list)
    for r in _rows_at(name):
        if not is_valid(r):
            continue
        key = (r["dataset"], r["method"], r["target_epsilon"], row_unit(r))
        acc[key, row_protocol(r)].append((100 * r["test_acc"], r.get("revision")))
    return acc


def _generations(bench: str) -> list[dict[tuple, list[tuple]]]:
    """The settings of each re-run file of ``bench`` with >= 5 seeds, oldest file first."""
    return [
        {k: v for k, v in _settings(name).items() if len(v) >= 5}
        for name in FILES[bench][1:]
    ]


def _rerun(bench: str) -> dict[tuple, list[tuple]]:
    """The re-run settings of ``bench``, each from the latest file that has it."""
    merged = {}
    for generation in _generations(bench):
        merged.update(generation)
    return merged


def _old_rows(old: dict, key: tuple, protocol: str) -> tuple[list[tuple], str]:
    """The old rows of a setting: same protocol when there are any, else the published ones
    (``paper-v0`` edge-level rows: the tables in the docs were made from those)."""
    if old.get((key, protocol)):
        return old[key, protocol], protocol
    for (k, p), values in old.items():
        if k == key:
            return values, p
    for (k, p), values in old.items():  # old rows recorded another unit (MLP: the edge unit)
        if k[:3] == key[:3]:
            return values, p
    return [], "–"


def _label(key: tuple) -> str:
    """Tick label of a setting: the method's level (``EDP``, ``NDP``, ``inf``) or name
    (baselines), and epsilon."""
    method, eps, unit = key[1], key[2], key[3]
    level = method.rsplit("-", 1)[-1] if "-" in method else method
    undirected = " undir." if unit == "edge-undirected" else ""
    return level if eps is None or level in ("inf", "MLP") else f"{level} {eps:g}{undirected}"


def _reference_cell(bench: str, key: tuple) -> tuple | None:
    """The ``reference_parity.REFERENCE`` cell of a setting: the reference measured edge level
    (the directed unit) and non-private runs of the benchmark's method at its default depth,
    and MLP."""
    method, eps = key[1], key[2]
    if method == "MLP":
        return ("MLP", None)
    if method.endswith("-inf") or (method.endswith("-EDP") and key[3] == "edge-directed"):
        return (REFERENCE_CELLS[bench], eps)
    return None


def _mean_cell(values: list[float]) -> str:
    if not values:
        return "–"
    mean, lo, hi = bootstrap_ci(values)
    return f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(values)})"


def defaults_table(benches=tuple(FILES)) -> str:
    """Markdown table of every re-run setting of ``benches`` with >= 5 seeds."""
    lines = [
        "| benchmark | dataset | method | eps | old (protocol) | earlier re-run | new (public-v2) "
        "| diff | change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for bench in benches:
        old, generations = _settings(FILES[bench][0]), _generations(bench)
        new = _rerun(bench)
        for key, protocol in sorted(
            new, key=lambda k: (k[0][0], k[0][1], k[0][2] if k[0][2] is not None else 1e9)
        ):
            values = [v for v, _ in new[key, protocol]]
            old_rows, old_protocol = _old_rows(old, key, protocol)
            before = [v for v, _ in old_rows]
            runs = [g[key, protocol] for g in generations if (key, protocol) in g]
            earlier = [v for v, _ in runs[-2]] if len(runs) > 1 else []  # a re-run re-run
            mean = sum(values) / len(values)
            diff = f"{mean - sum(before) / len(before):+.2f}" if before else "–"
            dataset, method, eps = key[:3]
            moved = [what for commit, what in changes_of(method)
                     if not (old_rows and all(_contains(rev, commit) for _, rev in old_rows))]
            change = "; ".join(moved) or "none (the old rows had today's defaults)"
            if old_protocol != protocol:
                change += f"; {old_protocol} -> {protocol}"
            eps_s = "inf" if eps is None else f"{eps:g}"
            if key[3] == "edge-undirected":
                eps_s += " (undirected unit)"
            lines.append(
                f"| {bench} | {dataset} | {method} | {eps_s} | {_mean_cell(before)} "
                f"({old_protocol}) | {_mean_cell(earlier)} | {_mean_cell(values)} | {diff} | "
                f"{change} |"
            )
    return "\n".join(lines) + "\n"


DEFAULTS_HEADER = """# Benchmark rows before and after the default changes (issue 13)

Test accuracy %, mean and 95% bootstrap CI over seeds. Same grid scripts and seeds; the old
rows are those of the same protocol where the published table had some, else the published
``paper-v0`` rows (then the protocol changed too: see the change column). Edge level: the
directed unit.

"""


def defaults_plot(out: Path) -> Path:
    """Old rows, re-runs and the reference, test accuracy against epsilon per dataset."""
    plt = _plt()
    REFERENCE, SCHOOLS = S.REFERENCE, S.SCHOOLS  # noqa: N806

    datasets = sorted({k[0] for b in FILES for k, _ in _rerun(b)})
    fig, axes = plt.subplots(
        len(FILES), len(datasets), figsize=(4 * len(datasets), 3.2 * len(FILES)), squeeze=False
    )
    for row, bench in enumerate(FILES):
        old, new = _settings(FILES[bench][0]), _rerun(bench)
        for col, dataset in enumerate(datasets):
            ax = axes[row][col]
            keys = sorted(
                (k for k in new if k[0][0] == dataset and len(new[k]) >= 5),
                key=lambda k: (_label(k[0]).split()[0], k[0][2] or 1e9),
            )
            xs = list(range(len(keys)))
            labels = [_label(k[0]) for k in keys]
            for shift, source, name in ((-0.15, old, "old rows"), (0.15, new, "current defaults")):
                pts = []
                for x, (key, protocol) in zip(xs, keys, strict=True):
                    values = (
                        [v for v, _ in new[key, protocol]]
                        if source is new
                        else [v for v, _ in _old_rows(old, key, protocol)[0]]
                    )
                    if values:
                        mean, lo, hi = bootstrap_ci(values)
                        pts.append((x + shift, mean, mean - lo, hi - mean))
                if pts:
                    px, py, lo, hi = zip(*pts, strict=True)
                    ax.errorbar(px, py, yerr=[lo, hi], fmt="o", capsize=3, label=name)
            school = dataset.split("/")[-1]
            if school in SCHOOLS:
                ref = [
                    (x, REFERENCE[cell][SCHOOLS.index(school)])
                    for x, k in zip(xs, keys, strict=True)
                    if (cell := _reference_cell(bench, k[0])) in REFERENCE
                ]
                if ref:
                    rx, ry = zip(*ref, strict=True)
                    ax.plot(rx, ry, "k_", markersize=18, mew=2, label="reference code")
            ax.set_xticks(xs, labels)
            ax.set_title(f"{bench}: {dataset}", fontsize=9)
            ax.set_xlabel("setting (EDP: edge epsilon, directed; NDP: node epsilon)", fontsize=7)
            ax.tick_params(axis="x", labelsize=6, rotation=45)
            ax.set_ylabel("test accuracy %")
            ax.grid(alpha=0.3)
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def defaults(path: Path | None = None, doc: bool = True) -> str:
    """``results/defaults_change.{md,png}`` (and ``docs/img``), the DEFAULTS tables of
    ``docs/gap.md`` and ``docs/progap.md``: every re-run cell beside its old rows, from the
    files at :data:`GENERATIONS_REV`."""
    plot_path = defaults_plot(RESULTS / DEFAULTS_PLOT)
    if doc:
        shutil.copyfile(plot_path, DOCS / "img" / DEFAULTS_PLOT)
    names = [n for bench in FILES for n in FILES[bench]]
    rows = [r for n in names for r in _rows_at(n)]
    text = DEFAULTS_HEADER + made_by("defaults", names, rows, GENERATIONS_REV) + "\n\n"
    text += defaults_table()
    (RESULTS / DEFAULTS_OUT).write_text(text)
    for bench in FILES:
        if doc:
            splice_doc(f"{bench}.md", "DEFAULTS", defaults_table((bench,)).rstrip("\n"))
    return text



# == LPGNN (thesis Tables 3.2-3.4) ===========================================================
# thesis Tables 3.2-3.4 (accuracy %), Cora and Facebook; key: (dataset, table, method, x, y)
LPGNN_PAPER = {}
for ds, vals in {
    "cora": {
        "1B": [45.8, 62.3, 59.9, 58.5],
        "LP": [43.2, 57.8, 61.9, 58.1],
        "AG": [59.7, 62.7, 67.5, 77.2],
        "MB": [68.0, 64.6, 83.9, 84.0],
    },
    "musae-facebook": {
        "1B": [57.0, 76.3, 86.1, 84.0],
        "LP": [54.2, 72.5, 85.4, 84.8],
        "AG": [78.2, 85.6, 92.0, 92.4],
        "MB": [85.8, 91.0, 92.7, 92.9],
    },
}.items():
    for method, row in vals.items():
        for ex, v in zip([0.01, 0.1, 1.0, 2.0], row, strict=True):
            LPGNN_PAPER[(ds, "3.2", method, ex, None)] = v
for ds, vals in {
    "cora": {"ONES": 22.6, "OHD": 44.4, "RND": 26.4, 0.01: 63.0, 0.1: 62.4, 1.0: 69.3},
    "musae-facebook": {"ONES": 29.0, "OHD": 77.2, "RND": 35.2, 0.01: 85.0, 0.1: 85.1, 1.0: 84.9},
}.items():
    for k, v in vals.items():
        key = (ds, "3.3", k, 1.0, 1.0) if isinstance(k, str) else (ds, "3.3", "MB", k, 1.0)
        LPGNN_PAPER[key] = v
for ds, vals in {
    "cora": {"CE": [18.6, 25.5, 52.9], "FC": [18.6, 37.1, 75.1], "Drop": [42.9, 69.3, 78.4]},
    "musae-facebook": {
        "CE": [50.9, 55.2, 81.6],
        "FC": [68.9, 73.8, 88.9],
        "Drop": [75.1, 84.9, 90.7],
    },
}.items():
    for method, row in vals.items():
        for ey, v in zip([0.5, 1.0, 2.0], row, strict=True):
            LPGNN_PAPER[(ds, "3.4", method, 1.0, ey)] = v


def lpgnn_summary(rows: list[dict]) -> list[dict]:
    """A summary per (dataset, table, method, eps_x, eps_y, protocol), beside the thesis."""
    fields = ("dataset", "table", "method", "x_eps", "y_eps", ("unit", lambda r: "ldp"),
              ("protocol", row_protocol))
    order = {"3.2": 0, "3.3": 1, "3.4": 2}
    return summaries(rows, fields, lambda s: (
        s["dataset"], order[s["table"]], s["method"], s["x_eps"] or 1e9, s["y_eps"] or 1e9,
        s["protocol"] != LEGACY_PROTOCOL), lambda k, rs: dict(
        paper=LPGNN_PAPER.get((k["dataset"], k["table"], k["method"], k["x_eps"], k["y_eps"])),
        epsilon_reported=_reported(rs)))  # fmt: skip


def lpgnn_table(summary: list[dict]) -> str:
    # a protocol column only when the file mixes protocols
    with_protocol = len({s["protocol"] for s in summary}) > 1
    proto_head, proto_rule = ("protocol | ", "---|") if with_protocol else ("", "")
    lines = [
        f"| dataset | table | method | eps_x | eps_y | {proto_head}test acc % (95% CI) | thesis | "
        "eps reported | seeds | wall s | peak MB |",
        f"|---|---|---|---|---|{proto_rule}---|---|---|---|---|---|",
    ]
    for s in summary:
        ci = _ci(s)
        paper = "" if s["paper"] is None else f"{s['paper']:.1f}"
        rep = "inf" if s["epsilon_reported"] is None else f"{s['epsilon_reported']:.4g}"
        proto = f"{s['protocol']} | " if with_protocol else ""
        lines.append(
            f"| {s['dataset']} | {s['table']} | {s['method']} | {eps_text(s['x_eps'])} | "
            f"{eps_text(s['y_eps'])} | {proto}{ci} | {paper} | {rep} | {s['seeds']} | "
            f"{s['wall_s_median']} | {s['peak_rss_mb_max']:.0f} |"
        )
    return "\n".join(lines)


def lpgnn_footnote(summary: list[dict]) -> str:
    protocols = sorted({s["protocol"] for s in summary})
    return (
        "Unit: `ldp` (each node's features and label perturbed on the node; edges public). "
        f"Protocol: {', '.join(f'`{p}`' for p in protocols)} (`{LEGACY_PROTOCOL}`: features "
        f"min-max scaled from the data, positional split; `{PROTOCOL}`: public feature bounds "
        "(0, 1), identity-keyed split, isolated nodes kept, OS-entropy noise)."
    )


def lpgnn_plot(rows: list[dict], path: Path) -> None:
    """Table 3.2 of the ``paper-v0`` rows: accuracy against eps_x per feature mechanism."""
    summary, plt = lpgnn_summary(rows), _plt()
    datasets = sorted({s["dataset"] for s in summary})
    fig, axes = plt.subplots(
        1, max(1, len(datasets)), figsize=(5 * len(datasets), 4), squeeze=False
    )
    for ax, ds in zip(axes[0], datasets, strict=True):
        for method in ("1B", "LP", "AG", "MB"):
            pts = [
                s
                for s in summary
                if s["dataset"] == ds
                and s["table"] == "3.2"
                and s["method"] == method
                and s["protocol"] == LEGACY_PROTOCOL
            ]
            if pts:
                ax.plot(
                    [s["x_eps"] for s in pts],
                    [s["acc_mean"] for s in pts],
                    marker="o",
                    label=method,
                )
        ax.set_xscale("log")
        ax.set_xlabel("eps_x (eps_y = inf)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{ds}: Table 3.2")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)



def _meta(summary):
    """The ``.json`` beside a results file: commands, hardware and the summary of its rows."""
    return lambda rows: {"commands": sorted({r["command"] for r in rows}),
                         "hardware": rows[0]["hardware"], "summary": summary(rows)}


LPGNN = Table(
    "lpgnn_accuracy.jsonl", page="lpgnn.md", marker="BENCHMARK",
    body=lambda rows, path: [lpgnn_table(s := lpgnn_summary(rows)), "", lpgnn_footnote(s)],
    write_json=_meta(lpgnn_summary), plot=lpgnn_plot,
)  # fmt: skip



# == PGC (thesis Table 2.3, Figs. 2.2-2.3) ====================================================
# thesis Table 2.3: node classification micro-F1 % and link prediction AUC % at eps 1 / 5 / 9
PGC_PAPER = {}
for ds, paper_rows in {
    "citeseer": {
        "LM": ([37.0, 57.6, 68.5], [77.2, 81.6, 84.3]),
        "PM": ([36.8, 67.5, 71.0], [78.8, 84.2, 88.1]),
        "PGC": ([37.3, 70.7, 70.2], [79.0, 87.2, 90.0]),
        "RAW": ([69.6], [89.6]),
    },
    "cora": {
        "LM": ([54.4, 73.9, 78.8], [84.9, 87.9, 89.3]),
        "PM": ([56.6, 77.8, 80.9], [85.1, 88.6, 91.0]),
        "PGC": ([57.0, 80.2, 81.2], [85.4, 90.6, 92.1]),
        "RAW": ([81.4], [91.9]),
    },
    "musae-twitch-en": {
        "LM": ([58.7, 59.8, 60.1], [81.1, 82.2, 82.7]),
        "PM": ([59.0, 60.2, 61.3], [81.1, 82.5, 83.7]),
        "PGC": ([59.0, 61.2, 62.5], [81.1, 83.2, 84.6]),
        "RAW": ([62.8], [84.9]),
    },
}.items():
    for method, (node, link) in paper_rows.items():
        for task, vals in (("node", node), ("link", link)):
            if method == "RAW":
                PGC_PAPER[(ds, task, method, None)] = vals[0]
            else:
                for eps, v in zip([1.0, 5.0, 9.0], vals, strict=True):
                    PGC_PAPER[(ds, task, method, eps)] = v


def pgc_summary(rows: list[dict]) -> list[dict]:
    """A summary per (dataset, task, method, eps per feature, protocol), beside the thesis."""
    fields = ("dataset", "task", "method", "epsilon_per_feature",
              ("unit", lambda r: "none" if r["method"] == "RAW" else "ldp"),
              ("protocol", row_protocol))
    return summaries(rows, fields, lambda s: (
        s["dataset"], s["task"], s["method"], s["epsilon_per_feature"] or 1e9,
        s["protocol"] != LEGACY_PROTOCOL), lambda k, rs: dict(
        paper=PGC_PAPER.get((k["dataset"], k["task"], k["method"], k["epsilon_per_feature"])),
        epsilon_per_node=_reported(rs)), "test_metric")  # fmt: skip


def pgc_table(summary: list[dict]) -> str:
    lines = [
        "| dataset | task | method | eps / feature | test % (95% CI) | thesis | eps / node "
        "(reported) | seeds | wall s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        eps = "inf" if s["epsilon_per_feature"] is None else f"{s['epsilon_per_feature']:g}"
        ci = _ci(s)
        paper = "" if s["paper"] is None else f"{s['paper']:.1f}"
        node = "inf" if s["epsilon_per_node"] is None else f"{s['epsilon_per_node']:.6g}"
        task = "node cls. (acc)" if s["task"] == "node" else "link pred. (AUC)"
        if len({x["protocol"] for x in summary}) > 1:  # mixed file: say which row is which
            task += f", {s['protocol']}"
        lines.append(
            f"| {s['dataset']} | {task} | {s['method']} | {eps} | {ci} | {paper} | {node} | "
            f"{s['seeds']} | {s['wall_s_median']} | {s['peak_rss_mb_max']:.0f} |"
        )
    return "\n".join(lines)


def pgc_error_table(errors: dict) -> str:
    rows = errors["vs_epsilon"]
    eps = sorted({r["epsilon"] for r in rows})
    lines = [
        "| dataset | method | " + " | ".join(f"eps={e:g}" for e in eps) + " |",
        "|---|---|" + "---|" * len(eps),
    ]
    for ds in sorted({r["dataset"] for r in rows}):
        for method in ("LM", "PM", "PGC"):
            vals = {
                r["epsilon"]: r["mae"] for r in rows if r["dataset"] == ds and r["method"] == method
            }
            cells = " | ".join(f"{vals[e]:.4g}" if e in vals else "" for e in eps)
            lines.append(f"| {ds} | {method} | {cells} |")
    return "\n".join(lines)




def _pgc_notes(rows: list[dict]) -> list[str]:
    protocols = sorted({row_protocol(r) for r in rows})
    return ["", "Unit: `ldp` (each node's features perturbed on the node; edges and labels "
            "public), RAW `none`. Protocol: " + ", ".join(f"`{p}`" for p in protocols)
            + f" (`{LEGACY_PROTOCOL}`: features min-max scaled from the data, positional random "
            f"split; `{PROTOCOL}`: public feature bounds (0, 1), identity-keyed split, isolated "
            "nodes kept, OS-entropy noise)."]  # fmt: skip


def _pgc_error_made_by(errors: dict, path: Path) -> str:
    return (f"Generated by `python benchmarks/summarize.py pgc` from "
            f"`benchmarks/results/{path.name}` (command: `{errors.get('command')}`; "
            f"library revision {errors.get('revision') or 'not recorded'}).")  # fmt: skip


def _pgc_error_notes(errors: dict) -> list[str]:
    bounds = (" from the public bounds (0, 1))." if errors.get("protocol")
              else " by per-column min-max over the data).")  # fmt: skip
    return ["", f"Unit: `ldp`. Protocol: `{errors.get('protocol', LEGACY_PROTOCOL)}` "
            "(features scaled to [0, 1]" + bounds]


PGC = [
    Table("pgc_accuracy.jsonl", page="pgc.md", marker="BENCHMARK",
          body=lambda rows, path: [pgc_table(pgc_summary(rows))], notes=_pgc_notes,
          write_json=_meta(pgc_summary)),
    Table("pgc_estimation_error.json", page="pgc.md", marker="ESTIMATION",
          provenance=_pgc_error_made_by, body=lambda errors, path: [pgc_error_table(errors)],
          notes=_pgc_error_notes),
]  # fmt: skip



# == attacks, diagnosis, recalibration (docs/audits.md) =====================================
def _verdict(cells: dict[float, tuple[float, float, float]]) -> str:
    """The papers' finding, checked on one row: private cells whose CI covers 0.5, and
    whether the non-private cell's CI is above 0.5."""
    private = [c for e, c in cells.items() if not math.isinf(e)]
    at_chance = sum(lo <= 0.5 <= hi for _, lo, hi in private)
    parts = [f"{at_chance}/{len(private)} private at chance"] if private else []
    if math.inf in cells:
        above = cells[math.inf][1] > 0.5
        parts.append("non-private above chance" if above else "non-private not above chance")
    return "; ".join(parts)


def attack_tables(rows: list[dict], path: Path, min_seeds: int = 1) -> list[str]:
    """The markdown tables of ``rows`` (one per attack), with the papers' finding per row; a
    cell with fewer than ``min_seeds`` seeds (a run still going) shows only its count."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        groups[(r["attack"], r["dataset"], r["method"], r["target_epsilon"])].append(r["auc"])
    lines: list[str] = []
    for attack, title in (("mia", "Node membership inference (TSTF)"),
                          ("link", "Link stealing (posterior similarity)")):  # fmt: skip
        keys = sorted({k[1:3] for k in groups if k[0] == attack})
        if not keys:
            continue
        epss = sorted({k[3] for k in groups if k[0] == attack})
        check = attack == "mia"
        lines += ["", f"#### {title}", "",
                  "| dataset | method | " + " | ".join(f"eps={e:g}" for e in epss)
                  + (" | finding |" if check else " |"),
                  "|---|---|" + "---|" * (len(epss) + check)]  # fmt: skip
        for ds, method in keys:
            cells, stats = [], {}
            for e in epss:
                v = groups.get((attack, ds, method, e))
                if not v or len(v) < min_seeds:
                    cells.append(f"running (n={len(v)})" if v else "—")
                    continue
                stats[e] = bootstrap_ci(v)
                mean, lo, hi = stats[e]
                cells.append(f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] (n={len(v)})")
            verdict = [_verdict(stats)] if check else []
            lines.append(f"| {ds} | {method} | " + " | ".join(cells + verdict) + " |")
        counterparts = sorted(
            {f"{m}: {S.inf_model(m)}" for d, m in keys
             if (attack, d, m, math.inf) in groups and S.inf_model(m) != S.resolve(m)[0]}
        )  # fmt: skip
        if counterparts:
            lines += ["", "eps=inf fits the non-private counterpart (" + "; ".join(counterparts)
                      + ")."]  # fmt: skip
    return "\n".join(lines).strip("\n").split("\n")


ATTACKS = Table(
    "audit_attacks.jsonl", title="Attacks against trained models", page="audits.md",
    marker="ATTACKS", doc_note=" Commands in `results/audit_attacks.md`.", doc_intro=False,
    intro=lambda rows: [
        "AUC of the attack in % (50: chance), mean and 95% bootstrap CI over seeds (each seed: "
        "its own split, target fit, shadow fit and attack model); n: seeds. *finding*: how "
        "many private cells have a CI that covers 50, and whether the non-private cell's CI "
        "is above 50 (the papers: about 50 for private models, clearly above non-privately). "
        "Commands:", "", *_commands(rows), ""],
    body=attack_tables, options={"min_seeds": 10},
)  # fmt: skip

#: the AUCs of a diagnosis row (``mia_diagnosis.py``)
DIAGNOSIS_METRICS = (
    "target_confidence", "shadow_confidence", "shadow_holdout", "tstf", "split_degree",
    "split_label",
)  # fmt: skip


def diagnosis_table(rows: list[dict], path: Path) -> list[str]:
    """Per (dataset, method, epsilon): every AUC's mean and CI, then the seeds one by one."""
    lines = ["| dataset | method | eps | " + " | ".join(DIAGNOSIS_METRICS)
             + " | seeds below 0.5 (tstf) | null SD of one seed's AUC |",
             "|---|---|---|" + "---|" * (len(DIAGNOSIS_METRICS) + 2)]  # fmt: skip
    for (ds, method, eps), rs in sorted(grouped(rows, ("dataset", "method",
                                                       "target_epsilon")).items()):
        cells = [f"{100 * m:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                 for m, lo, hi in (bootstrap_ci([r[x] for r in rs]) for x in DIAGNOSIS_METRICS)]
        below = sum(r["tstf"] < 0.5 for r in rs)
        n = sum(r["nonmembers"] for r in rs) / len(rs)
        null_sd = math.sqrt((2 * n + 1) / (12 * n * n))
        lines.append(f"| {ds} | {method} | {'inf' if math.isinf(eps) else f'{eps:g}'} | "
                     + " | ".join(cells)
                     + f" | {below} / {len(rs)} | {100 * null_sd:.1f} ({n:.0f} per class) |")
        lines += ["", "Per seed (AUC %):", "", "| seed | " + " | ".join(DIAGNOSIS_METRICS) + " |",
                  "|---|" + "---|" * len(DIAGNOSIS_METRICS)]  # fmt: skip
        lines += [f"| {r['seed']} | " + " | ".join(f"{100 * r[m]:.1f}" for m in DIAGNOSIS_METRICS)
                  + " |" for r in sorted(rs, key=lambda r: r["seed"])]  # fmt: skip
    return lines


DIAGNOSIS = Table(
    "mia_diagnosis.jsonl", title="Membership inference below chance: a diagnosis",
    page="audits.md", marker="DIAGNOSIS", doc_intro=False,
    doc_note=" Commands in `results/mia_diagnosis.md`:",
    intro=lambda rows: ["AUC % (0.5: chance), mean and 95% bootstrap CI over seeds; see "
                        "`benchmarks/mia_diagnosis.py` for what each column measures. Commands:",
                        "", *_commands(rows), ""],
    body=diagnosis_table,
)  # fmt: skip

RECALIBRATION = Table(
    "mia_recalibration.jsonl", page="audits.md", marker="RECALIBRATION", doc_intro=False,
    title="Noise multipliers of the MIA plans, before and after the accountant fix",
    intro=lambda rows: [*_commands(rows), ""], group=(), order=None,
    columns=(("dataset", col("dataset")), ("method", col("method")),
             ("eps", col("target_epsilon", "{:g}")), ("seed", col("seed")),
             ("n_train", col("n_train")), ("z (fixed)", col("z_fixed", "{:.4f}")),
             ("z (before the fix)", col("z_before_fix", "{:.4f}")),
             ("the old z under the fixed accountant",
              lambda k, rs: "within the target" if (old := rs[0]["old_z_over_target"]) is None
              else old.split(" would ")[1].split(";")[0])),
)  # fmt: skip


# == issue 27: the honest degree bound, the audit's power (docs/privacy.md, audits.md) =======
def _unpaired_ci1(a, b, n_boot: int = 1000, seed: int = 0) -> str:
    """mean(a) - mean(b) with a 95% bootstrap CI (each sample resampled on its own)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = rng.choice(a, (n_boot, len(a))).mean(1) - rng.choice(b, (n_boot, len(b))).mean(1)
    lo, hi = np.percentile(d, [2.5, 97.5])
    return f"{a.mean() - b.mean():.1f} [{lo:.1f}, {hi:.1f}]"


#: the ProGAP grid's rows before its node-level cells were re-run at the declared degree
#: bounds (commit 9d6d978 replaced them): the observed-D rows the degree-bound table cites
OBSERVED_D_REV = "8f54b2b"
OBSERVED_D_FILE = "progap_accuracy.jsonl"


def _observed_d_rows(rows, dataset: str, method: str) -> list[float]:
    """Test accuracies (%) of the node-level ``method`` rows of ``rows`` (an earlier grid) at
    :data:`settings.HONEST_EPSILON`, protocol ``public-v2`` and the observed maximum degree."""
    rows = [
        r for r in rows
        if r["dataset"] == dataset and r["method"] == method and r.get("unit") == "node"
        and r.get("target_epsilon") == S.HONEST_EPSILON and r.get("protocol") == PROTOCOL
        and r.get("degree_bound") == S.OBSERVED_MAX_DEGREE[dataset]
    ]  # fmt: skip
    return [100 * r["test_acc"] for r in rows]


def degree_bound_table(rows: list[dict], path: Path) -> list[str]:
    """Node-level GAP / ProGAP at the observed maximum degree against the declared public
    bound (``honest_degree_bound.py``), with the paired cost per seed. A cell run at the public
    D only takes its observed-D rows from ``results/progap_accuracy.jsonl`` as it was at
    :data:`OBSERVED_D_REV` (unpaired)."""
    rows = [r for r in rows if r.get("test_acc") is not None]
    lines = [
        "Test accuracy (%), mean [95% bootstrap CI] over seeds, node level, epsilon "
        f"{S.HONEST_EPSILON:g}, protocol public-v2. *observed D*: the graph's maximum degree "
        "(read off the private graph, the bound used before issue 27); *public D*: declared from "
        "public knowledge (`benchmarks/settings.py`, `DEGREE_BOUND_SOURCE`). Cost: the paired "
        "difference public - observed over the same seeds (same split).",
        "",
        "| dataset | method | observed D | acc | public D | acc | cost (points) | seeds |",
        "|---|---|---:|---|---:|---|---|---:|",
    ]
    for dataset in S.DATASETS:
        for method in ("GAP-NDP", "ProGAP-NDP"):
            by = {kind: {r["seed"]: 100 * r["test_acc"] for r in rows if r["dataset"] == dataset
                         and r["method"] == f"{method}[{kind} D]"}
                  for kind in S.DEGREE_BOUNDS}  # fmt: skip
            seeds = sorted(set(by["observed"]) & set(by["public"]))
            note = ""
            if seeds:
                obs = [by["observed"][s] for s in seeds]
                pub = [by["public"][s] for s in seeds]
                diff = ci(list(np.subtract(pub, obs)))
            elif by["public"] and (old := _observed_d_rows(
                    _rows_at(OBSERVED_D_FILE, OBSERVED_D_REV), dataset, method)):  # fmt: skip
                # observed-D rows of an earlier run (same protocol and settings): unpaired
                seeds = sorted(by["public"])
                pub, obs = [by["public"][s] for s in seeds], old
                diff = _unpaired_ci1(pub, obs)
                note = (f" (observed D: {len(obs)} seeds of {OBSERVED_D_FILE} at "
                        f"{OBSERVED_D_REV}, unpaired)")
            else:
                continue
            lines.append(
                f"| {dataset} | {method}{note} | {S.OBSERVED_MAX_DEGREE[dataset]:,} | "
                f"{ci(obs)} | {S.MAX_DEGREE[dataset]:,} | {ci(pub)} | {diff} | {len(seeds)} |")
    return lines + [
        "",
        "Command: `OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python "
        "benchmarks/honest_degree_bound.py --seeds 10 [--methods ...] [--datasets ...]`, then "
        "`python benchmarks/honest_degree_bound.py --summary`. Single thread, 2 shared CPU "
        f"cores; {len(rows)} runs, {sum(r['cpu_s'] for r in rows) / 60:.1f} CPU-minutes in the "
        "runs (dataset loading not counted). ProGAP on musae-facebook ran at the public D only "
        "(`--datasets musae-facebook --methods ProGAP-NDP --bounds public`). Not re-run: the "
        "other epsilons and the other node-level tables (docs/gap.md, docs/progap.md).",
        "",
    ]


DEGREE_BOUND = Table(
    "honest_degree_bound.jsonl", title="Honest node-level degree bound: what it costs (issue 27)",
    provenance=False, body=degree_bound_table, end="",
)  # fmt: skip


def _caught(rows: list[dict]) -> str:
    """``rate [95% Clopper-Pearson CI]`` of the audits that caught the broken mechanism."""
    from lightning_dpgnn.attacks.audit import clopper_pearson

    k, n = sum(r["caught"] for r in rows), len(rows)
    lo, hi = clopper_pearson(k, n, 0.05)
    return f"{k / n:.2f} [{lo:.2f}, {hi:.2f}]"


AUDIT_POWER = Table(
    "audit_power.jsonl", title="Detection power of the aggregation audit (half the recorded noise)",
    provenance=False, end="",
    intro=["A Gaussian aggregation that draws half the noise it records, audited on one "
           f"friendship (edge-undirected), delta {S.AUDIT_POWER_DELTA:g}, 95% confidence; caught "
           "= the audit's lower bound exceeds the ledger's epsilon for one call. Rate with a 95% "
           "Clopper-Pearson interval.", ""],
    group=("setting", "trials"),
    order=lambda k: (list(S.AUDIT_POWER_SETTINGS).index(k["setting"]), k["trials"]),
    columns=(("setting", col("setting")),
             ("epsilon of one call", col("epsilon_accounted", "{:.3f}")),
             ("trials per hypothesis", col("trials", "{:,}")),
             ("caught", lambda k, rs: f"{sum(r['caught'] for r in rs)}/{len(rs)}"),
             ("rate [95% CI]", lambda k, rs: _caught(rs)),
             ("median bound", lambda k, rs: f"{np.median([r['epsilon_lower'] for r in rs]):.3f}"),
             ("CPU s per audit", lambda k, rs: f"{np.median([r['cpu_s'] for r in rs]):.1f}")),
    rule="|---|---:|---:|---:|---|---:|---:|",
    notes=["", "Command: `OMP_NUM_THREADS=1 python benchmarks/audit_power.py --runs 40`, single "
           "thread.", ""],
)  # fmt: skip


# == reference parity (docs/progap.md) =====================================================
def _parity_accs(rows: list[dict], method: str, eps, school: str) -> list[float]:
    return [100 * r["test_acc"] for r in rows if r["school"] == school
            and r["method"] == method and r["epsilon_target"] == eps]  # fmt: skip


def parity_table(rows: list[dict], path: Path) -> list[str]:
    """Every reference cell beside ours (95% CI, seeds)."""
    lines = ["| method | eps | school | reference | ours (mean, 95% CI) | seeds | diff |",
             "|---|---|---|---|---|---|---|"]
    for (m, eps), refs in S.REFERENCE.items():
        for method in (m, m + S.COUNTS):
            for school, ref in zip(S.SCHOOLS, refs, strict=True):
                if accs := _parity_accs(rows, method, eps, school):
                    mean, lo, hi = bootstrap_ci(accs)
                    lines.append(f"| {method} | {eps_text(eps)} | {school} | {ref:.2f} | "
                                 f"{mean:.2f} [{lo:.2f}, {hi:.2f}] | {len(accs)} | "
                                 f"{mean - ref:+.2f} |")  # fmt: skip
    return lines


#: the GAP/ProGAP cells of the label-counts table and their names there
NAMES = {"GAP-K2": "GAP K=2", "ProGAP-K3": "ProGAP K=3", "ProGAP-K2": "ProGAP K=2"}


def label_counts_table(rows: list[dict]) -> list[str]:
    """The GAP/ProGAP cells: the reference, the papers' model (``label_counts=False``) and our
    defaults (label counts on; 95% CI, seeds, margin over the reference), for
    ``docs/progap.md``."""

    def cell(method: str, eps: float | None, school: str):
        accs = _parity_accs(rows, method, eps, school)
        return bootstrap_ci(accs) + (len(accs),) if accs else None

    head = " | ".join(f"{s} ref | `label_counts=False` | defaults [95% CI] (n), margin"
                      for s in S.SCHOOLS)
    lines = [f"| method | ε | {head} |", "|---|---|" + "---|---|---|" * len(S.SCHOOLS)]
    for (method, eps), refs in S.REFERENCE.items():
        if method not in NAMES:
            continue
        parts = []
        for school, ref in zip(S.SCHOOLS, refs, strict=True):
            d, c = cell(method, eps, school), cell(method + S.COUNTS, eps, school)
            mean = "–" if d is None else f"{d[0]:.2f}"
            counted = "–" if c is None else (
                f"**{c[0]:.2f}** [{c[1]:.2f}, {c[2]:.2f}] ({c[3]}), {c[0] - ref:+.1f}")
            parts.append(f"{ref:.2f} | {mean} | {counted}")
        lines.append(f"| {NAMES[method]} | {eps_text(eps, '∞')} | " + " | ".join(parts) + " |")
    return lines


PARITY = Table(
    "reference_parity.jsonl", title="Parity with the reference implementation (issue 13)",
    page="progap.md", marker="LABEL-COUNTS",
    intro=lambda rows: [
        "Commands: " + "; ".join(_commands(rows, "`{}`")), "",
        "Test accuracy %, mean over seeds with 95% bootstrap CI; the reference is the mean of 5",
        "repeats of the authors' code with its defaults. Edge level: directed unit, delta 1e-7.",
        f"`{S.COUNTS}`: the same cell with `label_counts=True`, today's default (one more Gaussian",
        "aggregation, of the training labels, inside the same epsilon); the cells without it run",
        "the papers' model (`label_counts=False`).", ""],
    body=parity_table, doc_body=label_counts_table,
)  # fmt: skip


# == speed and scale (docs/performance.md), the reference's speed, DDP (distributed.md) =====
def speed_table(rows: list[dict], path: Path) -> list[str]:
    """The latest measurement of each target."""
    lines = ["| target | measured | CPU | target | met | runs | load (1 min) | command |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in {r["target"]: r for r in rows}.items():
        limit = "" if r["limit"] is None else f"< {r['limit']:g} {r['unit']}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "no")
        loads = ", ".join(f"{run['load'][0]:g}" for run in r["runs"] if "load" in run)
        key = "fit_test_cpu_s" if "fit+test" in name else "process_cpu_s"
        cpus = [run[key] for run in r["runs"] if key in run]
        cpu = f"{statistics.median(cpus):.2f} s" if cpus and r["unit"] == "s" else ""
        lines.append(f"| {name} | {r['value']:.2f} {r['unit']} | {cpu} | {limit} | {met} | "
                     f"{len(r['runs'])} | {loads} | `{r['command']}` |")
    return lines


SPEED = Table(
    "speed.jsonl", title="Speed and scale (issue 18)", body=speed_table,
    intro=lambda rows: [
        f"Environment: {rows[-1]['environment'] if rows else {}}", "",
        "Median of the runs of the latest measurement of each target; `load` is the 1-minute",
        "load average before each run (2 cores shared with other jobs: above ~2 the machine is",
        "oversubscribed and wall times stretch).", "",
        "`CPU` is the median CPU time of the same runs (fit + test in process, or the whole",
        "process): what the wall time would be on an idle core, one thread.", ""],
)  # fmt: skip

#: the thread count of the scale plot's series (issue 32: idle machine, both cores)
SCALE_THREADS = 2


def _scale_points(path: Path, threads: int = SCALE_THREADS
                  ) -> dict[str, list[tuple[float, float, float]]]:
    """``(edges, fit + test wall s, peak RSS MiB)`` per method at ``threads`` torch threads: the
    latest ``scale`` row of each set of schools (sparse-feature reader) and the latest
    FB-scale row (all schools)."""
    suffix = "" if threads == 1 else f" [{threads} threads]"
    latest: dict[str, dict] = {}
    for r in load_rows(path):
        run = r["runs"][0] if r.get("runs") else {}
        if not r["target"].endswith(suffix) or (
            suffix == "" and r["target"].endswith(" threads]")
        ):
            continue
        target = r["target"][: len(r["target"]) - len(suffix)]
        if target.startswith("scale ") and "features" in run:
            latest[target] = run
        elif target in ("FB GAP-EDP K=2 end to end", "FB ProGAP-EDP K=3 end to end"):
            latest[target] = run
    points: dict[str, list[tuple[float, float, float]]] = {"GAP": [], "ProGAP": []}
    for target, run in latest.items():
        method = target.split()[1] if target.startswith("scale ") else target.split()[1][:-4]
        points[method].append((run["num_edges"], run["fit_test_s"], run["rss_mib"]))
    return {m: sorted(p) for m, p in points.items()}


def plot_scale(path: Path, out: Path, threads: int = SCALE_THREADS) -> Path | None:
    """Fit + test wall time and peak RSS against the number of edges, per method, at
    ``threads`` torch threads (the runs of an idle machine)."""
    points = _scale_points(path, threads)
    if not any(points.values()):
        return None
    plt = _plt()
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9, 3.5))
    for method, pts in points.items():
        if not pts:
            continue
        edges, wall, rss = zip(*pts, strict=True)
        label = "GAP K=2" if method == "GAP" else "ProGAP K=3"
        ax_t.plot([e / 1e6 for e in edges], wall, "o-", label=label)
        ax_m.plot([e / 1e6 for e in edges], [m / 1024 for m in rss], "o-", label=label)
    unit = "thread" if threads == 1 else "threads"
    ax_t.set(xlabel="directed edges (millions)", ylabel="fit + test, wall time (s)",
             xscale="log", yscale="log", title=f"time ({threads} {unit})")
    ax_m.set(xlabel="directed edges (millions)", ylabel="peak RSS (GiB)", xscale="log",
             title="peak memory")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for ax in (ax_t, ax_m):
        ax.set_xticks([1, 2, 5, 10, 20, 50])
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"Facebook100 schools merged in growing sets, edge epsilon 1, {threads} CPU "
                 f"{unit}, idle machine", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    return out


def speed(path: Path | None = None, doc: bool = True, plot: bool = True) -> str:
    """``results/speed.md``; ``plot``: also ``docs/img/performance_scale.png`` (the scale
    targets' fit + test CPU time and peak RSS against the number of edges)."""
    path = path or RESULTS / SPEED.source
    md = publish("speed", SPEED, path, doc)
    if plot and doc:
        plot_scale(path, DOCS / "img" / "performance_scale.png")
    return md


def _latest(rows: list[dict]) -> list[dict]:
    """The rows of the last invocation of ``reference_speed.py``."""
    return [r for r in rows if r["invocation"] == rows[-1]["invocation"]]


def reference_speed_table(rows: list[dict], path: Path) -> list[str]:
    """Medians of the latest invocation of ``reference_speed.py``, per method and side, and
    the ratios reference / ours."""
    latest = _latest(rows)
    first = latest[0]
    epochs = "their defaults" if first["epochs"] is None else f"{first['epochs']} (not a result)"
    deltas = ", ".join(sorted({f"{r['ref_delta']:g}" for r in latest if r["side"] == "reference"}))
    lines = [
        f"Command: `{first['command']}`; the reference at commit {first['reference_commit'][:12]} "
        f"({first['reference_python']}), {first['school']}, epochs: {epochs}, one thread, "
        f"paired ABBA runs started {first['invocation']}; the reference's delta (its `auto`): "
        f"{deltas}.",
        "",
        "Medians over the runs; `fit+test` is in process (ours: `Trainer.fit` + `test`, with the "
        "datamodule's setup; the reference: its `method.run`, from the loaded graph), `process` "
        "the whole process from the parent, `CPU` its CPU time. `ratio` = reference / ours "
        "(above 1: ours is faster). `load` is the 1-minute load average before the runs (min-max; "
        "2 cores: above ~1 another job shares the machine).",
        "",
        "| method | side | runs | fit+test (s) | process (s) | process CPU (s) | peak RSS (MiB) "
        "| test acc (%) | load before | load after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def med(rs: list[dict], key: str) -> float:
        return float(statistics.median(r[key] for r in rs))

    ratios = []
    for method in dict.fromkeys(r["method"] for r in latest):
        sides = {s: [r for r in latest if r["method"] == method and r["side"] == s]
                 for s in ("ours", "reference")}
        for side, rs in sides.items():
            if not rs:
                continue
            before = [r["load_before"][0] for r in rs]
            after = [r["load_after"][0] for r in rs]
            acc = [100 * r["test_acc"] for r in rs]
            lines.append(
                f"| {method} | {side} | {len(rs)} | {med(rs, 'fit_test_s'):.2f} | "
                f"{med(rs, 'process_s'):.2f} | {med(rs, 'process_cpu_s'):.2f} | "
                f"{med(rs, 'rss_mib'):.0f} | {statistics.mean(acc):.1f} | "
                f"{min(before):g}-{max(before):g} | {min(after):g}-{max(after):g} |")
        if all(sides.values()):
            ours, ref = sides["ours"], sides["reference"]
            ratios.append(f"| {method} | " + " | ".join(
                f"{med(ref, k) / med(ours, k):.2f}" for k in ("fit_test_s", "process_s",
                                                              "process_cpu_s")) + " |")
    return lines + ["", "| method | fit+test ratio | process ratio | process CPU ratio |",
                    "|---|---|---|---|", *ratios]


REFERENCE_SPEED = Table(
    "reference_speed.jsonl", title="Side by side with the authors' GAP/ProGAP code (issue 32)",
    provenance=lambda rows, path: made_by("reference_speed", [path.name], _latest(rows)),
    body=reference_speed_table,
)  # fmt: skip

DDP_NOTE = (
    "On a machine shared with other jobs, N processes also get N shares of the contended "
    "cores, so a speed-up above N measures the scheduler, not DDP; compare processes on an "
    "idle machine for DDP's own scaling. Accuracy and epsilon are what the comparison is for: "
    "the same epsilon, accuracy within the run-to-run noise."
)


def ddp_table(rows: list[dict]) -> str:
    lines = ["| recipe | processes | runs | wall time (s) | speed-up | test accuracy | epsilon |",
             "|---|---|---|---|---|---|---|"]
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        base = None
        for devices in sorted({r["devices"] for r in rows if r["recipe"] == recipe}):
            sel = [r for r in rows if r["recipe"] == recipe and r["devices"] == devices]
            wall = float(np.mean([r["wall_s"] for r in sel]))
            base = wall if base is None else base
            acc = [r["test_acc"] for r in sel]
            lines.append(
                f"| {recipe} | {devices} | {len(sel)} | {wall:.1f} | {base / wall:.2f}x | "
                f"{np.mean(acc):.4f} (min {min(acc):.4f}, max {max(acc):.4f}) | "
                f"{max(r['epsilon'] for r in sel):g} |"
            )
    return "\n".join(lines)


def _median_per_rank(rows: list[dict], field: str) -> dict[str, float]:
    """Median of ``row[field][rank]`` over ``rows``, for each rank."""
    ranks = sorted({k for r in rows for k in r.get(field, {})})
    return {k: float(np.median([r[field][k] for r in rows if k in r.get(field, {})]))
            for k in ranks}


def _rank_cell(values: dict[str, float]) -> str:
    return ", ".join(f"{v:.0f}" for v in values.values()) or "-"


def memory_table(rows: list[dict]) -> str:
    """Median peak resident memory per rank (MiB) over the repeats of each setting."""
    lines = ["| recipe | graph | processes | sharded rows | runs | peak RSS per rank, MiB "
             "(rank 0, rank 1) | RSS at fit start | peak during the fit | fit peak above "
             "start | wall time (s) | test accuracy | epsilon |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (recipe, graph, devices, shard), sel in grouped(
            rows, ("recipe", "graph", "devices", "shard_rows")).items():  # fmt: skip
        start, fit = _median_per_rank(sel, "fit_start_mib"), _median_per_rank(sel, "fit_peak_mib")
        above = {k: fit[k] - start[k] for k in fit if k in start}
        lines.append(
            f"| {recipe} | {graph} | {devices} | {'yes' if shard and devices > 1 else 'no'} | "
            f"{len(sel)} | {_rank_cell(_median_per_rank(sel, 'peak_rss_mib'))} | "
            f"{_rank_cell(start)} | {_rank_cell(fit)} | {_rank_cell(above)} | "
            f"{np.median([r['wall_s'] for r in sel]):.1f} | "
            f"{np.median([r['test_acc'] for r in sel]):.4f} | "
            f"{max(r['epsilon'] for r in sel):g} |")
    return "\n".join(lines)


def ddp_report(rows: list[dict], path: Path) -> list[str]:
    """``results/ddp.md`` from every row of ``ddp.jsonl`` (both modes)."""
    wall = [r for r in rows if r.get("mode", "wall") == "wall"]
    memory = [r for r in rows if r.get("mode") == "memory"]
    parts = []
    if wall:
        loads = [r["load_avg_1m"] for r in wall]
        parts.append(
            f"# 1 vs N processes (DDP, {wall[0]['accelerator']})\n\n"
            f"Command: `{wall[0].get('bench_command', 'python benchmarks/ddp.py --seeds 1')}`\n\n"
            f"Machine: {wall[0]['cpus']} CPU cores ({wall[0]['machine']}), shared with other "
            f"jobs: 1-minute load average during the runs {min(loads):.1f}-{max(loads):.1f}. "
            "Wall time is the whole `dpgnn fit` command (process launch, data loading, "
            f"calibration, fit, test). {DDP_NOTE}\n\n{ddp_table(wall)}\n")
    if memory:
        loads = [r["load_avg_1m"] for r in memory]
        parts.append(
            "## Peak memory per rank\n\n"
            "Commands: " + ", ".join(f"`{c}`" for c in dict.fromkeys(
                r["bench_command"] for r in memory)) + "\n\n"
            "Peak resident set size (`VmHWM`) of each rank's process over the whole `dpgnn fit` "
            "command; its resident set when the fit starts (the graph loaded) and its peak "
            "during the fit alone (the high-water mark reset at fit start, "
            "`benchmarks/fit_memory.py`), all in MiB; short fits (2 epochs per stage: memory "
            "does not grow with epochs), medians of the repeats; "
            f"{memory[0]['cpus']} CPU cores, load average "
            f"{min(loads):.1f}-{max(loads):.1f}, `OMP_NUM_THREADS=1`, `nice -n 10`. It includes "
            "the Python and PyTorch runtime of each process (the `csbm` rows: a 2,000-node "
            "graph, nothing else). See docs/distributed.md, \"Memory per rank\", for the "
            f"formula these figures check.\n\n{memory_table(memory)}\n")
    return "\n".join(parts).split("\n")


DDP = Table("ddp.jsonl", provenance=False, body=ddp_report, end="")


# == GW-LDP (docs/gwldp.md) =================================================================
GWLDP_FILES = {"gwldp_accuracy.jsonl": "gwldp-results", "gwldp_accuracy_gin.jsonl": "gwldp-gin",
               "gwldp_accuracy_proteins.jsonl": "gwldp-proteins",
               "gwldp_accuracy_nested.jsonl": "gwldp-nested",
               "gwldp_accuracy_resplit.jsonl": "gwldp-resplit",
               "gwldp_accuracy_proteins_resplit.jsonl": "gwldp-proteins-resplit"}
GWLDP_NAMES = {
    "size_only": "size only: SVM on abs(n_i - n_j) (no embedding at all)",
    "gw_A": "GW_A of the raw graphs (shortest paths; reads the graphs in the clear)",
    "gcn_end_to_end": "federated GNN, end to end (its own test accuracy)",
    "clear_H": "GW of the clear FL embeddings H (non-private)",
    "ldp_H": "GW of LDP embeddings H* (matrix multi-bit, n public)",
    "ldp_padded": f"GW of LDP embeddings H*, padded to n_max = {S.GWLDP_N_MAX} (n protected)",
    "noise_only": "GW of H* of a constant H (noise and size only)",
    "paper_code": "GW of the paper-code release (std {std}; NOT differentially private)",
    "dpfedavg_end_to_end": "federated GNN trained with client-level DP-FedAvg (epsilon {fe:g}, "
                           "clip {clip:g}), end to end",
    "dpfedavg_ldp_H": "GW of LDP embeddings H* of the DP-FedAvg model (FedAvg epsilon {fe:g}, "
                      "clip {clip:g}; n public)",
}  # fmt: skip


def _gwldp_name(row: str, r: dict) -> str:
    std = r.get("paper_std")
    return GWLDP_NAMES[row].format(
        std="1/n of the first graph" if std is None else f"{std:g}",
        fe=r.get("fedavg_epsilon", 0), clip=r.get("fedavg_clip", 0))


GWLDP_PROVENANCE = (
    "Provenance: a row's `revision` is the checkout when its seed's rows were written. The "
    "first pass (every row but `ldp_padded`) ran the library as of 235f85c, loaded when it "
    "started; the `ldp_padded` pass ran it as of 45709ad, retraining the FedAvg models from "
    "the same seeds (not checked to be bit-identical). The library commits in between "
    "(cluster_release, fgw_alpha, building the GNN at construction when sizes are given) do "
    "not touch the code these rows run. Full command: `OMP_NUM_THREADS=1 "
    "DPGNN_DATA=../shared/datasets python benchmarks/gwldp_accuracy.py` (single-threaded; about "
    "13 CPU-minutes for the first pass and at most 8 for the padded one)."
)



def gwldp_table(rows: list[dict], path: Path) -> list[str]:
    """The GW-LDP MUTAG table of ``gwldp_accuracy.py``'s rows: SVM and kNN-5 test accuracy
    per (row, epsilon), mean and 95% bootstrap CI over seeds, and the setting it ran
    (for ``results/gwldp_accuracy.jsonl``: the note on its GCN rows, :data:`GWLDP_PROVENANCE`)."""
    provenance = path.name == "gwldp_accuracy.jsonl"
    gnn = rows[0]["gnn"].upper() if rows else "GCN"
    protocol = rows[0].get("protocol", "split") if rows else "split"
    nested = protocol in ("nested", "resplit")  # a row per seed holds its splits' accuracies
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["row"], r.get("epsilon"), r.get("paper_std"), r.get("fedavg_epsilon"),
               r.get("graphs"))  # fmt: skip
        groups.setdefault(key, []).append(r)
    lines = [
        f"| row | epsilon per graph | {'seeds x splits' if nested else 'seeds'} | SVM acc % "
        "(95% CI) | kNN-5 acc % (95% CI) |",
        "|---|---|---|---|---|",
    ]
    order = {r: i for i, r in enumerate(S.GWLDP_ROWS)}
    for (row, eps, _std, fe, graphs), rs in sorted(
            groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][3] or 0, kv[0][1] or 0,
                                            kv[0][2] or 0)):  # fmt: skip
        accs = [100 * a for r in rs for a in (r["fold_accs"] if nested else [r["test_acc"]])]
        m, lo, hi = bootstrap_ci(accs)
        knn = [100 * a for r in rs if "knn5_acc" in r
               for a in r.get("knn_fold_accs", [r["knn5_acc"]])]
        kcell = "n/a"
        if knn:
            km, klo, khi = bootstrap_ci(knn)
            kcell = f"{km:.1f} ({klo:.1f}-{khi:.1f})"
        e = "inf" if row in ("clear_H", "gw_A", "gcn_end_to_end") else (
            "none (not DP)" if row == "paper_code" else ("-" if eps is None else f"{eps:g}"))
        if row.startswith("dpfedavg"):
            reported = [r["reported_epsilon"] for r in rs if "reported_epsilon" in r]
            e = (f"{'-' if eps is None else f'{eps:g}'} + FedAvg {fe:g}"
                 + (f" (report: {np.mean(reported):.1f})" if reported else ""))
        count = f"{len(rs)} x {len(rs[0]['fold_accs'])}" if nested else f"{len(rs)}"
        name = _gwldp_name(row, rs[0]) + ("" if graphs == rows[0].get("graphs") else
                                          " [all graphs]" if graphs is None else
                                          f" [{graphs} graphs]")  # fmt: skip
        lines.append(f"| {name} | {e} | {count} | {m:.1f} ({lo:.1f}-{hi:.1f})"
                     f" | {kcell} |")  # fmt: skip
    rev = sorted({r["revision"] for r in rows})
    cmds = "; ".join(dict.fromkeys(f"`{r['command']}`" for r in rows))
    r0 = rows[0] if rows else {}
    data = r0.get("dataset", "mutag").upper()
    if r0.get("graphs") is not None:
        same = r0.get("sample_seed")
        data += (f", a seeded sample of {r0['graphs']} graphs "
                 + ("(the same for every seed)" if same is not None else "per seed"))
    svm = {
        "nested": "SVM by the FGW nested CV over all graphs (10 outer stratified 90/10 splits, "
                  "(C, gamma) by 10 inner folds); CI over seeds x outer splits",
        "resplit": "the GW matrix of one seed's release scored on 10 random stratified 7:2:1 "
                   "splits of all graphs (SVM (C, gamma) chosen on each split's validation "
                   "graphs; kNN-5 on train + validation); CI over seeds x splits",
    }.get(protocol, "SVM (C, gamma) chosen on the validation graphs")
    return ("\n".join(lines) + (
        f"\n\n{data}, 10 clients (Dirichlet 0.5), 7:2:1 per client, FedAvg {gnn} "
        f"{r0.get('rounds')} rounds; {svm}. Revision(s): {', '.join(rev)}. Command(s): {cmds}\n"
        + (f"\n{GWLDP_PROVENANCE}\n" if provenance and gnn == "GCN" else "")
    )).split("\n")



GWLDP = [Table(name, page="gwldp.md", marker=marker, body=gwldp_table, end="",
               title=lambda r: f"GW-LDP ({r[0]['dataset'].upper()}, {r[0]['gnn'].upper()})")
         for name, marker in GWLDP_FILES.items()]  # fmt: skip


def _clustering_note(key: dict, rows: list[dict]) -> list[str]:
    r0 = next(r for r in rows if r["row"] != "random")
    return ["", f"{key['dataset']} {key['hops']}-hop ego graphs of the largest component, "
            f"{key['graphs']} centres per seed, k = {r0['k']}; FedAvg GCN {r0['rounds']} rounds. "
            f"Revision(s): {', '.join(sorted({r['revision'] for r in rows}))}. Command: "
            f"`{r0['command']}`", ""]


GWLDP_CLUSTERING = Table(
    "gwldp_clustering.jsonl", title="GW-LDP clustering (ego graphs)", page="gwldp.md",
    marker="gwldp-clustering", end="",
    sections=("dataset", ("hops", lambda r: r.get("hops", 1)), "graphs"),
    heading=lambda k: [f"**{k['dataset']}, {k['hops']}-hop ego graphs**", ""],
    footer=_clustering_note, group=("row", "epsilon", "method"),
    order=lambda k: (S.GWLDP_CLUSTERING_ROWS.index(k["row"]), k["epsilon"] or 0, k["method"]),
    columns=(("row", col("row")),
             ("epsilon per graph",
              lambda k, rs: "-" if k["row"] == "random" else eps_text(k["epsilon"])),
             ("clustering", col("method")), ("seeds", lambda k, rs: f"{len(rs)}"),
             ("NMI (95% CI)", lambda k, rs: ci([r["nmi"] for r in rs], 3, "()")),
             ("ARI (95% CI)", lambda k, rs: ci([r["ari"] for r in rs], 3, "()"))),
)  # fmt: skip

GWLDP_TASKS = {
    "fit": "FedAvg fit, MUTAG, 10 clients, GCN, {rounds} rounds, 1 thread",
    "allpairs": "all pairs of MUTAG, GW_A (POT CG), {jobs} joblib workers",
    "proteins_pairs": "random pairs of PROTEINS, GW_A (POT CG), {jobs} joblib workers",
}


def _timing_notes(rows: list[dict]) -> list[str]:
    """The median FedAvg fit per library label, and the commands."""
    fits = {label: [r["seconds"] for r in rs] for (task, label), rs
            in grouped(rows, ("task", "label")).items() if task == "fit"}
    fits_line = ["", "FedAvg fit, median over runs: " + "; ".join(
        f"{label} {statistics.median(v):.1f} s ({len(v)} runs, {min(v):.1f}-{max(v):.1f})"
        for label, v in fits.items()) + "."] if fits else []
    return [*fits_line, "", "Command(s): " + "; ".join(
        dict.fromkeys(f"`{r['command']}`" for r in rows))]


GWLDP_TIMING = Table(
    "gwldp_timing.jsonl", title="GW-LDP timings", page="gwldp.md", marker="gwldp-timing",
    group=(), order=None, notes=_timing_notes,
    columns=(("task", lambda k, rs: GWLDP_TASKS[rs[0]["task"]].format(rounds=rs[0].get("rounds"),
                                                                     jobs=rs[0].get("jobs"))),
             ("library", lambda k, rs: f"{rs[0]['label']} ({rs[0]['revision']})"),
             ("pairs", lambda k, rs: f"{rs[0]['pairs']:,}" if "pairs" in rs[0] else "-"),
             ("seconds", col("seconds", "{:.1f}")),
             ("all pairs (estimate)", lambda k, rs: (
                 f"{rs[0]['all_pairs']:,} pairs: {rs[0]['all_pairs_estimate_s'] / 60:.0f} min"
                 if rs[0]["task"] == "proteins_pairs" else "-")),
             ("load avg before / after",
              lambda k, rs: f"{rs[0]['load_before']:.2f} / {rs[0]['load_after']:.2f}"),
             ("CPUs", col("cpus"))),
)  # fmt: skip


# == the zoo's builds (docs/zoo.md) ========================================================
def _card(key: dict) -> tuple[dict, list[float]]:
    """The accuracy a zoo entry's card states and the benchmark runs it cites."""
    sys.path.insert(0, str(ROOT))  # the repository's zoo/
    from zoo import registry

    entry = registry.entry(key["entry"])
    return entry.accuracy or {}, entry.benchmark_accuracies()


def _overlap(key: dict, rows: list[dict]) -> str:
    a = _card(key)[0]
    _, lo, hi = bootstrap_ci([100 * r["test_acc"] for r in rows])
    return "–" if not a else ("yes" if lo <= a["high"] and a["low"] <= hi else "NO")


ZOO_CHECK = Table(
    "zoo_check.jsonl", title="Zoo builds against their cards", page="zoo.md", marker="zoo-check",
    group=("entry", "split", ("overrides", lambda r: " ".join(r.get("overrides") or []))),
    columns=(("entry", col("entry")),
             ("split", lambda k, rs: "the recipe's" if k["split"] == "recipe" else "seed k"),
             ("overrides", lambda k, rs: k["overrides"] or "–"),
             ("builds", lambda k, rs: f"{len(rs)}"),
             ("builds' mean (95% CI)", lambda k, rs: ci([r["test_acc"] for r in rs], 1, "(–)",
                                                        100)),
             ("builds' range", lambda k, rs: f"{min(100 * r['test_acc'] for r in rs):.1f}–"
                                              f"{max(100 * r['test_acc'] for r in rs):.1f}"),
             ("card: benchmark mean (95% CI)",
              lambda k, rs: f"{a['mean']} ({a['low']}–{a['high']})" if (a := _card(k)[0]) else "–"),
             ("benchmark runs' range",
              lambda k, rs: f"{min(b):.1f}–{max(b):.1f}" if (b := _card(k)[1]) else "–"),
             ("intervals overlap", _overlap)),
)  # fmt: skip


# == PoinDP =========================================================================
# == PoinDP =========================================================================
POINDP_TABLE1_ROWS = ("GCN", "MLP", "paper-code", "PoinDP-inf", "PoinDP", "GAP", "ProGAP")
POINDP_METRICS = (("acc", "accuracy"), ("weighted_f1", "weighted-F1"), ("macro_f1", "macro-F1"),
                  ("paper_swapped_wf1", 'paper\'s "W-F1" (swapped)'),
                  ("link_auc", "link-stealing AUC"))  # fmt: skip


def _poindp_ci(rs: list[dict], metric: str) -> str:
    return ci([r[metric] for r in rs], scale=100)


def poindp_tables(rows: list[dict], path: Path) -> list[str]:
    """PoinDP's tables from ``poindp_accuracy.py``'s rows: Table 1 beside the paper (epsilon 1;
    the non-private and paper-code rows), the epsilon sweep, Table 2's ablations (epsilon 1).
    Mean and 95% bootstrap CI over seeds, in %."""
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["dataset"], r["row"], r.get("target_epsilon")), []).append(r)
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    head = " | ".join(name for _, name in POINDP_METRICS)
    out = []
    for ds in datasets:
        paper = S.POINDP_PAPER_TABLE1.get(ds, {})
        out += [f"#### {ds}: Table 1 (edge level, epsilon 1 where private)", "",
                f"| model | epsilon | seeds | {head} |",
                "|---" * (3 + len(POINDP_METRICS)) + "|"]  # fmt: skip
        for name, (wf1, mf1) in paper.items():
            out.append(f"| paper: {name} | {'1' if name == 'PoinDP' else 'inf'} | 5 | {mf1} | "
                       f"| | {wf1} | |")
        for name in POINDP_TABLE1_ROWS:
            for eps in (None, 1.0):
                rs = cells.get((ds, name, eps))
                if not rs:
                    continue
                spent = ("inf (NOT DP)" if name == "paper-code" else
                         "inf" if eps is None else f"{max(r['epsilon'] for r in rs):.3g}")
                vals = " | ".join(_poindp_ci(rs, m) for m, _ in POINDP_METRICS)
                out.append(f"| ours: {name} | {spent} | {len(rs)} | {vals} |")
        sweep = sorted({e for (d, n, e) in cells if d == ds and n in ("PoinDP", "GAP")
                        and e is not None})  # fmt: skip
        out += ["", f"#### {ds}: epsilon sweep (edge level, one undirected edge; accuracy)", "",
                "| epsilon | PoinDP | GAP |", "|---|---|---|"]  # fmt: skip
        for e in sweep:
            vals = [(_poindp_ci(cells[(ds, n, e)], "acc") + f" ({len(cells[(ds, n, e)])})")
                    if (ds, n, e) in cells else "" for n in ("PoinDP", "GAP")]  # fmt: skip
            out.append(f"| {e:g} | {vals[0]} | {vals[1]} |")
        paper2 = S.POINDP_PAPER_TABLE2.get(ds, {})
        out += ["", f"#### {ds}: Table 2 ablations (epsilon 1)", "",
                "| variant | beta | seeds | accuracy | weighted-F1 | paper's \"W-F1\" (swapped) "
                "| paper's Table 2 W-F1 |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for name, row in (("PoinDP", "PoinDP"), *[(n, n) for n in S.POINDP_ABLATIONS]):
            rs = cells.get((ds, row, 1.0))
            if not rs:
                continue
            beta = rs[0].get("beta")
            out.append(f"| {name} | {beta:.3g} | {len(rs)} | {_poindp_ci(rs, 'acc')} | "
                       f"{_poindp_ci(rs, 'weighted_f1')} | {_poindp_ci(rs, 'paper_swapped_wf1')} | "
                       f"{paper2.get(name, '')} |")
        out.append("")
    r0 = rows[0]
    out.append(f"Split {r0['split']} (train/val/test) keyed on node identity by each seed; "
               f"seeds {sorted({r['seed'] for r in rows})}. Command: `{r0['command']}`")
    return out



POINDP = Table("poindp_accuracy.jsonl", title="PoinDP on Cora and CiteSeer", page="poindp.md",
               marker="poindp-results", body=poindp_tables)


# == HeteroRR (docs/heterorr.md) ============================================================
def heterorr_feature_error_table(rows: list[dict], path: Path) -> list[str]:
    """Fig. 10 of the HeteroRR supplement: the exact E|y - x| per feature of every mechanism
    against eps_f, with the Monte-Carlo check's 95% CI (``heterorr_feature_error.py``)."""
    dims = sorted({r["d"] for r in rows})
    lines = [
        "Expected absolute error E|y_i - x_i| of one feature (x_i ~ U[0, 1], exact; averaged "
        "over the features), per-node budget eps_f. In brackets: the Monte-Carlo check's 95% "
        f"bootstrap CI over {rows[0]['seeds']} seeds x {rows[0]['mc_rows']:,} rows; "
        "`*` marks an analytic value outside it. A percentile bootstrap over 10 seeds covers "
        "about 90%, so a few stars come by chance (the FeatureRR and Three-Outputs cells "
        "starred in the 10-seed run of 2026-11-26 fall inside with 60 seeds). "
        "The stars of Piecewise and Hybrid at eps_f >= 32, d = 1 "
        "are the MC's blind spot: their outer pieces have mass e^(-eps/2) < 1e-7 and carry "
        "half of their (tiny) exact error, an event the 200,000 draws almost never see.",
    ]
    for d in dims:
        sub = [r for r in rows if r["d"] == d]
        names = [m for m in S.HETERORR_ERROR_MECHANISMS if any(r["mechanism"] == m for r in sub)]
        eps_list = sorted({r["eps_f"] for r in sub})
        lines += ["", f"**d = {d}**", "", "| mechanism | " + " | ".join(
            f"eps_f {e:g}" for e in eps_list) + " |", "|---|" + "---|" * len(eps_list)]
        for name in names:
            cells_ = []
            for e in eps_list:
                r = next((r for r in sub if r["mechanism"] == name and r["eps_f"] == e), None)
                if r is None:
                    cells_.append("")
                    continue
                lo, hi = r["mc_ci95"]
                star = "" if r["analytic_in_ci"] else "*"
                cells_.append(f"{r['analytic']:.3g}{star} [{lo:.3g}, {hi:.3g}]")
            lines.append(f"| {name} | " + " | ".join(cells_) + " |")
            if name == "FeatureRR (skewed theta)":
                lines.append("| ... weighted by theta (exact) | " + " | ".join(
                    f"{_theta_weighted(r):.3g}" for e in eps_list for r in sub
                    if r["mechanism"] == name and r["eps_f"] == e) + " |")  # fmt: skip
    return lines


def _theta_weighted(row: dict) -> float:
    """``sum_i theta_i E|y_i - x_i|``: the error where the skewed weights say it matters."""
    theta = S.skewed_theta(row["d"]).tolist()
    return sum(t * e for t, e in zip(theta, row["analytic_by_feature"], strict=True))



def _plot_feature_error(rows: list[dict], path: Path) -> None:
    plt = _plt()
    dims = sorted({r["d"] for r in rows})
    fig, axes = plt.subplots(1, len(dims), figsize=(5.2 * len(dims), 4.0), squeeze=False)
    for ax, d in zip(axes[0], dims, strict=True):
        for i, name in enumerate(S.HETERORR_ERROR_MECHANISMS):
            pts = sorted((r["eps_f"], r["analytic"]) for r in rows
                         if r["d"] == d and r["mechanism"] == name)  # fmt: skip
            if pts:
                style = "-" if name.startswith("FeatureRR") else "--"
                ax.plot(*zip(*pts, strict=True), style, marker="o", ms=3, label=name,
                        color=f"C{i}")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("eps_f (per node)")
        ax.set_ylabel("E|y - x| per feature")
        ax.set_title(f"d = {d} features in [0, 1]")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)



HETERORR_FEATURE_ERROR = Table(
    "heterorr_feature_error.jsonl", title="HeteroRR: expected error of the feature mechanisms",
    page="heterorr.md", marker="heterorr-feature-error", body=heterorr_feature_error_table,
    plot=_plot_feature_error, doc_image="heterorr_feature_error.png",
)  # fmt: skip

HETERORR_EDGES = Table(
    "heterorr_edges.jsonl", title="HeteroRR: released graphs against the true one (Fig. 11)",
    page="heterorr.md", marker="heterorr-edges",
    intro=[f"RMS distance between the random-walk matrices P^k (k = 1..{S.HETERORR_HOPS}) of "
           "the true and the released graph, mean [95% bootstrap CI] over seeds, x 1e-3 "
           "(lower is closer). EdgeRR at rho = 1 is PrivHRG; LapGraph and EdgeRand make every "
           "edge private (flat in rho); public-only (the private edges dropped) and the empty "
           "graph spend nothing.", ""],
    group=("dataset", "epsilon", "method", "rho"),
    order=lambda k: (k["dataset"], k["epsilon"], _rank(S.HETERORR_FIG11_METHODS, k["method"], 9),
                     k["rho"] or 0),
    columns=(("dataset", col("dataset")), ("eps_e", col("epsilon", "{:g}")),
             ("method", lambda k, rs: "EdgeRR (PrivHRG)" if k["method"] == "EdgeRR"
              and k["rho"] == 1.0 else k["method"]),
             ("rho", lambda k, rs: eps_text(k["rho"], "all")),
             ("seeds", lambda k, rs: f"{len(rs)}"),
             (f"RMS mean of {S.HETERORR_HOPS} hops",
              lambda k, rs: ci([r["rms_mean"] for r in rs], 3, scale=1e3)),
             ("RMS hop 1", lambda k, rs: ci([r["rms_hop1"] for r in rs], 3, scale=1e3)),
             ("released / true edges", lambda k, rs: (
                 f"{np.mean([r['released_edges'] / r['true_edges'] for r in rs]):.2f}")),
             ("release s (median)",
              lambda k, rs: f"{np.median([r['release_s'] for r in rs]):.1f}")),
)  # fmt: skip

#: the order of HeteroRR's releases and mechanisms in its accuracy table
HETERORR_ORDER = S.HETERORR_EDGE_METHODS + S.HETERORR_FEATURE_MECHANISMS
HETERORR_PART_TITLES = {
    "edges": "Edges (rho = share of private edges; LapGraph / EdgeRand: every edge private)",
    "graphs": "Larger graphs (eps_e = 1)",
    "features": "Features at equal eps_f per node (edges public)",
}

HETERORR_ACCURACY = Table(
    "heterorr_accuracy.jsonl", title="HeteroRR: GCN accuracy and link stealing",
    page="heterorr.md", marker="heterorr-accuracy",
    intro=["GCN test accuracy (%), mean [95% bootstrap CI] over seeds."],
    sections=("part",), section_order=lambda k: S.HETERORR_PARTS.index(k["part"]),
    heading=lambda k: ["", f"**{HETERORR_PART_TITLES[k['part']]}**", ""],
    group=("dataset", "method", "epsilon", "rho"),
    order=lambda k: (k["dataset"], k["epsilon"] or 0, _rank(HETERORR_ORDER, k["method"], 99),
                     k["method"], k["rho"] or 0),
    columns=(("dataset", col("dataset")), ("method", col("method")),
             ("eps", lambda k, rs: eps_text(k["epsilon"], "-")),
             ("rho", lambda k, rs: eps_text(k["rho"], "-")),
             ("seeds", lambda k, rs: f"{len(rs)}"),
             ("test accuracy", lambda k, rs: ci([r["test_acc"] for r in rs], scale=100.0)),
             ("link-stealing AUC (private edges)",
              lambda k, rs: ci([r["attack_auc"] for r in rs], 3)
              if all("attack_auc" in r for r in rs) else "")),
)  # fmt: skip


# == command line: every table's name -> its declaration(s) or function =====================
TABLES = {
    "gap": functools.partial(accuracy, "gap"),
    "progap": functools.partial(accuracy, "progap"),
    "baselines": functools.partial(accuracy, "baselines"),
    "defaults": defaults,
    "lpgnn": LPGNN,
    "pgc": PGC,
    "attacks": ATTACKS,
    "diagnosis": DIAGNOSIS,
    "recalibration": RECALIBRATION,
    "parity": PARITY,
    "speed": speed,
    "ddp": DDP,
    "degree_bound": DEGREE_BOUND,
    "audit_power": AUDIT_POWER,
    "gwldp": GWLDP,
    "gwldp_clustering": GWLDP_CLUSTERING,
    "zoo_check": ZOO_CHECK,
    "poindp": POINDP,
    "gwldp_timing": GWLDP_TIMING,
    "heterorr_feature_error": HETERORR_FEATURE_ERROR,
    "heterorr_edges": HETERORR_EDGES,
    "heterorr_accuracy": HETERORR_ACCURACY,
    "reference_speed": REFERENCE_SPEED,
}
