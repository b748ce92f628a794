"""Formulas of the normalisation layers: batch, instance, layer, group, RMS and local response."""

from __future__ import annotations

from torch import nn

from ._common import (
    Estimate,
    FieldStep,
    Inputs,
    Rule,
    arg,
    first_tensor,
    param_elements,
    passthrough,
    passthrough_batched,
    size,
    tensor_attribute,
)

__all__ = [
    "RULES",
    "estimate_batch_norm",
    "estimate_group_norm",
    "estimate_instance_norm",
    "estimate_layer_norm",
    "estimate_local_response_norm",
    "estimate_rms_norm",
    "normalisation_cost",
]

# The private bases also serve the lazy variants (LazyBatchNorm*, LazyInstanceNorm*) and
# SyncBatchNorm; supported_module_types() lists their public names.
_BATCH_NORM = (nn.modules.batchnorm._BatchNorm,)
_INSTANCE_NORM = (nn.modules.instancenorm._InstanceNorm,)


def normalisation_cost(
    elements: int,
    groups: int,
    *,
    batch_stats: bool,
    weight: bool,
    bias: bool,
    params: int,
    stats_read: int = 0,
    stats_update: int = 0,
    momentum_none: bool = False,
) -> Estimate:
    """The shared mean/variance normalisation cost (torchscan 0.2.0 counts, generalised).

    For ``n = elements`` split into ``S = groups`` statistic groups:

    * statistics from the data (``batch_stats``): mean ``n`` FLOPs, variance ``3n`` FLOPs
      (subtract, square, sum, divide);
    * per group: ``eps`` add and square root, ``2S`` FLOPs;
    * normalise: subtract the mean and divide, ``2n`` FLOPs;
    * affine: ``n`` FLOPs for the weight and ``n`` for the bias;
    * running-stat update of ``C = stats_update`` channels: ``6C`` FLOPs (``+1`` for the
      cumulative factor when ``momentum is None``).

    MACs are 0: MACs count the multiply-accumulates of weighted products (convolutions and
    matrix products), and normalisation has none.

    DMAs read the input once, the affine parameters, ``stats_read`` running-stat elements,
    write ``2C`` updated running stats and the output (scalar counters are not counted).
    """
    flops = 2 * groups + 2 * elements
    if batch_stats:
        flops += 4 * elements
    if weight:
        flops += elements
    if bias:
        flops += elements
    if stats_update:
        flops += 6 * stats_update + (1 if momentum_none else 0)
    dmas = 2 * elements + params + stats_read + 2 * stats_update
    # MACs count the multiply-accumulates of weighted products (convolution, matmul); like the
    # common convention of model cards, normalisation contributes none.
    return Estimate(flops, 0, dmas)


def _running_stats(module: nn.modules.batchnorm._NormBase) -> int:
    """Elements of the running mean and variance buffers (0 when not tracked)."""
    mean, var = module.running_mean, module.running_var
    return (mean.numel() if mean is not None else 0) + (var.numel() if var is not None else 0)


