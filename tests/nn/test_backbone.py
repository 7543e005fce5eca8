"""GNNBackbone's fast paths equal PyG's layers: GraphSAGE on a CSR adjacency (project, then
aggregate), GCN on a sparse adjacency of gcn_norm's weights, and wide mostly-zero features taken
as CSR by the first layer, each converted once per tensor."""

from __future__ import annotations

import pytest
import torch

from lightning_dpgnn.nn import backbone as backbone_module
from lightning_dpgnn.nn.backbone import GNNBackbone


def pyg_forward(net: GNNBackbone, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The backbone's layers run through PyG's own convolutions on the edge list."""
    for i, conv in enumerate(net.convs):
        x = conv(x, edge_index)
        if i < len(net.norms):
            x = torch.nn.functional.dropout(net.act(net.norms[i](x)), net.dropout, net.training)
    return x


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

    ref = pyg_forward(net, x, ei)
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


def wide_sparse_features(n: int, d: int = 300, seed: int = 0) -> torch.Tensor:
    """Bag-of-words rows: ~2% ones (below compact_features' 5%), width >= 256."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, d, generator=g) < 0.02).float()


def messy_graph(n: int = 40, seed: int = 0) -> torch.Tensor:
    """Random edges plus a repeated edge and a self-loop; node n - 1 isolated."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n - 1, (2, 160), generator=g)
    return torch.cat([ei, ei[:, :3], torch.tensor([[4], [4]])], dim=1)


def simple_graph(n: int = 40, seed: int = 0) -> torch.Tensor:
    from torch_geometric.utils import coalesce, remove_self_loops

    return coalesce(remove_self_loops(messy_graph(n, seed))[0], num_nodes=n)


@pytest.mark.parametrize("conv,edges", [("gcn", messy_graph), ("gcn", simple_graph),
                                        ("sage", simple_graph), ("sage", messy_graph)])
@pytest.mark.parametrize("features", ["wide-sparse", "dense"])
def test_forward_on_an_edge_list_equals_pyg(conv, edges, features):
    """Output and every parameter gradient equal PyG's layers on the edge list, for repeated
    edges, a self-loop and an isolated node, with one-hot and dense features (GCN: the sparse
    gcn_norm adjacency; SAGE: its CSR path where the graph is simple, PyG's otherwise)."""
    n = 40
    torch.manual_seed(0)
    x = wide_sparse_features(n) if features == "wide-sparse" else torch.randn(n, 300)
    net = GNNBackbone(conv, 300, 16, 3, layers=2, activation="relu")
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.1)
    ei = edges(n)
    out = net(x, ei)
    out.square().sum().backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    ref = pyg_forward(net, x, ei)
    ref.square().sum().backward()
    assert torch.allclose(out, ref, atol=1e-5, rtol=1e-4)
    for got, want in zip(grads, [p.grad for p in net.parameters()], strict=True):
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_the_fast_forms_are_built_once_per_tensor_and_rebuilt_after_an_edit(monkeypatch):
    """Full-batch training feeds the same tensors: one conversion for many steps; an in-place
    edit of the edges (or new features) is seen at the next call, never served stale."""
    made = {"graph": 0, "features": 0}
    adjacency, compact = GNNBackbone.adjacency, backbone_module.compact_features

    def count_graph(self, *a, **k):
        made["graph"] += 1
        return adjacency(self, *a, **k)

    def count_features(x):
        made["features"] += 1
        return compact(x)

    monkeypatch.setattr(GNNBackbone, "adjacency", count_graph)
    monkeypatch.setattr(backbone_module, "compact_features", count_features)
    backbone_module._GRAPHS.clear()
    backbone_module._FEATURES.clear()
    n = 40
    net = GNNBackbone("gcn", 300, 8, 3)
    x, ei = wide_sparse_features(n), simple_graph(n)
    for _ in range(5):
        net(x, ei).sum().backward()
    assert made == {"graph": 1, "features": 1}
    before = net(x, ei).detach()
    ei[1, 0] = (ei[1, 0] + 1) % n  # move one edge in place
    after = net(x, ei)
    assert made["graph"] == 2
    assert torch.allclose(after, pyg_forward(net, x, ei), atol=1e-5)
    assert not torch.allclose(after, before)
    x2 = x.clone()
    x2[0, :5] = 1.0
    net(x2, ei)
    assert made["features"] == 2


def test_features_that_require_grad_stay_dense_and_get_their_gradient():
    """An attacker's features (influence attacks differentiate through them) take the dense
    path, and their gradient equals PyG's."""
    n = 40
    net = GNNBackbone("gcn", 300, 8, 3)
    ei = simple_graph(n)
    x = wide_sparse_features(n).requires_grad_()
    net(x, ei).square().sum().backward()
    got = x.grad.clone()
    x.grad = None
    pyg_forward(net, x, ei).square().sum().backward()
    assert torch.allclose(got, x.grad, atol=1e-5)


def test_inference_mode_inputs_give_the_same_logits():
    n = 40
    net = GNNBackbone("sage", 300, 8, 3).eval()
    ei, x = simple_graph(n), wide_sparse_features(n)
    with torch.inference_mode():
        xi, eii = x.clone(), ei.clone()
        first, second = net(xi, eii), net(xi, eii)
    assert torch.allclose(first, pyg_forward(net, x, ei), atol=1e-5)
    assert torch.equal(first, second)
