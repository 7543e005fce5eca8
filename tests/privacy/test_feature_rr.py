"""FeatureRR (HeteroRR eqs. 5-9, Theorem 3): exact ratios, sampler, moments, accounting,
public theta and the attack on it, bad input."""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
import torch

from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.feature_rr import (
    DEFAULT_K,
    FeatureRR,
    check_theta,
    public_feature_weights,
)
from lightning_dpgnn.privacy.local import FEATURE_MECHANISMS, LocalCollector


def _worst_log_ratio(p: torch.Tensor) -> torch.Tensor:
    """``p[..., t, u] = Pr[u | t]``: max over u, t, t' of log p[t, u] / p[t', u]."""
    lp = p.log()
    return (lp.amax(dim=-2) - lp.amin(dim=-2)).amax(dim=-1)


# ------------------------------------------------------------------------------------------
# Theorem 3: exact worst-case ratios
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 5, 16, 64])
@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0, 40.0])
def test_k_by_k_ratio_is_exactly_epsilon_i(k, eps):
    theta = torch.tensor([0.55, 0.25, 0.15, 0.05, 0.0], dtype=torch.float64)
    mech = FeatureRR(eps, theta, k=k)
    p = mech.transition_matrices(5)  # [d, k, k]
    assert torch.allclose(p.sum(-1), torch.ones(5, k, dtype=torch.float64))
    worst = _worst_log_ratio(p)  # over the whole k x k x k grid (t, t', u)
    assert torch.allclose(worst, eps * theta, rtol=1e-9, atol=1e-12)  # tight, not just <=
    # attained at inputs t = 1, t' = k and output u = 1 (Theorem 3's extreme case)
    edge = (p[:, 0, 0] / p[:, -1, 0]).log()
    assert torch.allclose(edge, eps * theta, rtol=1e-9, atol=1e-12)
    assert torch.allclose(mech.sigma(5)[:4], (k - 1) / (k * eps * theta[:4]))


def test_ratio_over_continuous_inputs_and_the_whole_row():
    # continuous inputs (discretised on the node) and every joint output of a d = 3 row
    theta = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    eps, k = 2.5, 4
    mech = FeatureRR(eps, theta, k=k, alpha=-1.0, beta=2.0)
    xs = torch.linspace(-1.0, 2.0, 121, dtype=torch.float64)
    probs = mech.output_probabilities(xs[:, None].expand(-1, 3))  # [inputs, d, k]
    worst = _worst_log_ratio(probs.transpose(0, 1))  # per feature, over inputs x outputs
    assert torch.allclose(worst, eps * theta, rtol=1e-9)
    rows = torch.tensor(list(itertools.product(xs[::20].tolist(), repeat=3)), dtype=torch.float64)
    outs = mech.bin_values(3).T  # [k, d]: bin centres
    out_rows = torch.tensor(
        list(itertools.product(*[outs[:, i].tolist() for i in range(3)])), dtype=torch.float64
    )
    lp = mech.log_prob(rows[:, None, :], out_rows[None, :, :])  # [inputs, outputs]
    joint = float((lp.max(0).values - lp.min(0).values).max())
    assert joint == pytest.approx(eps, rel=1e-9)  # the row is exactly epsilon-LDP (tight)


def test_zero_weight_feature_ignores_its_input():
    mech = FeatureRR(3.0, torch.tensor([1.0, 0.0]), k=6)
    x = torch.tensor([[0.1, 0.0], [0.1, 0.5], [0.1, 1.0]], dtype=torch.float64)
    probs = mech.output_probabilities(x)
    assert torch.allclose(probs[:, 1], torch.full((3, 6), 1 / 6, dtype=torch.float64))
    assert mech.per_feature_epsilon(2)[1] == 0.0


