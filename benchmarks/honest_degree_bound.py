"""What an honest node-level degree bound costs (issue 27, fault 2).

Node-level GAP and ProGAP with ``max_degree`` = the graph's observed maximum degree (the bound
the zoo and the node-level tables used before issue 27, read off the private graph:
``gap_accuracy.OBSERVED_MAX_DEGREE``) against a bound declared from public knowledge
(``gap_accuracy.MAX_DEGREE``, sources in ``gap_accuracy.DEGREE_BOUND_SOURCE``), at the zoo
entries' epsilon (8), everything else as in ``gap_accuracy.py`` / ``progap_accuracy.py``
(protocol ``public-v2``). One JSON row per run in ``results/honest_degree_bound.jsonl``
(re-running skips what is done; ``degree_bound`` says which D a row used); ``--summary`` writes
``results/honest_degree_bound.md`` (mean test accuracy with a 95% bootstrap CI over seeds, and
the paired difference honest - observed per seed).

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets nohup python \\
        benchmarks/honest_degree_bound.py --seeds 10 --methods GAP-NDP &
    python benchmarks/honest_degree_bound.py --summary
"""

from __future__ import annotations

import sys

import numpy as np
import progap_accuracy as progap
from common import RESULTS, bootstrap_ci, grid_parser, load_rows, run_grid
from gap_accuracy import COMMON, DATASETS, MAX_DEGREE, NODE, OBSERVED_MAX_DEGREE

OUT = RESULTS / "honest_degree_bound.jsonl"
EPSILON = 8.0  # the node-level zoo entries
#: ProGAP only on the two schools (a bounded run: <= 35 CPU minutes in all)
PROGAP_DATASETS = ("facebook100/Rutgers89", "facebook100/Wisconsin87")
BOUNDS = {"observed": OBSERVED_MAX_DEGREE, "public": MAX_DEGREE}


def configs(dataset: str, edge_units=()):
    """``(method, epsilon, unit, build)``: GAP-NDP and ProGAP-NDP at each kind of bound (the
    kind is part of the method name, so both land under distinct keys)."""
    from lightning_dpgnn import GAP, ProGAP

    for kind, bounds in BOUNDS.items():
        d = bounds[dataset]
        yield (
            f"GAP-NDP[{kind} D]",
            EPSILON,
            "node",
            lambda s, d=d: GAP(
                privacy="node", epsilon=EPSILON, seed=s, max_degree=d, **COMMON, **NODE
            ),
        )
    if dataset not in PROGAP_DATASETS:
        return
    for kind, bounds in BOUNDS.items():
        d = bounds[dataset]
        yield (
            f"ProGAP-NDP[{kind} D]",
            EPSILON,
            "node",
            lambda s, d=d: ProGAP(
                privacy="node", epsilon=EPSILON, training="progressive", seed=s,
                max_degree=d, **progap.COMMON, **progap.NODE,
            ),
        )


def summary() -> str:
    rows = [r for r in load_rows(OUT) if r.get("test_acc") is not None]
    lines = [
        "# Honest node-level degree bound: what it costs (issue 27)",
        "",
        "Test accuracy (%), mean [95% bootstrap CI] over seeds, node level, epsilon "
        f"{EPSILON:g}, protocol public-v2. *observed D*: the graph's maximum degree (read off "
        "the private graph, the bound used before issue 27); *public D*: declared from public "
        "knowledge (`benchmarks/gap_accuracy.py`, `DEGREE_BOUND_SOURCE`). Cost: the paired "
        "difference public - observed over the same seeds (same split).",
        "",
        "| dataset | method | observed D | acc | public D | acc | cost (points) | seeds |",
        "|---|---|---:|---|---:|---|---|---:|",
    ]
    for dataset in DATASETS:
        for method in ("GAP-NDP", "ProGAP-NDP"):
            by = {}
            for kind in BOUNDS:
                sel = [r for r in rows if r["dataset"] == dataset
                       and r["method"] == f"{method}[{kind} D]"]
                by[kind] = {r["seed"]: 100 * r["test_acc"] for r in sel}
            seeds = sorted(set(by["observed"]) & set(by["public"]))
            if not seeds:
                continue

            def fmt(values):
                m, lo, hi = bootstrap_ci(values)
                return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"

            obs = [by["observed"][s] for s in seeds]
            pub = [by["public"][s] for s in seeds]
            diff = list(np.subtract(pub, obs))
            lines.append(
                f"| {dataset} | {method} | {OBSERVED_MAX_DEGREE[dataset]:,} | {fmt(obs)} | "
                f"{MAX_DEGREE[dataset]:,} | {fmt(pub)} | {fmt(diff)} | {len(seeds)} |"
            )
    lines += [
        "",
        "Command: `OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python "
        "benchmarks/honest_degree_bound.py --seeds 10 [--methods ...] [--datasets ...]`, then "
        "`python benchmarks/honest_degree_bound.py --summary`. Single thread, 2 shared CPU "
        "cores.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    if "--summary" in sys.argv:
        text = summary()
        (RESULTS / "honest_degree_bound.md").write_text(text)
        print(text)
        return
    import torch

    torch.set_num_threads(1)
    parser = grid_parser(__doc__, DATASETS, OUT)
    args = parser.parse_args()
    if args.methods:  # "GAP-NDP" selects both bounds of that method
        args.methods = [f"{m}[{k} D]" for m in args.methods for k in BOUNDS]
    run_grid(configs, DATASETS, args)


if __name__ == "__main__":
    main()
