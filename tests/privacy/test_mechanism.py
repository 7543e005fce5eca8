"""The mechanism protocol: every mechanism of ``privacy/`` implements it, the one preamble
(``run``) checks, samples and records, and a real release whose draw records nothing or less
than planned fails the fit loudly (issue 37)."""

from __future__ import annotations

import pytest
import torch

from lightning_dpgnn import GAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods.ap import AggregationPerturbationModule
from lightning_dpgnn.methods.releases import UnaccountedRelease
from lightning_dpgnn.privacy import (
    AnalyticGaussian,
    Duchi,
    EdgeRR,
    FeatureRR,
    GaussianAggregation,
    Hybrid,
    HyperbolicGaussian,
    LapGraph,
    Laplace,
    MatrixMultiBit,
    MultiBit,
    OneBit,
    PaperCodeGaussian,
    Piecewise,
    PMSub,
    PrivacyAccountant,
    PrivateDegreeBound,
    RandomizedResponse,
    ThreeOutputs,
)
from lightning_dpgnn.privacy.edgerand import AsymmetricRandomizedResponse
from lightning_dpgnn.privacy.hrg import PaperCodeEdgeRR
from lightning_dpgnn.privacy.mechanism import READS, Clear, Mechanism, draw

MECHANISMS = [
    GaussianAggregation(1.0), HyperbolicGaussian(1.0), AsymmetricRandomizedResponse(1.0),
    LapGraph(1.0), PrivateDegreeBound(1.0, [1, 2]), EdgeRR(1.0), PaperCodeEdgeRR(1.0),
    RandomizedResponse(1.0, 3), OneBit(1.0), MultiBit(1.0), Laplace(1.0), Duchi(1.0),
    Piecewise(1.0), AnalyticGaussian(1.0, 1e-5), FeatureRR(1.0), Hybrid(1.0), PMSub(1.0),
    ThreeOutputs(1.0), MatrixMultiBit(1.0), PaperCodeGaussian(1.0),
    Clear("clear", ("features",), "read in the clear"),
]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: type(m).__name__)
def test_every_mechanism_implements_the_protocol_with_one_account_signature(mechanism):
    assert isinstance(mechanism, Mechanism)
    assert mechanism.level in ("edge", "node", "ldp") and set(mechanism.reads) <= set(READS)
    if hasattr(mechanism, "at_width"):
        mechanism = mechanism.at_width(4)
    once, twice = PrivacyAccountant(mechanism.level, 1e-5), PrivacyAccountant(mechanism.level, 1e-5)
    mechanism.account(once)
    mechanism.account(twice, count=2)
    assert twice.total_count() == 2 * once.total_count() > 0


def test_the_preamble_checks_the_accountant_marks_reproducible_noise_and_records_once():
    mechanism = GaussianAggregation(2.0)
    agg = torch.zeros(3, 2)
    with pytest.raises(TypeError, match="accountant"):
        draw(mechanism, None, None, agg)
    with pytest.raises(ValueError, match="edge-level mechanism cannot be recorded on a node"):
        draw(mechanism, PrivacyAccountant("node", 1e-5), None, agg)
    assert mechanism.calls == 0  # refused before any noise
    acc = PrivacyAccountant("edge", 1e-5)
    draw(mechanism, acc, None, agg)
    assert acc.total_count("pma") == 1 and not acc.reproducible
    draw(mechanism, acc, torch.Generator().manual_seed(0), agg)
    assert acc.total_count("pma") == 2 and acc.reproducible


@pytest.mark.parametrize("what", ["nothing", "less"])
def test_a_real_release_that_records_nothing_or_less_than_planned_fails_the_fit(
    what, monkeypatch, make_trainer, one_thread
):
    """GAP's hops (a collective release, drawn in a stage switch) with their noise skipped, or
    drawn at twice the planned multiplier: the fit stops before the output is used."""
    aggregate = AggregationPerturbationModule._aggregate

    def faulty(self, x, d, index):
        if what == "nothing":  # reads the edges and releases the exact sum
            d = type(d)(d.graph, d.accountant, d.generator, d.outputs, d.fit, ())
        else:  # more noise than planned: the ledger records a smaller spend
            d = type(d)(d.graph, d.accountant, d.generator, d.outputs, d.fit,
                        [m.scaled(2.0) for m in d.mechanisms])
        return (yield from aggregate(self, x, d, index))

    monkeypatch.setattr(AggregationPerturbationModule, "_aggregate", faulty)
    model = GAP(epsilon=2, encoder_epochs=1, classifier_epochs=1)
    with pytest.raises(UnaccountedRelease, match=f"recorded {what}"):
        make_trainer(max_epochs=2).fit(model, NodeDataModule("csbm", seed=0))
    assert model.releases.get(model.mechanism_name) is None  # its output is not used
