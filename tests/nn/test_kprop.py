"""PropagatedCodes: KProp of affinely rectified sparse codes, kept factored, is the dense
KProp of the rectified features for every product a layer takes from it."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.utils import coalesce

from lightning_dpgnn.nn.backbone import GNNBackbone
from lightning_dpgnn.nn.kprop import KProp, PropagatedCodes
from lightning_dpgnn.privacy.ldp import MultiBit


def codes_and_graph(n: int = 30, d: int = 300, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g)
    codes = MultiBit(1.0, m=2).sample(x, generator=g)  # int8, 2 non-zeros per row
    ei = torch.randint(0, n - 1, (2, 90), generator=g)  # node n - 1 isolated
    return codes, coalesce(torch.cat([ei, ei.flip(0)], 1), num_nodes=n)


@pytest.mark.parametrize("steps", [0, 1, 3])
@pytest.mark.parametrize("bounds", ["scalar", "per-column"])
def test_the_factored_product_equals_the_dense_kprop_of_the_rectified_codes(steps, bounds):
    codes, ei = codes_and_graph()
    n, d = codes.shape
    alpha, beta = (0.0, 1.0) if bounds == "scalar" else (torch.zeros(d), torch.linspace(1, 3, d))
    mb = MultiBit(1.0, alpha=alpha, beta=beta, m=2)
    dense = KProp(steps)(mb.rectify(codes, torch.float32), ei)
    kprop = KProp(steps)
    h = PropagatedCodes(codes.to_sparse(), *mb.rectifier(d), kprop.adjacency(ei, n), steps)
    torch.testing.assert_close(h.dense(), dense, atol=1e-3, rtol=1e-5)
    weight = torch.randn(16, d, requires_grad=True)
    bias = torch.randn(16, requires_grad=True)
    grad = torch.randn(n, 16)
    got = h.linear(weight, bias)
    got.backward(grad)
    got_grads = weight.grad.clone(), bias.grad.clone()
    weight.grad = bias.grad = None
    want = torch.nn.functional.linear(dense, weight, bias)
    want.backward(grad)
    scale = want.detach().abs().max()
    assert (got - want).abs().max() < 1e-5 * scale
    assert (got_grads[0] - weight.grad).abs().max() < 1e-5 * weight.grad.abs().max()
    torch.testing.assert_close(got_grads[1], bias.grad)
    assert bool((got[n - 1] - bias).abs().max() < 1e-5 * scale) == (steps > 0)  # isolated


@pytest.mark.parametrize("conv", ["sage", "gcn", "gat"])
def test_a_backbone_gives_the_logits_of_the_dense_features(conv):
    """SAGE (narrowing) and GCN multiply the factors; GAT asks for the dense matrix."""
    codes, ei = codes_and_graph()
    n, d = codes.shape
    mb = MultiBit(1.0, m=2)
    kprop = KProp(2)
    h = PropagatedCodes(codes, *mb.rectifier(d), kprop.adjacency(ei, n), 2)
    torch.manual_seed(0)
    net = GNNBackbone(conv, d, 8, 3, activation="relu")
    adj = net.adjacency(ei, n)
    want = net(kprop(mb.rectify(codes, torch.float32), ei), adj)
    got = net(h, adj)
    torch.testing.assert_close(got, want, atol=1e-3 * want.abs().max().item(), rtol=1e-4)
    assert (h._dense is not None) == (conv == "gat")  # only GAT materialises h
