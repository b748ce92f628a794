"""Formulas of the dropout layers: Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout."""

from __future__ import annotations

from torch import nn

from ._common import Estimate, Inputs, Rule, arg, first_tensor, passthrough_batched, size

__all__ = ["RULES", "dropout_cost", "estimate_dropout"]

_DROPOUT = (
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.AlphaDropout,
    nn.FeatureAlphaDropout,
)


def _mask_elements(module: nn.Module, shape: tuple[int, ...]) -> int:
    """Mask elements: one per element, or one per (sample, channel) for feature dropout."""
    if isinstance(module, (nn.Dropout, nn.AlphaDropout)):
        return size(shape)
    unbatched = (isinstance(module, nn.Dropout1d) and len(shape) == 2) or (
        isinstance(module, nn.Dropout3d) and len(shape) == 4
    )
    if unbatched or len(shape) < 2:
        return int(shape[0]) if shape else 1
    return size(shape[:2])


def dropout_cost(module: nn.Module, shape: tuple[int, ...], written: int | None = None) -> Estimate:
    """The cost of a dropout layer of the given kind and mode on an input of ``shape``.

    Eval mode, or ``p == 0``: 0 FLOPs and 0 MACs, DMAs read and write the tensor (``2n``).
    Training mode: the mask multiply, ``n`` FLOPs (``1 / (1 - p)`` folded into the mask), or
    ``2n`` for the alpha variants (a multiply and an add, the affine correction folded in);
    0 MACs; DMAs read the input and the mask (``n`` elements, or one per sample and channel
    for Dropout1d/2d/3d and FeatureAlphaDropout) and write the output. Drawing the random
    numbers is not counted.
    """
    n = size(shape)
    out = n if written is None else written
    p = float(getattr(module, "p", 0.0))
    if not module.training or p == 0.0:
        return Estimate(0, 0, n + out)
    per_element = 2 if isinstance(module, (nn.AlphaDropout, nn.FeatureAlphaDropout)) else 1
    return Estimate(per_element * n, 0, n + _mask_elements(module, shape) + out)


def estimate_dropout(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """Every dropout layer: :func:`dropout_cost` on the call's input."""
    x = arg(inputs, 0)
    if x is None:
        return None
    out = first_tensor(output)
    return dropout_cost(module, tuple(x.shape), out.numel() if out is not None else None)


RULES: tuple[Rule, ...] = (Rule(_DROPOUT, estimate_dropout, passthrough_batched),)
