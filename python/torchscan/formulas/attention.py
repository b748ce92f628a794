"""Formulas of attention: MultiheadAttention and the Transformer encoder and decoder layers."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ._common import (
    TENSOR_TYPES,
    Estimate,
    Inputs,
    Rule,
    arg,
    dot_flops,
    elementwise,
    meta,
    size,
    total,
)
from .linear import linear_cost

__all__ = [
    "RULES",
    "attention_cost",
    "estimate_decoder_layer",
    "estimate_encoder_layer",
    "estimate_multihead_attention",
]


def _batch_and_length(module: nn.MultiheadAttention, shape: Sequence[int]) -> tuple[int, int]:
    """(batch, sequence length) of a query/key/value shape; unbatched ``(L, E)`` is batch 1."""
    if len(shape) == 3:
        if module.batch_first:
            return int(shape[0]), int(shape[1])
        return int(shape[1]), int(shape[0])
    return 1, int(shape[0]) if shape else 1


def attention_cost(
    module: nn.MultiheadAttention,
    query: Sequence[int],
    key: Sequence[int],
    value: Sequence[int],
    mask_elements: Sequence[int] = (),
    weights: Sequence[int] | None = None,
) -> Estimate:
    """One call of ``nn.MultiheadAttention`` from the shapes (torchscan 0.2.0 stages, extended).

    ``B`` batch, ``T`` target and ``S0`` source lengths, ``E = embed_dim``, ``H`` heads of
    ``Dh = E / H``; ``S = S0 (+1 with add_bias_kv) (+1 with add_zero_attn)``. Stages, each
    with FLOPs, MACs and DMAs (operands read, result written):

    * q/k/v projections: :func:`~torchscan.formulas.linear.linear_cost` of ``B*T`` rows
      ``E -> E``, ``B*S0`` rows ``kdim -> E`` and ``B*S0`` rows ``vdim -> E``;
    * scaling q: ``1 + B*T*E`` FLOPs (one reciprocal root, one multiply per element);
    * scores ``Q K^T``: ``B*H*T*S * (2Dh - 1)`` FLOPs, ``B*H*T*S*Dh`` MACs;
    * each given mask (``key_padding_mask``, ``attn_mask``): ``B*H*T*S`` FLOPs, its elements read;
    * softmax: ``B*H*T * (3S - 1)`` FLOPs (exp, sum, divide);
    * dropout on the weights in training mode with ``dropout > 0``: ``B*H*T*S`` FLOPs;
    * weighted values: ``B*T*E * (2S - 1)`` FLOPs, ``B*T*E*S`` MACs;
    * output projection: ``linear_cost`` of ``B*T`` rows ``E -> E``;
    * averaged returned weights (``need_weights`` and ``average_attn_weights``): ``B*H*T*S``.

    ``add_bias_kv`` adds the ``2E`` reads of ``bias_k`` and ``bias_v``; the concatenations
    themselves are not counted.
    """
    batch, target = _batch_and_length(module, query)
    _, source0 = _batch_and_length(module, key)
    embed, heads, head_dim = module.embed_dim, module.num_heads, module.head_dim
    bias = module.in_proj_bias is not None
    source = source0 + (1 if module.bias_k is not None else 0) + (1 if module.add_zero_attn else 0)
    queries, scores = batch * target * embed, batch * heads * target * source
    keys = batch * source * embed
    stages = [
        linear_cost(batch * target, embed, embed, bias),
        linear_cost(batch * source0, module.kdim, embed, bias),
        linear_cost(batch * source0, module.vdim, embed, bias),
        Estimate(1 + queries, 0, 2 * queries),
        Estimate(scores * dot_flops(head_dim), scores * head_dim, queries + keys + scores),
        Estimate(len(mask_elements) * scores, 0, sum(mask_elements)),
        Estimate(max(batch * heads * target * (3 * source - 1), 0), 0, 2 * scores),
        Estimate(queries * dot_flops(source), queries * source, scores + keys + queries),
        linear_cost(batch * target, embed, embed, module.out_proj.bias is not None),
    ]
    if module.bias_k is not None and module.bias_v is not None:
        stages.append(Estimate(0, 0, module.bias_k.numel() + module.bias_v.numel()))
    if module.training and module.dropout > 0:
        stages.append(Estimate(scores, 0, 3 * scores))
    if weights is not None and len(weights) == len(query):
        stages.append(Estimate(scores, 0, scores + batch * target * source))
    return total(stages)


def estimate_multihead_attention(
    module: nn.MultiheadAttention, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.MultiheadAttention`` from its positional call: :func:`attention_cost`.

    Masks are seen when passed positionally (``key_padding_mask`` 4th, ``attn_mask`` 6th):
    a forward hook without kwargs does not see keyword arguments. Averaged weights are
    recognised from the returned weights' rank.
    """
    query, key, value = arg(inputs, 0), arg(inputs, 1), arg(inputs, 2)
    if query is None or key is None or value is None:
        return None
    masks = [mask.numel() for mask in (arg(inputs, 3), arg(inputs, 5)) if mask is not None]
    weights = None
    if isinstance(output, (tuple, list)) and len(output) > 1:
        returned = output[1]
        if isinstance(returned, TENSOR_TYPES):
            weights = tuple(returned.shape)
    return attention_cost(
        module, tuple(query.shape), tuple(key.shape), tuple(value.shape), masks, weights
    )


