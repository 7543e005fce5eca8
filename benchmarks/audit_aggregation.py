"""Empirical audit of the Gaussian aggregation (PMA/NAP hop): measured lower bound on epsilon
next to the accounted epsilon, for the real mechanism and for two broken ones (half the noise
it records; the directed unit recorded for a friendship). Writes
``results/audit_aggregation.md``.

    python benchmarks/audit_aggregation.py --trials 1000000
"""

from __future__ import annotations

import settings as S
from common import RESULTS, audit_table

from lightning_dpgnn.attacks import audit_aggregation
from lightning_dpgnn.privacy.aggregation import GaussianAggregation

UNITS = {
    "edge-directed": dict(edge_unit="directed"),
    "edge-undirected": dict(edge_unit="undirected"),
    "node": dict(level="node", max_degree=4),
}


def main() -> None:
    args, lines = audit_table(
        __doc__, "Empirical audit of the Gaussian aggregation", "",
        ["mechanism", "audited unit", "z"],
    )  # fmt: skip
    cases = []
    for unit, kw in UNITS.items():
        for z in (1.0, 2.0):
            cases.append(("GaussianAggregation", unit, z, GaussianAggregation(z, **kw)))
            cases.append(("half the recorded noise", unit, z, S.HalfNoise(z, **kw)))
    for z in (1.0, 2.0):
        directed = GaussianAggregation(z, edge_unit="directed")
        cases.append(("directed unit (sensitivity 1)", "edge-undirected", z, directed))
    for name, unit, z, mech in cases:
        r = audit_aggregation(mech, unit, trials=args.trials, delta=args.delta)
        lines.append(f"| {name} | {unit} | {z:g} | {r.table_cells} |")
        print(lines[-1], flush=True)
    (RESULTS / "audit_aggregation.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
