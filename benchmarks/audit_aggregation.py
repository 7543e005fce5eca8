"""Empirical audit of the Gaussian aggregation (PMA/NAP hop): measured lower bound on epsilon
next to the accounted epsilon, for the real mechanism and for two broken ones (half the noise
it records; the directed unit recorded for a friendship). One cell of ``common.run_cells`` per
case (rows in ``results/audit_aggregation.jsonl``; a re-run skips the cases it has at this
trial count and delta); writes ``results/audit_aggregation.md``.

    python benchmarks/audit_aggregation.py --trials 1000000
"""

from __future__ import annotations

from functools import partial

import settings as S
from common import RESULTS, run_audits

from lightning_dpgnn.attacks import audit_aggregation
from lightning_dpgnn.privacy.aggregation import GaussianAggregation

UNITS = {
    "edge-directed": dict(edge_unit="directed"),
    "edge-undirected": dict(edge_unit="undirected"),
    "node": dict(level="node", max_degree=4),
}


def case(name: str, unit: str, z: float, mech) -> tuple[dict, partial]:
    """The table's columns of one audit and the audit (``trials=, delta= -> AuditResult``)."""
    return {"mechanism": name, "audited unit": unit, "z": z}, partial(audit_aggregation, mech, unit)


def main() -> None:
    cases = []
    for unit, kw in UNITS.items():
        for z in (1.0, 2.0):
            cases.append(case("GaussianAggregation", unit, z, GaussianAggregation(z, **kw)))
            cases.append(case("half the recorded noise", unit, z, S.HalfNoise(z, **kw)))
    for z in (1.0, 2.0):
        directed = GaussianAggregation(z, edge_unit="directed")
        cases.append(case("directed unit (sensitivity 1)", "edge-undirected", z, directed))
    run_audits(__doc__, "Empirical audit of the Gaussian aggregation", "", cases,
               RESULTS / "audit_aggregation.jsonl")  # fmt: skip


if __name__ == "__main__":
    main()
