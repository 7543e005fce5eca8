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
