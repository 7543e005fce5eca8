"""Empirical audit of the library's DP-SGD with gradient canaries: measured lower bound on
epsilon next to the ledger's epsilon, for the real optimizer (classic and ghost clipping, full
batches and Poisson subsampling) and for a broken one that draws half the noise it records.
Writes ``results/audit_dpsgd.md``.

    python benchmarks/audit_dpsgd.py --trials 1000000
"""

from __future__ import annotations

import argparse

from common import RESULTS, command_line, quiet

from lightning_dpgnn.attacks import audit_dpsgd
from lightning_dpgnn.privacy.dpsgd import make_private


def half_noise(module, optimizer, **kw):
    """A broken DP-SGD: draws gradient noise at ``z / 2``, records ``z``."""
    gsm, opt = make_private(module, optimizer, **kw)
    z, draw = opt.noise_multiplier, opt.add_noise

    def add_noise() -> None:
        opt.noise_multiplier = z / 2
        try:
            draw()
        finally:
            opt.noise_multiplier = z

    opt.add_noise = add_noise
    return gsm, opt


#: (noise multiplier, steps, sample rate)
RUNS = [(1.0, 1, 1.0), (2.0, 1, 1.0), (2.0, 4, 1.0), (1.0, 4, 0.5)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()
    quiet()
    lines = [
        "# Empirical audit of DP-SGD",
        "",
        f"Command: `{command_line()}`",
        "",
        f"{args.trials} trials per hypothesis (gradient canaries), 95% confidence "
        f"(Clopper-Pearson), delta {args.delta:g}. q: Poisson sampling rate, T: noisy steps. A "
        "row is a violation when the measured lower bound exceeds the accounted epsilon.",
        "",
        "| optimizer | clipping | z | T | q | accounted eps | measured eps >= | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for z, steps, q in RUNS:
        for name, wrap in (("DP-SGD", make_private), ("half the recorded noise", half_noise)):
            for ghost in (True, False) if (steps, q) == (1, 1.0) and name == "DP-SGD" else (True,):
                r = audit_dpsgd(
                    z, steps=steps, sample_rate=q, trials=args.trials, delta=args.delta,
                    ghost=ghost, wrap=wrap,
                )  # fmt: skip
                verdict = "consistent" if r.consistent else "**violation**"
                lines.append(
                    f"| {name} | {'ghost' if ghost else 'per-sample'} | {z:g} | {steps} | {q:g} | "
                    f"{r.epsilon_accounted:.3f} | {r.epsilon_lower:.3f} | {verdict} |"
                )
                print(lines[-1], flush=True)
    (RESULTS / "audit_dpsgd.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
