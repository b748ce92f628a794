"""Formulas of the layers that move data without arithmetic, and of upsampling."""

from __future__ import annotations

from torch import nn

from ._common import (
    ZERO,
    Estimate,
    FieldStep,
    Inputs,
    Rule,
    arg,
    first_tensor,
    passthrough,
    passthrough_batched,
    size,
)
from .pooling import adaptive_window_total

__all__ = ["RULES", "estimate_copy", "estimate_identity", "estimate_upsample", "upsample_taps"]

_PAD_1D = (nn.ConstantPad1d, nn.ReflectionPad1d, nn.ReplicationPad1d, nn.CircularPad1d)
_PAD_2D = (nn.ConstantPad2d, nn.ReflectionPad2d, nn.ReplicationPad2d, nn.CircularPad2d)
_PAD_3D = (nn.ConstantPad3d, nn.ReflectionPad3d, nn.ReplicationPad3d, nn.CircularPad3d)
# ZeroPad1d/2d/3d subclass ConstantPad1d/2d/3d and are served by the same rule.
_PAD = _PAD_1D + _PAD_2D + _PAD_3D


def estimate_identity(module: nn.Identity, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.Identity``: 0 FLOPs, 0 MACs and 0 DMAs (it returns its input object, no copy)."""
    del module, inputs, output
    return ZERO


def estimate_copy(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """Flatten, Unflatten, PixelShuffle/Unshuffle, ChannelShuffle and the padding layers.

    0 FLOPs and 0 MACs; DMAs read the input and write the output (``in.numel() +
    out.numel()``), as torchscan 0.2.0 did for Flatten (``2n``) even where torch returns a
    view; a padded output counts its padding as written.
    """
    del module
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None:
        return None
    return Estimate(0, 0, x.numel() + (out.numel() if out is not None else x.numel()))


def upsample_taps(mode: str, dims: int) -> int:
    """Input elements blended per output element: 1 (nearest), ``2^d`` (d-linear), 16 (bicubic)."""
    if mode in ("linear", "bilinear", "trilinear"):
        return int(2**dims)
    if mode == "bicubic":
        return 16
    return 1


def estimate_upsample(module: nn.Upsample, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.Upsample`` (and UpsamplingNearest2d / UpsamplingBilinear2d) per output element.

    ``nearest`` / ``nearest-exact``: a gather, 0 FLOPs, 0 MACs. Interpolating modes blend
    ``T`` input elements (``2^d`` for linear/bilinear/trilinear, 16 for bicubic): ``T`` MACs
    and ``2T - 1`` FLOPs per output element (the weights' arithmetic is not counted).
    DMAs ``= T * out.numel() + out.numel()``. ``area`` is adaptive average pooling, counted
    as :func:`torchscan.formulas.pooling.estimate_adaptive_pool`.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None or out is None:
        return None
    dims = max(x.ndim - 2, 0)
    outputs = out.numel()
    if module.mode == "area":
        reads = size(out.shape[:2])
        for i_size, o_size in zip(x.shape[2:], out.shape[2:], strict=True):
            reads *= adaptive_window_total(int(i_size), int(o_size))
        ops = max(reads - outputs + dims * outputs, 0)
        return Estimate(ops, ops, reads + outputs)
    taps = upsample_taps(module.mode, dims)
    if taps == 1:
        return Estimate(0, 0, 2 * outputs)
    return Estimate(outputs * (2 * taps - 1), outputs * taps, outputs * taps + outputs)


def _pad_dims(module: nn.Module) -> int:
    if isinstance(module, _PAD_3D):
        return 3
    if isinstance(module, _PAD_2D):
        return 2
    return 1


def field_padding(module: nn.Module, inputs: Inputs, output: object) -> FieldStep | None:
    """Padding layers: kernel 1, stride 1, the leading padding of each dim, dilation 1.

    torch lists padding last dimension first (``left, right, top, bottom, front, back``);
    the step lists the spatial dimensions first to last.
    """
    del inputs, output
    dims = _pad_dims(module)
    raw = getattr(module, "padding", ())
    pads = tuple(int(p) for p in raw) if isinstance(raw, (tuple, list)) else (int(raw),) * 2 * dims
    before = tuple(pads[2 * (dims - 1 - j)] for j in range(dims))
    step = passthrough(dims)
    return FieldStep(step.kernel, step.stride, before, step.dilation)


def field_pixel_unshuffle(
    module: nn.PixelUnshuffle, inputs: Inputs, output: object
) -> FieldStep | None:
    """PixelUnshuffle (space to depth by ``r``): kernel ``r``, stride ``r`` on both spatial dims."""
    del inputs, output
    r = int(module.downscale_factor)
    return FieldStep((r, r), (r, r), (0, 0), (1, 1))


RULES: tuple[Rule, ...] = (
    Rule((nn.Identity,), estimate_identity, passthrough_batched),
    Rule((nn.Flatten, nn.Unflatten, nn.PixelShuffle), estimate_copy),
    Rule((nn.PixelUnshuffle,), estimate_copy, field_pixel_unshuffle),
    Rule((nn.ChannelShuffle,), estimate_copy, passthrough_batched),
    Rule(_PAD, estimate_copy, field_padding),
    Rule((nn.Upsample,), estimate_upsample),
)
