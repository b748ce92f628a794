"""torchinfo's habits: ``input_size`` (batch included), ``input_data``, ``depth``, and a shape the
model refuses explained with the argument to use."""

from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import InvalidArgumentError, ModelInputError, crawl_module, summary

torch.set_num_threads(1)


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 30 * 30, 10)
    ).eval()


class Counting(nn.Module):
    """Counts its forwards; takes ``x`` and an optional keyword ``scale``."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.calls = 0

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        self.calls += 1
        return self.linear(x) * scale


def comparable(report: Any) -> Any:
    return report["inputs"], report["totals"], report["layers"]


def test_input_size_includes_the_batch_dimension() -> None:
    model = cnn()
    with_batch = crawl_module(model, input_size=(1, 3, 32, 32))
    assert comparable(with_batch) == comparable(crawl_module(model, (3, 32, 32)))
    assert with_batch["inputs"]["source"] == "generated"
    assert with_batch["inputs"]["args"][0]["shape"] == [1, 3, 32, 32]
    batch_of_two = crawl_module(model, input_size=[(2, 3, 32, 32)])
    assert batch_of_two["inputs"]["args"][0]["shape"] == [2, 3, 32, 32]
    flops = batch_of_two["totals"]["module_flops"]["value"]
    assert flops == 2 * with_batch["totals"]["module_flops"]["value"]
    long_ids = crawl_module(nn.Embedding(10, 4), input_size=(2, 5), dtype=torch.long)
    assert long_ids["inputs"]["args"][0] == {
        "kind": "tensor",
        "shape": [2, 5],
        "dtype": "torch.int64",
        "device": "cpu",
        "requires_grad": False,
    }


def test_input_data_is_a_tensor_a_sequence_or_keyword_inputs() -> None:
    model = Counting()
    x = torch.randn(3, 4)
    expected = comparable(crawl_module(model, args=(x,)))
    assert comparable(crawl_module(model, input_data=x)) == expected
    assert comparable(crawl_module(model, input_data=[x])) == expected
    assert comparable(crawl_module(model, input_data=(x,))) == expected
    keywords = crawl_module(model, input_data={"x": x, "scale": 2.0})
    assert keywords["inputs"]["args"] == []
    assert sorted(keywords["inputs"]["kwargs"]) == ["scale", "x"]
    assert comparable(keywords) == comparable(crawl_module(model, kwargs={"x": x, "scale": 2.0}))
    # A sequence of inputs goes positionally, with kwargs beside it.
    mixed = crawl_module(model, input_data=[x], kwargs={"scale": 3.0})
    assert list(mixed["inputs"]["kwargs"]) == ["scale"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"input_shape": (4,), "input_size": (1, 4)},
        {"input_shape": (4,), "input_data": torch.randn(1, 4)},
        {"input_size": (1, 4), "args": (torch.randn(1, 4),)},
        {"input_data": torch.randn(1, 4), "args": (torch.randn(1, 4),)},
        {"input_data": {"x": torch.randn(1, 4)}, "kwargs": {"scale": 2.0}},
        {"input_size": "1, 4"},
        {"input_size": (1, 0)},
        {"input_size": (1, 4), "args": None, "dtype": "float"},
    ],
)
def test_inputs_given_two_ways_or_badly_are_refused_before_the_forward(
    arguments: dict[str, Any],
) -> None:
    model = Counting()
    with pytest.raises(InvalidArgumentError):
        crawl_module(model, **arguments)
    with pytest.raises(InvalidArgumentError):
        summary(model, file=io.StringIO(), **arguments)
    assert model.calls == 0


def test_depth_is_max_depth() -> None:
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 2))
    by_depth, by_max_depth = io.StringIO(), io.StringIO()
    summary(model, (4,), depth=1, file=by_depth)
    summary(model, (4,), max_depth=1, file=by_max_depth)
    assert by_depth.getvalue() == by_max_depth.getvalue()
    assert "  0 (Linear)" not in by_depth.getvalue()
    assert "0 (Sequential)" in by_depth.getvalue()
    summary(model, (4,), depth=1, max_depth=1, file=io.StringIO())
    with pytest.raises(InvalidArgumentError, match="depth is torchinfo's name for max_depth"):
        summary(model, (4,), depth=1, max_depth=2, file=io.StringIO())
    with pytest.raises(InvalidArgumentError, match="depth"):
        summary(model, (4,), depth=-1, file=io.StringIO())


def test_a_batched_input_shape_says_to_use_input_size() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        crawl_module(cnn(), (1, 3, 32, 32))
    error = caught.value
    assert isinstance(error, RuntimeError)  # still of the model's exception kind
    assert isinstance(error.__cause__, RuntimeError)
    message = str(error)
    assert "input_shape=(1, 3, 32, 32) has shape [1, 1, 3, 32, 32]" in message
    assert "layer 0 (Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1)))" in message
    assert "pass input_size=(1, 3, 32, 32)" in message
    assert "or input_shape=(3, 32, 32)" in message
    assert str(error.__cause__) in message


def test_a_shape_that_does_not_fit_a_later_layer_names_it() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        summary(cnn(), (3, 16, 16), file=io.StringIO())
    message = str(caught.value)
    assert "layer 3 (Linear(in_features=7200, out_features=10, bias=True))" in message
    assert "mat1 and mat2 shapes cannot be multiplied (1x1568 and 7200x10)" in message
    with pytest.raises(InvalidArgumentError) as sized:
        crawl_module(cnn(), input_size=(3, 32, 32))
    assert "input_size=(3, 32, 32) has shape [3, 32, 32]" in str(sized.value)
    assert "input_size includes the batch dimension" in str(sized.value)


def test_errors_of_given_inputs_and_other_errors_propagate_unchanged() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("the model's own failure")

    with pytest.raises(RuntimeError, match=r"^the model's own failure$") as own:
        crawl_module(Broken(), (3,))
    assert not isinstance(own.value, InvalidArgumentError)
    # Inputs given by the caller are theirs: the model's shape error stays as it is.
    with pytest.raises(RuntimeError) as given:
        crawl_module(cnn(), args=(torch.randn(1, 1, 3, 32, 32),))
    assert not isinstance(given.value, InvalidArgumentError)
    assert "Expected 3D (unbatched) or 4D (batched) input" in str(given.value)


def test_an_index_operation_on_an_input_size_input_names_input_size() -> None:
    with pytest.raises(ModelInputError) as caught:
        crawl_module(nn.Embedding(10, 4), input_size=(1, 5))
    message = str(caught.value)
    assert "input_size=(1, 5), a torch.float32 tensor" in message
    assert "crawl_module(model, input_size=(1, 5), dtype=torch.long)" in message


def test_the_totals_carry_torchinfos_input_size() -> None:
    x = torch.randn(3, 4)
    report = crawl_module(Counting(), input_data={"x": x, "scale": 2.0})
    assert report["totals"]["input_bytes"]["value"] == 3 * 4 * 4
    assert report["totals"]["input_bytes"]["status"] == "complete"
    # The same tensor given twice is counted once; integer and half tensors by their size.
    twice = crawl_module(Counting(), args=(x,), kwargs={"scale": 1.0})
    assert twice["totals"]["input_bytes"]["value"] == 48
    generated = crawl_module(nn.Embedding(10, 4), input_size=(2, 5), dtype=torch.long)
    assert generated["totals"]["input_bytes"]["value"] == 2 * 5 * 8
    text = io.StringIO()
    summary(cnn(), input_size=(1, 3, 32, 32), file=text)
    assert "  Input size: 12.00 KiB (12,288 B)" in text.getvalue().splitlines()


def pooled() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3),
        nn.MaxPool2d(2),
        nn.Sequential(nn.Conv2d(8, 4, (3, 1)), nn.ReLU()),
        nn.Flatten(),
        nn.Linear(4 * 13 * 15, 10),
    ).eval()


def test_kernel_sizes_are_recorded_as_the_modules_hold_them() -> None:
    layers = {layer["path"]: layer for layer in crawl_module(pooled(), (3, 32, 32))["layers"]}
    assert layers["0"]["kernel_size"] == [3, 3]
    assert layers["1"]["kernel_size"] == [2]
    assert layers["2.0"]["kernel_size"] == [3, 1]
    assert "kernel_size" not in layers["4"] and "kernel_size" not in layers["2"]


def _table(text: str) -> list[str]:
    lines = text.splitlines()
    rules = [index for index, line in enumerate(lines) if set(line) == {"-"}]
    return lines[rules[0] + 1 : rules[2]]


def test_col_names_choose_the_columns_in_order() -> None:
    text = io.StringIO()
    report = summary(
        pooled(),
        input_size=(1, 3, 32, 32),
        col_names=("input_size", "kernel_size", "num_params", "params_percent", "mult_adds"),
        file=text,
    )
    table = _table(text.getvalue())
    assert table[0].split() == [
        "Layer",
        "(type)",
        "Input",
        "shape",
        "Kernel",
        "Params",
        "Params",
        "%",
        "MACs",
    ]
    names = ["conv", "pool", "block", "inner", "relu", "flatten", "linear"]
    rows = dict(zip(names, table[2:], strict=True))
    total = report["totals"]["parameters"]["value"]
    assert total == 224 + 100 + 7810
    conv = rows["conv"].split()
    assert conv[2:] == [
        "[1,",
        "3,",
        "32,",
        "32]",
        "3x3",
        "224",
        f"{224 / total * 100:.1f}%",
        "194,400",
    ]
    assert rows["pool"].split()[-4:] == ["2", "0", "0.0%", "0"]
    # The container shows the total under it, in parentheses.
    assert rows["inner"].split()[-4:-1] == ["3x1", "100", f"{100 / total * 100:.1f}%"]
    assert rows["block"].split()[-4:-1] == ["-", "(100)", f"({100 / total * 100:.1f}%)"]
    # Default columns are the usual table.
    default, chosen = io.StringIO(), io.StringIO()
    summary(pooled(), (3, 32, 32), file=default)
    summary(
        pooled(),
        (3, 32, 32),
        col_names=["output_size", "num_params", "trainable", "module_flops", "mult_adds"],
        file=chosen,
    )
    assert default.getvalue() == chosen.getvalue()


def test_operator_flops_column_shows_each_modules_operators_at_its_first_call() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(self.linear(x))

    text = io.StringIO()
    summary(Twice(), (4,), col_names=["operator_flops", "module_flops"], file=text)
    lines = text.getvalue().splitlines()
    rows = _table(text.getvalue())[2:]
    assert [row.split() for row in rows] == [
        ["linear", "(Linear)", "64", "32"],
        ["linear", "#2", "(Linear)", "-", "32"],
    ]
    assert any(
        line.startswith("Op FLOPs: operators run inside the module over all its calls")
        for line in lines
    )


def test_bad_col_names_are_refused_before_the_forward() -> None:
    model = Counting()
    for bad in ("num_params", ["flops"], [], [1]):
        with pytest.raises(InvalidArgumentError, match="col_names"):
            summary(model, (4,), col_names=bad, file=io.StringIO())  # type: ignore[arg-type]
    assert model.calls == 0


def test_the_core_refuses_unknown_columns_as_torchscan_errors_itself() -> None:
    """The compiled check raises torchscan's own error: no Python site translates it."""
    from torchscan import _core

    with pytest.raises(InvalidArgumentError) as caught:
        _core.check_summary_columns(["num_params", "nope"])
    assert str(caught.value).startswith("col_names: ")
    assert "nope" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    _core.check_summary_columns(["num_params", "output_size"])  # known names pass


