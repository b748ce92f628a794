"""The inputs of an analysis: the model checked, the device and dtypes resolved, inputs made."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import prod
from typing import Any

from .._devices import resolve_device
from ..errors import InvalidArgumentError

#: The most elements ``input_shape`` may give one generated input.
_MAX_INPUT_ELEMENTS = 2**48


def check_model(model: Any) -> None:
    """Refuse anything but a ``torch.nn.Module``, naming ``measure_flops`` for other callables."""
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


def _shapes(input_shape: Any, name: str = "input_shape") -> list[tuple[int, ...]]:
    """The shapes ``input_shape`` (or ``input_size``, ``name``) gives, checked."""

    def is_shape(value: Any) -> bool:
        return isinstance(value, Sequence) and all(
            isinstance(size, int) and not isinstance(size, bool) for size in value
        )

    if is_shape(input_shape) and len(input_shape) > 0:
        shapes = [tuple(input_shape)]
    elif isinstance(input_shape, Sequence) and input_shape and all(map(is_shape, input_shape)):
        shapes = [tuple(shape) for shape in input_shape]
    elif name == "input_size":
        raise InvalidArgumentError(
            "input_size must be the shape of one input with its batch dimension (torchinfo's "
            f"convention), for example (1, 3, 224, 224), or a list of such shapes; got "
            f"{input_shape!r}"
        )
    else:
        raise InvalidArgumentError(
            "input_shape must be the shape of one input without its batch dimension, for example "
            f"(3, 224, 224), or a list of such shapes; got {input_shape!r}"
        )
    for shape in shapes:
        if any(size <= 0 for size in shape):
            shown = shape if all(abs(size) < 2**64 for size in shape) else "a size below zero"
            raise InvalidArgumentError(f"{name} sizes must be positive, got {shown}")
        elements = prod(shape)
        if elements > _MAX_INPUT_ELEMENTS:
            raise InvalidArgumentError(
                f"{name} must describe at most 2**48 elements per input (its bytes must fit "
                f"torch's 64-bit sizes); got about 2**{elements.bit_length() - 1}"
            )
    return shapes


def torchinfo_inputs(
    input_shape: Any, input_size: Any, input_data: Any, args: Any, kwargs: Any
) -> tuple[Any, Any]:
    """``args`` and ``kwargs`` with torchinfo's ``input_data`` folded in, given one way only.

    As torchinfo takes it, ``input_data`` is one tensor (the only positional input), a list or
    tuple of positional inputs, or a mapping of keyword inputs.
    """
    given = [
        name
        for name, value in (
            ("input_shape", input_shape),
            ("input_size", input_size),
            ("input_data", input_data),
            ("args", args),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise InvalidArgumentError(
            f"give the inputs one way, not both: {' and '.join(given)} were given (input_shape: "
            "shape without the batch dimension; input_size: with it, as torchinfo takes it; "
            "input_data or args: the inputs themselves)"
        )
    if input_data is None:
        return args, kwargs
    if isinstance(input_data, Mapping):
        if kwargs is not None:
            raise InvalidArgumentError(
                "input_data given as a mapping is the keyword inputs; put kwargs into it"
            )
        return None, dict(input_data)
    if isinstance(input_data, (list, tuple)):
        return tuple(input_data), kwargs
    return (input_data,), kwargs


def make_inputs(
    model: Any,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    input_size: Any = None,
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """The positional and keyword inputs of the forward, and the device recorded.

    ``input_shape`` gives shapes without the batch dimension (a batch of one is added),
    ``input_size`` shapes with it (torchinfo's convention).
    """
    import torch

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise InvalidArgumentError(f"kwargs must be a mapping, got {type(kwargs).__name__}")
    if input_shape is None and input_size is None and args is None and kwargs is None:
        raise InvalidArgumentError(
            "give the inputs: input_shape=(3, 224, 224) (batch of one generated), "
            "input_size=(1, 3, 224, 224) (batch included, as torchinfo takes it) or "
            "args=(tensor, ...) and/or kwargs={...} (forwarded unchanged)"
        )
    if input_shape is not None and args is not None:
        raise InvalidArgumentError("give input_shape or args, not both")
    if input_size is not None and (args is not None or input_shape is not None):
        raise InvalidArgumentError("give input_size or input_shape or args, one of them")
    resolved_device = _resolve_device(model, device)
    if input_shape is not None or input_size is not None:
        if input_shape is not None:
            shapes = [(1, *shape) for shape in _shapes(input_shape)]
        else:
            shapes = _shapes(input_size, "input_size")
        dtypes = _resolve_dtypes(model, dtype, len(shapes))
        generator = torch.Generator(device="cpu").manual_seed(0)
        positional: tuple[Any, ...] = tuple(
            _random_input(shape, kind, generator).to(resolved_device)
            for shape, kind in zip(shapes, dtypes, strict=True)
        )
    else:
        if dtype is not None:
            raise InvalidArgumentError(
                "dtype applies to generated inputs (input_shape, input_size); args are "
                "forwarded unchanged"
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
