"""Operator bytes, counted in the FLOP-counting pass: exact oracles by hand.

Every executed operator counts ``numel * element_size`` of each distinct tensor it reads or
writes (its tensor arguments, inside lists and keyword arguments too, and its results), each
tensor once per operator; views and metadata queries count 0. A float32 element is 4 bytes.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from torchscan.flops import (  # noqa: E402
    OPERATOR_BYTES_METHOD,
    OPERATOR_BYTES_SCOPE,
    OperatorFlopCounter,
)

torch.set_num_threads(1)

F32 = 4


@torch.library.custom_op("torchscan_bytes_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def count(fn: Callable[[], Any]) -> OperatorFlopCounter:
    """A counter that has counted ``fn()`` once."""
    counter = OperatorFlopCounter()
    with counter:
        fn()
    return counter


def complete_bytes(value: int) -> dict[str, Any]:
    return {
        "status": "complete",
        "value": value,
        "known_value": value,
        "unit": "B",
        "scope": OPERATOR_BYTES_SCOPE,
        "method": OPERATOR_BYTES_METHOD,
        "reason": None,
    }


def bytes_of(fn: Callable[[], Any]) -> int:
    """The operator bytes of ``fn()``, which must be complete."""
    result = count(fn).operator_bytes()
    assert result["status"] == "complete", result
    value = result["value"]
    assert isinstance(value, int)
    return value


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    executor = concurrent.futures.ThreadPoolExecutor(1)
    executor.submit(lambda: None).result()  # the worker exists before the count starts
    yield executor
    executor.shutdown(wait=True)


# -- the oracle of the issue ----------------------------------------------------------------------


def test_matmul_oracle() -> None:
    a = torch.randn(256, 512)
    b = torch.randn(512, 128)
    counter = count(lambda: a @ b)
    # a 256x512, b 512x128 and the result 256x128, float32: (131,072 + 65,536 + 32,768) x 4.
    assert counter.operator_bytes() == complete_bytes(917_504)
    assert counter.operator_flops()["total"]["value"] == 33_554_432  # 2 x 256 x 512 x 128
    assert counter.calls() == {"aten::mm": 1}


def test_the_metric_is_an_integer_in_bytes() -> None:
    result = count(lambda: torch.randn(4, 4) @ torch.randn(4, 4)).operator_bytes()
    assert type(result["value"]) is int
    assert result["unit"] == "B"
    assert result["scope"] == (
        "the bytes of every operator's distinct tensor inputs and outputs, each operator on its "
        "own (no cache reuse between operators modelled); not DRAM traffic measured by the "
        "hardware"
    )
    assert "dispatch mode" in result["method"]


# -- one operator at a time -----------------------------------------------------------------------


def test_conv2d_counts_input_weight_bias_and_output() -> None:
    x = torch.randn(1, 3, 8, 8)
    weight = torch.randn(4, 3, 3, 3)
    bias = torch.randn(4)
    counter = count(lambda: F.conv2d(x, weight, bias))
    assert counter.calls() == {"aten::convolution": 1}
    # input 1x3x8x8, weight 4x3x3x3, bias 4, output 1x4x6x6.
    assert counter.operator_bytes() == complete_bytes((192 + 108 + 4 + 144) * F32)
    assert counter.operator_bytes()["value"] == 1_792


def test_conv2d_module_counts_its_parameters() -> None:
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        assert bytes_of(lambda: conv(x)) == 1_792


def test_elementwise_add_counts_two_inputs_and_the_output() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(64, 32)
    assert bytes_of(lambda: a + b) == 3 * 64 * 32 * F32  # 24,576


def test_in_place_add_counts_its_input_once() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(64, 32)
    counter = count(lambda: a.add_(b))
    assert counter.calls() == {"aten::add_": 1}
    # The result is ``a`` itself: a and b, 8,192 bytes each.
    assert counter.operator_bytes() == complete_bytes(16_384)


def test_an_input_given_twice_counts_once() -> None:
    a = torch.randn(64, 32)
    assert bytes_of(lambda: a * a) == 2 * 64 * 32 * F32  # a once, and the result: 16,384


def test_a_custom_operator_without_a_flop_formula_still_has_its_bytes() -> None:
    x = torch.randn(10, 10)
    counter = count(lambda: twice(x))
    assert counter.calls() == {"torchscan_bytes_test::twice": 1}
    assert counter.operator_flops()["total"]["status"] == "partial"
    assert counter.operator_bytes() == complete_bytes(800)  # 400 bytes in, 400 out


def test_the_dtype_sets_the_element_size() -> None:
    a = torch.ones(100, dtype=torch.float16)
    b = torch.ones(100, dtype=torch.int64)
    assert bytes_of(lambda: a + a) == 2 * 100 * 2
    assert bytes_of(lambda: b + b) == 2 * 100 * 8
    # float16 in, float64 out.
    assert bytes_of(lambda: a.to(torch.float64)) == 100 * 2 + 100 * 8


# -- views, copies and arguments off the common path --------------------------------------------


def test_views_move_no_data() -> None:
    a = torch.randn(64, 32)
    counter = count(
        lambda: (
            a.t(),
            a.view(-1),
            a.reshape(32, 64),
            a.expand(2, 64, 32),
            a.as_strided((8, 8), (1, 8)),
            a.unsqueeze(0).squeeze(0),
            a.permute(1, 0),
            a[1:3],
            a.split(16),
            a.detach(),
        )
    )
    assert counter.operator_bytes() == complete_bytes(0)
    assert counter.calls() == {
        "aten::t": 1,
        "aten::view": 2,  # view, and reshape of a contiguous tensor
        "aten::expand": 1,
        "aten::as_strided": 1,
        "aten::unsqueeze": 1,
        "aten::squeeze": 1,
        "aten::permute": 1,
        "aten::slice": 1,
        "aten::split": 1,
        "aten::detach": 1,
    }


def test_in_place_view_changes_move_no_data() -> None:
    a = torch.randn(64, 32)
    assert bytes_of(lambda: a.t_()) == 0


def test_copies_move_data() -> None:
    a = torch.randn(64, 32)
    size = 64 * 32 * F32
    assert bytes_of(lambda: a.clone()) == 2 * size
    # The transpose is a view; ``contiguous`` copies it (a ``clone``).
    assert bytes_of(lambda: a.t().contiguous()) == 2 * size
    # Already contiguous: ``contiguous`` returns the tensor itself, and nothing runs.
    assert bytes_of(lambda: a.contiguous()) == 0
    target = torch.empty(64, 32)
    assert bytes_of(lambda: target.copy_(a)) == 2 * size


def test_a_view_then_an_operator_counts_the_operator_only() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(32, 64)
    # ``a.t()`` is free; the addition reads the view and b and writes a 32x64 result.
    assert bytes_of(lambda: a.t() + b) == 3 * 64 * 32 * F32


def test_tensors_inside_lists_count_once_each() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(64, 32)
    size = 64 * 32 * F32
    assert bytes_of(lambda: torch.cat([a, b])) == 4 * size  # a, b and the 128x32 result
    assert bytes_of(lambda: torch.cat([a, a])) == 3 * size  # a once


def test_keyword_tensors_count_and_an_out_tensor_once() -> None:
    a = torch.randn(64, 32)
    b = torch.randn(64, 32)
    out = torch.empty(64, 32)
    counter = count(lambda: torch.add(a, b, out=out))
    # a, b, and ``out`` (a keyword argument and the result: once).
    assert counter.operator_bytes() == complete_bytes(3 * 64 * 32 * F32)


def test_operators_add_up_each_on_its_own() -> None:
    a = torch.randn(64, 32)
    size = 64 * 32 * F32
    # relu: a in, r out; r + a: r, a and the sum. a and r count in both operators.
    assert bytes_of(lambda: torch.relu(a) + a) == 2 * size + 3 * size


def test_a_training_step_counts_backward_operators() -> None:
    linear = nn.Linear(8, 4, bias=False)
    x = torch.randn(2, 8)

    def step() -> None:
        linear(x).sum().backward()

    counter = count(step)
    assert counter.calls() == {
        "aten::t": 4,
        "aten::mm": 2,
        "aten::sum": 1,
        "aten::ones_like": 1,
        "aten::expand": 1,
        "aten::detach": 1,
    }
    forward_mm = 16 * F32 + 32 * F32 + 8 * F32  # x 2x8, the weight's transpose 8x4, y 2x4
    total = 8 * F32 + 1 * F32  # y, and the 0-d sum
    ones_like = 1 * F32 + 1 * F32  # the 0-d sum in, the 0-d gradient out
    # x's transpose 8x2, the expanded gradient 2x4 (a view: its 8 elements count), the 8x4
    # weight gradient. The transposes, the expansion and detach move nothing.
    weight_mm = 16 * F32 + 8 * F32 + 32 * F32
    assert counter.operator_bytes() == complete_bytes(forward_mm + total + ones_like + weight_mm)
    assert counter.operator_bytes()["value"] == 492


# -- status ---------------------------------------------------------------------------------------


def test_unavailable_before_the_counter_exits() -> None:
    counter = OperatorFlopCounter()
    result = counter.operator_bytes()
    assert result == {
        "status": "unavailable",
        "value": None,
        "known_value": None,
        "unit": "B",
        "scope": OPERATOR_BYTES_SCOPE,
        "method": OPERATOR_BYTES_METHOD,
        "reason": "the counter has not run: operator bytes are read after it exits",
    }


def test_a_second_count_starts_again() -> None:
    a = torch.randn(64, 32)
    counter = OperatorFlopCounter()
    with counter:
        a + a
        a + a
    assert counter.operator_bytes()["value"] == 4 * 64 * 32 * F32
    with counter:
        a + a
    assert counter.operator_bytes()["value"] == 2 * 64 * 32 * F32


def test_operators_on_other_threads_make_the_bytes_partial(
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    a = torch.randn(256, 512)
    b = torch.randn(512, 128)

    def here_and_elsewhere() -> None:
        torch.mm(a, b)
        pool.submit(lambda: torch.mm(a, b)).result()

    counter = count(here_and_elsewhere)
    reason = "1 operator call ran on 1 other thread while the workload ran; they are not counted"
    assert counter.operator_flops()["total"]["reason"] == reason
    assert counter.operator_bytes() == {
        "status": "partial",
        "value": None,
        "known_value": 917_504,  # what this thread did
        "unit": "B",
        "scope": OPERATOR_BYTES_SCOPE,
        "method": OPERATOR_BYTES_METHOD,
        "reason": reason,
    }


def test_a_tensor_whose_size_cannot_be_read_makes_the_bytes_partial() -> None:
    indices = torch.tensor([[0, 1], [1, 0]])
    sparse = torch.sparse_coo_tensor(indices, torch.ones(2), (2, 2), check_invariants=False)
    counter = count(lambda: sparse.to_dense())
    assert counter.calls() == {"aten::_to_dense": 1}
    assert counter.operator_bytes() == {
        "status": "partial",
        "value": None,
        "known_value": 16,  # the dense 2x2 result; the sparse input's size is not read
        "unit": "B",
        "scope": OPERATOR_BYTES_SCOPE,
        "method": OPERATOR_BYTES_METHOD,
        "reason": (
            "the size of 1 tensor could not be read (symbolic sizes or a sparse layout); they "
            "are not counted"
        ),
    }


def test_the_count_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OperatorFlopCounter, "_count_bytes", False)
    a = torch.randn(64, 32)
    counter = count(lambda: torch.cat([a, a]).sum() + a)
    assert counter.operator_bytes()["status"] == "unavailable"
    assert counter.operator_bytes()["reason"] == "operator bytes were not counted"
    assert counter.operator_flops()["total"]["status"] == "complete"


def test_only_the_counters_read_sizes_not_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """``crawl_module`` reports no operator bytes, so its dispatch never reads a tensor's size.

    Its counter inherited the counters' switch and added them up for nothing.
    """
    import torchscan
    from torchscan import _core

    built: list[bool] = []
    real = _core.DispatchRecorder

    def recorder(*args: Any, **kwargs: Any) -> Any:
        built.append(bool(kwargs.get("operator_bytes")))
        return real(*args, **kwargs)

    monkeypatch.setattr(_core, "DispatchRecorder", recorder)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    x = torch.randn(2, 8)
    report = torchscan.crawl_module(model, args=(x,))
    assert built == [False]
    assert "operator_bytes" not in str(report)
    with torch.no_grad():
        torchscan.measure_flops(lambda: model(x))
    assert built == [False, True]
    counter = count(lambda: model(x))
    assert built == [False, True, True]
    assert counter.operator_bytes()["value"] == (2 * 8 + 8 * 8 + 8 + 2 * 8) * F32 + 2 * 2 * 8 * F32
