"""Summarize results/lpgnn_accuracy.jsonl: mean and 95% bootstrap CI per cell next to the
thesis' value, a markdown table (also written into docs/lpgnn.md between the BENCHMARK
markers), a JSON summary and a plot.

    python benchmarks/lpgnn_summarize.py [--jsonl results/lpgnn_accuracy.jsonl] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from common import LEGACY_PROTOCOL, PROTOCOL, RESULTS, load_rows, row_protocol, seed_stats

DOC = Path(__file__).resolve().parents[1] / "docs" / "lpgnn.md"
BEGIN, END = "<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"

# thesis Tables 3.2-3.4 (accuracy %), Cora and Facebook; key: (dataset, table, method, x, y)
PAPER = {}
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
            PAPER[(ds, "3.2", method, ex, None)] = v
for ds, vals in {
    "cora": {"ONES": 22.6, "OHD": 44.4, "RND": 26.4, 0.01: 63.0, 0.1: 62.4, 1.0: 69.3},
    "musae-facebook": {"ONES": 29.0, "OHD": 77.2, "RND": 35.2, 0.01: 85.0, 0.1: 85.1, 1.0: 84.9},
}.items():
    for k, v in vals.items():
        key = (ds, "3.3", k, 1.0, 1.0) if isinstance(k, str) else (ds, "3.3", "MB", k, 1.0)
        PAPER[key] = v
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
            PAPER[(ds, "3.4", method, 1.0, ey)] = v


def summarize(rows: list[dict]) -> list[dict]:
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
                paper=PAPER.get(key[:5]),
                epsilon_reported=None if any(e is None for e in eps) else max(eps),
                **seed_stats(rs),
            )
        )
    return out


def _eps(v) -> str:
    return "inf" if v is None else f"{v:g}"


def table(summary: list[dict]) -> str:
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


def footnote(summary: list[dict]) -> str:
    protocols = sorted({s["protocol"] for s in summary})
    return (
        "Unit: `ldp` (each node's features and label perturbed on the node; edges public). "
        f"Protocol: {', '.join(f'`{p}`' for p in protocols)} (`{LEGACY_PROTOCOL}`: features "
        f"min-max scaled from the data, positional split; `{PROTOCOL}`: public feature bounds "
        "(0, 1), identity-keyed split, isolated nodes kept, OS-entropy noise)."
    )


def plot(summary: list[dict], path: Path) -> None:
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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jsonl", type=Path, default=RESULTS / "lpgnn_accuracy.jsonl")
    p.add_argument("--no-doc", action="store_true", help="do not touch docs/lpgnn.md")
    args = p.parse_args()
    rows = load_rows(args.jsonl)
    summary = summarize(rows)
    base = args.jsonl.with_suffix("")
    commands = sorted({r["command"] for r in rows})
    meta = {"commands": commands, "hardware": rows[0]["hardware"], "summary": summary}
    base.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    md = table(summary) + "\n\n" + footnote(summary)
    base.with_suffix(".md").write_text(md + "\n")
    plot(summary, base.with_suffix(".png"))
    if not args.no_doc:
        doc = DOC.read_text()
        if BEGIN in doc and END in doc:
            head, rest = doc.split(BEGIN)
            DOC.write_text(head + BEGIN + "\n" + md + "\n" + END + rest.split(END)[1])
    print(md)


if __name__ == "__main__":
    main()
