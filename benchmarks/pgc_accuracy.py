"""PGC benchmark (thesis Table 2.3): node classification (micro-F1 = accuracy) and link
prediction (ROC AUC) with LM / PM / PGC features at eps in {1, 5, 9} and the RAW baseline.

Protocol (§2.6.3): features scaled to [0, 1] (alpha = 0, Delta = 1) from the public bounds
``feature_bounds=(0, 1)`` (every dataset here has 0/1 features), each feature with budget
eps (the accountant reports ``d * eps`` per node); node classification: two-layer GCN (hidden
32, ReLU) on the public Planetoid splits for Cora / CiteSeer and 50/25/25 elsewhere, Adam up to
500 epochs, at least 10, stop when the validation loss has not decreased for 20 epochs
(random splits are identity-keyed, isolated nodes kept: protocol ``common.PROTOCOL``; rows
without a ``protocol`` are ``paper-v0``: min-max scaling from the data, positional split);
link prediction: VGAE with a two-layer GCN encoder (32, 16, batch norm after the first layer),
85/5/10 edge split, at least 100 epochs, validation every 10 epochs, stop after 10 checks
without improvement. The weights of the best validation epoch are restored before testing.

Hyper-parameters: Table 2.2's values where the thesis gives them (Cora, CiteSeer, Twitch),
else the Cora ones. ``--search`` re-runs the thesis' search: a grid over learning rate, weight
decay and dropout for RAW, on the validation set (accuracy / AUC), reused by every mechanism;
the choice is stored in ``results/pgc_hparams.json``.

    DPGNN_DATA=../shared/datasets python benchmarks/pgc_accuracy.py --seeds 10
    python benchmarks/summarize.py pgc   # the tables in docs/pgc.md
    # smoke (cora, one run, 2 epochs): python benchmarks/pgc_accuracy.py --smoke --out /tmp/p.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from functools import partial
from pathlib import Path

import settings as S
from common import (
    PROTOCOL,
    RESULTS,
    add_smoke_flag,
    datamodule_settings,
    quiet,
    quiet_trainer,
    report_fields,
    run_cells,
)

INF = math.inf
DATASETS = S.PGC_DATASETS
EPSILONS = [1.0, 5.0, 9.0]
METHODS = {"LM": "laplace", "PM": "piecewise", "PGC": "onebit"}
TASKS = ("node", "link")
GRID = dict(lr=[0.001, 0.01], weight_decay=[0.0, 1e-4, 1e-3, 1e-2, 1e-1], dropout=[0.0, 0.5])


default_hparams = S.pgc_hparams  # Table 2.2 (settings.TABLE_2_2)


def fit_pgc(dm, task: str, mechanism: str, eps: float, hp: dict, seed: int, max_epochs: int):
    """Train one model; returns (test metric, validation metric, report, selected epoch)."""
    import torch
    from lightning_dpgnn.callbacks import DropEarlyStopping

    from lightning_dpgnn import PGC, PGCLinkPrediction

    torch.manual_seed(seed)
    cls = PGC if task == "node" else PGCLinkPrediction
    # ``seed`` seeds the weights (above); the LDP noise comes from OS entropy (no noise_seed)
    model = cls(x_epsilon=eps, mechanism=mechanism, **hp)
    if task == "node":
        stopper = DropEarlyStopping(acc_star=None, patience=20, min_epochs=10)
        every, metric = 1, "acc"
    else:
        stopper = DropEarlyStopping(acc_star=None, patience=10, min_epochs=100)
        every, metric = 10, "auc"
    trainer = quiet_trainer(
        max_epochs=max_epochs,
        check_val_every_n_epoch=min(every, max_epochs),
        callbacks=[stopper],
    )
    trainer.fit(model, dm)
    val = trainer.validate(model, dm, verbose=False)[0][f"val/{metric}"]
    test = trainer.test(model, dm, verbose=False)[0][f"test/{metric}"]
    best = stopper.best
    return float(test), float(val), model.privacy_spent(), None if best is None else best.epoch


def search(dm, task: str, seed: int, max_epochs: int) -> dict:
    """§2.6.4: grid search for RAW on the validation set; the best is reused by all methods."""
    best = None
    for lr, wd, dp in itertools.product(*GRID.values()):
        hp = dict(lr=lr, weight_decay=wd, dropout=dp)
        _, val, _, _ = fit_pgc(dm, task, "onebit", INF, hp, seed, max_epochs)
        if best is None or val > best[0]:
            best = (val, hp)
    return best[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=list(DATASETS))
    p.add_argument("--tasks", nargs="*", default=list(TASKS), choices=TASKS)
    p.add_argument("--methods", nargs="*", default=[*METHODS, "RAW"])
    p.add_argument("--epsilons", nargs="*", type=float, default=EPSILONS, help="per feature")
    p.add_argument("--max-epochs", type=int, default=500)
    p.add_argument("--search", action="store_true", help="grid-search RAW's hyper-parameters")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--out", type=Path, default=RESULTS / "pgc_accuracy.jsonl")
    add_smoke_flag(p)
    args = p.parse_args()
    if args.smoke:  # csbm is not a PGC dataset: cora, node classification, PGC at eps 1
        args.seeds, args.datasets, args.max_epochs = 1, ["cora"], 2
        args.tasks, args.methods, args.epsilons = ["node"], ["PGC"], [1.0]
    quiet()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    sys.exit(run_cells(cells(args), args.out) > 0)


def cells(args):
    """``(meta, fit)`` of every selected run, seeds outermost."""
    from lightning_dpgnn.data import NodeDataModule

    hp_path = args.out.with_name("pgc_hparams.json")
    chosen = json.loads(hp_path.read_text()) if hp_path.exists() else {}
    for seed in range(args.seeds):
        for name in args.datasets:
            dm = NodeDataModule(name, seed=seed, **DATASETS[name])
            dm.setup()
            for task in args.tasks:
                hkey = f"{name}|{task}"
                if args.search and hkey not in chosen:
                    chosen[hkey] = search(dm, task, 0, args.max_epochs)
                    hp_path.parent.mkdir(parents=True, exist_ok=True)
                    hp_path.write_text(json.dumps(chosen, indent=1))
                hp = chosen.get(hkey) or default_hparams(task, name)
                runs = [("RAW", "onebit", INF)] if "RAW" in args.methods else []
                runs += [
                    (m, METHODS[m], e)
                    for m, e in itertools.product(METHODS, args.epsilons)
                    if m in args.methods
                ]
                for method, mech, eps in runs:
                    key = f"{name}|{task}|{method}|{eps}|{PROTOCOL}|{seed}"
                    meta = dict(
                        key=key,
                        dataset=name,
                        task=task,
                        method=method,
                        epsilon_per_feature=None if math.isinf(eps) else eps,
                        seed=seed,
                        unit="none" if math.isinf(eps) else "ldp",
                        protocol=PROTOCOL,
                        preprocessing=datamodule_settings(dm),
                        metric="accuracy" if task == "node" else "auc",
                        hparams=hp,
                    )
                    yield meta, partial(pgc_result, dm, task, mech, eps, hp, seed, args.max_epochs)


def pgc_result(dm, task, mech, eps, hp, seed, max_epochs) -> dict:
    test, val, report, epoch = fit_pgc(dm, task, mech, eps, hp, seed, max_epochs)
    return dict(
        test_metric=test,
        val_metric=val,
        selected_epoch=epoch,
        **report_fields(report),
    )


if __name__ == "__main__":
    main()
