"""PoinDP on Cora and CiteSeer beside the paper's Table 1 and Table 2 (docs/poindp.md).

Per seed and dataset (split 10/10/80 keyed on node identity by the seed; ``settings.py``
``POINDP_*``), one cell per row:

* ``GCN`` (non-private, the library's ``GNN(conv="gcn")``, the code's Adam settings, 200 epochs)
  and ``MLP`` (non-private, reads no edge: the link-stealing floor of feature homophily);
* ``paper-code``: ``PoinDP(mode="paper-code")``, the authors' released code (NOT differentially
  private: bounded logit noise every epoch and at test, never accounted);
* ``PoinDP``: the sound PoinDP, edge level (one undirected edge), at every epsilon of the sweep;
  ``PoinDP-inf``: the same model without noise;
* ``GAP`` (edge level, the library's defaults: 2 hops, label counts) at every epsilon, and
  ``ProGAP`` at epsilon 1, on the same split and unit;
* ``GAP+votes``, ``PoinDP+votes``, ``ProGAP+votes``: the same models with ``votes=True``
  (issue 40: the edges as an addition to the free model, ``methods/votes.py``) at every
  epsilon;
* Table 2's ablations at epsilon 1: ``w/o inter`` (beta 0: directions only), ``w/o intra``
  (beta 1: radii only), ``w/o allocation`` (beta 0.5 instead of the variance-optimal share).

Each row holds test accuracy, weighted-F1 (``f1_score(y, pred)``), macro-F1, the paper's swapped
"W-F1" (``f1_score(pred, y)``, parity only), the reported epsilon and delta, and the AUC of the
library's link-stealing attack (posterior similarity, ``settings.POINDP_LINK``) on the fitted
model's test-time posteriors. Rows go to ``results/poindp_accuracy.jsonl``; the tables (mean and
95% bootstrap CI over seeds) are ``summarize.py poindp`` (also written after a run;
``--summarize``: the tables only). Single-threaded, low priority:

    OMP_NUM_THREADS=1 DPGNN_DATA=/abs/path/shared/datasets nice -n 10 \\
        python benchmarks/poindp_accuracy.py --seeds 10
    python benchmarks/summarize.py poindp

``--smoke`` (give ``--out``): the embedded csbm graph, one seed, 2 epochs per stage.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import settings as S
from common import (
    RESULTS,
    add_smoke_flag,
    refuse_smoke_into,
    report_fields,
    run_and_write,
    trainer_for,
)

OUT = RESULTS / "poindp_accuracy.jsonl"


def rows(epsilons, epochs: int | None) -> list[tuple[str, float | None, dict]]:
    """``(row, epsilon, builder kwargs)`` in table order; ``epochs`` shortens every fit
    (``--smoke``)."""
    from lightning_dpgnn import GAP, GNN, MLP, PoinDP, ProGAP

    short = {} if epochs is None else dict(encoder_epochs=epochs, classifier_epochs=epochs)
    paper = dict(S.POINDP_PAPER_TRAINING)
    sound = {**S.POINDP_SOUND, **short}
    gap = {**S.GAP_COMMON, **S.GAP_EDGE, **short}
    progap = {**S.PROGAP_COMMON, **S.PROGAP_EDGE,
              **({} if epochs is None else dict(epochs_per_stage=epochs))}  # fmt: skip
    out = [
        ("GCN", None, dict(cls=GNN, conv="gcn", epochs=epochs or 200, **paper)),
        ("MLP", None, dict(cls=MLP, privacy="none", epochs=epochs or 100, **S.MLP)),
        ("paper-code", None, dict(cls=PoinDP, mode="paper-code", paper_epochs=epochs or 200,
                                  **paper)),
        ("PoinDP-inf", None, dict(cls=PoinDP, privacy="none", **sound)),
        *[("PoinDP", e, dict(cls=PoinDP, epsilon=e, **sound)) for e in epsilons],
        *[(name, 1.0, dict(cls=PoinDP, epsilon=1.0, beta=b, **sound))
          for name, b in S.POINDP_ABLATIONS.items()],
        *[("GAP", e, dict(cls=GAP, privacy="edge", epsilon=e, edge_unit="undirected", **gap))
          for e in epsilons],
        ("ProGAP", 1.0, dict(cls=ProGAP, privacy="edge", epsilon=1.0, **progap)),
        # issue 40: the votes, the edges as an addition to the free model (methods/votes.py)
        *[(f"{cls.__name__}+votes", e, dict(cls=cls, privacy="edge", epsilon=e, votes=True,
                                             **kw))
          for cls, kw in ((GAP, gap), (PoinDP, sound), (ProGAP, progap)) for e in epsilons],
    ]
    return out


def run(row: str, kwargs: dict, seed: int, dm) -> dict:
    import torch

    from lightning_dpgnn.attacks.link_stealing import posterior_similarity_attack
    from lightning_dpgnn.methods.poindp import classification_scores

    kwargs = dict(kwargs)
    cls, epochs = kwargs.pop("cls"), kwargs.pop("epochs", None)
    if cls.__name__ != "GNN":
        kwargs["seed"] = seed
    else:  # GNN takes no seed: its weights from the global generator, seeded here
        torch.manual_seed(seed)
    model = cls(**kwargs)
    trainer = trainer_for(model, max_epochs=epochs or 100)
    trainer.fit(model, dm)
    probs = trainer.predict(model, dm)[0]
    data = dm.data
    mask = data.test_mask
    scores = classification_scores(probs[mask], data.y[mask])
    gen = torch.Generator().manual_seed(seed)
    aucs = [posterior_similarity_attack(probs, data.edge_index, generator=gen,
                                        pairs=S.POINDP_LINK["pairs"])
            for _ in range(S.POINDP_LINK["repeats"])]  # fmt: skip
    report = model.privacy_spent()
    return {**scores, "test_acc": scores["acc"], "link_auc": float(sum(aucs) / len(aucs)),
            **report_fields(report), "level": report.level,
            "noise_multiplier": getattr(model, "noise_multiplier", None),
            "beta": getattr(model, "beta", None)}  # fmt: skip


def cells(args):
    from lightning_dpgnn.data import NodeDataModule

    plan = rows(args.epsilons, args.epochs)
    for seed in range(args.seeds):
        for name in args.datasets:
            dm = NodeDataModule(name, seed=seed, **args.data[name])
            dm.setup()
            for row, eps, kwargs in plan:
                if args.rows and row not in args.rows:
                    continue
                meta = {"key": f"{name}|{row}|{eps}|{seed}", "dataset": name, "row": row,
                        "target_epsilon": eps, "seed": seed,
                        "split": list(args.data[name]["split"])}
                yield meta, (lambda row=row, kw=kwargs, seed=seed, dm=dm: run(row, kw, seed, dm))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=list(S.POINDP_DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(S.POINDP_EPSILONS))
    parser.add_argument("--rows", nargs="*", default=None, help="subset of rows, e.g. PoinDP GAP")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--summarize", action="store_true", help="the tables of --out only")
    add_smoke_flag(parser)
    args = parser.parse_args()
    args.data, args.epochs = dict(S.POINDP_DATASETS), None
    refuse_smoke_into(OUT, parser, args)
    if args.smoke:
        args.seeds, args.epochs = 1, S.POINDP_SMOKE["epochs"]
        args.datasets = [S.SMOKE_DATASET]
        args.data = {S.SMOKE_DATASET: dict(S.SMOKE_DATA, split=(0.1, 0.1, 0.8))}
        args.epsilons = args.epsilons[:1]
    run_and_write(cells(args), args.out, "poindp", run=not args.summarize,
                  one_thread=True)


if __name__ == "__main__":
    main()
