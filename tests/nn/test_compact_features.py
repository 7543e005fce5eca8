"""Wide one-hot features travel as sparse CSR on full-batch paths, dense under DP-SGD."""

import torch

from lightning_dpgnn.methods import MLP as NodeMLP
from lightning_dpgnn.nn.mlp import MLP, compact_features


def one_hot_rows(n=300, width=500, per_row=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, width)
    x.scatter_(1, torch.randint(0, width, (n, per_row), generator=g), 1.0)
    return x


def test_wide_sparse_features_become_csr_and_others_stay_dense():
    x = one_hot_rows()
    assert compact_features(x).layout == torch.sparse_csr
    assert compact_features(torch.randn(300, 500)).layout == torch.strided  # dense values
    assert compact_features(one_hot_rows(width=64)).layout == torch.strided  # narrow
    assert compact_features(x.long()).layout == torch.strided  # not features


def test_mlp_output_and_weight_gradient_are_the_same_on_csr_input():
    x = one_hot_rows()
    torch.manual_seed(0)
    mlp = MLP(500, 3, hidden=8, layers=2, normalization="batch")
    grads = []
    outs = []
    for inp in (x, compact_features(x)):
        mlp.zero_grad()
        out = mlp(inp)
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append(mlp.net[0].weight.grad.clone())
    torch.testing.assert_close(outs[0], outs[1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-4, rtol=1e-5)


def test_an_identity_mlp_densifies_sparse_input():
    x = one_hot_rows()
    out = MLP(500, 500, layers=0)(compact_features(x))
    assert out.layout == torch.strided and torch.equal(out, x)


def test_training_rows_are_compacted_only_when_asked():
    from torch_geometric.data import Data

    x = one_hot_rows()
    data = Data(x=x, y=torch.zeros(300, dtype=torch.long), train_mask=torch.arange(300) < 200)
    module = NodeMLP("none")  # a row-trained method
    dense = module._train_rows("a", data, lambda: (data.x,))
    sparse = module._train_rows("a", data, lambda: (data.x,), compact=True)
    assert dense[0].layout == torch.strided and sparse[0].layout == torch.sparse_csr
    torch.testing.assert_close(sparse[0].to_dense(), x[:200])
    assert module._input_features(x) is module._input_features(x)  # cached per tensor


def test_sparse_linear_matches_dense_linear_in_output_and_every_parameter_gradient():
    from lightning_dpgnn.nn.mlp import sparse_linear

    x = one_hot_rows(n=50, width=300)
    xc = compact_features(x)
    layer = torch.nn.Linear(300, 7)
    g = torch.randn(50, 7, generator=torch.Generator().manual_seed(1))
    results = []
    for run in (lambda: torch.nn.functional.linear(x, layer.weight, layer.bias),
                lambda: sparse_linear(xc, layer), lambda: sparse_linear(xc, layer)):
        layer.zero_grad()
        out = run()
        (out * g).sum().backward()
        results.append((out.detach(), layer.weight.grad.clone(), layer.bias.grad.clone()))
    for got in results[1:]:  # the second call reuses the cached transpose
        for a, b in zip(results[0], got, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    from lightning_dpgnn.nn.mlp import _TRANSPOSED

    torch.testing.assert_close(_TRANSPOSED.get(xc, xc._version).to_dense(), x.t())
