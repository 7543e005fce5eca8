"""Speed and scale targets (issue 18): every target measured, one JSON line per run.

Targets (medians over ``--repeats`` runs on a 2-core machine, one torch thread):

* ``import``: ``import lightning_dpgnn`` (< 2 s) and ``from lightning_dpgnn import GAP``
  (what a fit needs: Lightning and PyG), each in a fresh interpreter;
* ``school``: Facebook100 Rutgers89 (target ``year``, classes >= 1000 nodes, 75/10/15, edge
  epsilon 1, delta 1e-7, the directed unit: the protocol of ``reference_parity.py``):
  ProGAP K=3 fit + test in process (< 5 s) and whole process (< 9 s), GAP K=2 (< 2 s, < 5 s),
  peak RSS (< 600 MiB). Each run is a fresh ``python`` process (whole-process wall time from
  the parent); in-process times and ``ru_maxrss`` come back from the child;
* ``hop``: one private aggregation hop (row normalisation + CSR sum aggregation + Gaussian
  noise, :class:`~lightning_dpgnn.privacy.aggregation.GaussianAggregation`) on a graph's
  16-dimensional embeddings, against a bare ``torch.sparse.mm`` of the same CSR matrix, as
  achieved GB/s (bytes of the CSR matrix and the dense operands over the time);
  ``--hop-dataset facebook100/all`` for the FB-scale target (< 0.5 s), or
  ``random:694125:51779806`` (a random graph of that size: no 10 GB feature matrix to load);
* ``lpgnn``: the multi-bit collection of musae-facebook's 22,470 x 4,714 features (< 2 s)
  and one LPGNN fit at the ``lpgnn-facebook`` recipe's settings (< 30 s);
* ``fb``: on ``facebook100/all`` (694k nodes, 51.8M directed edges): the load of the processed
  graph (< 10 s, a second load: the first builds the cache), GAP-EDP K=2 (< 2 min),
  ProGAP-EDP K=3 (< 3 min) and GAP-NDP with D=100 (< 10 min) end to end, peak RSS of each
  (< 6 GB). GAP-NDP follows the FB-100 protocol of the ProGAP paper (degrees bounded to
  D=100 by randomized neighbour sampling, batch size 4096, 10 + 10 epochs, epsilon 8);
  the library refuses to sample edges inside a node-level fit (docs/privacy.md), so the
  benchmark bounds the degrees of its copy of the graph first, as the papers' code does.
  Heavy (~4 GB, minutes of both cores): only with ``--targets fb``;
* ``scale``: wall time and peak RSS of GAP K=2 and ProGAP K=3 against the number of edges,
  schools merged in growing sets (``--scale-sets``).

Each row records the load averages before the run (other jobs share the cores), the command
and the environment. ``--accelerator gpu`` runs the fits (``school``, ``fb``, ``scale``) and
the ``hop`` on one GPU (target names end in `` [gpu]``); ``benchmarks/gpu.sh`` is the one call
to make on a lent GPU machine. ``results/speed.md`` is rebuilt from ``results/speed.jsonl``
(the latest rows of each target) after every invocation (``summarize.py speed``; with
``scale``, also ``docs/img/performance_scale.png``).

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python benchmarks/speed.py --targets school
    # smoke (two interpreters, a random 2,000-node graph; into $DPGNN_BENCH_RESULTS):
    python benchmarks/speed.py --targets import hop --repeats 1 --hop-dataset random:2000:20000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, append, code_revision, command_line

OUT = RESULTS / "speed.jsonl"
HERE = Path(__file__).resolve()
TARGETS = ("import", "school", "hop", "lpgnn", "fb", "scale")
#: target name -> (limit, unit) of the issue
LIMITS = {
    "import lightning_dpgnn": (2.0, "s"),
    "ProGAP K=3 fit+test": (5.0, "s"),
    "ProGAP K=3 whole process": (9.0, "s"),
    "GAP K=2 fit+test": (2.0, "s"),
    "GAP K=2 whole process": (5.0, "s"),
    "ProGAP K=3 peak RSS": (600.0, "MiB"),
    "GAP K=2 peak RSS": (600.0, "MiB"),
    "hop facebook100/all": (0.5, "s"),
    "hop random:694125:51779806": (0.5, "s"),
    "LPGNN multi-bit collection": (2.0, "s"),
    "LPGNN fit": (30.0, "s"),
    "FB GAP-EDP K=2 end to end": (120.0, "s"),
    "FB ProGAP-EDP K=3 end to end": (180.0, "s"),
    "FB GAP-EDP K=2 peak RSS": (6144.0, "MiB"),
    "FB ProGAP-EDP K=3 peak RSS": (6144.0, "MiB"),
    "FB GAP-NDP D=100 end to end": (600.0, "s"),
    "FB GAP-NDP D=100 peak RSS": (6144.0, "MiB"),
    "FB load of the processed graph": (10.0, "s"),
    "FB ProGAP-EDP K=3 end to end [gpu]": (20.0, "s"),
}
#: where the fits and the hop run (``--accelerator``; children read it from the environment)
ACCELERATOR_ENV = "DPGNN_SPEED_ACCELERATOR"
#: the children's torch threads (``--threads``; read from the environment)
THREADS_ENV = "DPGNN_SPEED_THREADS"
#: FB-scale runs: benchmark name of each method
FB_NAMES = {"GAP": "FB GAP-EDP K=2", "ProGAP": "FB ProGAP-EDP K=3", "GAP-NDP": "FB GAP-NDP D=100"}
PRIVATE = dict(privacy="edge", epsilon=1.0, delta=1e-7, edge_unit="directed")


def environment() -> dict:
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "accelerator": accelerator(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def child(args: list[str], timeout: float = 1800) -> tuple[dict, float]:
    """Run ``speed.py --child ARGS`` in a fresh interpreter; its JSON result and wall time."""
    import resource

    env = dict(os.environ, OMP_NUM_THREADS=str(threads()))
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HERE), "--child", *args],
        capture_output=True, text=True, env=env, timeout=timeout,
    )  # fmt: skip
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"child {args} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    # the whole process's CPU time: on a loaded machine the steadier figure than its wall time
    return {**json.loads(lines[-1]), "process_cpu_s": round(cpu, 3)}, wall


def threads() -> int:
    """Torch threads of this run's children (``--threads``; 1 by default)."""
    return int(os.environ.get(THREADS_ENV, "1"))


