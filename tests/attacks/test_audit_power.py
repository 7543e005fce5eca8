"""The aggregation audit's default trial count catches the documented broken mechanism (issue 27,
fault 5): GAP at its defaults (epsilon 1, 2 hops + label counts, so one call is accounted at
about 0.55) whose aggregation draws half the noise it records. At the old default (2 * 10^4
trials) it was caught in about one run in eight; ``benchmarks/results/audit_power.md`` has the
rates. Seeded noise keeps the test deterministic."""

import inspect
import math

from lightning_dpgnn.callbacks import PrivacyAudit

from lightning_dpgnn.attacks import audit_mechanism
from lightning_dpgnn.privacy.aggregation import GaussianAggregation
from lightning_dpgnn.privacy.calibration import calibrate_noise_multiplier, gaussian_plan
from lightning_dpgnn.privacy.random import reproducible_generator


class HalfNoiseAggregation(GaussianAggregation):
    """Draws half the noise it records on the ledger."""

    @property
    def std(self) -> float:
        return super().std / 2


def test_the_default_trials_catch_a_gap_at_its_defaults_drawing_half_its_noise():
    default = inspect.signature(PrivacyAudit).parameters["aggregation_trials"].default
    z = calibrate_noise_multiplier(gaussian_plan(3, sensitivity=math.sqrt(2), delta=1e-5), 1.0)
    broken = HalfNoiseAggregation(z, edge_unit="undirected")
    r = audit_mechanism(broken, trials=default, noise_generator=reproducible_generator(0))
    assert 0.5 < r.epsilon_accounted < 0.6  # one of GAP's three calls at epsilon 1
    assert not r.consistent, str(r)  # the bound exceeds the ledger: caught
