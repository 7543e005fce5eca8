"""Summarize results/gap_accuracy.jsonl: mean and 95% bootstrap CI per setting, a markdown
table (also written into docs/gap.md between the BENCHMARK markers) and an accuracy-vs-epsilon
plot.

    python benchmarks/summarize.py
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from common import RESULTS, bootstrap_ci

DOC = Path(__file__).resolve().parents[1] / "docs" / "gap.md"
BEGIN, END = "<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["target_epsilon"])].append(r)
    out = []
    for (dataset, method, eps), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2])
    ):
        mean, lo, hi = bootstrap_ci([100 * r["test_acc"] for r in rs])
        out.append(
            dict(
                dataset=dataset,
                method=method,
                target_epsilon=eps,
                seeds=len(rs),
                acc_mean=round(mean, 2),
                acc_ci95=[round(lo, 2), round(hi, 2)],
                epsilon_max=max((r["epsilon"] or 0.0) for r in rs) if eps is not None else None,
                wall_s_mean=round(sum(r["wall_s"] for r in rs) / len(rs), 1),
                peak_rss_mb_max=max(r["peak_rss_mb"] for r in rs),
            )
        )
    return out


def table(summary: list[dict]) -> str:
    lines = [
        "| dataset | method | epsilon | test acc % (95% CI) | seeds | wall s | peak MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        eps = "inf" if s["target_epsilon"] is None else f"{s['target_epsilon']:g}"
        ci = f"{s['acc_mean']:.1f} ({s['acc_ci95'][0]:.1f}–{s['acc_ci95'][1]:.1f})"
        lines.append(
            f"| {s['dataset']} | {s['method']} | {eps} | {ci} | {s['seeds']} | "
            f"{s['wall_s_mean']} | {s['peak_rss_mb_max']:.0f} |"
        )
    return "\n".join(lines)


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({s["dataset"] for s in summary})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        rows = [s for s in summary if s["dataset"] == ds]
        for method in ("GAP-EDP", "GAP-NDP", "DP-MLP"):
            pts = [s for s in rows if s["method"] == method]
            if pts:
                x = [s["target_epsilon"] for s in pts]
                y = [s["acc_mean"] for s in pts]
                err = [
                    [s["acc_mean"] - s["acc_ci95"][0] for s in pts],
                    [s["acc_ci95"][1] - s["acc_mean"] for s in pts],
                ]
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=method)
        for method, style in (("GAP-inf", "--"), ("MLP", ":")):
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


def main() -> None:
    rows = load(RESULTS / "gap_accuracy.jsonl")
    summary = summarize(rows)
    commands = sorted({r["command"] for r in rows})
    (RESULTS / "gap_accuracy.json").write_text(
        json.dumps(
            {"commands": commands, "hardware": rows[0]["hardware"], "summary": summary}, indent=1
        )
    )
    md = table(summary)
    (RESULTS / "gap_accuracy.md").write_text(md + "\n")
    plot(summary, RESULTS / "gap_accuracy.png")
    doc = DOC.read_text()
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN)
        DOC.write_text(head + BEGIN + "\n" + md + "\n" + END + rest.split(END)[1])
    print(md)


if __name__ == "__main__":
    main()
