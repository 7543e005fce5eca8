"""Randomized response on labels (thesis eq. 3.39): exact law, LDP ratio, empirical frequencies."""

from __future__ import annotations

import math

import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.labels import RandomizedResponse


@pytest.mark.parametrize("eps,c", [(0.1, 2), (1.0, 4), (3.0, 10), (0.5, 7)])
def test_keep_probability_and_matrix(eps, c):
    rr = RandomizedResponse(eps, c)
    keep = math.exp(eps) / (math.exp(eps) + c - 1)
    other = 1.0 / (math.exp(eps) + c - 1)
    assert rr.keep_probability == pytest.approx(keep, rel=1e-12)
    assert rr.flip_probability == pytest.approx(other, rel=1e-12)
    p = rr.transition_matrix()
    assert p.shape == (c, c) and p.dtype == torch.float64
    assert torch.allclose(p.sum(1), torch.ones(c, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(p.diagonal(), torch.full((c,), keep, dtype=torch.float64))
    off = p[~torch.eye(c, dtype=torch.bool)]
    assert torch.allclose(off, torch.full_like(off, other))  # uniform over the other classes
    # LDP: for every output j, Pr[j | i] / Pr[j | i'] <= e^eps, with equality (tight)
    ratio = (p.max(0).values / p.min(0).values).max()
    assert float(ratio) <= math.exp(eps) * (1 + 1e-12)
    assert float(ratio) == pytest.approx(math.exp(eps), rel=1e-12)


def test_empirical_keep_probability():
    eps, c, n = 1.0, 5, 400_000
    rr = RandomizedResponse(eps, c)
    y = torch.randint(0, c, (n,), generator=torch.Generator().manual_seed(0))
    out = rr.sample(y, generator=torch.Generator().manual_seed(1))
    assert out.dtype == torch.long and out.shape == y.shape
    p = rr.keep_probability
    frac = float((out == y).double().mean())
    assert abs(frac - p) <= 5 * math.sqrt(p * (1 - p) / n)


def test_empirical_transition_frequencies_match_matrix():
    eps, c, n = 0.8, 4, 400_000
    rr = RandomizedResponse(eps, c)
    y = torch.arange(c).repeat_interleave(n // c)
    out = rr.sample(y, generator=torch.Generator().manual_seed(7))
    counts = torch.zeros(c, c, dtype=torch.float64)
    counts.index_put_((y, out), torch.ones(n, dtype=torch.float64), accumulate=True)
    freq = counts / counts.sum(1, keepdim=True)
    p = rr.transition_matrix()
    se = torch.sqrt(p * (1 - p) / (n // c))
    assert ((freq - p).abs() <= 5 * se).all(), (freq - p) / se


def test_shapes_devices_and_infinite_epsilon():
    rr = RandomizedResponse(2.0, 3)
    y = torch.randint(0, 3, (6, 5), dtype=torch.int32)
    out = rr.sample(y, generator=torch.Generator().manual_seed(0))
    assert out.shape == (6, 5) and out.dtype == torch.long
    assert ((out >= 0) & (out < 3)).all()
    assert rr.sample(torch.empty(0, dtype=torch.long)).numel() == 0
    inf = RandomizedResponse(math.inf, 3)
    assert inf.keep_probability == 1.0 and inf.flip_probability == 0.0
    assert torch.equal(inf.sample(y), y.long())
    # huge epsilon: no overflow, keeps labels
    assert RandomizedResponse(1e4, 10).keep_probability == 1.0


def test_never_reports_the_true_label_when_flipping():
    """A flipped label is never the true one: P[y'=y] is exactly the keep probability."""
    rr = RandomizedResponse(1e-9, 2)  # almost 50/50 for two classes
    y = torch.zeros(200_000, dtype=torch.long)
    out = rr.sample(y, generator=torch.Generator().manual_seed(3))
    frac = float((out == 0).double().mean())
    assert abs(frac - 0.5) <= 5 * math.sqrt(0.25 / y.numel())


def test_accounting():
    rr = RandomizedResponse(1.5, 4)
    assert RandomizedResponse.name == "randomized_response"
    acc = PrivacyAccountant(level="ldp")
    entry = rr.account(acc)
    assert entry.kind == "pure" and entry.epsilon == 1.5 and entry.name == "randomized_response"
    rr.account(acc, count=2)
    assert acc.epsilon() == pytest.approx(4.5)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), "x"])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        RandomizedResponse(eps, 3)


@pytest.mark.parametrize("c", [1, 0, -3, 2.5, True, "4"])
def test_bad_num_classes(c):
    with pytest.raises(ValueError, match="num_classes"):
        RandomizedResponse(1.0, c)


def test_bad_labels():
    rr = RandomizedResponse(1.0, 3)
    with pytest.raises(ValueError, match=r"2 label\(s\) outside \[0, 3\)"):
        rr.sample(torch.tensor([0, 3, -1, 2]))
    with pytest.raises(TypeError, match="integer"):
        rr.sample(torch.tensor([0.0, 1.0]))
    with pytest.raises(TypeError):
        rr.sample([0, 1])
