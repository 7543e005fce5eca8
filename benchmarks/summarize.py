"""The one summarizer: every table, plot and docs splice the benchmarks make, from their
results files (``results/*.jsonl``), never from hand-typed numbers.

    python benchmarks/summarize.py [TABLE ...] [--no-doc] [--min-seeds N]

``TABLE`` (default ``gap``; ``all`` for every one) is one of :data:`TABLES`:

==============  ============================================  ==================================
table           reads (``benchmarks/results/``)               writes / splices
==============  ============================================  ==================================
gap             gap_accuracy.jsonl                            gap_accuracy.{md,json,png};
                                                              docs/gap.md BENCHMARK
progap          progap_accuracy.jsonl, gap_accuracy.jsonl     progap_accuracy.{md,json,png};
                                                              docs/progap.md BENCHMARK
baselines       baselines.jsonl (+ gap, progap rows)          baselines.{md,json,png};
                                                              docs/baselines.md BENCHMARK,
                                                              docs/{gap,progap}.md BASELINES
defaults        the GAP/ProGAP files and their re-run         defaults_change.{md,png},
                generations at :data:`GENERATIONS_REV`        docs/img/defaults_change.png;
                (git history)                                 docs/{gap,progap}.md DEFAULTS
lpgnn           lpgnn_accuracy.jsonl                          lpgnn_accuracy.{md,json,png};
                                                              docs/lpgnn.md BENCHMARK
pgc             pgc_accuracy.jsonl, pgc_estimation_error.json pgc_accuracy.{md,json},
                                                              pgc_estimation_error.md;
                                                              docs/pgc.md BENCHMARK, ESTIMATION
attacks         audit_attacks.jsonl                           audit_attacks.md;
                                                              docs/audits.md ATTACKS
diagnosis       mia_diagnosis.jsonl                           mia_diagnosis.md;
                                                              docs/audits.md DIAGNOSIS
recalibration   mia_recalibration.jsonl                       mia_recalibration.md;
                                                              docs/audits.md RECALIBRATION
parity          reference_parity.jsonl                        reference_parity.md;
                                                              docs/progap.md LABEL-COUNTS
speed           speed.jsonl                                   speed.md,
                                                              docs/img/performance_scale.png
reference_speed reference_speed.jsonl                         reference_speed.md (none
                                                              without rows)
ddp             ddp.jsonl                                     ddp.md
degree_bound    honest_degree_bound.jsonl (+ progap rows)     honest_degree_bound.md
audit_power     audit_power.jsonl                             audit_power.md
gwldp           gwldp_accuracy{,_gin,_resplit,_nested,        gwldp_accuracy*.md;
                _proteins,_proteins_resplit}.jsonl            docs/gwldp.md gwldp-results,
                                                              gwldp-gin, -resplit, -nested,
                                                              -proteins, -proteins-resplit
gwldp_clustering gwldp_clustering.jsonl                       gwldp_clustering.md;
                                                              docs/gwldp.md gwldp-clustering
zoo_check       zoo_check.jsonl (+ the rows each zoo entry   zoo_check.md; docs/zoo.md
                cites)                                        zoo-check
poindp          poindp_accuracy.jsonl                         poindp_accuracy.md;
                                                              docs/poindp.md poindp-results
gwldp_timing    gwldp_timing.jsonl                            gwldp_timing.md;
                                                              docs/gwldp.md gwldp-timing
heterorr_*      heterorr_{feature_error,edges,accuracy}.jsonl heterorr_*.md (+ the error
                                                              plot); docs/heterorr.md
                                                              heterorr-feature-error, -edges,
                                                              -accuracy
==============  ============================================  ==================================

``--no-doc`` writes the results folder only. The scripts that write their table after a run
(``reference_parity.py``, ``speed.py``, ``ddp.py``), the ``--summarize`` flags of
``audit_attacks.py``, ``mia_diagnosis.py``, ``mia_recalibration.py``, ``gwldp_accuracy.py``,
``gwldp_clustering.py`` and ``poindp_accuracy.py`` and the ``--summary``
flags of ``honest_degree_bound.py`` and ``audit_power.py`` call the functions here. Every
generated table says which command and which library revisions made it (:func:`made_by`),
except ``degree_bound`` and ``audit_power``, which keep the format they were committed with
(the commands; the honest-bound rows record their revisions, the audit-power rows none).

GAP / ProGAP / baselines: a setting is (dataset, method, epsilon, protected unit,
preprocessing protocol). Rows written before units and protocols were recorded count as
protocol ``paper-v0`` with the unit ``common.row_unit`` gives them (edge level:
``edge-directed``, the thesis' unit). The old node-level GAP/ProGAP rows (degree bounded by
sampling D = 100 edges per node, an unstable projection, so their epsilon was not delivered)
are left out of every table and plot; a separate table puts them, struck through, beside the
new node-level rows.
"""

from __future__ import annotations

import argparse
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
    cell_of,
    invalid_reason,
    is_valid,
    load_rows,
    row_protocol,
    row_unit,
    seed_stats,
    splice,
)


def made_by(table: str, sources, rows: list[dict], rev: str | None = None) -> str:
    """The provenance line of a generated table: the command that made it, the files it read
    and the library revisions of their rows (each row also records the command that ran it)."""
    revisions = list(dict.fromkeys(r["revision"] for r in rows if r.get("revision")))
    missing = sum(not r.get("revision") for r in rows)
    files = ", ".join(f"`benchmarks/results/{s}`" for s in sources)
    where = f" at revision {rev} (git history)" if rev else ""
    parts = [f"{len(rows)} rows"]
    if revisions:
        parts.append("library revisions " + ", ".join(revisions))
    if missing == len(rows):
        parts = [f"{len(rows)} rows, written before rows recorded the library revision"]
    elif missing:
        parts.append(f"{missing} of them without one, written before rows recorded it")
    return (f"Generated by `python benchmarks/summarize.py {table}` from {files}{where} "
            f"({'; '.join(parts)}).")  # fmt: skip


def _splice_doc(doc: bool, page: str, begin: str, end: str, md: str) -> None:
    """Splice ``md`` between the markers of ``docs/<page>`` (when ``doc`` and the page has
    them)."""
    path = DOCS / page
    if doc and path.exists() and begin in (text := path.read_text()) and end in text:
        splice(path, begin, end, md)


def _publish(path: Path, default_name: str, title: str, md: str, page: str, marker: str,
             doc: bool) -> str:
    """Write ``md`` under ``# title`` beside ``path`` (``.md``) and, when ``path`` is the
    results folder's ``default_name``, splice it into ``docs/<page>`` between the
    ``<!-- marker-begin -->`` / ``<!-- marker-end -->`` comments. Returns ``md``."""
    path.with_suffix(".md").write_text(f"# {title}\n\n{md}")
    if path.resolve() == (RESULTS / default_name).resolve():
        _splice_doc(doc, page, f"<!-- {marker}-begin -->", f"<!-- {marker}-end -->",
                    md.rstrip("\n"))
    return md


