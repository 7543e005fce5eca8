"""Issue 32's mini-batch lever, measured: GAP's modules after the private aggregation (and its
encoder) trained on shuffled mini-batches of their rows instead of one full batch.

At edge level every stage of GAP trains on rows that are post-processing of the release (the
cached noisy aggregates) or carry no edge at all (the encoder on the node's own features), so
the batch size is free of privacy cost; what it changes is how many optimizer steps an epoch
gives, and so how many epochs reach a given accuracy. GAP trains these stages full batch by
default; ``train_batch_size=B`` trains them on shuffled batches of ``B`` rows. This study
measures, on Facebook100 Rutgers89
(the protocol of ``reference_parity.py``: target year, classes >= 1000 nodes, 75/10/15,
edge epsilon 1, delta 1e-7, directed unit; split seed = weight seed = the row's seed, noise
from the OS), fit + test wall time (one thread, the settings alternated within each seed)
and test accuracy:

* ``full-100``: the library's default, one full batch, 100 epochs per stage;
* ``b{B}-{E}``: batches of ``B`` rows (``--batch-size``), ``E`` epochs per stage
  (``--epochs``, default 100 and 25);
* ``<setting>-v{N}`` (``--val-every N ...``, none by default): each setting above again with
  the issue's other per-epoch lever, validation every ``N`` epochs
  (``Trainer(check_val_every_n_epoch=N)``): each stage then keeps its best *validated* epoch,
  so model selection sees a ``1/N`` sample of the epochs.

Rows go to ``results/minibatch_lever.jsonl``; the table (mean and 95% bootstrap CI over
seeds, median time) to ``results/minibatch_lever.md`` (quoted in docs/performance.md).

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets python benchmarks/minibatch_lever.py
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/minibatch_lever.py --method ProGAP \\
        --epochs 25
    python benchmarks/minibatch_lever.py --smoke --out /tmp/m.jsonl   # csbm, one seed
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import settings as S
from common import (
    RESULTS,
    add_smoke_flag,
    bootstrap_ci,
    load_rows,
    quiet,
    quiet_trainer,
    run_cells,
)

OUT = RESULTS / "minibatch_lever.jsonl"
PRIVATE = dict(privacy="edge", epsilon=1.0, delta=1e-7, edge_unit="directed",
               label_counts=False)


def fit(
    method: str, dataset: str, batch_size: int | None, epochs: int, seed: int, val_every: int = 1
) -> dict:
    import torch

    from lightning_dpgnn import GAP, ProGAP
    from lightning_dpgnn.data import NodeDataModule

    torch.set_num_threads(1)
    kwargs = S.SMOKE_DATA if dataset == S.SMOKE_DATASET else dict(target="year",
                                                                  min_class_size=1000)
    dm = NodeDataModule(dataset, seed=seed, **kwargs)
    torch.manual_seed(seed)  # the weights and the batches' shuffling (never the noise)
    if method == "GAP":
        model = GAP(hops=2, encoder_epochs=epochs, classifier_epochs=epochs, seed=seed,
                    train_batch_size=batch_size, **PRIVATE)
    else:
        model = ProGAP(depth=3, epochs_per_stage=epochs, seed=seed,
                       train_batch_size=batch_size, **PRIVATE)
    start = time.perf_counter()
    trainer = quiet_trainer(check_val_every_n_epoch=val_every)
    trainer.fit(model, dm)
    acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    seconds = time.perf_counter() - start
    return {"test_acc": float(acc), "fit_test_s": seconds,
            "epsilon": model.privacy_spent().epsilon}


def settings_of(args) -> list[tuple[str, int | None, int, int]]:
    """(name, batch size, epochs per stage, validate every n epochs) of each setting."""
    base = [("full-100", None, 100)]
    base += [(f"b{args.batch_size}-{e}", args.batch_size, e) for e in args.epochs]
    return [(name, b, e, 1) for name, b, e in base] + [
        (f"{name}-v{n}", b, e, n) for n in args.val_every for name, b, e in base
    ]


def cells(args):
    for seed in range(args.seeds):
        runs = settings_of(args)
        if seed % 2:  # alternate the order, so every setting sees the same load
            runs = runs[::-1]
        for name, batch, epochs, every in runs:
            epochs = 1 if args.smoke else epochs
            key = f"{args.dataset}|{name}|{seed}"
            meta = {"key": key if args.method == "GAP" else f"{args.method}|{key}",
                    "method": args.method, "dataset": args.dataset, "setting": name,
                    "batch_size": batch, "epochs": epochs, "val_every": every, "seed": seed}

            def run(batch=batch, epochs=epochs, seed=seed, every=every):
                return fit(args.method, args.dataset, batch, epochs, seed, every)

            yield meta, run


def table(path: Path) -> str:
    rows = load_rows(path)
    lines = [
        "# GAP K=2 and ProGAP K=3: mini-batches and validation frequency (issue 32)", "",
        f"From `{path.name}` ({len(rows)} rows). Test accuracy (%), mean (95% bootstrap CI) "
        "over seeds; fit + test wall time, median (one thread, settings alternated).", "",
        "| method | dataset | setting | seeds | test accuracy | fit + test |",
        "|---|---|---|---|---|---|",
    ]

    def cell(r):
        return r.get("method", "GAP"), r["dataset"], r["setting"]

    keys = sorted({cell(r) for r in rows}, key=lambda k: (k[0], k[1], k[2] != "full-100", k[2]))
    for method, dataset, setting in keys:
        rs = [r for r in rows if cell(r) == (method, dataset, setting)]
        mean, lo, hi = bootstrap_ci([100 * r["test_acc"] for r in rs])
        secs = statistics.median(r["fit_test_s"] for r in rs)
        lines.append(f"| {method} | {dataset} | {setting} | {len(rs)} | "
                     f"{mean:.1f} ({lo:.1f}-{hi:.1f}) | {secs:.2f} s |")
    commands = sorted({r["command"] for r in rows if r.get("command")})
    return "\n".join(lines + ["", *(f"Command: `{c}`" for c in commands)]) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--method", default="GAP", choices=["GAP", "ProGAP"])
    p.add_argument("--dataset", default="facebook100/Rutgers89")
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--epochs", nargs="*", type=int, default=[100, 25],
                   help="epochs per stage of the mini-batch settings (an empty list: none)")
    p.add_argument("--val-every", nargs="*", type=int, default=[],
                   help="every setting again, validated every N epochs (default: none)")
    p.add_argument("--out", type=Path, default=OUT)
    add_smoke_flag(p)
    args = p.parse_args()
    if args.smoke:
        args.seeds, args.dataset, args.batch_size = 1, S.SMOKE_DATASET, 64
        args.val_every = args.val_every or [2]
    quiet()
    run_cells(cells(args), args.out, measured=False)
    args.out.with_suffix(".md").write_text(table(args.out))
    print(table(args.out))


if __name__ == "__main__":
    main()
