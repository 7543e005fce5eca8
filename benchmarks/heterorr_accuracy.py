"""HeteroRR downstream: GCN test accuracy on released graphs and features, and link stealing on
the private edges (docs/heterorr.md).

Parts (``--parts``; each cell is one seed of one setting, ``common.run_cells`` in process):

* ``edges`` — Cora, rho = 0.3 private edges (the authors' script), eps_e in
  {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2}: ``EdgeRR`` (the ``HeteroRR`` model, edges only) against the
  non-private ``GCN``, ``public-only`` (the private edges dropped: what EdgeRR must beat to be
  worth its budget), ``EdgeRR-paper-code`` (the authors' chain: NOT differentially private,
  for the side-by-side figure), ``LapGraph`` and ``EdgeRand`` (every edge private, as in the
  paper; a GCN on their release);
* ``graphs`` — musae-facebook and Facebook100 Caltech36, rho in {0.05, 0.1, 0.2}, eps_e = 1
  only (CPU): ``EdgeRR``, ``GCN``, ``public-only``;
* ``features`` — Cora with public edges: FeatureRR, multi-bit, Duchi and Piecewise at equal
  eps_f in {1, 8} per node (``HeteroRR`` features only), and FeatureRR after a public PCA to 64
  dimensions fitted on the public nodes (``feature-rr+pca64``, eps_f = 8).

Link stealing rides on the ``edges`` cells of the non-private GCN, of the GCN on the public
edges alone (what the public structure alone gives away) and of EdgeRR at eps_e in {0.1, 1}:
LinkTeller's influence attack (``attacks.link_stealing``) on 150 private edges against 150
non-edges, querying the deployed model (the GCN on the graph it was trained on:
the released one for EdgeRR) with features of the attacker's choice.

Every GCN: 2 layers, 128 hidden, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 100 full-batch
epochs, the last epoch tested; 75/10/15 split by node identity (the split seed is the row's
seed). Rows go to ``results/heterorr_accuracy.jsonl``; the tables (mean and 95% bootstrap CI
over seeds) to ``results/heterorr_accuracy.md`` and docs/heterorr.md (``HETERORR-ACCURACY``;
``--summarize``: the tables only).

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets nice -n 10 \\
        python benchmarks/heterorr_accuracy.py --seeds 10 --parts edges features graphs

``--smoke`` (give ``--out``): the embedded csbm graph, one seed, one epoch, a 1000 n-step chain.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from pathlib import Path

import settings as S
from common import RESULTS, add_smoke_flag, heterorr_release, refuse_smoke_into, run_and_write

OUT = RESULTS / "heterorr_accuracy.jsonl"
PARTS = S.HETERORR_PARTS
EDGE_METHODS = S.HETERORR_EDGE_METHODS


def _datamodule(name: str, transform=None):
    from lightning_dpgnn.data import NodeDataModule

    return NodeDataModule(name, transform=transform,
                          **S.HETERORR_GRAPHS.get(name, S.SMOKE_DATA))


def _released(method: str, eps, rho, seed: int, steps_per_node: float):
    """A data transform: the graph's edges replaced by ``method``'s release."""
    from torch_geometric.transforms import BaseTransform

    class Released(BaseTransform):
        def forward(self, data):
            data = data.clone()
            self.original = data.edge_index  # the true edges (the attack's targets)
            data.edge_index, self.accountant = heterorr_release(
                method, data.edge_index, int(data.num_nodes), eps, rho, seed, steps_per_node)
            return data

    return Released()


def _fit(model, dm, epochs: int) -> dict:
    from common import quiet_trainer

    t0 = time.time()
    trainer = quiet_trainer(max_epochs=epochs)
    trainer.fit(model, dm)
    test = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    val = trainer.validate(model, dm, verbose=False)[0]["val/acc"]
    return {"test_acc": float(test), "val_acc": float(val), "fit_s": round(time.time() - t0, 1)}


def _heterorr(seed: int, args, **kwargs):
    from lightning_dpgnn import HeteroRR

    return HeteroRR(**S.HETERORR_GCN, seed=seed, steps_per_node=args.steps_per_node, **kwargs)


def edge_cell(dataset: str, method: str, eps, rho, seed: int, args, attack: bool = False
              ) -> dict:
    """One GCN on one edge release (EdgeRR through the HeteroRR model itself); ``attack``:
    also the influence attack's AUC on the private edges (:func:`attack_auc`)."""
    import torch

    from lightning_dpgnn import GNN

    torch.set_num_threads(1)
    if method.startswith("EdgeRR"):  # the sound release, or the authors' (paper-code, NOT DP)
        mode = "paper-code" if method == "EdgeRR-paper-code" else "dp"
        model = _heterorr(seed, args, epsilon=eps, rho=rho, split_seed=seed, mode=mode)
        dm = _datamodule(dataset)
        out = _fit(model, dm, args.epochs)
        report = model.privacy_spent()
        extra = {"spent_epsilon": report.epsilon, "mcmc_s": round(model.edgerr.last_fit.seconds, 1),
                 "released_edges": int(model.releases.get("edges").size(1)) // 2}
    else:
        release = _released(method, eps, rho, seed, args.steps_per_node)
        dm = _datamodule(dataset, release)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = GNN(conv="gcn", **S.HETERORR_GCN)
        out = _fit(model, dm, args.epochs)
        extra = {"spent_epsilon": release.accountant.epsilon(),
                 "released_edges": int(dm.data.edge_index.size(1)) // 2}
    if attack:
        graph = dm.data
        served, truth = graph.edge_index, graph.edge_index
        if method.startswith("EdgeRR"):
            served = model.releases.get("edges")
        elif method != "GCN":
            truth = release.original
        extra["attack_auc"] = attack_auc(model, graph.x, truth, served, S.HETERORR_CORA_RHO,
                                         seed)
    print(f"{dataset} seed {seed} {method} eps={eps} rho={rho} acc={out['test_acc']:.3f} "
          f"{extra.get('attack_auc', '')}", flush=True)
    return {**out, **extra}


def feature_cell(mechanism: str, eps: float, seed: int, args) -> dict:
    import torch

    torch.set_num_threads(1)
    name, _, pca = mechanism.partition("+pca")
    model = _heterorr(seed, args, epsilon=math.inf, x_epsilon=eps, feature_mechanism=name,
                      feature_dim=int(pca) if pca else None,
                      public_fraction=S.HETERORR_PUBLIC_FRACTION, public_seed=seed)
    out = _fit(model, _datamodule(args.feature_dataset), args.epochs)
    print(f"features seed {seed} {mechanism} eps_f={eps} acc={out['test_acc']:.3f}", flush=True)
    return {**out, "spent_epsilon": model.privacy_spent().epsilon}


def attack_auc(model, x, edge_index, served, rho: float, seed: int) -> float:
    """LinkTeller's influence attack on the private edges (``edge_split(rho, seed)``) of the
    true graph ``edge_index`` against as many non-edges: the attacker queries the deployed
    model, which runs on the ``served`` edges, with features of its choice (around ``x``)."""
    import torch

    from lightning_dpgnn.attacks.link_stealing import influence_attack
    from lightning_dpgnn.privacy.hrg import edge_split

    private = edge_index[:, edge_split(edge_index, rho, seed)]
    model.eval()
    return float(influence_attack(lambda f: model(f, served).softmax(-1), x.float(),
                                  private, pairs=150,
                                  generator=torch.Generator().manual_seed(seed)))


def cells(args):
    for seed in range(args.seeds):
        base = {"seed": seed, "epochs": args.epochs, "steps_per_node": args.steps_per_node}
        if "edges" in args.parts:
            ds, rho = args.edge_dataset, S.HETERORR_CORA_RHO
            for method in args.methods:
                for eps in [None] if method in ("GCN", "public-only") else args.epsilons:
                    r = None if method in ("GCN", "LapGraph", "EdgeRand") else rho
                    attack = method in ("GCN", "public-only") or (
                        method.startswith("EdgeRR") and eps in args.link_epsilons)
                    meta = {"key": f"edges|{ds}|{method}|{eps}|{r}|{seed}", "part": "edges",
                            "dataset": ds, "method": method, "epsilon": eps, "rho": r, **base}
                    yield meta, functools.partial(edge_cell, ds, method, eps, r, seed, args,
                                                  attack)
        if "graphs" in args.parts:
            for ds in args.graphs:
                for method in ("GCN", "public-only", "EdgeRR"):
                    for rho in [None] if method == "GCN" else args.graph_rhos:
                        eps = S.HETERORR_GRAPH_EPSILON if method == "EdgeRR" else None
                        meta = {"key": f"graphs|{ds}|{method}|{eps}|{rho}|{seed}",
                                "part": "graphs", "dataset": ds, "method": method,
                                "epsilon": eps, "rho": rho, **base}
                        yield meta, functools.partial(edge_cell, ds, method, eps, rho, seed,
                                                      args)
        if "features" in args.parts:
            for eps in args.feature_epsilons:
                for mech in args.mechanisms:
                    if "+pca" in mech and eps != max(args.feature_epsilons):
                        continue
                    meta = {"key": f"features|{mech}|{eps}|{seed}", "part": "features",
                            "dataset": args.feature_dataset, "method": mech, "epsilon": eps,
                            **base}
                    yield meta, functools.partial(feature_cell, mech, eps, seed, args)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    p.add_argument("--methods", nargs="+", default=list(EDGE_METHODS), choices=EDGE_METHODS)
    p.add_argument("--epsilons", nargs="+", type=float, default=list(S.HETERORR_CORA_EPSILONS))
    p.add_argument("--graphs", nargs="+", default=["facebook100/Caltech36", "musae-facebook"])
    p.add_argument("--graph-rhos", nargs="+", type=float, default=list(S.HETERORR_GRAPH_RHOS))
    p.add_argument("--feature-epsilons", nargs="+", type=float,
                   default=list(S.HETERORR_FEATURE_EPSILONS))
    p.add_argument("--mechanisms", nargs="+",
                   default=[*S.HETERORR_FEATURE_MECHANISMS, "feature-rr+pca64"],
                   help="a '+pcaD' variant runs at the largest feature epsilon only")
    p.add_argument("--link-epsilons", nargs="+", type=float,
                   default=list(S.HETERORR_LINK_EPSILONS))
    p.add_argument("--epochs", type=int, default=S.HETERORR_EPOCHS)
    p.add_argument("--steps-per-node", type=float, default=1000.0)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true", help="write the tables of --out only")
    add_smoke_flag(p)
    args = p.parse_args()
    args.edge_dataset = args.feature_dataset = "cora"
    refuse_smoke_into(OUT, p, args)
    if args.smoke:
        args.seeds = 1
        args.edge_dataset = args.feature_dataset = S.SMOKE_DATASET
        args.graphs = [S.SMOKE_DATASET]
        args.epsilons, args.graph_rhos = args.epsilons[:1], args.graph_rhos[:1]
        args.feature_epsilons = args.feature_epsilons[:1]
        args.link_epsilons = args.link_epsilons[:1]
        args.mechanisms = ["feature-rr", "multibit", "feature-rr+pca4"]
        args.epochs = S.HETERORR_SMOKE["epochs"]
        args.steps_per_node = S.HETERORR_SMOKE["steps_per_node"]
    run_and_write(cells(args), args.out, "heterorr_accuracy", run=not args.summarize,
                  doc=not args.smoke)


if __name__ == "__main__":
    main()
