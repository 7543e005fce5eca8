"""Did the accountant fix (commit 99353ea) change the noise of the membership-inference rows?

The GAP-NDP and ProGAP-NDP rows of ``results/audit_attacks.jsonl`` at epsilon 1 and 2 on
Swarthmore42 were fitted before commit 99353ea, which fixed the subsampled-Gaussian RDP at
large orders (opacus' fractional-order series went negative there, so a DP-SGD plan could
print a smaller epsilon than it spent). The rows did not record their noise multiplier; this
script calibrates the same plans (the benchmark's model, data module and split per seed)
twice, with today's accountant and with the accountant of ``99353ea^`` (its ``_unit_rdp`` and
``_convert`` read from git and swapped in), and reports both multipliers and what each spends
under today's accountant. One JSON line per (method, epsilon, seed) in
``results/mia_recalibration.jsonl``.

    DPGNN_DATA=../shared/datasets python benchmarks/mia_recalibration.py --seeds 0
    python benchmarks/mia_recalibration.py --summarize   # results/mia_recalibration.md, docs
    python benchmarks/mia_recalibration.py --smoke --out /tmp/r.jsonl   # code path only
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
import types
from functools import partial
from pathlib import Path

import settings as S
from common import RESULTS, ROOT, add_smoke_flag, quiet, quiet_trainer, run_cells, smoke_args

OUT = RESULTS / "mia_recalibration.jsonl"
FIX = "99353ea"


@contextlib.contextmanager
def accountant_before_fix():
    """Swap in the RDP evaluation and conversion of the accountant before :data:`FIX`."""
    from lightning_dpgnn.privacy import accountant as acc

    src = subprocess.run(
        ["git", "show", f"{FIX}^:lightning_dpgnn/privacy/accountant.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    old = types.ModuleType("lightning_dpgnn.privacy._accountant_before_fix")
    old.__package__ = "lightning_dpgnn.privacy"
    sys.modules[old.__name__] = old  # dataclasses look their module up while defining
    exec(compile(src, old.__name__, "exec"), old.__dict__)
    saved = acc._unit_rdp, acc._convert
    acc._unit_rdp, acc._convert = old._unit_rdp, old._convert
    try:
        yield
    finally:
        acc._unit_rdp, acc._convert = saved


class _Calibrated(Exception):
    """Raised at fit start: the model's setup (where it calibrates) has run."""


def setup_only(model, dm) -> None:
    """Run ``model``'s setup on ``dm`` (calibration or the check of a given multiplier) and
    stop before the first step."""
    import lightning as L

    class Stop(L.Callback):
        def on_fit_start(self, trainer, pl_module) -> None:
            raise _Calibrated

    with contextlib.suppress(_Calibrated):
        quiet_trainer(callbacks=[Stop()]).fit(model, dm)


def calibrated(method: str, eps: float, seed: int, dm, d: int) -> tuple[float, int]:
    """The model's calibrated noise multiplier and its number of training nodes."""
    model = S.build(method, eps, seed, d, {})
    setup_only(model, dm)
    return float(model.noise_multiplier), int(dm.data.train_mask.sum())


def recalibrate(method: str, eps: float, seed: int, dm, d: int) -> dict:
    """Both multipliers of one plan and what the old one spends under today's accountant."""
    t0 = time.time()
    z_new, n_train = calibrated(method, eps, seed, dm, d)
    t_new = time.time() - t0
    t0 = time.time()
    with accountant_before_fix():
        z_old, _ = calibrated(method, eps, seed, dm, d)
    t_old = time.time() - t0
    # what the old multiplier spends under today's accountant
    m = S.build(method, eps, seed, d, {"noise_multiplier": z_old})
    spent_old = None
    try:
        setup_only(m, dm)
    except ValueError as e:  # the fixed accountant refuses it: over the target
        spent_old = str(e)
    row = dict(n_train=n_train, z_fixed=z_new, z_before_fix=z_old, old_z_over_target=spent_old,
               seconds_fixed=t_new, seconds_before_fix=t_old)  # fmt: skip
    print(method, eps, seed, row, flush=True)
    return row


def cells(args):
    """``(meta, fit)`` per (seed, method, epsilon); one data module per seed."""
    from lightning_dpgnn.data import NodeDataModule

    for seed in args.seeds:
        dm = NodeDataModule(args.dataset, seed=seed, **S.ATTACK_DATASETS[args.dataset])
        d = S.max_degree(dm.data)
        for method in args.methods:
            for eps in args.epsilons:
                meta = dict(key=f"{args.dataset}|{method}|{eps}|{seed}", dataset=args.dataset,
                            method=method, target_epsilon=eps, seed=seed)  # fmt: skip
                yield meta, partial(recalibrate, method, eps, seed, dm, d)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dataset", default="facebook100/Swarthmore42")
    p.add_argument("--methods", nargs="*", default=["GAP-NDP", "ProGAP-NDP"])
    p.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 2.0])
    p.add_argument("--seeds", nargs="*", type=int, default=[0])
    p.add_argument("--summarize", action="store_true", help="write the table")
    p.add_argument("--out", type=Path, default=OUT)
    add_smoke_flag(p)
    args = p.parse_args()
    if args.summarize:  # the same as `python benchmarks/summarize.py recalibration`
        import summarize

        summarize.write("recalibration", args.out)
        return
    smoke_args(args)
    if args.smoke:  # one plan: the first method at the first epsilon, seed 0
        args.seeds, args.methods, args.epsilons = [0], args.methods[:1], args.epsilons[:1]
    quiet()
    import torch

    torch.set_num_threads(1)
    sys.exit(run_cells(cells(args), args.out, measured=False) > 0)


if __name__ == "__main__":
    main()
