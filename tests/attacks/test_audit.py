"""Empirical audit of the aggregation mechanism: the measured lower bound on epsilon stays at or
below the accounted epsilon for the real mechanism, and exceeds it for broken ones."""

import pytest
import torch
from scipy.stats import binomtest

from lightning_dpgnn.attacks import audit_aggregation, clopper_pearson, epsilon_lower_bound
from lightning_dpgnn.privacy.aggregation import GaussianAggregation


def noise(seed: int = 0) -> torch.Generator:
    """Seeded mechanism noise: the audits below are deterministic (never flaky)."""
    return torch.Generator().manual_seed(1000 + seed)


UNITS = {
    "edge-directed": dict(edge_unit="directed"),
    "edge-undirected": dict(edge_unit="undirected"),
    "node": dict(level="node", max_degree=4),
}


class RecordsMoreNoiseThanItDraws(GaussianAggregation):
    """A broken mechanism: draws noise at ``z * factor`` but records ``z`` on the ledger."""

    def __init__(self, z: float, factor: float, **kw) -> None:
        super().__init__(z, **kw)
        self.factor = factor

    @property
    def std(self) -> float:
        return super().std * self.factor


def test_clopper_pearson_is_the_exact_binomial_interval():
    for k, n in ((0, 10), (3, 10), (10, 10), (57, 1000)):
        ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert clopper_pearson(k, n, 0.1) == pytest.approx((ci.low, ci.high), abs=1e-9)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10, 0.05)


@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("z", [1.0, 2.0])
def test_the_gaussian_aggregation_delivers_its_accounted_epsilon(unit, z):
    mech = GaussianAggregation(z, **UNITS[unit])
    result = audit_aggregation(mech, unit, trials=100_000, noise_generator=noise())
    assert result.consistent, str(result)
    # the audit has power: the bound is a sizeable part of the accounted epsilon
    assert result.epsilon_lower > 0.4 * result.epsilon_accounted, str(result)


@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("z", [2.0, 3.0])  # accounted epsilon 2.0 / 1.1 at delta 1e-5
def test_a_mechanism_drawing_half_the_noise_it_records_is_caught(unit, z):
    broken = RecordsMoreNoiseThanItDraws(z, 0.5, **UNITS[unit])
    result = audit_aggregation(broken, unit, trials=300_000, noise_generator=noise())
    assert not result.consistent, str(result)
    assert "VIOLATION" in str(result)


def test_the_directed_unit_does_not_protect_an_undirected_friendship():
    """The fault the review found: sensitivity 1 (one directed edge) recorded for a friendship,
    which moves two rows. Audited on the undirected relation (at delta 1e-2, where 3 * 10^5
    trials resolve the tails), the bound exceeds the ledger; the undirected unit at the same
    multiplier passes the same audit."""
    kw = dict(trials=300_000, noise_generator=noise(), delta=1e-2)
    directed = GaussianAggregation(1.0, edge_unit="directed")
    result = audit_aggregation(directed, "edge-undirected", **kw)
    assert not result.consistent, str(result)
    assert result.epsilon_lower > result.epsilon_accounted + 0.4, str(result)
    correct = audit_aggregation(GaussianAggregation(1.0), "edge-undirected", **kw)
    assert correct.consistent, str(correct)


def test_epsilon_lower_bound_separates_shifted_gaussians_and_checks_input():
    g = torch.Generator().manual_seed(1)
    out = torch.randn(50_000, generator=g)
    same = torch.randn(50_000, generator=g)
    assert epsilon_lower_bound(out, same, 1e-5).epsilon < 0.2  # nothing to distinguish
    shifted = torch.randn(50_000, generator=g) + 3.0
    assert epsilon_lower_bound(out, shifted, 1e-5).epsilon > 2.0
    with pytest.raises(ValueError):
        epsilon_lower_bound(out[:2], shifted[:2], 1e-5)
    with pytest.raises(ValueError):
        epsilon_lower_bound(out, shifted, 1e-5, confidence=1.0)


def test_a_hop_with_a_larger_budget_share_records_the_noise_it_draws():
    """``hop_budget`` runs a hop at ``scale * z``: the ledger must charge that hop for the
    smaller noise it actually draws (audited), not for ``z``."""
    agg = GaussianAggregation(4.0, edge_unit="directed")
    hop = agg.scaled(0.5)

    result = audit_aggregation(hop, "edge-directed", trials=300_000, noise_generator=noise())
    assert result.consistent, str(result)
    full = audit_aggregation(agg, "edge-directed", trials=1000, noise_generator=noise())
    assert result.epsilon_accounted > 1.8 * full.epsilon_accounted  # charged at z = 2, not 4
    assert result.epsilon_lower > full.epsilon_accounted  # so charging z = 4 would be caught
