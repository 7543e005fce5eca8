"""PoinDP's networks (nn/poincare.py): the encoder's embeddings are points of the ball and its
head reads the clipped tangent vectors; the paper-code network's noise scales are the authors'
formula on frozen, untrained networks."""

import math

import pytest
import torch
import torch.nn.functional as F

from lightning_dpgnn import hyperbolic as H
from lightning_dpgnn.nn.poincare import PaperCodeNet, PoincareEncoder, clip_norm


def test_the_encoder_embeds_into_the_ball_and_its_head_reads_clipped_tangents():
    torch.manual_seed(0)
    enc = PoincareEncoder(10, 4, 3, 2, clip=0.5, curvature=2.0)
    x = torch.randn(64, 10) * 20
    points = enc.embed(x)
    assert float(points.norm(dim=-1).max()) < 1 / math.sqrt(2.0)
    t = enc.tangent(x)
    assert float(t.norm(dim=-1).max()) <= 1.0 + 1e-6  # units of C
    torch.testing.assert_close(t * 0.5, clip_norm(H.logmap0(points, 2.0), 0.5))
    assert enc(x).shape == (64, 3)
    enc(x).sum().backward()  # differentiable end to end
    assert enc.mlp.net[0].weight.grad is not None


def test_clip_norm_scales_only_the_rows_above_the_bound():
    t = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    torch.testing.assert_close(clip_norm(t, 1.0), torch.tensor([[0.6, 0.8], [0.3, 0.4], [0, 0.0]]))


def test_the_paper_code_noise_scales_are_the_codes_formula_on_frozen_networks():
    torch.manual_seed(1)
    net = PaperCodeNet(8, 3, hidden=16)
    w = torch.tensor([[1.0, 1.0], [-0.5, 0.2]])
    sigma = net.sigmas(w, epsilon=2.0)
    # by hand: aware_i = sum of the leaky-ReLU outputs of branch i's two networks; gamma =
    # softmax over branches of the mean allocate output; sigma = sqrt(aware / (2 gamma eps))
    inputs = (w, w + torch.pi * (w < 0))
    outs = [torch.cat([F.leaky_relu(n(i)) for n in nets], 1)
            for nets, i in zip(net.sensitivity, inputs, strict=True)]
    gamma = torch.softmax(F.leaky_relu(net.allocate(torch.stack(outs, 1))).mean(0), 0)[:, 0]
    for b in range(2):
        expected = torch.sqrt((outs[b].sum(1) / (2 * gamma[b] * 2.0)).clamp_min(0))
        torch.testing.assert_close(sigma[b], expected)
    assert not any(p.requires_grad for p in net.allocate.parameters())
    assert net(torch.randn(5, 8), torch.tensor([[0, 1], [1, 0]])).shape == (2, 5, 3)


@pytest.mark.parametrize("dropout", [0.0, 0.6])
def test_the_paper_code_branches_are_two_gcns(dropout):
    net = PaperCodeNet(4, 2, dropout=dropout).eval()
    x = torch.randn(6, 4)
    edges = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    out = net(x, edges)
    assert out.shape == (2, 6, 2) and not torch.equal(out[0], out[1])  # separate weights