def _eps(eps) -> str:
    return "inf" if eps is None else f"{eps:g}"


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
BEGIN, END = "<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"
SPLICE_BEGIN, SPLICE_END = "<!-- BASELINES:BEGIN -->", "<!-- BASELINES:END -->"
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
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[setting(r)].append(r)
    out = []
    for (dataset, method, eps, unit, protocol), rs in sorted(
        groups.items(),
        key=lambda kv: (
            kv[0][0],
            kv[0][1],
            kv[0][3],
            kv[0][4] != LEGACY_PROTOCOL,
            -1 if kv[0][2] is None else kv[0][2],
        ),
    ):
        bounds = sorted({r["degree_bound"] for r in rs if r.get("degree_bound") is not None})
        out.append(
            dict(
                dataset=dataset,
                method=method,
                target_epsilon=eps,
                unit=unit,
                protocol=protocol,
                degree_bound=bounds[0] if len(bounds) == 1 else bounds or None,
                epsilon_max=max((r["epsilon"] or 0.0) for r in rs) if eps is not None else None,
                defaults=rs[0].get("defaults", "old"),
                **seed_stats(rs),
            )
        )
    return out


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
            f"| {s['dataset']} | {s['method']} | {_eps(s['target_epsilon'])} | "
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
            f"{s.get('defaults', 'old')} | {_eps(s['target_epsilon'])} | {_ci(s)} | {s['seeds']} | "
            f"{s['wall_s_median']} | {s['cpu_s_median']} | {s['peak_rss_mb_max']:.0f} |"
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
                f"| {dataset} | {unit} | {protocol} | {_eps(eps)} | {a} | {s['acc_mean']:.1f} | "
                f"{b} | {base['acc_mean']:.1f} | {s['acc_mean'] - base['acc_mean']:+.1f} | "
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
            f"| {dataset} | {method} | {_eps(eps)} | {_ci(d)} | {_ci(u)} | "
            f"{u['acc_mean'] - d['acc_mean']:+.1f} | {d['seeds']} / {u['seeds']} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def _variant(s: dict) -> str:
    """Legend label: the method, its unit and protocol."""
    unit = {"edge-directed": "edge-dir", "edge-undirected": "edge-undir"}.get(s["unit"], s["unit"])
    return f"{s['method']} [{unit}, {s['protocol']}]"


def plot(summary: list[dict], path: Path, curves, lines) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


setting = cell_of  # (dataset, method, epsilon, unit, protocol): the rows of one table cell


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


def accuracy(name: str = "gap", doc: bool = True) -> str:
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
    _splice_doc(doc, bench["doc"], BEGIN, END, md)
    for page, prefix in bench.get("splice", {}).items():
        rows_md = baseline_rows(summary, bench["compare"], prefix, stem)
        _splice_doc(doc, page, SPLICE_BEGIN, SPLICE_END, rows_md)
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
DEFAULTS_BEGIN, DEFAULTS_END = "<!-- DEFAULTS:BEGIN -->", "<!-- DEFAULTS:END -->"


