"""MLP blocks shared by every method (encoders, base/head MLPs of GAP and ProGAP)."""

from __future__ import annotations

import torch
from torch import nn

from .._quiet import quiet_sparse
from ..caches import TensorCache
from ..levels import Level

__all__ = [
    "MLP",
    "make_activation",
    "make_norm",
    "resolve_normalization",
    "compact_features",
    "select_rows",
    "dense_features",
    "sparse_linear",
    "input_linear",
    "flush_subnormal_grad",
    "NORMALIZATIONS",
    "ORDERS",
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
    (BatchNorm mixes the samples of a batch, which per-sample clipping cannot bound); any other
    name is returned as given."""
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
    """A sparse CSR copy of a wide, mostly-zero feature matrix (one-hot codes), else ``x``;
    sparse COO features (kept sparse by the FB-scale reader) always become CSR.

    An :class:`MLP` whose first layer is linear gives the same output (to float rounding) on
    either form, and the same weight gradient; on Facebook100's one-hot features (2190-4714
    columns, ~5 non-zeros per row) the CSR product is ~15x cheaper. Only full-batch, non-DP-SGD
    paths use it: Opacus computes per-sample gradients from dense activations.
    """
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
    """``x[rows]`` for a dense tensor or a sparse COO feature matrix (which torch cannot index
    with a mask): ``rows`` is a boolean mask or an index; the result keeps ``x``'s layout, and
    ``select_rows(x, m).to_dense() == x.to_dense()[m]``."""
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
    """``x.t()`` as CSR, built once per CSR tensor (a declared cache): the backward of a
    product with CSR features needs ``x^T @ grad``, and transposing a CSR matrix sorts its
    non-zeros, which costs more than the product itself."""
    xt = _TRANSPOSED.get(x, x._version)
    if xt is None:
        with quiet_sparse():
            xt = _TRANSPOSED.put(x, x._version, x.t().to_sparse_csr())
    return xt


class _SparseLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` for constant CSR ``x``; backward ``grad^T @ x`` as
    ``(x^T @ grad)^T`` with the cached CSR transpose of ``x`` (no gradient for ``x``)."""

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
    """``layer(x)`` for a layer's input features ``x``, in its fastest exact form: CSR ``x``
    (:func:`compact_features`) gives the same output and parameter gradients as ``F.linear``
    (to float rounding), ~4x cheaper backward on one-hot rows because the transpose of ``x`` is
    built once, not at every step; a wide dense ``x`` goes through the layer itself with
    :func:`flush_subnormal_grad` on its output."""
    if x.layout == torch.sparse_csr and not x.requires_grad:
        return _SparseLinear.apply(x, layer.weight, layer.bias)
    return flush_subnormal_grad(layer(x), x)  # the module itself: Opacus hooks see the call


def input_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` in the fast forms of :func:`sparse_linear`, for a weight
    that is not one module's (e.g. two layers' weights stacked for one pass over ``x``), or
    for features kept factored (:class:`~lightning_dpgnn.nn.kprop.PropagatedCodes`)."""
    if not isinstance(x, torch.Tensor):
        return x.linear(weight, bias)
    if x.layout == torch.sparse_csr and not x.requires_grad:
        return _SparseLinear.apply(x, weight, bias)
    return flush_subnormal_grad(nn.functional.linear(x, weight, bias), x)


#: inputs at least this wide get :func:`flush_subnormal_grad`
WIDE_INPUT = 256


def flush_subnormal_grad(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``out``, the product of a wide dense input ``x`` (at least :data:`WIDE_INPUT` columns)
    with a weight, whose gradient arrives with its subnormal entries (below
    ``finfo.tiny``, ~1.2e-38 in float32) set to zero; other outputs are returned untouched.

    Saturated softmaxes back-propagate gradients of ~1e-39; a few percent of them in the
    ``[N, hidden]`` gradient make the weight gradient ``grad^T @ x``, the largest product of a
    step over wide features, 4x slower on x86 (subnormal arithmetic takes a slow path): LPGNN
    on Facebook page-page (22,470 x 4,714 KProp'd features) spent 293 ms in that product per
    step, 67 ms without them. Zeroing them is what flush-to-zero does (TensorFlow's and oneDNN's
    CPU default) for this one tensor, independent of the thread count and of the process-wide
    ``torch.set_flush_denormal`` (which reaches only the threads that existed when it was set).
    The change to a gradient is below 1.2e-38 per entry; under DP-SGD it can only shrink a
    per-sample gradient's norm, so the clipping bound holds.
    """
    if out.requires_grad and x.layout == torch.strided and x.dim() == 2 and (
        x.size(-1) >= WIDE_INPUT
    ):
        out.register_hook(_zero_subnormals)
    return out


def _zero_subnormals(grad: torch.Tensor) -> torch.Tensor:
    return grad.masked_fill(grad.abs() < torch.finfo(grad.dtype).tiny, 0.0)


class MLP(nn.Module):
    """``layers`` linear layers; hidden ones followed by activation -> norm -> dropout
    (``order="act_norm"``, the GAP/ProGAP reference's order) or norm -> activation -> dropout
    (``order="norm_act"``).

    ``layers=0`` is the identity (GAP's ``base_layers=0``). ``plain_last=True`` leaves the last
    layer without norm/activation (a logits head). ``norm_groups`` is the group count of
    ``normalization="group"`` (1 group when it does not divide the width; ProGAP's node level
    uses 1, as in the thesis §5.5.3).
    """

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
