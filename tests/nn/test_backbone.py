"""GNNBackbone's fast GraphSAGE path (CSR adjacency, project-then-aggregate) equals PyG's."""

from __future__ import annotations

import pytest
import torch

from lightning_dpgnn.nn.backbone import GNNBackbone


def graph():
    # node 5 is isolated: its mean aggregate is zero and the layer output is bias + root term
    ei = torch.tensor([[0, 1, 1, 2, 3, 4, 0, 3], [1, 0, 2, 1, 4, 3, 3, 0]])
    return ei, 6


@pytest.mark.parametrize("in_dim,hidden", [(12, 4), (3, 8)])  # narrowing and widening layer 1
def test_sage_csr_path_matches_edge_index_path(in_dim, hidden):
    torch.manual_seed(0)
    ei, n = graph()
    net = GNNBackbone("sage", in_dim, hidden, 3, layers=2)
    for p in net.parameters():  # non-zero biases, so the isolated node's bias term is checked
        torch.nn.init.normal_(p)
    x = torch.randn(n, in_dim)
    adj = net.adjacency(ei, n)
    assert adj.layout == torch.sparse_csr

    ref = net(x, ei)
    ref.square().sum().backward()
    ref_grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    out = net(x, adj)
    out.square().sum().backward()

    assert torch.allclose(out, ref, atol=1e-5, rtol=1e-5)
    assert (out[5] - ref[5]).abs().max() < 1e-5  # isolated node
    for got, want in zip(ref_grads, [p.grad for p in net.parameters()], strict=True):
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_sage_project_first_differs_from_a_wrong_bias_handling():
    """The isolated node gets exactly ``b_l + lin_r(x)``: a version adding ``A @ 1 * b`` or
    dropping the bias would fail here."""
    torch.manual_seed(1)
    ei, n = graph()
    net = GNNBackbone("sage", 12, 4, 3, layers=1)
    conv = net.convs[0]
    torch.nn.init.normal_(conv.lin_l.bias)
    x = torch.randn(n, 12)
    out = net(x, net.adjacency(ei, n))
    assert torch.allclose(out[5], conv.lin_l.bias + conv.lin_r(x[5]), atol=1e-6)
    neighbours = x[[1, 3]].mean(0)  # node 0 receives from 1 and 3
    assert torch.allclose(out[0], conv.lin_l(neighbours) + conv.lin_r(x[0]), atol=1e-5)


def test_adjacency_falls_back_to_edge_index_with_repeated_edges():
    ei = torch.tensor([[0, 0, 1], [1, 1, 0]])
    net = GNNBackbone("sage", 4, 2, 2)
    assert net.adjacency(ei, 2) is ei
    ei, n = graph()
    assert GNNBackbone("gcn", 4, 2, 2).adjacency(ei, n) is ei


def test_a_body_without_a_plain_last_layer_ends_in_norm_activation():
    x, ei = torch.randn(30, 6), torch.randint(0, 30, (2, 90))
    body = GNNBackbone("gcn", 6, 8, 8, layers=1, activation="relu", batch_norm=True,
                       plain_last=False)
    body.eval()
    assert isinstance(body.norms[0], torch.nn.BatchNorm1d)
    assert bool((body(x, ei) >= 0).all())  # ReLU after the last convolution
    head = GNNBackbone("gcn", 6, 8, 8, layers=1, activation="relu")
    assert len(head.norms) == 0 and bool((head(x, ei) < 0).any())  # logits as they are
