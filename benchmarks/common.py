"""Shared benchmark plumbing: timed/metered runs, JSONL results, bootstrap CIs, plots."""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
#: speed-ups that change timings (not results): sparse wide features + ghost clipping
CODE_VERSION = "csr-ghost"


class PeakRSS:
    """Samples this process's resident memory in a thread; ``peak_mb`` after the block."""

    def __init__(self, interval: float = 0.05) -> None:
        import psutil

        self.proc, self.interval, self.peak = psutil.Process(), interval, 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self.peak = self.proc.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return self.peak / 2**20


def quiet() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)


def done_keys(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip()}


def append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def command_line() -> str:
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def bootstrap_ci(values, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% bootstrap confidence interval of the mean (percentile method)."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = rng.choice(v, size=(n_boot, len(v)), replace=True).mean(axis=1)
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def cpu_info() -> str:
    return f"{os.cpu_count()} CPU cores (torch threads: {__import__('torch').get_num_threads()})"


def grid_parser(doc: str, datasets: dict, default_out: Path):
    import argparse

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=list(datasets))
    p.add_argument("--methods", nargs="*", default=None, help="subset, e.g. GAP-EDP MLP")
    p.add_argument("--out", type=Path, default=default_out)
    return p


def run_grid(configs, datasets: dict, args) -> None:
    """Fit + test every ``(method, epsilon, build)`` of ``configs()`` on every dataset and seed,
    appending one JSON row per run to ``args.out`` (rows already there are skipped).

    Seeds are the outer loop, so a partial run still covers every setting. Each run happens in
    a forked child (it inherits the loaded dataset), so its peak RSS is its own and nothing it
    allocates outlives it. Each row holds the test accuracy, the epsilon/delta the model
    reports, wall and CPU seconds, peak RSS.
    """
    import multiprocessing

    quiet()
    from lightning_dpgnn.data import NodeDataModule

    fork = multiprocessing.get_context("fork")
    done = done_keys(args.out)
    for seed in range(args.seeds):
        for name in args.datasets:
            dm = NodeDataModule(name, seed=seed, **datasets[name])
            dm.setup()
            for method, eps, build in configs():
                if args.methods and method not in args.methods:
                    continue
                key = f"{name}|{method}|{eps}|{seed}"
                if key in done:
                    continue
                meta = dict(key=key, dataset=name, method=method, target_epsilon=eps, seed=seed)
                release_memory()  # the child inherits the parent's heap: keep it lean
                child = fork.Process(target=_run_one, args=(build, dm, meta, args.out))
                child.start()
                child.join()
                if child.exitcode != 0:
                    print(f"{key}: FAILED (exit code {child.exitcode})", flush=True)


def release_memory() -> None:
    """Collect garbage and hand freed heap pages back to the OS (glibc ``malloc_trim``), so the
    datasets of earlier seeds do not inflate the resident set forked runs start from."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc
        pass


def _run_one(build, dm, meta: dict, out: Path) -> None:
    import lightning as L
    import torch

    quiet()
    torch.manual_seed(meta["seed"])
    t0, c0 = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        model = build(meta["seed"])
        trainer = L.Trainer(
            max_epochs=100,  # staged models set their own total
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model, dm)
        acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    report = model.privacy_spent()
    row = dict(
        **meta,
        test_acc=float(acc),
        epsilon=report.epsilon if report.level != "none" else None,
        delta=report.delta,
        level=report.level,
        wall_s=round(time.perf_counter() - t0, 2),
        cpu_s=round(time.process_time() - c0, 2),
        peak_rss_mb=round(mem.peak_mb, 1),
        rss_scope="run",  # measured in a fresh child: this run's own peak
        code=CODE_VERSION,  # timings are compared within one code version (see summarize.py)
        hardware=cpu_info(),
        command=command_line(),
    )
    append(out, row)
    print(
        f"{meta['key']}: acc={acc:.4f} eps={row['epsilon']} {row['wall_s']}s "
        f"{row['peak_rss_mb']}MB",
        flush=True,
    )
