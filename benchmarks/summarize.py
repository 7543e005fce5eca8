"""Summarize a benchmark: mean and 95% bootstrap CI per setting, a markdown table (also
written into the docs page between the BENCHMARK markers) and an accuracy-vs-epsilon plot.

A setting is (dataset, method, epsilon, protected unit, preprocessing protocol). Rows written
before units and protocols were recorded count as protocol ``paper-v0`` with the unit
``common.row_unit`` gives them (edge level: ``edge-directed``, the thesis' unit). The old
node-level GAP/ProGAP rows (degree bounded by sampling D = 100 edges per node, an unstable
projection, so their epsilon was not delivered) are left out of every table and plot; a
separate table puts them, struck through, beside the new node-level rows.

    python benchmarks/summarize.py          # GAP: results/gap_accuracy.*, docs/gap.md
    python benchmarks/summarize.py progap   # ProGAP vs GAP: results/progap_accuracy.*,
                                            # docs/progap.md
    python benchmarks/summarize.py baselines  # SAGE/EdgeRand/DPGNN beside GAP/ProGAP:
                                              # results/baselines.*, docs/baselines.md
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from common import (
    CODE_VERSION,
    INVALID_NODE_UNIT,
    LEGACY_PROTOCOL,
    PROTOCOL,
    RESULTS,
    invalid_reason,
    is_valid,
    load_rows,
    row_protocol,
    row_unit,
    seed_stats,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"
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
    ),
}
BEGIN, END = "<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"


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
        key = (r["dataset"], r["method"], r["target_epsilon"], row_unit(r), row_protocol(r))
        groups[key].append(r)
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


def _eps(eps) -> str:
    return "inf" if eps is None else f"{eps:g}"


def table(summary: list[dict]) -> str:
    lines = [
        "| dataset | method | unit | protocol | epsilon | test acc % (95% CI) | seeds | wall s | "
        "CPU s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        unit = s["unit"] + (f" (D={s['degree_bound']})" if s.get("degree_bound") else "")
        lines.append(
            f"| {s['dataset']} | {s['method']} | {unit} | {s['protocol']} | "
            f"{_eps(s['target_epsilon'])} | {_ci(s)} | {s['seeds']} | "
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


def main(name: str = "gap") -> None:
    bench = BENCHMARKS[name]
    rows = [r for f in bench["inputs"] if (RESULTS / f).exists() for r in load_rows(RESULTS / f)]
    keep = bench.get("keep")
    if keep:
        rows = [r for r in rows if r["method"].startswith(keep)]
    if bench.get("methods"):  # the settings of the first input, beside the others' same ones
        first = load_rows(RESULTS / bench["inputs"][0])
        scope = {(r["dataset"], row_protocol(r)) for r in first}
        rows = [r for r in rows if r["method"] in bench["methods"]
                and (r["dataset"], row_protocol(r)) in scope]
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
    md += (
        "\n\nWall and CPU seconds are medians per run, peak MB the largest resident set of one "
        f"run (each in its own process), over runs of the current code ({CODE_VERSION!r}). "
        f"Plot: `benchmarks/results/{stem}.png`. Hardware: {'; '.join(hardware)}.\n\n"
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
    doc_path = DOCS / bench["doc"]
    doc = doc_path.read_text()
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN)
        doc_path.write_text(head + BEGIN + "\n" + md + "\n" + END + rest.split(END)[1])
    print(md)


if __name__ == "__main__":
    main(*sys.argv[1:2])
