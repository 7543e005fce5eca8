"""Attacks against trained models: node membership inference (TSTF, thesis Table 4.3 analogue)
and link stealing (posterior similarity), AUC with 95% bootstrap CIs over seeds.

Each row fits a target model on the dataset (the benchmark's own preprocessing, as in
``gap_accuracy.py``) and attacks it: ``mia`` fits one shadow model of the target's class and
hyper-parameters per seed (:func:`lightning_dpgnn.attacks.node_membership_inference`, one
repeat; the CI is over seeds, each with its own target, shadow split and attack model);
``link`` scores 2000 edges against 2000 non-edges by the similarity of the endpoints'
posteriors. One JSON line per (attack, dataset, method, epsilon, seed) is appended to
``results/audit_attacks.jsonl`` (re-running skips what is done); ``--summarize`` (or
``summarize.py attacks``) writes ``results/audit_attacks.md`` and the table in
``docs/audits.md``. Settings and model builders: ``settings.py`` (``ATTACK_*``, ``build``).

Methods are ``NAME`` of :data:`METHODS` or ``Class:level`` with any class exported by
``lightning_dpgnn`` (``level`` in ``node``/``edge``), e.g. ``DPGNN:node`` once the baselines
land; its keyword arguments come from ``settings.attack_settings`` (by class name) or
``--model-args``.
Epsilon ``inf`` fits the non-private counterpart (``privacy="none"``; DP-MLP -> MLP).

    # Table 4.3 analogue (MIA, node level):
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack mia \\
        --methods GAP-NDP ProGAP-NDP DP-MLP --epsilons 1 2 4 8 16 inf --seeds 10
    # link stealing, edge level vs the non-private GNN:
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack link \\
        --methods GAP-EDP ProGAP-EDP --epsilons 0.5 1 4 --seeds 10
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack link \\
        --methods SAGE-inf MLP-inf --epsilons inf --seeds 10
    # musae-facebook (hours): each (method, eps) cell's seeds in a row, resumable
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack mia \
        --datasets musae-facebook --methods GAP-NDP DP-MLP ProGAP-NDP DPGNN \
        --epsilons 1 inf 2 4 8 16 --seeds 10 --order cells
    python benchmarks/audit_attacks.py --summarize   # cells under --min-seeds (10): "running"
    python benchmarks/audit_attacks.py --smoke --attack link --out /tmp/a.jsonl   # code path
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import partial
from pathlib import Path

import settings as S
from common import RESULTS, add_smoke_flag, quiet, run_cells, smoke_args, trainer_for

OUT = RESULTS / "audit_attacks.jsonl"
DATASETS = S.ATTACK_DATASETS
METHODS = S.ATTACK_METHODS
resolve, build, shadow_builder = S.resolve, S.build, S.shadow_builder


def run(args) -> int:
    """Every ``(attack, dataset, method, epsilon, seed)`` cell through ``common.run_cells``
    (in process; the file is re-read before each cell: several processes may share it)."""
    quiet()
    import torch

    torch.set_num_threads(args.threads)
    return run_cells(cells(args), args.out, measured=False, recheck=True)


def cells(args):
    """``(meta, fit)`` per cell in :func:`run_order`; the data module of a (dataset, seed) is
    built on the first fit that needs it and kept while they repeat."""
    extra = json.loads(args.model_args)
    data_modules: dict[tuple[str, int], tuple] = {}

    def data_module(name: str, seed: int) -> tuple:
        """``(data module, D)`` of ``name`` and ``seed``; the last one is kept (runs reuse it
        while the dataset and seed repeat)."""
        from lightning_dpgnn.data import NodeDataModule

        if (name, seed) not in data_modules:
            data_modules.clear()
            dm = NodeDataModule(name, seed=seed, **DATASETS[name])
            data_modules[name, seed] = dm, S.max_degree(dm.data)
        return data_modules[name, seed]

    def fit(name: str, method: str, eps: float, seed: int) -> dict:
        from lightning_dpgnn.attacks import link_stealing, node_membership_inference

        dm, d = data_module(name, seed)
        data = dm.data
        model = build(method, eps, seed, d, extra)
        trainer = trainer_for(model, **S.TRAINER)
        trainer.fit(model, dm)
        if args.attack == "mia":
            res = node_membership_inference(
                model, data, repeats=1, seed=seed, trainer_kwargs=dict(S.TRAINER),
                shadow=shadow_builder(model, method, eps, seed, d, extra),
            )  # fmt: skip
        else:
            res = link_stealing(model, data, repeats=1, seed=seed)
        report = model.privacy_spent()
        auc = res.aucs[0]
        print(f"{args.attack}|{name}|{method}|{eps}|{seed}: AUC {auc:.3f}", flush=True)
        return dict(
            auc=auc, level=report.level,
            epsilon=None if math.isinf(report.epsilon) else report.epsilon,
            delta=report.delta, noise_multiplier=getattr(model, "noise_multiplier", None),
        )  # fmt: skip

    for name, method, eps, seed in run_order(args):
        if resolve(method)[1] == "none" and not math.isinf(eps):
            continue  # a non-private method has one column: inf
        meta = dict(key=f"{args.attack}|{name}|{method}|{eps}|{seed}", attack=args.attack,
                    dataset=name, method=method, target_epsilon=eps, seed=seed)  # fmt: skip
        yield meta, partial(fit, name, method, eps, seed)


def run_order(args) -> list[tuple[str, str, float, int]]:
    """``(dataset, method, epsilon, seed)`` in run order: ``seeds`` (every cell gains a seed
    at a time; one data module per seed and dataset) or ``cells`` (each (method, epsilon)
    cell's seeds in a row, so an interrupted run leaves complete cells)."""
    seeds = range(args.seeds)
    if args.order == "cells":
        return [(n, m, e, s) for n in args.datasets for m in args.methods for e in args.epsilons
                for s in seeds]  # fmt: skip
    return [(n, m, e, s) for s in seeds for n in args.datasets for m in args.methods
            for e in args.epsilons]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--attack", choices=["mia", "link"], default="mia")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=["facebook100/Swarthmore42", "musae-facebook"])
    p.add_argument("--methods", nargs="*", default=["GAP-NDP", "ProGAP-NDP", "DP-MLP"])
    p.add_argument("--epsilons", nargs="*", type=float, default=[1, 2, 4, 8, 16, math.inf])
    p.add_argument("--model-args", default="{}", help="JSON keyword arguments for every model")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument(
        "--order",
        choices=["seeds", "cells"],
        default="seeds",
        help="seeds: all cells one seed at a time; cells: one cell's seeds in a row",
    )
    p.add_argument("--out", type=Path, default=OUT)
    add_smoke_flag(p)
    p.add_argument("--summarize", action="store_true", help="write results/audit_attacks.md")
    p.add_argument(
        "--min-seeds",
        type=int,
        default=10,
        help="--summarize: cells with fewer seeds show only their count",
    )
    args = p.parse_args()
    if args.summarize:  # the same as `python benchmarks/summarize.py attacks`
        import summarize

        summarize.write("attacks", args.out, min_seeds=args.min_seeds)
        return
    smoke_args(args)
    if args.smoke:  # one cell: the first method at the first epsilon
        args.methods, args.epsilons = args.methods[:1], args.epsilons[:1]
    sys.exit(run(args) > 0)


if __name__ == "__main__":
    main()