def defaults_plot(out: Path) -> Path:
    """Old rows, re-runs and the reference, test accuracy against epsilon per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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


def defaults(doc: bool = True) -> str:
    """``results/defaults_change.{md,png}`` (and ``docs/img``), the DEFAULTS tables of
    ``docs/gap.md`` and ``docs/progap.md``: every re-run cell beside its old rows, from the
    files at :data:`GENERATIONS_REV`."""
    import shutil

    plot_path = defaults_plot(RESULTS / DEFAULTS_PLOT)
    if doc:
        shutil.copyfile(plot_path, DOCS / "img" / DEFAULTS_PLOT)
    names = [n for bench in FILES for n in FILES[bench]]
    rows = [r for n in names for r in _rows_at(n)]
    text = DEFAULTS_HEADER + made_by("defaults", names, rows, GENERATIONS_REV) + "\n\n"
    text += defaults_table()
    (RESULTS / DEFAULTS_OUT).write_text(text)
    for bench in FILES:
        page = DOCS / f"{bench}.md"
        if doc and DEFAULTS_BEGIN in page.read_text() and DEFAULTS_END in page.read_text():
            head, rest = page.read_text().split(DEFAULTS_BEGIN, 1)
            page.write_text(head + DEFAULTS_BEGIN + "\n" + defaults_table((bench,))
                            + rest[rest.index(DEFAULTS_END):])  # fmt: skip
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
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        key = (r["dataset"], r["table"], r["method"], r["x_eps"], r["y_eps"], row_protocol(r))
        groups[key].append(r)
    out = []
    order = {"3.2": 0, "3.3": 1, "3.4": 2}
    for key, rs in sorted(
        groups.items(),
        key=lambda kv: (
            kv[0][0],
            order[kv[0][1]],
            kv[0][2],
            kv[0][3] or 1e9,
            kv[0][4] or 1e9,
            kv[0][5] != LEGACY_PROTOCOL,
        ),
    ):
        eps = [r["epsilon"] for r in rs]
        out.append(
            dict(
                dataset=key[0],
                table=key[1],
                method=key[2],
                x_eps=key[3],
                y_eps=key[4],
                unit="ldp",
                protocol=key[5],
                paper=LPGNN_PAPER.get(key[:5]),
                epsilon_reported=None if any(e is None for e in eps) else max(eps),
                **seed_stats(rs),
            )
        )
    return out


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
        ci = f"{s['acc_mean']:.1f} ({s['acc_ci95'][0]:.1f}–{s['acc_ci95'][1]:.1f})"
        paper = "" if s["paper"] is None else f"{s['paper']:.1f}"
        rep = "inf" if s["epsilon_reported"] is None else f"{s['epsilon_reported']:.4g}"
        proto = f"{s['protocol']} | " if with_protocol else ""
        lines.append(
            f"| {s['dataset']} | {s['table']} | {s['method']} | {_eps(s['x_eps'])} | "
            f"{_eps(s['y_eps'])} | {proto}{ci} | {paper} | {rep} | {s['seeds']} | "
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


def lpgnn_plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def lpgnn(doc: bool = True, path: Path | None = None) -> str:
    """``results/lpgnn_accuracy.{json,md,png}`` and the table in ``docs/lpgnn.md``."""
    path = path or RESULTS / "lpgnn_accuracy.jsonl"
    rows = load_rows(path)
    summary = lpgnn_summary(rows)
    base = path.with_suffix("")
    commands = sorted({r["command"] for r in rows})
    meta = {"commands": commands, "hardware": rows[0]["hardware"], "summary": summary}
    base.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    md = (made_by("lpgnn", [path.name], rows) + "\n\n" + lpgnn_table(summary) + "\n\n"
          + lpgnn_footnote(summary))  # fmt: skip
    base.with_suffix(".md").write_text(md + "\n")
    lpgnn_plot(summary, base.with_suffix(".png"))
    _splice_doc(doc, "lpgnn.md", BEGIN, END, md)
    return md


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
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        key = (r["dataset"], r["task"], r["method"], r["epsilon_per_feature"], row_protocol(r))
        groups[key].append(r)
    out = []
    for key, rs in sorted(
        groups.items(),
        key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3] or 1e9, kv[0][4] != LEGACY_PROTOCOL),
    ):
        eps = [r["epsilon"] for r in rs]
        out.append(
            dict(
                dataset=key[0],
                task=key[1],
                method=key[2],
                epsilon_per_feature=key[3],
                unit="none" if key[2] == "RAW" else "ldp",
                protocol=key[4],
                paper=PGC_PAPER.get(key[:4]),
                epsilon_per_node=None if any(e is None for e in eps) else max(eps),
                **seed_stats(rs, "test_metric"),
            )
        )
    return out


def pgc_table(summary: list[dict]) -> str:
    lines = [
        "| dataset | task | method | eps / feature | test % (95% CI) | thesis | eps / node "
        "(reported) | seeds | wall s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        eps = "inf" if s["epsilon_per_feature"] is None else f"{s['epsilon_per_feature']:g}"
        ci = f"{s['acc_mean']:.1f} ({s['acc_ci95'][0]:.1f}–{s['acc_ci95'][1]:.1f})"
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


ESTIMATION_BEGIN, ESTIMATION_END = "<!-- ESTIMATION:BEGIN -->", "<!-- ESTIMATION:END -->"


def pgc(doc: bool = True, path: Path | None = None, errors_path: Path | None = None) -> str:
    """``results/pgc_accuracy.{json,md}``, ``results/pgc_estimation_error.md`` and the two
    tables of ``docs/pgc.md``."""
    path = path or RESULTS / "pgc_accuracy.jsonl"
    errors_path = errors_path or RESULTS / "pgc_estimation_error.json"
    out = []
    if path.exists():
        rows = load_rows(path)
        summary = pgc_summary(rows)
        base = path.with_suffix("")
        meta = {
            "commands": sorted({r["command"] for r in rows}),
            "hardware": rows[0]["hardware"],
            "summary": summary,
        }
        base.with_suffix(".json").write_text(json.dumps(meta, indent=1))
        protocols = sorted({s["protocol"] for s in summary})
        md = made_by("pgc", [path.name], rows) + "\n\n" + pgc_table(summary) + (
            "\n\nUnit: `ldp` (each node's features perturbed on the node; edges and labels "
            "public), RAW `none`. Protocol: "
            + ", ".join(f"`{p}`" for p in protocols)
            + f" (`{LEGACY_PROTOCOL}`: features min-max scaled from the data, positional random "
            f"split; `{PROTOCOL}`: public feature bounds (0, 1), identity-keyed split, isolated "
            "nodes kept, OS-entropy noise)."
        )
        base.with_suffix(".md").write_text(md + "\n")
        _splice_doc(doc, "pgc.md", BEGIN, END, md)
        out.append(md)
    if errors_path.exists():
        errors = json.loads(errors_path.read_text())
        md = (
            f"Generated by `python benchmarks/summarize.py pgc` from "
            f"`benchmarks/results/{errors_path.name}` (command: `{errors.get('command')}`; "
            f"library revision {errors.get('revision') or 'not recorded'}).\n\n"
        ) + pgc_error_table(errors) + (
            f"\n\nUnit: `ldp`. Protocol: `{errors.get('protocol', LEGACY_PROTOCOL)}` "
            "(features scaled to [0, 1]"
            + (
                " from the public bounds (0, 1))."
                if errors.get("protocol")
                else " by per-column min-max over the data)."
            )
        )
        errors_path.with_name(errors_path.stem + ".md").write_text(md + "\n")
        _splice_doc(doc, "pgc.md", ESTIMATION_BEGIN, ESTIMATION_END, md)
        out.append(md)
    return "\n\n".join(out)


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


def attack_tables(rows: list[dict], min_seeds: int = 1) -> str:
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
                if not v:
                    cells.append("—")
                    continue
                if len(v) < min_seeds:
                    cells.append(f"running (n={len(v)})")
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
    return "\n".join(lines).strip("\n")


def attacks(path: Path | None = None, doc: bool = True, min_seeds: int = 10) -> str:
    """``results/audit_attacks.md`` and the tables in ``docs/audits.md``; a cell with fewer
    than ``min_seeds`` seeds (a run still going) shows only its count."""
    path = path or RESULTS / "audit_attacks.jsonl"
    out = RESULTS / "audit_attacks.md"
    rows = load_rows(path)
    commands = sorted({r["command"] for r in rows})
    md = attack_tables(rows, min_seeds)
    lines = [
        "# Attacks against trained models",
        "",
        made_by("attacks", [path.name], rows),
        "",
        "AUC of the attack in % (50: chance), mean and 95% bootstrap CI over seeds (each seed: "
        "its own split, target fit, shadow fit and attack model); n: seeds. *finding*: how "
        "many private cells have a CI that covers 50, and whether the non-private cell's CI "
        "is above 50 (the papers: about 50 for private models, clearly above non-privately). "
        "Commands:",
        "",
        *[f"- `{c}`" for c in commands],
        "",
        md,
    ]
    out.write_text("\n".join(lines) + "\n")
    _splice_doc(
        doc, "audits.md", "<!-- ATTACKS:BEGIN -->", "<!-- ATTACKS:END -->",
        f"{made_by('attacks', [path.name], rows)} Commands in `results/{out.name}`.\n\n{md}",
    )  # fmt: skip
    return out.read_text()


#: the AUCs of a diagnosis row (``mia_diagnosis.py``)
DIAGNOSIS_METRICS = (
    "target_confidence", "shadow_confidence", "shadow_holdout", "tstf", "split_degree",
    "split_label",
)  # fmt: skip


def diagnosis(path: Path | None = None, doc: bool = True) -> str:
    """``results/mia_diagnosis.md`` and the table in ``docs/audits.md``."""
    path = path or RESULTS / "mia_diagnosis.jsonl"
    rows = load_rows(path)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["target_epsilon"])].append(r)
    lines = [
        "# Membership inference below chance: a diagnosis",
        "",
        made_by("diagnosis", [path.name], rows),
        "",
        "AUC % (0.5: chance), mean and 95% bootstrap CI over seeds; see "
        "`benchmarks/mia_diagnosis.py` for what each column measures. Commands:",
        "",
        *[f"- `{c}`" for c in sorted({r["command"] for r in rows})],
        "",
        "| dataset | method | eps | " + " | ".join(DIAGNOSIS_METRICS)
        + " | seeds below 0.5 (tstf) | null SD of one seed's AUC |",
        "|---|---|---|" + "---|" * (len(DIAGNOSIS_METRICS) + 2),
    ]
    for (ds, method, eps), rs in sorted(groups.items()):
        cells = []
        for m in DIAGNOSIS_METRICS:
            mean, lo, hi = bootstrap_ci([r[m] for r in rs])
            cells.append(f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]")
        below = sum(r["tstf"] < 0.5 for r in rs)
        n = sum(r["nonmembers"] for r in rs) / len(rs)
        null_sd = math.sqrt((2 * n + 1) / (12 * n * n))
        eps_s = "inf" if math.isinf(eps) else f"{eps:g}"
        lines.append(
            f"| {ds} | {method} | {eps_s} | " + " | ".join(cells)
            + f" | {below} / {len(rs)} | {100 * null_sd:.1f} ({n:.0f} per class) |"
        )  # fmt: skip
        lines += ["", "Per seed (AUC %):", "", "| seed | " + " | ".join(DIAGNOSIS_METRICS) + " |",
                  "|---|" + "---|" * len(DIAGNOSIS_METRICS)]  # fmt: skip
        for r in sorted(rs, key=lambda r: r["seed"]):
            lines.append(f"| {r['seed']} | "
                         + " | ".join(f"{100 * r[m]:.1f}" for m in DIAGNOSIS_METRICS) + " |")
    md = "\n".join(lines)
    (RESULTS / "mia_diagnosis.md").write_text(md + "\n")
    table = md[md.index("| dataset") :]
    _splice_doc(doc, "audits.md", "<!-- DIAGNOSIS:BEGIN -->", "<!-- DIAGNOSIS:END -->",
                f"{made_by('diagnosis', [path.name], rows)} Commands in "
                f"`results/mia_diagnosis.md`:\n\n{table}")  # fmt: skip
    return md


def recalibration(path: Path | None = None, doc: bool = True) -> str:
    """``results/mia_recalibration.md`` and the table in ``docs/audits.md``."""
    path = path or RESULTS / "mia_recalibration.jsonl"
    rows = load_rows(path)
    lines = [
        "| dataset | method | eps | seed | n_train | z (fixed) | z (before the fix) | "
        "the old z under the fixed accountant |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        old = r["old_z_over_target"]
        verdict = "within the target" if old is None else old.split(" would ")[1].split(";")[0]
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['target_epsilon']:g} | {r['seed']} | "
            f"{r['n_train']} | {r['z_fixed']:.4f} | {r['z_before_fix']:.4f} | {verdict} |"
        )
    md = "\n".join(lines)
    commands = sorted({r["command"] for r in rows})
    (RESULTS / "mia_recalibration.md").write_text(
        "# Noise multipliers of the MIA plans, before and after the accountant fix\n\n"
        + made_by("recalibration", [path.name], rows) + "\n\n"
        + "".join(f"- `{c}`\n" for c in commands)
        + "\n"
        + md
        + "\n"
    )
    _splice_doc(doc, "audits.md", "<!-- RECALIBRATION:BEGIN -->", "<!-- RECALIBRATION:END -->",
                f"{made_by('recalibration', [path.name], rows)}\n\n{md}")  # fmt: skip
    return md


# == issue 27: the honest degree bound, the audit's power (docs/privacy.md, audits.md) =======
def _ci1(values) -> str:
    """``mean [low, high]`` (95% bootstrap CI) with one decimal."""
    m, lo, hi = bootstrap_ci(values)
    return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"


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


def degree_bound(path: Path | None = None, doc: bool = True) -> str:
    """``results/honest_degree_bound.md`` (beside ``path``): node-level GAP / ProGAP at the
    observed maximum degree against the declared public bound (``honest_degree_bound.py``),
    with the paired cost per seed. A cell run at the public D only takes its observed-D rows
    from ``results/progap_accuracy.jsonl`` as it was at :data:`OBSERVED_D_REV` (unpaired).
    Not spliced: docs/privacy.md, gap.md and progap.md cite the file."""
    path = path or RESULTS / "honest_degree_bound.jsonl"
    earlier = Path("progap_accuracy.jsonl")
    rows = [r for r in load_rows(path) if r.get("test_acc") is not None]
    lines = [
        "# Honest node-level degree bound: what it costs (issue 27)",
        "",
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
            by = {}
            for kind in S.DEGREE_BOUNDS:
                sel = [r for r in rows if r["dataset"] == dataset
                       and r["method"] == f"{method}[{kind} D]"]  # fmt: skip
                by[kind] = {r["seed"]: 100 * r["test_acc"] for r in sel}
            seeds = sorted(set(by["observed"]) & set(by["public"]))
            note = ""
            if seeds:
                obs = [by["observed"][s] for s in seeds]
                pub = [by["public"][s] for s in seeds]
                diff = _ci1(list(np.subtract(pub, obs)))
            elif by["public"] and (
                old := _observed_d_rows(_rows_at(earlier.name, OBSERVED_D_REV), dataset, method)
            ):
                # observed-D rows of an earlier run (same protocol and settings): unpaired
                seeds = sorted(by["public"])
                pub, obs = [by["public"][s] for s in seeds], old
                diff = _unpaired_ci1(pub, obs)
                note = (f" (observed D: {len(obs)} seeds of {earlier.name} at {OBSERVED_D_REV}, "
                        "unpaired)")
            else:
                continue
            lines.append(
                f"| {dataset} | {method}{note} | {S.OBSERVED_MAX_DEGREE[dataset]:,} | "
                f"{_ci1(obs)} | {S.MAX_DEGREE[dataset]:,} | {_ci1(pub)} | {diff} | "
                f"{len(seeds)} |"
            )
    lines += [
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
    md = "\n".join(lines)
    path.with_suffix(".md").write_text(md)
    return md


def audit_power(path: Path | None = None, doc: bool = True) -> str:
    """``results/audit_power.md`` (beside ``path``): how often the aggregation audit catches
    a Gaussian aggregation drawing half the noise it records (``audit_power.py``), per setting
    and trial count, with a 95% Clopper-Pearson interval. Not spliced: docs/audits.md cites
    the file."""
    from lightning_dpgnn.attacks.audit import clopper_pearson

    path = path or RESULTS / "audit_power.jsonl"
    rows = load_rows(path)
    lines = [
        "# Detection power of the aggregation audit (half the recorded noise)",
        "",
        "A Gaussian aggregation that draws half the noise it records, audited on one friendship "
        f"(edge-undirected), delta {S.AUDIT_POWER_DELTA:g}, 95% confidence; caught = the audit's "
        "lower bound exceeds the ledger's epsilon for one call. Rate with a 95% Clopper-Pearson "
        "interval.",
        "",
        "| setting | epsilon of one call | trials per hypothesis | caught | rate [95% CI] | "
        "median bound | CPU s per audit |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for name in S.AUDIT_POWER_SETTINGS:
        for trials in sorted({r["trials"] for r in rows}):
            sel = [r for r in rows if r["setting"] == name and r["trials"] == trials]
            if not sel:
                continue
            k, n = sum(r["caught"] for r in sel), len(sel)
            lo, hi = clopper_pearson(k, n, 0.05)
            lines.append(
                f"| {name} | {sel[0]['epsilon_accounted']:.3f} | {trials:,} | {k}/{n} | "
                f"{k / n:.2f} [{lo:.2f}, {hi:.2f}] | "
                f"{np.median([r['epsilon_lower'] for r in sel]):.3f} | "
                f"{np.median([r['cpu_s'] for r in sel]):.1f} |"
            )
    lines += [
        "",
        "Command: `OMP_NUM_THREADS=1 python benchmarks/audit_power.py --runs 40`, single thread.",
        "",
    ]
    md = "\n".join(lines)
    path.with_suffix(".md").write_text(md)
    return md


# == reference parity (docs/progap.md) =====================================================
def parity_table(path: Path) -> str:
    """``results/reference_parity.md``: every reference cell beside ours (95% CI, seeds)."""
    rows = load_rows(path)
    lines = [
        "# Parity with the reference implementation (issue 13)",
        "",
        made_by("parity", [path.name], rows),
        "",
        "Commands: " + "; ".join(f"`{c}`" for c in sorted({r["command"] for r in rows})),
        "",
        "Test accuracy %, mean over seeds with 95% bootstrap CI; the reference is the mean of 5",
        "repeats of the authors' code with its defaults. Edge level: directed unit, delta 1e-7.",
        f"`{S.COUNTS}`: the same cell with `label_counts=True`, today's default (one more Gaussian",
        "aggregation, of the training labels, inside the same epsilon); the cells without it run",
        "the papers' model (`label_counts=False`).",
        "",
        "| method | eps | school | reference | ours (mean, 95% CI) | seeds | diff |",
        "|---|---|---|---|---|---|---|",
    ]
    cells = [(m + v, eps, refs) for (m, eps), refs in S.REFERENCE.items()
             for v in ("", S.COUNTS)]  # fmt: skip
    for method, eps, refs in cells:
        for school, ref in zip(S.SCHOOLS, refs, strict=True):
            accs = [
                100 * r["test_acc"]
                for r in rows
                if r["school"] == school and r["method"] == method and r["epsilon_target"] == eps
            ]
            if not accs:
                continue
            mean, lo, hi = bootstrap_ci(accs)
            e = "inf" if eps is None else f"{eps:g}"
            lines.append(
                f"| {method} | {e} | {school} | {ref:.2f} | {mean:.2f} [{lo:.2f}, {hi:.2f}] | "
                f"{len(accs)} | {mean - ref:+.2f} |"
            )
    return "\n".join(lines) + "\n"


NAMES = {"GAP-K2": "GAP K=2", "ProGAP-K3": "ProGAP K=3", "ProGAP-K2": "ProGAP K=2"}


def label_counts_table(path: Path) -> str:
    """The GAP/ProGAP cells: the reference, the papers' model (``label_counts=False``) and our
    defaults (label counts on; 95% CI, seeds, margin over the reference), for
    ``docs/progap.md``."""
    rows = load_rows(path)

    def cell(method: str, eps: float | None, school: str):
        accs = [100 * r["test_acc"] for r in rows if r["school"] == school
                and r["method"] == method and r["epsilon_target"] == eps]
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
        e = "∞" if eps is None else f"{eps:g}"
        lines.append(f"| {NAMES[method]} | {e} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def parity(path: Path | None = None, doc: bool = True) -> str:
    """``results/<path stem>.md`` and, for ``results/reference_parity.jsonl``, the label-counts
    table of ``docs/progap.md``."""
    path = path or RESULTS / "reference_parity.jsonl"
    md = parity_table(path)
    path.with_suffix(".md").write_text(md)
    rows = load_rows(path)
    _splice_doc(doc, "progap.md", "<!-- LABEL-COUNTS:BEGIN -->", "<!-- LABEL-COUNTS:END -->",
                made_by("parity", [path.name], rows) + "\n\n" + label_counts_table(path))
    return md


# == speed and scale (docs/performance.md) ==================================================
def speed_table(path: Path) -> str:
    """``results/speed.md``: the latest measurement of each target."""
    rows = load_rows(path)
    latest: dict[str, dict] = {}
    for r in rows:
        latest[r["target"]] = r
    env = rows[-1]["environment"] if rows else {}
    lines = [
        "# Speed and scale (issue 18)",
        "",
        made_by("speed", [path.name], rows),
        "",
        f"Environment: {env}",
        "",
        "Median of the runs of the latest measurement of each target; `load` is the 1-minute",
        "load average before each run (2 cores shared with other jobs: above ~2 the machine is",
        "oversubscribed and wall times stretch).",
        "",
        "`CPU` is the median CPU time of the same runs (fit + test in process, or the whole",
        "process): what the wall time would be on an idle core, one thread.",
        "",
        "| target | measured | CPU | target | met | runs | load (1 min) | command |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in latest.items():
        limit = "" if r["limit"] is None else f"< {r['limit']:g} {r['unit']}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "no")
        loads = ", ".join(f"{run['load'][0]:g}" for run in r["runs"] if "load" in run)
        key = "fit_test_cpu_s" if "fit+test" in name else "process_cpu_s"
        cpus = [run[key] for run in r["runs"] if key in run]
        cpu = f"{statistics.median(cpus):.2f} s" if cpus and r["unit"] == "s" else ""
        lines.append(
            f"| {name} | {r['value']:.2f} {r['unit']} | {cpu} | {limit} | {met} | "
            f"{len(r['runs'])} | {loads} | `{r['command']}` |"
        )
    return "\n".join(lines) + "\n"


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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    path = path or RESULTS / "speed.jsonl"
    md = speed_table(path)
    path.with_suffix(".md").write_text(md)
    if plot and doc:
        plot_scale(path, DOCS / "img" / "performance_scale.png")
    return md


def reference_speed_table(path: Path) -> str:
    """``results/reference_speed.md``: medians of the latest invocation of
    ``reference_speed.py``, per method and side, and the ratios reference / ours."""
    rows = load_rows(path)
    latest = [r for r in rows if r["invocation"] == rows[-1]["invocation"]]
    first = latest[0]
    epochs = "their defaults" if first["epochs"] is None else f"{first['epochs']} (not a result)"
    deltas = ", ".join(sorted({f"{r['ref_delta']:g}" for r in latest if r["side"] == "reference"}))
    lines = [
        "# Side by side with the authors' GAP/ProGAP code (issue 32)",
        "",
        made_by("reference_speed", [path.name], latest),
        "",
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
            ratios.append(
                f"| {method} | {med(ref, 'fit_test_s') / med(ours, 'fit_test_s'):.2f} | "
                f"{med(ref, 'process_s') / med(ours, 'process_s'):.2f} | "
                f"{med(ref, 'process_cpu_s') / med(ours, 'process_cpu_s'):.2f} |")
    lines += ["", "| method | fit+test ratio | process ratio | process CPU ratio |",
              "|---|---|---|---|", *ratios]
    return "\n".join(lines) + "\n"


def reference_speed(path: Path | None = None, doc: bool = True) -> str:
    """``results/reference_speed.md`` (nothing without rows)."""
    path = path or RESULTS / "reference_speed.jsonl"
    if not path.exists():
        return ""
    md = reference_speed_table(path)
    path.with_suffix(".md").write_text(md)
    return md


# == DDP (docs/distributed.md) ================================================================
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
    keys = dict.fromkeys((r["recipe"], r["graph"], r["devices"], r["shard_rows"]) for r in rows)
    for recipe, graph, devices, shard in keys:
        sel = [r for r in rows if (r["recipe"], r["graph"], r["devices"], r["shard_rows"])
               == (recipe, graph, devices, shard)]
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


def ddp_report(rows: list[dict]) -> str:
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
    (RESULTS / "ddp.md").write_text("\n".join(parts))
    return "\n".join(parts)


def ddp(path: Path | None = None, doc: bool = True) -> str:
    """``results/ddp.md`` from ``results/ddp.jsonl``."""
    return ddp_report(load_rows(path or RESULTS / "ddp.jsonl"))


# == GW-LDP (docs/gwldp.md) =================================================================
#: gwldp_accuracy.py's results files (``--gnn``) -> the docs/gwldp.md markers of their tables
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


def gwldp_table(rows: list[dict], provenance: bool = False) -> str:
    """The GW-LDP MUTAG table of ``gwldp_accuracy.py``'s rows: SVM and kNN-5 test accuracy
    per (row, epsilon), mean and 95% bootstrap CI over seeds, and the setting it ran
    (``provenance``: the note on the committed GCN rows, :data:`GWLDP_PROVENANCE`)."""
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
    return "\n".join(lines) + (
        f"\n\n{data}, 10 clients (Dirichlet 0.5), 7:2:1 per client, FedAvg {gnn} "
        f"{r0.get('rounds')} rounds; {svm}. Revision(s): {', '.join(rev)}. Command(s): {cmds}\n"
        + (f"\n{GWLDP_PROVENANCE}\n" if provenance and gnn == "GCN" else "")
    )


def gwldp(path: Path | None = None, doc: bool = True) -> str:
    """``results/gwldp_accuracy.md`` and ``gwldp_accuracy_gin.md`` (each from its rows; with
    ``path``: that file's table beside it), spliced into docs/gwldp.md (``gwldp-results``,
    ``gwldp-gin``) when they are the results folder's files."""
    paths = [path] if path else [RESULTS / n for n in GWLDP_FILES if (RESULTS / n).exists()]
    out = []
    for p in paths:
        rows = load_rows(p)
        table = gwldp_table(rows, provenance=p.name == "gwldp_accuracy.jsonl")
        md = made_by("gwldp", [p.name], rows) + "\n\n" + table
        title = f"{rows[0]['dataset'].upper()}, {rows[0]['gnn'].upper()}"
        p.with_suffix(".md").write_text(f"# GW-LDP ({title})\n\n{md}")
        marker = GWLDP_FILES.get(p.name)
        if marker and p.resolve() == (RESULTS / p.name).resolve():
            _splice_doc(doc, "gwldp.md", f"<!-- {marker}-begin -->", f"<!-- {marker}-end -->",
                        md.rstrip("\n"))  # fmt: skip
        out.append(md)
    return "\n".join(out)


