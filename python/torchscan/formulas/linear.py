"""Formulas of the dense layers: Linear (and LazyLinear once materialised) and Bilinear."""

from __future__ import annotations

from torch import nn

from ._common import Estimate, Inputs, Rule, arg, dot_flops, size

__all__ = ["RULES", "estimate_bilinear", "estimate_linear", "linear_cost"]


def linear_cost(rows: int, in_features: int, out_features: int, bias: bool) -> Estimate:
    """A dense projection of ``rows`` vectors of ``in_features`` to ``out_features``.

    Convention (torchscan 0.2.0): each output element is a dot product of ``in_features``
    terms, ``2 * in_features - 1`` FLOPs and ``in_features`` MACs, plus one FLOP for the bias
    addition when there is a bias (the bias is folded into the accumulation for MACs).
    DMAs read the input and every weight and bias element once and write the output.
    """
    outputs = rows * out_features
    flops = outputs * dot_flops(in_features) + (outputs if bias else 0)
    macs = outputs * in_features
    params = out_features * in_features + (out_features if bias else 0)
    return Estimate(flops, macs, rows * in_features + params + outputs)


def estimate_linear(module: nn.Linear, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.Linear`` on input ``(*, in_features)``: :func:`linear_cost` over ``prod(*)`` rows.

    An unbatched 1-D input is one row. ``LazyLinear`` turns into ``Linear`` on its first call;
    the input's last dimension is used so that the count never reads a lazy parameter.
    """
    del output
    x = arg(inputs, 0)
    if x is None or x.ndim == 0:
        return None
    return linear_cost(
        size(x.shape[:-1]), int(x.shape[-1]), module.out_features, module.bias is not None
    )


def estimate_bilinear(module: nn.Bilinear, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.Bilinear``: ``y_k = x1^T A_k x2 + b_k`` for each of ``out_features`` outputs.

    Convention: each output first forms ``A_k x2`` (``in1`` dot products of ``in2`` terms),
    then dots it with ``x1`` (``in1`` terms): ``in1 * (in2 + 1)`` MACs and
    ``in1 * (2 * in2 - 1) + 2 * in1 - 1`` FLOPs, plus one FLOP for the bias. DMAs read both
    inputs and all parameters once and write the output.
    """
    del output
    x1, x2 = arg(inputs, 0), arg(inputs, 1)
    if x1 is None or x2 is None or x1.ndim == 0:
        return None
    in1, in2, out = module.in1_features, module.in2_features, module.out_features
    bias = module.bias is not None
    outputs = size(x1.shape[:-1]) * out
    flops = outputs * (in1 * dot_flops(in2) + dot_flops(in1) + (1 if bias else 0))
    macs = outputs * in1 * (in2 + 1)
    params = out * in1 * in2 + (out if bias else 0)
    return Estimate(flops, macs, x1.numel() + x2.numel() + params + outputs)


RULES: tuple[Rule, ...] = (
    Rule((nn.Linear,), estimate_linear),
    Rule((nn.Bilinear,), estimate_bilinear),
)
