"""ProGAP benchmark (issue 5 protocol): ProGAP vs GAP, accuracy vs epsilon, 95% bootstrap CIs.

Same datasets, preprocessing, split and protocol as ``gap_accuracy.py`` (Facebook100 Rutgers89
and Wisconsin87, target ``year``, classes 2005-2009 declared publicly, isolated nodes kept,
identity-keyed 75/10/15 split; Facebook page-page). Edge level uses the thesis' unit (one
directed edge) unless ``--edge-units`` says otherwise; node level uses ``max_degree`` =
``gap_accuracy.MAX_DEGREE[dataset]`` (a degree promise taken from the data, see there).
Runs ProGAP-EDP at edge epsilon {0.25, 0.5, 1, 2, 4}, ProGAP-inf, ProGAP-NDP at node epsilon
{2, 4, 8, 16, 32}, and the layerwise variant (Remark 1) at {inf, edge 1, node 8}, all at depth
K = 2. The GAP rows they are compared against come from ``results/gap_accuracy.jsonl`` (same
seeds and splits, hops = 2).

The depth ablation ``ProGAP-EDP-K1`` .. ``K5`` and ``GAP-EDP-K1`` .. ``K5`` (GAP's hops;
schools, edge epsilon 0.25 and 1) records validation accuracy, so ``summarize.py progap`` can
pick K for both as the thesis does (best mean validation accuracy over the seeds). It makes the
tables and the plot.

    DPGNN_DATA=../shared/datasets python benchmarks/progap_accuracy.py --seeds 10
"""

from __future__ import annotations

from common import RESULTS, grid_parser, run_grid
from gap_accuracy import DATASETS, MAX_DEGREE

EDGE_EPS = [0.25, 0.5, 1.0, 2.0, 4.0]
NODE_EPS = [2.0, 4.0, 8.0, 16.0, 32.0]
DEPTHS = [1, 2, 3, 4, 5]
DEPTH_EPS = [0.25, 1.0]
DEPTH_DATASETS = ("facebook100/Rutgers89", "facebook100/Wisconsin87")
# thesis §5.5.3 with depth fixed to GAP's hops (2) instead of tuned in 1..5; 1 base layer, lr 0.01
COMMON = dict(depth=2, base_layers=1, jk="cat", hidden=16, lr=0.01)
EDGE = dict(epochs_per_stage=100)  # full batch, BatchNorm, best epoch per stage on val/acc
NODE = dict(epochs_per_stage=10, batch_size=256, max_grad_norm=1.0)  # + MAX_DEGREE[dataset]


def configs(dataset: str, edge_units=("directed",)):
    """``(method, epsilon, unit, build)`` of every setting on ``dataset``."""
    from lightning_dpgnn import ProGAP

    node = {**NODE, "max_degree": MAX_DEGREE[dataset]}

    def make(privacy, eps, training, settings, edge_unit="undirected"):
        kwargs = {**COMMON, **settings}
        if privacy == "edge":
            kwargs["edge_unit"] = edge_unit
        if privacy != "none":
            kwargs["delta"] = "paper"  # the papers' delta: these rows are compared with them
        return lambda s: ProGAP(privacy=privacy, epsilon=eps, training=training, seed=s, **kwargs)

    yield "ProGAP-inf", None, "none", make("none", None, "progressive", EDGE)
    for u in edge_units:
        for e in EDGE_EPS:
            yield "ProGAP-EDP", e, f"edge-{u}", make("edge", e, "progressive", EDGE, u)
    for e in NODE_EPS:
        yield "ProGAP-NDP", e, "node", make("node", e, "progressive", node)
    yield "ProGAP-LW-inf", None, "none", make("none", None, "layerwise", EDGE)
    for u in edge_units:
        yield "ProGAP-LW-EDP", 1.0, f"edge-{u}", make("edge", 1.0, "layerwise", EDGE, u)
    yield "ProGAP-LW-NDP", 8.0, "node", make("node", 8.0, "layerwise", node)
    if dataset not in DEPTH_DATASETS:
        return
    # depth ablation (the thesis tunes K in 1..5 on validation accuracy, for GAP's hops too)
    from gap_accuracy import COMMON as GAP_COMMON
    from gap_accuracy import EDGE as GAP_EDGE

    from lightning_dpgnn.methods.gap import GAP

    for u in edge_units:
        for e in DEPTH_EPS:
            for k in DEPTHS:
                yield (
                    f"ProGAP-EDP-K{k}",
                    e,
                    f"edge-{u}",
                    make("edge", e, "progressive", {**EDGE, "depth": k}, u),
                )
                gap_kwargs = {**GAP_COMMON, **GAP_EDGE, "hops": k, "edge_unit": u,
                              "delta": "paper"}
                yield (
                    f"GAP-EDP-K{k}",
                    e,
                    f"edge-{u}",
                    lambda s, e=e, kw=gap_kwargs: GAP(privacy="edge", epsilon=e, seed=s, **kw),
                )


def main() -> None:
    args = grid_parser(__doc__, DATASETS, RESULTS / "progap_accuracy.jsonl").parse_args()
    run_grid(configs, DATASETS, args)


if __name__ == "__main__":
    main()
