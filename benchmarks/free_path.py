"""Issue 40 study: can an edge-level private input be an *addition* to the free fallback?

At edge level the features and every label are public; only the edges are private. The free
fallback is the library's MLP on the features (``settings.MLP``, the row the issue compares
with). This script measures one candidate addition, built from the library's own mechanism and
calibration (not re-implemented):

* ``q``: the MLP's class probabilities for every node, with the one-hot label in place of a
  training node's prediction (both public at edge level), rows L2-normalized;
* the release: one Gaussian sum aggregation ``A^T q + N(0, sigma^2)`` (``GaussianAggregation``,
  one undirected edge, sensitivity sqrt(2)), the whole budget, ``sigma`` calibrated by
  ``calibrate_noise_multiplier`` to the target epsilon at ``delta="auto"``; the draw goes
  through ``privacy.mechanism.draw`` onto a ``PrivacyAccountant``, whose epsilon the row records;
* the prediction: ``log p_MLP + beta * votes``, ``beta`` chosen on the validation labels (public
  at edge level) from a fixed grid that contains 0, so on validation the addition can only
  match or beat the fallback.

Rows (``results/free_path.jsonl``, one per dataset, row, epsilon, seed): ``MLP`` (the free
fallback), ``MLP+votes`` at every epsilon, with the chosen ``beta``. Same split protocol as
``poindp_accuracy.py`` (10/10/80 keyed on node identity by the seed), so the GAP, ProGAP and
PoinDP rows of ``results/poindp_accuracy.md`` sit beside these on the same splits.

    OMP_NUM_THREADS=1 DPGNN_DATA=../shared/datasets python benchmarks/free_path.py --seeds 10
"""

from __future__ import annotations

import argparse
from pathlib import Path

import settings as S
from common import RESULTS, append, bootstrap_ci, code_revision, command_line, trainer_for

OUT = RESULTS / "free_path.jsonl"
BETAS = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)


def fallback_log_probs(dm, seed: int):
    """The free fallback's log-probabilities of every node (the library's MLP, no privacy)."""
    import torch

    from lightning_dpgnn import MLP

    model = MLP(privacy="none", seed=seed, **S.MLP)
    trainer_for(model, max_epochs=100).fit(model, dm)
    probs = trainer_for(model).predict(model, dm)[0]
    return torch.log(probs.clamp_min(1e-12))


def votes(data, log_p, epsilon: float, seed: int):
    """One recorded draw of ``A^T normalize_rows(q) + noise`` (see the module docstring) and
    the accountant that recorded it."""
    import torch
    import torch.nn.functional as F

    from lightning_dpgnn.privacy import PrivacyAccountant
    from lightning_dpgnn.privacy.accountant import resolve_delta
    from lightning_dpgnn.privacy.aggregation import (
        GaussianAggregation,
        normalize_rows,
        sum_aggregate,
    )
    from lightning_dpgnn.privacy.calibration import calibrate_noise_multiplier, gaussian_plan
    from lightning_dpgnn.privacy.mechanism import draw

    n, ei = data.num_nodes, data.edge_index
    delta = resolve_delta("auto", ei.size(1) // 2)  # one undirected edge is the unit
    unit = GaussianAggregation(1.0, edge_unit="undirected", name="votes")
    z = calibrate_noise_multiplier(
        gaussian_plan(1, sensitivity=unit.sensitivity, delta=delta), epsilon
    )
    mechanism = GaussianAggregation(z, edge_unit="undirected", name="votes")
    q = log_p.exp()
    q[data.train_mask] = F.one_hot(data.y[data.train_mask], q.size(1)).to(q.dtype)
    accountant = PrivacyAccountant(level="edge", delta=delta)
    agg = sum_aggregate(normalize_rows(q), ei, n)
    gen = torch.Generator().manual_seed(10_000 + seed)
    return draw(mechanism, accountant, gen, agg), accountant, delta


def accuracy(scores, y, mask) -> float:
    return float((scores[mask].argmax(1) == y[mask]).float().mean())


def run(dataset: str, seed: int, epsilons, out: Path) -> None:
    from lightning_dpgnn.data import NodeDataModule

    dm = NodeDataModule(dataset, seed=seed, **S.POINDP_DATASETS[dataset])
    dm.setup()
    data = dm.data
    log_p = fallback_log_probs(dm, seed)
    base = dict(dataset=dataset, seed=seed, split=list(S.POINDP_DATASETS[dataset]["split"]),
                code=code_revision(), command=command_line())  # fmt: skip
    append(out, dict(base, row="MLP", epsilon=None, test_acc=accuracy(log_p, data.y,
                                                                       data.test_mask)))
    for eps in epsilons:
        v, accountant, delta = votes(data, log_p, eps, seed)
        val = [accuracy(log_p + b * v, data.y, data.val_mask) for b in BETAS]
        beta = BETAS[max(range(len(BETAS)), key=lambda i: (val[i], -i))]
        append(out, dict(base, row="MLP+votes", target_epsilon=eps, beta=beta,
                         epsilon=accountant.epsilon(delta), delta=delta,
                         test_acc=accuracy(log_p + beta * v, data.y, data.test_mask)))


def summarize(out: Path) -> str:
    import json

    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["dataset"], r["row"], r.get("target_epsilon")), []).append(
            100 * r["test_acc"]
        )
    lines = ["| dataset | row | epsilon | seeds | accuracy [95% CI] |", "|---|---|---|---|---|"]
    for (ds, row, eps), v in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                    kv[0][2] or 0)):
        m, lo, hi = bootstrap_ci(v)
        lines.append(f"| {ds} | {row} | {eps if eps is not None else '-'} | {len(v)} | "
                     f"{m:.1f} [{lo:.1f}, {hi:.1f}] |")
    return "\n".join(lines)


