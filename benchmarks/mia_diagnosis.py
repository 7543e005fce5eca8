"""Why can a membership-inference AUC fall below 0.5? A diagnosis of one cell of
``audit_attacks.py`` (default: GAP-NDP at epsilon 1 on Swarthmore42, which gave 45.7% over 5
seeds in an earlier run, ``results/audit_attacks_mia_v1.jsonl``).

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
attack. One JSON line per seed goes to ``results/mia_diagnosis.jsonl``; ``--summarize``
writes ``results/mia_diagnosis.md``.

    DPGNN_DATA=../shared/datasets python benchmarks/mia_diagnosis.py --seeds 10
    python benchmarks/mia_diagnosis.py --summarize
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from pathlib import Path

from audit_attacks import DATASETS, DOCS, _max_degree, build, shadow_builder
from common import (
    RESULTS,
    append,
    bootstrap_ci,
    code_revision,
    command_line,
    done_keys,
    load_rows,
    quiet,
    quiet_trainer,
    splice,
)

OUT = RESULTS / "mia_diagnosis.jsonl"
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


def run(args) -> None:
    quiet()
    import torch

    from lightning_dpgnn.attacks.membership import membership_attack
    from lightning_dpgnn.attacks.shadow import predict_posteriors, shadow_split
    from lightning_dpgnn.data import NodeDataModule
    from lightning_dpgnn.privacy.aggregation import degrees

    torch.set_num_threads(1)
    done, revision = done_keys(args.out), code_revision()
    for seed in range(args.seeds):
        key = f"{args.dataset}|{args.method}|{args.epsilon}|{seed}"
        if key in done:
            continue
        t0 = time.time()
        dm = NodeDataModule(args.dataset, seed=seed, **DATASETS[args.dataset])
        data = dm.data
        d = _max_degree(data)
        model = build(args.method, args.epsilon, seed, d, {})
        quiet_trainer(max_epochs=100).fit(model, dm)
        target = predict_posteriors(model, data)
        # the shadow exactly as node_membership_inference(repeats=1, seed=seed) draws it
        gen = torch.Generator().manual_seed(seed)
        split = shadow_split(data, gen)
        shadow = shadow_builder(model, args.method, args.epsilon, seed, d, {})()
        sdm = NodeDataModule.from_data(split, name="shadow", split="public")
        quiet_trainer(max_epochs=100).fit(shadow, datamodule=sdm)
        spost = predict_posteriors(shadow, split)
        g = torch.Generator().manual_seed(seed)
        row = dict(
            key=key, dataset=args.dataset, method=args.method, target_epsilon=args.epsilon,
            seed=seed,
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
            seconds=time.time() - t0, revision=revision, command=command_line(),
        )  # fmt: skip
        append(args.out, row)
        print(key, {k: round(row[k], 3) for k in METRICS}, flush=True)


def summarize(path: Path = OUT) -> None:
    rows = load_rows(path)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["target_epsilon"])].append(r)
    lines = [
        "# Membership inference below chance: a diagnosis",
        "",
        "AUC % (0.5: chance), mean and 95% bootstrap CI over seeds; see "
        "`benchmarks/mia_diagnosis.py` for what each column measures. Commands:",
        "",
        *[f"- `{c}`" for c in sorted({r["command"] for r in rows})],
        "",
        "| dataset | method | eps | " + " | ".join(METRICS)
        + " | seeds below 0.5 (tstf) | null SD of one seed's AUC |",
        "|---|---|---|" + "---|" * (len(METRICS) + 2),
    ]
    for (ds, method, eps), rs in sorted(groups.items()):
        cells = []
        for m in METRICS:
            mean, lo, hi = bootstrap_ci([r[m] for r in rs])
            cells.append(f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]")
        below = sum(r["tstf"] < 0.5 for r in rs)
        n = sum(r["nonmembers"] for r in rs) / len(rs)
        null_sd = math.sqrt((2 * n + 1) / (12 * n * n))
        eps_s = "inf" if math.isinf(eps) else f"{eps:g}"
        lines.append(
            f"| {ds} | {method} | {eps_s} | " + " | ".join(cells)
            + f" | {below} / {len(rs)} | {100 * null_sd:.1f} ({n:.0f} per class) |"
        )  # fmt: skip
        lines += ["", "Per seed (AUC %):", "", "| seed | " + " | ".join(METRICS) + " |",
                  "|---|" + "---|" * len(METRICS)]  # fmt: skip
        for r in sorted(rs, key=lambda r: r["seed"]):
            lines.append(f"| {r['seed']} | " + " | ".join(f"{100 * r[m]:.1f}" for m in METRICS)
                         + " |")  # fmt: skip
    md = "\n".join(lines)
    (RESULTS / "mia_diagnosis.md").write_text(md + "\n")
    table = md[md.index("| dataset") :]
    splice(DOCS / "audits.md", "<!-- DIAGNOSIS:BEGIN -->", "<!-- DIAGNOSIS:END -->",
           "Generated by `python benchmarks/mia_diagnosis.py --summarize` from "
           "`benchmarks/results/mia_diagnosis.jsonl` (commands in `results/mia_diagnosis.md`):"
           f"\n\n{table}")  # fmt: skip
    print(md)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--dataset", default="facebook100/Swarthmore42")
    p.add_argument("--method", default="GAP-NDP")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summarize", action="store_true")
    args = p.parse_args()
    summarize(args.out) if args.summarize else run(args)


if __name__ == "__main__":
    main()