def test_tensor_memory_measures_the_peak_in_place_of_torchinfos_estimate() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU()).train()
    text = io.StringIO()
    report = summary(model, input_size=(32, 128), tensor_memory=True, file=text)
    peak = report["totals"]["tensor_memory_peak"]
    # Parameters (128 x 128 + 128) and the input, then the Linear's and the ReLU's outputs, all
    # float32 and alive together at the end of the forward.
    assert peak["value"] == (128 * 128 + 128) * 4 + 3 * 32 * 128 * 4 == 115_200
    assert peak["status"] == "complete" and peak["scope"] == "PyTorch tracked CPU tensors"
    assert "  Tensor memory peak: 112.5 KiB (115,200 B) (measured, a second forward)" in (
        text.getvalue().splitlines()
    )
    assert model.training  # restored after both forwards
    assert "tensor_memory_peak" not in crawl_module(model, input_size=(32, 128))["totals"]
    with pytest.raises(InvalidArgumentError, match="tensor_memory must be True or False"):
        crawl_module(model, input_size=(32, 128), tensor_memory="yes")  # type: ignore[arg-type]


def test_a_shape_refused_for_another_reason_gets_no_batch_hint() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        crawl_module(nn.Sequential(nn.Conv2d(3, 4, 3)), input_shape=(4, 8, 8))
    message = str(caught.value)
    assert "to have 3 channels, but got 4 channels instead" in message
    assert "already includes it" not in message and "input_shape=(8, 8)" not in message
    assert "Give the shape of one input the model takes, without the batch dimension" in message


