"""Empirical audit of the library's DP-SGD with gradient canaries: measured lower bound on
epsilon next to the ledger's epsilon, for the real optimizer (classic and ghost clipping, full
batches and Poisson subsampling) and for a broken one that draws half the noise it records.
Writes ``results/audit_dpsgd.md``.

    python benchmarks/audit_dpsgd.py --trials 1000000
"""

from __future__ import annotations

from common import RESULTS, audit_table

from lightning_dpgnn.attacks import audit_dpsgd
from lightning_dpgnn.attacks.dpsgd_audit import half_noise
from lightning_dpgnn.privacy.dpsgd import make_private

#: (noise multiplier, steps, sample rate)
RUNS = [(1.0, 1, 1.0), (2.0, 1, 1.0), (2.0, 4, 1.0), (1.0, 4, 0.5)]


def main() -> None:
    args, lines = audit_table(
        __doc__, "Empirical audit of DP-SGD",
        " (gradient canaries; q: Poisson sampling rate, T: noisy steps)",
        ["optimizer", "clipping", "z", "T", "q"],
    )  # fmt: skip
    for z, steps, q in RUNS:
        for name, wrap in (("DP-SGD", make_private), ("half the recorded noise", half_noise)):
            for ghost in (True, False) if (steps, q) == (1, 1.0) and name == "DP-SGD" else (True,):
                r = audit_dpsgd(
                    z, steps=steps, sample_rate=q, trials=args.trials, delta=args.delta,
                    ghost=ghost, wrap=wrap,
                )  # fmt: skip
                clip = "ghost" if ghost else "per-sample"
                lines.append(f"| {name} | {clip} | {z:g} | {steps} | {q:g} | {r.table_cells} |")
                print(lines[-1], flush=True)
    (RESULTS / "audit_dpsgd.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
