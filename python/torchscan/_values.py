"""Metadata of values passed to and returned by modules: shape, dtype, device, never contents."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ._core import TensorSpec
from .reports import MappingItemMeta, NamedValueMeta, TensorMeta, ValueMeta

__all__ = [
    "TensorSpec",
    "describe",
    "dtype_name",
    "floating_dtypes",
    "freeze",
    "iter_tensors",
    "tensor_meta",
]

# Deeply nested or cyclic containers are cut off here rather than recursing without bound.
_MAX_DEPTH = 32
_SCALARS = (bool, int, float, complex, str, bytes)


def dtype_name(dtype: Any) -> str:
    """A dtype as PyTorch names it: ``torch.float32``."""
    return str(dtype)


DTYPE_NAMES: dict[Any, str] = {}
DEVICE_NAMES: dict[Any, str] = {}


def tensor_meta(tensor: Any) -> TensorMeta:
    """Shape, dtype, device and ``requires_grad`` of a tensor."""
    # Runs for every input and output of every module call: names are cached per dtype/device.
    dtype, device = tensor.dtype, tensor.device
    dtype_text = DTYPE_NAMES.get(dtype)
    if dtype_text is None:
        dtype_text = DTYPE_NAMES[dtype] = dtype_name(dtype)
    device_text = DEVICE_NAMES.get(device)
    if device_text is None:
        device_text = DEVICE_NAMES[device] = str(device)
    return {
        "shape": list(tensor.shape),
        "dtype": dtype_text,
        "device": device_text,
        "requires_grad": bool(tensor.requires_grad),
    }


class _FrozenRecord:
    """A dataclass instance, frozen: its type name and its fields, frozen."""

    __slots__ = ("fields", "type_name")

    def __init__(self, type_name: str, fields: list[tuple[str, Any]]) -> None:
        self.type_name = type_name
        self.fields = fields


class _FrozenMapping:
    """A mapping other than a plain dict, frozen: its type name and its items, frozen."""

    __slots__ = ("items", "type_name")

    def __init__(self, type_name: str, items: list[tuple[Any, Any]]) -> None:
        self.type_name = type_name
        self.items = items


def freeze(value: Any, _depth: int = 0) -> Any:
    """``value`` with every tensor replaced by its :class:`TensorSpec`, through containers.

    Tuples, lists and dicts keep their kind (named tuples their class, built without calling
    its constructor); dataclasses and other mappings become records of their fields or items;
    scalars, ``None`` and any other object are kept as they are. :func:`describe` gives the same
    metadata for the frozen value as for the value itself.
    """
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(value)
    kind = type(value)
    if kind is tuple and len(value) == 1 and isinstance(value[0], torch.Tensor):
        return (TensorSpec(value[0]),)  # the usual positional inputs of a module call
    if value is None or isinstance(value, _SCALARS) or _depth >= _MAX_DEPTH:
        return value
    if kind is tuple:
        return tuple([freeze(item, _depth + 1) for item in value])
    if isinstance(value, tuple):
        items = [freeze(item, _depth + 1) for item in value]
        if hasattr(kind, "_fields"):
            try:
                return tuple.__new__(kind, items)
            except TypeError:  # a tuple type that only its own constructor may build
                pass
        return tuple(items)
    if isinstance(value, list):
        return [freeze(item, _depth + 1) for item in value]
    if kind is dict:
        return {key: freeze(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, Mapping):
        items = [(key, freeze(item, _depth + 1)) for key, item in value.items()]
        return _FrozenMapping(_type_name(value), items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _FrozenRecord(
            _type_name(value),
            [
                (field.name, freeze(getattr(value, field.name, None), _depth + 1))
                for field in dataclasses.fields(value)
            ],
        )
    return value


def _type_name(value: Any) -> str:
    return type(value).__name__


def _mapping_item(key: Any, value: Any, depth: int) -> MappingItemMeta:
    # An integer or identifier key is a name; any other key (a path, free text, an object) is
    # left out and only its type recorded, never its repr.
    item: MappingItemMeta = {"key_type": _type_name(key), "value": describe(value, depth + 1)}
    if (isinstance(key, int) and not isinstance(key, bool)) or (
        isinstance(key, str) and key.isidentifier()
    ):
        item = {"key": key, **item}
    return item


def describe(value: Any, _depth: int = 0) -> ValueMeta:
    """The metadata tree of ``value``, never its contents.

    Tensors, tuples, lists, dicts, dataclasses, named tuples, ``None`` and scalars (type only) are
    described; anything else by its type name.
    """
    if type(value) is TensorSpec:
        meta = value.describe(DTYPE_NAMES, DEVICE_NAMES)
        if meta is None:  # a dtype or device not named yet
            DTYPE_NAMES.setdefault(value.dtype, dtype_name(value.dtype))
            DEVICE_NAMES.setdefault(value.device, str(value.device))
            meta = value.describe(DTYPE_NAMES, DEVICE_NAMES)
        return meta  # type: ignore[return-value]
    import torch

    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", **tensor_meta(value)}
    if value is None:
        return {"kind": "none"}
    if isinstance(value, _SCALARS):
        return {"kind": "scalar", "type": _type_name(value)}
    if _depth >= _MAX_DEPTH:
        return {"kind": "object", "type": _type_name(value)}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        fields: list[NamedValueMeta] = [
            {"name": str(name), "value": describe(item, _depth + 1)}
            for name, item in zip(getattr(type(value), "_fields", ()), value, strict=False)
        ]
        return {"kind": "named_tuple", "type": _type_name(value), "fields": fields}
    if isinstance(value, tuple):
        return {"kind": "tuple", "items": [describe(item, _depth + 1) for item in value]}
    if isinstance(value, list):
        return {"kind": "list", "items": [describe(item, _depth + 1) for item in value]}
    if isinstance(value, Mapping):
        items = [_mapping_item(key, item, _depth) for key, item in value.items()]
        return {"kind": "mapping", "type": _type_name(value), "items": items}
    if type(value) is _FrozenMapping:
        pairs = [_mapping_item(key, item, _depth) for key, item in value.items]
        return {"kind": "mapping", "type": value.type_name, "items": pairs}
    if type(value) is _FrozenRecord:
        frozen: list[NamedValueMeta] = [
            {"name": name, "value": describe(item, _depth + 1)} for name, item in value.fields
        ]
        return {"kind": "dataclass", "type": value.type_name, "fields": frozen}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        record: list[NamedValueMeta] = [
            {"name": field.name, "value": describe(getattr(value, field.name, None), _depth + 1)}
            for field in dataclasses.fields(value)
        ]
        return {"kind": "dataclass", "type": _type_name(value), "fields": record}
    return {"kind": "object", "type": _type_name(value)}


def iter_tensors(value: Any) -> list[Any]:
    """Every tensor in ``value``, depth first, through the same containers as :func:`describe`.

    In a value made by :func:`freeze`, the tensors are its :class:`TensorSpec` leaves.
    """
    import torch

    if isinstance(value, (TensorSpec, torch.Tensor)):
        return [value]
    found: list[Any] = []
    _collect(value, found, 0, (TensorSpec, torch.Tensor))
    return found


def floating_dtypes(value: Any) -> list[Any]:
    """The floating dtypes of the tensors in ``value`` (nested containers, objects), each once."""
    return list(dict.fromkeys(t.dtype for t in iter_tensors(value) if t.is_floating_point()))


def _collect(
    value: Any, found: list[Any], depth: int, tensor_type: type | tuple[type, ...]
) -> None:
    if isinstance(value, tensor_type):
        found.append(value)
    elif depth >= _MAX_DEPTH or value is None or isinstance(value, _SCALARS):
        return
    elif isinstance(value, (tuple, list)):
        for item in value:
            _collect(item, found, depth + 1, tensor_type)
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, found, depth + 1, tensor_type)
    elif type(value) is _FrozenMapping:
        for _key, item in value.items:
            _collect(item, found, depth + 1, tensor_type)
    elif type(value) is _FrozenRecord:
        for _name, item in value.fields:
            _collect(item, found, depth + 1, tensor_type)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _collect(getattr(value, item.name, None), found, depth + 1, tensor_type)