def gwldp_clustering_table(rows: list[dict]) -> str:
    """The GW-LDP clustering tables of ``gwldp_clustering.py``'s rows, one per (dataset, hops,
    graphs): NMI and ARI per (row, epsilon, clustering), mean and 95% bootstrap CI over seeds."""
    tasks: dict[tuple, list[dict]] = {}
    for r in rows:
        tasks.setdefault((r["dataset"], r.get("hops", 1), r["graphs"]), []).append(r)
    out = []
    for (dataset, hops, graphs), task_rows in tasks.items():
        groups: dict[tuple, list[dict]] = {}
        for r in task_rows:
            groups.setdefault((r["row"], r.get("epsilon"), r["method"]), []).append(r)
        lines = [f"**{dataset}, {hops}-hop ego graphs**", "",
                 "| row | epsilon per graph | clustering | seeds | NMI (95% CI) | ARI (95% CI) |",
                 "|---|---|---|---|---|---|"]  # fmt: skip
        order = {r: i for i, r in enumerate(S.GWLDP_CLUSTERING_ROWS)}
        for (row, eps, method), rs in sorted(groups.items(),
                                             key=lambda kv: (order[kv[0][0]], kv[0][1] or 0,
                                                             kv[0][2])):  # fmt: skip
            nm, nlo, nhi = bootstrap_ci([r["nmi"] for r in rs])
            am, alo, ahi = bootstrap_ci([r["ari"] for r in rs])
            e = "-" if row == "random" else _eps(eps)
            lines.append(f"| {row} | {e} | {method} | {len(rs)} | {nm:.3f} ({nlo:.3f}-"
                         f"{nhi:.3f}) | {am:.3f} ({alo:.3f}-{ahi:.3f}) |")  # fmt: skip
        rev = sorted({r["revision"] for r in task_rows})
        r0 = next(r for r in task_rows if r["row"] != "random")
        out.append("\n".join(lines) + (
            f"\n\n{dataset} {hops}-hop ego graphs of the largest component, {graphs} centres "
            f"per seed, k = {r0['k']}; FedAvg GCN {r0['rounds']} rounds. Revision(s): "
            f"{', '.join(rev)}. Command: `{r0['command']}`\n"
        ))
    return "\n".join(out)


