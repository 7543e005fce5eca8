"""Empirical audit of the library's DP-SGD with gradient canaries: measured lower bound on
epsilon next to the ledger's epsilon, for the real optimizer (classic and ghost clipping, full
batches and Poisson subsampling) and for a broken one that draws half the noise it records.
One cell of ``common.run_cells`` per case (rows in ``results/audit_dpsgd.jsonl``; a re-run
skips the cases it has at this trial count and delta); writes ``results/audit_dpsgd.md``.

    python benchmarks/audit_dpsgd.py --trials 1000000
"""

from __future__ import annotations

from functools import partial

from common import RESULTS, run_audits

from lightning_dpgnn.attacks import audit_dpsgd
from lightning_dpgnn.attacks.dpsgd_audit import half_noise
from lightning_dpgnn.privacy.dpsgd import make_private

#: (noise multiplier, steps, sample rate)
RUNS = [(1.0, 1, 1.0), (2.0, 1, 1.0), (2.0, 4, 1.0), (1.0, 4, 0.5)]


def main() -> None:
    cases = []
    for z, steps, q in RUNS:
        for name, wrap in (("DP-SGD", make_private), ("half the recorded noise", half_noise)):
            for ghost in (True, False) if (steps, q) == (1, 1.0) and name == "DP-SGD" else (True,):
                cols = {"optimizer": name, "clipping": "ghost" if ghost else "per-sample", "z": z,
                        "T": steps, "q": q}  # fmt: skip
                cases.append((cols, partial(audit_dpsgd, z, steps=steps, sample_rate=q,
                                            ghost=ghost, wrap=wrap)))
    run_audits(__doc__, "Empirical audit of DP-SGD",
               " (gradient canaries; q: Poisson sampling rate, T: noisy steps)", cases,
               RESULTS / "audit_dpsgd.jsonl")  # fmt: skip


if __name__ == "__main__":
    main()
