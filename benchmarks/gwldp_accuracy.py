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
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/gwldp_accuracy.py --rows ldp_H paper_code \\
        dpfedavg_end_to_end dpfedavg_ldp_H --epsilons 0.5 1 2 8 16 32 --paper-stds 0.1 1 10 \\
        --fedavg-epsilons 4 16                            # the epsilon curve, DP-FedAvg's cost
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/gwldp_accuracy.py --protocol nested \\
        --seeds 1 --rows size_only gw_A clear_H ldp_H noise_only paper_code     # nested CV
    OMP_NUM_THREADS=1 DPGNN_DATA=... python benchmarks/gwldp_accuracy.py --dataset proteins \\
        --graphs 120 --sample-seed 0                     # PROTEINS: a fixed sample of graphs
    python benchmarks/summarize.py gwldp

``--protocol nested`` scores each GW matrix by the FGW protocol (``gw.svm_nested_cv``: 10 outer
random stratified 90/10 splits of all graphs, (C, gamma) by 10 inner stratified folds;
scikit-learn's ``SVC`` and ``StratifiedKFold``); a row keeps the accuracy of each outer split.
The FedAvg model was trained on the clients' training graphs, so an outer test graph may have
been a training graph of the model that embeds it (the raw-graph and size rows are unaffected).
``--paper-stds`` adds paper-code rows at the given noise stds (the code's "epsilon");
``--fedavg-epsilons`` adds ``dpfedavg_*`` rows: the model trained with client-level DP-FedAvg
at that budget (clip ``settings.GWLDP_FEDAVG_CLIP``; the report composes it with the release).

``--smoke`` (give ``--out``): one seed, one FedAvg round, a seeded sample of 40 graphs.
"""

from __future__ import annotations

import argparse
import functools
import time
import zlib
from pathlib import Path

import numpy as np
import settings as S
from common import RESULTS, add_smoke_flag, quiet_trainer, refuse_smoke_into, run_and_write


def default_out(gnn: str, dataset: str = "mutag", protocol: str = "split") -> Path:
    """The results file of a (GNN, dataset, protocol) (MUTAG's GCN split is the main one)."""
    parts = [p for p in (gnn != "gcn" and gnn, dataset != "mutag" and dataset,
                         protocol != "split" and protocol) if p]  # fmt: skip
    return RESULTS / ("gwldp_accuracy" + "".join(f"_{p}" for p in parts) + ".jsonl")


def _settings(args) -> dict:
    s = {"dataset": args.dataset, "gnn": args.gnn, "rounds": args.rounds, "clients": 10,
         "release_noise": "seeded",
         "dirichlet_alpha": 0.5, "split": [0.7, 0.2, 0.1], "local_epochs": 1,
         "embedding": "sigmoid", "normalize": "max"}  # fmt: skip
    if args.graphs is not None:  # a sample (PROTEINS, --smoke); MUTAG's runs use all 188 graphs
        s["graphs"] = args.graphs
        if args.sample_seed is not None:
            s["sample_seed"] = args.sample_seed
    if args.protocol != "split":
        s["protocol"] = args.protocol
    return s


def prepare(seed: int, args) -> dict:
    """A seed's data: the graphs (a seeded sample with ``--graphs``: drawn from ``--sample-seed``
    when given, else from the seed), the clients' partition (seed) and 7:2:1 splits."""
    import torch

    from lightning_dpgnn.data import GraphDataModule

    kw = dict(split=(0.7, 0.2, 0.1), num_clients=10, dirichlet_alpha=0.5, partition_seed=seed,
              seed=seed, batch_size=64)  # fmt: skip
    dm = GraphDataModule(args.dataset, **kw)
    if args.graphs is not None:
        dm.setup()
        full = list(dm.dataset)
        gen = torch.Generator().manual_seed(seed if args.sample_seed is None else args.sample_seed)
        pick = torch.randperm(len(full), generator=gen)[: args.graphs].sort().values.tolist()
        dm = GraphDataModule(args.dataset, graphs=[full[i] for i in pick], **kw)
    dm.setup()
    parts = [np.array([int(i) for c in dm.clients for i in getattr(c, k)], dtype=int)
             for k in ("train", "val", "test")]  # fmt: skip
    return dict(dm=dm, graphs=list(dm.dataset), y=dm.graph_labels.numpy(), parts=parts)


def train(seed: int, args, prep, fedavg_epsilon: float | None = None) -> dict:
    """A seed's FedAvg model (``fedavg_epsilon``: client-level DP-FedAvg at that budget, clip
    ``settings.GWLDP_FEDAVG_CLIP``) and the clients' embeddings (shared by its cells)."""
    import torch

    from lightning_dpgnn import GWLDP

    p = prep()
    t0 = time.time()
    if fedavg_epsilon is None:
        model = GWLDP(mode="none", gnn=args.gnn, seed=seed, local_epochs=1)
    else:  # its own release at the smallest default epsilon (the benchmark re-releases below)
        model = GWLDP(mode="ldp", epsilon=S.GWLDP_EPSILONS[0], gnn=args.gnn, seed=seed,
                      local_epochs=1, dp_fedavg=True, fedavg_epsilon=fedavg_epsilon,
                      fedavg_clip=S.GWLDP_FEDAVG_CLIP)  # fmt: skip
    tr = quiet_trainer(max_epochs=args.rounds, num_sanity_val_steps=0)
    tr.fit(model, p["dm"])
    # the GNN's own accuracy on the test graphs (validate on the test loader: trainer.test would
    # also score the server's SVM, all pairs of every graph, which this benchmark does per row)
    gcn_acc = float(tr.validate(model, p["dm"].test_dataloader(), verbose=False)[0]["val/acc"])
    fit_s = time.time() - t0
    graphs = p["graphs"]
    h = model.node_embeddings(graphs)  # client side, before any mechanism
    with torch.no_grad():
        raw = [model.net.embed(g.x.float(), g.edge_index) for g in graphs]
    out = dict(p, h=h, raw=raw, gcn_acc=gcn_acc, fit_s=round(fit_s, 1))
    if fedavg_epsilon is not None:
        out["reported_epsilon"] = model.privacy_spent()["dp-fedavg"].epsilon  # the rounds
        out["noise_multiplier"] = model.hparams.fedavg_noise_multiplier
    return out


def _generator(seed: int, name: str):
    """The benchmark's noise for release ``name`` of ``seed``: reproducible (research only), so
    that a release, and its cached GW matrix, is the same under every protocol."""
    from lightning_dpgnn.privacy.random import reproducible_generator

    return reproducible_generator(seed, zlib.crc32(name.encode()))


def _resplits(y: np.ndarray, count: int):
    """``count`` random stratified 7:2:1 splits of all graphs (split ``k`` seeded by ``k``)."""
    from sklearn.model_selection import StratifiedShuffleSplit

    idx = np.arange(len(y))
    for k in range(count):
        (rest, test), = StratifiedShuffleSplit(1, test_size=0.1, random_state=k).split(idx, y)
        (tr, va), = StratifiedShuffleSplit(1, test_size=2 / 9, random_state=k).split(rest,
                                                                                     y[rest])
        yield rest[tr], rest[va], test


def cells(args, cache: Path):
    """``(meta, fit)`` of every (seed, row, epsilon) in the order the rows were written (seeds
    outermost): :func:`common.run_cells`."""
    import torch

    from lightning_dpgnn import gw
    from lightning_dpgnn.privacy import MatrixMultiBit, PaperCodeGaussian, PrivacyAccountant
    from lightning_dpgnn.privacy.mechanism import draw

    noise_eps = S.GWLDP_EPSILONS[0]  # the noise-only row: the smallest default epsilon
    for seed in range(args.seed_start, args.seeds):
        prep = functools.cache(functools.partial(prepare, seed, args))
        runs = {fe: functools.cache(functools.partial(train, seed, args, prep, fe))
                for fe in (None, *args.fedavg_epsilons)}  # fmt: skip

        def score(row: str, d_of, extra: dict, run, seed=seed) -> dict:
            p = run()
            mine = {k: p[k] for k in ("reported_epsilon", "noise_multiplier") if k in p}
            return {**mine, **evaluate(row, d_of(p), p, extra, seed)}

        def evaluate(row: str, d: np.ndarray, p: dict, extra: dict, seed: int) -> dict:
            if args.protocol == "resplit":  # 10 random stratified 7:2:1 splits of all graphs
                accs, knns = [], []
                for tr, va, te in _resplits(p["y"], S.GWLDP_RESPLITS):
                    accs.append(gw.svm_split(d, p["y"], tr, va, te)[0])
                    knns.append(gw.knn_accuracy(d, p["y"], np.concatenate([tr, va]), te, k=5))
                print(f"seed {seed} {row} {extra} resplit {np.mean(accs):.3f}", flush=True)
                return {"test_acc": float(np.mean(accs)), "fold_accs": accs,
                        "knn5_acc": float(np.mean(knns)), "knn_fold_accs": knns}
            if args.protocol == "nested":  # the FGW protocol over all graphs
                res = gw.svm_nested_cv(d, p["y"], outer_splits=10, test_size=0.1,
                                       inner_folds=10, seed=seed)  # fmt: skip
                print(f"seed {seed} {row} {extra} nested {res.mean:.3f}", flush=True)
                return {"test_acc": res.mean, "fold_accs": res.accuracies,
                        "svm_params": res.params}  # fmt: skip
            acc, params = gw.svm_split(d, p["y"], *p["parts"])
            knn = gw.knn_accuracy(d, p["y"], np.concatenate(p["parts"][:2]), p["parts"][2], k=5)
            print(f"seed {seed} {row} {extra} svm {acc:.3f} knn {knn:.3f}", flush=True)
            return {"test_acc": acc, "knn5_acc": knn, "svm_params": params}

        def gw_of(mats) -> np.ndarray:
            return gw.pairwise_discrepancy([gw.embedding_cost(m) for m in mats], cache_dir=cache,
                                           n_jobs=args.jobs)  # fmt: skip

        def released(p, mech, mats, name: str, seed=seed) -> np.ndarray:
            codes = draw(mech, PrivacyAccountant("ldp"), _generator(seed, name), mats)
            return gw_of([mech.rectify(c) for c in codes])

        def size_d(p) -> np.ndarray:
            sizes = np.array([g.num_nodes for g in p["graphs"]], dtype=float)
            return np.abs(sizes[:, None] - sizes[None])

        def gw_a(p) -> np.ndarray:
            costs = [gw.structure_cost(g.edge_index, g.num_nodes) for g in p["graphs"]]
            return gw.pairwise_discrepancy(costs, cache_dir=cache, n_jobs=args.jobs)

        def paper_code(p, std, seed=seed) -> np.ndarray:
            acc, gen = PrivacyAccountant("ldp"), _generator(seed, f"paper{std}")
            return gw_of(draw(PaperCodeGaussian(std), acc, gen, p["raw"]))

        def end_to_end(run) -> dict:
            p = run()
            out = {"test_acc": p["gcn_acc"], "fit_s": p["fit_s"]}
            for k in ("reported_epsilon", "noise_multiplier"):
                if k in p:
                    out[k] = p[k]
            return out

        model = runs[None]
        plan = [
            ("size_only", None, {}, size_d, prep),
            ("gw_A", None, {}, gw_a, prep),
            ("gcn_end_to_end", None, {}, None, model),
            ("clear_H", None, {}, lambda p: gw_of(p["h"]), model),
            *[("ldp_H", eps, {},
               lambda p, eps=eps: released(p, MatrixMultiBit(eps), p["h"], f"ldp_H{eps}"), model)
              for eps in args.epsilons],
            ("noise_only", noise_eps, {},
             lambda p: released(p, MatrixMultiBit(noise_eps),
                                [torch.full_like(m, 0.5) for m in p["h"]], "noise_only"), model),
            # the size hidden: every matrix padded to a public n_max rows
            *[("ldp_padded", eps, {"n_max": S.GWLDP_N_MAX},
               lambda p, eps=eps: released(
                   p, MatrixMultiBit(eps, size="padded", n_max=S.GWLDP_N_MAX), p["h"],
                   f"ldp_padded{eps}"), model)
              for eps in S.GWLDP_PADDED_EPSILONS],
            *[("paper_code", None, {} if std is None else {"paper_std": std},
               lambda p, std=std: paper_code(p, std), model) for std in args.paper_stds],
            # client-level DP-FedAvg on (the federated GNN itself, and its LDP release)
            *[(row, eps, {"fedavg_epsilon": fe, "fedavg_clip": S.GWLDP_FEDAVG_CLIP}, d_of,
               runs[fe])
              for fe in args.fedavg_epsilons
              for row, eps, d_of in (
                  ("dpfedavg_end_to_end", None, None),
                  ("dpfedavg_ldp_H", noise_eps,
                   lambda p, fe=fe: released(p, MatrixMultiBit(noise_eps), p["h"],
                                             f"dpfedavg{fe}")))],
        ]  # fmt: skip
        base = {"seed": seed, **_settings(args)}
        for row, eps, extra, d_of, run in plan:
            if row not in args.rows:
                continue
            with_eps = {} if eps is None else {"epsilon": eps}
            tag = "".join(f"|{k}={v:g}" for k, v in extra.items() if k != "n_max") + (
                "" if args.graphs is None else f"|graphs={args.graphs}")
            meta = {"key": f"{row}|{'' if eps is None else eps}|{seed}{tag}", "row": row,
                    **with_eps, **extra, **base}  # fmt: skip
            if d_of is None:
                if args.protocol == "split":
                    yield meta, functools.partial(end_to_end, run)
            else:
                yield meta, functools.partial(score, row, d_of, {**with_eps, **extra}, run)


def _std(value: str) -> float | None:
    return None if value == "code" else float(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--cache", default="/tmp/gwldp-bench-cache")
    parser.add_argument("--summarize", action="store_true",
                        help="write the table of --out only (summarize.py gwldp)")
    parser.add_argument("--gnn", default="gcn", choices=("gcn", "gin"))
    parser.add_argument("--dataset", default="mutag", choices=("mutag", "proteins"))
    parser.add_argument("--protocol", default="split", choices=("split", "nested", "resplit"),
                        help="split: the clients' 7:2:1 graphs; nested: the FGW nested CV (10 "
                        "outer 90/10 splits, 10 inner folds) over all graphs; resplit: 10 "
                        "random stratified 7:2:1 splits of all graphs")
    parser.add_argument("--paper-stds", type=_std, nargs="*", default=[None],
                        help="paper_code rows: noise stds ('code': the code's 1/n, the default)")
    parser.add_argument("--fedavg-epsilons", type=float, nargs="*", default=[],
                        help="dpfedavg_* rows: DP-FedAvg budgets")
    parser.add_argument("--sample-seed", type=int, default=None,
                        help="with --graphs: one sample for every seed, drawn from this seed")
    parser.add_argument("--jobs", type=int, default=1, help="joblib workers of the GW pairs")
    parser.add_argument("--seed-start", type=int, default=0,
                        help="the first seed (split a grid over processes)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(S.GWLDP_EPSILONS))
    parser.add_argument("--rows", nargs="+", default=list(S.GWLDP_ROWS), choices=S.GWLDP_ROWS)
    parser.add_argument("--graphs", type=int, default=None,
                        help="a seeded sample of this many graphs per seed (default: all)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default: results/gwldp_accuracy[_GNN].jsonl)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    refuse_smoke_into(None, parser, args)
    if args.smoke:
        args.seeds, args.rounds = S.GWLDP_SMOKE["seeds"], S.GWLDP_SMOKE["rounds"]
        args.graphs = S.GWLDP_SMOKE["graphs"]
    out = args.out or default_out(args.gnn, args.dataset, args.protocol)
    run_and_write(cells(args, Path(args.cache)), out, "gwldp", run=not args.summarize,
                  one_thread=True)


if __name__ == "__main__":
    main()
