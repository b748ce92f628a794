"""Shared result types and shape helpers of the per-module formulas."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .._values import TensorSpec

__all__ = [
    "TENSOR_TYPES",
    "ZERO",
    "Estimate",
    "EstimateFn",
    "FieldFn",
    "FieldStep",
    "Inputs",
    "Rule",
    "arg",
    "as_tuple",
    "dot_flops",
    "elementwise",
    "first_tensor",
    "is_passthrough",
    "meta",
    "param_elements",
    "passthrough",
    "passthrough_batched",
    "size",
    "tensor_attribute",
    "total",
]


@dataclass(frozen=True)
class Estimate:
    """The estimated cost of one call of a module.

    ``flops`` counts floating-point operations, ``macs`` multiply-accumulates and ``dmas``
    memory accesses in elements (reads of inputs and parameters plus writes of outputs).
    """

    flops: int
    macs: int
    dmas: int


@dataclass(frozen=True)
class FieldStep:
    """How a layer transforms receptive field per spatial dimension (one entry per dimension)."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]


Inputs = tuple[object, ...]
EstimateFn = Callable[[Any, Inputs, object], "Estimate | None"]
FieldFn = Callable[[Any, Inputs, object], "FieldStep | None"]


@dataclass(frozen=True)
class Rule:
    """One formula: the module types it serves, its estimate and (optionally) its field step."""

    types: tuple[type[nn.Module], ...]
    estimate: EstimateFn
    field: FieldFn | None = None


ZERO = Estimate(0, 0, 0)


def total(parts: Iterable[Estimate]) -> Estimate:
    """The sum of several estimates, field by field."""
    flops = macs = dmas = 0
    for part in parts:
        flops += part.flops
        macs += part.macs
        dmas += part.dmas
    return Estimate(flops, macs, dmas)


def size(shape: Sequence[int]) -> int:
    """The number of elements of a shape (1 for the empty shape)."""
    return int(math.prod([int(dim) for dim in shape]))


def dot_flops(terms: int) -> int:
    """FLOPs of a dot product of ``terms`` terms: ``terms`` products and ``terms - 1`` sums."""
    return 2 * terms - 1 if terms > 0 else 0


#: What formulas accept as a tensor: a tensor, or the :class:`TensorSpec` an analysis keeps of
#: it (shape, ``ndim`` and ``numel()`` answer the same).
TENSOR_TYPES = (TensorSpec, torch.Tensor)


def arg(inputs: Inputs, index: int) -> Any:
    """The positional argument ``index`` when it is a tensor (or its spec), else None."""
    if index < len(inputs):
        value = inputs[index]
        if isinstance(value, TENSOR_TYPES):
            return value
    return None


def first_tensor(value: object) -> Any:
    """The first tensor of an output: the value itself, or the first item of a tuple or list."""
    if isinstance(value, TENSOR_TYPES):
        return value
    if isinstance(value, (tuple, list)) and value:
        return first_tensor(value[0])
    return None


def as_tuple(value: object, dims: int) -> tuple[int, ...]:
    """A per-dimension tuple from a module attribute stored as an int or a sequence."""
    if isinstance(value, (tuple, list)):
        items = tuple(int(item) for item in value)
        if len(items) == 1 and dims > 1:
            return items * dims
        return items
    if isinstance(value, (int, float)):
        return (int(value),) * dims
    raise TypeError(f"not an int or a sequence of ints: {value!r}")


def param_elements(module: nn.Module) -> int:
    """The number of parameter elements of a module, skipping uninitialised (lazy) ones."""
    # Walks the parameter dicts directly: this runs on every module call of an analysis.
    total_elements = 0
    pending = [module]
    while pending:
        current = pending.pop()
        for param in current._parameters.values():
            if param is None:
                continue
            kind = type(param)
            # ``isinstance`` against UninitializedParameter runs Python code: plain parameters
            # and tensors are told apart by their type first.
            if kind is nn.Parameter or kind is torch.Tensor or not isinstance(param, _LAZY):
                total_elements += param.numel()
        if current._modules:
            pending.extend(child for child in current._modules.values() if child is not None)
    return total_elements


_LAZY = nn.parameter.UninitializedParameter


def tensor_attribute(module: nn.Module, name: str) -> Any:
    """``module.<name>`` for a parameter or buffer (None when absent), read without Python code.

    ``nn.Module.__getattr__`` is Python code; parameters and buffers are looked up in their
    dicts first, anything else (a property of a subclass) through ``getattr``.
    """
    parameters = module._parameters
    if name in parameters:
        return parameters[name]
    buffers = module._buffers
    if name in buffers:
        return buffers[name]
    return getattr(module, name, None)


def elementwise(inputs: int, outputs: int, flops_per_element: int, params: int = 0) -> Estimate:
    """An elementwise layer: FLOPs per input element, no MACs, one read and one write each."""
    return Estimate(inputs * flops_per_element, 0, inputs + params + outputs)


# One step per dimension count: steps are immutable, and analysis asks on every call.
_PASSTHROUGH: dict[int, FieldStep] = {}


def passthrough(dims: int) -> FieldStep:
    """The field step of a layer that keeps spatial positions aligned elementwise."""
    step = _PASSTHROUGH.get(dims)
    if step is None:
        count = max(dims, 0)
        step = FieldStep((1,) * count, (1,) * count, (0,) * count, (1,) * count)
        if isinstance(dims, int):
            _PASSTHROUGH[dims] = step
    return step


def is_passthrough(step: FieldStep) -> bool:
    """Kernel 1, stride 1, padding 0 and dilation 1 in every dimension."""
    dims = len(step.kernel)
    known = _PASSTHROUGH.get(dims)
    if known is step:
        return True
    if known is None:
        known = passthrough(dims)
    # Tuples compare by value (``1.0 == 1``): one comparison per field, in compiled code.
    ones, zeros = known.kernel, known.padding
    return (
        tuple(step.kernel) == ones
        and tuple(step.stride) == ones
        and tuple(step.padding) == zeros
        and tuple(step.dilation) == ones
    )


def passthrough_batched(module: nn.Module, inputs: Inputs, output: object) -> FieldStep | None:
    """Passthrough over the spatial dims of a batched channels-first input (``ndim - 2``)."""
    del module, output
    x = arg(inputs, 0)
    if x is None:
        return None
    return passthrough(x.ndim - 2)


def meta(shape: Sequence[int]) -> torch.Tensor:
    """A storage-free tensor of ``shape`` to feed shape-only formulas of sub-layers."""
    return torch.empty(tuple(shape), device="meta")
