"""GW-LDP clustering on 1-hop ego graphs of CiteSeer's largest connected component (GW-LDP §4,
Fig. 2): ``--graphs`` centres drawn per seed, pseudo-label = the centre's label, 10 clients
(Dirichlet 1.0); FedAvg of the GCN on the pseudo-labels; the server clusters the released
graphs into 6 clusters (spectral on ``exp(-gamma D / max D)``, and k-medoids on D) and the
clusters are scored against the pseudo-labels (NMI, ARI). Rows: GW_A of the raw ego graphs,
clear embeddings, and the sound LDP release at a few epsilons per graph (n public).
Single-threaded; ``results/gwldp_clustering.jsonl`` + ``.md`` (mean, 95% bootstrap CI).

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python benchmarks/gwldp_clustering.py
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import torch
from common import RESULTS, append, bootstrap_ci, code_revision, command_line, quiet_trainer

OUT = RESULTS / "gwldp_clustering.jsonl"
EPSILONS = (4.0, 64.0)


def run_seed(seed: int, args, done: set[str], cache: Path) -> None:
    from lightning_dpgnn import GWLDP, gw
    from lightning_dpgnn.data import GraphDataModule
    from lightning_dpgnn.privacy import MatrixMultiBit, PrivacyAccountant

    dm = GraphDataModule.ego(args.dataset, hops=1, num_graphs=args.graphs, sample_seed=seed,
                             split=(0.7, 0.2, 0.1), num_clients=10, dirichlet_alpha=1.0,
                             partition_seed=seed, seed=seed, batch_size=64)
    dm.setup()
    graphs = list(dm.dataset)
    y = dm.graph_labels.numpy()
    k = int(y.max()) + 1
    model = GWLDP(mode="none", gnn="gcn", seed=seed, local_epochs=1)
    quiet_trainer(max_epochs=args.rounds, num_sanity_val_steps=0).fit(model, dm)
    h = model.node_embeddings(graphs)
    base = {"seed": seed, "dataset": args.dataset, "hops": 1, "graphs": args.graphs,
            "rounds": args.rounds, "k": k, "revision": code_revision(),
            "command": command_line()}

    def score(row: str, d: np.ndarray, **extra) -> None:
        for method, gamma in (("spectral", 8.0), ("kmedoids", 1.0)):
            key = f"{row}|{extra.get('epsilon', '')}|{method}|{seed}"
            if key in done:
                continue
            s = gw.cluster_scores(gw.cluster(d, k, method, gamma=gamma, seed=seed), y)
            append(OUT, {"key": key, "row": row, "method": method, **extra, **s, **base})
            print(f"seed {seed} {row} {extra} {method} {s}", flush=True)

    d_a = gw.pairwise_discrepancy([gw.structure_cost(g.edge_index, g.num_nodes) for g in graphs],
                                  cache_dir=cache)
    score("gw_A", d_a)
    score("clear_H", gw.pairwise_discrepancy([gw.embedding_cost(m) for m in h], cache_dir=cache))
    ids = torch.arange(len(graphs))
    for eps in EPSILONS:
        mech = MatrixMultiBit(eps)
        rel = mech.release(h, ids, PrivacyAccountant("ldp"))
        mats = [gw.embedding_cost(mech.rectify(c)) for c in rel.matrices]
        score("ldp_H", gw.pairwise_discrepancy(mats, cache_dir=cache), epsilon=eps)


def summarize() -> str:
    rows = [json.loads(x) for x in OUT.read_text().splitlines() if x.strip()]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["row"], r.get("epsilon"), r["method"]), []).append(r)
    lines = ["| row | epsilon per graph | clustering | seeds | NMI (95% CI) | ARI (95% CI) |",
             "|---|---|---|---|---|---|"]
    order = {"gw_A": 0, "clear_H": 1, "ldp_H": 2}
    for (row, eps, method), rs in sorted(groups.items(),
                                         key=lambda kv: (order[kv[0][0]], kv[0][1] or 0,
                                                         kv[0][2])):
        nm, nlo, nhi = bootstrap_ci([r["nmi"] for r in rs])
        am, alo, ahi = bootstrap_ci([r["ari"] for r in rs])
        e = "inf" if eps is None else f"{eps:g}"
        lines.append(f"| {row} | {e} | {method} | {len(rs)} | {nm:.3f} ({nlo:.3f}-{nhi:.3f}) |"
                     f" {am:.3f} ({alo:.3f}-{ahi:.3f}) |")
    rev = sorted({r["revision"] for r in rows})
    r0 = rows[0]
    return "\n".join(lines) + (
        f"\n\n{r0['dataset']} 1-hop ego graphs of the largest component, {r0['graphs']} centres "
        f"per seed, k = {r0['k']}; FedAvg GCN {r0['rounds']} rounds. Revision(s): "
        f"{', '.join(rev)}. Command: `{r0['command']}`\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="citeseer")
    parser.add_argument("--graphs", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cache", default="/tmp/gwldp-bench-cache")
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    if not args.summarize:
        done = set()
        if OUT.exists():
            done = {json.loads(x)["key"] for x in OUT.read_text().splitlines() if x.strip()}
        for seed in range(args.seeds):
            run_seed(seed, args, done, Path(args.cache))
    md = summarize()
    (RESULTS / "gwldp_clustering.md").write_text("# GW-LDP clustering (ego graphs)\n\n" + md)
    print(md)


if __name__ == "__main__":
    main()
