"""Summarize a benchmark: mean and 95% bootstrap CI per setting, a markdown table (also
written into the docs page between the BENCHMARK markers) and an accuracy-vs-epsilon plot.

    python benchmarks/summarize.py          # GAP: results/gap_accuracy.*, docs/gap.md
    python benchmarks/summarize.py progap   # ProGAP vs GAP: results/progap_accuracy.*,
                                            # docs/progap.md
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from common import CODE_VERSION, RESULTS, load_rows, seed_stats

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
}
BEGIN, END = "<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["target_epsilon"])].append(r)
    out = []
    for (dataset, method, eps), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2])
    ):
        out.append(
            dict(
                dataset=dataset,
                method=method,
                target_epsilon=eps,
                epsilon_max=max((r["epsilon"] or 0.0) for r in rs) if eps is not None else None,
                **seed_stats(rs),
            )
        )
    return out


def table(summary: list[dict]) -> str:
    lines = [
        "| dataset | method | epsilon | test acc % (95% CI) | seeds | wall s | CPU s | peak MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        eps = "inf" if s["target_epsilon"] is None else f"{s['target_epsilon']:g}"
        ci = f"{s['acc_mean']:.1f} ({s['acc_ci95'][0]:.1f}–{s['acc_ci95'][1]:.1f})"
        lines.append(
            f"| {s['dataset']} | {s['method']} | {eps} | {ci} | {s['seeds']} | "
            f"{s['wall_s_median']} | {s['cpu_s_median']} | {s['peak_rss_mb_max']:.0f} |"
        )
    return "\n".join(lines)


def comparison(summary: list[dict], pairs) -> str:
    """``A`` vs ``B`` at each (dataset, epsilon) both have: difference of the means."""
    index = {(s["dataset"], s["method"], s["target_epsilon"]): s for s in summary}
    lines = [
        "| dataset | epsilon | method | acc % | baseline | acc % | gain (points) | seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, method, eps), s in index.items():
        for a, b in pairs:
            base = index.get((dataset, b, eps))
            if method != a or base is None:
                continue
            e = "inf" if eps is None else f"{eps:g}"
            lines.append(
                f"| {dataset} | {e} | {a} | {s['acc_mean']:.1f} | {b} | {base['acc_mean']:.1f} | "
                f"{s['acc_mean'] - base['acc_mean']:+.1f} | {s['seeds']} / {base['seeds']} |"
            )
    return "\n".join(lines)


def depth_selection(rows: list[dict], prefix: str) -> dict[tuple, dict]:
    """The thesis' depth tuning: per (dataset, epsilon), the ``K`` of ``{prefix}K`` with the
    best mean validation accuracy over seeds, its test accuracy, and the test accuracy of
    every ``K``."""
    by_setting: dict[tuple, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["method"].startswith(prefix) and r.get("val_acc") is not None:
            key = (r["dataset"], r["target_epsilon"])
            by_setting[key][int(r["method"].removeprefix(prefix))].append(r)
    out = {}
    for key, ks in sorted(by_setting.items()):
        val = {k: seed_stats(rs, "val_acc")["acc_mean"] for k, rs in ks.items()}
        best = max(val, key=val.get)
        test = {k: seed_stats(rs)["acc_mean"] for k, rs in ks.items()}
        out[key] = dict(
            dataset=key[0],
            target_epsilon=key[1],
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
        f"| dataset | epsilon | {a} K={'/'.join(map(str, depths))} | {a} tuned (K) | "
        f"{b} K={'/'.join(map(str, depths))} | {b} tuned (K) | gain |",
        "|---|---|---|---|---|---|---|",
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
            f"| {key[0]} | {key[1]:g} | {per_k(ta)} | {tuned(ta)} | "
            f"{'–' if tb is None else per_k(tb)} | {'–' if tb is None else tuned(tb)} | {gain} |"
        )
    return "\n".join(lines)


def plot(summary: list[dict], path: Path, curves, lines) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({s["dataset"] for s in summary})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        rows = [s for s in summary if s["dataset"] == ds]
        for method in curves:
            pts = [s for s in rows if s["method"] == method]
            if pts:
                x = [s["target_epsilon"] for s in pts]
                y = [s["acc_mean"] for s in pts]
                err = [
                    [s["acc_mean"] - s["acc_ci95"][0] for s in pts],
                    [s["acc_ci95"][1] - s["acc_mean"] for s in pts],
                ]
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=method)
        for method, style in lines:
            pts = [s for s in rows if s["method"] == method]
            if pts:
                ax.axhline(pts[0]["acc_mean"], linestyle=style, color="gray", label=method)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(ds)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(name: str = "gap") -> None:
    bench = BENCHMARKS[name]
    rows = [r for f in bench["inputs"] if (RESULTS / f).exists() for r in load_rows(RESULTS / f)]
    keep = bench.get("keep")
    if keep:
        rows = [r for r in rows if r["method"].startswith(keep)]
    summary = summarize(rows)
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
            {"commands": commands, "hardware": hardware, "summary": summary, "depth": depth},
            indent=1,
        )
    )
    md = table(summary)
    if bench.get("compare"):
        md = comparison(summary, bench["compare"]) + "\n\nAll settings:\n\n" + md
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
        f"Plot: `benchmarks/results/{stem}.png`. Hardware: {'; '.join(hardware)}."
    )
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
