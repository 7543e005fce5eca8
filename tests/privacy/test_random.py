"""Secure randomness covers every mechanism; seeded draws are reproducible outside it."""

from __future__ import annotations

import math

import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy import random as R
from lightning_dpgnn.privacy.aggregation import GaussianAggregation
from lightning_dpgnn.privacy.feature_rr import FeatureRR
from lightning_dpgnn.privacy.labels import RandomizedResponse
from lightning_dpgnn.privacy.ldp import (
    AnalyticGaussian,
    Duchi,
    Laplace,
    MultiBit,
    OneBit,
    Piecewise,
)
from lightning_dpgnn.privacy.ldp_numeric import Hybrid, PMSub, ThreeOutputs
from lightning_dpgnn.privacy.mechanism import draw

X = torch.rand(64, 8, generator=torch.Generator().manual_seed(0))
Y = torch.randint(0, 5, (512,), generator=torch.Generator().manual_seed(0))
EI = torch.stack([torch.arange(64), (torch.arange(64) + 1) % 64])

FEATURE_MECHS = {
    "onebit": lambda **kw: OneBit(1.0, **kw),
    "laplace": lambda **kw: Laplace(1.0, **kw),
    "duchi": lambda **kw: Duchi(1.0, **kw),
    "piecewise": lambda **kw: Piecewise(1.0, **kw),
    "multibit": lambda **kw: MultiBit(1.0, **kw),
    "analytic_gaussian": lambda **kw: AnalyticGaussian(1.0, 1e-5, **kw),
    "hybrid": lambda **kw: Hybrid(8.0, **kw),
    "three_outputs": lambda **kw: ThreeOutputs(1.0, **kw),
    "pm_sub": lambda **kw: PMSub(1.0, **kw),
    "featurerr": lambda **kw: FeatureRR(1.0, **kw),
}


def run(name: str, generator: torch.Generator | None = None):
    """One draw of mechanism ``name`` from ``generator``."""
    if name in FEATURE_MECHS:
        return FEATURE_MECHS[name]().sample(X, generator=generator)
    if name in ("multibit_draw", "onebit_draw"):  # the recorded draw (mechanism.draw)
        mech = MultiBit(1.0) if name == "multibit_draw" else OneBit(1.0)
        return draw(mech, PrivacyAccountant(level="ldp"), generator, X)
    if name == "randomized_response":
        return RandomizedResponse(1.0, 5).sample(Y, generator=generator)
    if name == "pma":
        agg = GaussianAggregation(1.0)
        acc = PrivacyAccountant(level="edge", delta=1e-5)
        return draw(agg, acc, generator, agg.aggregate(X, EI, 64))
    raise KeyError(name)


ALL = [*FEATURE_MECHS, "multibit_draw", "onebit_draw", "randomized_response", "pma"]


@pytest.fixture(autouse=True)
def _secure_mode_is_off_around_each_test():
    assert not R.is_secure_mode()
    yield
    R.set_secure_mode(False)


@pytest.mark.parametrize("name", ALL)
def test_secure_mode_draws_from_the_os_csprng(name):
    with R.secure_mode():
        before = R.secure_draw_count()
        a = run(name)
        middle = R.secure_draw_count()
        b = run(name)
        assert middle > before and R.secure_draw_count() > middle
    assert not R.is_secure_mode()
    assert a.shape == b.shape
    assert not torch.equal(a, b)  # two secure draws differ


@pytest.mark.parametrize("name", ALL)
def test_secure_mode_rejects_seeded_generators(name):
    with R.secure_mode():
        with pytest.raises(R.SecureModeError):
            run(name, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("name", ALL)
def test_seeded_generator_reproduces_draws_outside_secure_mode(name):
    before = R.secure_draw_count()
    a = run(name, generator=torch.Generator().manual_seed(42))
    b = run(name, generator=torch.Generator().manual_seed(42))
    c = run(name, generator=torch.Generator().manual_seed(43))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert R.secure_draw_count() == before  # nothing came from the CSPRNG


@pytest.mark.parametrize("name", [*FEATURE_MECHS, "randomized_response"])
def test_seeded_noise_enters_only_through_the_draws_generator(name):
    """No mechanism holds a generator of its own: a seeded draw is always the one ``draw``
    marks reproducible on the accountant."""
    g = torch.Generator().manual_seed(0)
    with pytest.raises(TypeError):
        if name == "randomized_response":
            RandomizedResponse(1.0, 5, generator=g)
        else:
            FEATURE_MECHS[name](generator=g)
    acc = PrivacyAccountant(level="ldp", delta=1e-5)
    mech = RandomizedResponse(1.0, 5) if name == "randomized_response" else FEATURE_MECHS[name]()
    draw(mech, acc, g, Y if name == "randomized_response" else X)
    assert acc.reproducible


def test_secure_gaussian_noise_has_the_right_variance():
    n, std = 400_000, 2.5
    with R.secure_mode():
        z = R.normal((n,), std, dtype=torch.float64)
    assert abs(float(z.mean())) <= 5 * std / math.sqrt(n)
    # Var of the sample variance of a Gaussian: 2 sigma^4 / n
    assert abs(float(z.var()) - std**2) <= 5 * std**2 * math.sqrt(2 / n)
    # Gaussian tails: fourth moment 3 sigma^4 (the sum of two Box-Muller draws is Gaussian)
    kurt = float((z**4).mean()) / std**4
    assert abs(kurt - 3.0) <= 5 * math.sqrt(96 / n)


def test_secure_laplace_and_uniform_moments():
    n, b = 400_000, 1.5
    with R.secure_mode():
        lap = R.laplace((n,), b, dtype=torch.float64)
        u = R.uniform((n,), dtype=torch.float64)
    assert abs(float(lap.var()) - 2 * b**2) <= 5 * 2 * b**2 * math.sqrt(5 / n)  # kurtosis 6
    assert abs(float(u.mean()) - 0.5) <= 5 * math.sqrt(1 / 12 / n)
    assert float(u.min()) > 0.0 and float(u.max()) < 1.0


def test_secure_mode_nests_and_restores():
    assert not R.is_secure_mode()
    with R.secure_mode():
        assert R.is_secure_mode()
        with R.secure_mode(False):
            assert not R.is_secure_mode()
            g = torch.Generator().manual_seed(0)
            OneBit(1.0).sample(X, generator=g)  # allowed: secure mode is off here
        assert R.is_secure_mode()
    assert not R.is_secure_mode()


def test_bernoulli_and_categorical_primitives():
    n = 200_000
    p = torch.tensor([0.1, 0.5, 0.93], dtype=torch.float64)
    draws = R.bernoulli(p.expand(n, 3), generator=torch.Generator().manual_seed(0)).double()
    assert (((draws.mean(0) - p).abs()) <= 5 * torch.sqrt(p * (1 - p) / n)).all()
    probs = torch.tensor([0.2, 0.0, 0.5, 0.3], dtype=torch.float64)
    cat = R.categorical(probs.expand(n, 4), generator=torch.Generator().manual_seed(1))
    freq = torch.bincount(cat, minlength=4).double() / n
    assert freq[1] == 0.0
    assert ((freq - probs).abs() <= 5 * torch.sqrt(probs * (1 - probs) / n) + 1e-12).all()