def accelerator() -> str:
    """``"cpu"`` or ``"gpu"``: where this run's fits and hops run."""
    return os.environ.get(ACCELERATOR_ENV, "cpu")


def record(target: str, value: float, unit: str, runs: list[dict], **extra) -> None:
    if accelerator() != "cpu" and not target.startswith("import"):
        target = f"{target} [{accelerator()}]"
    if threads() != 1 and not target.startswith("import"):
        target = f"{target} [{threads()} threads]"
    limit = LIMITS.get(target, (None, unit))[0]
    row = {
        "target": target,
        "value": round(value, 3),
        "unit": unit,
        "limit": limit,
        "met": None if limit is None else value < limit,
        "runs": runs,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": command_line(),
        "revision": code_revision(),
        "environment": environment(),
        **extra,
    }
    append(OUT, row)
    verdict = "" if limit is None else (" (met)" if row["met"] else f" (target < {limit})")
    print(f"{target}: {value:.3f} {unit}{verdict}", flush=True)


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# -- children (run in a fresh interpreter) ---------------------------------------------------
def _quiet() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("lightning.fabric").setLevel(logging.ERROR)


def _max_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _make(method: str, seed: int = 0, **kw):
    from lightning_dpgnn import GAP, ProGAP

    if method == "GAP":
        return GAP(hops=2, seed=seed, **PRIVATE, **kw)
    return ProGAP(depth=3, seed=seed, **PRIVATE, **kw)


def _fit_test(model, dm, profile: str | None = None, **trainer_kwargs) -> dict:
    """Fit and test ``model`` on ``dm`` like ``reference_parity.py`` (no logger, checkpoint,
    progress bar or summary; ``trainer_kwargs``: other ``Trainer`` settings), timing the two
    calls."""
    import lightning as L

    trainer = L.Trainer(
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, profiler=profile, accelerator=accelerator(), devices=1,
        **trainer_kwargs,
    )  # fmt: skip
    start, cpu = time.perf_counter(), time.process_time()
    trainer.fit(model, dm)
    acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    return {
        "fit_test_s": time.perf_counter() - start,
        "fit_test_cpu_s": time.process_time() - cpu,
        "test_acc": float(acc),
        "epsilon": model.privacy_spent().epsilon,
    }