def gwldp_clustering(path: Path | None = None, doc: bool = True) -> str:
    """``results/gwldp_clustering.md`` (beside ``path``), spliced into docs/gwldp.md
    (``gwldp-clustering``) when it is the results folder's file."""
    default = RESULTS / "gwldp_clustering.jsonl"
    path = path or default
    rows = load_rows(path)
    md = made_by("gwldp_clustering", [path.name], rows) + "\n\n" + gwldp_clustering_table(rows)
    return _publish(path, default.name, "GW-LDP clustering (ego graphs)", md, "gwldp.md",
                    "gwldp-clustering", doc)


def zoo_check(path: Path | None = None, doc: bool = True) -> str:
    """``results/zoo_check.md`` (beside ``path``): each zoo entry's builds (``zoo_check.py``)
    beside the benchmark rows its card cites, spliced into docs/zoo.md (``zoo-check``) when it
    is the results folder's file."""
    sys.path.insert(0, str(ROOT))  # the repository's zoo/
    from zoo import registry

    default = RESULTS / "zoo_check.jsonl"
    path = path or default
    if not path.exists():
        return ""
    rows = load_rows(path)
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["entry"], r["split"], " ".join(r.get("overrides") or [])),
                          []).append(100 * r["test_acc"])
    lines = ["| entry | split | overrides | builds | builds' mean (95% CI) | builds' range | card: "
             "benchmark mean (95% CI) | benchmark runs' range | intervals overlap |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for (name, split, over), accs in sorted(groups.items()):
        m, lo, hi = bootstrap_ci(accs)
        a, runs = registry.entry(name).accuracy or {}, registry.entry(name).benchmark_accuracies()
        card = f"{a['mean']} ({a['low']}–{a['high']})" if a else "–"
        spread = f"{min(runs):.1f}–{max(runs):.1f}" if runs else "–"
        overlap = "–" if not a else ("yes" if lo <= a["high"] and a["low"] <= hi else "NO")
        split = "the recipe's" if split == "recipe" else "seed k"
        lines.append(f"| {name} | {split} | {over or '–'} | {len(accs)} | {m:.1f} ({lo:.1f}–"
                     f"{hi:.1f}) | {min(accs):.1f}–{max(accs):.1f} | {card} | {spread} | "
                     f"{overlap} |")
    md = made_by("zoo_check", [path.name], rows) + "\n\n" + "\n".join(lines) + "\n"
    return _publish(path, default.name, "Zoo builds against their cards", md, "zoo.md",
                    "zoo-check", doc)


GWLDP_TASKS = {
    "fit": "FedAvg fit, MUTAG, 10 clients, GCN, {rounds} rounds, 1 thread",
    "allpairs": "all pairs of MUTAG, GW_A (POT CG), {jobs} joblib workers",
    "proteins_pairs": "random pairs of PROTEINS, GW_A (POT CG), {jobs} joblib workers",
}


def gwldp_timing(path: Path | None = None, doc: bool = True) -> str:
    """``results/gwldp_timing.md`` from ``gwldp_timing.py``'s rows (one line per run, in the
    order they ran, with the load average before and after), spliced into docs/gwldp.md
    (``gwldp-timing``) when it is the results folder's file."""
    default = RESULTS / "gwldp_timing.jsonl"
    path = path or default
    rows = load_rows(path)
    lines = ["| task | library | pairs | seconds | all pairs (estimate) | load avg before / after "
             "| CPUs |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        task = GWLDP_TASKS[r["task"]].format(rounds=r.get("rounds"), jobs=r.get("jobs"))
        pairs = f"{r['pairs']:,}" if "pairs" in r else "-"
        est = "-"
        if r["task"] == "proteins_pairs":
            est = f"{r['all_pairs']:,} pairs: {r['all_pairs_estimate_s'] / 60:.0f} min"
        lines.append(f"| {task} | {r['label']} ({r['revision']}) | {pairs} | {r['seconds']:.1f} "
                     f"| {est} | {r['load_before']:.2f} / {r['load_after']:.2f} | {r['cpus']} |")
    fits: dict[str, list[float]] = {}
    for r in rows:
        if r["task"] == "fit":
            fits.setdefault(r["label"], []).append(r["seconds"])
    if fits:
        lines += ["", "FedAvg fit, median over runs: " + "; ".join(
            f"{label} {statistics.median(v):.1f} s ({len(v)} runs, {min(v):.1f}-{max(v):.1f})"
            for label, v in fits.items()) + "."]
    commands = "; ".join(dict.fromkeys(f"`{r['command']}`" for r in rows))
    md = (made_by("gwldp_timing", [path.name], rows) + "\n\n" + "\n".join(lines)
          + f"\n\nCommand(s): {commands}\n")
    return _publish(path, default.name, "GW-LDP timings", md, "gwldp.md", "gwldp-timing", doc)


# == PoinDP =========================================================================
POINDP_TABLE1_ROWS = ("GCN", "MLP", "paper-code", "PoinDP-inf", "PoinDP", "GAP", "ProGAP")
POINDP_METRICS = (("acc", "accuracy"), ("weighted_f1", "weighted-F1"), ("macro_f1", "macro-F1"),
                  ("paper_swapped_wf1", 'paper\'s "W-F1" (swapped)'),
                  ("link_auc", "link-stealing AUC"))  # fmt: skip


def _poindp_ci(rs: list[dict], metric: str) -> str:
    mean, lo, hi = bootstrap_ci([100 * r[metric] for r in rs])
    return f"{mean:.1f} [{lo:.1f}, {hi:.1f}]"


def poindp_tables(rows: list[dict]) -> str:
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
    return "\n".join(out) + "\n"


def poindp(path: Path | None = None, doc: bool = True) -> str:
    """``results/poindp_accuracy.md`` (beside ``path``), spliced into docs/poindp.md
    (``poindp-results``) when it is the results folder's file."""
    default = RESULTS / "poindp_accuracy.jsonl"
    path = path or default
    rows = load_rows(path)
    md = made_by("poindp", [path.name], rows) + "\n\n" + poindp_tables(rows)
    return _publish(path, default.name, "PoinDP on Cora and CiteSeer", md, "poindp.md",
                    "poindp-results", doc)


# == HeteroRR (docs/heterorr.md) ============================================================
def _pct_ci(values) -> str:
    m, lo, hi = bootstrap_ci([100.0 * v for v in values])
    return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"


def heterorr_feature_error_table(rows: list[dict], source: str) -> str:
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
    return "\n".join(lines) + "\n"


def _theta_weighted(row: dict) -> float:
    """``sum_i theta_i E|y_i - x_i|``: the error where the skewed weights say it matters."""
    theta = S.skewed_theta(row["d"]).tolist()
    return sum(t * e for t, e in zip(theta, row["analytic_by_feature"], strict=True))


def _plot_feature_error(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def heterorr_feature_error(path: Path | None = None, doc: bool = True) -> str:
    """``results/heterorr_feature_error.{md,png}`` (beside ``path``); the results folder's
    file is spliced into docs/heterorr.md (``heterorr-feature-error``) with its plot."""
    default = RESULTS / "heterorr_feature_error.jsonl"
    path = path or default
    rows = load_rows(path)
    md = (made_by("heterorr_feature_error", [path.name], rows) + "\n\n"
          + heterorr_feature_error_table(rows, path.name))
    _plot_feature_error(rows, path.with_suffix(".png"))
    if doc and path.resolve() == default.resolve():
        (DOCS / "img").mkdir(exist_ok=True)
        shutil.copyfile(path.with_suffix(".png"), DOCS / "img" / "heterorr_feature_error.png")
    return _publish(path, default.name, "HeteroRR: expected error of the feature mechanisms",
                    md, "heterorr.md", "heterorr-feature-error", doc)


def heterorr_edges(path: Path | None = None, doc: bool = True) -> str:
    """Fig. 11 of the HeteroRR supplement (``heterorr_edges.py``): mean [95% CI] of the RMS
    distance of the random-walk matrices (mean of the hops, and hop 1) per release and rho."""
    default = RESULTS / "heterorr_edges.jsonl"
    path = path or default
    rows = load_rows(path)
    hops = S.HETERORR_HOPS
    lines = [
        f"RMS distance between the random-walk matrices P^k (k = 1..{hops}) of "
        "the true and the released graph, mean [95% bootstrap CI] over seeds, x 1e-3 "
        "(lower is closer). EdgeRR at rho = 1 is PrivHRG; LapGraph and EdgeRand make every "
        "edge private (flat in rho); public-only (the private edges dropped) and the empty "
        "graph spend nothing.",
        "",
        f"| dataset | eps_e | method | rho | seeds | RMS mean of {hops} hops | RMS hop 1 | "
        "released / true edges | release s (median) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["epsilon"], r["method"], r["rho"]), []).append(r)
    order = {m: i for i, m in enumerate(S.HETERORR_FIG11_METHODS)}
    for (ds, eps, method, rho), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order.get(kv[0][2], 9),
                                        kv[0][3] or 0)):  # fmt: skip
        m, lo, hi = bootstrap_ci([1e3 * r["rms_mean"] for r in rs])
        m1, lo1, hi1 = bootstrap_ci([1e3 * r["rms_hop1"] for r in rs])
        ratio = np.mean([r["released_edges"] / r["true_edges"] for r in rs])
        name = "EdgeRR (PrivHRG)" if method == "EdgeRR" and rho == 1.0 else method
        lines.append(
            f"| {ds} | {eps:g} | {name} | {'all' if rho is None else f'{rho:g}'} | {len(rs)} "
            f"| {m:.3f} [{lo:.3f}, {hi:.3f}] | {m1:.3f} [{lo1:.3f}, {hi1:.3f}] | {ratio:.2f} "
            f"| {np.median([r['release_s'] for r in rs]):.1f} |")
    md = made_by("heterorr_edges", [path.name], rows) + "\n\n" + "\n".join(lines) + "\n"
    return _publish(path, default.name, "HeteroRR: released graphs against the true one (Fig. 11)",
                    md, "heterorr.md", "heterorr-edges", doc)


def heterorr_accuracy(path: Path | None = None, doc: bool = True) -> str:
    """GCN test accuracy on HeteroRR's releases and the link-stealing AUC on the private edges
    (``heterorr_accuracy.py``), mean [95% CI] over seeds, one table per part."""
    default = RESULTS / "heterorr_accuracy.jsonl"
    path = path or default
    rows = load_rows(path)
    lines = ["GCN test accuracy (%), mean [95% bootstrap CI] over seeds."]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["part"], r["dataset"], r["method"], r["epsilon"], r.get("rho")),
                          []).append(r)
    order = {m: i for i, m in enumerate(S.HETERORR_EDGE_METHODS
                                        + S.HETERORR_FEATURE_MECHANISMS)}  # fmt: skip

    def key(kv):
        part, ds, method, eps, rho = kv[0]
        return (S.HETERORR_PARTS.index(part), ds, eps or 0, order.get(method, 99), method,
                rho or 0)

    titles = {"edges": "Edges (rho = share of private edges; LapGraph / EdgeRand: every edge "
                       "private)",
              "graphs": "Larger graphs (eps_e = 1)",
              "features": "Features at equal eps_f per node (edges public)"}
    part_now = None
    for (part, ds, method, eps, rho), rs in sorted(groups.items(), key=key):
        if part != part_now:
            part_now = part
            lines += ["", f"**{titles[part]}**", ""]
            lines += ["| dataset | method | eps | rho | seeds | test accuracy | link-stealing "
                      "AUC (private edges) |", "|---|---|---|---|---|---|---|"]
        auc = " | "
        if all("attack_auc" in r for r in rs):
            m, lo, hi = bootstrap_ci([r["attack_auc"] for r in rs])
            auc = f" | {m:.3f} [{lo:.3f}, {hi:.3f}]"
        lines.append(
            f"| {ds} | {method} | {'-' if eps is None else f'{eps:g}'} | "
            f"{'-' if rho is None else f'{rho:g}'} | {len(rs)} | "
            f"{_pct_ci([r['test_acc'] for r in rs])}{auc} |")
    md = made_by("heterorr_accuracy", [path.name], rows) + "\n\n" + "\n".join(lines) + "\n"
    return _publish(path, default.name, "HeteroRR: GCN accuracy and link stealing", md,
                    "heterorr.md", "heterorr-accuracy", doc)


