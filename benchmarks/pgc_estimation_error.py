"""PGC estimation error (thesis Figs. 2.2-2.3): mean absolute error of the first-layer graph
convolution estimated from LDP features, vs epsilon and vs node degree.

For every node ``MAE(v) = 1/d sum_i |GC(v)_i - GC^(v)_i|`` (eq. 2.15), where ``GC`` is the GCN
convolution of the raw features (eq. 2.1) and ``GC^`` the same convolution of the server's
unbiased estimates (eq. 2.4) from the 1-bit mechanism (PGC), Laplace (LM) or Piecewise (PM),
each feature with budget eps, features scaled to [0, 1] from the public bounds (0, 1) (0/1
features; protocol ``common.PROTOCOL``). Fig. 2.2: eps in {1, 3, 5, 7, 9},
MAE averaged over all nodes. Fig. 2.3: eps = 1, MAE averaged per degree for degrees up to the
99% quantile. One cell of ``common.run_cells`` per (dataset, mechanism, epsilon, seed) and per
(dataset, mechanism, seed) for the degrees (rows in ``results/pgc_estimation_error.jsonl``; a
re-run skips the cells it has); the means over seeds go to ``results/pgc_estimation_error.json``
and two plots; ``summarize.py pgc`` puts the table into docs/pgc.md.

    DPGNN_DATA=../shared/datasets python benchmarks/pgc_estimation_error.py --seeds 10
    # smoke: python benchmarks/pgc_estimation_error.py --seeds 1 --datasets cora --out /tmp/e.json
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

from common import (
    PROTOCOL,
    RESULTS,
    code_revision,
    command_line,
    cpu_info,
    load_rows,
    quiet,
    run_cells,
)

DATASETS = ["cora", "citeseer", "musae-twitch-en", "musae-facebook"]
EPSILONS = [1.0, 3.0, 5.0, 7.0, 9.0]
MECHANISMS = {"LM": "laplace", "PM": "piecewise", "PGC": "onebit"}


def node_errors(data, mechanism: str, eps: float, seed: int):
    """``MAE(v)`` for every node (eq. 2.15) and the true convolution's degree per node."""
    import torch

    from lightning_dpgnn.methods.pgc import graph_convolution
    from lightning_dpgnn.privacy.local import FEATURE_MECHANISMS

    mech = FEATURE_MECHANISMS[mechanism](eps, 0.0, 1.0, per_coordinate=True)
    truth = graph_convolution(data.x.float(), data.edge_index)
    sent = mech.sample(data.x.float(), torch.Generator().manual_seed(seed))
    estimate = mech.estimate(sent).float()
    return (graph_convolution(estimate, data.edge_index) - truth).abs().mean(dim=1)


def mean_error(data, mechanism: str, eps: float, seed: int) -> dict:
    """A cell of Fig. 2.2: the MAE averaged over all nodes."""
    return {"mae": float(node_errors(data, mechanism, eps, seed).mean())}


def cells(args):
    """One cell per (dataset, mechanism, epsilon, seed): the MAE over all nodes (Fig. 2.2);
    and per (dataset, mechanism, seed) at epsilon 1, the MAE per degree up to the 99%
    quantile (Fig. 2.3)."""
    import torch

    from lightning_dpgnn.data import NodeDataModule

    def per_degree(data, mech: str, seed: int) -> dict:
        deg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
        errors = node_errors(data, mech, 1.0, seed)
        ks = [k for k in range(1, int(torch.quantile(deg.float(), 0.99)) + 1)
              if bool((deg == k).any())]  # fmt: skip
        return {"degrees": ks, "mae": [float(errors[deg == k].mean()) for k in ks],
                "nodes": [int((deg == k).sum()) for k in ks]}  # fmt: skip

    for name in args.datasets:
        data = NodeDataModule(
            name, seed=0, feature_range=(0.0, 1.0), feature_bounds=(0.0, 1.0), split="lpgnn"
        ).data
        for label, mech in MECHANISMS.items():
            for seed in range(args.seeds):
                for eps in args.epsilons:
                    meta = dict(key=f"{name}|{label}|{eps}|{seed}", dataset=name, method=label,
                                epsilon=eps, seed=seed, protocol=PROTOCOL)  # fmt: skip
                    yield meta, partial(mean_error, data, mech, eps, seed)
                meta = dict(key=f"{name}|{label}|degree|{seed}", dataset=name, method=label,
                            epsilon=1.0, seed=seed, protocol=PROTOCOL, by="degree")  # fmt: skip
                yield meta, partial(per_degree, data, mech, seed)


def figures(rows: list[dict], args) -> dict:
    """The figures' JSON (``summarize.py pgc`` reads it) from the cells' rows: the MAE mean
    over seeds per (dataset, mechanism, epsilon), and per degree (eps = 1)."""
    rows = [r for r in rows if r["dataset"] in args.datasets and r["seed"] < args.seeds]
    result = {"command": command_line(), "revision": code_revision(), "hardware": cpu_info(),
              "unit": "ldp", "protocol": PROTOCOL, "vs_epsilon": [], "vs_degree": []}
    for name in args.datasets:
        for label in MECHANISMS:
            mine = [r for r in rows if (r["dataset"], r["method"]) == (name, label)]
            for eps in args.epsilons:
                maes = [r["mae"] for r in mine if r.get("by") != "degree" and r["epsilon"] == eps]
                result["vs_epsilon"].append(dict(dataset=name, method=label, epsilon=eps,
                                                 mae=sum(maes) / len(maes), mae_per_seed=maes))
            degree = [r for r in mine if r.get("by") == "degree"]
            for i, k in enumerate(degree[0]["degrees"] if degree else []):
                result["vs_degree"].append(dict(
                    dataset=name, method=label, epsilon=1.0, degree=k,
                    mae=sum(r["mae"][i] for r in degree) / len(degree),
                    nodes=degree[0]["nodes"][i]))
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=DATASETS)
    p.add_argument("--epsilons", nargs="*", type=float, default=EPSILONS)
    p.add_argument("--out", type=Path, default=RESULTS / "pgc_estimation_error.json",
                   help="the figures' JSON; the cells' rows go beside it (.jsonl)")
    args = p.parse_args()
    quiet()
    cells_out = args.out.with_suffix(".jsonl")
    run_cells(cells(args), cells_out, measured=False)
    result = figures(load_rows(cells_out), args)
    args.out.write_text(json.dumps(result, indent=1))
    plot(result, args.out.with_suffix(""))


def plot(result: dict, base: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for part, x, xlabel, suffix in (
        ("vs_epsilon", "epsilon", "epsilon (per feature)", "_vs_epsilon.png"),
        ("vs_degree", "degree", "node degree (eps = 1)", "_vs_degree.png"),
    ):
        rows = result[part]
        datasets = sorted({r["dataset"] for r in rows})
        if not datasets:
            continue
        fig, axes = plt.subplots(
            1, len(datasets), figsize=(4.5 * len(datasets), 3.6), squeeze=False
        )
        for ax, ds in zip(axes[0], datasets, strict=True):
            for method in MECHANISMS:
                pts = [r for r in rows if r["dataset"] == ds and r["method"] == method]
                ax.plot([r[x] for r in pts], [r["mae"] for r in pts], marker="o", label=method)
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("mean absolute error")
            ax.set_title(ds)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(str(base) + suffix, dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    main()
