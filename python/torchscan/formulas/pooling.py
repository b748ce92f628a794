"""Formulas of the pooling layers: max, average, LP, adaptive, fractional pooling, unpooling."""

from __future__ import annotations

from typing import Any

from torch import nn

from ._common import Estimate, FieldStep, Inputs, Rule, arg, as_tuple, first_tensor, size

__all__ = [
    "RULES",
    "adaptive_window_total",
    "estimate_adaptive_pool",
    "estimate_avg_pool",
    "estimate_fractional_max_pool",
    "estimate_lp_pool",
    "estimate_max_pool",
    "estimate_max_unpool",
]

_MAX_POOL = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)
_AVG_POOL = (nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_LP_POOL = (nn.LPPool1d, nn.LPPool2d, nn.LPPool3d)
_ADAPTIVE_MAX = (nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)
_ADAPTIVE_AVG = (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
_FRACTIONAL = (nn.FractionalMaxPool2d, nn.FractionalMaxPool3d)
_UNPOOL = (nn.MaxUnpool1d, nn.MaxUnpool2d, nn.MaxUnpool3d)

_ONE_D: tuple[type[nn.Module], ...] = (
    nn.MaxPool1d,
    nn.AvgPool1d,
    nn.LPPool1d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveAvgPool1d,
    nn.MaxUnpool1d,
)
_THREE_D: tuple[type[nn.Module], ...] = (
    nn.MaxPool3d,
    nn.AvgPool3d,
    nn.LPPool3d,
    nn.AdaptiveMaxPool3d,
    nn.AdaptiveAvgPool3d,
    nn.FractionalMaxPool3d,
    nn.MaxUnpool3d,
)


def _dims(module: nn.Module) -> int:
    """The number of spatial dimensions the pooling class works on."""
    if isinstance(module, _ONE_D):
        return 1
    if isinstance(module, _THREE_D):
        return 3
    return 2


def _kernel(module: Any) -> tuple[int, ...]:
    return as_tuple(module.kernel_size, _dims(module))


def _stride(module: Any) -> tuple[int, ...]:
    stride = getattr(module, "stride", None)
    if stride is None or (isinstance(stride, (tuple, list)) and not stride):
        return _kernel(module)
    return as_tuple(stride, _dims(module))


def _returns_indices(module: nn.Module, output: object) -> bool:
    return bool(getattr(module, "return_indices", False)) and isinstance(output, (tuple, list))


def estimate_max_pool(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.MaxPool1d/2d/3d`` (torchscan 0.2.0): ``K - 1`` comparisons per output element.

    With ``K = prod(kernel_size)``: FLOPs ``= out.numel() * (K - 1)``, MACs 0 (comparisons, no
    products); DMAs ``= K * out.numel()`` window reads ``+ out.numel()`` writes
    ``(+ out.numel()`` index writes with ``return_indices)``. Padding, dilation and
    ``ceil_mode`` act through the output shape.
    """
    del inputs
    out = first_tensor(output)
    if out is None:
        return None
    kernel, outputs = size(_kernel(module)), out.numel()
    indices = outputs if _returns_indices(module, output) else 0
    return Estimate(outputs * (kernel - 1), 0, outputs * kernel + outputs + indices)


def estimate_avg_pool(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.AvgPool1d/2d/3d`` (torchscan 0.2.0): ``K - 1`` sums and ``d`` divisor operations.

    With ``K = prod(kernel_size)`` and ``d`` spatial dims (from the class, so unbatched inputs
    count the same): FLOPs ``= out.numel() * (K - 1 + d)``, MACs 0; DMAs ``= K * out.numel()
    + out.numel()``.
    """
    del inputs
    out = first_tensor(output)
    if out is None:
        return None
    kernel, outputs = size(_kernel(module)), out.numel()
    ops = outputs * (kernel - 1 + _dims(module))
    return Estimate(ops, 0, outputs * kernel + outputs)


def estimate_lp_pool(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.LPPool1d/2d/3d``: ``(sum_window x^p)^(1/p)`` per output element.

    With ``K = prod(kernel_size)``: ``K`` powers, ``K - 1`` sums and one root, FLOPs
    ``= 2K * out.numel()``; MACs 0; DMAs
    ``= K * out.numel() + out.numel()``.
    """
    del inputs
    out = first_tensor(output)
    if out is None:
        return None
    kernel, outputs = size(_kernel(module)), out.numel()
    return Estimate(2 * kernel * outputs, 0, kernel * outputs + outputs)


def adaptive_window_total(in_size: int, out_size: int) -> int:
    """The summed length of the adaptive windows ``[floor(j*i/o), ceil((j+1)*i/o))`` of one dim."""
    if out_size <= 0:
        return 0
    return sum(
        -((-(j + 1) * in_size) // out_size) - (j * in_size) // out_size for j in range(out_size)
    )


def estimate_adaptive_pool(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.AdaptiveMax/AvgPool1d/2d/3d`` from the exact adaptive windows.

    ``W`` is the number of window reads: the leading (batch, channel) elements times, per
    spatial dim, the summed window length (windows ``[floor(j*i/o), ceil((j+1)*i/o))``).
    Max: FLOPs ``W - out.numel()``; average: ``W - out.numel() + d * out.numel()``; MACs 0.
    DMAs ``= W + out.numel()`` (``+ out.numel()`` indices with ``return_indices``). When the
    input size is a multiple of the output size this is torchscan 0.2.0's kernel
    ``i / o`` count; otherwise it replaces 0.2.0's approximate kernel with the exact windows.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None or out is None:
        return None
    dims = _dims(module)
    if x.ndim < dims or out.ndim < dims:
        return None
    in_spatial, out_spatial = tuple(x.shape[-dims:]), tuple(out.shape[-dims:])
    outputs = out.numel()
    lead = outputs // size(out_spatial) if size(out_spatial) else 0
    reads = lead
    for i_size, o_size in zip(in_spatial, out_spatial, strict=True):
        reads *= adaptive_window_total(int(i_size), int(o_size))
    ops = reads - outputs + (dims * outputs if isinstance(module, _ADAPTIVE_AVG) else 0)
    indices = outputs if _returns_indices(module, output) else 0
    return Estimate(max(ops, 0), 0, reads + outputs + indices)


def estimate_fractional_max_pool(
    module: nn.Module, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.FractionalMaxPool2d/3d``: as max pooling over its ``kernel_size`` windows.

    FLOPs ``= out.numel() * (K - 1)``, MACs 0 (comparisons, no products); DMAs
    ``= K * out.numel() + out.numel()`` (``+ out.numel()`` indices). The random window offsets
    are not counted.
    """
    return estimate_max_pool(module, inputs, output)


def estimate_max_unpool(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.MaxUnpool1d/2d/3d``: a scatter into a zeroed output, 0 FLOPs and 0 MACs.

    DMAs read the input and the same number of indices and write the whole output.
    """
    del module
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None or out is None:
        return None
    return Estimate(0, 0, 2 * x.numel() + out.numel())


def field_window_pool(module: nn.Module, inputs: Inputs, output: object) -> FieldStep | None:
    """Max, average and LP pooling: kernel, stride (default: kernel), padding, dilation."""
    del inputs, output
    dims = _dims(module)
    padding = getattr(module, "padding", 0)
    dilation = getattr(module, "dilation", 1)
    return FieldStep(
        _kernel(module), _stride(module), as_tuple(padding, dims), as_tuple(dilation, dims)
    )


def field_adaptive_pool(module: nn.Module, inputs: Inputs, output: object) -> FieldStep | None:
    """Adaptive pooling: kernel = stride = ``in / out`` when every ratio is integral, else None."""
    x, out = arg(inputs, 0), first_tensor(output)
    dims = _dims(module)
    if x is None or out is None or x.ndim < dims or out.ndim < dims:
        return None
    ratios: list[int] = []
    for i_size, o_size in zip(x.shape[-dims:], out.shape[-dims:], strict=True):
        if o_size <= 0 or i_size % o_size:
            return None
        ratios.append(int(i_size // o_size))
    kernel = tuple(ratios)
    return FieldStep(kernel, kernel, (0,) * dims, (1,) * dims)


RULES: tuple[Rule, ...] = (
    Rule(_MAX_POOL, estimate_max_pool, field_window_pool),
    Rule(_AVG_POOL, estimate_avg_pool, field_window_pool),
    Rule(_LP_POOL, estimate_lp_pool, field_window_pool),
    Rule(_ADAPTIVE_MAX + _ADAPTIVE_AVG, estimate_adaptive_pool, field_adaptive_pool),
    Rule(_FRACTIONAL, estimate_fractional_max_pool),
    Rule(_UNPOOL, estimate_max_unpool),
)