def child_import(what: str) -> dict:
    start = time.perf_counter()
    if what == "package":
        import lightning_dpgnn  # noqa: F401
    else:
        from lightning_dpgnn import GAP  # noqa: F401
    return {"import_s": time.perf_counter() - start, "rss_mib": _max_rss_mib()}


def child_school(method: str, school: str, model_kwargs: str = "{}") -> dict:
    """``model_kwargs``: a JSON object of keyword arguments of the model (``reference_speed.py``:
    the papers' model, fewer epochs)."""
    import torch

    torch.set_num_threads(threads())
    start = time.perf_counter()
    import lightning as L

    from lightning_dpgnn.data import NodeDataModule

    imported = time.perf_counter() - start
    _quiet()
    L.seed_everything(0, verbose=False)
    dm = NodeDataModule(f"facebook100/{school}", target="year", min_class_size=1000, seed=0)
    out = _fit_test(_make(method, **json.loads(model_kwargs)), dm)
    return {**out, "import_s": imported, "rss_mib": _max_rss_mib()}


def child_hop(dataset: str) -> dict:
    import torch

    torch.set_num_threads(threads())
    from lightning_dpgnn.data import NodeDataModule
    from lightning_dpgnn.privacy import PrivacyAccountant
    from lightning_dpgnn.privacy.aggregation import GaussianAggregation, in_adjacency

    start = time.perf_counter()
    if dataset.startswith("random:"):  # random:<nodes>:<edges>, e.g. the FB-scale sizes
        from torch_geometric.data import Data

        n, e = (int(v) for v in dataset.split(":")[1:])
        data = Data(edge_index=torch.randint(0, n, (2, e)), num_nodes=n)
    else:
        data = NodeDataModule(dataset, target="year").data
    loaded = time.perf_counter() - start
    device = torch.device("cuda" if accelerator() == "gpu" else "cpu")
    data = data.to(device)
    n, e = data.num_nodes, data.num_edges
    x = torch.randn(n, 16, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    mech = GaussianAggregation(1.0, level="edge", name="hop", edge_unit="directed")
    acc = PrivacyAccountant("edge", 1e-7)
    t = time.perf_counter()
    mech(x, data.edge_index, n, acc, None)  # the first hop also builds the CSR in-adjacency
    sync()
    first = time.perf_counter() - t
    times = []
    for _ in range(3):
        t = time.perf_counter()
        mech(x, data.edge_index, n, acc, None)
        sync()
        times.append(time.perf_counter() - t)
    adj = in_adjacency(data.edge_index, n, x.dtype)  # the matrix the mechanism multiplies by
    bare = []
    for _ in range(3):
        t = time.perf_counter()
        torch.sparse.mm(adj, x)
        sync()
        bare.append(time.perf_counter() - t)
    index_bytes = adj.crow_indices().element_size()
    nbytes = e * (index_bytes + 4) + (n + 1) * index_bytes + 2 * n * 16 * 4
    hop, spmm = median(times), median(bare)
    return {
        "num_nodes": n, "num_edges": e, "load_s": loaded, "first_hop_s": first, "hop_s": hop,
        "spmm_s": spmm,
        "hop_gbs": nbytes / hop / 1e9, "spmm_gbs": nbytes / spmm / 1e9,
        "rss_mib": _max_rss_mib(),
    }  # fmt: skip


def child_lpgnn(what: str) -> dict:
    import torch

    torch.set_num_threads(threads())
    _quiet()
    if what == "collect":
        from lightning_dpgnn.data import NodeDataModule
        from lightning_dpgnn.privacy import LocalCollector, PrivacyAccountant
        from lightning_dpgnn.privacy.mechanism import run

        dm = NodeDataModule("musae-facebook", split="lpgnn", classes=[0, 1, 2, 3],
                            feature_range=(0.0, 1.0), feature_bounds=(0.0, 1.0))
        data = dm.data
        collector = LocalCollector(x_epsilon=1.0, y_epsilon=1.0, mechanism="multibit")
        times = []
        for _ in range(3):
            t = time.perf_counter()
            run(collector.steps(data, num_classes=4), PrivacyAccountant("ldp"))
            times.append(time.perf_counter() - t)
        return {"collect_s": median(times), "shape": list(data.x.shape), "rss_mib": _max_rss_mib()}
    import lightning as L

    from lightning_dpgnn.cli import DPGNNCLI

    recipe = HERE.parents[1] / "zoo" / "recipes" / "lpgnn-facebook.yaml"
    cli = DPGNNCLI(
        L.LightningModule, L.LightningDataModule, subclass_mode_model=True,
        subclass_mode_data=True, seed_everything_default=0, save_config_callback=None,
        args=["--config", str(recipe), "--trainer.logger", "false",
              "--trainer.enable_checkpointing", "false", "--trainer.enable_progress_bar",
              "false"],
        run=False, auto_configure_optimizers=False,
    )  # the recipe's own settings, as `dpgnn fit --config` reads them
    start = time.perf_counter()
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return {"fit_s": time.perf_counter() - start, "epochs": cli.trainer.current_epoch,
            "rss_mib": _max_rss_mib()}


def child_fb_load(dataset: str) -> dict:
    """``load_dataset`` of the processed graph (a cache hit once built), nothing else."""
    import torch

    torch.set_num_threads(threads())
    from lightning_dpgnn.data import load_dataset

    start = time.perf_counter()
    data = load_dataset(dataset, target="year")
    return {"load_s": time.perf_counter() - start, "num_nodes": int(data.num_nodes),
            "num_edges": int(data.num_edges), "num_features": int(data.num_features),
            "feature_layout": str(data.x.layout), "rss_mib": _max_rss_mib()}


def _bound_degrees(data, max_degree: int):
    """Every in- and out-degree <= ``max_degree`` by randomized neighbour sampling (in-edges,
    then out-edges): the papers' degree bound for node-level runs, made before the fit."""
    from lightning_dpgnn.data.transforms import BoundDegree

    bound = BoundDegree(max_degree, seed=0)
    data = bound(data)
    data.edge_index = data.edge_index.flip(0)
    data = bound(data)
    data.edge_index = data.edge_index.flip(0)
    return data


def _fb_ndp(dataset: str, max_degree: int = 100):
    """GAP-NDP's datamodule and model on FB-scale: the classes the edge-level runs keep,
    declared (node level refuses a data-derived class filter), degrees bounded to D."""
    import torch

    from lightning_dpgnn import GAP
    from lightning_dpgnn.data import NodeDataModule, load_dataset
    from lightning_dpgnn.data.registry import get_spec
    from lightning_dpgnn.data.transforms import FilterClassByCount

    data = load_dataset(dataset, target="year")
    counts = torch.bincount(data.y)
    keep = counts >= FilterClassByCount(get_spec(dataset).default_min_class_size).threshold(
        int(counts.sum())
    )
    classes = [int(v) for v in data.label_values[keep]]
    data = _bound_degrees(data, max_degree)
    # a timing, not a release: the merged reader has no public code book, so its one-hot
    # layout is data-derived, which a node-level fit of `facebook100/all` refuses; the copy is
    # named apart so that the run measures the cost (its epsilon does not cover the layout)
    dm = NodeDataModule.from_data(data, name="fb-ndp-timing", classes=classes,
                                  remove_isolated=False, seed=0)
    model = GAP(privacy="node", epsilon=8.0, delta=1e-7, hops=2, max_degree=max_degree,
                encoder_epochs=10, classifier_epochs=10, batch_size=4096, max_grad_norm=1.0,
                seed=0)
    return dm, model


def child_fb(
    method: str, dataset: str, profile: str = "", model_kwargs: str = "{}",
    trainer_kwargs: str = "{}",
) -> dict:  # fmt: skip
    import torch

    torch.set_num_threads(threads())
    start = time.perf_counter()
    import lightning as L

    from lightning_dpgnn.data import NodeDataModule

    _quiet()
    L.seed_everything(0, verbose=False)
    t = time.perf_counter()
    if method == "GAP-NDP":
        dm, model = _fb_ndp(dataset)
    else:
        dm = NodeDataModule(dataset, target="year")
        model = _make(method, **json.loads(model_kwargs))
    dm.setup()
    loaded = time.perf_counter() - t
    if profile == "cprofile":  # the functions that take the time of fit + test
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        out = prof.runcall(_fit_test, model, dm, **json.loads(trainer_kwargs))
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        out["profile"] = text.getvalue().splitlines()
    else:
        out = _fit_test(model, dm, profile or None, **json.loads(trainer_kwargs))
    return {**out, "load_s": loaded, "wall_s": time.perf_counter() - start,
            "num_edges": dm.data.num_edges, "num_nodes": dm.data.num_nodes,
            "rss_mib": _max_rss_mib()}


def child_scale(method: str, schools: str) -> dict:
    """Fit + test on the listed schools merged into one graph (a temporary folder of links)."""
    import torch

    torch.set_num_threads(threads())
    import lightning as L

    from lightning_dpgnn.data import NodeDataModule
    from lightning_dpgnn.data.paths import resolve_root
    from lightning_dpgnn.data.readers import read_facebook100_merged

    _quiet()
    start = time.perf_counter()
    root = resolve_root(None) / "facebook100"
    with tempfile.TemporaryDirectory() as tmp:
        for s in schools.split(","):
            (Path(tmp) / f"{s}.mat").symlink_to(root / f"{s}.mat")
        graph = read_facebook100_merged(Path(tmp), None, "year")
    # the class filter of facebook100/all (classes with >= 1% of the nodes)
    dm = NodeDataModule.from_data(graph, name=f"fb-{len(schools.split(','))}",
                                  min_class_size=0.01)
    L.seed_everything(0, verbose=False)
    out = _fit_test(_make(method), dm)
    return {**out, "wall_s": time.perf_counter() - start, "num_edges": int(dm.data.num_edges),
            "num_nodes": int(dm.data.num_nodes), "features": str(graph.x.layout),
            "rss_mib": _max_rss_mib()}


CHILDREN = {
    "import": child_import, "school": child_school, "hop": child_hop, "lpgnn": child_lpgnn,
    "fb": child_fb, "fb_load": child_fb_load, "scale": child_scale,
}  # fmt: skip


# -- targets ------------------------------------------------------------------------------
def run_import(args) -> None:
    names = (("package", "import lightning_dpgnn"), ("gap", "from lightning_dpgnn import GAP"))
    for what, name in names:
        runs = []
        for _ in range(args.repeats):
            before = load()
            out, wall = child(["import", what])
            runs.append({**out, "process_s": wall, "load": before})
        record(name, median([r["import_s"] for r in runs]), "s", runs)


#: the school-scale runs: name -> (method, model keyword arguments)
SCHOOL_RUNS = {"ProGAP": ("ProGAP", {}), "GAP": ("GAP", {}),
               "ProGAP-LW": ("ProGAP", {"training": "layerwise"})}
SCHOOL_NAMES = {"ProGAP": "ProGAP K=3", "GAP": "GAP K=2", "ProGAP-LW": "ProGAP K=3 layerwise"}


def run_school(args) -> None:
    runs: dict[str, list[dict]] = {name: [] for name in args.school_runs}
    for _ in range(args.repeats):
        for name in runs:  # interleaved, so all see the same load
            method, kwargs = SCHOOL_RUNS[name]
            before = load()
            out, wall = child(["school", method, args.school, json.dumps(kwargs)])
            runs[name].append({**out, "process_s": wall, "load": before})
            print(f"  {name}: {out['fit_test_s']:.2f} s fit+test, {wall:.2f} s process, "
                  f"{out['rss_mib']:.0f} MiB, load {before}", flush=True)
    for method, rs in runs.items():
        name = SCHOOL_NAMES[method]
        extra = {"school": args.school}
        record(f"{name} fit+test", median([r["fit_test_s"] for r in rs]), "s", rs, **extra)
        record(f"{name} fit+test CPU", median([r["fit_test_cpu_s"] for r in rs]), "s", rs,
               **extra)
        record(f"{name} whole process", median([r["process_s"] for r in rs]), "s", rs, **extra)
        record(f"{name} peak RSS", median([r["rss_mib"] for r in rs]), "MiB", rs, **extra)


def run_hop(args) -> None:
    before = load()
    out, _ = child(["hop", args.hop_dataset])
    record(f"hop {args.hop_dataset}", out["hop_s"], "s", [{**out, "load": before}])


def run_lpgnn(args) -> None:
    if "collect" in args.lpgnn_parts:
        before = load()
        out, _ = child(["lpgnn", "collect"])
        record("LPGNN multi-bit collection", out["collect_s"], "s", [{**out, "load": before}])
    if "fit" not in args.lpgnn_parts:
        return
    before = load()
    try:
        out, _ = child(["lpgnn", "fit"], timeout=args.lpgnn_timeout)
    except subprocess.TimeoutExpired:  # not finished: the limit is a lower bound
        record("LPGNN fit", float(args.lpgnn_timeout), "s",
               [{"finished": False, "timeout_s": args.lpgnn_timeout, "load": before}])
        return
    record("LPGNN fit", out["fit_s"], "s", [{**out, "load": before}])


def run_fb(args) -> None:
    child(["fb_load", args.fb_dataset], timeout=3600)  # builds the processed cache if missing
    runs = []
    for _ in range(args.repeats):
        before = load()
        out, _ = child(["fb_load", args.fb_dataset])
        runs.append({**out, "load": before})
    record("FB load of the processed graph", median([r["load_s"] for r in runs]), "s", runs)
    for method in args.fb_methods:
        name, runs = FB_NAMES[method], []
        for _ in range(args.fb_repeats):
            before = load()
            out, wall = child(["fb", method, args.fb_dataset, args.fb_profile, args.fb_model,
                               args.fb_trainer], timeout=3600)
            runs.append({**out, "process_s": wall, "load": before})
            print(f"  {name}: {wall:.1f} s, {out['rss_mib']:.0f} MiB, load {before}", flush=True)
        if args.fb_model != "{}":  # another model than the default: named by its settings
            name = f"{name} {args.fb_model}"
        if args.fb_trainer != "{}":
            name = f"{name} Trainer {args.fb_trainer}"
        record(f"{name} end to end", median([r["process_s"] for r in runs]), "s", runs)
        record(f"{name} peak RSS", median([r["rss_mib"] for r in runs]), "MiB", runs)


def run_scale(args) -> None:
    from lightning_dpgnn.data.paths import resolve_root

    schools = sorted(p.stem for p in (resolve_root(None) / "facebook100").glob("*.mat"))
    for size in args.scale_sets:
        chosen = ",".join(schools[:size])
        for method in ("GAP", "ProGAP"):
            before = load()
            out, wall = child(["scale", method, chosen], timeout=3600)
            record(f"scale {method} {size} schools", wall, "s",
                   [{**out, "process_s": wall, "load": before, "schools": size}])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(CHILDREN[sys.argv[2]](*sys.argv[3:])), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--targets", nargs="*", default=["import", "school", "hop", "lpgnn"],
                   choices=TARGETS)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--school", default="Rutgers89")
    p.add_argument("--school-runs", nargs="+", default=["ProGAP", "GAP"], choices=SCHOOL_RUNS,
                   help="school-scale fits, interleaved (ProGAP-LW: training='layerwise')")
    p.add_argument("--hop-dataset", default="facebook100/Rutgers89")
    p.add_argument("--fb-dataset", default="facebook100/all")
    p.add_argument("--fb-methods", nargs="*", default=list(FB_NAMES), choices=list(FB_NAMES))
    p.add_argument("--fb-repeats", type=int, default=1, help="runs of each FB-scale fit")
    p.add_argument("--fb-model", default="{}",
                   help='JSON keyword arguments of the FB-scale models (target names carry '
                        'them), e.g. \'{"train_batch_size": 8192, "epochs": 25}\'')
    p.add_argument("--fb-trainer", default="{}",
                   help='JSON keyword arguments of the FB-scale Trainer (target names carry '
                        'them), e.g. \'{"check_val_every_n_epoch": 10}\'')
    p.add_argument("--fb-profile", default="", choices=["", "cprofile", "simple"],
                   help="profile fit + test of the FB-scale runs (cProfile: top functions "
                        "stored in the row; 'simple': Lightning's SimpleProfiler)")
    p.add_argument("--lpgnn-parts", nargs="*", default=["collect", "fit"],
                   choices=["collect", "fit"])
    p.add_argument("--lpgnn-timeout", type=float, default=1800,
                   help="seconds after which the LPGNN fit is stopped and recorded unfinished")
    p.add_argument("--scale-sets", nargs="*", type=int, default=[1, 4, 16, 50])
    p.add_argument("--accelerator", default="cpu", choices=["cpu", "gpu"],
                   help="where the fits and the hop run (gpu: one device; names end in [gpu])")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads of each run (names end in [N threads] when not 1)")
    args = p.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ[ACCELERATOR_ENV] = args.accelerator
    os.environ[THREADS_ENV] = str(args.threads)
    runners = {"import": run_import, "school": run_school, "hop": run_hop, "lpgnn": run_lpgnn,
               "fb": run_fb, "scale": run_scale}
    for target in args.targets:
        runners[target](args)
    import summarize  # results/speed.md (= summarize.py speed)

    summarize.write("speed", OUT, plot="scale" in args.targets)


if __name__ == "__main__":
    main()
