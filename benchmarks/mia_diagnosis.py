"""Why can a membership-inference AUC fall below 0.5? A diagnosis of one cell of
``audit_attacks.py`` (default: GAP-NDP at epsilon 1 on Swarthmore42, which gave 45.7% over 5
seeds in an earlier run: ``results/audit_attacks_mia_v1.jsonl``, in git history, e.g.
``git show 7bd1219:benchmarks/results/audit_attacks_mia_v1.jsonl``).

Per seed, the target and one shadow are fitted exactly as in ``audit_attacks.py --attack mia``
and four AUCs are recorded:

* ``target_confidence``: the target's own top posterior, members (training nodes) against
  non-members (test nodes), no attack model: does the *target* leak membership, and in
  which direction (below 0.5: its members are less confident than its non-members);
* ``shadow_confidence``: the same on the shadow and its own split: the signal the attack
  model is trained on;
* ``shadow_holdout``: the attack model trained on half of the shadow's balanced members /
  non-members and scored on the other half: what the attack learns in distribution;
* ``tstf``: the TSTF attack on the target (the benchmark's number);
* ``split_degree``, ``split_label``: the in-degree and the label as scores of the target's
  members against its non-members (no model): is the identity-keyed split random with
  respect to them.

The summary also gives the standard deviation one seed's AUC has when the scores carry no
membership signal (the Mann-Whitney null, ``sqrt((n1 + n2 + 1) / (12 n1 n2))`` for the
balanced ``n1 = n2`` non-members), against which a mean over a few seeds is read.

If the target does not leak (``target_confidence`` about 0.5 with a CI around it) and the
shadow does not either, the TSTF AUC is an attack model fitted to noise: its direction on the
target is a coin flip per seed, and a mean below 0.5 is sampling error. A target whose
members are systematically less confident would be a finding about the model (e.g. a split
that is not random with respect to the features); a TSTF AUC below 0.5 with
``target_confidence`` and ``shadow_confidence`` on the same side of 0.5 would point at the
attack. One JSON line per seed goes to ``results/mia_diagnosis.jsonl``; ``--summarize`` (or
``summarize.py diagnosis``) writes ``results/mia_diagnosis.md`` and the table in
``docs/audits.md``.

    DPGNN_DATA=../shared/datasets python benchmarks/mia_diagnosis.py --seeds 10
    python benchmarks/mia_diagnosis.py --summarize
    python benchmarks/mia_diagnosis.py --smoke --out /tmp/d.jsonl   # code path only
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import settings as S
from common import RESULTS, add_smoke_flag, quiet, run_cells, smoke_args, trainer_for

OUT = RESULTS / "mia_diagnosis.jsonl"
#: the AUCs of a row (summarize.py diagnosis prints them)
METRICS = (
    "target_confidence", "shadow_confidence", "shadow_holdout", "tstf", "split_degree",
    "split_label",
)  # fmt: skip


def _confidence_auc(post, members, nonmembers, generator) -> float:
    from lightning_dpgnn.attacks.membership import attack_auc, balanced_membership

    idx, lab = balanced_membership(members, nonmembers, generator)
    return attack_auc(post[idx].max(-1).values, lab)


def _score_auc(score, data, generator) -> float:
    from lightning_dpgnn.attacks.membership import attack_auc, balanced_membership

    idx, lab = balanced_membership(data.train_mask, data.test_mask, generator)
    return attack_auc(score[idx].float(), lab)


def _holdout_auc(post, members, nonmembers, seed: int) -> float:
    """Attack model trained on half of the balanced shadow samples, scored on the rest."""
    import torch

    from lightning_dpgnn.attacks.membership import (
        attack_auc,
        balanced_membership,
        sorted_posteriors,
        train_attack,
    )

    gen = torch.Generator().manual_seed(seed)
    idx, lab = balanced_membership(members, nonmembers, gen)
    perm = torch.randperm(len(idx), generator=gen)
    fit, test = perm[: len(perm) // 2], perm[len(perm) // 2 :]
    net = train_attack(sorted_posteriors(post[idx[fit]]), lab[fit], seed=seed)
    with torch.no_grad():
        scores = net(sorted_posteriors(post[idx[test]])).view(-1)
    return attack_auc(scores, lab[test])


def diagnose(args, seed: int) -> dict:
    """The four AUCs and the split checks of one seed (see the module docstring)."""
    import torch

    from lightning_dpgnn.attacks.membership import membership_attack
    from lightning_dpgnn.attacks.shadow import predict_posteriors, shadow_split
    from lightning_dpgnn.data import NodeDataModule
    from lightning_dpgnn.privacy.aggregation import degrees

    dm = NodeDataModule(args.dataset, seed=seed, **S.ATTACK_DATASETS[args.dataset])
    data = dm.data
    d = S.max_degree(data)
    model = S.build(args.method, args.epsilon, seed, d, {})
    trainer_for(model, **S.TRAINER).fit(model, dm)
    target = predict_posteriors(model, data)
    # the shadow exactly as node_membership_inference(repeats=1, seed=seed) draws it
    gen = torch.Generator().manual_seed(seed)
    split = shadow_split(data, gen)
    shadow = S.shadow_builder(model, args.method, args.epsilon, seed, d, {})()
    sdm = NodeDataModule.from_data(split, name="shadow", split="public")
    trainer_for(shadow, **S.TRAINER).fit(shadow, datamodule=sdm)
    spost = predict_posteriors(shadow, split)
    g = torch.Generator().manual_seed(seed)
    row = dict(
        target_confidence=_confidence_auc(target, data.train_mask, data.test_mask, g),
        shadow_confidence=_confidence_auc(spost, split.train_mask, split.test_mask, g),
        shadow_holdout=_holdout_auc(spost, split.train_mask, split.test_mask, seed),
        tstf=membership_attack(
            spost, split.train_mask, split.test_mask, target, data.train_mask,
            data.test_mask, seed=seed,
        ),
        split_degree=_score_auc(degrees(data.edge_index, data.num_nodes)[0], data, g),
        split_label=_score_auc(data.y, data, g),
        nonmembers=int(data.test_mask.sum()),
        target_top_mean=float(target.max(-1).values.mean()),
    )  # fmt: skip
    print(seed, {k: round(row[k], 3) for k in METRICS}, flush=True)
    return row


def run(args) -> int:
    """One row per seed through ``common.run_cells`` (in process)."""
    quiet()
    import torch

    torch.set_num_threads(1)
    cells = (
        (dict(key=f"{args.dataset}|{args.method}|{args.epsilon}|{seed}", dataset=args.dataset,
              method=args.method, target_epsilon=args.epsilon, seed=seed),
         partial(diagnose, args, seed))
        for seed in range(args.seeds)
    )  # fmt: skip
    return run_cells(cells, args.out, measured=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--dataset", default="facebook100/Swarthmore42")
    p.add_argument("--method", default="GAP-NDP")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true", help="= summarize.py diagnosis")
    add_smoke_flag(p)
    args = p.parse_args()
    if args.summarize:
        import summarize

        summarize.write("diagnosis", args.out)
        return
    smoke_args(args)
    sys.exit(run(args) > 0)


if __name__ == "__main__":
    main()
