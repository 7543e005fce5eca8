"""MLP blocks shared by every method (encoders, base/head MLPs of GAP and ProGAP)."""

from __future__ import annotations

import torch
from torch import nn

from .._quiet import quiet_sparse
from ..caches import TensorCache
from ..levels import Level

__all__ = [
    "MLP", "make_activation", "make_norm", "resolve_normalization", "compact_features",
    "select_rows", "dense_features", "sparse_linear", "input_linear", "flush_subnormal_grad",
    "NORMALIZATIONS", "ORDERS",
]

#: normalization name -> ``layer(dim, groups)`` (groups: 1 when ``groups`` does not divide dim)
_NORMS = {
    "none": lambda dim, groups: nn.Identity(),
    "batch": lambda dim, groups: nn.BatchNorm1d(dim),
    "layer": lambda dim, groups: nn.LayerNorm(dim),
    "group": lambda dim, groups: nn.GroupNorm(groups if dim % groups == 0 else 1, dim),
}
NORMALIZATIONS = tuple(_NORMS)
ORDERS = ("act_norm", "norm_act")


def resolve_normalization(kind: str, privacy: str, node_level: str = "none") -> str:
    """``"auto"`` is BatchNorm at edge level and without privacy, ``node_level`` at node level
    (per-sample clipping cannot bound BatchNorm); other names are returned as given."""
    if kind != "auto":
        return kind
    return node_level if Level.of(privacy) is Level.NODE else "batch"


_ACTIVATIONS = {"relu": nn.ReLU, "selu": nn.SELU, "tanh": nn.Tanh, "gelu": nn.GELU}


def make_activation(name: str) -> nn.Module:
    """An activation module by name (``relu``, ``selu``, ``tanh``, ``gelu``)."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {name!r}")
    return _ACTIVATIONS[name]()


def make_norm(kind: str, dim: int, groups: int = 4) -> nn.Module:
    """A normalization layer by name. ``"batch"`` is rejected later under node-level DP."""
    if kind not in _NORMS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {kind!r}")
    return _NORMS[kind](dim, groups)


def compact_features(
    x: torch.Tensor, *, max_density: float = 0.05, min_width: int = 256
) -> torch.Tensor:
    """A sparse CSR copy of a wide, mostly-zero (or sparse COO) feature matrix, else ``x``: the same
    :class:`MLP` output and gradients (full-batch, non-DP-SGD paths only)."""
    if x.layout == torch.sparse_coo:  # features kept sparse by the reader (FB-scale)
        with quiet_sparse():
            return x.coalesce().to_sparse_csr()
    if x.layout != torch.strided or x.dim() != 2 or not x.is_floating_point():
        return x
    if x.size(1) < min_width or int(torch.count_nonzero(x)) > max_density * x.numel():
        return x
    with quiet_sparse():
        return x.to_sparse_csr()


def select_rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x[rows]`` for a dense or sparse COO ``x``, keeping its layout."""
    if x.layout != torch.sparse_coo:
        return x[rows]
    if rows.dtype != torch.bool:
        return x.index_select(0, rows.to(torch.long))
    x = x.coalesce()
    r, c = x.indices()
    keep = rows[r]
    new_row = torch.cumsum(rows, 0) - 1
    indices = torch.stack([new_row[r[keep]], c[keep]])
    size = (int(rows.sum()), *x.shape[1:])
    return torch.sparse_coo_tensor(
        indices, x.values()[keep], size, is_coalesced=True, check_invariants=False
    )


def dense_features(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a dense tensor (sparse features densified; dense ones returned as they are)."""
    return x.to_dense() if x.layout != torch.strided else x


#: the CSR transposes of sparse feature matrices (cleared by ``clear_caches``)
_TRANSPOSED = TensorCache("csr transpose", size=8)


def _transposed(x: torch.Tensor) -> torch.Tensor:
    """``x.t()`` as CSR, built once per CSR tensor (transposing costs more than the product)."""
    xt = _TRANSPOSED.get(x, x._version)
    if xt is None:
        with quiet_sparse():
            xt = _TRANSPOSED.put(x, x._version, x.t().to_sparse_csr())
    return xt


class _SparseLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` for a constant CSR ``x``, backward through its cached transpose."""

    @staticmethod
    def forward(ctx, x, weight, bias):  # type: ignore[override]
        ctx.x = x
        ctx.has_bias = bias is not None
        out = x @ weight.t()
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        grad_w = (_transposed(ctx.x) @ grad).t() if ctx.needs_input_grad[1] else None
        grad_b = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return None, grad_w, grad_b


def sparse_linear(x: torch.Tensor, layer: nn.Module) -> torch.Tensor:
    """``layer(x)`` in its fastest exact form: a CSR ``x`` through :class:`_SparseLinear`, a
    dense one through the layer itself with :func:`flush_subnormal_grad`."""
    if x.layout == torch.sparse_csr and not x.requires_grad:
        return _SparseLinear.apply(x, layer.weight, layer.bias)
    return flush_subnormal_grad(layer(x), x)  # the module itself: Opacus hooks see the call


def input_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` in the fast forms of :func:`sparse_linear`, for a weight
    that is not one module's, or for factored features (``PropagatedCodes``)."""
    if not isinstance(x, torch.Tensor):
        return x.linear(weight, bias)
    if x.layout == torch.sparse_csr and not x.requires_grad:
        return _SparseLinear.apply(x, weight, bias)
    return flush_subnormal_grad(nn.functional.linear(x, weight, bias), x)


#: inputs at least this wide get :func:`flush_subnormal_grad`
WIDE_INPUT = 256


def flush_subnormal_grad(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``out`` (a product of a wide dense ``x`` with a weight) with its gradient's subnormal entries
    zeroed: they make ``grad^T @ x`` ~4x slower on x86; zeroing only shrinks a per-sample norm."""
    if out.requires_grad and x.layout == torch.strided and x.dim() == 2 and (
        x.size(-1) >= WIDE_INPUT
    ):
        out.register_hook(_zero_subnormals)
    return out


def _zero_subnormals(grad: torch.Tensor) -> torch.Tensor:
    return grad.masked_fill(grad.abs() < torch.finfo(grad.dtype).tiny, 0.0)


class MLP(nn.Module):
    """``layers`` linear layers (0: identity), each but a ``plain_last`` one followed by
    activation -> norm -> dropout (``order="act_norm"``) or norm -> activation -> dropout."""

    def __init__(
        self, in_dim: int, out_dim: int, hidden: int = 16, layers: int = 2, *,
        dropout: float = 0.0, normalization: str = "none", activation: str = "selu",
        plain_last: bool = True, norm_groups: int = 4, order: str = "act_norm",
    ) -> None:
        super().__init__()
        if layers < 0:
            raise ValueError(f"layers must be >= 0, got {layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        make_activation(activation)  # validates
        self.in_dim, self.out_dim = in_dim, (out_dim if layers else in_dim)
        mods: list[nn.Module] = []
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        for i in range(layers):
            mods.append(nn.Linear(dims[i], dims[i + 1]))
            last = i == layers - 1
            if not (last and plain_last):
                norm = make_norm(normalization, dims[i + 1], norm_groups)
                act = make_activation(activation)
                pair = [act, norm] if order == "act_norm" else [norm, act]
                mods += [*pair, nn.Dropout(dropout)]
        self.net = nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.net and isinstance(self.net[0], nn.Linear)):
            return self.net(x if x.layout == torch.strided else x.to_dense())
        return self.net[1:](sparse_linear(x, self.net[0]))
