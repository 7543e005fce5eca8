"""ProGAP benchmark (issue 5 protocol): ProGAP vs GAP, accuracy vs epsilon, 95% bootstrap CIs.

Same datasets, preprocessing and split as ``gap_accuracy.py`` (Facebook100 Rutgers89 and
Wisconsin87, target ``year``, classes with >= 1000 nodes, 75/10/15; Facebook page-page).
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
from gap_accuracy import DATASETS

EDGE_EPS = [0.25, 0.5, 1.0, 2.0, 4.0]
NODE_EPS = [2.0, 4.0, 8.0, 16.0, 32.0]
DEPTHS = [1, 2, 3, 4, 5]
DEPTH_EPS = [0.25, 1.0]
DEPTH_DATASETS = ("facebook100/Rutgers89", "facebook100/Wisconsin87")
# thesis §5.5.3 with depth fixed to GAP's hops (2) instead of tuned in 1..5; 1 base layer, lr 0.01
COMMON = dict(depth=2, base_layers=1, jk="cat", hidden=16, lr=0.01)
EDGE = dict(epochs_per_stage=100)  # full batch, BatchNorm, best epoch per stage on val/acc
NODE = dict(epochs_per_stage=10, batch_size=256, max_degree=100, max_grad_norm=1.0)


def configs(dataset: str):
    from lightning_dpgnn import ProGAP

    def make(privacy, eps, training, settings):
        kwargs = {**COMMON, **settings}
        return lambda s: ProGAP(privacy=privacy, epsilon=eps, training=training, seed=s, **kwargs)

    yield "ProGAP-inf", None, make("none", None, "progressive", EDGE)
    for e in EDGE_EPS:
        yield "ProGAP-EDP", e, make("edge", e, "progressive", EDGE)
    for e in NODE_EPS:
        yield "ProGAP-NDP", e, make("node", e, "progressive", NODE)
    yield "ProGAP-LW-inf", None, make("none", None, "layerwise", EDGE)
    yield "ProGAP-LW-EDP", 1.0, make("edge", 1.0, "layerwise", EDGE)
    yield "ProGAP-LW-NDP", 8.0, make("node", 8.0, "layerwise", NODE)
    if dataset not in DEPTH_DATASETS:
        return
    # depth ablation (the thesis tunes K in 1..5 on validation accuracy, for GAP's hops too)
    from gap_accuracy import COMMON as GAP_COMMON
    from gap_accuracy import EDGE as GAP_EDGE

    from lightning_dpgnn.methods.gap import GAP

    for e in DEPTH_EPS:
        for k in DEPTHS:
            yield f"ProGAP-EDP-K{k}", e, make("edge", e, "progressive", {**EDGE, "depth": k})
            gap_kwargs = {**GAP_COMMON, **GAP_EDGE, "hops": k}
            yield (
                f"GAP-EDP-K{k}",
                e,
                lambda s, e=e, kw=gap_kwargs: GAP(privacy="edge", epsilon=e, seed=s, **kw),
            )


def main() -> None:
    args = grid_parser(__doc__, DATASETS, RESULTS / "progap_accuracy.jsonl").parse_args()
    run_grid(configs, DATASETS, args)


if __name__ == "__main__":
    main()