# ------------------------------------------------------------------------------------------
# sampler, moments
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "eps,theta",
    [(2.0, [0.5, 0.3, 0.2, 0.0]), (1e-4, [0.25] * 4), (4000.0, [0.25] * 4), (30.0, [0.97, 0.01,
                                                                                  0.01, 0.01])],
)
def test_sampler_matches_the_exact_probabilities(eps, theta):
    k, n = 7, 100_000
    mech = FeatureRR(eps, torch.tensor(theta), k=k)
    x = torch.tensor([0.0, 0.33, 0.71, 1.0], dtype=torch.float64)
    y = mech.sample(x.expand(n, 4).clone(), generator=torch.Generator().manual_seed(3))
    assert y.dtype == torch.float64
    assert set(torch.unique(y).tolist()) <= set(mech.bin_values(4).flatten().tolist())
    u = mech.bin_index(y)
    emp = torch.stack([torch.bincount(u[:, i], minlength=k) for i in range(4)]).double() / n
    expect = mech.output_probabilities(x)
    se = (expect * (1 - expect) / n).sqrt()
    assert ((emp - expect).abs() <= 5 * se + 1e-12).all()


@pytest.mark.parametrize("eps", [1e-9, 0.5, 3.0, 60.0])
def test_inverse_cdf_ends(monkeypatch, eps):
    # the smallest uniform gives the true bin, the largest the farthest bin above (t = 0) or
    # below (t = k - 1), for every budget, a zero weight included
    import lightning_dpgnn.privacy.feature_rr as F

    k = 9
    mech = FeatureRR(eps, torch.tensor([0.5, 0.5, 0.0]), k=k)
    t = torch.tensor([[0, k - 1, 0]])
    for value, expect in ((0.0, [0, k - 1, 0]), (1.0 - 2.0**-53, [k - 1, 0, k - 1])):
        monkeypatch.setattr(F.R, "uniform", lambda shape, v=value, **kw: torch.full(
            tuple(shape), v, dtype=torch.float64))
        assert mech._sample_bins(t, 3, None).tolist() == [expect]


def test_moments_are_exact_and_featurerr_is_biased():
    mech = FeatureRR(1.0, None, k=10)
    x = torch.tensor([0.0, 0.2, 0.5, 0.95], dtype=torch.float64)
    n = 200_000
    y = mech.sample(x.expand(n, 4).clone(), generator=torch.Generator().manual_seed(9))
    mean, var = mech.expected_output(x), mech.variance(x)
    assert ((y.mean(0) - mean).abs() <= 5 * (var / n).sqrt()).all()
    assert torch.allclose(y.var(0), var, rtol=0.02)
    assert torch.allclose(mech.mean_squared_error(x), var + (mean - x) ** 2)
    # the reports shrink towards the middle: no unbiased rectifier in the paper
    assert float(mean[0]) > 0.3 and float(mean[3]) < 0.7
    # the bin index is the paper's ceil(k s) (s = 0 in bin 1) and outputs are bin centres
    edges = torch.tensor([0.0, 0.1, 0.1001, 1.0], dtype=torch.float64)
    assert mech.bin_index(edges).tolist() == [0, 0, 1, 9]
    assert torch.allclose(mech.bin_values(1)[0, :2], torch.tensor([0.05, 0.15]).double())


# ------------------------------------------------------------------------------------------
# accounting
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("theta", [None, [0.7, 0.2, 0.1, 0.0], [1 / 3, 1 / 3, 1 / 3, 0.0]])
def test_accounting_is_epsilon_per_node(theta):
    d = 4 if theta is not None else 9
    mech = FeatureRR(2.5, None if theta is None else torch.tensor(theta, dtype=torch.float64))
    acc = PrivacyAccountant(level="ldp")
    entry = mech.at_width(d).account(acc)
    assert acc.epsilon() == 2.5  # exactly epsilon: sum of epsilon * theta_i with sum theta = 1
    assert entry.name == "featurerr" and entry.kind == "pure" and "Theorem 3" in entry.note
    mech.at_width(d).account(acc, count=2)  # two collections: three in all
    assert acc.epsilon() == pytest.approx(7.5)
    assert mech.total_epsilon(d) == 2.5
    with pytest.raises(ValueError, match="theta has"):
        FeatureRR(1.0, torch.ones(3) / 3).at_width(4).account(PrivacyAccountant(level="ldp"))


