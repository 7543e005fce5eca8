"""Summarize the PGC benchmarks: results/pgc_accuracy.jsonl (mean and 95% bootstrap CI next to
thesis Table 2.3) and results/pgc_estimation_error.json (MAE vs epsilon), as markdown (also
written into docs/pgc.md between the BENCHMARK / ESTIMATION markers) and JSON.

    python benchmarks/pgc_summarize.py [--jsonl ...] [--errors ...] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from common import LEGACY_PROTOCOL, PROTOCOL, RESULTS, load_rows, row_protocol, seed_stats

DOC = Path(__file__).resolve().parents[1] / "docs" / "pgc.md"
MARKERS = {
    "accuracy": ("<!-- BENCHMARK:BEGIN -->", "<!-- BENCHMARK:END -->"),
    "errors": ("<!-- ESTIMATION:BEGIN -->", "<!-- ESTIMATION:END -->"),
}

# thesis Table 2.3: node classification micro-F1 % and link prediction AUC % at eps 1 / 5 / 9
PAPER = {}
for ds, rows in {
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
    for method, (node, link) in rows.items():
        for task, vals in (("node", node), ("link", link)):
            if method == "RAW":
                PAPER[(ds, task, method, None)] = vals[0]
            else:
                for eps, v in zip([1.0, 5.0, 9.0], vals, strict=True):
                    PAPER[(ds, task, method, eps)] = v


def summarize(rows: list[dict]) -> list[dict]:
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
                paper=PAPER.get(key[:4]),
                epsilon_per_node=None if any(e is None for e in eps) else max(eps),
                **seed_stats(rs, "test_metric"),
            )
        )
    return out


def accuracy_table(summary: list[dict]) -> str:
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


def error_table(errors: dict) -> str:
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


def write_doc(section: str, md: str) -> None:
    begin, end = MARKERS[section]
    doc = DOC.read_text()
    if begin in doc and end in doc:
        head, rest = doc.split(begin)
        DOC.write_text(head + begin + "\n" + md + "\n" + end + rest.split(end)[1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jsonl", type=Path, default=RESULTS / "pgc_accuracy.jsonl")
    p.add_argument("--errors", type=Path, default=RESULTS / "pgc_estimation_error.json")
    p.add_argument("--no-doc", action="store_true", help="do not touch docs/pgc.md")
    args = p.parse_args()
    if args.jsonl.exists():
        rows = load_rows(args.jsonl)
        summary = summarize(rows)
        base = args.jsonl.with_suffix("")
        meta = {
            "commands": sorted({r["command"] for r in rows}),
            "hardware": rows[0]["hardware"],
            "summary": summary,
        }
        base.with_suffix(".json").write_text(json.dumps(meta, indent=1))
        protocols = sorted({s["protocol"] for s in summary})
        md = accuracy_table(summary) + (
            "\n\nUnit: `ldp` (each node's features perturbed on the node; edges and labels "
            "public), RAW `none`. Protocol: "
            + ", ".join(f"`{p}`" for p in protocols)
            + f" (`{LEGACY_PROTOCOL}`: features min-max scaled from the data, positional random "
            f"split; `{PROTOCOL}`: public feature bounds (0, 1), identity-keyed split, isolated "
            "nodes kept, OS-entropy noise)."
        )
        base.with_suffix(".md").write_text(md + "\n")
        if not args.no_doc:
            write_doc("accuracy", md)
        print(md)
    if args.errors.exists():
        errors = json.loads(args.errors.read_text())
        md = error_table(errors) + (
            f"\n\nUnit: `ldp`. Protocol: `{errors.get('protocol', LEGACY_PROTOCOL)}` "
            "(features scaled to [0, 1]"
            + (
                " from the public bounds (0, 1))."
                if errors.get("protocol")
                else " by per-column min-max over the data)."
            )
        )
        args.errors.with_name(args.errors.stem + ".md").write_text(md + "\n")
        if not args.no_doc:
            write_doc("errors", md)
        print(md)


if __name__ == "__main__":
    main()
