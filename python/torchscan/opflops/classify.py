"""Which executed operators are excluded from operator FLOPs by convention, and in which class.

PyTorch's ``FlopCounterMode`` counts only matmuls, convolutions and attention; everything else is
zero. We keep that convention but make it explicit: an operator is *excluded* only when it is one
of the kinds the convention means to leave out (elementwise, normalisation, pooling, reductions,
data movement, allocation, and operators that do no floating-point arithmetic at all:
comparisons, checks, mask and index tests). Anything we cannot place is left to the caller as
*uncounted*, so an unknown kernel makes the total partial instead of silently counting zero.

Operators are placed by name first (the curated lists below, which name every operator that the
architectures of the tests and benchmarks run), then by PyTorch's operator tags and schema, so an
operator of an architecture nobody tried still gets the class its tags give it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from ..reports import ExclusionClass

__all__ = ["ExclusionClass", "exclusion_class", "moves_no_data", "named_class", "operator_name"]


# Curated names (aten namespace, overload dropped). They come first: they override tags where a
# tag would mislead (``clone`` is tagged pointwise but moves data) and cover untagged kernels.
_NORMALIZATION = frozenset(
    {
        "batch_norm",
        "_batch_norm_impl_index",
        "_batch_norm_impl_index_backward",
        "native_batch_norm",
        "native_batch_norm_backward",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "_native_batch_norm_legit_functional",
        "_batch_norm_with_update",
        "_batch_norm_with_update_functional",
        "_batch_norm_no_update",
        "batch_norm_backward",
        "batch_norm_stats",
        "batch_norm_elemt",
        "batch_norm_gather_stats",
        "batch_norm_gather_stats_with_counts",
        "batch_norm_backward_reduce",
        "batch_norm_backward_elemt",
        "batch_norm_update_stats",
        "cudnn_batch_norm",
        "cudnn_batch_norm_backward",
        "miopen_batch_norm",
        "miopen_batch_norm_backward",
        "instance_norm",
        "layer_norm",
        "native_layer_norm",
        "native_layer_norm_backward",
        "group_norm",
        "native_group_norm",
        "native_group_norm_backward",
        "rms_norm",
        "_fused_rms_norm",
        "_fused_rms_norm_backward",
        "_weight_norm",
        "_weight_norm_interface",
        "_weight_norm_interface_backward",
        "renorm",
    }
)

_POOLING = frozenset(
    {
        "max_pool1d",
        "max_pool2d",
        "max_pool3d",
        "max_pool1d_with_indices",
        "max_pool2d_with_indices",
        "max_pool3d_with_indices",
        "max_pool2d_with_indices_backward",
        "max_pool3d_with_indices_backward",
        "max_pool2d_backward",
        "mkldnn_max_pool2d",
        "mkldnn_max_pool2d_backward",
        "mkldnn_max_pool3d",
        "mkldnn_max_pool3d_backward",
        "quantized_max_pool1d",
        "quantized_max_pool2d",
        "quantized_max_pool3d",
        "max_unpool2d",
        "max_unpool3d",
        "avg_pool1d",
        "avg_pool2d",
        "avg_pool3d",
        "avg_pool2d_backward",
        "avg_pool3d_backward",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_avg_pool3d",
        "_adaptive_avg_pool2d",
        "_adaptive_avg_pool3d",
        "_adaptive_avg_pool2d_backward",
        "_adaptive_avg_pool3d_backward",
        "mkldnn_adaptive_avg_pool2d",
        "mkldnn_adaptive_avg_pool2d_backward",
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "adaptive_max_pool3d",
        "adaptive_max_pool2d_backward",
        "adaptive_max_pool3d_backward",
        "fractional_max_pool2d",
        "fractional_max_pool3d",
        "fractional_max_pool2d_backward",
        "fractional_max_pool3d_backward",
        "lp_pool1d",
        "lp_pool2d",
        "lp_pool3d",
    }
)

_REDUCTION = frozenset(
    {
        "softmax",
        "_softmax",
        "_safe_softmax",
        "_softmax_backward_data",
        "log_softmax",
        "_log_softmax",
        "_log_softmax_backward_data",
        "_masked_softmax",
        "_masked_softmax_backward",
        "logsumexp",
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "_cummax_helper",
        "_cummin_helper",
        "logcumsumexp",
        "norm",
        "linalg_vector_norm",
        "frobenius_norm",
        "var",
        "std",
        "var_mean",
        "std_mean",
        "max",
        "min",
        "aminmax",
        "argmax",
        "argmin",
        "topk",
        "kthvalue",
        "median",
        "nanmedian",
        "mode",
        "sum",
        "nansum",
        "mean",
        "nanmean",
        "prod",
        "all",
        "any",
        "count_nonzero",
        # Histograms: every element is scaled into its bin (floating-point arithmetic, and
        # ``histc`` with ``min == max`` first finds the data's min and max) and the bins sum
        # counts (or ``bincount``'s weights): the input reduced to one number per bin, as
        # ``count_nonzero`` reduces it to one. Mixture-of-experts layers count tokens per expert
        # with them (transformers 5: ``histc``). Not ``no_arithmetic``: that class is for
        # comparisons and tests only (``bucketize`` finds a position by comparisons alone).
        "histc",
        "bincount",
        "nll_loss",
        "nll_loss_forward",
        "nll_loss_backward",
        "nll_loss2d_forward",
        "nll_loss2d_backward",
        "cross_entropy_loss",
        "mse_loss",
        "mse_loss_backward",
        "l1_loss",
        "smooth_l1_loss",
        "smooth_l1_loss_backward",
        "huber_loss",
        "huber_loss_backward",
        "binary_cross_entropy",
        "binary_cross_entropy_backward",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "soft_margin_loss",
        "soft_margin_loss_backward",
        "multilabel_margin_loss_forward",
        "multi_margin_loss",
        "amax",
        "amin",
        "_foreach_norm",
    }
)

_DATA_MOVEMENT = frozenset(
    {
        "expand_copy",
        "clone",
        "copy",
        "copy_",
        "_copy_from",
        "_copy_from_and_resize",
        "_to_copy",
        "to",
        "contiguous",
        "_unsafe_view",
        "reshape",
        "flatten",
        "unflatten",
        "narrow_copy",
        "unsafe_split",
        "unsafe_split_with_sizes",
        "unsafe_chunk",
        "cat",
        "_cat",
        "concat",
        "concatenate",
        "stack",
        "_stack",
        "hstack",
        "vstack",
        "dstack",
        "_chunk_cat",
        "block_diag",
        "index",
        "_unsafe_index",
        "index_select",
        "index_select_backward",
        "index_put",
        "_index_put_impl",
        "_unsafe_index_put",
        "index_add",
        "index_copy",
        "index_fill",
        "index_reduce",
        "gather",
        "gather_backward",
        "scatter",
        "scatter_add",
        "scatter_reduce",
        "masked_select",
        "masked_scatter",
        "nonzero",
        "nonzero_static",
        "take",
        "put",
        "repeat",
        "repeat_interleave",
        "tile",
        "flip",
        "fliplr",
        "flipud",
        "roll",
        "rot90",
        "pad",
        "constant_pad_nd",
        "reflection_pad1d",
        "reflection_pad2d",
        "reflection_pad3d",
        "reflection_pad1d_backward",
        "reflection_pad2d_backward",
        "reflection_pad3d_backward",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
        "replication_pad1d_backward",
        "replication_pad2d_backward",
        "replication_pad3d_backward",
        "embedding",
        "embedding_backward",
        "embedding_dense_backward",
        "embedding_sparse_backward",
        "embedding_renorm_",
        "embedding_bag",
        "_embedding_bag",
        "_embedding_bag_forward_only",
        "_embedding_bag_backward",
        "_embedding_bag_dense_backward",
        "_embedding_bag_per_sample_weights_backward",
        "select_backward",
        "slice_backward",
        "diagonal_backward",
        "unfold_backward",
        "as_strided_scatter",
        "select_scatter",
        "slice_scatter",
        "diagonal_scatter",
        "sort",
        "argsort",
        "msort",
        "unique_dim",
        "_unique",
        "_unique2",
        "unique_consecutive",
        "pixel_shuffle",
        "pixel_unshuffle",
        "channel_shuffle",
        "native_channel_shuffle",
        "im2col",
        "col2im",
        "upsample_nearest1d",
        "upsample_nearest2d",
        "upsample_nearest3d",
        "_upsample_nearest_exact1d",
        "_upsample_nearest_exact2d",
        "_upsample_nearest_exact3d",
        "upsample_nearest1d_backward",
        "upsample_nearest2d_backward",
        "upsample_nearest3d_backward",
        "_upsample_nearest_exact1d_backward",
        "_upsample_nearest_exact2d_backward",
        "_upsample_nearest_exact3d_backward",
        "_local_scalar_dense",
        "item",
        "_nested_tensor_from_mask",
        "_nested_tensor_from_mask_left_aligned",
        "_nested_tensor_from_tensor_list",
        "_nested_from_padded",
        "_nested_from_padded_and_nested_example",
        "to_padded_tensor",
        "_nested_tensor_size",
        "_nested_tensor_strides",
        "_nested_tensor_storage_offsets",
        "_nested_view_from_buffer",
        "_nested_view_from_buffer_copy",
        "_nested_view_from_jagged",
        "_nested_get_values",
        "_nested_get_offsets",
        "_nested_get_lengths",
        "_nested_get_jagged_dummy",
        "_nested_get_max_seqlen",
        "_nested_get_min_seqlen",
        "_nested_get_ragged_idx",
        "_nested_compute_contiguous_strides_offsets",
        "view",
        "view_as",
        "_reshape_alias",
        "alias",
        "as_strided",
        "expand",
        "expand_as",
        "detach",
        "permute",
        "transpose",
        "t",
        "select",
        "slice",
        "split",
        "split_with_sizes",
        "tensor_split",
        "chunk",
        "squeeze",
        "unsqueeze",
        "unbind",
        "narrow",
        "unfold",
        "diagonal",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "view_as_real",
        "view_as_complex",
        "resolve_conj",
        "resolve_neg",
    }
)

_ELEMENTWISE = frozenset(
    {
        "dropout",
        "feature_dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
        "native_dropout",
        "native_dropout_backward",
        "bernoulli",
        "uniform",
        "normal",
        "random",
        "exponential",
        "geometric",
        "cauchy",
        "log_normal",
        "multinomial",
        "rand_like",
        "fill",
        "zero",
        "masked_fill",
        "tril",
        "triu",
        "relu",
        "threshold",
        "hardtanh",
        "hardtanh_backward",
        "glu",
        "glu_backward",
        "prelu",
        "_prelu_kernel",
        "_prelu_kernel_backward",
        "rrelu_with_noise",
        "rrelu_with_noise_backward",
        "log_sigmoid_forward",
        "log_sigmoid_backward",
        "silu_backward",
        "mish_backward",
        "hardswish",
        "hardswish_backward",
        "absolute",
        "negative",
        "rrelu_with_noise_functional",
        "hardsigmoid_backward",
        "leaky_relu_backward",
        "elu_backward",
        "softplus_backward",
        "softshrink_backward",
        "hardshrink_backward",
        "gelu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "threshold_backward",
        "logit_backward",
        "lerp",
        "addcmul",
        "addcdiv",
        "nan_to_num",
        "clamp",
        "clamp_min",
        "clamp_max",
        "where",
        "_transform_bias_rescale_qkv",
        "_thnn_fused_lstm_cell",
        "_thnn_fused_lstm_cell_backward",
        "_thnn_fused_lstm_cell_backward_impl",
        "_thnn_fused_gru_cell",
        "_thnn_fused_gru_cell_backward",
        "_thnn_differentiable_lstm_cell_backward",
        "_thnn_differentiable_gru_cell_backward",
        "upsample_linear1d",
        "upsample_bilinear2d",
        "upsample_bicubic2d",
        "upsample_trilinear3d",
        "_upsample_bilinear2d_aa",
        "_upsample_bicubic2d_aa",
        "upsample_linear1d_backward",
        "upsample_bilinear2d_backward",
        "upsample_bicubic2d_backward",
        "upsample_trilinear3d_backward",
        "_upsample_bilinear2d_aa_backward",
        "_upsample_bicubic2d_aa_backward",
        "grid_sampler_2d",
        "grid_sampler_3d",
        "grid_sampler_2d_backward",
        "grid_sampler_3d_backward",
        "_fused_adam",
        "_fused_adamw",
        "_fused_sgd",
        "_fused_adagrad",
        "_amp_foreach_non_finite_check_and_unscale",
        "_amp_update_scale",
        "add",
        "sub",
        "rsub",
        "mul",
        "div",
        "true_divide",
        "floor_divide",
        "remainder",
        "fmod",
        "neg",
        "abs",
        "reciprocal",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "pow",
        "sqrt",
        "rsqrt",
        "square",
        "sin",
        "cos",
        "tan",
        "sinh",
        "cosh",
        "asin",
        "acos",
        "atan",
        "atan2",
        "tanh",
        "sigmoid",
        "logit",
        "erf",
        "erfc",
        "erfinv",
        "gelu",
        "silu",
        "mish",
        "elu",
        "selu",
        "celu",
        "leaky_relu",
        "softplus",
        "softshrink",
        "hardshrink",
        "hardsigmoid",
        "relu6",
        "sign",
        "sgn",
        "floor",
        "ceil",
        "round",
        "trunc",
        "frac",
        "minimum",
        "maximum",
        "fmin",
        "fmax",
        "clip",
        "xlogy",
        "hypot",
        "lgamma",
        "digamma",
    }
)

_ALLOCATION = frozenset(
    {
        "logspace",
        "linspace",
        "empty",
        "empty_like",
        "empty_strided",
        "empty_permuted",
        "new_empty",
        "new_empty_strided",
        "new_zeros",
        "new_ones",
        "new_full",
        "zeros_like",
        "ones_like",
        "full_like",
        "randn_like",
        "randint_like",
        "lift_fresh",
        "lift_fresh_copy",
        "lift",
        "resize",
        "resize_as",
        "set",
        "_resize_output",
        "record_stream",
        "zeros",
        "ones",
        "full",
        "arange",
        "scalar_tensor",
        "rand",
        "randn",
        "randint",
        "randperm",
        "eye",
        "tril_indices",
        "triu_indices",
    }
)

# No floating-point arithmetic at all: comparisons and logical or bitwise operations (masks),
# tests of values (``isnan``), searches that return positions (``isin``, ``bucketize``) and the
# checks and assertions that raise on bad input (``_linalg_check_errors``, ``_assert_async``).
_NO_ARITHMETIC = frozenset(
    {
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "not_equal",
        "equal",
        "isin",
        "bucketize",
        "searchsorted",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "__and__",
        "__or__",
        "__xor__",
        "__lshift__",
        "__rshift__",
        "isnan",
        "isinf",
        "isfinite",
        "isposinf",
        "isneginf",
        "isreal",
        "signbit",
        "is_nonzero",
        "is_same_size",
        "_linalg_check_errors",
        "_assert_async",
        "_assert_scalar",
        "_assert_tensor_metadata",
        "_functional_assert_async",
        "_functional_assert_scalar",
        "sym_constrain_range",
        "sym_constrain_range_for_size",
        "_functional_sym_constrain_range",
        "_functional_sym_constrain_range_for_size",
    }
)

_CURATED: dict[str, ExclusionClass] = {}
for _names, _class in (
    (_ALLOCATION, "allocation"),
    (_DATA_MOVEMENT, "data_movement"),
    (_NORMALIZATION, "normalization"),
    (_POOLING, "pooling"),
    (_REDUCTION, "reduction"),
    (_ELEMENTWISE, "elementwise"),
    (_NO_ARITHMETIC, "no_arithmetic"),
):
    for _name in _names:
        _CURATED.setdefault(_name, _class)  # type: ignore[arg-type]

# Metadata queries of the ``prim`` namespace (``prim::device``): no kernel runs.
_METADATA_NAMESPACES = frozenset({"prim"})
# Collectives of torch.distributed (``c10d::allreduce_`` under DDP, the functional collectives of
# FSDP2 and DTensor): they move data between ranks, and FLOP counters count them as no FLOPs by
# convention (the additions of a reduction across ranks are communication, not model compute).
_COMMUNICATION_NAMESPACES = frozenset({"c10d", "_c10d_functional", "_c10d_functional_autograd"})


def operator_name(func: Any) -> str:
    """``aten::addmm`` for ``aten.addmm.default``: namespace and name, overload dropped."""
    return str(func._schema.name)


def _split(func: Any) -> tuple[str, str]:
    namespace, _, name = operator_name(func).partition("::")
    return namespace, name


def _tag_class(tags: Any) -> ExclusionClass | None:
    if torch.Tag.pointwise in tags:
        return "elementwise"
    if torch.Tag.reduction in tags:
        return "reduction"
    if torch.Tag.inplace_view in tags:
        return "data_movement"
    return None


def _returns_view(schema: Any) -> bool:
    # A return annotated ``Tensor(a)`` (aliasing, not written) is a view of an input: no arithmetic.
    return any(ret.alias_info is not None and not ret.alias_info.is_write for ret in schema.returns)


def _is_factory(schema: Any) -> bool:
    # A function that returns tensors without taking any creates them from scratch (zeros, arange).
    takes_tensor = any("Tensor" in str(arg.type) for arg in schema.arguments if not arg.kwarg_only)
    returns_tensor = any("Tensor" in str(ret.type) for ret in schema.returns)
    return returns_tensor and not takes_tensor


def _packet_class(namespace: str, name: str) -> ExclusionClass | None:
    """The class of an operator known only by name: curated list, then the tags of its overloads."""
    if namespace == "aten" and name in _CURATED:
        return _CURATED[name]
    packet = getattr(getattr(torch.ops, namespace, None), name, None)
    if packet is None:
        return None
    try:
        overloads = packet.overloads()
    except (AttributeError, RuntimeError):
        return None
    for overload in overloads:
        found = _tag_class(getattr(packet, overload).tags)
        if found is not None:
            return found
    return None


def _variant_base(name: str) -> str:
    """The operator an in-place (``add_``) or ``_foreach_`` (``_foreach_add_``) variant is of."""
    base = name
    if base.startswith("_foreach_"):
        # Optimizer steps over tensor lists: the same class as the per-tensor operator.
        base = base.removeprefix("_foreach_")
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return base


def _forward_name(name: str) -> str | None:
    """The forward operator of a backward kernel (``gelu`` of ``gelu_backward``), or ``None``."""
    for suffix in ("_backward_data", "_backward"):
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return None


def named_class(name: str) -> ExclusionClass | None:
    """The class the curated lists give the operator ``name`` (``aten::isin``), or ``None``.

    By name alone: the operator itself, else the operator an in-place or ``_foreach_`` variant is
    of, else the forward operator of a backward kernel, in ``aten``; every operator of the
    ``prim`` namespace (metadata queries) and every collective of ``torch.distributed``
    (``c10d``, ``_c10d_functional``: data moved between ranks). ``None`` means only tags or the
    schema could place it.
    """
    namespace, _, bare = name.rpartition("::")
    if namespace in _METADATA_NAMESPACES or namespace in _COMMUNICATION_NAMESPACES:
        return "data_movement"
    if namespace not in ("aten", ""):
        return None
    found = _CURATED.get(bare) or _CURATED.get(_variant_base(bare))
    if found is None:
        forward = _forward_name(bare)
        # Only the classes whose backward is of the same kind; a counted forward (convolution)
        # has a counted backward with its own formula.
        if forward is not None:
            found = _CURATED.get(forward)
    return found


@cache
def exclusion_class(func: Any) -> ExclusionClass | None:
    """The convention that excludes the operator overload ``func``, or ``None`` when none does.

    Order: the name (:func:`named_class`: curated lists, their in-place, ``_foreach_`` and
    backward variants), the overload's tags (``pointwise``, ``reduction``, ``inplace_view``), the
    tags of the operator an in-place or ``_foreach_`` variant is of, views (an aliasing return in
    the schema), factory functions, backward kernels of a tagged operator, then the tags of the
    operator's other overloads (``.out`` variants carry fewer tags).
    """
    found = named_class(operator_name(func))
    if found is not None:
        return found
    namespace, name = _split(func)
    found = _tag_class(func.tags)
    if found is not None:
        return found
    if namespace == "aten":
        base = _variant_base(name)
        if base != name:
            found = _packet_class("aten", base)
            if found is not None:
                return found
    schema = func._schema
    if _returns_view(schema):
        return "data_movement"
    if namespace == "aten" and _is_factory(schema):
        return "allocation"
    if namespace == "aten":
        forward = _forward_name(name)
        if forward is not None:
            found = _packet_class("aten", forward)
            if found is not None:
                return found
    return _packet_class(namespace, name)


# Operators that read or change a tensor's metadata only (``aten`` names, overload dropped):
# no element is read or written, so they move no bytes. ``_unsafe_view`` and ``data`` return a
# view although their schemas do not say so.
_NO_DATA = frozenset(
    {
        "_unsafe_view",
        "data",
        "set_data",
        "requires_grad_",
        "retain_grad",
        "retains_grad",
        "_version",
        "output_nr",
        "is_same_size",
        "is_set_to",
        "_has_same_storage_numel",
        "_has_compatible_shallow_copy_type",
        "_assert_tensor_metadata",
        "record_stream",
        "_nnz",
        "dense_dim",
        "sparse_dim",
        "_dimI",
        "_dimV",
        "is_coalesced",
        "q_scale",
        "q_zero_point",
        "qscheme",
        "is_pinned",
        "_is_zerotensor",
        "is_conj",
        "is_neg",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "is_inference",
        "is_leaf",
    }
)


@cache
def moves_no_data(func: Any) -> bool:
    """Whether the operator overload ``func`` reads and writes no tensor element.

    True for views, whose every result aliases an input without being written (``view``, ``t``,
    ``expand``, ``as_strided``, ``split``: ``Tensor(a)`` returns in the schema), for in-place
    changes of a tensor's view (the ``inplace_view`` tag: ``t_``, ``squeeze_``, ``detach_``),
    for the metadata queries of the ``prim`` namespace and for the ``aten`` metadata queries
    and views listed above. Operator bytes count these calls as 0; a copy (``clone``,
    ``_to_copy``, ``copy_``) moves data.
    """
    namespace, name = _split(func)
    if namespace in _METADATA_NAMESPACES:
        return True
    if namespace == "aten" and name in _NO_DATA:
        return True
    if torch.Tag.inplace_view in func.tags:
        return True
    returns = func._schema.returns
    return bool(returns) and all(
        ret.alias_info is not None and not ret.alias_info.is_write for ret in returns
    )
