"""Formulas of the convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d (and their lazy forms)."""

from __future__ import annotations

from torch import nn

from ._common import (
    Estimate,
    FieldStep,
    Inputs,
    Rule,
    arg,
    dot_flops,
    first_tensor,
    size,
    tensor_attribute,
)

__all__ = [
    "RULES",
    "estimate_conv",
    "estimate_conv_transpose",
    "field_conv",
    "field_conv_transpose",
]

_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_CONV_TRANSPOSE = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def _weight_elements(
    module: nn.Conv1d
    | nn.Conv2d
    | nn.Conv3d
    | nn.ConvTranspose1d
    | nn.ConvTranspose2d
    | nn.ConvTranspose3d,
) -> int:
    """Weight and bias elements from the configuration (never reads a lazy parameter)."""
    kernel = size(module.kernel_size)
    weight = module.in_channels * (module.out_channels // module.groups) * kernel
    return weight + (module.out_channels if tensor_attribute(module, "bias") is not None else 0)


def estimate_conv(
    module: nn.Conv1d | nn.Conv2d | nn.Conv3d, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.Conv1d/2d/3d`` (torchscan 0.2.0 convention).

    With ``K = in_channels / groups * prod(kernel_size)`` terms per output element:
    FLOPs ``= out.numel() * (2K - 1) + out.numel()`` if bias; MACs ``= out.numel() * K``;
    DMAs ``= K * out.numel()`` (one input read per product) ``+`` weight and bias elements
    ``+ out.numel()``. Stride, dilation, padding (incl. ``'same'``) and unbatched inputs enter
    only through the output shape; non-zero ``padding_mode`` copies are not counted.
    """
    del inputs
    out = first_tensor(output)
    if out is None:
        return None
    terms = module.in_channels // module.groups * size(module.kernel_size)
    outputs = out.numel()
    bias = tensor_attribute(module, "bias") is not None
    flops = outputs * dot_flops(terms) + (outputs if bias else 0)
    macs = outputs * terms
    return Estimate(flops, macs, macs + _weight_elements(module) + outputs)


def estimate_conv_transpose(
    module: nn.ConvTranspose1d | nn.ConvTranspose2d | nn.ConvTranspose3d,
    inputs: Inputs,
    output: object,
) -> Estimate | None:
    """``nn.ConvTranspose1d/2d/3d``, counted as the scatter it is.

    Every input element is multiplied by ``out_channels / groups * prod(kernel_size)`` weights
    and accumulated into the output: MACs ``= in.numel() * out_channels / groups * prod(k)``,
    FLOPs ``= 2 * MACs + out.numel()`` if bias (a multiply and an add per product, then one
    bias add per output element). DMAs ``= MACs`` (one input read per product) ``+`` weight
    and bias elements ``+ out.numel()``. Stride, padding, output_padding and dilation enter
    only through the shapes. This departs from torchscan 0.2.0, which counted the gather of a
    direct convolution per output element (overcounting strided layers by the inserted zeros)
    plus a constant for the host-side padding arithmetic.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None or out is None:
        return None
    per_input = module.out_channels // module.groups * size(module.kernel_size)
    macs = x.numel() * per_input
    outputs = out.numel()
    flops = 2 * macs + (outputs if module.bias is not None else 0)
    return Estimate(flops, macs, macs + _weight_elements(module) + outputs)


def _left_padding(module: nn.Conv1d | nn.Conv2d | nn.Conv3d) -> tuple[int, ...]:
    """Padding before the first element per dimension, resolving ``'same'`` and ``'valid'``."""
    padding = module.padding
    if isinstance(padding, str):
        if padding == "same":
            return tuple(
                d * (k - 1) // 2 for k, d in zip(module.kernel_size, module.dilation, strict=True)
            )
        return (0,) * len(module.kernel_size)
    return tuple(map(int, padding))


def field_conv(
    module: nn.Conv1d | nn.Conv2d | nn.Conv3d, inputs: Inputs, output: object
) -> FieldStep | None:
    """The module's kernel, stride, (left) padding and dilation per spatial dimension."""
    del inputs, output
    return FieldStep(
        tuple(module.kernel_size),
        tuple(module.stride),
        _left_padding(module),
        tuple(module.dilation),
    )


def field_conv_transpose(
    module: nn.ConvTranspose1d | nn.ConvTranspose2d | nn.ConvTranspose3d,
    inputs: Inputs,
    output: object,
) -> FieldStep | None:
    """The step of the equivalent direct convolution when every stride is 1, else None.

    A stride-1 transposed convolution is a direct convolution with the same kernel and
    dilation and padding ``dilation * (kernel - 1) - padding`` (negative means cropping). A
    stride ``s > 1`` upsamples: its step has the fractional stride ``1 / s``, which an integer
    step cannot express, so the answer is None.
    """
    del inputs, output
    if any(s != 1 for s in module.stride):
        return None
    kernel, dilation = tuple(module.kernel_size), tuple(module.dilation)
    padding = module.padding
    if isinstance(padding, str):  # pragma: no cover - transposed convs only take int padding
        return None
    return FieldStep(
        kernel,
        (1,) * len(kernel),
        tuple(d * (k - 1) - int(p) for k, d, p in zip(kernel, dilation, padding, strict=True)),
        dilation,
    )


RULES: tuple[Rule, ...] = (
    Rule(_CONV_TRANSPOSE, estimate_conv_transpose, field_conv_transpose),
    Rule(_CONV, estimate_conv, field_conv),
)
