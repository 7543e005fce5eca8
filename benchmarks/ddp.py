"""1 vs N processes: wall time, accuracy and epsilon of private fits under DDP.

Runs what a user runs, ``dpgnn fit --config zoo/recipes/<recipe>.yaml`` with
``--trainer.devices N --trainer.strategy ddp --trainer.accelerator cpu`` (``N = 1``: the
default single-device trainer), once per seed, and writes every run to
``benchmarks/results/ddp.jsonl`` and a table (mean wall time, speed-up, accuracy, epsilon) to
``benchmarks/results/ddp.md`` (``summarize.py ddp``), with the command, the machine and its
load. Each run (a ``dpgnn fit`` subprocess) is a cell of ``common.run_cells``; a run of one
mode first drops that mode's earlier rows (``--append`` keeps them and skips their cells).

    python benchmarks/ddp.py --recipes gap-edge-rutgers89 progap-edge-rutgers89 \\
        --devices 1 2 --seeds 2

On a GPU machine add ``--accelerator gpu`` (the device is recorded).

``--memory``: peak resident memory of every rank (``VmHWM`` of each process of the launch,
polled from ``/proc``) for 1 process, and 2 processes with and without sharded rows
(``--model.init_args.shard_rows``), on short fits (``--short``: 2 epochs per stage; memory
does not grow with epochs), ``--repeats`` times each, median; ``--datasets`` swaps the
recipe's graph (a second graph size checks the memory formula of docs/distributed.md). Both
modes keep the other mode's rows in ``ddp.jsonl`` and write both tables to ``ddp.md``.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/ddp.py --memory --repeats 3 \\
        --datasets facebook100/Rutgers89 facebook100/Penn94
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
import threading
import time
from functools import partial
from pathlib import Path

from common import RESULTS, ROOT, load_rows, run_cells

DPGNN = Path(sys.executable).with_name("dpgnn")


def fit_command(recipe: str, devices: int, accelerator: str, seed: int) -> list[str]:
    cmd = [str(DPGNN), "fit", "--config", f"zoo/recipes/{recipe}.yaml",
           f"--seed_everything={seed}", f"--trainer.accelerator={accelerator}",
           f"--trainer.devices={devices}", "--trainer.enable_progress_bar=false",
           "--trainer.enable_checkpointing=false"]
    if devices > 1:
        cmd.append("--trainer.strategy=ddp")
    return cmd


#: short fits for the memory mode: 2 epochs per stage (memory does not grow with epochs)
SHORT = {"gap": ["--model.init_args.encoder_epochs=2", "--model.init_args.classifier_epochs=2"],
         "progap": ["--model.init_args.epochs_per_stage=2"]}


def _rank_of(pid: int) -> int:
    """The ``LOCAL_RANK`` Lightning's launcher gave process ``pid`` (0: the launching one)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return -1
    for item in env:
        if item.startswith(b"LOCAL_RANK="):
            return int(item.split(b"=", 1)[1])
    return 0


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (from ``/proc/*/stat``)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [p for p, pp in parents.items() if pp in frontier]
        tree += frontier
    return tree


def _peak_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_polled(cmd: list[str], cwd: str) -> tuple[subprocess.CompletedProcess, float, dict]:
    """Run ``cmd``; its wall time and the peak resident memory (MiB) of each rank, polled
    every 0.2 s (a rank's high-water mark is kept by the kernel, so polling misses at most the
    last 0.2 s of a rank's life)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    peaks: dict[int, int] = {}
    ranks: dict[int, int] = {}

    def poll() -> None:
        while proc.poll() is None:
            for pid in _tree(proc.pid):
                kib = _peak_kib(pid)
                if kib is None:
                    continue
                ranks.setdefault(pid, _rank_of(pid))
                peaks[pid] = max(peaks.get(pid, 0), kib)
            time.sleep(0.2)

    start = time.perf_counter()
    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    watcher.join()
    per_rank: dict[int, float] = {}
    for pid, kib in peaks.items():  # the python ranks (a rank's helper processes: no rank)
        if ranks.get(pid, -1) >= 0:
            per_rank[ranks[pid]] = max(per_rank.get(ranks[pid], 0.0), kib / 1024)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), wall, per_rank


def run_once(
    recipe: str,
    devices: int,
    accelerator: str,
    seed: int,
    extra: list[str] | None = None,
    measure: bool = False,
) -> dict:
    """One fit in a fresh folder: wall time of the whole command (launch, data, fit, test);
    ``measure``: also the peak resident memory of each rank."""
    cmd = fit_command(recipe, devices, accelerator, seed) + list(extra or [])
    repo = ROOT
    peaks: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cmd[3] = str(repo / cmd[3])
        if measure:
            cmd.append("--trainer.callbacks+=fit_memory.FitMemory")
            run, wall, peaks = run_polled(cmd, tmp)
            fit_memory = {p.stem.rsplit("-", 1)[1]: json.loads(p.read_text())
                          for p in Path(tmp).glob("fit-memory-*.json")}
        else:
            start = time.perf_counter()
            run = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            wall = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{run.stderr[-3000:]}")
    acc = float(re.search(r"test accuracy: ([0-9.]+)", run.stdout).group(1))
    eps = float(re.search(r"epsilon spent: ([0-9.]+)", run.stdout).group(1))
    row = {"recipe": recipe, "devices": devices, "accelerator": accelerator, "seed": seed,
           "wall_s": round(wall, 2), "test_acc": acc, "epsilon": eps,
           "load_avg_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
           "machine": platform.processor() or platform.machine(),
           "fit_command": shlex.join(["dpgnn", *cmd[1:]]).replace(str(repo) + "/", "")}
    if measure:
        row["peak_rss_mib"] = {str(r): round(v, 1) for r, v in sorted(peaks.items())}
        row["fit_start_mib"] = {r: round(m["start_mib"], 1)
                                for r, m in sorted(fit_memory.items())}
        row["fit_peak_mib"] = {r: round(max(m["stage_peak_mib"].values()), 1)
                               for r, m in sorted(fit_memory.items())}
    print(json.dumps(row), flush=True)
    return row


def memory_cells(args: argparse.Namespace, command: str):
    """Peak memory per rank: 1 process, 2 with and without sharded rows, on each graph."""
    settings = [(1, True), (2, True), (2, False)]
    for graph in args.datasets:
        for recipe in args.recipes:
            data: list[str] = []
            if graph.startswith("csbm"):  # generated: "csbm" (2,000 nodes: the runtime
                if recipe != args.recipes[0]:  # baseline) or "csbm:NODES:AVG_DEGREE"
                    continue
                recipe = "gap-edge-csbm"
                if graph != "csbm":
                    _, nodes, degree = graph.split(":")
                    data.append("--data.init_args.dataset_kwargs="
                                + json.dumps({"num_nodes": int(nodes),
                                              "avg_degree": float(degree)}))
            else:
                data.append(f"--data.init_args.name={graph}")
            extra = [*SHORT.get(recipe.split("-")[0], []), *data]
            for repeat in range(args.repeats):
                for devices, shard in settings:  # interleaved: load drifts hit all alike
                    flag = f"--model.init_args.shard_rows={str(shard).lower()}"
                    meta = dict(key=f"memory|{recipe}|{graph}|{devices}|{shard}|{repeat}",
                                mode="memory", graph=graph, shard_rows=shard, repeat=repeat,
                                bench_command=command)  # fmt: skip
                    yield meta, partial(run_once, recipe, devices, args.accelerator, repeat,
                                        [*extra, flag], measure=True)  # fmt: skip


def wall_cells(args: argparse.Namespace, command: str):
    """1 vs N processes: every recipe, seed and device count (interleaved: load drifts hit
    both alike)."""
    for recipe in args.recipes:
        for seed in range(args.seeds):
            for devices in args.devices:
                meta = dict(key=f"wall|{recipe}|{devices}|{args.accelerator}|{seed}",
                            mode="wall", bench_command=command)  # fmt: skip
                yield meta, partial(run_once, recipe, devices, args.accelerator, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+",
                        default=["gap-edge-rutgers89", "progap-edge-rutgers89"])
    parser.add_argument("--devices", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory per rank: 1 vs 2 processes, sharded rows or not")
    parser.add_argument("--repeats", type=int, default=3, help="--memory: runs per setting")
    parser.add_argument("--datasets", nargs="+", default=["facebook100/Rutgers89"],
                        help="--memory: graphs: facebook100/SCHOOL, csbm (the runtime baseline), "
                        "csbm:NODES:AVG_DEGREE (generated)")
    parser.add_argument("--append", action="store_true",
                        help="keep this mode's earlier rows (e.g. another graph)")
    args = parser.parse_args()
    command = shlex.join(["python", "benchmarks/ddp.py", *sys.argv[1:]])
    mode = "memory" if args.memory else "wall"
    jsonl = RESULTS / "ddp.jsonl"
    old = load_rows(jsonl) if jsonl.exists() else []
    kept = [r for r in old if args.append or r.get("mode", "wall") != mode]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in kept))
    cells = memory_cells(args, command) if args.memory else wall_cells(args, command)
    run_cells(cells, jsonl, measured=False)
    import summarize

    summarize.write("ddp", jsonl)  # results/ddp.md (= summarize.py ddp)


if __name__ == "__main__":
    main()
