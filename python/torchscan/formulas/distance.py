"""Formulas of the distance layers: CosineSimilarity and PairwiseDistance."""

from __future__ import annotations

import torch
from torch import nn

from ._common import Estimate, Inputs, Rule, arg, first_tensor

__all__ = ["RULES", "estimate_cosine_similarity", "estimate_pairwise_distance"]


def _rows_and_length(
    x1: torch.Tensor, x2: torch.Tensor, out: torch.Tensor | None, dim: int
) -> tuple[int, int]:
    """Rows (output elements) and the reduced length of the broadcast inputs."""
    shape = tuple(torch.broadcast_shapes(x1.shape, x2.shape))  # type: ignore[no-untyped-call]
    length = int(shape[dim % len(shape)]) if shape else 1
    if out is not None:
        return out.numel(), length
    rest = 1
    for index, dim_size in enumerate(shape):
        if index != dim % max(len(shape), 1):
            rest *= int(dim_size)
    return rest, length


def estimate_cosine_similarity(
    module: nn.CosineSimilarity, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.CosineSimilarity`` over rows of length ``L`` (broadcast inputs), ``R`` outputs.

    Per output: the dot product and the two squared norms, ``3 * (2L - 1)``; two roots, a
    product, a clamp to ``eps`` and a division, 5: FLOPs ``= R * (6L + 2)``; MACs
    ``= R * 3L``. DMAs read both inputs and write the output.
    """
    x1, x2, out = arg(inputs, 0), arg(inputs, 1), first_tensor(output)
    if x1 is None or x2 is None:
        return None
    rows, length = _rows_and_length(x1, x2, out, module.dim)
    return Estimate(rows * (6 * length + 2), rows * 3 * length, x1.numel() + x2.numel() + rows)


def estimate_pairwise_distance(
    module: nn.PairwiseDistance, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.PairwiseDistance``: ``||x1 - x2 + eps||_p`` over the last dim (length ``L``).

    Per output: subtract, add eps, absolute value and power per term (``4L``), ``L - 1``
    sums and one root: FLOPs ``= R * 5L``; MACs ``= R * L`` (power-accumulate). DMAs read
    both inputs and write the output (``keepdim`` changes only its shape).
    """
    del module
    x1, x2, out = arg(inputs, 0), arg(inputs, 1), first_tensor(output)
    if x1 is None or x2 is None:
        return None
    rows, length = _rows_and_length(x1, x2, out, -1)
    return Estimate(rows * 5 * length, rows * length, x1.numel() + x2.numel() + rows)


RULES: tuple[Rule, ...] = (
    Rule((nn.CosineSimilarity,), estimate_cosine_similarity),
    Rule((nn.PairwiseDistance,), estimate_pairwise_distance),
)
