"""The inputs of an analysis: the model checked, the device and dtypes resolved, inputs made."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import prod
from typing import Any

from .._devices import resolve_device
from ..errors import InvalidArgumentError

#: The most elements ``input_shape`` may give one generated input.
_MAX_INPUT_ELEMENTS = 2**48


def _check_model(model: Any) -> None:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise InvalidArgumentError(
            f"model must be a torch.nn.Module, got {type(model).__name__}; "
            "to count the operators of any callable, use measure_flops(fn)"
        )


def _resolve_device(model: Any, device: Any) -> Any:
    """The device of the analysis: ``device`` (any type torch knows), or the model's."""
    import torch

    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    if device is None:
        return tensor.device if tensor is not None else torch.device("cpu")
    resolved = resolve_device(device, supported=None)
    if tensor is not None and tensor.device.type != "meta" and tensor.device.type != resolved.type:
        raise InvalidArgumentError(
            f"the model is on {tensor.device} but device={device!r}; move the model first "
            f"(model.to({str(resolved)!r})): the analysis never moves your model"
        )
    return resolved


def _resolve_dtypes(model: Any, dtype: Any, count: int) -> list[Any]:
    import torch

    if dtype is None:
        floating = [p.dtype for p in model.parameters() if p.is_floating_point()]
        return [floating[0] if floating else torch.float32] * count
    if isinstance(dtype, torch.dtype):
        return [dtype] * count
    if isinstance(dtype, Iterable) and not isinstance(dtype, (str, bytes)):
        dtypes = list(dtype)
        if len(dtypes) != count or not all(isinstance(d, torch.dtype) for d in dtypes):
            raise InvalidArgumentError(
                f"dtype must be a torch.dtype or one torch.dtype per input ({count}), got {dtype!r}"
            )
        return dtypes
    raise InvalidArgumentError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")


def _shapes(input_shape: Any) -> list[tuple[int, ...]]:
    def is_shape(value: Any) -> bool:
        return isinstance(value, Sequence) and all(
            isinstance(size, int) and not isinstance(size, bool) for size in value
        )

    if is_shape(input_shape) and len(input_shape) > 0:
        shapes = [tuple(input_shape)]
    elif isinstance(input_shape, Sequence) and input_shape and all(map(is_shape, input_shape)):
        shapes = [tuple(shape) for shape in input_shape]
    else:
        raise InvalidArgumentError(
            "input_shape must be the shape of one input without its batch dimension, for example "
            f"(3, 224, 224), or a list of such shapes; got {input_shape!r}"
        )
    for shape in shapes:
        if any(size <= 0 for size in shape):
            shown = shape if all(abs(size) < 2**64 for size in shape) else "a size below zero"
            raise InvalidArgumentError(f"input_shape sizes must be positive, got {shown}")
        elements = prod(shape)
        if elements > _MAX_INPUT_ELEMENTS:
            raise InvalidArgumentError(
                "input_shape must describe at most 2**48 elements per input (its bytes must fit "
                f"torch's 64-bit sizes); got about 2**{elements.bit_length() - 1}"
            )
    return shapes


def _make_inputs(
    model: Any, input_shape: Any, dtype: Any, args: Any, kwargs: Any, device: Any
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """The positional and keyword inputs of the forward, and the device recorded."""
    import torch

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise InvalidArgumentError(f"kwargs must be a mapping, got {type(kwargs).__name__}")
    if input_shape is None and args is None and kwargs is None:
        raise InvalidArgumentError(
            "give the inputs: input_shape=(3, 224, 224) (batch of one generated) or "
            "args=(tensor, ...) and/or kwargs={...} (forwarded unchanged)"
        )
    if input_shape is not None and args is not None:
        raise InvalidArgumentError("give input_shape or args, not both")
    resolved_device = _resolve_device(model, device)
    if input_shape is not None:
        shapes = _shapes(input_shape)
        dtypes = _resolve_dtypes(model, dtype, len(shapes))
        generator = torch.Generator(device="cpu").manual_seed(0)
        positional: tuple[Any, ...] = tuple(
            _random_input((1, *shape), kind, generator).to(resolved_device)
            for shape, kind in zip(shapes, dtypes, strict=True)
        )
    else:
        if dtype is not None:
            raise InvalidArgumentError(
                "dtype applies to generated inputs (input_shape); args are forwarded unchanged"
            )
        positional = () if args is None else args if isinstance(args, tuple) else (args,)
    return positional, dict(kwargs) if kwargs is not None else {}, resolved_device


def _random_input(shape: tuple[int, ...], dtype: Any, generator: Any) -> Any:
    import torch

    if dtype.is_floating_point or dtype.is_complex:
        return torch.rand(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=torch.bool)
    # Integer inputs are usually indices (token ids): zeros are valid for any embedding.
    return torch.zeros(shape, dtype=dtype)