def _activation_module(activation: object) -> nn.Module | None:
    """The module counted for a Transformer layer's activation (a module or a known function)."""
    if isinstance(activation, nn.Module):
        return activation
    known: dict[object, type[nn.Module]] = {
        F.relu: nn.ReLU,
        torch.relu: nn.ReLU,
        F.gelu: nn.GELU,
        F.silu: nn.SiLU,
        torch.tanh: nn.Tanh,
        torch.sigmoid: nn.Sigmoid,
        F.elu: nn.ELU,
        F.mish: nn.Mish,
    }
    kind = known.get(activation)
    return kind() if kind is not None else None


def _sub(
    layer: nn.Module, shape: Sequence[int], out_shape: Sequence[int] | None = None
) -> Estimate | None:
    """A sub-layer's estimate on a storage-free tensor of ``shape``."""
    from . import module_estimate

    return module_estimate(
        layer, (meta(shape),), meta(out_shape if out_shape is not None else shape)
    )


def _feed_forward(
    module: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer, shape: tuple[int, ...]
) -> list[Estimate | None]:
    """linear1, activation, dropout, linear2 on an input of ``shape``."""
    hidden = (*shape[:-1], module.linear1.out_features)
    activation = _activation_module(module.activation)
    act = _sub(activation, hidden) if activation is not None else None
    if act is None:
        act = elementwise(size(hidden), size(hidden), 1)
    return [
        _sub(module.linear1, shape, hidden),
        act,
        _sub(module.dropout, hidden),
        _sub(module.linear2, hidden, shape),
    ]


def _sum(parts: Sequence[Estimate | None]) -> Estimate | None:
    known = [part for part in parts if part is not None]
    if len(known) != len(parts):
        return None
    return total(known)


def estimate_encoder_layer(
    module: nn.TransformerEncoderLayer, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.TransformerEncoderLayer``: the sum of its sub-layers' estimates on their shapes.

    ``self_attn`` (:func:`attention_cost` with ``src_mask`` and ``src_key_padding_mask`` when
    passed positionally, no weights returned) ``+ dropout1 + norm1 + linear1 + activation +
    dropout + linear2 + dropout2 + norm2``, each the estimate of that sub-module on its input
    shape, plus the two residual additions (``n`` FLOPs, ``3n`` DMAs each). ``norm_first``
    reorders the same operations on the same shapes, so the total is unchanged; torch's fused
    fast path computes the same operations. The activation is counted as its module, or as
    the module of a known function (``F.relu``, ``F.gelu``, ...); any other callable is
    counted as an elementwise op of 1 FLOP per element. None when a sub-module has no formula.
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    shape = tuple(x.shape)
    n = x.numel()
    masks = [mask.numel() for mask in (arg(inputs, 1), arg(inputs, 2)) if mask is not None]
    residual = Estimate(n, 0, 3 * n)
    return _sum(
        [
            attention_cost(module.self_attn, shape, shape, shape, masks),
            _sub(module.dropout1, shape),
            residual,
            _sub(module.norm1, shape),
            *_feed_forward(module, shape),
            _sub(module.dropout2, shape),
            residual,
            _sub(module.norm2, shape),
        ]
    )


def estimate_decoder_layer(
    module: nn.TransformerDecoderLayer, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.TransformerDecoderLayer``: the sum of its sub-layers' estimates on their shapes.

    ``self_attn`` on ``tgt`` (``tgt_mask`` 3rd, ``tgt_key_padding_mask`` 5th) ``+ dropout1 +
    norm1 + multihead_attn`` (query ``tgt``, key and value ``memory``; ``memory_mask`` 4th,
    ``memory_key_padding_mask`` 6th) ``+ dropout2 + norm2 +`` feed-forward (``linear1 +
    activation + dropout + linear2``) ``+ dropout3 + norm3``, plus three residual additions
    (``n`` FLOPs, ``3n`` DMAs each); the conventions of
    :func:`estimate_encoder_layer` apply (``norm_first``, activation, None).
    """
    del output
    x, memory = arg(inputs, 0), arg(inputs, 1)
    if x is None or memory is None:
        return None
    shape, memory_shape = tuple(x.shape), tuple(memory.shape)
    n = x.numel()
    self_masks = [mask.numel() for mask in (arg(inputs, 2), arg(inputs, 4)) if mask is not None]
    cross_masks = [mask.numel() for mask in (arg(inputs, 3), arg(inputs, 5)) if mask is not None]
    residual = Estimate(n, 0, 3 * n)
    return _sum(
        [
            attention_cost(module.self_attn, shape, shape, shape, self_masks),
            _sub(module.dropout1, shape),
            residual,
            _sub(module.norm1, shape),
            attention_cost(module.multihead_attn, shape, memory_shape, memory_shape, cross_masks),
            _sub(module.dropout2, shape),
            residual,
            _sub(module.norm2, shape),
            *_feed_forward(module, shape),
            _sub(module.dropout3, shape),
            residual,
            _sub(module.norm3, shape),
        ]
    )


RULES: tuple[Rule, ...] = (
    Rule((nn.MultiheadAttention,), estimate_multihead_attention),
    Rule((nn.TransformerEncoderLayer,), estimate_encoder_layer),
    Rule((nn.TransformerDecoderLayer,), estimate_decoder_layer),
)
