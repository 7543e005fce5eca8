"""GW-LDP clustering on ego graphs (``--hops``, 1 by default) of the largest connected
component of CiteSeer (``--dataset cora``: Cora) (GW-LDP §4, Fig. 2): ``--graphs`` centres drawn
per seed, pseudo-label = the centre's label, 10 clients (Dirichlet 1.0); FedAvg of the GCN on
the pseudo-labels; the server clusters the released graphs into k = number of classes clusters
(spectral on ``exp(-gamma D / max D)``, and k-medoids on D) and the clusters are scored against
the pseudo-labels (NMI, ARI). Rows (``settings.GWLDP_CLUSTERING_ROWS``): ``random`` (uniform
random labels: the chance level of NMI, far from 0 for a few dozen graphs), GW_A of the raw
ego graphs, clear embeddings, and the sound LDP release at a few epsilons per graph (n public,
``--epsilons``, default ``settings.GWLDP_EPSILONS``).

One cell per (row, epsilon, clustering, seed), run by ``common.run_cells`` (a re-run skips the
cells already in the file; a seed's model is trained only when one of its cells is missing).
Rows go to ``results/gwldp_clustering.jsonl``; the table (mean, 95% bootstrap CI; docs/gwldp.md)
is ``summarize.py gwldp_clustering``, also written after a run (``--summarize``: the table only).
Single-threaded:

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets python benchmarks/gwldp_clustering.py
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/gwldp_clustering.py --dataset cora \\
        --hops 2 --graphs 60 --seeds 10 --epsilons 1 4 64      # Cora 2-hop, against epsilon
    python benchmarks/summarize.py gwldp_clustering

``--smoke`` (give ``--out``): one seed, one FedAvg round, 40 ego graphs.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import numpy as np
import settings as S
from common import RESULTS, add_smoke_flag, quiet_trainer, refuse_smoke_into, run_and_write

OUT = RESULTS / "gwldp_clustering.jsonl"
#: clustering method -> gamma of its affinity
METHODS = (("spectral", 8.0), ("kmedoids", 1.0))


def data(seed: int, args) -> dict:
    """A seed's ego graphs, their pseudo-labels and clients."""
    from lightning_dpgnn.data import GraphDataModule

    dm = GraphDataModule.ego(args.dataset, hops=args.hops, num_graphs=args.graphs,
                             sample_seed=seed,
                             split=(0.7, 0.2, 0.1), num_clients=10, dirichlet_alpha=1.0,
                             partition_seed=seed, seed=seed, batch_size=64)  # fmt: skip
    dm.setup()
    y = dm.graph_labels.numpy()
    return dict(dm=dm, graphs=list(dm.dataset), y=y, k=int(y.max()) + 1)


def train(seed: int, args, prep) -> dict:
    """A seed's FedAvg model and the clients' embeddings (shared by its cells)."""
    from lightning_dpgnn import GWLDP

    p = prep()
    model = GWLDP(mode="none", gnn="gcn", seed=seed, local_epochs=1)
    quiet_trainer(max_epochs=args.rounds, num_sanity_val_steps=0).fit(model, p["dm"])
    return dict(p, h=model.node_embeddings(p["graphs"]))


def cells(args, cache: Path):
    """``(meta, fit)`` of every (seed, row, epsilon, clustering), seeds outermost
    (:func:`common.run_cells`); a distance matrix is computed once for its two clusterings."""

    from lightning_dpgnn import gw
    from lightning_dpgnn.privacy import MatrixMultiBit, PrivacyAccountant
    from lightning_dpgnn.privacy.mechanism import draw

    def gw_a(p):
        costs = [gw.structure_cost(g.edge_index, g.num_nodes) for g in p["graphs"]]
        return gw.pairwise_discrepancy(costs, cache_dir=cache)

    def clear_h(p):
        return gw.pairwise_discrepancy([gw.embedding_cost(m) for m in p["h"]], cache_dir=cache)

    def ldp_h(p, eps):
        mech = MatrixMultiBit(eps)
        codes = draw(mech, PrivacyAccountant("ldp"), None, p["h"])
        mats = [gw.embedding_cost(mech.rectify(c)) for c in codes]
        return gw.pairwise_discrepancy(mats, cache_dir=cache)

    for seed in range(args.seeds):
        prep = functools.cache(functools.partial(data, seed, args))
        seed_run = functools.cache(functools.partial(train, seed, args, prep))
        tag = ("" if (args.dataset, args.hops) == ("citeseer", 1)
               else f"|{args.dataset}|{args.hops}|{args.graphs}")
        base = {"seed": seed, "dataset": args.dataset, "hops": args.hops, "graphs": args.graphs,
                "rounds": args.rounds}

        def uniform(prep=prep, seed=seed) -> dict:  # the chance level of NMI / ARI at this size
            p = prep()
            labels = np.random.default_rng(seed).integers(p["k"], size=len(p["y"]))
            return {**gw.cluster_scores(labels, p["y"]), "k": p["k"]}

        yield {"key": f"random||uniform|{seed}{tag}", "row": "random", "method": "uniform",
               **base}, uniform
        plan = [("gw_A", None, gw_a), ("clear_H", None, clear_h),
                *[("ldp_H", eps, functools.partial(ldp_h, eps=eps)) for eps in args.epsilons]]

        for row, eps, d_of in plan:
            distances = functools.cache(lambda d_of=d_of, seed_run=seed_run: d_of(seed_run()))
            extra = {} if eps is None else {"epsilon": eps}
            for method, gamma in METHODS:

                def fit(method=method, gamma=gamma, distances=distances, seed_run=seed_run,
                        row=row, extra=extra, seed=seed):
                    p = seed_run()
                    labels = gw.cluster(distances(), p["k"], method, gamma=gamma, seed=seed)
                    s = gw.cluster_scores(labels, p["y"])
                    print(f"seed {seed} {row} {extra} {method} {s}", flush=True)
                    return {**s, "k": p["k"]}

                meta = {"key": f"{row}|{'' if eps is None else eps}|{method}|{seed}{tag}",
                        "row": row, "method": method, **extra, **base}
                yield meta, fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--dataset", default="citeseer")
    parser.add_argument("--hops", type=int, default=1)
    parser.add_argument("--graphs", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cache", default="/tmp/gwldp-bench-cache")
    parser.add_argument("--summarize", action="store_true",
                        help="write the table of --out only (summarize.py gwldp_clustering)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(S.GWLDP_EPSILONS))
    parser.add_argument("--out", type=Path, default=OUT)
    add_smoke_flag(parser)
    args = parser.parse_args()
    refuse_smoke_into(OUT, parser, args)
    if args.smoke:
        args.seeds, args.rounds = S.GWLDP_SMOKE["seeds"], S.GWLDP_SMOKE["rounds"]
        args.graphs = S.GWLDP_SMOKE["graphs"]
    run_and_write(cells(args, Path(args.cache)), args.out, "gwldp_clustering",
                  run=not args.summarize,
                  one_thread=True)


if __name__ == "__main__":
    main()