def estimate_batch_norm(
    module: nn.modules.batchnorm._BatchNorm, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.BatchNorm1d/2d/3d`` (and ``SyncBatchNorm``): :func:`normalisation_cost`.

    One statistic group per channel. Batch statistics are computed in training mode and
    whenever running stats are not tracked (as torch does); running stats are read when they
    exist and are used or updated, and updated in training mode when tracked.
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    mean, var = tensor_attribute(module, "running_mean"), tensor_attribute(module, "running_var")
    tracked = mean is not None and var is not None
    batch_stats = module.training or not tracked
    update = module.training and module.track_running_stats and tracked
    return normalisation_cost(
        x.numel(),
        module.num_features,
        batch_stats=batch_stats,
        weight=tensor_attribute(module, "weight") is not None,
        bias=tensor_attribute(module, "bias") is not None,
        params=param_elements(module),
        stats_read=mean.numel() + var.numel() if (tracked and (update or not batch_stats)) else 0,
        stats_update=module.num_features if update else 0,
        momentum_none=module.momentum is None,
    )


def _instance_dims(module: nn.modules.instancenorm._InstanceNorm) -> int:
    """Spatial dims of an instance norm class (1, 2 or 3), lazy variants included."""
    if isinstance(module, (nn.InstanceNorm3d, nn.LazyInstanceNorm3d)):
        return 3
    if isinstance(module, (nn.InstanceNorm2d, nn.LazyInstanceNorm2d)):
        return 2
    return 1


def estimate_instance_norm(
    module: nn.modules.instancenorm._InstanceNorm, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.InstanceNorm1d/2d/3d``: :func:`normalisation_cost`, a group per sample and channel.

    Instance statistics are computed unless running stats are tracked and the module is in
    eval mode; tracked running stats are updated in training mode (as torch does).
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    spatial = size(x.shape[-_instance_dims(module) :])
    groups = x.numel() // spatial if spatial else 0
    tracked = module.running_mean is not None and module.running_var is not None
    batch_stats = module.training or not module.track_running_stats
    update = module.training and module.track_running_stats and tracked
    return normalisation_cost(
        x.numel(),
        groups,
        batch_stats=batch_stats,
        weight=module.weight is not None,
        bias=module.bias is not None,
        params=param_elements(module),
        stats_read=_running_stats(module) if (tracked and (update or not batch_stats)) else 0,
        stats_update=module.num_features if update else 0,
        momentum_none=module.momentum is None,
    )


def estimate_layer_norm(module: nn.LayerNorm, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.LayerNorm``: :func:`normalisation_cost`, one group per normalised row.

    Matches torchscan 0.2.0's ``6n + 2 * rows + n * weight + n * bias`` FLOPs; the weight and
    the bias are counted separately (``elementwise_affine=False`` or ``bias=False``).
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    row = size(module.normalized_shape)
    return normalisation_cost(
        x.numel(),
        x.numel() // row if row else 0,
        batch_stats=True,
        weight=module.weight is not None,
        bias=module.bias is not None,
        params=param_elements(module),
    )


def estimate_group_norm(module: nn.GroupNorm, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.GroupNorm``: :func:`normalisation_cost`, one group per sample and channel group."""
    del output
    x = arg(inputs, 0)
    if x is None or x.ndim == 0:
        return None
    return normalisation_cost(
        x.numel(),
        int(x.shape[0]) * module.num_groups,
        batch_stats=True,
        weight=module.weight is not None,
        bias=module.bias is not None,
        params=param_elements(module),
    )


def estimate_rms_norm(module: nn.RMSNorm, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.RMSNorm``: ``y = x / sqrt(mean(x^2) + eps) * weight`` per normalised row.

    For ``n`` elements in ``S`` rows: squares ``n``, sums ``n - S`` and means ``S`` FLOPs,
    ``eps`` add and reciprocal square root ``2S``, scale ``n``, weight ``n`` when affine:
    FLOPs ``= 3n + 2S (+ n)``. MACs 0, as for every normalisation. DMAs read the input and
    weight and write the output.
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    n = x.numel()
    row = size(module.normalized_shape)
    groups = n // row if row else 0
    weight = module.weight is not None
    flops = 3 * n + 2 * groups + (n if weight else 0)
    return Estimate(flops, 0, 2 * n + param_elements(module))


def estimate_local_response_norm(
    module: nn.LocalResponseNorm | nn.CrossMapLRN2d, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.LocalResponseNorm``: ``b = a / (k + alpha / size * sum_window a^2) ^ beta``.

    Per element: square 1, window sum ``size - 1``, mean 1, times alpha 1, plus k 1, power 1,
    divide 1: FLOPs ``= n * (size + 5)``; MACs ``= n * size`` (the windowed sum of squares).
    DMAs ``= n * size`` window reads ``+ n`` centre reads ``+ n`` writes.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None:
        return None
    n = x.numel()
    window = int(module.size)
    written = out.numel() if out is not None else n
    return Estimate(n * (window + 5), n * window, n * window + n + written)


def _field_instance_norm(
    module: nn.modules.instancenorm._InstanceNorm, inputs: Inputs, output: object
) -> FieldStep | None:
    """Passthrough over the instance norm's own number of spatial dimensions."""
    del inputs, output
    return passthrough(_instance_dims(module))


RULES: tuple[Rule, ...] = (
    Rule(_BATCH_NORM, estimate_batch_norm, passthrough_batched),
    Rule(_INSTANCE_NORM, estimate_instance_norm, _field_instance_norm),
    Rule((nn.LayerNorm,), estimate_layer_norm, passthrough_batched),
    Rule((nn.GroupNorm,), estimate_group_norm, passthrough_batched),
    Rule((nn.RMSNorm,), estimate_rms_norm, passthrough_batched),
    Rule(
        (nn.LocalResponseNorm, nn.CrossMapLRN2d), estimate_local_response_norm, passthrough_batched
    ),
)
