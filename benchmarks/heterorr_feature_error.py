"""HeteroRR supplement Fig. 10, offline: expected error E|y - x| against eps_f for FeatureRR
and the LDP baselines (Duchi, Piecewise, Hybrid, Three-Outputs, PM-SUB, Laplace, analytic
Gaussian at delta 1e-5, LPGNN's multi-bit).

Every mechanism gets the same per-node budget ``eps_f`` for a row of ``d`` features in [0, 1]:
FeatureRR gives feature i ``eps_f * theta_i`` (k = 32 bins; theta uniform, or the skewed public
``theta_i ~ 0.75^i``), the coordinate-wise baselines ``eps_f / d`` per feature (sequential
composition), multi-bit samples ``m*`` of the ``d`` features (eq. 3.19), the analytic Gaussian
is calibrated to (eps_f, 1e-5) for the row's L2 sensitivity ``sqrt(d)``. The metric is the
expected absolute error of one feature, ``E|y_i - x_i|``, averaged over the features and over
inputs ``x_i ~ U[0, 1]``:

* ``analytic``: every mechanism's exact ``expected_error(x)`` (closed forms; FeatureRR and the
  discrete ones by exact sums), averaged over 1,000 midpoints of [0, 1];
* ``mc``: a Monte-Carlo check, 10 seeds x 20,000 rows with ``x ~ U[0, 1]^d`` (stratified: one
  draw in each of 20,000 equal strata per feature), mean and 95% bootstrap CI over seeds
  (``common.bootstrap_ci``); ``analytic_in_ci`` says whether they agree. Events rarer than
  about one in 10^5 draws are invisible to it: at eps_c >= 32 the outer pieces of Piecewise,
  Hybrid and PM-SUB (mass ``e^{-eps_c/2}`` or less) carry about half of their tiny error.

FeatureRR's reports are bin centres inside [0, 1] (biased, bounded error); the baselines are
unbiased with unbounded outputs. Rows go to ``results/heterorr_feature_error.jsonl`` (a rerun
skips done cells); the table (``.md``), the plot (``.png``, copied to docs/img/) and
docs/heterorr.md's FEATURE-ERROR block are written from the rows.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/heterorr_feature_error.py
    python benchmarks/heterorr_feature_error.py --summary     # table, plot, docs from the rows
    # smoke: python benchmarks/heterorr_feature_error.py --smoke --out /tmp/f.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

import settings as S
from common import RESULTS, bootstrap_ci, quiet, run_cells

OUT = RESULTS / "heterorr_feature_error.jsonl"
EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
DIMS = [1, 16]
K = 32
DELTA = 1e-5
GRID = 1000
MC_ROWS = 20_000
SEEDS = 10
MECHANISMS = S.HETERORR_ERROR_MECHANISMS


def build(name: str, eps: float, d: int):
    from lightning_dpgnn.privacy import feature_rr as F
    from lightning_dpgnn.privacy import ldp as L
    from lightning_dpgnn.privacy import ldp_numeric as N

    return {
        "FeatureRR (uniform theta)": lambda: F.FeatureRR(eps, None, k=K),
        "FeatureRR (skewed theta)": lambda: F.FeatureRR(eps, S.skewed_theta(d), k=K),
        "Duchi": lambda: L.Duchi(eps),
        "Piecewise": lambda: L.Piecewise(eps),
        "Hybrid": lambda: N.Hybrid(eps),
        "Three-Outputs": lambda: N.ThreeOutputs(eps),
        "PM-SUB": lambda: N.PMSub(eps),
        "Laplace": lambda: L.Laplace(eps),
        "Gaussian": lambda: L.AnalyticGaussian(eps, DELTA),
        "Multi-bit (LPGNN)": lambda: L.MultiBit(eps),
    }[name]()


def measure(name: str, eps: float, d: int, seeds: int, rows: int) -> dict:
    """Analytic error (exact per input, averaged over the grid) and the Monte-Carlo check."""
    import torch

    mech = build(name, eps, d)
    mid = (torch.arange(GRID, dtype=torch.float64) + 0.5) / GRID
    per_feature = mech.expected_error(mid[:, None].expand(GRID, d).contiguous()).mean(0)
    analytic = float(per_feature.mean())
    mc = []
    for seed in range(seeds):
        gen = torch.Generator().manual_seed(seed)
        # stratified x ~ U[0, 1]: one draw in each of ``rows`` equal strata per feature
        strata = torch.argsort(torch.rand(rows, d, generator=gen), dim=0).to(torch.float64)
        x = (strata + torch.rand(rows, d, generator=gen, dtype=torch.float64)) / rows
        mc.append(float((mech.estimate(mech.sample(x, gen)) - x).abs().mean()))
    mean, lo, hi = bootstrap_ci(mc)
    return dict(
        analytic=analytic,
        analytic_by_feature=[round(float(v), 6) for v in per_feature],
        mc_mean=mean,
        mc_ci95=[lo, hi],
        mc_per_seed=mc,
        analytic_in_ci=bool(lo <= analytic <= hi),
    )


def cells(args):
    for d in args.dims:
        for name in MECHANISMS:
            if d == 1 and name == "FeatureRR (skewed theta)":
                continue  # one feature: theta = [1], the uniform row
            for eps in args.epsilons:
                meta = dict(key=f"{d}|{name}|{eps}|{args.seeds}", d=d, mechanism=name,
                            eps_f=eps, k=K, delta=DELTA, seeds=args.seeds,
                            mc_rows=args.mc_rows)  # fmt: skip
                yield meta, lambda n=name, e=eps, d=d: measure(n, e, d, args.seeds, args.mc_rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--epsilons", nargs="*", type=float, default=EPSILONS)
    p.add_argument("--dims", nargs="*", type=int, default=DIMS)
    p.add_argument("--seeds", type=int, default=SEEDS)
    p.add_argument("--mc-rows", type=int, default=MC_ROWS)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--summary", action="store_true", help="table, plot and docs from --out")
    p.add_argument("--smoke", action="store_true",
                   help="one epsilon, d = 4, 2 seeds x 500 rows (give --out)")  # fmt: skip
    args = p.parse_args()
    if args.smoke:
        args.epsilons, args.dims, args.seeds, args.mc_rows = [2.0], [4], 2, 500
    if not args.summary:
        quiet()
        run_cells(cells(args), args.out, measured=False)
    import summarize

    print(summarize.write("heterorr_feature_error", args.out, doc=not args.smoke))


if __name__ == "__main__":
    main()