def test_registry_and_collector_carry_theta():
    assert FEATURE_MECHANISMS["featurerr"] is FeatureRR
    theta = torch.tensor([0.5, 0.5])
    col = LocalCollector(2.0, 1.0, "featurerr", theta=theta, k=5)
    assert isinstance(col.randomizer, FeatureRR) and col.randomizer.k == 5
    assert torch.equal(col.randomizer.theta, theta.double())
    acc = PrivacyAccountant(level="ldp")
    for mechanism in col.mechanisms(2, num_classes=3):
        mechanism.account(acc)
    assert acc.epsilon() == pytest.approx(3.0)
    assert LocalCollector(2.0, 1.0, "featurerr").randomizer.k == DEFAULT_K
    with pytest.raises(ValueError, match="FeatureRR's parameters"):
        LocalCollector(2.0, 1.0, "duchi", theta=theta)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "theta,match",
    [
        ([0.5, -0.1, 0.6], "non-negative"),
        ([0.5, math.nan, 0.5], "finite"),
        ([0.5, math.inf], "finite"),
        ([0.0, 0.0], "positive sum"),
        ([[0.5, 0.5]], "1-D"),
        ([], "1-D"),
        ("abc", "1-D sequence"),
    ],
)
def test_bad_theta(theta, match):
    with pytest.raises(ValueError, match=match):
        FeatureRR(1.0, theta)


