"""Detection power of the aggregation audit (issue 27, fault 5).

How often ``audit_mechanism`` / ``PrivacyAudit`` catches a Gaussian aggregation that draws half
the noise it records (its lower bound exceeds the ledger's epsilon for one call), as a function
of the trials per hypothesis and of the epsilon one call is accounted at. The audited unit is
GAP's default, one friendship (``edge-undirected``), delta 1e-5, 95% confidence. Each run has
fresh (entropy-seeded) noise and its own gadget features. Settings:

* ``GAP eps 1 (defaults)``: GAP at epsilon 1 with its defaults (2 hops and the label counts:
  3 Gaussians at one noise multiplier), so one call is accounted at about 0.55;
* ``GAP eps 2, 1 hop``: the setting of ``tests/attacks/test_privacy_audit.py`` (one hop, no
  label counts: one call is the whole aggregation spend, 2.0).

Rows go to ``results/audit_power.jsonl`` (re-running skips what is done); ``--summary`` writes
``results/audit_power.md``.

    OMP_NUM_THREADS=1 python benchmarks/audit_power.py --runs 40
    python benchmarks/audit_power.py --summary
"""

from __future__ import annotations

import argparse
import json
import math
import time

from audit_aggregation import HalfNoise
from common import RESULTS, append, done_keys

OUT = RESULTS / "audit_power.jsonl"
DELTA = 1e-5
SETTINGS = {  # name: (Gaussians at one multiplier in the fit, the fit's epsilon)
    "GAP eps 1 (defaults)": (3, 1.0),
    "GAP eps 2, 1 hop": (1, 2.0),
}
TRIALS = (20_000, 100_000, 300_000, 1_000_000)


def multiplier(count: int, epsilon: float) -> float:
    from lightning_dpgnn.privacy.calibration import calibrate_noise_multiplier, gaussian_plan

    plan = gaussian_plan(count, sensitivity=math.sqrt(2), delta=DELTA)
    return calibrate_noise_multiplier(plan, epsilon)


def run(args) -> None:
    import torch

    from lightning_dpgnn.attacks import audit_aggregation

    torch.set_num_threads(1)
    done = done_keys(OUT)
    for trials in args.trials:
        for name, (count, eps) in SETTINGS.items():
            z = multiplier(count, eps)
            for r in range(args.runs if trials < 1_000_000 else args.runs_1m):
                key = f"{name}|{trials}|{r}"
                if key in done:
                    continue
                t0 = time.process_time()
                res = audit_aggregation(
                    HalfNoise(z, edge_unit="undirected"), "edge-undirected", trials=trials,
                    delta=DELTA, generator=torch.Generator().manual_seed(r),
                )  # fmt: skip
                row = dict(
                    key=key, setting=name, trials=trials, run=r, noise_multiplier=z,
                    epsilon_accounted=res.epsilon_accounted, epsilon_lower=res.epsilon_lower,
                    caught=not res.consistent, cpu_s=round(time.process_time() - t0, 2),
                )
                append(OUT, row)
                print(json.dumps(row), flush=True)


def summary() -> str:
    rows = [json.loads(s) for s in OUT.read_text().splitlines() if s.strip()]
    lines = [
        "# Detection power of the aggregation audit (half the recorded noise)",
        "",
        "A Gaussian aggregation that draws half the noise it records, audited on one friendship "
        f"(edge-undirected), delta {DELTA:g}, 95% confidence; caught = the audit's lower bound "
        "exceeds the ledger's epsilon for one call. Rate with a 95% Clopper-Pearson interval.",
        "",
        "| setting | epsilon of one call | trials per hypothesis | caught | rate [95% CI] | "
        "median bound | CPU s per audit |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    import numpy as np

    from lightning_dpgnn.attacks.audit import clopper_pearson

    for name in SETTINGS:
        for trials in TRIALS:
            sel = [r for r in rows if r["setting"] == name and r["trials"] == trials]
            if not sel:
                continue
            k, n = sum(r["caught"] for r in sel), len(sel)
            lo, hi = clopper_pearson(k, n, 0.05)
            lines.append(
                f"| {name} | {sel[0]['epsilon_accounted']:.3f} | {trials:,} | {k}/{n} | "
                f"{k / n:.2f} [{lo:.2f}, {hi:.2f}] | "
                f"{np.median([r['epsilon_lower'] for r in sel]):.3f} | "
                f"{np.median([r['cpu_s'] for r in sel]):.1f} |"
            )
    lines += ["", f"Command: `{__doc__.strip().splitlines()[-2].strip()}`, single thread.", ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--runs-1m", type=int, default=40)
    p.add_argument("--trials", type=int, nargs="*", default=list(TRIALS))
    p.add_argument("--summary", action="store_true")
    args = p.parse_args()
    if args.summary:
        text = summary()
        (RESULTS / "audit_power.md").write_text(text)
        print(text)
        return
    run(args)


if __name__ == "__main__":
    main()
