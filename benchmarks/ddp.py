"""1 vs N processes: wall time, accuracy and epsilon of private fits under DDP.

Runs what a user runs, ``dpgnn fit --config zoo/recipes/<recipe>.yaml`` with
``--trainer.devices N --trainer.strategy ddp --trainer.accelerator cpu`` (``N = 1``: the
default single-device trainer), once per seed, and writes every run to
``benchmarks/results/ddp.jsonl`` and a table (mean wall time, speed-up, accuracy, epsilon) to
``benchmarks/results/ddp.md``, with the command, the machine and its load.

    python benchmarks/ddp.py --recipes gap-edge-rutgers89 progap-edge-rutgers89 \\
        --devices 1 2 --seeds 2

On a GPU machine add ``--accelerator gpu`` (the device is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
DPGNN = Path(sys.executable).with_name("dpgnn")
NOTE = (
    "On a machine shared with other jobs, N processes also get N shares of the contended "
    "cores, so a speed-up above N measures the scheduler, not DDP; compare processes on an "
    "idle machine for DDP's own scaling. Accuracy and epsilon are what the comparison is for: "
    "the same epsilon, accuracy within the run-to-run noise."
)


def fit_command(recipe: str, devices: int, accelerator: str, seed: int) -> list[str]:
    cmd = [str(DPGNN), "fit", "--config", f"zoo/recipes/{recipe}.yaml",
           f"--seed_everything={seed}", f"--trainer.accelerator={accelerator}",
           f"--trainer.devices={devices}", "--trainer.enable_progress_bar=false",
           "--trainer.enable_checkpointing=false"]
    if devices > 1:
        cmd.append("--trainer.strategy=ddp")
    return cmd


def run_once(recipe: str, devices: int, accelerator: str, seed: int) -> dict:
    """One fit in a fresh folder: wall time of the whole command (launch, data, fit, test)."""
    cmd = fit_command(recipe, devices, accelerator, seed)
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        cmd[3] = str(repo / cmd[3])
        start = time.perf_counter()
        run = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{run.stderr[-3000:]}")
    acc = float(re.search(r"test accuracy: ([0-9.]+)", run.stdout).group(1))
    eps = float(re.search(r"epsilon spent: ([0-9.]+)", run.stdout).group(1))
    return {"recipe": recipe, "devices": devices, "accelerator": accelerator, "seed": seed,
            "wall_s": round(wall, 2), "test_acc": acc, "epsilon": eps,
            "load_avg_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "command": shlex.join(["dpgnn", *cmd[1:]])}


def table(rows: list[dict]) -> str:
    lines = ["| recipe | processes | runs | wall time (s) | speed-up | test accuracy | epsilon |",
             "|---|---|---|---|---|---|---|"]
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        base = None
        for devices in sorted({r["devices"] for r in rows if r["recipe"] == recipe}):
            sel = [r for r in rows if r["recipe"] == recipe and r["devices"] == devices]
            wall = float(np.mean([r["wall_s"] for r in sel]))
            base = wall if base is None else base
            acc = [r["test_acc"] for r in sel]
            lines.append(
                f"| {recipe} | {devices} | {len(sel)} | {wall:.1f} | {base / wall:.2f}x | "
                f"{np.mean(acc):.4f} (min {min(acc):.4f}, max {max(acc):.4f}) | "
                f"{max(r['epsilon'] for r in sel):g} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+",
                        default=["gap-edge-rutgers89", "progap-edge-rutgers89"])
    parser.add_argument("--devices", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--out", default="ddp")
    args = parser.parse_args()
    rows = []
    jsonl = RESULTS / f"{args.out}.jsonl"
    jsonl.write_text("")
    for recipe in args.recipes:
        for seed in range(args.seeds):
            for devices in args.devices:  # interleaved: load drifts hit both settings alike
                row = run_once(recipe, devices, args.accelerator, seed)
                print(json.dumps(row), flush=True)
                rows.append(row)
                with jsonl.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    command = shlex.join(["python", "benchmarks/ddp.py", *sys.argv[1:]])
    (RESULTS / f"{args.out}.md").write_text(
        f"# 1 vs N processes (DDP, {args.accelerator})\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), shared with other jobs: "
        f"1-minute load average during the runs {min(r['load_avg_1m'] for r in rows):.1f}-"
        f"{max(r['load_avg_1m'] for r in rows):.1f}. Wall time is the whole `dpgnn fit` "
        "command (process launch, data loading, calibration, fit, test). "
        f"{NOTE}\n\n"
        f"{table(rows)}\n"
    )


if __name__ == "__main__":
    main()
