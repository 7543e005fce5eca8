"""ProGAP at scale (issue 5): all Facebook100 schools merged into one graph, edge epsilon 1.

Loads ``facebook100/all`` (every school in ``$DPGNN_DATA/facebook100`` stacked into one graph,
target ``year``, classes with >= 1% of the nodes, isolated nodes kept, identity-keyed 75/10/15
split: protocol ``common.PROTOCOL``, except that the class filter is the data-derived default,
which reads only labels, public at edge level), then fits and tests ProGAP at edge-level epsilon
1 with the settings of ``progap_accuracy.py`` (``settings.PROGAP_*``) and the thesis' unit (one
directed edge) unless ``--edge-unit undirected``. Appends one JSON row to
``results/progap_scale.jsonl`` with the graph size, load / fit / total wall time, CPU time and
peak resident memory (the scale row of the performance table), the protected unit and the
protocol. Rows without a ``unit`` are ``edge-directed`` under protocol ``paper-v0``.

    DPGNN_DATA=../shared/datasets python benchmarks/progap_scale.py
    python benchmarks/progap_scale.py --smoke --out /tmp/scale.jsonl   # csbm: code path only
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import settings as S
from common import (
    PROTOCOL,
    RESULTS,
    PeakRSS,
    add_smoke_flag,
    cpu_info,
    datamodule_settings,
    quiet,
    quiet_trainer,
    report_fields,
    run_cells,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", default="facebook100/all")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--target", default="year", help="label column (csbm: none)")
    p.add_argument("--epochs-per-stage", type=int, default=S.PROGAP_EDGE["epochs_per_stage"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--edge-unit", default="directed", choices=["directed", "undirected"])
    p.add_argument("--root", default=None, help="data root (default: $DPGNN_DATA)")
    p.add_argument("--out", type=Path, default=RESULTS / "progap_scale.jsonl")
    add_smoke_flag(p)
    args = p.parse_args()
    if args.smoke:  # the csbm graph, 1 epoch per stage
        args.dataset, args.target, args.epochs_per_stage = S.SMOKE_DATASET, None, 1
    quiet()
    meta = dict(key=None, dataset=args.dataset, method="ProGAP-EDP", target_epsilon=args.epsilon,
                seed=args.seed, unit=f"edge-{args.edge_unit}", protocol=PROTOCOL)  # fmt: skip
    run_cells([(meta, lambda: scale_run(args))], args.out, measured=False)


def scale_run(args) -> dict:
    """Load, fit and test once; the graph's size, the times and the peak RSS."""
    from lightning_dpgnn import ProGAP
    from lightning_dpgnn.data import NodeDataModule

    t0, c0 = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        target = {"target": args.target} if args.target else {}
        dm = NodeDataModule(
            args.dataset, root=args.root, seed=args.seed, remove_isolated=False, **target
        )
        dm.setup()
        data = dm.data
        load_s = time.perf_counter() - t0
        print(f"loaded {data.num_nodes} nodes, {data.num_edges} edges in {load_s:.0f}s", flush=True)
        settings = {
            **S.PROGAP_COMMON,
            **S.PROGAP_EDGE,
            "epochs_per_stage": args.epochs_per_stage,
            "edge_unit": args.edge_unit,
        }
        model = ProGAP(privacy="edge", epsilon=args.epsilon, seed=args.seed, **settings)
        trainer = quiet_trainer()
        t1 = time.perf_counter()
        trainer.fit(model, dm)
        fit_s = time.perf_counter() - t1
        acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    report = model.privacy_spent()
    row = dict(
        preprocessing=datamodule_settings(dm),
        num_nodes=data.num_nodes,
        num_edges=data.num_edges,
        num_features=data.num_features,
        num_classes=dm.num_classes,
        settings=settings,
        test_acc=float(acc),
        **report_fields(report),
        load_s=round(load_s, 1),
        fit_s=round(fit_s, 1),
        wall_s=round(time.perf_counter() - t0, 1),
        cpu_s=round(time.process_time() - c0, 1),
        peak_rss_mb=round(mem.peak_mb, 1),
        hardware=cpu_info(),
    )
    print(row, flush=True)
    return row


if __name__ == "__main__":
    main()
