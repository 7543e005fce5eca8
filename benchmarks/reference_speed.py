"""Side by side with the authors' GAP/ProGAP code (issue 32): speed at school scale, paired runs.

Protocol (that of ``reference_parity.py`` and ``speed.py --targets school``): Facebook100
Rutgers89, target ``year``, classes with >= 1000 nodes, 75/10/15, edge-level epsilon 1, delta
1e-7, the directed edge unit, GAP K=2 and ProGAP K=3, one torch thread (``OMP_NUM_THREADS=1``
and ``torch.set_num_threads(1)`` in both). Each run is a fresh process; per method the two
sides alternate in ABBA order (repeat 0: ours, reference; repeat 1: reference, ours; ...), the
methods interleaved, so both sides see the same load. Each row: whole-process wall time
(subprocess start to exit, from this parent) and CPU time, fit + test in process, peak RSS
(``ru_maxrss`` of the child), test accuracy, the 1-minute load average before and after.

* **ours**: ``speed.py``'s in-process measurement, run as it runs it (``speed.py --child
  school METHOD SCHOOL MODEL_KWARGS``, its ``child_school``: ``Trainer.fit``
  + ``Trainer.test``, which include the datamodule's setup: the processed-graph cache load,
  class filter and split) with the papers' model (``label_counts=False``; ``speed.py`` keeps
  today's default, label counts on);
* **reference**: the authors' ``train.py`` (``python train.py {gap,progap} edge ...``) run by
  :func:`child_reference` in a fresh interpreter; fit + test is the reference's own ``duration``
  (``train.run``'s ``time()`` around ``method.run(data)``: setup, noise calibration, fit and
  test, from the loaded graph); ``ref_load_s`` is its ``DatasetLoader.load`` (a cache hit).

Both at their defaults, which match: hidden 16, GAP with a 2-layer encoder, 1 base and 1 head
layer, ``cat`` combination; ProGAP with 1 base and 1 head layer per stage, ``cat`` JK; SELU,
batch norm, dropout 0, Adam at lr 0.01 without weight decay, full batch; 100 encoder + 100
classifier epochs (GAP), 100 epochs per stage (ProGAP). Differences: the reference runs its
whole default pipeline (its split and class filter are computed once, when its processed cache
is built; ours on every fit, inside the timed fit); each side selects its model on validation
accuracy its own way; the reference's split is drawn once, when its processed cache is built
(the warm-up run, ``--seed``), its initialisation and noise by ``--seed`` + repeat.
``--epochs N`` (development, smoke) sets every epoch count of both sides.

**The reference runs offline, unmodified**, from ``git archive`` of a bare git mirror of
github.com/sisaman/ProGAP (``--mirror``, or ``$DPGNN_REFERENCE_MIRROR``; no default: the script
stops and says so) extracted under ``--work``. Its interpreter (``--python``, or
``$DPGNN_REFERENCE_PYTHON``; default: the interpreter running this script) is best a
benchmark-only venv: the same torch 2.13, PyG, opacus, autodp and torchmetrics as
ours, plus the two small pure-Python packages the reference calls, pip-installed there from the
local registry (never a project dependency): ``class-resolver`` (its activation and optimizer
lookups, on the timed path) and ``tabulate`` (its argument table). Its graph is our
``$DPGNN_DATA/facebook100/<school>.mat``, symlinked into the raw folder its ``Facebook`` dataset
reads (no download); it builds its processed cache there on the first (warm-up) run.

Imports it makes that are not installed (no wheel of ``torch_sparse`` for this torch; not in the
local registry or not needed) come from stand-ins written to ``<work>/standins``, put on
``sys.path`` after torch and PyG are imported (so their optional-dependency probes see the real
environment) and removed, with the modules, once ``train`` is imported: ``torch_sparse``,
``ogb.nodeproppred``, ``pyg_lib.sampler``, ``dp_accounting``, ``wandb.wandb_run``. Each is
importable and never callable (any use raises ``RuntimeError``): they serve the GNN baseline,
ARR, the Amazon dataset, node-level degree bounding, DP-SGD accounting and the wandb logger,
none of them on the edge-level GAP/ProGAP path.

Patches, applied by :func:`child_reference` at import (the reference's files are not edited):

1. ``DatasetLoader.supported_datasets["facebook"]``: the same ``Facebook`` dataset and
   pre-transforms (75/10/15 split, classes >= 1000 nodes, self-loops and isolated nodes
   removed), with ``name=<school>`` instead of its hard-coded ``UIllinois20``;
2. the reference's ``BaseTransform`` subclasses (``core/data/transforms``) get an empty
   ``__abstractmethods__``: they override ``__call__`` (the PyG 2.3 interface), and PyG 2.8
   declares an abstract ``forward`` they never define, so they could not be instantiated;
3. ``core.trainer.trainer.MeanMetric`` drops ``compute_on_step=False`` (removed in
   torchmetrics 1.x; it only changed ``forward``, which the trainer never calls);
4. ``NodeClassification.run`` and ``DatasetLoader.load`` are wrapped to keep their results
   (the metrics dict ``train.run`` times, the number of edges) and the load's duration;
5. ``opacus.privacy_engine.forbid_accumulation_hook`` (gone from opacus 1.6; imported by its
   node-level DP-SGD) is a never-callable stand-in;
6. ``torch.serialization.add_safe_globals`` of PyG's ``DataEdgeAttr``, ``DataTensorAttr`` and
   ``GlobalStorage``: its dataset reads the processed graph it saved with ``torch.load``, which
   loads weights only by default since torch 2.6;
7. ``DummyLogger.set_prefix``: a no-op. GAP calls ``encoder_trainer.logger.set_prefix``, which
   no logger of the reference defines: at the mirrored HEAD its GAP crashes without it.

The reference runs with ``--delta auto`` (its default), not ``1e-7``: with an explicit delta its
``calibrate()`` reads an unbound variable (GAP and ProGAP, edge level). ``auto`` is
``1 / 10 ** digits(directed edges)`` = 1e-7 on Rutgers89 (1,219,462 edges); each row records it
(``ref_delta``).

Results: one JSON line per run in ``results/reference_speed.jsonl``; the table (medians of the
latest invocation, ratios reference / ours, load averages) in ``results/reference_speed.md``
(``summarize.py reference_speed``). On an idle machine (the real run):

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python benchmarks/reference_speed.py \
        --mirror PATH/TO/ProGAP.git --python PATH/TO/benchvenv/bin/python
    # smoke (needs the mirror; GAP, 1 repeat, 2 epochs, rows into --out):
    python benchmarks/reference_speed.py --smoke --mirror PATH/TO/ProGAP.git --out /tmp/s.jsonl

Without a mirror the script stops and says how to make one (``git clone --mirror``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from common import RESULTS, run_cells

OUT = RESULTS / "reference_speed.jsonl"
HERE = Path(__file__).resolve()
FETCH = ("git clone --mirror https://github.com/sisaman/ProGAP, then give its folder as --mirror "
         "or $DPGNN_REFERENCE_MIRROR")
#: method -> (the reference's method name, depth/hops)
METHODS = {"GAP": ("gap", 2), "ProGAP": ("progap", 3)}
#: the result line of a child (the reference prints rich tables on stdout)
MARK = "REFERENCE_SPEED_RESULT "
#: stand-in modules that must never be called: the reference imports them off the timed path
NEVER_CALLED = ("torch_sparse", "ogb", "ogb.nodeproppred", "pyg_lib", "pyg_lib.sampler",
                "dp_accounting", "wandb", "wandb.wandb_run")  # fmt: skip
STANDIN = '''"""Stand-in for {name} (benchmarks/reference_speed.py): importable, never callable."""


class _Missing:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("reference_speed.py stand-in {name}.%s was called: the timed path "
                           "must not need it" % type(self).__name__)


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return type(attr, (_Missing,), {{}})
'''


# -- the reference's copy, stand-ins and data --------------------------------------------------
def prepare(work: Path, school: str, mirror: Path | None, python: str) -> dict:
    """Extract the ``mirror``'s HEAD under ``work`` (once per commit), write the stand-ins and
    link our ``.mat`` into the reference's raw folder; the paths and the commit. ``python``:
    the reference's interpreter (our packages plus class-resolver and tabulate)."""
    if mirror is None or not (mirror / "HEAD").exists():
        sys.exit(f"reference_speed.py: no mirror of the authors' code at {mirror}; {FETCH}")
    git = ["git", "--git-dir", str(mirror)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    src = work / f"ProGAP-{commit[:12]}"
    if not (src / "train.py").exists():
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run([*git, "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    standins = work / "standins"
    for name in NEVER_CALLED:
        folder = standins.joinpath(*name.split("."))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text(STANDIN.format(name=name))
    check = subprocess.run([python, "-c", "import class_resolver, tabulate"], capture_output=True)
    if check.returncode != 0:
        sys.exit(
            f"reference_speed.py: {python} lacks class-resolver or tabulate (the reference "
            f"calls both); {python} -m pip install class-resolver tabulate"
        )
    data = os.environ.get("DPGNN_DATA")
    if not data:
        sys.exit("reference_speed.py: set DPGNN_DATA (the folder holding facebook100/)")
    mat = Path(data).resolve() / "facebook100" / f"{school}.mat"
    if not mat.exists():
        sys.exit(f"reference_speed.py: no {mat}")
    raw = work / "datasets" / "facebook" / school / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    link = raw / f"{school}.mat"
    if not link.exists():
        link.symlink_to(mat)
    return {
        "src": str(src),
        "standins": str(standins),
        "data_dir": str(work / "datasets"),
        "commit": commit,
        "python": python,
    }


# -- children (fresh interpreters) ------------------------------------------------------------
def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _never(name: str):
    """A function that raises when called: a stand-in off the timed path."""

    def never(*args, **kwargs):
        raise RuntimeError(f"reference_speed.py stand-in {name} was called")

    return never


def _import_reference(school: str, kept: dict):
    """Import the reference's ``train`` with patches 1-4 (module docstring); ``kept`` receives
    the metrics of ``method.run`` and the duration of the dataset load."""
    import opacus.privacy_engine

    if not hasattr(opacus.privacy_engine, "forbid_accumulation_hook"):  # patch 5
        opacus.privacy_engine.forbid_accumulation_hook = _never(
            "opacus.privacy_engine.forbid_accumulation_hook"
        )
    import torch
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    # patch 6: its dataset torch.load()s the processed graph it saved (weights_only by default
    # since torch 2.6): allow PyG's Data classes
    torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])
    from core.data.transforms import (
        bound_degree,
        filter_class,
        remove_isolated_nodes,
        remove_self_loops,
        split,
    )
    from torch_geometric.transforms import BaseTransform

    modules = (bound_degree, filter_class, remove_isolated_nodes, remove_self_loops, split)
    for cls in (c for m in modules for c in vars(m).values()):  # patch 2
        if (
            isinstance(cls, type)
            and issubclass(cls, BaseTransform)
            and cls.__module__.startswith("core.")
        ):
            cls.__abstractmethods__ = frozenset()
    from core.loggers.dummy import DummyLogger

    # patch 7: GAP calls encoder_trainer.logger.set_prefix('encoder/'), a method no logger of
    # the reference defines (at HEAD, GAP crashes without it): a no-op on the do-nothing logger
    DummyLogger.set_prefix = lambda self, prefix: None
    import core.trainer.trainer as trainer_mod

    metric = trainer_mod.MeanMetric
    trainer_mod.MeanMetric = lambda compute_on_step=False, **kw: metric(**kw)  # patch 3
    from core.datasets import loader as loader_mod
    from core.methods.base import NodeClassification

    facebook = loader_mod.DatasetLoader.supported_datasets["facebook"]
    loader_mod.DatasetLoader.supported_datasets["facebook"] = partial(
        facebook.func, *facebook.args, **{**facebook.keywords, "name": school}
    )  # patch 1
    run, load = NodeClassification.run, loader_mod.DatasetLoader.load

    def timed_run(self, data, *a, **kw):  # patch 4: train.run adds 'duration' to this dict
        kept["metrics"] = run(self, data, *a, **kw)
        kept["num_edges"] = self.num_edges
        return kept["metrics"]

    def timed_load(self, *a, **kw):
        t = time.perf_counter()
        out = load(self, *a, **kw)
        kept["load_s"] = time.perf_counter() - t
        return out

    NodeClassification.run, loader_mod.DatasetLoader.load = timed_run, timed_load
    import train

    return train


def child_reference(
    src: str, standins: str, data_dir: str, method: str, school: str, epochs: str, seed: str
) -> dict:
    """The reference's ``train.py`` on ``school`` (stand-ins and patches: module docstring)."""
    import torch

    torch.set_num_threads(1)
    import torch_geometric  # noqa: F401  (its optional-dependency probes: before the stand-ins)

    sys.path[:0] = [src, standins]
    kept: dict = {}
    try:
        train = _import_reference(school, kept)
    finally:  # later optional imports (e.g. torch._dynamo's of tabulate) see the real packages
        sys.path.remove(standins)
        for name in NEVER_CALLED:
            sys.modules.pop(name, None)
    name, k = METHODS[method]
    sys.argv = [
        "train.py",
        name,
        "edge",
        "--dataset",
        "facebook",
        "--data_dir",
        data_dir,
        "--epsilon",
        "1",
        "--seed",
        seed,
        "--repeats",
        "1",
        "--device",
        "cpu",
        "--hops" if method == "GAP" else "--depth",
        str(k),
    ]
    if epochs:
        sys.argv += ["--epochs", epochs]
    train.main()
    metrics = kept["metrics"]
    # its delta 'auto' (an explicit delta leaves `delta` unbound in its calibrate()):
    # 1 / 10 ** (digits of the number of directed edges), 1e-7 on Rutgers89
    delta = 1.0 / 10 ** len(str(kept["num_edges"]))
    return {
        "fit_test_s": float(metrics["duration"]),
        "ref_load_s": kept["load_s"],
        "ref_delta": delta,
        "ref_num_edges": kept["num_edges"],
        "test_acc": float(metrics["test/acc"]) / 100,
        "rss_mib": _max_rss_mib(),
    }


CHILDREN = {"reference": child_reference}
SPEED = HERE.with_name("speed.py")


def ours_command(method: str, school: str, epochs: str) -> list[str]:
    """``speed.py``'s school measurement (its ``--child school``) with the papers' model
    (``label_counts=False``) and, given ``epochs``, that many epochs of every phase."""
    kw: dict = {"label_counts": False}
    if epochs:
        e = int(epochs)
        kw.update(dict(encoder_epochs=e, classifier_epochs=e) if method == "GAP"
                  else dict(epochs_per_stage=e))  # fmt: skip
    return [sys.executable, str(SPEED), "--child", "school", method, school, json.dumps(kw)]


def spawn(command: list[str], marker: str, timeout: float) -> dict:
    """Run ``command`` (a fresh interpreter, one thread): the JSON of its last stdout line that
    starts with ``marker``, the whole process's wall and CPU time, the load average before and
    after."""
    env = dict(os.environ, OMP_NUM_THREADS="1", DPGNN_SPEED_THREADS="1",
               DPGNN_SPEED_ACCELERATOR="cpu")  # fmt: skip
    before, used = os.getloadavg(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(marker)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{command[1:5]} failed:\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-4000:]}")  # fmt: skip
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    return {
        **json.loads(lines[-1].removeprefix(MARK)),
        "process_s": wall,
        "process_cpu_s": cpu,
        "load_before": [round(v, 2) for v in before],
        "load_after": [round(v, 2) for v in os.getloadavg()],
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        out = CHILDREN[sys.argv[2]](*sys.argv[3:])
        print(MARK + json.dumps(out), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="paired runs per method (ABBA order)")
    p.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--school", default="Rutgers89")
    p.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="every epoch count of both sides (default: their defaults, 100)",
    )
    p.add_argument("--seed", type=int, default=0,
                   help="the reference's --seed of repeat 0 (repeat i: seed + i; ours: "
                        "speed.py's seed 0 and OS-entropy noise)")  # fmt: skip
    p.add_argument("--work", type=Path, default=None,
                   help="the reference's copy, stand-ins and processed data (default: "
                        "$TMPDIR/dpgnn-reference-speed)")  # fmt: skip
    p.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the untimed 1-epoch run of each side that builds the caches",
    )
    mirror = os.environ.get("DPGNN_REFERENCE_MIRROR")
    p.add_argument("--mirror", type=Path, default=Path(mirror) if mirror else None,
                   help="bare git mirror of github.com/sisaman/ProGAP (default: "
                        "$DPGNN_REFERENCE_MIRROR)")  # fmt: skip
    p.add_argument("--python", default=os.environ.get("DPGNN_REFERENCE_PYTHON") or sys.executable,
                   help="the reference's interpreter (default: $DPGNN_REFERENCE_PYTHON, else "
                        "this one)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    p.add_argument("--out", type=Path, default=None, help="results file (default: results/"
                   "reference_speed.jsonl; the table beside it)")  # fmt: skip
    p.add_argument(
        "--smoke",
        action="store_true",
        help="GAP, 1 repeat, 2 epochs, no warm-up (needs the mirror; give --out)",
    )
    args = p.parse_args()
    if args.smoke:
        args.methods, args.repeats, args.epochs, args.no_warmup = ["GAP"], 1, 2, True
    work = args.work or Path(tempfile.gettempdir()) / "dpgnn-reference-speed"
    ref = prepare(work, args.school, args.mirror, args.python)
    out = args.out or OUT
    epochs = "" if args.epochs is None else str(args.epochs)

    def run(side: str, method: str, e: str, seed: int) -> dict:
        if side == "ours":  # speed.py's child prints its JSON line as is
            return spawn(ours_command(method, args.school, e), "{", args.timeout)
        child = [ref["src"], ref["standins"], ref["data_dir"], method, args.school, e, str(seed)]
        return spawn([ref["python"], str(HERE), "--child", "reference", *child], MARK,
                     args.timeout)  # fmt: skip

    if not args.no_warmup:  # the processed caches of both sides, not timed
        for side in ("ours", "reference"):
            run(side, args.methods[0], "1", args.seed)
    invocation = time.strftime("%Y-%m-%d %H:%M:%S")

    def measure(side: str, method: str, repeat: int) -> dict:
        row = run(side, method, epochs, args.seed + repeat)
        print(f"  {method} {side}: {row['fit_test_s']:.2f} s fit+test, {row['process_s']:.2f} s "
              f"process, {row['rss_mib']:.0f} MiB, acc {100 * row['test_acc']:.1f}, load "
              f"{row['load_before'][0]}", flush=True)  # fmt: skip
        return {**row, "reference_commit": ref["commit"], "python": sys.version.split()[0],
                "time": time.strftime("%Y-%m-%d %H:%M:%S"), "reference_python": ref["python"]}

    # paired ABBA cells; the invocation in the key: every invocation measures afresh
    cells = (
        (dict(key=f"{invocation}|{repeat}|{method}|{side}", invocation=invocation, method=method,
              side=side, repeat=repeat, position=position, school=args.school,
              reference_seed=args.seed + repeat, epochs=args.epochs),
         partial(measure, side, method, repeat))
        for repeat in range(args.repeats) for method in args.methods
        for position, side in enumerate(("ours", "reference")[:: 1 if repeat % 2 == 0 else -1])
    )  # fmt: skip
    run_cells(cells, out, measured=False)
    import summarize  # the table beside the results file

    print(summarize.write("reference_speed", out))


if __name__ == "__main__":
    main()
