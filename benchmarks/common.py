"""The benchmarks' runner: results files, the one run loop, metered runs, bootstrap CIs.

Every script that produces rows goes through :func:`run_cells`: it walks the script's cells in
the script's order (seeds outermost, so a partial run still covers every setting), skips the
cells whose ``key`` is already in the results file, runs the others (in a forked child with
wall/CPU seconds and peak RSS, or in process), and appends one JSON line per cell with the
command and the git revision of the library that produced it. ``seed_stats`` /
``bootstrap_ci`` are the statistics every table prints (mean and 95% bootstrap CI).

``DPGNN_BENCH_RESULTS`` and ``DPGNN_BENCH_DOCS`` move the results folder and the docs folder
the summaries splice into (``smoke.py`` points both at a temporary copy).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import threading
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: where results files are read and written (``DPGNN_BENCH_RESULTS`` overrides it)
RESULTS = Path(os.environ.get("DPGNN_BENCH_RESULTS") or ROOT / "benchmarks" / "results")
#: the docs pages tables are spliced into (``DPGNN_BENCH_DOCS`` overrides it)
DOCS = Path(os.environ.get("DPGNN_BENCH_DOCS") or ROOT / "docs")
#: speed-ups that change timings (not results): sparse wide features + ghost clipping
CODE_VERSION = "csr-ghost"
#: preprocessing protocol of new rows: classes declared publicly (``classes=``), isolated nodes
#: kept (``remove_isolated=False``), identity-keyed split (``split_by="identity"``, binomial
#: sizes), Facebook100 features from the papers' five columns with the public code book
#: (``dataset_kwargs={"vocabulary": "public"}``), OS-entropy privacy noise (no ``noise_seed``).
#: Rows without a ``protocol`` field are ``"paper-v0"``: data-derived class filter
#: (``min_class_size``), isolated nodes removed, positional split, seeded noise (see
#: :func:`row_unit` for their units). ``"public-v1"`` rows (a first pass of the same day) used
#: the Facebook100 features and data vocabulary of the library before commit 21d69d1; they are
#: superseded (see :func:`invalid_reason`).
PROTOCOL = "public-v2"
LEGACY_PROTOCOL = "paper-v0"
SUPERSEDED_PROTOCOL = "public-v1"
#: protected unit of a row: what one unit of privacy is
UNITS = ("edge-directed", "edge-undirected", "node", "ldp", "none")
#: unit of the old node-level GAP/ProGAP rows: degree bounded by sampling D = 100 in-edges per
#: node, not a stable projection (removing one node changes many edges), so the printed epsilon
#: was not delivered; excluded from the tables
INVALID_NODE_UNIT = "node-sampled-D100 (invalid: unstable projection)"


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


def row_unit(row: dict) -> str:
    """The protected unit of a result row; rows written before units were recorded (protocol
    ``paper-v0``) get theirs from the method: edge-level ones the thesis' directed edge,
    node-level GAP/ProGAP ones :data:`INVALID_NODE_UNIT`."""
    if row.get("unit"):
        return row["unit"]
    method, level = row.get("method", ""), row.get("level")
    if "EDP" in method or level == "edge":
        return "edge-directed"
    if "NDP" in method:
        return INVALID_NODE_UNIT
    if method.startswith("DP-MLP") or level == "node":
        return "node"
    if level == "ldp":
        return "ldp"
    return "none"


def row_protocol(row: dict) -> str:
    return row.get("protocol") or LEGACY_PROTOCOL


def invalid_reason(row: dict) -> str | None:
    """Why a row is left out of the tables, or ``None``: the old sampled node-level rows (their
    guarantee does not hold) and the superseded ``public-v1`` pass."""
    if row_unit(row) == INVALID_NODE_UNIT:
        return INVALID_NODE_UNIT
    if row_protocol(row) == SUPERSEDED_PROTOCOL:
        return (
            "public-v1 (superseded first pass: Facebook100 features and data vocabulary of the "
            "library before 21d69d1, a private read at node level)"
        )
    return None


def is_valid(row: dict) -> bool:
    """Whether a row goes into the tables (see :func:`invalid_reason`)."""
    return invalid_reason(row) is None


def code_revision() -> str:
    """``git`` commit of the checkout, ``+dirty`` when ``lightning_dpgnn/`` has uncommitted
    changes (the library was edited while benchmarks ran: rows say which code they used)."""
    import subprocess

    root = ROOT
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "lightning_dpgnn"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def model_unit(model) -> str:
    """The protected unit of a fitted model, from its privacy settings."""
    level = getattr(model, "privacy", None) or "none"
    if level == "edge":
        return f"edge-{model.edge_unit}"
    return level


def done_keys(path: Path) -> set[str]:
    """The ``key`` of every row of a results file (rows without one have none)."""
    if not path.exists():
        return set()
    return {r.get("key") for r in load_rows(path)} - {None}


#: a cell re-run (under new defaults, a fixed bug, ...) replaces its old rows from this many
#: seeds on; a re-run cell with fewer stays out of the tables (:func:`fold`)
MIN_RERUN_SEEDS = 5


def cell_of(row: dict) -> tuple:
    """(dataset, method, epsilon, unit, protocol): the rows of one table cell of a grid."""
    return (row["dataset"], row["method"], row["target_epsilon"], row_unit(row),
            row_protocol(row))  # fmt: skip


def fold(base: Path, rerun: Path, min_seeds: int = MIN_RERUN_SEEDS) -> tuple[int, int]:
    """Replace the cells that ``rerun`` re-ran (with >= ``min_seeds`` rows) in ``base``: their
    old rows leave ``base`` and the re-run rows are appended (cells with fewer rows are not
    taken; their rows stay in ``rerun``). A grid cell is re-run into a scratch file (the keys
    in ``base`` would skip it) and folded in, so that the results folder only holds the rows
    the tables use; the replaced rows stay in git history. Returns (rows removed, rows added).

        python benchmarks/gap_accuracy.py --seeds 10 --methods GAP-EDP --out /tmp/rerun.jsonl
        python benchmarks/common.py fold benchmarks/results/gap_accuracy.jsonl /tmp/rerun.jsonl
    """
    from collections import Counter

    lines = [ln for ln in base.read_text().splitlines() if ln.strip()]
    fresh = [ln for ln in rerun.read_text().splitlines() if ln.strip()]
    seeds = Counter(cell_of(json.loads(ln)) for ln in fresh)
    redone = {cell for cell, n in seeds.items() if n >= min_seeds}
    kept = [ln for ln in lines if cell_of(json.loads(ln)) not in redone]
    added = [ln for ln in fresh if cell_of(json.loads(ln)) in redone]
    base.write_text("".join(ln + "\n" for ln in kept + added))
    return len(lines) - len(kept), len(added)


def append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def splice(path: Path, begin: str, end: str, md: str) -> None:
    """Replace the text between the ``begin`` and ``end`` markers of ``path`` (a docs page)
    by ``md``: generated tables go into the docs, never hand-typed numbers."""
    doc = path.read_text()
    if begin not in doc or end not in doc:
        raise ValueError(f"{path} has no {begin} ... {end} markers")
    head, rest = doc.split(begin)
    path.write_text(head + begin + "\n" + md + "\n" + end + rest.split(end)[1])


def command_line() -> str:
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def bootstrap_ci(values, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% bootstrap confidence interval of the mean (percentile method)."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = rng.choice(v, size=(n_boot, len(v)), replace=True).mean(axis=1)
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def load_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seed_stats(rows: list[dict], metric: str = "test_acc") -> dict:
    """Summary of one setting's runs: seeds, mean and 95% bootstrap CI of ``100 * metric``,
    and median wall / CPU seconds and the largest peak RSS over runs of the current code
    (speed-ups change timings, not results; accuracy uses every seed)."""
    mean, lo, hi = bootstrap_ci([100 * r[metric] for r in rows])
    timed = [r for r in rows if r.get("code") == CODE_VERSION] or rows
    scoped = [r for r in timed if r.get("rss_scope") == "run"] or timed
    return dict(
        seeds=len(rows),
        acc_mean=round(mean, 2),
        acc_ci95=[round(lo, 2), round(hi, 2)],
        wall_s_median=round(float(np.median([r["wall_s"] for r in timed])), 1),
        cpu_s_median=round(float(np.median([r.get("cpu_s", 0.0) for r in timed])), 1),
        timed_runs=len(timed),
        peak_rss_mb_max=max(r["peak_rss_mb"] for r in scoped),
    )


def cpu_info() -> str:
    return f"{os.cpu_count()} CPU cores (torch threads: {__import__('torch').get_num_threads()})"


def add_smoke_flag(parser) -> None:
    """``--smoke``: the embedded csbm graph, one seed, one epoch (:mod:`smoke`)."""
    parser.add_argument(
        "--smoke", action="store_true",
        help="check the code path in seconds: the embedded csbm graph, 1 seed, 1 epoch, the "
        "first setting of each method (give --out: the rows are no result)",
    )  # fmt: skip


def smoke_args(args) -> None:
    """Apply ``--smoke`` to parsed ``args``: csbm settings (:func:`settings.use_smoke_settings`),
    one seed, the csbm graph as the only dataset."""
    if not getattr(args, "smoke", False):
        return
    import settings

    settings.use_smoke_settings()
    for name, value in (("seeds", 1), ("datasets", [settings.SMOKE_DATASET]),
                        ("dataset", settings.SMOKE_DATASET)):  # fmt: skip
        if hasattr(args, name):
            setattr(args, name, value)


def grid_parser(doc: str, datasets: dict, default_out: Path):
    """The command line of a grid benchmark (``gap_accuracy.py``, ``progap_accuracy.py``,
    ``baselines_accuracy.py``): seeds, dataset / method / epsilon / unit subsets, output."""
    import argparse

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=list(datasets))
    p.add_argument("--methods", nargs="*", default=None, help="subset, e.g. GAP-EDP MLP")
    p.add_argument(
        "--epsilons", nargs="*", type=float, default=None, help="subset of target epsilons"
    )
    p.add_argument(
        "--edge-units",
        nargs="*",
        default=["directed"],
        choices=["directed", "undirected"],
        help="edge-level units to run (directed: the papers' unit, for comparison)",
    )
    p.add_argument("--out", type=Path, default=default_out)
    add_smoke_flag(p)
    return p


def refuse_smoke_into(default, parser, args) -> None:
    """``--smoke`` rows are no result: refuse them into the results file ``default``."""
    if args.smoke and args.out == default:
        parser.error("--smoke: give --out (smoke rows are no result)")


def run_and_write(cells, out: Path, table: str, *, run: bool = True, one_thread: bool = False,
                  **write) -> None:
    """``cells`` through :func:`run_cells` in this process (``run=False``, a script's
    ``--summarize``: none), warnings off (``one_thread``: torch on one thread, the benchmark
    machine's cores are shared), then the table of ``out`` (``summarize.write(table, ...)``)."""
    if run:
        warnings.filterwarnings("ignore")
        if one_thread:
            import torch

            torch.set_num_threads(1)
        run_cells(cells, out, measured=False)
    import summarize

    print(summarize.write(table, out, **write))


def run_cells(cells, out: Path, *, measured: bool = True, recheck: bool = False) -> int:
    """The run loop of every benchmark that writes rows. ``cells`` yields ``(meta, fit)`` in
    the script's order (seeds outermost); ``meta["key"]`` names the cell (``None``: a
    one-off run, never skipped). A key already in ``out`` is skipped (``recheck``: the file is
    re-read before each cell, for processes that share it); otherwise ``fit()`` runs and one
    row is appended: ``meta``, ``fit()``'s results, ``revision`` (:func:`code_revision`,
    unless ``meta`` has one) and ``command``. ``measured``: ``fit`` runs in a forked child
    (:func:`run_measured`: wall / CPU seconds, peak RSS, hardware); else in this process, with
    its wall ``seconds``. Returns the number of cells whose child failed (a failed cell is
    reported and the loop goes on)."""
    done = done_keys(out)
    revision = code_revision()  # the library this process imported
    failed = 0
    for meta, fit in cells:
        key = meta["key"]
        if key is not None and (key in done or (recheck and key in done_keys(out))):
            continue
        # a one-off run (``key`` None: never skipped) records no key
        meta = {**{k: v for k, v in meta.items() if k != "key" or v is not None},
                "revision": meta.get("revision", revision)}  # fmt: skip
        if measured:
            failed += not run_measured(meta, fit, out)
        else:
            t0 = time.time()
            result = fit()
            append(out, {**meta, **result, "seconds": result.get("seconds", time.time() - t0),
                         "command": command_line()})  # fmt: skip
        done.add(key)
    return failed


def grid_cells(configs, datasets: dict, args, protocol: str = PROTOCOL):
    """The cells of a grid: every ``(method, epsilon, unit, build)`` of
    ``configs(dataset, edge_units)`` on every dataset and seed, seeds outermost (``--smoke``:
    the first setting of each method). Each fit trains, tests and validates the model
    (:func:`_fit_and_test`); its row holds the test and validation accuracy, the epsilon/delta
    the model reports, the protected ``unit`` and the preprocessing ``protocol`` (with the data
    module's settings)."""
    from lightning_dpgnn.data import NodeDataModule

    for seed in range(args.seeds):
        for name in args.datasets:
            dm = NodeDataModule(name, seed=seed, **datasets[name])
            dm.setup()
            seen = set()
            for method, eps, unit, build in configs(name, tuple(args.edge_units)):
                if args.methods and method not in args.methods:
                    continue
                if args.epsilons and (eps is None or eps not in args.epsilons):
                    continue
                if getattr(args, "smoke", False) and method in seen:
                    continue
                seen.add(method)
                meta = dict(
                    key=f"{name}|{method}|{eps}|{unit}|{protocol}|{seed}",
                    dataset=name,
                    method=method,
                    target_epsilon=eps,
                    seed=seed,
                    unit=unit,
                    protocol=protocol,
                    preprocessing=datamodule_settings(dm),
                )
                yield meta, partial(_fit_and_test, build, seed, dm, unit)


def run_grid(configs, datasets: dict, args, protocol: str = PROTOCOL) -> int:
    """Run a grid benchmark (:func:`grid_cells` through :func:`run_cells`, each run measured
    in its own process) into ``args.out``; the number of failed runs."""
    quiet()
    smoke_args(args)
    return run_cells(grid_cells(configs, datasets, args, protocol), args.out)


def datamodule_settings(dm) -> dict:
    """The preprocessing options of a ``NodeDataModule`` that a result row records."""
    keys = (
        "target",
        "split",
        "split_by",
        "classes",
        "min_class_size",
        "remove_isolated",
        "subsample_in_degree",
        "feature_range",
        "feature_bounds",
        "dataset_kwargs",
    )
    return {k: getattr(dm, k, None) for k in keys}


def trainer_for(model, **kwargs):
    """:func:`quiet_trainer` for ``model``: a staged model (GAP, ProGAP, PoinDP, MLP) gets no
    ``max_epochs``, its stages' epochs set the length of its fit (a shorter Trainer
    ``max_epochs`` is refused)."""
    if getattr(model, "staged", None) is not None:  # the StagedFit component
        kwargs.pop("max_epochs", None)
    return quiet_trainer(**kwargs)


def quiet_trainer(**kwargs):
    """A ``lightning.Trainer`` for benchmark runs: no logger, checkpoints, bar or summary."""
    import lightning as L

    return L.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


def report_fields(report) -> dict:
    """What a result row records of a privacy report: epsilon (``None`` when infinite, with
    ``epsilon_is_infinite``), delta, the protected unit and where the noise came from."""
    infinite = math.isinf(report.epsilon)
    return dict(
        epsilon=None if infinite else report.epsilon,
        epsilon_is_infinite=infinite,
        delta=report.delta,
        report_unit=report.unit,
        secure_randomness=report.secure_randomness,
        reproducible_noise=report.reproducible_noise,
    )


def _fit_and_test(build, seed: int, dm, unit: str | None = None) -> dict:
    model = build(seed)
    # "none" rows include MLP, which reports edge-level epsilon 0 (it reads no edges)
    if unit not in (None, "none") and model_unit(model) != unit:
        raise RuntimeError(f"config says {unit!r}, the model protects {model_unit(model)!r}")
    import settings

    trainer = trainer_for(model, **settings.TRAINER)
    trainer.fit(model, dm)
    acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    val = trainer.validate(model, dm, verbose=False)[0]["val/acc"]  # for model selection
    report = model.privacy_spent()
    return {
        "test_acc": float(acc),
        "val_acc": float(val),
        **report_fields(report),
        "epsilon": report.epsilon if report.level != "none" else None,
        "level": report.level,
        # node level: D, the promised bound on every in-/out-degree (no edge is dropped)
        "degree_bound": model.hparams.get("max_degree") if report.level == "node" else None,
        # GAP/ProGAP: whether the input held the noisy label counts (the resolved default)
        **({"label_counts": model.label_counts} if hasattr(model, "label_counts") else {}),
    }


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


def run_measured(meta: dict, fit, out: Path) -> bool:
    """Run ``fit()`` (returns a dict of results) in a forked child and append one JSON row:
    ``meta``, the results, wall and CPU seconds, peak RSS, hardware, command, code version.

    The child inherits what the parent loaded (the dataset) and nothing it allocates outlives
    it, so its peak RSS is this run's own. Returns whether the run succeeded.
    """
    import multiprocessing

    release_memory()  # the child inherits the parent's heap: keep it lean
    child = multiprocessing.get_context("fork").Process(
        target=_measured_child, args=(meta, fit, out)
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        print(f"{meta['key']}: FAILED (exit code {child.exitcode})", flush=True)
    return child.exitcode == 0


def _measured_child(meta: dict, fit, out: Path) -> None:
    import torch

    quiet()
    torch.manual_seed(meta.get("seed", 0))
    t0, c0 = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        result = fit()
    row = dict(
        **meta,
        **result,
        wall_s=round(time.perf_counter() - t0, 2),
        cpu_s=round(time.process_time() - c0, 2),
        peak_rss_mb=round(mem.peak_mb, 1),
        rss_scope="run",  # measured in a fresh child: this run's own peak
        code=CODE_VERSION,  # timings are compared within one code version (see summarize.py)
        hardware=cpu_info(),
        command=command_line(),
    )
    append(out, row)
    shown = " ".join(
        f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
        for k, v in result.items()
        if isinstance(v, (int, float, str)) and k != "selection"
    )
    print(f"{meta['key']}: {shown} {row['wall_s']}s {row['peak_rss_mb']}MB", flush=True)


def run_audits(doc: str, title: str, note: str, cases: list[tuple[dict, object]],
               default_out: Path) -> None:
    """The mechanism-audit scripts (``audit_aggregation.py``, ``audit_dpsgd.py``): every
    ``(columns, audit)`` case is a cell of :func:`run_cells` (``audit(trials=, delta=)``
    returns an ``AuditResult``; its row holds ``columns``, the trials, delta and the result),
    then the table of this trial count and delta goes beside ``--out`` (``.md``); ``note``
    describes the trials."""
    import argparse
    import dataclasses

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    quiet()

    def fit(audit) -> dict:
        result = audit(trials=args.trials, delta=args.delta)
        print(result, flush=True)
        return {**dataclasses.asdict(result), "table_cells": result.table_cells}

    run = dict(trials=args.trials, delta=args.delta)
    run_cells(((dict(key="|".join(map(str, [*cols.values(), *run.values()])), **cols, **run),
                partial(fit, audit)) for cols, audit in cases), args.out, measured=False)
    rows = [r for r in load_rows(args.out) if (r["trials"], r["delta"]) == tuple(run.values())]
    columns = [*cases[0][0], "accounted eps", "measured eps >=", "verdict"]
    lines = [
        f"# {title}",
        "",
        f"Command: `{command_line()}`",
        "",
        f"{args.trials} trials per hypothesis{note}, 95% confidence (Clopper-Pearson), delta "
        f"{args.delta:g}. A row is a violation when the measured lower bound exceeds the "
        "accounted epsilon.",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(f"{r[c]:g}" if isinstance(r[c], float) else str(r[c])
                            for c in cases[0][0]) + f" | {r['table_cells']} |" for r in rows),
    ]  # fmt: skip
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def heterorr_release(method: str, edge_index, num_nodes: int, epsilon: float | None,
                     rho: float | None, split_seed: int, steps_per_node: float = 1000.0):
    """The edge release of a HeteroRR benchmark row: ``(edge_index, accountant)`` of
    ``method`` in ``EdgeRR`` (public edges pass, the private ones by the private HRG; at
    ``rho = 1`` PrivHRG), ``public-only`` (the private edges dropped), ``LapGraph`` and
    ``EdgeRand`` (every edge private: the paper's baselines), ``empty`` (no edge: a reference)
    or ``GCN`` (the graph as is). The
    private edges are :func:`~lightning_dpgnn.privacy.hrg.edge_split` of ``rho`` and the public
    ``split_seed``; every draw is OS-entropy seeded."""
    from lightning_dpgnn.privacy import EdgeRR, LapGraph, PrivacyAccountant
    from lightning_dpgnn.privacy.edgerand import AsymmetricRandomizedResponse
    from lightning_dpgnn.privacy.hrg import edge_split
    from lightning_dpgnn.privacy.mechanism import draw

    acc = PrivacyAccountant("edge")
    mask = None if rho is None else edge_split(edge_index, rho, split_seed)
    if method == "GCN":
        return edge_index, acc
    if method == "public-only":
        return edge_index[:, ~mask], acc
    if method == "empty":
        return edge_index[:, :0], acc
    if method == "EdgeRR":
        mech = EdgeRR(epsilon, steps_per_node=steps_per_node)
        return draw(mech, acc, None, edge_index, num_nodes, mask), acc
    if method == "LapGraph":
        return draw(LapGraph(epsilon), acc, None, edge_index, num_nodes), acc
    if method == "EdgeRand":
        return draw(AsymmetricRandomizedResponse(epsilon), acc, None, edge_index, num_nodes), acc
    raise ValueError(f"unknown edge release {method!r}")


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description="Results-file maintenance (see fold).")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fold", help=fold.__doc__.splitlines()[0])
    f.add_argument("base", type=Path)
    f.add_argument("rerun", type=Path)
    f.add_argument("--min-seeds", type=int, default=MIN_RERUN_SEEDS)
    args = p.parse_args()
    removed, added = fold(args.base, args.rerun, args.min_seeds)
    print(f"{args.base}: {removed} rows replaced by {added} re-run rows")


if __name__ == "__main__":
    main()
