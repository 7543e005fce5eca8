"""Ghost clipping gives the classic DP-SGD step: clipped per-sample sum + N(0, (zC)^2), / B."""

import pytest
import torch
from torch import nn

from lightning_dpgnn.nn.mlp import MLP
from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.dpsgd import (
    GhostDPOptimizer,
    ghost_backward,
    grad_sample_module,
    make_private,
    unwrap,
)

C, B_EXPECTED = 12.0, 8  # between the rows' gradient norms (9 to 25): some clip, some not


def model(seed=0):
    torch.manual_seed(seed)
    return MLP(300, 3, hidden=8, layers=2, normalization="group", norm_groups=1)


def batch(n=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 300, generator=g) * 3, torch.randint(0, 3, (n,), generator=g)


def by_hand_step(net, x, y):
    """sum_i min(1, C/||g_i||) g_i / B, one sample at a time (the definition)."""
    total, clipped = [torch.zeros_like(p) for p in net.parameters()], 0
    for i in range(len(y)):
        net.zero_grad()
        nn.functional.cross_entropy(net(x[i : i + 1]), y[i : i + 1]).backward()
        g = [p.grad.clone() for p in net.parameters()]
        norm = torch.sqrt(sum(t.square().sum() for t in g))
        scale = min(1.0, C / (float(norm) + 1e-6))
        clipped += scale < 1.0
        total = [a + scale * b for a, b in zip(total, g, strict=True)]
    assert 0 < clipped < len(y)  # the check below exercises clipped and unclipped rows
    return [t / B_EXPECTED for t in total]


@pytest.mark.parametrize("ghost", [True, False])
def test_the_private_gradient_is_the_clipped_per_sample_mean(ghost):
    x, y = batch()
    expected = by_hand_step(model(), x, y)
    net = model()
    gsm = grad_sample_module(net, C, ghost=ghost)
    acc = PrivacyAccountant("node", 1e-5)
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    gsm, dp = make_private(
        gsm, opt, noise_multiplier=1e-12, max_grad_norm=C, sample_rate=0.1,
        num_samples=B_EXPECTED * 10, accountant=acc,
    )  # fmt: skip
    assert isinstance(dp, GhostDPOptimizer) == ghost
    dp.zero_grad()
    losses = nn.functional.cross_entropy(gsm(x), y, reduction="none")
    if ghost:
        ghost_backward(gsm, dp, losses)
    else:
        losses.mean().backward()
    before = [p.detach().clone() for p in net.parameters()]
    dp.step()
    for b, p, e in zip(before, net.parameters(), expected, strict=True):
        torch.testing.assert_close(b - p.detach(), e, atol=1e-6, rtol=1e-4)
    assert acc.total_count("dpsgd") == 1


def test_ghost_noise_has_the_calibrated_std_and_an_empty_batch_still_steps():
    net = model()
    gsm = grad_sample_module(net, C)
    acc = PrivacyAccountant("node", 1e-5)
    z = 2.0
    gsm, dp = make_private(
        gsm, torch.optim.SGD(net.parameters(), lr=1.0), noise_multiplier=z, max_grad_norm=C,
        sample_rate=0.1, num_samples=B_EXPECTED * 10, accountant=acc,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    x, y = batch(n=0)
    dp.zero_grad()
    ghost_backward(gsm, dp, nn.functional.cross_entropy(gsm(x), y, reduction="none"))
    before = torch.cat([p.detach().flatten().clone() for p in net.parameters()])
    dp.step()
    update = before - torch.cat([p.detach().flatten() for p in net.parameters()])
    # an empty Poisson batch: the update is pure noise N(0, (zC/B)^2), and the step is recorded
    assert update.std().item() == pytest.approx(z * C / B_EXPECTED, rel=0.05)
    assert abs(update.mean().item()) < 4 * z * C / B_EXPECTED / update.numel() ** 0.5
    assert acc.total_count("dpsgd") == 1
    x, y = batch()  # and the next, non-empty batch still works
    dp.zero_grad()
    ghost_backward(gsm, dp, nn.functional.cross_entropy(gsm(x), y, reduction="none"))
    dp.step()
    assert acc.total_count("dpsgd") == 2


def test_a_plain_backward_never_reaches_a_ghost_step():
    net = model()
    gsm = grad_sample_module(net, C)
    gsm, dp = make_private(
        gsm, torch.optim.SGD(net.parameters(), lr=1.0), noise_multiplier=1.0, max_grad_norm=C,
        sample_rate=0.1, num_samples=80, accountant=PrivacyAccountant("node", 1e-5),
    )  # fmt: skip
    x, y = batch()
    dp.zero_grad()
    nn.functional.cross_entropy(gsm(x), y).backward()  # unclipped gradient in p.grad
    with pytest.raises(RuntimeError, match="without a ghost-clipped gradient"):
        dp.step()


def test_batchnorm_is_refused_and_unwrap_returns_the_module():
    bn = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    with pytest.raises(ValueError, match="BatchNorm"):
        grad_sample_module(bn, 1.0)
    net = model()
    assert unwrap(grad_sample_module(net, 1.0)) is net and unwrap(net) is net
