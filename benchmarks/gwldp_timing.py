"""GW-LDP wall-clock times, each row with the load average it ran under (the CPU is shared).

Tasks (``--tasks``):

* ``fit``: the FedAvg fit of ``gwldp_accuracy.py`` (MUTAG, 10 clients, Dirichlet 0.5, GCN,
  ``--rounds`` rounds of one local epoch, validation every round), single-threaded. ``--label``
  names the library that ran it: the before/after of a change runs this script twice in one
  shell command, once with ``PYTHONPATH`` at an export of the old library (``--revision`` names
  it; ``git archive REV lightning_dpgnn | tar -x -C DIR``).
* ``allpairs``: all 17,578 pairs of MUTAG, GW_A of the raw graphs (shortest paths), POT's
  conditional gradient, ``--jobs`` joblib workers, no cache.
* ``proteins_pairs``: ``--pairs`` random pairs of PROTEINS (GW_A), ``--jobs`` workers; the row
  extrapolates to all 618,828 pairs.

Rows go to ``results/gwldp_timing.jsonl`` (one-off: a re-run appends); the table is
``summarize.py gwldp_timing``. ``--smoke`` (give ``--out``): one round, 20 graphs, 50 pairs.

    nice -n 10 env OMP_NUM_THREADS=1 DPGNN_DATA=/abs/shared/datasets \\
        python benchmarks/gwldp_timing.py --tasks fit allpairs proteins_pairs
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from common import RESULTS, add_smoke_flag, quiet_trainer, refuse_smoke_into, run_and_write

OUT = RESULTS / "gwldp_timing.jsonl"
TASKS = ("fit", "allpairs", "proteins_pairs")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _graphs(name: str, limit: int | None):
    from lightning_dpgnn.data import GraphDataModule

    dm = GraphDataModule(name)
    dm.setup()
    graphs = list(dm.dataset)
    return graphs if limit is None else graphs[:limit]


def fit_task(args) -> dict:
    import lightning_dpgnn
    from lightning_dpgnn import GWLDP
    from lightning_dpgnn.data import GraphDataModule

    dm = GraphDataModule("mutag", split=(0.7, 0.2, 0.1), num_clients=10, dirichlet_alpha=0.5,
                         partition_seed=0, seed=0, batch_size=64)  # fmt: skip
    if args.graphs is not None:
        dm = GraphDataModule("mutag", graphs=_graphs("mutag", args.graphs), split=(0.6, 0.2, 0.2),
                             num_clients=2, dirichlet_alpha=5.0, partition_seed=0, seed=0)
    model = GWLDP(mode="none", gnn="gcn", seed=0, local_epochs=1)
    load = _load()
    t0 = time.perf_counter()
    quiet_trainer(max_epochs=args.rounds, num_sanity_val_steps=0).fit(model, dm)
    return {"seconds": round(time.perf_counter() - t0, 2), "load_before": load,
            "load_after": _load(), "library": str(Path(lightning_dpgnn.__file__).parent)}


def pairs_task(name: str, args) -> dict:
    from lightning_dpgnn import gw

    graphs = _graphs(name, args.graphs)
    costs = [gw.structure_cost(g.edge_index, g.num_nodes) for g in graphs]
    n = len(costs)
    total = n * (n - 1) // 2
    load = _load()
    if name == "mutag":
        t0 = time.perf_counter()
        gw.pairwise_discrepancy(costs, n_jobs=args.jobs)
        pairs = total
    else:  # a seeded sample of pairs, timed the same way (joblib over blocks of pairs)
        rng = np.random.default_rng(0)
        chosen = set()
        while len(chosen) < min(args.pairs, total):
            i, j = sorted(rng.choice(n, 2, replace=False).tolist())
            chosen.add((i, j))
        t0 = time.perf_counter()
        gw.pair_discrepancies(sorted(chosen), costs, n_jobs=args.jobs, chunk=64)
        pairs = len(chosen)
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 2), "pairs": pairs, "all_pairs": total,
            "all_pairs_estimate_s": round(seconds * total / pairs, 1),
            "load_before": load, "load_after": _load()}


def cells(args):
    base = {"key": None, "label": args.label, "cpus": os.cpu_count()}
    if args.revision:
        base["revision"] = args.revision
    for task in args.tasks:
        if task == "fit":
            yield {**base, "task": "fit", "rounds": args.rounds, "threads": 1}, \
                lambda: fit_task(args)
        elif task == "allpairs":
            yield {**base, "task": "allpairs", "dataset": "mutag", "jobs": args.jobs}, \
                lambda: pairs_task("mutag", args)
        else:
            yield {**base, "task": "proteins_pairs", "dataset": "proteins", "jobs": args.jobs}, \
                lambda: pairs_task("proteins", args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--revision", default=None,
                        help="the revision of the library on PYTHONPATH (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--graphs", type=int, default=None, help="the first N graphs only")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--summarize", action="store_true", help="the table of --out only")
    add_smoke_flag(parser)
    args = parser.parse_args()
    refuse_smoke_into(OUT, parser, args)
    if args.smoke:
        args.rounds, args.graphs, args.pairs = 1, 20, 50
    run_and_write(cells(args), args.out, "gwldp_timing", run=not args.summarize,
                  one_thread=True)


if __name__ == "__main__":
    main()