# == command line ==========================================================================
#: table name -> function(doc) writing it (see the module docstring)
TABLES = {
    "gap": functools.partial(accuracy, "gap"),
    "progap": functools.partial(accuracy, "progap"),
    "baselines": functools.partial(accuracy, "baselines"),
    "defaults": defaults,
    "lpgnn": lpgnn,
    "pgc": pgc,
    "attacks": attacks,
    "diagnosis": diagnosis,
    "recalibration": recalibration,
    "parity": parity,
    "speed": speed,
    "ddp": ddp,
    "degree_bound": degree_bound,
    "audit_power": audit_power,
    "gwldp": gwldp,
    "gwldp_clustering": gwldp_clustering,
    "zoo_check": zoo_check,
    "poindp": poindp,
    "gwldp_timing": gwldp_timing,
    "heterorr_feature_error": heterorr_feature_error,
    "heterorr_edges": heterorr_edges,
    "heterorr_accuracy": heterorr_accuracy,
    "reference_speed": reference_speed,
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("tables", nargs="*", default=["gap"], choices=[*TABLES, "all"],
                   metavar="TABLE", help=", ".join([*TABLES, "all"]) + " (default: gap)")
    p.add_argument("--no-doc", action="store_true", help="write benchmarks/results/ only")
    p.add_argument("--min-seeds", type=int, default=10,
                   help="attacks: cells with fewer seeds show only their count")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    args = p.parse_args(argv)
    names = list(TABLES) if "all" in args.tables else args.tables
    for name in names:
        if name == "attacks":
            md = attacks(doc=not args.no_doc, min_seeds=args.min_seeds)
        else:
            md = TABLES[name](doc=not args.no_doc)
        if not args.quiet:
            print(md)


if __name__ == "__main__":
    main()
