"""Formulas of the lookup tables: Embedding and EmbeddingBag."""

from __future__ import annotations

from torch import nn

from ._common import Estimate, Inputs, Rule, arg, first_tensor

__all__ = ["RULES", "estimate_embedding", "estimate_embedding_bag"]


def _max_norm_cost(lookups: int, dim: int) -> Estimate:
    """Worst-case ``max_norm`` renormalisation of ``lookups`` looked-up rows of ``dim`` values.

    Per row: its norm (``dim`` powers, ``dim - 1`` sums, one root: ``2 * dim`` FLOPs, ``dim``
    MACs), a comparison, the scale ``max_norm / (norm + eps)`` (2 FLOPs) and ``dim``
    multiplies, as if every row needed rescaling (the actual count depends on the values).
    DMAs: the rows are read and written back in place.
    """
    return Estimate(lookups * (3 * dim + 3), lookups * dim, 2 * lookups * dim)


def estimate_embedding(module: nn.Embedding, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.Embedding``: a gather, 0 FLOPs and 0 MACs.

    DMAs read every index and its row of ``embedding_dim`` values and write the output:
    ``I + 2 * I * D`` for ``I`` indices. ``padding_idx`` changes only gradients. With
    ``max_norm`` the worst-case renormalisation of the looked-up rows is added.
    """
    del output
    indices = arg(inputs, 0)
    if indices is None:
        return None
    lookups, dim = indices.numel(), module.embedding_dim
    cost = Estimate(0, 0, lookups + 2 * lookups * dim)
    if module.max_norm is not None:
        extra = _max_norm_cost(lookups, dim)
        cost = Estimate(cost.flops + extra.flops, cost.macs + extra.macs, cost.dmas + extra.dmas)
    return cost


def estimate_embedding_bag(
    module: nn.EmbeddingBag, inputs: Inputs, output: object
) -> Estimate | None:
    """``nn.EmbeddingBag``: a gather of ``I`` rows reduced into ``B`` bags of ``D`` values.

    Reduction FLOPs ``(I - B) * D`` (adds for ``sum`` and ``mean``, comparisons for ``max``;
    empty bags counted as if every bag held at least one index), plus ``B * D`` divisions for
    ``mean``; ``per_sample_weights`` add ``I * D`` multiplies (FLOPs and MACs). ``B`` comes
    from the output, so 2-D input, ``offsets`` and ``include_last_offset`` are all covered;
    ``padding_idx`` entries are counted as any other (excluding them needs the values). DMAs
    read the indices, offsets, per-sample weights and looked-up rows and write the output.
    ``max_norm`` adds the worst-case renormalisation of the looked-up rows.
    """
    indices, offsets, weights = arg(inputs, 0), arg(inputs, 1), arg(inputs, 2)
    out = first_tensor(output)
    if indices is None or out is None:
        return None
    lookups, dim = indices.numel(), module.embedding_dim
    bags = out.numel() // dim if dim else 0
    flops = max(lookups - bags, 0) * dim
    macs = 0
    if module.mode == "mean":
        flops += bags * dim
    if weights is not None:
        flops += lookups * dim
        macs += lookups * dim
    dmas = lookups + lookups * dim + out.numel()
    dmas += (offsets.numel() if offsets is not None else 0) + (
        weights.numel() if weights is not None else 0
    )
    if module.max_norm is not None:
        extra = _max_norm_cost(lookups, dim)
        flops, macs, dmas = flops + extra.flops, macs + extra.macs, dmas + extra.dmas
    return Estimate(flops, macs, dmas)


RULES: tuple[Rule, ...] = (
    Rule((nn.Embedding,), estimate_embedding),
    Rule((nn.EmbeddingBag,), estimate_embedding_bag),
)
