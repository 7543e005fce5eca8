"""Privacy-utility plots (``dpgnn plot runs/``, :func:`plot`): the mean test metric of the
``dpgnn-run.json`` records below a folder against epsilon, with 95% Student-t intervals over
repeated runs. Matplotlib is optional: ``pip install 'lightning-dpgnn[plot]'``."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from .levels import Level

__all__ = ["RunPoint", "load_runs", "summarize_runs", "plot"]

DEFAULT_OUTPUT = "privacy_utility.png"


@dataclass(frozen=True)
class RunPoint:
    """The ``n`` runs of one method (with its level) at one epsilon (two significant digits) on one
    dataset: the metric's mean and the half-width of its 95% confidence interval."""

    dataset: str
    method: str
    epsilon: float
    n: int
    mean: float
    ci: float


def load_runs(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every run record below ``folder``, one per checkpoint (the newest)."""
    runs: dict[str | int, tuple[float, dict[str, Any]]] = {}  # checkpoint (or file) -> newest
    for i, path in enumerate(sorted(Path(folder).rglob("*.json"))):
        try:
            record = json.loads(path.read_text())
            mtime = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if not (isinstance(record, dict) and {"method", "metrics", "privacy"} <= record.keys()):
            continue
        ckpt = record.get("checkpoint")
        key = os.path.normcase(os.path.abspath(ckpt)) if ckpt else i
        if key not in runs or mtime >= runs[key][0]:
            runs[key] = (mtime, record)
    return [record for _, record in runs.values()]


def _level(privacy: dict[str, Any] | None) -> Level | None:
    level = (privacy or {}).get("level")
    return None if level is None else Level.of(level)


def _epsilon(privacy: dict[str, Any] | None) -> float:
    if not privacy or privacy.get("epsilon_is_infinite") or _level(privacy) is Level.NONE:
        return math.inf
    return float(f"{float(privacy['epsilon']):.2g}")


def _method(record: dict[str, Any]) -> str:
    level = _level(record.get("privacy"))
    return f"{record['method']} ({level})" if level and level.private else record["method"]


def summarize_runs(runs: list[dict[str, Any]], metric: str = "test/acc") -> list[RunPoint]:
    """Group ``runs`` by dataset, method and epsilon; mean and 95% CI of ``metric``."""
    groups: dict[tuple[str, str, float], list[float]] = defaultdict(list)
    for r in runs:
        if metric in r["metrics"]:
            key = (str(r.get("dataset")), _method(r), _epsilon(r.get("privacy")))
            groups[key].append(float(r["metrics"][metric]))
    points = []
    for (dataset, method, eps), values in sorted(groups.items()):
        v = np.asarray(values)
        ci = 0.0
        if len(v) > 1:
            ci = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
        points.append(RunPoint(dataset, method, eps, len(v), float(v.mean()), ci))
    return points


def _on_axis(epsilon: float) -> bool:
    """Whether a point goes on the (log) epsilon axis; inf and 0 are drawn as lines."""
    return math.isfinite(epsilon) and epsilon > 0


def plot(
    folder: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    metric: str = "test/acc",
) -> Path:
    """Draw ``metric`` vs epsilon per method for the runs below ``folder``, one panel per
    dataset; return the image path (default ``<folder>/privacy_utility.png``)."""
    points = summarize_runs(load_runs(folder), metric)
    if not points:
        raise ValueError(
            f"no runs with {metric!r} below {folder}: each `dpgnn fit` writes a dpgnn-run.json "
            "into its --trainer.default_root_dir"
        )
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(
            "plotting needs matplotlib, an optional dependency: pip install 'lightning-dpgnn[plot]'"
        ) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({p.dataset for p in points})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        mine = [p for p in points if p.dataset == dataset]
        finite = [p.epsilon for p in mine if _on_axis(p.epsilon)]
        for i, method in enumerate(sorted({p.method for p in mine})):
            color = f"C{i}"
            pts = sorted((p for p in mine if p.method == method), key=lambda p: p.epsilon)
            curve = [p for p in pts if _on_axis(p.epsilon)]
            if curve:
                x = [p.epsilon for p in curve]
                ax.errorbar(x, [p.mean for p in curve], yerr=[p.ci for p in curve],
                            marker="o", capsize=3, color=color, label=method)
            for p in pts:
                if not _on_axis(p.epsilon):  # epsilon inf or 0: a reference line and CI band
                    what = "non-private" if math.isinf(p.epsilon) else "epsilon 0"
                    ax.axhline(p.mean, ls="--", color=color, label=f"{method}, {what}")
                    if p.ci and finite:
                        ax.axhspan(p.mean - p.ci, p.mean + p.ci, color=color, alpha=0.08)
        if finite:
            ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(metric)
        runs = sum(p.n for p in mine)
        ax.set_title(f"{dataset} ({runs} runs; bars: 95% CI over seeds)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(output) if output is not None else Path(folder) / DEFAULT_OUTPUT
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