def test_theta_length_and_normalisation_policy():
    mech = FeatureRR(1.0, [0.5, 0.5])
    with pytest.raises(ValueError, match="theta has 2 weights but the rows have d = 3"):
        mech.sample(torch.rand(4, 3))
    with pytest.raises(ValueError, match="d = 3"):
        check_theta([0.5, 0.5], d=3)
    with pytest.warns(UserWarning, match="normalised"):
        th = check_theta([2.0, 1.0, 1.0])
    assert torch.allclose(th, torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_theta(torch.tensor([0.3, 0.3, 0.4], dtype=torch.float32))  # float32 rounding: ok


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        FeatureRR(eps)


@pytest.mark.parametrize("k", [1, 0, 2.5, True, "8"])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k \\(the number of bins\\)"):
        FeatureRR(1.0, k=k)


# ------------------------------------------------------------------------------------------
# public theta (eqs. 5-7) and the attack on it
# ------------------------------------------------------------------------------------------
def _graph_features(n: int = 300, p: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, p, generator=g, dtype=torch.float64)
    y = (x[:, 0] + x[:, 1] > 1.0).long()
    public = torch.zeros(n, dtype=torch.bool)
    public[: n // 3] = True
    return x, y, public


def test_public_weights_follow_eq_7():
    x, y, public = _graph_features()
    sensitive = torch.tensor([False, False, False, False, True, True])
    theta, alpha, beta = public_feature_weights(
        x[public], y[public], sensitive, gamma=0.5, return_scores=True
    )
    for v in (theta, alpha, beta):
        assert v.dtype == torch.float64 and v.shape == (6,) and (v >= 0).all()
        assert float(v.sum()) == pytest.approx(1.0, abs=1e-12)
    # identity embedding: only the masked inputs change, so only they are sensitive
    assert (beta[:4] == 0).all() and (beta[4:] > 0).all()
    expect = 0.5 * alpha + 0.5 * (beta.min() + beta.max() - beta)
    assert torch.allclose(theta, expect / expect.sum())
    # the label depends on features 0 and 1: linear SHAP ranks them first
    assert set(alpha.topk(2).indices.tolist()) == {0, 1}
    # gamma = 1: importance only; gamma = 0 and no sensitive input: uniform
    assert torch.allclose(public_feature_weights(x[public], y[public], gamma=1.0), alpha)
    uniform = public_feature_weights(x[public], y[public], gamma=0.0)
    assert torch.allclose(uniform, torch.full((6,), 1 / 6, dtype=torch.float64))
    # exact linear SHAP with a given public model: alpha_i proportional to |w_i| E|x_i - mean|
    w = torch.tensor([1.0, -2.0, 0.0, 0.0, 0.5, 0.0], dtype=torch.float64)
    _, a2, _ = public_feature_weights(x[public], y[public], coef=w, return_scores=True)
    xp = x[public]
    manual = w.abs() * (xp - xp.mean(0)).abs().mean(0)
    assert torch.allclose(a2, manual / manual.sum())
    # a public embedding g (here a fixed projection) gives d = its output width
    proj = torch.randn(6, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    th3 = public_feature_weights(x[public], y[public], sensitive, embed=lambda v: v @ proj)
    assert th3.shape == (3,) and float(th3.sum()) == pytest.approx(1.0)


def test_attack_private_node_changes_nothing_for_anyone_else():
    # what a user runs: theta from the public nodes only, then every node perturbs its row
    x, y, public = _graph_features()
    sensitive = torch.tensor([False, False, True, False, False, True])

    def release(features: torch.Tensor):
        theta = public_feature_weights(features[public], y[public], sensitive)
        mech = FeatureRR(1.5, theta, k=8)
        return theta, mech.output_probabilities(features)

    theta, probs = release(x)
    victim = int((~public).nonzero()[0])
    x2 = x.clone()
    x2[victim] = 1.0 - x2[victim]  # one private node's features, changed completely
    theta2, probs2 = release(x2)
    assert torch.equal(theta, theta2)  # theta depends on public inputs only
    others = torch.arange(len(x)) != victim
    assert torch.equal(probs[others], probs2[others])  # nobody else's output distribution moves
    # and the victim's own outputs move by at most e^epsilon (Theorem 3)
    lp, lp2 = probs[victim].log(), probs2[victim].log()
    assert float((lp - lp2).abs().sum(-1).max()) <= 1.5 + 1e-9


def test_a_theta_from_the_nodes_own_data_breaks_the_bound():
    # The paper computes the scores per node, from the node's own input: theta (hence every
    # noise scale) then depends on the input. Two inputs whose own thetas are [1/2, 1/2] and
    # [1, 0] differ by more than e^epsilon on some output (the bound only holds for a theta
    # fixed in advance; with a per-input theta it is 2 epsilon at worst).
    eps, k = 2.0, 8

    def per_feature_worst(th_a: float, th_b: float) -> float:
        pa = FeatureRR(eps, [th_a, 1 - th_a], k=k).transition_matrices(2)[0].log()
        pb = FeatureRR(eps, [th_b, 1 - th_b], k=k).transition_matrices(2)[0].log()
        return float((pa[:, None, :] - pb[None, :, :]).max())  # over t_a, t_b, u

    own = per_feature_worst(0.5, 1.0) + per_feature_worst(0.5, 0.0)  # features 0 and 1
    assert own > 1.04 * eps  # the LDP bound is broken
    assert own <= 2 * eps
    fixed = per_feature_worst(0.5, 0.5) + per_feature_worst(0.5, 0.5)  # one public theta
    assert fixed == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"sensitive": torch.tensor([1, 0, 0, 0, 0, 0])}, "boolean mask"),
        ({"sensitive": torch.tensor([True, False])}, "boolean mask"),
        ({"gamma": 1.5}, "gamma"),
        ({"coef": torch.ones(4)}, "coef"),
    ],
)
def test_public_weights_bad_input(kwargs, match):
    x, y, public = _graph_features()
    with pytest.raises(ValueError, match=match):
        public_feature_weights(x[public], y[public], **kwargs)


def test_public_weights_bad_data():
    x, y, public = _graph_features()
    bad = x[public].clone()
    bad[0, 0] = math.nan
    with pytest.raises(ValueError, match="finite"):
        public_feature_weights(bad, y[public])
    with pytest.raises(ValueError, match="labels"):
        public_feature_weights(x[public], y[public][:-1])
    with pytest.raises(ValueError, match="two classes"):
        public_feature_weights(x[public], torch.zeros(int(public.sum()), dtype=torch.long))
