"""FLOP formulas: PyTorch's registry plus the CPU kernels it leaves out.

Every formula here has the *raw* signature ``formula(args, kwargs, out) -> int``: the operator's
own arguments and result. PyTorch's shape formulas are adapted to it exactly the way
``FlopCounterMode`` calls them (``f(*args, **kwargs, out_val=out)`` on the registry's wrapped
functions), so the counts agree with PyTorch wherever PyTorch has a formula.

Convention (PyTorch's): a multiply-accumulate is 2 FLOPs; bias adds, activations, softmax, masks
and other elementwise work inside a fused kernel are not counted, so a fused kernel counts exactly
what its unfused equivalent counts under the same convention. That is what makes a transformer or an
LSTM count the same whichever kernel ran.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

import torch
from torch.utils import flop_counter

__all__ = [
    "COMPOSITE_FALLBACKS",
    "RawFormula",
    "builtin_formulas",
    "from_shape_formula",
    "rnn_flops",
    "sdpa_flops",
    "shapes_of",
]

#: ``(args, kwargs, out) -> FLOPs`` of one call.
RawFormula = Callable[[tuple[Any, ...], Mapping[str, Any], Any], int]

aten = torch.ops.aten


def from_shape_formula(formula: Callable[..., Any], *, raw: bool = False) -> RawFormula:
    """Adapt a ``FlopCounterMode``-style formula to the raw signature.

    ``raw=False``: ``formula(*shapes, out_shape=..., **kwargs)`` with every tensor replaced by its
    shape (``torch.utils.flop_counter.shape_wrapper``); ``raw=True``: ``formula(*args,
    out_val=out, **kwargs)`` with the tensors themselves, as ``register_flop_formula(...,
    get_raw=True)`` formulas and the registry's already wrapped entries expect.
    """
    if raw:

        def counted_raw(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
            return int(formula(*args, **kwargs, out_val=out))

        return counted_raw

    def on_shapes(args: Any, kwargs: Mapping[str, Any], out: Any) -> int:
        return int(formula(*args, out_shape=out, **kwargs))

    def counted(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
        # What ``flop_counter.shape_wrapper`` does, without pytree: formulas run on every counted
        # operator, and pytree's flatten/unflatten dominated their cost.
        shaped_kwargs = {key: _shapes(value) for key, value in kwargs.items()}
        return on_shapes(_shapes(args), shaped_kwargs, _shapes(out))

    # A caller may take the shapes now and apply the formula later (``shapes_of``).
    counted.on_shapes = on_shapes  # type: ignore[attr-defined]
    return counted


def shapes_of(value: Any) -> Any:
    """``value`` as a shape formula takes it: every tensor replaced by its shape."""
    return _shapes(value)


def _shapes(value: Any) -> Any:
    """``value`` with every tensor replaced by its shape, through tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return value.shape
    kind = type(value)
    if kind is list or kind is tuple:
        for item in value:
            if type(item) is not int:
                break
        else:
            return value  # sizes, strides, paddings: nothing to replace
    if isinstance(value, (tuple, list)):
        # Named tuples and return-type structs become plain tuples: formulas index them.
        items = [item if type(item) is int else _shapes(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {key: _shapes(item) for key, item in value.items()}
    return value


def _tokens(tensor: Any) -> int:
    """Rows fed to a feature-last kernel: every element of ``tensor`` divided by its features."""
    features = int(tensor.shape[-1])
    return int(tensor.numel()) // features if features else 0


def _sequence_lengths(tensor: Any) -> list[int]:
    """Lengths of the sequences in a ``(batch, length, features)`` or ``(length, features)`` input.

    A nested tensor (the fast path's padding-free form) gives each sequence's own length, so the
    count is the work the kernel did on the tokens it was given.
    """
    if getattr(tensor, "is_nested", False):
        sizes = tensor._nested_tensor_size()
        return [int(length) for length in sizes[:, 0].tolist()]
    if tensor.dim() == 2:
        return [int(tensor.shape[0])]
    return [int(tensor.shape[1])] * int(tensor.shape[0])


def sdpa_flops(query: Any, key: Any, value: Any) -> int:
    """Scores ``q @ k^T`` and context ``p @ v`` of scaled-dot-product attention, any batch dims.

    Key and value may have fewer heads (grouped-query attention); the kernel broadcasts them, so
    the batch is the query's.
    """
    batch = prod(int(size) for size in query.shape[:-2])
    length_q, head_dim = int(query.shape[-2]), int(query.shape[-1])
    length_kv, value_dim = int(key.shape[-2]), int(value.shape[-1])
    return 2 * batch * length_q * length_kv * (head_dim + value_dim)


def _sdpa(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    query, key, value = (_argument(args, kwargs, index, name) for index, name in _QKV)
    return sdpa_flops(query, key, value)


_QKV = ((0, "query"), (1, "key"), (2, "value"))


def _sdpa_backward(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # (grad_out, query, key, value, ...): the scores are recomputed, then gradients flow through
    # ``p @ v`` (grad of p and of v) and ``q @ k^T`` (grad of q and of k): five matmuls, as
    # PyTorch's sdpa_backward_flop_count.
    query, key, value = args[1], args[2], args[3]
    batch = prod(int(size) for size in query.shape[:-2])
    length_q, head_dim = int(query.shape[-2]), int(query.shape[-1])
    length_kv, value_dim = int(key.shape[-2]), int(value.shape[-1])
    return 2 * batch * length_q * length_kv * (3 * head_dim + 2 * value_dim)


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs[name]


def _attention_flops(
    query_lengths: Sequence[int], key_lengths: Sequence[int], embed_dim: int
) -> int:
    """Multi-head attention over ``embed_dim`` channels: q/k/v/output projections, scores, context.

    Heads split the channels, so the head count does not change the count.
    """
    total = 0
    for length_q, length_kv in zip(query_lengths, key_lengths, strict=True):
        projections = 2 * embed_dim * embed_dim * (2 * length_q + 2 * length_kv)
        attention = 2 * 2 * length_q * length_kv * embed_dim
        total += projections + attention
    return total


def _native_multi_head_attention(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::_native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, ...):
    # the MultiheadAttention inference fast path; the same matmuls as the slow path.
    query, key = args[0], args[1]
    embed_dim = int(_argument(args, kwargs, 3, "embed_dim"))
    return _attention_flops(_sequence_lengths(query), _sequence_lengths(key), embed_dim)


def _transformer_encoder_layer_fwd(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any
) -> int:
    # aten::_transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias,
    # proj_weight, proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2,
    # norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type): the
    # TransformerEncoderLayer inference fast path = self-attention + the two feed-forward linears.
    src = args[0]
    embed_dim = int(_argument(args, kwargs, 1, "embed_dim"))
    ffn_weight_1 = _argument(args, kwargs, 14, "ffn_weight_1")
    ffn_weight_2 = _argument(args, kwargs, 16, "ffn_weight_2")
    lengths = _sequence_lengths(src)
    feed_forward = 2 * sum(lengths) * (int(ffn_weight_1.numel()) + int(ffn_weight_2.numel()))
    return _attention_flops(lengths, lengths, embed_dim) + feed_forward


def rnn_flops(tokens: int, weights: Sequence[Any]) -> int:
    """Gate (and projection) matmuls of a recurrent layer: each 2-D weight meets every token once.

    ``weight_ih`` (gates x input), ``weight_hh`` (gates x hidden) and, with ``proj_size``,
    ``weight_hr`` are applied once per time step per sequence; biases and the gate nonlinearities
    are elementwise and not counted, as in the unfused ``addmm``/``mm`` path.
    """
    return 2 * tokens * sum(int(weight.numel()) for weight in weights if weight.dim() == 2)


def _mkldnn_rnn_layer(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::mkldnn_rnn_layer(input, weight0 (w_ih), weight1 (w_hh), weight2, weight3 (biases), ...):
    # one layer, one direction of nn.LSTM on CPU (oneDNN).
    return rnn_flops(_tokens(args[0]), (args[1], args[2]))


def _mkldnn_rnn_layer_backward(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::mkldnn_rnn_layer_backward(input, weight1, weight2, ...): the kernel computes the
    # gradients of the inputs/hidden states and of both weights: two matmuls per forward matmul.
    return 2 * rnn_flops(_tokens(args[0]), (args[1], args[2]))


def _rnn_full(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::lstm/gru/rnn_tanh/rnn_relu, overloads .input(input, hx, params, ...) and
    # .data(data, batch_sizes, hx, params, ...): every layer and direction sees every token.
    # These are composite: normally decomposed into the kernels that ran; this is a fallback.
    data = args[0]
    params = args[3] if isinstance(args[1], torch.Tensor) else args[2]
    return rnn_flops(_tokens(data), params)


def _rnn_cell(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::lstm_cell/gru_cell/rnn_tanh_cell/rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
    # composite; fallback when it cannot be decomposed.
    return rnn_flops(_tokens(args[0]), (args[2], args[3]))


def _linear(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # aten::linear(input, weight, bias): composite fallback; 2 x rows x in x out, bias not counted.
    return 2 * _tokens(args[0]) * int(args[1].numel())


def _mv(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    matrix = args[0]
    return 2 * int(matrix.numel())


def _addmv(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    return 2 * int(args[1].numel())


def _dot(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    return 2 * int(args[0].numel())


def _addr(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # self + vec1 (x) vec2: one multiply-add per output element.
    return 2 * int(args[1].numel()) * int(args[2].numel())


def _addbmm(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # self + sum_b batch1[b] @ batch2[b]: the batched matmul; the batch sum rides on the adds.
    batch1, batch2 = args[1], args[2]
    batches, rows, inner = (int(size) for size in batch1.shape)
    return 2 * batches * rows * inner * int(batch2.shape[-1])


def _addmm_activation(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    # addmm followed by a fused relu/gelu: the matmul only.
    rows, inner = (int(size) for size in args[1].shape)
    return 2 * rows * inner * int(args[2].shape[-1])


def _group_sizes(offs: Any, extent: int) -> list[int]:
    """Sizes of the groups ``offs`` cuts a dimension of ``extent`` into, as the kernel slices it.

    ``offs`` holds the cumulative end of each group (group ``g`` is ``[offs[g - 1], offs[g])``,
    the first starting at 0; cumulative counts, never negative). The kernel slices the dimension
    with these bounds, so each is clamped to ``extent`` and a group whose end is before its start
    is empty: positions past the last offset belong to no group and are not computed. Reads the
    values of ``offs``: one small integer tensor, one value per group (a device-to-host copy
    where it lives on an accelerator).
    """
    sizes = []
    start = 0
    for end in offs.tolist():
        low, high = min(max(start, 0), extent), min(max(int(end), 0), extent)
        sizes.append(max(high - low, 0))
        start = int(end)
    return sizes


def _grouped_mm(args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
    """``aten::_grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None)``: one matmul a group.

    2 x the sum over groups of ``m_g x k_g x n_g``, whatever the layout (``torch.nn.functional.
    grouped_mm``; the mixture-of-experts layers of transformers 5 run it, one group per expert):

    - 3D x 3D, ``(G, m, k) @ (G, k, n)``, no ``offs``: a batched matmul, ``2 x G x m x k x n``;
    - 2D x 3D, ``(M, k) @ (G, k, n)``: ``offs`` cuts the rows of ``self`` into ``G`` groups, group
      ``g`` times ``mat2[g]`` (the experts' forward: tokens sorted by expert);
    - 3D x 2D, ``(G, m, k) @ (k, N)``: ``offs`` cuts the columns of ``mat2``, ``self[g]`` times
      group ``g``;
    - 2D x 2D, ``(m, K) @ (K, n)`` to ``(G, m, n)``: ``offs`` cuts the contraction dimension, one
      matmul per group (the experts' weight gradient).

    Where ``offs`` is given its values are read (see ``_group_sizes``): rows, columns or
    contraction positions past the last offset are not computed and not counted. A bias (not
    supported by PyTorch yet) would be an add, not counted.
    """
    mat_a = _argument(args, kwargs, 0, "self")
    mat_b = _argument(args, kwargs, 1, "mat2")
    a_2d, b_2d = mat_a.dim() == 2, mat_b.dim() == 2
    if not a_2d and not b_2d:
        groups, rows, inner = (int(size) for size in mat_a.shape)
        return 2 * groups * rows * inner * int(mat_b.shape[-1])
    offs = args[2] if len(args) > 2 else kwargs.get("offs")
    if offs is None:
        raise ValueError("aten::_grouped_mm with a 2-D operand needs offs")
    if a_2d and not b_2d:
        rows, inner = (int(size) for size in mat_a.shape)
        grouped = sum(_group_sizes(offs, rows))
        return 2 * grouped * inner * int(mat_b.shape[-1])
    if b_2d and not a_2d:
        _, rows, inner = (int(size) for size in mat_a.shape)
        grouped = sum(_group_sizes(offs, int(mat_b.shape[1])))
        return 2 * rows * inner * grouped
    # Both operands are sliced along the contraction dimension: a call that ran has groups that
    # fit both, so the shorter bounds them.
    contraction = min(int(mat_a.shape[1]), int(mat_b.shape[0]))
    grouped = sum(_group_sizes(offs, contraction))
    return 2 * int(mat_a.shape[0]) * grouped * int(mat_b.shape[1])


def _convolution_backward(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    _groups: int,
    output_mask: Sequence[bool],
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """``aten::convolution_backward``: each gradient it computes costs what the forward costs.

    The input gradient is a convolution of ``grad_output`` with the weight, the weight gradient a
    convolution of the input with ``grad_output``: each makes the forward's multiply-accumulates,
    ``C_out x C_in / groups x kernel`` at every output position of every sample (a transposed
    convolution: at every input position), whatever ``groups`` is. PyTorch's
    ``conv_backward_flop`` counts the weight gradient as if ``groups`` were 1, ``groups`` times
    too many for a grouped or depthwise convolution; it agrees with this formula when
    ``groups == 1``.
    """
    spatial = (x_shape if transposed else grad_out_shape)[2:]
    forward = 2 * int(x_shape[0]) * int(prod(spatial)) * int(prod(w_shape))
    return forward * sum(1 for computed in output_mask[:2] if computed)


#: Formulas of composite (``CompositeImplicitAutograd``) operators, used only when the operator
#: cannot be decomposed into the kernels that run; decomposition is preferred because it counts
#: exactly what ran.
COMPOSITE_FALLBACKS: dict[Any, RawFormula] = {
    aten.lstm: _rnn_full,
    aten.gru: _rnn_full,
    aten.rnn_tanh: _rnn_full,
    aten.rnn_relu: _rnn_full,
    aten.lstm_cell: _rnn_cell,
    aten.gru_cell: _rnn_cell,
    aten.rnn_tanh_cell: _rnn_cell,
    aten.rnn_relu_cell: _rnn_cell,
    aten.scaled_dot_product_attention: _sdpa,
    aten._scaled_dot_product_attention_math: _sdpa,
    aten.linear: _linear,
}

# Kernels PyTorch's registry leaves out (checked against torch 2.15 on CPU). Registry entries win
# where both exist, so PyTorch's own formulas are used whenever it has them, except the
# convolution backward (``_convolution_backward``).
_KERNELS: dict[Any, RawFormula] = {
    aten._native_multi_head_attention: _native_multi_head_attention,
    aten._transformer_encoder_layer_fwd: _transformer_encoder_layer_fwd,
    aten.mkldnn_rnn_layer: _mkldnn_rnn_layer,
    aten.mkldnn_rnn_layer_backward: _mkldnn_rnn_layer_backward,
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_backward,
    aten.mv: _mv,
    aten.addmv: _addmv,
    aten.dot: _dot,
    aten.vdot: _dot,
    aten.addr: _addr,
    aten.addbmm: _addbmm,
    aten._addmm_activation: _addmm_activation,
    aten._grouped_mm: _grouped_mm,
}


def _shape_formula_of(formula: Any) -> Callable[..., Any] | None:
    """The shape formula inside a ``flop_counter.shape_wrapper`` wrapper, or None."""
    wrapped = getattr(formula, "__wrapped__", None)
    same_name = getattr(formula, "__qualname__", "") == getattr(wrapped, "__qualname__", None)
    if wrapped is None or not same_name:
        return None
    # shape_wrapper's wrapper is a closure named ``nf`` defined in flop_counter; ``get_raw``
    # registrations keep the function itself. Only the former takes shapes.
    code = getattr(formula, "__code__", None)
    return wrapped if code is not None and code.co_name == "nf" else None


# The last table built and the registry entries it was built from: rebuilt only when someone
# registers a formula with PyTorch (``register_flop_formula``) in between.
_BUILT: list[Any] = [None, None]


def builtin_formulas() -> Mapping[Any, RawFormula]:
    """Formulas by ``OpOverloadPacket``: PyTorch's ``flop_registry`` over our kernel formulas.

    Read-only: the table is shared until PyTorch's registry changes.
    """
    registry = tuple(flop_counter.flop_registry.items())
    if _BUILT[0] != registry:
        _BUILT[1] = _build_formulas()
        _BUILT[0] = registry
    table: Mapping[Any, RawFormula] = _BUILT[1]
    return table


def _direct_delegates() -> dict[Any, Callable[..., Any]]:
    """PyTorch's shape formulas that call another registered one, calling its shape formula.

    ``addmm_flop`` is ``mm_flop(a_shape, b_shape)`` of its 2nd and 3rd arguments,
    ``baddbmm_flop`` is ``bmm_flop`` of those, and ``_scaled_mm_flop`` is ``mm_flop`` of its
    first two; but the ``mm_flop`` and ``bmm_flop`` they call are the registered wrappers, whose
    pytree conversion cost ~50 us a call. Each is replaced here by the same body calling the
    unwrapped formula, only while the registry still holds PyTorch's own function (a formula
    registered over it is used as it is).
    """
    registry = flop_counter.flop_registry
    shape_formulas = {
        name: _shape_formula_of(getattr(flop_counter, name, None))
        for name in ("mm_flop", "bmm_flop")
    }
    delegates: dict[Any, Callable[..., Any]] = {}
    for packet, own_name, inner_name, first in (
        (aten.addmm, "addmm_flop", "mm_flop", 1),
        (aten.baddbmm, "baddbmm_flop", "bmm_flop", 1),
        (aten._scaled_mm, "_scaled_mm_flop", "mm_flop", 0),
    ):
        own = getattr(flop_counter, own_name, None)
        inner = shape_formulas[inner_name]
        if own is not None and inner is not None and registry.get(packet) is own:
            delegates[packet] = _applying(inner, first, own_name)
    return delegates


def _applying(inner: Callable[..., Any], first: int, name: str) -> Callable[..., Any]:
    """A shape formula that is ``inner`` of the two shapes from position ``first`` on."""

    def delegate(*shapes: Any, out_shape: Any = None, **kwargs: Any) -> Any:
        return inner(shapes[first], shapes[first + 1])

    delegate.__name__ = delegate.__qualname__ = name
    return delegate


def _build_formulas() -> dict[Any, RawFormula]:
    formulas: dict[Any, RawFormula] = dict(_KERNELS)
    delegates = _direct_delegates()
    for packet, formula in flop_counter.flop_registry.items():
        if isinstance(packet, torch._ops.OpOverloadPacket):
            # Registry entries are already wrapped: ``shape_wrapper`` (which keeps the shape
            # formula as ``__wrapped__``) or ``get_raw``. Unwrapping a shape formula lets our
            # pytree-free shape conversion run it; anything else is called raw.
            shape_formula = delegates.get(packet) or _shape_formula_of(formula)
            formulas[packet] = (
                from_shape_formula(shape_formula)
                if shape_formula is not None
                else from_shape_formula(formula, raw=True)
            )
    # PyTorch's convolution backward formula is replaced while the registry holds it (a formula
    # registered over it is used as it is): see ``_convolution_backward``.
    own = getattr(flop_counter, "conv_backward_flop", None)
    if own is not None and flop_counter.flop_registry.get(aten.convolution_backward) is own:
        formulas[aten.convolution_backward] = from_shape_formula(_convolution_backward)
    return formulas
