"""GW-LDP on MUTAG: SVM on GW kernels of raw graphs, clear embeddings, LDP releases (the sound
matrix multi-bit encoder at several epsilons per graph), the paper-code reference mode, and the
two rows the paper lacks: size only and noise only (the release of a constant embedding).

Per seed: 10 clients (Dirichlet 0.5 over labels, partition seed = seed), 7:2:1 per client;
FedAvg of the paper's GCN (2 x 16, mean pool) for ``--rounds`` rounds of one local epoch (the
end-to-end GCN row is its test accuracy); then the clients' embeddings (sigmoid of the last GCN
layer) are released under each setting *from the same trained model* (a deployment releases
once; the benchmark simulates one release per setting). The server's SVM picks (C, gamma) on the
validation graphs (grids of the FGW repository) and is scored on the test graphs; kNN (k=5) is
scored on the same split. Settings shared with the summarizer (rows, epsilons, n_max) are in
``settings.py`` (``GWLDP_*``).

One cell per (row, epsilon, seed), run by ``common.run_cells`` (a re-run skips the cells already
in the file; a seed's model is trained only when one of its cells is missing). Rows go to
``results/gwldp_accuracy.jsonl`` (``--gnn gin``: ``results/gwldp_accuracy_gin.jsonl``); the
table (mean and 95% bootstrap CI over seeds; docs/gwldp.md) is ``summarize.py gwldp``, also
written after a run (``--summarize``: the table only). Single-threaded:

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets python benchmarks/gwldp_accuracy.py
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/gwldp_accuracy.py --gnn gin \\
        --rows gcn_end_to_end clear_H ldp_H paper_code --epsilons 64
    python benchmarks/summarize.py gwldp

``--smoke`` (give ``--out``): one seed, one FedAvg round, a seeded sample of 40 graphs.
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings
from pathlib import Path

import numpy as np
import settings as S
from common import RESULTS, add_smoke_flag, quiet_trainer, run_cells


def default_out(gnn: str) -> Path:
    """The results file of ``gnn``'s rows (the GCN's is the main one)."""
    return RESULTS / ("gwldp_accuracy.jsonl" if gnn == "gcn" else f"gwldp_accuracy_{gnn}.jsonl")


def _settings(args) -> dict:
    s = {"dataset": "mutag", "gnn": args.gnn, "rounds": args.rounds, "clients": 10,
         "dirichlet_alpha": 0.5, "split": [0.7, 0.2, 0.1], "local_epochs": 1,
         "embedding": "sigmoid", "normalize": "max"}  # fmt: skip
    if args.graphs is not None:  # a sample (--smoke); the full runs use all 188 graphs
        s["graphs"] = args.graphs
    return s


def train(seed: int, args) -> dict:
    """A seed's data, FedAvg model and the clients' embeddings (shared by its cells)."""
    import torch

    from lightning_dpgnn import GWLDP
    from lightning_dpgnn.data import GraphDataModule

    kw = dict(split=(0.7, 0.2, 0.1), num_clients=10, dirichlet_alpha=0.5, partition_seed=seed,
              seed=seed, batch_size=64)  # fmt: skip
    dm = GraphDataModule("mutag", **kw)
    if args.graphs is not None:
        dm.setup()
        full = list(dm.dataset)
        gen = torch.Generator().manual_seed(seed)
        pick = torch.randperm(len(full), generator=gen)[: args.graphs].sort().values.tolist()
        dm = GraphDataModule("mutag", graphs=[full[i] for i in pick], **kw)
    dm.setup()
    graphs = list(dm.dataset)
    parts = [np.array([int(i) for c in dm.clients for i in getattr(c, k)], dtype=int)
             for k in ("train", "val", "test")]  # fmt: skip
    t0 = time.time()
    model = GWLDP(mode="none", gnn=args.gnn, seed=seed, local_epochs=1)
    tr = quiet_trainer(max_epochs=args.rounds, num_sanity_val_steps=0)
    tr.fit(model, dm)
    gcn_acc = float(tr.test(model, dm, verbose=False)[0]["test/acc"])
    fit_s = time.time() - t0
    h = model.node_embeddings(graphs)  # client side, before any mechanism
    with torch.no_grad():
        raw = [model.net.embed(g.x.float(), g.edge_index) for g in graphs]
    return dict(graphs=graphs, y=dm.graph_labels.numpy(), parts=parts, h=h, raw=raw,
                gcn_acc=gcn_acc, fit_s=round(fit_s, 1))  # fmt: skip


def cells(args, cache: Path):
    """``(meta, fit)`` of every (seed, row, epsilon) in the order the rows were written (seeds
    outermost): :func:`common.run_cells`."""
    import torch

    from lightning_dpgnn import gw
    from lightning_dpgnn.privacy import MatrixMultiBit, PaperCodeGaussian, PrivacyAccountant

    noise_eps = S.GWLDP_EPSILONS[0]  # the noise-only row: the smallest default epsilon
    for seed in range(args.seeds):
        seed_run = functools.cache(functools.partial(train, seed, args))

        def score(row: str, d_of, extra: dict, seed=seed, seed_run=seed_run) -> dict:
            p = seed_run()
            d = d_of(p)
            acc, params = gw.svm_split(d, p["y"], *p["parts"])
            knn = gw.knn_accuracy(d, p["y"], np.concatenate(p["parts"][:2]), p["parts"][2], k=5)
            print(f"seed {seed} {row} {extra} svm {acc:.3f} knn {knn:.3f}", flush=True)
            return {"test_acc": acc, "knn5_acc": knn, "svm_params": params}

        def gw_of(mats) -> np.ndarray:
            return gw.pairwise_discrepancy([gw.embedding_cost(m) for m in mats], cache_dir=cache)

        def released(p, mech, mats) -> np.ndarray:
            ids = torch.arange(len(p["graphs"]))
            rel = mech.release(mats, ids, PrivacyAccountant("ldp"))
            return gw_of([mech.rectify(c) for c in rel.matrices])

        def size_d(p) -> np.ndarray:
            sizes = np.array([g.num_nodes for g in p["graphs"]], dtype=float)
            return np.abs(sizes[:, None] - sizes[None])

        def gw_a(p) -> np.ndarray:
            costs = [gw.structure_cost(g.edge_index, g.num_nodes) for g in p["graphs"]]
            return gw.pairwise_discrepancy(costs, cache_dir=cache)

        def paper_code(p) -> np.ndarray:
            ids = torch.arange(len(p["graphs"]))
            return gw_of(PaperCodeGaussian().release(p["raw"], ids, PrivacyAccountant("ldp"))
                         .matrices)  # fmt: skip

        def end_to_end(seed_run=seed_run) -> dict:
            p = seed_run()
            return {"test_acc": p["gcn_acc"], "fit_s": p["fit_s"]}

        plan = [
            ("size_only", None, {}, size_d),
            ("gw_A", None, {}, gw_a),
            ("gcn_end_to_end", None, {}, None),
            ("clear_H", None, {}, lambda p: gw_of(p["h"])),
            *[("ldp_H", eps, {}, lambda p, eps=eps: released(p, MatrixMultiBit(eps), p["h"]))
              for eps in args.epsilons],
            ("noise_only", noise_eps, {},
             lambda p: released(p, MatrixMultiBit(noise_eps),
                                [torch.full_like(m, 0.5) for m in p["h"]])),
            # the size hidden: every matrix padded to a public n_max rows
            *[("ldp_padded", eps, {"n_max": S.GWLDP_N_MAX},
               lambda p, eps=eps: released(
                   p, MatrixMultiBit(eps, size="padded", n_max=S.GWLDP_N_MAX), p["h"]))
              for eps in S.GWLDP_PADDED_EPSILONS],
            ("paper_code", None, {}, paper_code),
        ]  # fmt: skip
        base = {"seed": seed, **_settings(args)}
        for row, eps, extra, d_of in plan:
            if row not in args.rows:
                continue
            with_eps = {} if eps is None else {"epsilon": eps}
            meta = {"key": f"{row}|{'' if eps is None else eps}|{seed}", "row": row,
                    **with_eps, **extra, **base}  # fmt: skip
            if d_of is None:
                yield meta, end_to_end
            else:
                yield meta, functools.partial(score, row, d_of, {**with_eps, **extra})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--cache", default="/tmp/gwldp-bench-cache")
    parser.add_argument("--summarize", action="store_true",
                        help="write the table of --out only (summarize.py gwldp)")
    parser.add_argument("--gnn", default="gcn", choices=("gcn", "gin"))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(S.GWLDP_EPSILONS))
    parser.add_argument("--rows", nargs="+", default=list(S.GWLDP_ROWS), choices=S.GWLDP_ROWS)
    parser.add_argument("--graphs", type=int, default=None,
                        help="a seeded sample of this many graphs per seed (default: all)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default: results/gwldp_accuracy[_GNN].jsonl)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        if args.out is None:
            parser.error("--smoke: give --out (smoke rows are no result)")
        args.seeds, args.rounds = S.GWLDP_SMOKE["seeds"], S.GWLDP_SMOKE["rounds"]
        args.graphs = S.GWLDP_SMOKE["graphs"]
    out = args.out or default_out(args.gnn)
    if not args.summarize:
        import torch

        warnings.filterwarnings("ignore")
        torch.set_num_threads(1)
        run_cells(cells(args, Path(args.cache)), out, measured=False)
    import summarize

    print(summarize.gwldp(out))


if __name__ == "__main__":
    main()
