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
    dense = module.row_trainer.node_rows("a", data, lambda: (data.x,))
    sparse = module.row_trainer.node_rows("a", data, lambda: (data.x,), compact=True)
    assert dense[0].layout == torch.strided and sparse[0].layout == torch.sparse_csr
    torch.testing.assert_close(sparse[0].to_dense(), x[:200])
    features = module.row_trainer.input_features
    assert features(x) is features(x)  # cached per tensor


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


def subnormal_grad(n: int, width: int, seed: int = 2) -> torch.Tensor:
    """An output gradient like a saturated softmax's: normal entries and ~5% subnormal ones."""
    g = torch.Generator().manual_seed(seed)
    grad = torch.randn(n, width, generator=g) * 1e-6
    return torch.where(torch.rand(n, width, generator=g) < 0.05, torch.tensor(3e-39), grad)


def test_wide_dense_inputs_get_weight_gradients_without_subnormal_terms():
    """Through ``sparse_linear``, ``input_linear``, an ``MLP`` and a GraphSAGE backbone, a wide
    dense input's weight gradient is ``(grad with subnormals zeroed)^T @ x``: exactly what
    flush-to-zero computes; a narrow input's gradient is left as it is."""
    from lightning_dpgnn.nn.backbone import GNNBackbone
    from lightning_dpgnn.nn.mlp import WIDE_INPUT, input_linear, sparse_linear

    tiny = torch.finfo(torch.float32).tiny
    for width in (WIDE_INPUT, 64):
        x = torch.randn(40, width)
        layer = torch.nn.Linear(width, 8)
        grad = subnormal_grad(40, 8)
        assert bool(((grad.abs() < tiny) & (grad != 0)).any())
        flushed = grad.masked_fill(grad.abs() < tiny, 0.0)
        want = (flushed if width >= WIDE_INPUT else grad).t() @ x
        for out in (sparse_linear(x, layer), input_linear(x, layer.weight, layer.bias)):
            layer.zero_grad()
            out.backward(grad)
            assert torch.equal(layer.weight.grad, want), width
    mlp = MLP(WIDE_INPUT, 8, layers=1)
    x = torch.randn(40, WIDE_INPUT)
    mlp(x).backward(subnormal_grad(40, 8))
    grad = subnormal_grad(40, 8)
    assert torch.equal(mlp.net[0].weight.grad, grad.masked_fill(grad.abs() < tiny, 0).t() @ x)
    # GraphSAGE projects first: both weights' gradients come from the flushed product
    ei = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    body = GNNBackbone("sage", WIDE_INPUT, 8, 8, layers=1)
    hooked = []
    real = torch.Tensor.register_hook
    torch.Tensor.register_hook = lambda t, fn: hooked.append(fn) or real(t, fn)
    try:
        body(torch.randn(4, WIDE_INPUT), ei).sum().backward()
    finally:
        torch.Tensor.register_hook = real
    assert len(hooked) == 1
    assert torch.equal(hooked[0](torch.tensor([3e-39, 1e-6, -3e-39])),
                       torch.tensor([0.0, 1e-6, 0.0]))