def votes_table(votes: Path, baseline: Path, free: Path) -> str:
    """``results/votes.md``'s table: per dataset and epsilon, the free fallback (MLP), the
    MLP plus votes (this script), and each method without and with ``votes=True``
    (``poindp_accuracy.py`` rows), each mean [95% CI] over seeds, marked ``>`` when its CI
    lies above the fallback's, ``<`` below, ``=`` when they overlap."""
    import json

    def load(path):
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    acc: dict = {}
    # the fallback's rows from ``baseline`` only (``free``'s are the same fits again)
    rows = load(baseline) + load(votes) + [r for r in load(free) if r["row"] != "MLP"]
    for r in rows:
        eps = r.get("target_epsilon")
        acc.setdefault((r["dataset"], r["row"], eps), []).append(100 * r["test_acc"])
    cols = ["MLP+votes", "GAP", "GAP+votes", "PoinDP", "PoinDP+votes", "ProGAP", "ProGAP+votes"]
    lines = ["| dataset | epsilon | MLP (fallback) | " + " | ".join(cols) + " |",
             "|---" * (3 + len(cols)) + "|"]
    for ds in sorted({k[0] for k in acc}):
        if (ds, "MLP", None) not in acc:
            continue
        m, flo, fhi = bootstrap_ci(acc[(ds, "MLP", None)])
        epsilons = sorted({k[2] for k in acc if k[0] == ds and k[2] is not None})
        for eps in epsilons:
            cells = []
            for c in cols:
                v = acc.get((ds, c, eps))
                if not v:
                    cells.append("")
                    continue
                mean, lo, hi = bootstrap_ci(v)
                mark = ">" if lo > fhi else "<" if hi < flo else "="
                cells.append(f"{mark} {mean:.1f} [{lo:.1f}, {hi:.1f}] ({len(v)})")
            lines.append(f"| {ds} | {eps:g} | {m:.1f} [{flo:.1f}, {fhi:.1f}] | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=list(S.POINDP_DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(S.POINDP_EPSILONS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for seed in range(args.seeds):
        for ds in args.datasets:
            run(ds, seed, args.epsilons, args.out)
    table = summarize(args.out)
    args.out.with_suffix(".md").write_text(
        "# Free fallback plus a private addition (issue 40 study)\n\nGenerated by `"
        + command_line() + "` (see the script's docstring for the design).\n\n" + table + "\n"
    )
    print(table)


if __name__ == "__main__":
    main()
