"""HeteroRR supplement Fig. 11: how far is the released graph from the true one? The RMS distance
between the random-walk matrices ``P^k`` (``P = D^-1 A``, k = 1..4 hops) of Cora and of the
released graph, at eps_e = 1, against the share rho of private edges, for EdgeRR (public edges
pass, private ones through the private HRG; rho = 1 is PrivHRG), LapGraph and EdgeRand (every
edge private: the paper's baselines, flat in rho), with two references that spend nothing: the
public edges alone (the private ones dropped) and the empty graph.

One cell per (method, rho, seed), run by ``common.run_cells`` in this process; rows go to
``results/heterorr_edges.jsonl`` with the chain's time, and the table (mean and 95% bootstrap CI
over seeds) to ``results/heterorr_edges.md`` and docs/heterorr.md (``HETERORR-EDGES``;
``--summarize``: the table only). The private
edges of a seed are ``edge_split(rho, seed)`` (a public seed); the noise is OS-entropy seeded.

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets nice -n 10 \\
        python benchmarks/heterorr_edges.py --seeds 10

``--smoke`` (give ``--out``): the embedded csbm graph, one seed, a 1000 n-step chain (the minimum).
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np
import settings as S
from common import RESULTS, add_smoke_flag, heterorr_release, refuse_smoke_into, run_and_write

OUT = RESULTS / "heterorr_edges.jsonl"
METHODS = S.HETERORR_FIG11_METHODS
HOPS = S.HETERORR_HOPS


def walk_powers(edge_index, n: int, hops: int = HOPS) -> list[np.ndarray]:
    """``P^1 .. P^hops`` of ``P = D^-1 A`` (a node without edges: a zero row), dense."""
    import scipy.sparse as sp

    e = edge_index.cpu().numpy()
    a = sp.coo_matrix((np.ones(e.shape[1]), (e[0], e[1])), shape=(n, n)).tocsr()
    a.data[:] = 1.0
    deg = np.asarray(a.sum(1)).ravel()
    p = sp.diags(np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0)) @ a
    out, cur = [], p.toarray()
    out.append(cur)
    for _ in range(hops - 1):
        cur = p @ cur
        out.append(cur)
    return out


def cells(args):
    import torch

    from lightning_dpgnn.data import NodeDataModule

    dm = NodeDataModule(args.dataset, **S.HETERORR_GRAPHS.get(args.dataset, S.SMOKE_DATA))
    dm.setup("fit")
    graph = dm.data
    n = int(graph.num_nodes)
    truth = functools.cache(lambda: walk_powers(graph.edge_index, n))

    def run(method: str, rho: float | None, seed: int) -> dict:
        torch.set_num_threads(1)
        t0 = time.time()
        edges, acc = heterorr_release(method, graph.edge_index, n, args.epsilon, rho, seed,
                                      args.steps_per_node)
        release_s = time.time() - t0
        rms = [float(np.sqrt(np.mean((p - q) ** 2)))
               for p, q in zip(truth(), walk_powers(edges, n), strict=True)]
        print(f"seed {seed} {method} rho={rho} rms={np.mean(rms):.3e} {release_s:.1f}s",
              flush=True)
        return {**{f"rms_hop{k + 1}": v for k, v in enumerate(rms)}, "rms_mean": np.mean(rms),
                "released_edges": int(edges.size(1)) // 2, "true_edges": graph.num_edges // 2,
                "spent_epsilon": acc.epsilon(), "release_s": round(release_s, 2)}

    for seed in range(args.seeds):
        for method in args.methods:
            for rho in args.rhos if method in ("EdgeRR", "public-only") else [None]:
                meta = {"key": f"{args.dataset}|{method}|{rho}|{args.epsilon}|{seed}",
                        "dataset": args.dataset, "method": method, "rho": rho,
                        "epsilon": args.epsilon, "seed": seed, "hops": HOPS,
                        "steps_per_node": args.steps_per_node if method == "EdgeRR" else None}
                yield meta, functools.partial(run, method, rho, seed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--dataset", default="cora")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--rhos", nargs="+", type=float, default=list(S.HETERORR_RHOS))
    p.add_argument("--epsilon", type=float, default=S.HETERORR_FIG11_EPSILON)
    p.add_argument("--steps-per-node", type=float, default=1000.0)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true", help="write the table of --out only")
    add_smoke_flag(p)
    args = p.parse_args()
    refuse_smoke_into(OUT, p, args)
    if args.smoke:
        args.seeds, args.dataset = 1, S.SMOKE_DATASET
        args.steps_per_node = S.HETERORR_SMOKE["steps_per_node"]
    run_and_write(cells(args), args.out, "heterorr_edges", run=not args.summarize,
                  doc=not args.smoke)


if __name__ == "__main__":
    main()
