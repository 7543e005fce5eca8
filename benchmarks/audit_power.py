"""Detection power of the aggregation audit (issue 27, fault 5).

How often ``audit_mechanism`` / ``PrivacyAudit`` catches a Gaussian aggregation that draws half
the noise it records (``settings.HalfNoise``; its lower bound exceeds the ledger's epsilon for
one call), as a function of the trials per hypothesis and of the epsilon one call is accounted
at. The audited unit is GAP's default, one friendship (``edge-undirected``), delta 1e-5, 95%
confidence. Each run has fresh (entropy-seeded) noise and its own gadget features. Settings
(``settings.AUDIT_POWER_SETTINGS``):

* ``GAP eps 1 (defaults)``: GAP at epsilon 1 with its defaults (2 hops and the label counts:
  3 Gaussians at one noise multiplier), so one call is accounted at about 0.55;
* ``GAP eps 2, 1 hop``: the setting of ``tests/callbacks/test_privacy_audit.py`` (one hop, no
  label counts: one call is the whole aggregation spend, 2.0).

Rows go to ``results/audit_power.jsonl`` (re-running skips what is done); ``--summary`` (or
``summarize.py audit_power``) writes ``results/audit_power.md``.

    OMP_NUM_THREADS=1 python benchmarks/audit_power.py --runs 40
    python benchmarks/audit_power.py --summary
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import settings as S
from common import RESULTS, run_cells

OUT = RESULTS / "audit_power.jsonl"


def multiplier(count: int, epsilon: float) -> float:
    """The noise multiplier of ``count`` Gaussians on one friendship spending ``epsilon``."""
    from lightning_dpgnn.privacy.calibration import calibrate_noise_multiplier, gaussian_plan

    plan = gaussian_plan(count, sensitivity=math.sqrt(2), delta=S.AUDIT_POWER_DELTA)
    return calibrate_noise_multiplier(plan, epsilon)


def audit_once(z: float, trials: int, run: int) -> dict:
    """One audit of :class:`settings.HalfNoise` at multiplier ``z``: accounted epsilon, the
    lower bound, whether it was caught, CPU seconds."""
    import torch

    from lightning_dpgnn.attacks import audit_aggregation

    t0 = time.process_time()
    res = audit_aggregation(
        S.HalfNoise(z, edge_unit="undirected"), "edge-undirected", trials=trials,
        delta=S.AUDIT_POWER_DELTA, generator=torch.Generator().manual_seed(run),
    )  # fmt: skip
    return dict(epsilon_accounted=res.epsilon_accounted, epsilon_lower=res.epsilon_lower,
                caught=not res.consistent, cpu_s=round(time.process_time() - t0, 2))  # fmt: skip


def cells(args):
    """``(meta, fit)`` of every (trials, setting, run) (:func:`common.run_cells`)."""
    for trials in args.trials:
        for name, (count, eps) in S.AUDIT_POWER_SETTINGS.items():
            z = multiplier(count, eps)
            for r in range(args.runs if trials < 1_000_000 else args.runs_1m):
                meta = dict(key=f"{name}|{trials}|{r}", setting=name, trials=trials, run=r,
                            noise_multiplier=z)  # fmt: skip
                yield meta, lambda z=z, trials=trials, r=r: audit_once(z, trials, r)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--runs-1m", type=int, default=40, help="runs at 10^6 trials")
    p.add_argument("--trials", type=int, nargs="*", default=list(S.AUDIT_POWER_TRIALS))
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summary", action="store_true",
                   help="write the table of --out (summarize.py audit_power)")  # fmt: skip
    args = p.parse_args()
    if args.summary:
        import summarize

        print(summarize.write("audit_power", args.out))
        return
    import torch

    torch.set_num_threads(1)
    run_cells(cells(args), args.out, measured=False)


if __name__ == "__main__":
    main()
