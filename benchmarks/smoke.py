"""Smoke run of every benchmark script: tiny settings, outputs in a temporary folder.

Each script runs once as a user runs it (``python benchmarks/<script>.py ...``, a fresh
process, ``OMP_NUM_THREADS=1``) with settings that check its code path, not a result: the
grids' ``--smoke`` (the embedded csbm graph, 1 seed, 1 epoch, the first setting of each
method), one cell of the others, a few thousand audit trials. ``DPGNN_BENCH_RESULTS`` and
``DPGNN_BENCH_DOCS`` point every script at a temporary copy of ``benchmarks/results/`` and
``docs/``, recipes and dataset counts go there too: the checkout is never written. The
``summarize`` step regenerates every table from the copied results and fails when a table or
docs page differs from the checkout's (a table edited by hand, or rows changed without
re-summarizing). Scripts that read real data (cora, Facebook100 Rutgers89, MUTAG, CiteSeer) need
``DPGNN_DATA``; without it they are reported as skipped.

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python benchmarks/smoke.py
    python benchmarks/smoke.py --only gap_accuracy summarize --keep /tmp/smoke

Prints one line per step (pass / FAIL / skipped, seconds) and exits non-zero if one failed.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def steps(tmp: Path) -> list[tuple[str, list[list[str]], bool]]:
    """``(script, commands, needs DPGNN_DATA)``: the smoke commands of every script, in
    ``tmp`` (results in ``tmp/results``)."""
    r = tmp / "results"
    py = [sys.executable]
    fit_memory = [  # a callback module: one csbm fit with it attached (as ddp.py --memory does)
        str(Path(sys.executable).with_name("dpgnn")), "fit", "--config",
        str(ROOT / "zoo/recipes/gap-edge-csbm.yaml"), "--trainer.max_epochs=4",
        "--model.init_args.encoder_epochs=2", "--model.init_args.classifier_epochs=2",
        "--trainer.enable_progress_bar=false", "--trainer.enable_checkpointing=false",
        "--trainer.callbacks+=fit_memory.FitMemory",
    ]  # fmt: skip

    def script(name: str, *args: str) -> list[str]:
        return [*py, str(HERE / f"{name}.py"), *args]

    return [
        ("audit_aggregation", [script("audit_aggregation", "--trials", "2000")], False),
        ("audit_dpsgd", [script("audit_dpsgd", "--trials", "2000")], False),
        ("audit_attacks", [
            script("audit_attacks", "--smoke", "--attack", "link", "--out", f"{r}/a.jsonl"),
            script("audit_attacks", "--summarize", "--out", f"{r}/a.jsonl", "--min-seeds", "1"),
        ], False),
        ("audit_power", [
            script("audit_power", "--runs", "1", "--runs-1m", "0", "--trials", "2000", "--out",
                   f"{r}/power.jsonl"),
            script("audit_power", "--summary", "--out", f"{r}/power.jsonl"),
        ], False),
        ("baselines_accuracy", [
            script("baselines_accuracy", "--smoke", "--out", f"{r}/baselines_smoke.jsonl"),
            script("baselines_accuracy", "--recipes", "--out", f"{tmp}/recipes"),
        ], False),
        ("ddp", [script("ddp", "--recipes", "gap-edge-csbm", "--devices", "1", "--seeds", "1")],
         False),
        ("fit_memory", [fit_memory], False),
        ("gap_accuracy", [script("gap_accuracy", "--smoke", "--out", f"{r}/gap_smoke.jsonl")],
         False),
        ("gwldp_accuracy", [
            script("gwldp_accuracy", "--smoke", "--out", f"{r}/gwldp.jsonl", "--cache",
                   f"{tmp}/gw-cache"),
            script("gwldp_accuracy", "--summarize", "--out", f"{r}/gwldp.jsonl"),
        ], True),
        ("gwldp_clustering", [
            script("gwldp_clustering", "--smoke", "--out", f"{r}/gwldp_cl.jsonl", "--cache",
                   f"{tmp}/gw-cache"),
            script("gwldp_clustering", "--summarize", "--out", f"{r}/gwldp_cl.jsonl"),
        ], True),
        ("gpu", [["bash", str(HERE / "gpu.sh"), "--smoke"]], True),
        ("zoo_check", [
            script("zoo_check", "pgc-cora", "--seeds", "1", "--out", f"{r}/zoo_check_smoke.jsonl",
                   "--override", "--trainer.max_epochs", "2"),
        ], True),
        ("gwldp_timing", [script("gwldp_timing", "--smoke", "--out", f"{r}/gwldp_t.jsonl")], True),
        ("heterorr_feature_error", [script("heterorr_feature_error", "--smoke", "--out",
                                           f"{r}/heterorr_fe.jsonl")], False),
        ("heterorr_edges", [script("heterorr_edges", "--smoke", "--out",
                                   f"{r}/heterorr_edges_smoke.jsonl")], False),
        ("heterorr_accuracy", [script("heterorr_accuracy", "--smoke", "--out",
                                      f"{r}/heterorr_accuracy_smoke.jsonl")], False),
        ("honest_degree_bound", [
            script("honest_degree_bound", "--smoke", "--out", f"{r}/honest_smoke.jsonl"),
            script("honest_degree_bound", "--summary", "--smoke", "--out",
                   f"{r}/honest_smoke.jsonl"),
        ], False),
        ("lpgnn_accuracy", [script("lpgnn_accuracy", "--smoke", "--out", f"{r}/lp.jsonl")], True),
        ("lpgnn_make_recipes", [script("lpgnn_make_recipes", "--out", f"{tmp}/recipes")], False),
        ("make_recipes", [script("make_recipes", "--out", f"{tmp}/recipes")], False),
        ("measure_datasets", [script("measure_datasets", "--datasets", "cora", "--out",
                                     f"{tmp}/known_datasets.json")], True),
        ("mia_diagnosis", [
            script("mia_diagnosis", "--smoke", "--out", f"{r}/d.jsonl"),
            script("mia_diagnosis", "--summarize", "--out", f"{r}/d.jsonl"),
        ], False),
        ("mia_recalibration", [
            script("mia_recalibration", "--smoke", "--out", f"{r}/rc.jsonl"),
            script("mia_recalibration", "--summarize", "--out", f"{r}/rc.jsonl"),
        ], False),
        ("pgc_accuracy", [script("pgc_accuracy", "--smoke", "--out", f"{r}/pgc.jsonl")], True),
        ("pgc_estimation_error", [script("pgc_estimation_error", "--seeds", "1", "--datasets",
                                         "cora", "--epsilons", "1", "--out", f"{r}/e.json")],
         True),
        ("poindp_accuracy", [
            script("poindp_accuracy", "--smoke", "--out", f"{r}/poindp_smoke.jsonl"),
            script("poindp_accuracy", "--summarize", "--out", f"{r}/poindp_smoke.jsonl"),
        ], False),
        ("progap_accuracy", [script("progap_accuracy", "--smoke", "--out",
                                    f"{r}/progap_smoke.jsonl")], False),
        ("progap_scale", [script("progap_scale", "--smoke", "--out", f"{r}/scale.jsonl")], False),
        ("reference_parity", [script("reference_parity", "--smoke", "--out", f"{r}/p.jsonl")],
         True),
        ("reference_speed", [script("reference_speed", "--smoke", "--out",
                                    f"{r}/reference_speed_smoke.jsonl")], True),
        ("minibatch_lever", [script("minibatch_lever", "--smoke", "--out",
                                    f"{r}/minibatch_smoke.jsonl")], False),
        ("speed", [script("speed", "--targets", "import", "hop", "--repeats", "1",
                          "--hop-dataset", "random:2000:20000")], False),
        ("common", [script("common", "fold", f"{r}/gap_smoke_copy.jsonl",
                           f"{r}/gap_smoke.jsonl", "--min-seeds", "1")], False),
    ]  # fmt: skip


def check_tables(tmp: Path) -> list[str]:
    """Regenerate every table from a fresh copy of the results (no smoke rows) and list the
    generated files that differ from the checkout's (tables and docs pages; plots are not
    compared: they depend on the matplotlib version)."""
    results, docs = tmp / "tables" / "results", tmp / "tables" / "docs"
    shutil.copytree(HERE / "results", results)
    shutil.copytree(ROOT / "docs", docs)
    env = dict(os.environ, DPGNN_BENCH_RESULTS=str(results), DPGNN_BENCH_DOCS=str(docs),
               OMP_NUM_THREADS="1")  # fmt: skip
    subprocess.run([sys.executable, str(HERE / "summarize.py"), "all", "--quiet"], env=env,
                   check=True)  # fmt: skip
    pairs = [(HERE / "results" / f.name, f) for f in [*results.glob("*.md"),
                                                      *results.glob("*.json")]]
    pairs += [(ROOT / "docs" / f.relative_to(docs), f) for f in docs.rglob("*.md")]
    return sorted(str(old.relative_to(ROOT)) for old, new in pairs
                  if not old.exists() or not filecmp.cmp(old, new, shallow=False))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None, help="scripts (and/or 'summarize')")
    p.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    p.add_argument("--timeout", type=float, default=600, help="seconds per command")
    args = p.parse_args()
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="dpgnn-smoke-"))
    (tmp / "results").mkdir(parents=True, exist_ok=True)
    (tmp / "docs").mkdir(exist_ok=True)
    shutil.copytree(ROOT / "docs", tmp / "docs", dirs_exist_ok=True)  # the splices' targets
    env = dict(
        os.environ, OMP_NUM_THREADS="1", DPGNN_BENCH_RESULTS=str(tmp / "results"),
        DPGNN_BENCH_DOCS=str(tmp / "docs"),
        DPGNN_CACHE=os.environ.get("DPGNN_CACHE") or str(tmp / "cache"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    )  # fmt: skip
    report, failed = [], 0
    for name, commands, needs_data in steps(tmp):
        if args.only and name not in args.only:
            continue
        if needs_data and not os.environ.get("DPGNN_DATA"):
            report.append((name, "skipped (needs DPGNN_DATA)", 0.0))
            continue
        if name == "common":  # fold needs a base file: a copy of the GAP smoke rows
            src = tmp / "results" / "gap_smoke.jsonl"
            (tmp / "results" / "gap_smoke_copy.jsonl").write_text(
                src.read_text() if src.exists() else "")
        start, status = time.perf_counter(), "pass"
        for cmd in commands:
            work = tmp / "work" / name
            work.mkdir(parents=True, exist_ok=True)
            try:
                run = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                                     timeout=args.timeout)  # fmt: skip
            except subprocess.TimeoutExpired:
                status = f"FAIL (timeout {args.timeout:g}s): {' '.join(cmd[1:])}"
                break
            if run.returncode != 0:
                status = f"FAIL (exit {run.returncode}): {' '.join(cmd[1:])}\n{run.stderr[-3000:]}"
                break
        failed += status != "pass"
        report.append((name, status, time.perf_counter() - start))
        print(f"{name}: {status} ({report[-1][2]:.0f}s)", flush=True)
    if not args.only or "summarize" in args.only:
        start = time.perf_counter()
        changed = check_tables(tmp)
        status = "pass" if not changed else "FAIL: differs from its rows: " + ", ".join(changed)
        failed += bool(changed)
        report.append(("summarize", status, time.perf_counter() - start))
        print(f"summarize: {status} ({report[-1][2]:.0f}s)", flush=True)
    print(f"\n{sum(s == 'pass' for _, s, _ in report)} passed, {failed} failed, "
          f"{sum(s.startswith('skipped') for _, s, _ in report)} skipped; outputs in {tmp}")
    if not args.keep and not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
