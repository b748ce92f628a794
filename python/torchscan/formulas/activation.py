"""Formulas of the activation modules of ``torch.nn`` (MultiheadAttention lives in attention.py)."""

from __future__ import annotations

from torch import nn

from ._common import (
    Estimate,
    FieldStep,
    Inputs,
    Rule,
    arg,
    elementwise,
    first_tensor,
    param_elements,
    passthrough,
    passthrough_batched,
)

__all__ = [
    "PER_ELEMENT_FLOPS",
    "RULES",
    "estimate_elementwise_activation",
    "estimate_glu",
    "estimate_softmax",
    "gelu_flops",
]

# FLOPs per element; an exp, log, erf, power or root counts 1, a tanh counts 6 (two
# exponentials, a negation, a sum, a difference and a division), a sigmoid 4 (negate, exp,
# add 1, divide), as in torchscan 0.2.0. Subclasses come before their bases (ReLU6 < Hardtanh).
PER_ELEMENT_FLOPS: tuple[tuple[type[nn.Module], int], ...] = (
    (nn.ReLU6, 2),  # two comparisons (0.2.0)
    (nn.Hardtanh, 2),  # clamp: two comparisons
    (nn.ReLU, 1),  # one comparison (0.2.0)
    (nn.Threshold, 1),  # one comparison
    (nn.LeakyReLU, 4),  # max, min, slope multiply, sum (0.2.0)
    (nn.PReLU, 4),  # as LeakyReLU, with a learned slope
    (nn.ELU, 6),  # compare, exp, subtract 1, times alpha, compare, sum (0.2.0)
    (nn.CELU, 7),  # ELU with x / alpha: one more division
    (nn.SELU, 7),  # ELU then times scale
    (nn.SiLU, 5),  # sigmoid 4, times x 1
    (nn.Mish, 10),  # softplus 3 (exp, add 1, log), tanh 6, times x 1
    (nn.Sigmoid, 4),  # negate, exp, add 1, divide (0.2.0)
    (nn.Tanh, 6),  # (0.2.0)
    (nn.Hardsigmoid, 4),  # add 3, two comparisons, divide by 6
    (nn.Hardswish, 5),  # hardsigmoid 4, times x 1
    (nn.Hardshrink, 2),  # absolute value, comparison
    (nn.Softshrink, 3),  # two comparisons, one shift
    (nn.Tanhshrink, 7),  # tanh 6, difference 1
    (nn.Softplus, 6),  # times beta, exp, add 1, log, divide by beta, threshold comparison
    (nn.Softsign, 3),  # absolute value, add 1, divide
    (nn.LogSigmoid, 5),  # negate, exp, add 1, log, negate
)

_ELEMENTWISE = (*(kind for kind, _ in PER_ELEMENT_FLOPS), nn.RReLU, nn.GELU)


def gelu_flops(approximate: str) -> int:
    """FLOPs per element of GELU.

    ``'none'``: ``0.5 * x * (1 + erf(x / sqrt 2))`` is 5 FLOPs (divide, erf, add, two
    multiplies). ``'tanh'``: ``x^3`` 2, times 0.044715 1, plus x 1, times sqrt(2/pi) 1, tanh 6,
    add 1, times x 1, times 0.5 1: 14 FLOPs.
    """
    return 14 if approximate == "tanh" else 5


# Per-element FLOPs of the classes whose count depends on the class alone, found once per class.
_BY_CLASS: dict[type, int] = {}


def _per_element(module: nn.Module) -> int:
    known = _BY_CLASS.get(type(module))
    if known is not None:
        return known
    if isinstance(module, nn.RReLU):
        # A fixed slope in eval mode (as LeakyReLU); training draws one slope per element.
        return 5 if module.training else 4
    if isinstance(module, nn.GELU):
        return gelu_flops(module.approximate)
    for kind, flops in PER_ELEMENT_FLOPS:
        if isinstance(module, kind):
            _BY_CLASS[type(module)] = flops
            return flops
    raise TypeError(f"no per-element FLOPs for {type(module)!r}")  # pragma: no cover


