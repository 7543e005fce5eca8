"""PGC estimation error (thesis Figs. 2.2-2.3): mean absolute error of the first-layer graph
convolution estimated from LDP features, vs epsilon and vs node degree.

For every node ``MAE(v) = 1/d sum_i |GC(v)_i - GC^(v)_i|`` (eq. 2.15), where ``GC`` is the GCN
convolution of the raw features (eq. 2.1) and ``GC^`` the same convolution of the server's
unbiased estimates (eq. 2.4) from the 1-bit mechanism (PGC), Laplace (LM) or Piecewise (PM),
each feature with budget eps, features scaled to [0, 1] from the public bounds (0, 1) (0/1
features; protocol ``common.PROTOCOL``). Fig. 2.2: eps in {1, 3, 5, 7, 9},
MAE averaged over all nodes. Fig. 2.3: eps = 1, MAE averaged per degree for degrees up to the
99% quantile. Results (mean over seeds) go to ``results/pgc_estimation_error.json`` and two
plots; ``summarize.py pgc`` puts the table into docs/pgc.md.

    DPGNN_DATA=../shared/datasets python benchmarks/pgc_estimation_error.py --seeds 10
    # smoke: python benchmarks/pgc_estimation_error.py --seeds 1 --datasets cora --out /tmp/e.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import PROTOCOL, RESULTS, PeakRSS, code_revision, command_line, cpu_info, quiet

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
    estimate = mech.perturb(data.x.float(), torch.Generator().manual_seed(seed)).float()
    return (graph_convolution(estimate, data.edge_index) - truth).abs().mean(dim=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--datasets", nargs="*", default=DATASETS)
    p.add_argument("--epsilons", nargs="*", type=float, default=EPSILONS)
    p.add_argument("--out", type=Path, default=RESULTS / "pgc_estimation_error.json")
    args = p.parse_args()
    quiet()
    import torch

    from lightning_dpgnn.data import NodeDataModule

    result = {
        "command": command_line(),
        "revision": code_revision(),
        "hardware": cpu_info(),
        "unit": "ldp",
        "protocol": PROTOCOL,
        "vs_epsilon": [],
        "vs_degree": [],
    }
    for name in args.datasets:
        dm = NodeDataModule(
            name, seed=0, feature_range=(0.0, 1.0), feature_bounds=(0.0, 1.0), split="lpgnn"
        )
        data = dm.data
        deg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
        cutoff = int(torch.quantile(deg.float(), 0.99))
        t0 = time.perf_counter()
        with PeakRSS() as mem:
            for label, mech in MECHANISMS.items():
                for eps in args.epsilons:
                    maes = [
                        float(node_errors(data, mech, eps, s).mean()) for s in range(args.seeds)
                    ]
                    result["vs_epsilon"].append(
                        dict(
                            dataset=name,
                            method=label,
                            epsilon=eps,
                            mae=sum(maes) / len(maes),
                            mae_per_seed=maes,
                        )
                    )
                per_node = torch.stack(
                    [node_errors(data, mech, 1.0, s) for s in range(args.seeds)]
                ).mean(0)
                for k in range(1, cutoff + 1):
                    sel = deg == k
                    if bool(sel.any()):
                        result["vs_degree"].append(
                            dict(
                                dataset=name,
                                method=label,
                                epsilon=1.0,
                                degree=k,
                                mae=float(per_node[sel].mean()),
                                nodes=int(sel.sum()),
                            )
                        )
        print(f"{name}: {time.perf_counter() - t0:.1f}s, peak {mem.peak_mb:.0f} MB", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
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