@pytest.mark.parametrize("mode", ["full", "structure"])
def test_a_shape_error_of_the_models_own_code_propagates_unchanged(mode: str) -> None:
    class OwnProduct(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x) @ torch.ones(5, 2)

    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied") as caught:
        crawl_module(OwnProduct(), input_shape=(4,), mode=mode)
    assert type(caught.value) is RuntimeError


def test_more_shapes_than_positional_inputs_says_how_many_the_forward_takes() -> None:
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.linear(x) + self.linear(y)

    with pytest.raises(InvalidArgumentError) as caught:
        crawl_module(Two(), input_size=[(1, 4), (1, 4), (1, 4)])
    assert isinstance(caught.value, TypeError)
    assert str(caught.value).startswith(
        "crawl_module: input_size=[(1, 4), (1, 4), (1, 4)] gives 3 inputs, one per shape, but "
        "Two.forward takes 2 positional inputs (x, y): give one shape per positional input."
    )

    class KeywordOnly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, *, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x)

    with pytest.raises(InvalidArgumentError, match=r"takes no positional input") as keyword:
        crawl_module(KeywordOnly(), input_size=(2, 4))
    assert "Its keyword-only inputs (x) go in kwargs={...}" in str(keyword.value)


def test_a_column_named_twice_is_refused() -> None:
    for names, said in (
        (["macs", "macs"], "column 'macs' is named twice"),
        (["num_params", "parameters"], "column 'parameters' is the column 'num_params' already"),
    ):
        with pytest.raises(InvalidArgumentError, match=said):
            summary(Counting(), (4,), col_names=names, file=io.StringIO())


def test_a_module_whose_parent_never_ran_is_named_by_its_path() -> None:
    class PartlyRun(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(4, 4))
            self.part = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.part[0](self.enc(x))

    text = io.StringIO()
    summary(PartlyRun(), (4,), col_names=["num_params"], depth=1, file=text)
    rows = [row.split() for row in _table(text.getvalue())[2:]]
    # `part` never ran: its child is not shown under `enc`, and depth=1 keeps it.
    assert rows == [["enc", "(Sequential)", "(20)"], ["part.0", "(Linear)", "20"]]


def test_a_share_that_rounds_to_all_is_not_shown_as_all() -> None:
    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.weight

    model = nn.Sequential(nn.Linear(100, 3000), Scale())
    text = io.StringIO()
    summary(model, (100,), col_names=["num_params", "params_percent"], file=text)
    rows = [row.split() for row in _table(text.getvalue())[2:]]
    assert rows[0][-1] == ">99.9%" and rows[1][-1] == "<0.1%"