def estimate_elementwise_activation(
    module: nn.Module, inputs: Inputs, output: object
) -> Estimate | None:
    """Elementwise activations: FLOPs ``= n * per-element FLOPs`` (see ``PER_ELEMENT_FLOPS``).

    MACs are 0 (no multiply-accumulate, as in torchscan 0.2.0). DMAs read each input element
    and the parameter elements (PReLU's slopes) and write each output element, in place or
    not; scalar hyper-parameters (alpha, slope, threshold) are not memory accesses.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None:
        return None
    written = out.numel() if out is not None else x.numel()
    return elementwise(x.numel(), written, _per_element(module), param_elements(module))


def _softmax_dim(module: nn.Softmax | nn.Softmin | nn.LogSoftmax | nn.Softmax2d, ndim: int) -> int:
    """The reduced dimension, normalised, resolving ``dim=None`` as torch's legacy rule does."""
    if isinstance(module, nn.Softmax2d):
        dim: int | None = -3
    else:
        dim = module.dim
    if dim is None:
        dim = 0 if ndim in (0, 1, 3) else 1
    return dim % ndim if ndim else 0


def estimate_softmax(
    module: nn.Softmax | nn.Softmin | nn.LogSoftmax | nn.Softmax2d, inputs: Inputs, output: object
) -> Estimate | None:
    """Softmax family over rows of length ``L`` (``R = n / L`` rows).

    Softmax and Softmax2d: exp ``L``, sum ``L - 1``, divide ``L``: ``3n - R`` FLOPs (the
    same count MultiheadAttention uses; the max-subtraction for stability is not counted).
    Softmin adds a negation: ``4n - R``. LogSoftmax: exp ``L``, sum ``L - 1``, log 1,
    subtract ``L``: ``3n``. MACs 0; DMAs read the input and write the output.
    """
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None:
        return None
    n = x.numel()
    length = int(x.shape[_softmax_dim(module, x.ndim)]) if x.ndim else 1
    rows = n // length if length else 0
    if isinstance(module, nn.LogSoftmax):
        flops = 3 * n
    elif isinstance(module, nn.Softmin):
        flops = 4 * n - rows
    else:
        flops = 3 * n - rows
    written = out.numel() if out is not None else n
    return Estimate(max(flops, 0), 0, n + written)


def estimate_glu(module: nn.GLU, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.GLU``: ``a * sigmoid(b)`` on the two halves: 5 FLOPs per output element, 0 MACs."""
    del module
    x, out = arg(inputs, 0), first_tensor(output)
    if x is None:
        return None
    written = out.numel() if out is not None else x.numel() // 2
    return Estimate(5 * written, 0, x.numel() + written)


def _field_along_dim(
    module: nn.Softmax | nn.Softmin | nn.LogSoftmax | nn.Softmax2d | nn.GLU,
    inputs: Inputs,
    output: object,
) -> FieldStep | None:
    """Passthrough when the layer works along the batch or channel dim, else None.

    A softmax or GLU along a spatial dimension mixes positions, which no step expresses.
    """
    del output
    x = arg(inputs, 0)
    if x is None:
        return None
    if isinstance(module, nn.GLU):
        dim = module.dim % x.ndim if x.ndim else 0
    else:
        dim = _softmax_dim(module, x.ndim)
    if dim >= 2:
        return None
    return passthrough(x.ndim - 2)


_SOFTMAX = (nn.Softmax, nn.Softmin, nn.LogSoftmax, nn.Softmax2d)

RULES: tuple[Rule, ...] = (
    Rule(_ELEMENTWISE, estimate_elementwise_activation, passthrough_batched),
    Rule(_SOFTMAX, estimate_softmax, _field_along_dim),
    Rule((nn.GLU,), estimate_glu, _field_along_dim),
)
