"""Frozen values: what the analysis keeps of a module's inputs and outputs describes the same."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

from torchscan import formulas
from torchscan._values import TensorSpec, describe, freeze, iter_tensors

Pair = namedtuple("Pair", ["left", "right"])


@dataclass
class Record:
    hidden: torch.Tensor
    extra: Any = None


class Opaque:
    pass


def _samples() -> list[Any]:
    t = torch.randn(2, 3, requires_grad=True)
    return [
        t,
        (t,),
        (t, None, 3, 2.5, "x", True),
        [t, [t.detach(), (t,)]],
        {"a": t, "b": [t, None], 3: t},
        OrderedDict(a=t),
        Pair(t, (t, 1)),
        Record(t, extra=[t]),
        Opaque(),
        torch.max(torch.randn(3, 4), 1),  # a torch return type (a struct sequence)
        pack_padded_sequence(torch.randn(4, 2, 3), torch.tensor([4, 2])),
        torch.Size([2, 3]),
        torch.zeros(2, dtype=torch.int64),
        torch.empty(2, 5, device="meta"),
    ]


@pytest.mark.parametrize("value", _samples(), ids=lambda value: type(value).__name__)
def test_frozen_values_describe_the_same(value: Any) -> None:
    assert describe(freeze(value)) == describe(value)


def test_frozen_values_keep_no_tensor() -> None:
    for value in _samples():
        frozen = freeze(value)
        assert not any(isinstance(item, torch.Tensor) for item in iter_tensors(frozen))


def test_tensor_spec_answers_like_the_tensor() -> None:
    tensor = torch.randn(2, 3, 4)
    spec = TensorSpec(tensor)
    assert spec.shape == tensor.shape
    assert spec.ndim == tensor.ndim == spec.dim() == 3
    assert spec.numel() == tensor.numel() == 24
    assert TensorSpec(torch.tensor(1.0)).numel() == 1
    assert spec.ident == id(tensor)
    assert (spec.dtype, spec.device, spec.requires_grad) == (torch.float32, tensor.device, False)
    assert repr(spec) == (
        "TensorSpec(shape=[2, 3, 4], dtype=torch.float32, device=cpu, requires_grad=False)"
    )


def test_tensor_spec_keeps_no_reference_to_the_tensor() -> None:
    import weakref

    tensor = torch.randn(5, requires_grad=True)
    ref = weakref.ref(tensor)
    spec = TensorSpec(tensor)
    del tensor
    assert ref() is None
    assert spec.requires_grad is True and spec.shape == torch.Size([5])


def test_tensor_spec_counts_elements_exactly_beyond_64_bits() -> None:
    from types import SimpleNamespace

    huge = SimpleNamespace(
        shape=torch.Size([2**40, 2**40, 3]), dtype=torch.float32, device="meta", requires_grad=0
    )
    spec = TensorSpec(huge)
    assert spec.numel() == 3 * 2**80
    assert repr(spec).startswith("TensorSpec(shape=[1099511627776, 1099511627776, 3], ")
    beyond = SimpleNamespace(
        shape=torch.Size([2**70]), dtype=torch.float32, device="meta", requires_grad=False
    )
    assert "[1180591620717411303424]" in repr(TensorSpec(beyond))
    assert TensorSpec(beyond).numel() == 2**70
    assert spec.requires_grad is False
    assert TensorSpec(torch.empty(0, 7)).numel() == 0


def test_packed_sequence_stays_a_packed_sequence_for_the_formulas() -> None:
    lstm = torch.nn.LSTM(3, 5)
    packed = pack_padded_sequence(torch.randn(4, 2, 3), torch.tensor([4, 2]))
    output = lstm(packed)
    assert formulas.module_estimate(lstm, freeze((packed,)), freeze(output)) == (
        formulas.module_estimate(lstm, (packed,), output)
    )


@pytest.mark.parametrize(
    ("module", "shape"),
    [
        (torch.nn.Conv2d(3, 8, 3, stride=2), (1, 3, 16, 16)),
        (torch.nn.BatchNorm2d(3), (2, 3, 8, 8)),
        (torch.nn.Linear(6, 4), (5, 6)),
        (torch.nn.MaxPool2d(2), (1, 3, 8, 8)),
        (torch.nn.LayerNorm(6), (2, 5, 6)),
        (torch.nn.MultiheadAttention(8, 2, batch_first=True), (2, 5, 8)),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, torch.nn.Module) else "",
)
def test_formulas_give_the_same_answer_on_frozen_values(
    module: torch.nn.Module, shape: tuple[int, ...]
) -> None:
    x = torch.randn(*shape)
    inputs = (x, x, x) if isinstance(module, torch.nn.MultiheadAttention) else (x,)
    with torch.no_grad():
        output = module.eval()(*inputs)
    assert formulas.module_estimate(module, freeze(inputs), freeze(output)) == (
        formulas.module_estimate(module, inputs, output)
    )
    assert formulas.field_step(module, freeze(inputs), freeze(output)) == (
        formulas.field_step(module, inputs, output)
    )


@pytest.mark.parametrize(
    "tensor",
    [
        torch.zeros(2, 3, dtype=torch.bfloat16),
        torch.zeros((), dtype=torch.int64),
        torch.empty(4, 0, device="meta"),
        torch.ones(1, requires_grad=True),
    ],
    ids=["bfloat16", "scalar", "meta", "grad"],
)
def test_a_frozen_tensor_describes_as_the_tensor(tensor: torch.Tensor) -> None:
    assert describe(TensorSpec(tensor)) == describe(tensor)
    # Names come from the caches only; a name not there yet is the caller's to make.
    assert TensorSpec(tensor).describe({}, {}) is None
    assert TensorSpec(tensor).describe({tensor.dtype: "d"}, {tensor.device: "x"}) == {
        "kind": "tensor",
        "shape": list(tensor.shape),
        "dtype": "d",
        "device": "x",
        "requires_grad": tensor.requires_grad,
    }
    assert list(describe(TensorSpec(tensor))) == [
        "kind",
        "shape",
        "dtype",
        "device",
        "requires_grad",
    ]


def test_describe_names_a_dtype_and_device_on_first_sight(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchscan import _values

    monkeypatch.setattr(_values, "DTYPE_NAMES", {})
    monkeypatch.setattr(_values, "DEVICE_NAMES", {})
    tensor = torch.zeros(2, dtype=torch.float16)
    assert describe(TensorSpec(tensor))["dtype"] == "torch.float16"
    names = (_values.DTYPE_NAMES, _values.DEVICE_NAMES)
    assert names == ({torch.float16: "torch.float16"}, {tensor.device: "cpu"})


def test_mappings_keep_torchscan_02s_layout_and_only_safe_keys() -> None:
    tensor = torch.zeros(2)
    value = OrderedDict([("logits", tensor), (3, None), ("data/train.csv", 1.5), ((1, 2), "x")])
    meta = describe(value)
    assert meta == {
        "kind": "mapping",
        "type": "OrderedDict",
        "items": [
            {"key": "logits", "key_type": "str", "value": describe(tensor)},
            {"key": 3, "key_type": "int", "value": {"kind": "none"}},
            # neither a file name nor any other free text, nor a repr, enters a report
            {"key_type": "str", "value": {"kind": "scalar", "type": "float"}},
            {"key_type": "tuple", "value": {"kind": "scalar", "type": "str"}},
        ],
    }
    assert describe(freeze(value)) == meta
    assert describe(tensor)["dtype"] == "torch.float32"
