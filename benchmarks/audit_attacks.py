"""Attacks against trained models: node membership inference (TSTF, thesis Table 4.3 analogue)
and link stealing (posterior similarity), AUC with 95% bootstrap CIs over seeds.

Each row fits a target model on the dataset (the benchmark's own preprocessing, as in
``gap_accuracy.py``) and attacks it: ``mia`` fits one shadow model of the target's class and
hyper-parameters per seed (:func:`lightning_dpgnn.attacks.node_membership_inference`, one
repeat; the CI is over seeds, each with its own target, shadow split and attack model);
``link`` scores 2000 edges against 2000 non-edges by the similarity of the endpoints'
posteriors. One JSON line per (attack, dataset, method, epsilon, seed) is appended to
``results/audit_attacks.jsonl`` (re-running skips what is done); ``--summarize`` writes
``results/audit_attacks.md``.

Methods are ``NAME`` of :data:`METHODS` or ``Class:level`` with any class exported by
``lightning_dpgnn`` (``level`` in ``node``/``edge``), e.g. ``DPGNN:node`` once the baselines
land; its keyword arguments come from :data:`SETTINGS` (by class name) or ``--model-args``.
Epsilon ``inf`` fits the non-private counterpart (``privacy="none"``; DP-MLP -> MLP).

    # Table 4.3 analogue (MIA, node level):
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack mia \\
        --methods GAP-NDP ProGAP-NDP DP-MLP --epsilons 1 2 4 8 16 inf --seeds 10
    # link stealing, edge level vs the non-private GNN:
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack link \\
        --methods GAP-EDP ProGAP-EDP --epsilons 0.5 1 4 --seeds 10
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack link \\
        --methods SAGE-inf MLP-inf --epsilons inf --seeds 10
    # musae-facebook (hours): each (method, eps) cell's seeds in a row, resumable
    DPGNN_DATA=../shared/datasets python benchmarks/audit_attacks.py --attack mia \
        --datasets musae-facebook --methods GAP-NDP DP-MLP ProGAP-NDP DPGNN \
        --epsilons 1 inf 2 4 8 16 --seeds 10 --order cells
    python benchmarks/audit_attacks.py --summarize   # cells under --min-seeds (10): "running"
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import time
from collections import defaultdict
from pathlib import Path

from baselines_accuracy import DPGNN as BASE_DPGNN
from baselines_accuracy import SAGE as BASE_SAGE
from common import (
    RESULTS,
    append,
    bootstrap_ci,
    code_revision,
    command_line,
    done_keys,
    load_rows,
    quiet,
    splice,
)
from gap_accuracy import COMMON as GAP_COMMON
from gap_accuracy import DATASETS as GAP_DATASETS
from gap_accuracy import EDGE as GAP_EDGE
from gap_accuracy import NODE as GAP_NODE
from progap_accuracy import COMMON as PROGAP_COMMON
from progap_accuracy import EDGE as PROGAP_EDGE
from progap_accuracy import NODE as PROGAP_NODE

OUT = RESULTS / "audit_attacks.jsonl"
DOCS = Path(__file__).resolve().parents[1] / "docs"
DATASETS = {
    **GAP_DATASETS,
    # small schools for reduced grids (the same protocol as the GAP benchmark's schools)
    "facebook100/Swarthmore42": GAP_DATASETS["facebook100/Rutgers89"],
    "facebook100/Caltech36": GAP_DATASETS["facebook100/Rutgers89"],
}
#: named methods: (class exported by lightning_dpgnn, privacy level); ``*-inf`` is non-private
METHODS = {
    "GAP-NDP": ("GAP", "node"),
    "ProGAP-NDP": ("ProGAP", "node"),
    "DP-MLP": ("DPMLP", "node"),
    "GAP-EDP": ("GAP", "edge"),
    "ProGAP-EDP": ("ProGAP", "edge"),
    "SAGE-inf": ("SAGE", "none"),
    "EdgeRand": ("EdgeRand", "edge"),
    "DPGNN": ("DPGNN", "node"),
    # reads no edges: the link-stealing AUC that features and homophily alone give
    "MLP-inf": ("MLP", "none"),
}
#: keyword arguments per class and level (the accuracy benchmarks' settings)
SETTINGS = {
    ("GAP", "node"): {**GAP_COMMON, **GAP_NODE},
    ("GAP", "edge"): {**GAP_COMMON, **GAP_EDGE, "edge_unit": "directed"},
    ("GAP", "none"): {**GAP_COMMON, **GAP_EDGE},
    ("ProGAP", "node"): {**PROGAP_COMMON, **PROGAP_NODE},
    ("ProGAP", "edge"): {**PROGAP_COMMON, **PROGAP_EDGE, "edge_unit": "directed"},
    ("ProGAP", "none"): {**PROGAP_COMMON, **PROGAP_EDGE},
    ("DPMLP", "node"): dict(hidden=16, layers=3, lr=0.01, epochs=10, batch_size=256),
    ("MLP", "none"): dict(hidden=16, layers=3, lr=0.01),
    # the baselines benchmark's settings (GraphSAGE with sum aggregation, pre/post MLPs, JK)
    ("SAGE", "none"): dict(BASE_SAGE),
    ("EdgeRand", "edge"): {**BASE_SAGE, "edge_unit": "directed"},  # as GAP/ProGAP-EDP here
    ("DPGNN", "node"): dict(BASE_DPGNN),
}
#: the non-private counterpart of a class that has no ``privacy="none"``
NONPRIVATE = {"DPMLP": "MLP", "DPGNN": "SAGE", "EdgeRand": "SAGE"}


def resolve(method: str) -> tuple[str, str]:
    """``(class name, level)`` of a named method or a ``Class:level`` spec."""
    if method in METHODS:
        return METHODS[method]
    cls, _, level = method.partition(":")
    return cls, level or "node"


def build(method: str, eps: float, seed: int, max_degree: int, extra: dict):
    """The model of ``method`` at ``eps`` (``inf``: non-private), resolved by class name."""
    import lightning_dpgnn

    cls_name, level = resolve(method)
    if math.isinf(eps) or level == "none":
        cls_name, level = NONPRIVATE.get(cls_name, cls_name), "none"
    cls = getattr(lightning_dpgnn, cls_name)
    params = inspect.signature(cls.__init__).parameters
    # a class that forwards ``**kwargs`` to its base (GAP, SAGE, ...) takes every setting
    forwards = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {**SETTINGS.get((cls_name, level), {}), **extra}
    if level != "none":
        kwargs["epsilon"] = eps
    if "privacy" in params:
        kwargs["privacy"] = level
    from lightning_dpgnn.methods.ap import AggregationPerturbationModule

    takes_degree = "max_degree" in params or issubclass(cls, AggregationPerturbationModule)
    if level == "node" and takes_degree:
        kwargs["max_degree"] = max_degree
    if forwards or "seed" in params:
        kwargs["seed"] = seed
    return cls(**{k: v for k, v in kwargs.items() if forwards or k in params})


def shadow_builder(target, method: str, eps: float, seed: int, max_degree: int, extra: dict):
    """The shadow of ``target``: the same class and settings, at the target's noise multiplier
    when it is private. The calibration is a deterministic function of the plan, which the
    shadow shares (class, hyper-parameters, the split's sizes), so it would find the same
    multiplier; passing it skips the search (most of a private fit's time: ~140 s of a 145 s
    GAP-NDP fit at epsilon 1 on Swarthmore42), and the shadow still checks it against epsilon."""
    z = getattr(target, "noise_multiplier", None)
    settings = extra if z is None or math.isinf(eps) else {**extra, "noise_multiplier": z}
    # the shadow's data module declares no classes: the target's shapes are public metadata
    shapes = {k: target.hparams[k] for k in ("num_features", "num_classes") if k in target.hparams}
    return lambda: build(method, eps, seed, max_degree, {**settings, **shapes})


def _max_degree(data) -> int:
    """D for node level: the graph's largest in/out degree (a benchmark convenience, as in
    ``gap_accuracy.py``; a deployment uses a public bound)."""
    from lightning_dpgnn.privacy.aggregation import degrees

    d_in, d_out = degrees(data.edge_index, data.num_nodes)
    return int(max(d_in.max(), d_out.max()))


def run(args) -> None:
    quiet()
    import torch
    from common import quiet_trainer

    from lightning_dpgnn.attacks import link_stealing, node_membership_inference
    from lightning_dpgnn.data import NodeDataModule

    torch.set_num_threads(args.threads)
    done = done_keys(args.out)
    extra = json.loads(args.model_args)
    revision = code_revision()
    data_modules: dict[tuple[str, int], tuple] = {}

    def data_module(name: str, seed: int) -> tuple:
        """``(data module, D)`` of ``name`` and ``seed``; the last one is kept (runs reuse it
        while the dataset and seed repeat)."""
        if (name, seed) not in data_modules:
            data_modules.clear()
            dm = NodeDataModule(name, seed=seed, **DATASETS[name])
            data_modules[name, seed] = dm, _max_degree(dm.data)
        return data_modules[name, seed]

    for name, method, eps, seed in run_order(args):
        if resolve(method)[1] == "none" and not math.isinf(eps):
            continue  # a non-private method has one column: inf
        key = f"{args.attack}|{name}|{method}|{eps}|{seed}"
        if key in done:
            continue
        t0 = time.time()
        dm, d = data_module(name, seed)
        data = dm.data
        model = build(method, eps, seed, d, extra)
        trainer = quiet_trainer(max_epochs=100)
        trainer.fit(model, dm)
        if args.attack == "mia":
            res = node_membership_inference(
                model, data, repeats=1, seed=seed, trainer_kwargs={"max_epochs": 100},
                shadow=shadow_builder(model, method, eps, seed, d, extra),
            )  # fmt: skip
        else:
            res = link_stealing(model, data, repeats=1, seed=seed)
        report = model.privacy_spent()
        row = dict(
            key=key, attack=args.attack, dataset=name, method=method,
            target_epsilon=eps, seed=seed, auc=res.aucs[0], level=report.level,
            epsilon=None if math.isinf(report.epsilon) else report.epsilon,
            delta=report.delta, noise_multiplier=getattr(model, "noise_multiplier", None),
            seconds=time.time() - t0, revision=revision, command=command_line(),
        )  # fmt: skip
        append(args.out, row)
        print(f"{key}: AUC {row['auc']:.3f} ({row['seconds']:.0f}s)", flush=True)


def run_order(args) -> list[tuple[str, str, float, int]]:
    """``(dataset, method, epsilon, seed)`` in run order: ``seeds`` (every cell gains a seed
    at a time; one data module per seed and dataset) or ``cells`` (each (method, epsilon)
    cell's seeds in a row, so an interrupted run leaves complete cells)."""
    seeds = range(args.seeds)
    if args.order == "cells":
        return [(n, m, e, s) for n in args.datasets for m in args.methods for e in args.epsilons
                for s in seeds]  # fmt: skip
    return [(n, m, e, s) for s in seeds for n in args.datasets for m in args.methods
            for e in args.epsilons]  # fmt: skip


#: what a method's ``inf`` column fits (its non-private counterpart), for the table's notes
def _inf_model(method: str) -> str:
    cls, level = resolve(method)
    return NONPRIVATE.get(cls, cls) if level != "none" else cls


def _verdict(cells: dict[float, tuple[float, float, float]]) -> str:
    """The papers' finding, checked on one row: private cells whose CI covers 0.5, and
    whether the non-private cell's CI is above 0.5."""
    private = [c for e, c in cells.items() if not math.isinf(e)]
    at_chance = sum(lo <= 0.5 <= hi for _, lo, hi in private)
    parts = [f"{at_chance}/{len(private)} private at chance"] if private else []
    if math.inf in cells:
        above = cells[math.inf][1] > 0.5
        parts.append("non-private above chance" if above else "non-private not above chance")
    return "; ".join(parts)


def tables(rows: list[dict], min_seeds: int = 1) -> str:
    """The markdown tables of ``rows`` (one per attack), with the papers' finding per row; a
    cell with fewer than ``min_seeds`` seeds (a run still going) shows only its count."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        groups[(r["attack"], r["dataset"], r["method"], r["target_epsilon"])].append(r["auc"])
    lines: list[str] = []
    for attack, title in (("mia", "Node membership inference (TSTF)"),
                          ("link", "Link stealing (posterior similarity)")):  # fmt: skip
        keys = sorted({k[1:3] for k in groups if k[0] == attack})
        if not keys:
            continue
        epss = sorted({k[3] for k in groups if k[0] == attack})
        check = attack == "mia"
        lines += ["", f"#### {title}", "",
                  "| dataset | method | " + " | ".join(f"eps={e:g}" for e in epss)
                  + (" | finding |" if check else " |"),
                  "|---|---|" + "---|" * (len(epss) + check)]  # fmt: skip
        for ds, method in keys:
            cells, stats = [], {}
            for e in epss:
                v = groups.get((attack, ds, method, e))
                if not v:
                    cells.append("—")
                    continue
                if len(v) < min_seeds:
                    cells.append(f"running (n={len(v)})")
                    continue
                stats[e] = bootstrap_ci(v)
                mean, lo, hi = stats[e]
                cells.append(f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] (n={len(v)})")
            verdict = [_verdict(stats)] if check else []
            lines.append(f"| {ds} | {method} | " + " | ".join(cells + verdict) + " |")
        counterparts = sorted(
            {f"{m}: {_inf_model(m)}" for d, m in keys
             if (attack, d, m, math.inf) in groups and _inf_model(m) != resolve(m)[0]}
        )  # fmt: skip
        if counterparts:
            lines += ["", "eps=inf fits the non-private counterpart (" + "; ".join(counterparts)
                      + ")."]  # fmt: skip
    return "\n".join(lines).strip("\n")


def summarize(path: Path, out: Path, min_seeds: int) -> None:
    rows = load_rows(path)
    commands = sorted({r["command"] for r in rows})
    md = tables(rows, min_seeds)
    lines = [
        "# Attacks against trained models",
        "",
        "AUC of the attack in % (50: chance), mean and 95% bootstrap CI over seeds (each seed: "
        "its own split, target fit, shadow fit and attack model); n: seeds. *finding*: how "
        "many private cells have a CI that covers 50, and whether the non-private cell's CI "
        "is above 50 (the papers: about 50 for private models, clearly above non-privately). "
        "Commands:",
        "",
        *[f"- `{c}`" for c in commands],
        "",
        md,
    ]
    out.write_text("\n".join(lines) + "\n")
    splice(
        DOCS / "audits.md",
        "<!-- ATTACKS:BEGIN -->",
        "<!-- ATTACKS:END -->",
        f"Generated by `python benchmarks/audit_attacks.py --summarize` from "
        f"`benchmarks/results/{path.name}` (commands in `results/{out.name}`).\n\n{md}",
    )
    print(out.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--attack", choices=["mia", "link"], default="mia")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=["facebook100/Swarthmore42", "musae-facebook"])
    p.add_argument("--methods", nargs="*", default=["GAP-NDP", "ProGAP-NDP", "DP-MLP"])
    p.add_argument("--epsilons", nargs="*", type=float, default=[1, 2, 4, 8, 16, math.inf])
    p.add_argument("--model-args", default="{}", help="JSON keyword arguments for every model")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument(
        "--order",
        choices=["seeds", "cells"],
        default="seeds",
        help="seeds: all cells one seed at a time; cells: one cell's seeds in a row",
    )
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true", help="write results/audit_attacks.md")
    p.add_argument(
        "--min-seeds",
        type=int,
        default=10,
        help="--summarize: cells with fewer seeds show only their count",
    )
    args = p.parse_args()
    if args.summarize:
        summarize(args.out, RESULTS / "audit_attacks.md", args.min_seeds)
    else:
        run(args)


if __name__ == "__main__":
    main()
