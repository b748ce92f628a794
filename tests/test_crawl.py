"""crawl_module and summary: inputs, layers, totals, state restoration and errors."""

from __future__ import annotations

import io
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn

import torchscan
from torchscan import IncompleteAnalysisError, InvalidArgumentError, crawl_module, summary

from .models import ResNet18, TinyCNN

torch.set_num_threads(1)


def test_structure_mode_of_resnet18() -> None:
    report = crawl_module(ResNet18(), (3, 224, 224), mode="structure")
    totals = report["totals"]
    assert totals["parameters"]["value"] == 11_689_512
    assert totals["trainable_parameters"]["value"] == 11_689_512
    assert totals["frozen_parameters"]["value"] == 0
    assert totals["parameter_bytes"]["value"] == 11_689_512 * 4
    assert "not peak memory" in totals["parameter_bytes"]["scope"]
    for name in ("module_flops", "operator_flops", "macs", "dmas"):
        assert totals[name]["status"] == "unavailable"
        assert totals[name]["reason"] == "not requested"
    assert report["operator_flops"]["total"]["reason"] == "not requested"
    assert report["layers"][0]["path"] == ""
    assert report["layers"][0]["output"]["shape"] == [1, 1000]
    assert report["inputs"] == {
        "source": "generated",
        "args": [
            {
                "kind": "tensor",
                "shape": [1, 3, 224, 224],
                "dtype": "torch.float32",
                "device": "cpu",
                "requires_grad": False,
            }
        ],
        "kwargs": {},
    }
    assert torchscan.validate_report(report) == "analysis"


def test_module_called_twice_gives_two_records_and_counts_parameters_once() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(self.linear(x))

    report = crawl_module(Twice(), (4,), mode="structure")
    records = [
        (layer["path"], layer["call_index"], layer["parameters"]) for layer in report["layers"]
    ]
    assert records == [
        # The root holds nothing itself; everything under it is its total.
        (
            "",
            0,
            {
                "trainable": 0,
                "frozen": 0,
                "bytes": 0,
                "shared": False,
                "total": {"trainable": 20, "frozen": 0, "bytes": 80},
            },
        ),
        ("linear", 0, {"trainable": 20, "frozen": 0, "bytes": 80, "shared": False}),
        # Its second call holds the same tensors, already counted: torchscan 0.2's `shared`.
        ("linear", 1, {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}),
    ]
    assert report["totals"]["parameters"]["value"] == 20


def test_tied_weights_are_counted_once_and_reported() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.out = nn.Linear(4, 10, bias=False)
            self.out.weight = self.embed.weight

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.embed(x))

    report = crawl_module(Tied(), args=(torch.tensor([[1, 2, 3]]),), mode="structure")
    assert report["totals"]["parameters"]["value"] == 40
    assert report["totals"]["shared_tensors"] == 1
    codes = [d["code"] for d in report["diagnostics"]]
    assert "shared_tensors" in codes
    message = next(d["message"] for d in report["diagnostics"] if d["code"] == "shared_tensors")
    assert "embed.weight = out.weight" in message


def test_tied_weights_are_counted_at_the_first_layer_that_holds_them() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.out = nn.Linear(4, 10)
            self.out.weight = self.embed.weight

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.embed(x))

    report = crawl_module(Tied(), args=(torch.tensor([[1, 2, 3]]),))
    layers = {layer["path"]: layer["parameters"] for layer in report["layers"]}
    assert layers["embed"] == {"trainable": 40, "frozen": 0, "bytes": 160, "shared": False}
    # The tied weight was counted at `embed`; only the bias is new here.
    assert layers["out"] == {"trainable": 10, "frozen": 0, "bytes": 40, "shared": True}
    counted = sum(p["trainable"] + p["frozen"] for p in layers.values())
    assert counted == report["totals"]["parameters"]["value"] == 50
    assert sum(p["bytes"] for p in layers.values()) == report["totals"]["parameter_bytes"]["value"]


def test_layers_keep_torchscan_02s_layout() -> None:
    # The keys and nesting a caller of torchscan 0.2 reads.
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU())
    model[1].weight.requires_grad_(False)
    report = crawl_module(model, (3, 8, 8))
    root, conv, bn, relu = report["layers"]
    assert [layer["name"] for layer in report["layers"]] == ["sequential", "0", "1", "2"]
    assert [layer["type"] for layer in report["layers"]] == [
        "Sequential",
        "Conv2d",
        "BatchNorm2d",
        "ReLU",
    ]
    assert [layer["depth"] for layer in report["layers"]] == [0, 1, 1, 1]
    assert conv["input"] == {
        "args": [
            {
                "kind": "tensor",
                "shape": [1, 3, 8, 8],
                "dtype": "torch.float32",
                "device": "cpu",
                "requires_grad": False,
            }
        ],
        "kwargs": {},
    }
    assert conv["parameters"] == {"trainable": 108, "frozen": 0, "bytes": 432, "shared": False}
    assert bn["parameters"] == {"trainable": 4, "frozen": 4, "bytes": 32, "shared": False}
    # running_mean and running_var (4 float32 each) and num_batches_tracked (one int64).
    assert bn["buffers"] == {"elements": 9, "bytes": 40, "shared": False}
    assert relu["buffers"] == {"elements": 0, "bytes": 0, "shared": False}
    assert conv["metrics"]["module_flops"]["value"] == 4 * 6 * 6 * (2 * 27 - 1)  # no bias
    assert conv["metrics"]["macs"]["value"] == 4 * 6 * 6 * 27
    assert list(conv["metrics"]) == [
        "calls",
        "module_flops",
        "macs",
        "dmas",
        "receptive_field",
        "effective_stride",
        "effective_padding",
    ]
    # torchscan 0.2's context keys
    context = report["context"]
    assert (context["execution_mode"], context["devices"]) == ("evaluation_no_grad", ["cpu"])
    assert context["training_before"] is True and context["dtypes"] == ["torch.float32"]
    # 0.2's analysis nested a FlopReport: its views by 0.2's operator and module names
    flops = report["operator_flops"]
    assert flops["by_operator"] == {"aten.convolution": 4 * 6 * 6 * 27 * 2}
    assert flops["by_module"]["Sequential.0"] == flops["by_operator"]["aten.convolution"]
    assert flops["ignored_operators"]["aten.native_batch_norm"] == {
        "calls": 1,
        "reason": "excluded by convention: normalisation",
    }
    assert set(flops["ignored_operators"]) == {"aten.empty", "aten.native_batch_norm", "aten.relu"}
    # one record per call, as 0.2's `calls`
    assert [layer["metrics"]["calls"]["value"] for layer in report["layers"]] == [1.0] * len(
        report["layers"]
    )
    assert conv["metrics"]["calls"]["status"] == "complete"
    assert conv["metrics"]["receptive_field"]["value"] == 3.0
    assert root["metrics"]["macs"]["value"] == report["totals"]["macs"]["value"]
    assert torchscan.validate_report(report) == "analysis"


def test_the_receptive_field_is_also_one_number_where_every_dimension_agrees() -> None:
    # torchscan 0.2 read `metrics["receptive_field"]["value"]`; the per-dimension field stays.
    model = nn.Sequential(nn.Conv2d(3, 4, (3, 5)), nn.Conv2d(4, 4, 3, stride=2, padding=1))
    report = crawl_module(model, (3, 16, 16))
    first, second = report["layers"][1], report["layers"][2]
    assert second["receptive_field"]["size"] == [5.0, 7.0]
    numbers = {key: second["metrics"][key] for key in ("receptive_field", "effective_stride")}
    assert numbers["receptive_field"]["status"] == "unavailable"
    assert "differs by spatial dimension" in numbers["receptive_field"]["reason"]
    assert numbers["effective_stride"]["value"] == 2.0
    assert first["metrics"]["effective_padding"]["value"] == 0.0
    square = crawl_module(nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2)), (3, 8, 8))
    pool = square["layers"][2]["metrics"]
    assert (pool["receptive_field"]["value"], pool["effective_stride"]["value"]) == (4.0, 2.0)
    assert pool["receptive_field"]["unit"] == "count"
    structure = crawl_module(model, (3, 16, 16), mode="structure")
    assert structure["layers"][1]["metrics"]["receptive_field"]["reason"] == "not requested"
    assert torchscan.validate_report(report) == torchscan.validate_report(square) == "analysis"


class _Gate(nn.Module):
    def forward(self, x: torch.Tensor, *, scale: torch.Tensor, mode: str = "mul") -> torch.Tensor:
        return x * scale


class _Gated(nn.Module):
    def __init__(self, first: nn.Module) -> None:
        super().__init__()
        self.first = first
        self.gate = _Gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(self.first(x), scale=torch.full((1,), 2.0), mode="mul")


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.parametrize("scripted", [False, True], ids=["wrapped", "hooked"])
def test_a_layer_records_the_keyword_arguments_of_its_call(scripted: bool) -> None:
    # A scripted child makes the recorder use process-wide hooks instead of wrapping forwards.
    first: nn.Module = nn.Linear(3, 3)
    if scripted:
        first = torch.jit.script(first)
    report = crawl_module(_Gated(first), args=(torch.zeros(2, 3),), mode="structure")
    gate = next(layer for layer in report["layers"] if layer["path"] == "gate")
    assert gate["input"]["args"] == [
        {
            "kind": "tensor",
            "shape": [2, 3],
            "dtype": "torch.float32",
            "device": "cpu",
            "requires_grad": False,
        }
    ]
    assert gate["input"]["kwargs"] == {
        "scale": {
            "kind": "tensor",
            "shape": [1],
            "dtype": "torch.float32",
            "device": "cpu",
            "requires_grad": False,
        },
        "mode": {"kind": "scalar", "type": "str"},
    }
    assert torchscan.validate_report(report) == "analysis"


def test_frozen_parameters_and_buffers() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4))
    model[1].weight.requires_grad_(False)
    report = crawl_module(model, (3, 8, 8), mode="structure")
    totals = report["totals"]
    assert totals["parameters"]["value"] == 108 + 8
    assert totals["frozen_parameters"]["value"] == 4
    assert totals["buffer_elements"]["value"] == 4 + 4 + 1
    assert totals["buffer_bytes"]["value"] == 4 * 4 + 4 * 4 + 8


def test_args_and_kwargs_are_forwarded_unchanged() -> None:
    seen: dict[str, object] = {}

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(3, 2)

        def forward(
            self, x: torch.Tensor, *, scale: torch.Tensor, extra: object = None
        ) -> torch.Tensor:
            seen["x"], seen["scale"], seen["extra"] = x, scale, extra
            return self.linear(x) * scale

    x = torch.randn(2, 3, requires_grad=True)
    scale = torch.tensor(2.0)
    marker = object()
    report = crawl_module(
        Probe(), args=(x,), kwargs={"scale": scale, "extra": marker}, mode="structure"
    )
    assert seen["x"] is x and seen["scale"] is scale and seen["extra"] is marker
    assert report["inputs"]["source"] == "provided"
    assert report["inputs"]["args"][0]["requires_grad"] is True
    assert list(report["inputs"]["kwargs"]) == ["scale", "extra"]
    assert report["inputs"]["kwargs"]["extra"] == {"kind": "object", "type": "object"}


def test_nested_outputs_are_described_without_values() -> None:
    Pair = namedtuple("Pair", ["left", "right"])

    @dataclass
    class Out:
        logits: torch.Tensor
        aux: list[object]

    class Nested(nn.Module):
        def forward(self, x: torch.Tensor) -> object:
            return {"pair": Pair(x, None), "out": Out(x.double(), [1.5, "label", x.int()])}

    report = crawl_module(Nested(), (2,), mode="structure")
    output = report["layers"][0]["output"]
    # torchscan 0.2's mapping layout: the class name, and items with the key and its type
    assert (output["kind"], output["type"]) == ("mapping", "dict")
    assert [(item["key"], item["key_type"]) for item in output["items"]] == [
        ("pair", "str"),
        ("out", "str"),
    ]
    pair = output["items"][0]["value"]
    assert pair["kind"] == "named_tuple" and pair["type"] == "Pair"
    assert pair["fields"][1] == {"name": "right", "value": {"kind": "none"}}
    out = output["items"][1]["value"]
    assert out["kind"] == "dataclass" and out["fields"][0]["value"]["dtype"] == "torch.float64"
    assert out["fields"][1]["value"]["items"][:2] == [
        {"kind": "scalar", "type": "float"},
        {"kind": "scalar", "type": "str"},
    ]
    assert "label" not in str(report) and "1.5" not in str(report)


def test_training_flags_and_grad_mode_are_restored_on_success_and_error() -> None:
    model = TinyCNN().train()
    model.relu.eval()
    crawl_module(model, (3, 16, 16), mode="structure")
    assert model.training and model.conv.training and not model.relu.training
    assert torch.is_grad_enabled()

    class Boom(RuntimeError):
        pass

    error = Boom("from the model")

    class Failing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.inner(x)
            raise error

    failing = Failing().train()
    with pytest.raises(Boom) as caught:
        crawl_module(failing, (2,), mode="structure")
    assert caught.value is error
    assert failing.training and failing.inner.training
    assert torch.is_grad_enabled()
    assert not failing._forward_hooks and not failing._forward_pre_hooks
    assert not failing.inner._forward_hooks and not failing.inner._forward_pre_hooks


def _global_hooks() -> tuple[dict[int, object], ...]:
    from torch.nn.modules import module as torch_module

    return (
        dict(torch_module._global_forward_pre_hooks),
        dict(torch_module._global_forward_hooks),
        dict(torch_module._global_forward_hooks_always_called),
    )


@pytest.mark.parametrize("mode", ["structure", "full"])
def test_hooks_are_removed(mode: str) -> None:
    model = TinyCNN()
    before = _global_hooks()
    crawl_module(model, (3, 8, 8), mode=mode)
    assert _global_hooks() == before
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks

    class Failing(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        crawl_module(nn.Sequential(nn.ReLU(), Failing()), args=(torch.zeros(1, 2),), mode=mode)
    assert _global_hooks() == before


def test_modules_of_other_models_called_during_the_forward_are_not_recorded() -> None:
    other = nn.Linear(4, 4)

    class Caller(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return other(self.inner(x))

    report = crawl_module(Caller(), args=(torch.zeros(1, 4),))
    assert [layer["path"] for layer in report["layers"]] == ["", "inner"]
    # Its operators still ran inside the analysed model's forward and are counted there.
    assert report["operator_flops"]["total"]["value"] == 2 * (2 * 4 * 4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "give the inputs"),
        ({"input_shape": (3, 8, 8), "args": (torch.zeros(1),)}, "not both"),
        ({"input_shape": (3, 0, 8)}, "positive"),
        ({"input_shape": "3x8x8"}, "input_shape must be"),
        ({"input_shape": (3, 8, 8), "mode": "fast"}, "mode must be"),
        ({"input_shape": (3, 8, 8), "dtype": "float"}, "dtype must be"),
        ({"args": (torch.zeros(1, 3, 8, 8),), "dtype": torch.float16}, "dtype applies"),
        ({"input_shape": (3, 8, 8), "device": "gpu0"}, "not a torch device"),
        ({"input_shape": (3, 8, 8), "device": "meta"}, "move the model first"),
    ],
)
def test_bad_arguments_say_what_to_do(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        crawl_module(TinyCNN(), **kwargs)  # type: ignore[arg-type]


def test_not_a_module() -> None:
    with pytest.raises(InvalidArgumentError, match=r"measure_flops\(fn\)"):
        crawl_module(lambda x: x, (3,))  # type: ignore[arg-type]


def test_summary_prints_and_returns_the_report() -> None:
    buffer = io.StringIO()
    report = summary(TinyCNN(), (3, 16, 16), mode="structure", file=buffer)
    text = buffer.getvalue()
    assert text == torchscan.format_summary(report)
    assert text.startswith("Analysis of TinyCNN (structure mode, cpu, 1 PyTorch threads)")
    assert "conv (Conv2d)" in text and "[1, 8, 14, 14]" in text
    assert "Parameters: 314 (trainable 314, frozen 0)" in text


def test_summary_accepts_torchscan_02_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    summary(TinyCNN(), (3, 16, 16), "mid", None, True, False, mode="structure")
    summary(TinyCNN(), (3, 16, 16), wrap_mode="end", max_depth=1, mode="structure")
    summary(TinyCNN(), (3, 16, 16), None, mode="structure")
    assert capsys.readouterr().out.count("Analysis of TinyCNN") == 3
    # Only torchscan 0.2's values are accepted.
    with pytest.raises(InvalidArgumentError, match="wrap_mode must be 'mid', 'end' or None"):
        summary(TinyCNN(), (3, 16, 16), wrap_mode="top", mode="structure")


def test_summary_shows_the_receptive_field_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.MaxPool2d(2), nn.Conv2d(8, 8, (3, 1), stride=2), nn.Flatten()
    )
    report = summary(model, (3, 32, 32), None, None, True, True)  # torchscan 0.2's positions
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split("  ")[-3:] == ["Receptive field", "Eff. stride", "Eff. padding"]
    # 3x3 conv: 3; 2x2 pool, stride 2: 3 + 1 = 4; (3, 1) conv, stride 2: 4 + 2 * 2 and 4
    assert [line.split()[-3:] for line in lines[4:8]] == [
        ["3", "1", "0"],
        ["4", "2", "0"],
        ["8x4", "4", "0"],
        ["-", "-", "-"],  # no spatial dimensions
    ]
    assert report["layers"][3]["receptive_field"]["size"] == [8.0, 4.0]
    plain = torchscan.format_summary(report)
    assert "Receptive field" not in plain and "Eff. stride" not in plain
    only_field = torchscan.format_summary(report, receptive_field=True)
    assert "Receptive field" in only_field and "Eff. stride" not in only_field
    with pytest.raises(InvalidArgumentError, match="receptive_field must be True or False"):
        summary(model, (3, 32, 32), receptive_field="yes")


def test_summary_of_a_single_module_shows_its_row() -> None:
    buffer = io.StringIO()
    summary(nn.Conv2d(3, 8, 3), (3, 32, 32), file=buffer)
    lines = buffer.getvalue().splitlines()
    assert lines[4].split() == [
        *("conv2d", "(Conv2d)", "[1,", "8,", "30,", "30]"),
        *("224", "224", "388,800", "194,400"),
    ]
    assert lines[5].startswith("---")


def test_summary_max_depth_hides_deeper_layers() -> None:
    deep, shallow = io.StringIO(), io.StringIO()
    summary(ResNet18(), (3, 32, 32), mode="structure", file=deep)
    summary(ResNet18(), (3, 32, 32), max_depth=1, mode="structure", file=shallow)
    assert "layer1 (Sequential)" in shallow.getvalue()
    assert "conv1 (Conv2d)" in shallow.getvalue()
    assert "0 (BasicBlock)" not in shallow.getvalue()
    assert "0 (BasicBlock)" in deep.getvalue()
    with pytest.raises(InvalidArgumentError, match="max_depth"):
        summary(ResNet18(), (3, 32, 32), max_depth=-1, mode="structure")


def test_strict_does_not_raise_in_structure_mode() -> None:
    crawl_module(TinyCNN(), (3, 8, 8), mode="structure", strict=True)


def test_incomplete_analysis_error_carries_the_report() -> None:
    report = crawl_module(TinyCNN(), (3, 8, 8), mode="structure")
    error = IncompleteAnalysisError(report, [("module_flops", "partial")])
    assert error.report is report
    assert "module_flops (partial)" in str(error)


# The totals of torchscan 0.2, under its names, as its callers read them.
TOTALS_OF_0_2 = {
    "parameters": "count",
    "trainable_parameters": "count",
    "frozen_parameters": "count",
    "parameter_bytes": "B",
    "buffer_elements": "count",
    "buffer_bytes": "B",
    "module_flops": "FLOPs",
    "operator_flops": "FLOPs",
    "macs": "MACs",
    "dmas": "DMAs",
}


def test_totals_keep_the_names_and_layout_that_torchscan_0_2_callers_read() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    model[1].weight.requires_grad_(False)
    report = crawl_module(model, (3, 8, 8))
    totals = report["totals"]
    assert {name: totals[name]["unit"] for name in TOTALS_OF_0_2} == TOTALS_OF_0_2
    values = {name: totals[name]["value"] for name in TOTALS_OF_0_2}
    assert all(totals[name]["status"] == "complete" for name in TOTALS_OF_0_2)
    assert values["parameters"] == 112 + 8
    assert values["trainable_parameters"] == 112 + 4
    assert values["frozen_parameters"] == 4
    assert values["parameter_bytes"] == 120 * 4
    assert values["buffer_elements"] == 4 + 4 + 1
    assert values["buffer_bytes"] == 8 * 4 + 8
    # conv 4x6x6 outputs of 27 MACs; batch norm and ReLU make no MACs
    assert values["macs"] == 4 * 36 * 27
    assert values["operator_flops"] == 2 * 4 * 36 * 27
    assert totals["operator_flops"] == report["operator_flops"]["total"]
    assert totals["shared_tensors"] == 0
    # every total but the shared-tensor count is a metric, as torchscan 0.2's
    assert [name for name, value in totals.items() if not isinstance(value, dict)] == [
        "shared_tensors"
    ]


def test_full_mode_of_resnet18_matches_the_oracles() -> None:
    report = crawl_module(ResNet18(), (3, 224, 224), strict=True)
    assert torchscan.validate_report(report) == "analysis"
    totals = report["totals"]
    assert totals["parameters"]["value"] == 11_689_512
    assert totals["macs"]["value"] == 1_814_073_344
    assert totals["operator_flops"] == report["operator_flops"]["total"]
    assert report["operator_flops"]["total"] == {
        **report["operator_flops"]["total"],
        "status": "complete",
        "value": 3_628_146_688.0,
    }
    root = report["layers"][0]
    assert root["metrics"]["macs"]["value"] == totals["macs"]["value"]
    conv1 = next(layer for layer in report["layers"] if layer["path"] == "conv1")
    assert conv1["receptive_field"]["size"] == [7.0, 7.0]
    assert conv1["receptive_field"]["stride"] == [2.0, 2.0]
    pool = next(layer for layer in report["layers"] if layer["path"] == "avgpool")
    # The residual additions are carried through, so the chain reaches the global pool.
    assert pool["receptive_field"]["status"] == "complete"
    layer4 = next(layer for layer in report["layers"] if layer["path"] == "layer4")
    assert layer4["receptive_field"]["stride"] == [32.0, 32.0]
    assert layer4["receptive_field"]["size"] == [435.0, 435.0]
    # The global pool is a 7x7 window with stride 7 on the 7x7 map.
    assert pool["receptive_field"]["stride"] == [224.0, 224.0]
    fc = next(layer for layer in report["layers"] if layer["path"] == "fc")
    assert fc["receptive_field"]["status"] == "unavailable"


def test_conv_module_estimates_match_the_oracle() -> None:
    report = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3)), (3, 32, 32))
    conv = report["layers"][1]
    assert (
        conv["metrics"]["module_flops"]["value"],
        conv["metrics"]["macs"]["value"],
        conv["metrics"]["dmas"]["value"],
    ) == (
        388_800,
        194_400,
        201_824,
    )
    assert report["operator_flops"]["total"]["value"] == 388_800
    assert report["totals"]["module_flops"]["value"] == 388_800


def test_module_without_formula_is_partial_never_zero() -> None:
    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gamma = nn.Parameter(torch.ones(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.gamma

    model = nn.Sequential(nn.Linear(8, 8), Scale())
    report = crawl_module(model, (8,))
    assert torchscan.validate_report(report) == "analysis"
    scale = report["layers"][2]
    assert scale["metrics"]["module_flops"]["status"] == "partial"
    assert "no formula for Scale" in scale["metrics"]["module_flops"]["reason"]
    totals = report["totals"]
    assert totals["module_flops"]["status"] == "partial"
    assert totals["module_flops"]["known_value"] == 8 * (2 * 8 - 1) + 8
    diagnostics = [d for d in report["diagnostics"] if d["code"] == "module_without_formula"]
    assert [d["path"] for d in diagnostics] == ["1"]
    # Operator FLOPs are another view: the elementwise multiply is excluded by convention.
    assert report["operator_flops"]["total"]["status"] == "complete"
    with pytest.raises(IncompleteAnalysisError) as caught:
        crawl_module(model, (8,), strict=True)
    assert ("module_flops", "partial") in caught.value.metrics
    assert caught.value.report["totals"]["module_flops"]["status"] == "partial"


def test_container_adds_the_operators_it_runs_itself() -> None:
    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(4, 4, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q = self.q(x)
            return torch.softmax(q @ x.transpose(-1, -2), dim=-1) @ x

    report = crawl_module(Attention(), (5, 4))
    root = report["layers"][0]
    q = report["layers"][1]
    own = 2 * (5 * 4 * 5) * 2  # two (5x4)@(4x5)-sized matrix products, 2 FLOPs per MAC
    assert root["metrics"]["module_flops"]["value"] == q["metrics"]["module_flops"]["value"] + own
    assert root["metrics"]["macs"]["value"] == q["metrics"]["macs"]["value"] + own / 2
    assert report["operator_flops"]["total"]["value"] == 2 * 5 * 4 * 4 + own


def test_uncounted_custom_operator_makes_operator_flops_partial() -> None:
    @torch.library.custom_op("torchscan_test::crawl_twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    class Custom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return twice(x)

    model = nn.Sequential(nn.Linear(4, 4), Custom())
    report = crawl_module(model, (4,))
    assert torchscan.validate_report(report) == "analysis"
    total = report["operator_flops"]["total"]
    assert total["status"] == "partial"
    assert total["known_value"] == 2 * 4 * 4
    uncounted = [op["operator"] for op in report["operator_flops"]["uncounted"]]
    assert uncounted == ["torchscan_test::crawl_twice"]
    custom = report["layers"][2]
    assert custom["metrics"]["module_flops"]["status"] == "partial"
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(model, (4,), strict=True)


def test_full_mode_restores_state_and_removes_the_dispatch_mode() -> None:
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    model = ResNet18().train()
    crawl_module(model, (3, 32, 32))
    assert model.training and all(m.training for m in model.modules())
    assert _get_current_dispatch_mode() is None
    assert torch.is_grad_enabled()
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


def test_structure_mode_is_faster_than_full_mode() -> None:
    import time

    model = ResNet18()
    # A small input, so that the analysis's own work (what structure mode leaves out) weighs.
    x = torch.rand(1, 3, 32, 32)
    best = {"structure": float("inf"), "full": float("inf")}
    for mode in best:
        crawl_module(model, args=(x,), mode=mode)
    # Interleaved rounds and the fastest of each: the machine's speed drifts between calls.
    for _ in range(9):
        for mode in best:
            start = time.perf_counter()
            crawl_module(model, args=(x,), mode=mode)
            best[mode] = min(best[mode], time.perf_counter() - start)
    assert best["structure"] < best["full"]


def test_lstm_and_transformer_are_complete() -> None:
    lstm = crawl_module(nn.LSTM(10, 20, batch_first=True), (7, 10), strict=True)
    assert lstm["operator_flops"]["total"]["value"] == 33_600
    assert lstm["layers"][0]["metrics"]["macs"]["value"] == 16_800
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True), num_layers=2
    )
    report = crawl_module(encoder, (10, 64), strict=True)
    assert report["operator_flops"]["total"]["status"] == "complete"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a CUDA device")
def test_cuda_without_a_device_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="no CUDA device is available"):
        crawl_module(TinyCNN(), (3, 8, 8), device="cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_analysis_records_the_device() -> None:
    model = TinyCNN().cuda()
    report = crawl_module(model, (3, 16, 16), device="cuda")
    assert report["context"]["device"].startswith("cuda")
    assert report["inputs"]["args"][0]["device"].startswith("cuda")
    assert report["operator_flops"]["total"]["status"] == "complete"


def test_keyboard_interrupt_restores_state() -> None:
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    class Interrupted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.linear(x)
            raise KeyboardInterrupt

    model = Interrupted().train()
    with pytest.raises(KeyboardInterrupt):
        crawl_module(model, (2,))
    assert model.training and model.linear.training
    assert torch.is_grad_enabled()
    assert _get_current_dispatch_mode() is None
    assert not model.linear._forward_hooks and not model.linear._forward_pre_hooks


def test_inference_mode_caller_and_inputs_requiring_grad() -> None:
    model = nn.Sequential(nn.Linear(16, 4), nn.Conv1d(1, 2, 3))
    x = torch.randn(1, 1, 16, requires_grad=True)
    report = crawl_module(model, args=(x,))
    assert report["operator_flops"]["total"]["status"] == "complete"
    with torch.inference_mode():
        inside = crawl_module(model, args=(torch.randn(1, 1, 16),))
    assert inside["operator_flops"]["total"] == report["operator_flops"]["total"]


def _operator_view(report: dict[str, object]) -> dict[str, object]:
    flops = report["operator_flops"]
    assert isinstance(flops, dict)
    view = {key: flops[key] for key in ("counted", "excluded", "uncounted")}
    # The scope names what was measured (one forward, one call); everything else must agree.
    view["total"] = {key: value for key, value in flops["total"].items() if key != "scope"}
    return view


def _lstm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return nn.LSTM(8, 16, 2), (torch.randn(5, 3, 8),)


def _encoder() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(2, 7, 32),)


def _resnet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return ResNet18(), (torch.randn(1, 3, 32, 32),)


@pytest.mark.parametrize("make", [_resnet, _lstm, _encoder], ids=["resnet18", "lstm", "encoder"])
def test_operator_view_is_what_the_forward_runs(make: object) -> None:
    # The analysis's own work (formulas, metadata) must never appear among the model's operators:
    # the operator view equals measure_flops of the same evaluation forward, without hooks.
    assert callable(make)
    model, args = make()
    model.eval()
    report = crawl_module(model, args=args)
    with torch.no_grad():
        expected = torchscan.measure_flops(lambda: model(*args))
    assert _operator_view(dict(report)) == _operator_view(dict(expected))


class _MixedCalls(nn.Module):
    """Operator calls of every kind: lean ones, keyword tensors, tensor lists, tuple results."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(6, 6)
        self.norm = nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.linear(x))  # addmm (counted), native_batch_norm (a tuple result)
        z = torch.empty_like(y)
        torch.mul(y, 2.0, out=z)  # a tensor passed by keyword
        w = torch.cat([y, z], dim=1)  # a list of tensors
        parts = torch.split(w, 4, dim=1)  # a list result
        values, _ = torch.max(w, dim=1)  # a named-tuple result
        return torch.mm(parts[0], parts[0].t()).sum() + values.sum() + torch.relu(w).mean()


def test_operator_view_is_the_same_whichever_path_logged_a_call() -> None:
    # The compiled path logs lean calls, the general path everything else; repeated calls of one
    # operator go once through each (the first call resolves it). Counts, FLOPs and per-module
    # totals must be those of measure_flops, on the first analysis in a process and after.
    model = _MixedCalls().eval()
    args = (torch.randn(3, 6),)
    with torch.no_grad():
        expected = torchscan.measure_flops(lambda: model(*args), modules=model)
    for _ in range(2):
        report = crawl_module(model, args=args)
        assert _operator_view(dict(report)) == _operator_view(dict(expected))
        assert report["operator_flops"]["modules"] == expected["operator_flops"]["modules"]
    calls = {op["operator"]: op["calls"] for op in report["operator_flops"]["counted"]}
    assert calls["aten::addmm"] == 1 and calls["aten::mm"] == 1


def test_counters_with_formulas_of_their_own_do_not_change_the_shared_resolution() -> None:
    model = nn.Linear(4, 4, bias=False).eval()
    x = torch.randn(2, 4)
    plain = crawl_module(model, args=(x,))
    with torch.no_grad():
        custom = torchscan.measure_flops(lambda: model(x), formulas={"aten::mm": lambda *a, **k: 7})
    assert custom["operator_flops"]["total"]["value"] == 7
    again = crawl_module(model, args=(x,))
    assert again["operator_flops"] == plain["operator_flops"]
    assert again["operator_flops"]["total"]["value"] == 2 * 2 * 4 * 4


def test_the_analysis_mode_leaves_nothing_behind() -> None:
    import gc
    import weakref

    from torchscan.crawl import call_recorder, dispatch_recorder

    counter = dispatch_recorder.crawl_counter(call_recorder.ModuleCallRecorder([], []))
    with counter:
        mode = counter._mode
        assert "__torch_dispatch__" in vars(mode)  # the compiled path, set on the instance
        torch.relu(torch.randn(3))
    assert "__torch_dispatch__" not in vars(mode)
    ref = weakref.ref(mode)
    gc.disable()
    try:
        del mode, counter
        assert ref() is None  # freed by reference counting: no cycle through the recorder
    finally:
        gc.enable()


def test_a_recorder_left_wrapped_is_collected_with_its_model() -> None:
    import gc
    import weakref

    from torchscan.crawl import call_recorder

    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    recorder = call_recorder.ModuleCallRecorder(call_recorder.all_named_modules(model), [])
    recorder.__enter__()  # never closed: each module's forward refers back to the module
    assert type(model[0].__dict__["forward"]).__name__ == "ModuleForward"
    model(torch.ones(1, 2))
    assert recorder.core.count == 3  # the Sequential and its two children, recorded
    ref = weakref.ref(model)
    del model, recorder
    gc.collect()
    assert ref() is None  # the cycle goes through compiled objects, which the collector sees


@pytest.mark.parametrize("make", [_resnet, _lstm], ids=["resnet18", "lstm"])
def test_operator_flops_by_module_match_a_counter_tracking_the_modules(make: object) -> None:
    assert callable(make)
    model, args = make()
    model.eval()
    report = crawl_module(model, args=args)
    with torch.no_grad():
        expected = torchscan.measure_flops(lambda: model(*args), modules=model)
    assert report["operator_flops"]["modules"] == expected["operator_flops"]["modules"]


def test_by_module_counts_a_recursive_call_once_in_forward_order() -> None:
    class Recursive(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, depth: int = 2) -> torch.Tensor:
            x = self.linear(x)
            return self(x, depth - 1) if depth > 0 else x

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = nn.ReLU()
            self.body = Recursive()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(self.first(x))

    model = Outer()
    args = (torch.randn(2, 4),)
    report = crawl_module(model, args=args)
    with torch.no_grad():
        expected = torchscan.measure_flops(lambda: model(*args), modules=model)
    by_module = report["operator_flops"]["modules"]
    assert by_module == expected["operator_flops"]["modules"]
    assert [entry["path"] for entry in by_module] == ["", "first", "body", "body.linear"]
    assert by_module[2]["flops"]["value"] == 3 * 2 * 2 * 4 * 4


def test_transformer_fast_path_runs_under_the_analysis() -> None:
    # The analysis's hooks do not switch PyTorch's fused inference path off: what is counted is
    # what runs when the model is used without hooks.
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    report = crawl_module(model, args=(torch.randn(2, 7, 32),))
    counted = {entry["operator"] for entry in report["operator_flops"]["counted"]}
    assert "aten::_transformer_encoder_layer_fwd" in counted
    assert report["operator_flops"]["total"]["status"] == "complete"


class _ThroughUntrackedOperators(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spectrum = torch.fft.fft2(self.conv(x))
        # The convolution's output is gone; the next tensor made usually takes its address, and
        # must not inherit its receptive field (the Fourier transform mixes every position).
        return self.pool(spectrum.abs())


def test_receptive_field_does_not_leak_to_a_tensor_at_a_reused_address() -> None:
    report = crawl_module(_ThroughUntrackedOperators(), (3, 12, 12))
    fields = {layer["path"]: layer["receptive_field"] for layer in report["layers"]}
    assert fields["conv"]["status"] == "complete"
    assert fields["conv"]["size"] == [3.0, 3.0]
    assert fields["pool"]["status"] == "unavailable"
    assert "does not keep spatial positions aligned" in fields["pool"]["reason"]


def _assemble_by_hand(
    model: nn.Module, x: torch.Tensor, calls: list[object]
) -> tuple[list[dict[str, object]], object]:
    """Records ``model``'s calls as ``calls`` says, then assembles them as an analysis does.

    Each item of ``calls`` is ``("enter", position)``, ``("leave", module, inputs, output)`` or
    an operator record, appended to the log in that order.
    """
    from torchscan import _core
    from torchscan.crawl import assembly, call_recorder

    named = call_recorder.all_named_modules(model)
    log: list[object] = []
    recorder = call_recorder.ModuleCallRecorder(named, log)
    for item in calls:
        if isinstance(item, _core.OperatorRecord):
            log.append(item)
        elif item[0] == "enter":
            recorder.core.enter(item[1])
        else:
            _core.CallRecorder.leave(recorder.core, item[1], item[2], item[3])
    walked = _core.walk_storage(named)
    result = assembly._assembler().assemble(
        recorder.core, walked.own, log=log, seeds=[(id(x), x.dim())]
    )
    return result.layers, result


def test_field_replay_forgets_a_state_when_a_new_tensor_takes_its_address() -> None:
    from torchscan import _core
    from torchscan.opflops.mode import EXCLUDED, Entry

    conv, pool = nn.Conv2d(3, 4, 3), nn.MaxPool2d(2)
    model = nn.Sequential(conv, pool)
    x = torch.randn(1, 3, 12, 12)
    y = conv(x)
    z = pool(y)
    # What the log holds for an operator that made a new tensor at the address ``y`` had (the
    # frozen output of the convolution keeps that address).
    empty = Entry(EXCLUDED, "aten::empty", torch.ops.aten.empty.memory_format)
    born = _core.OperatorRecord(
        entry=empty,
        call=0,
        outcome=EXCLUDED,
        flops=0,
        args=None,
        kwargs=None,
        out=None,
        inputs=[],
        first_inputs=0,
        outputs=[(id(y), y.dim())],
    )
    for births in ([], [born]):
        layers, _ = _assemble_by_hand(
            model,
            x,
            [
                ("enter", 0),
                ("enter", 1),
                ("leave", conv, (x,), y),
                *births,
                ("enter", 2),
                ("leave", pool, (y,), z),
                ("leave", model, (x,), z),
            ],
        )
        fields = {layer["path"]: layer["receptive_field"] for layer in layers}
        assert fields["0"]["size"] == [3.0, 3.0]
        expected = "complete" if not births else "unavailable"
        assert fields["1"]["status"] == expected


def test_operator_records_name_their_fields_and_check_them() -> None:
    from torchscan import _core
    from torchscan.opflops.mode import COUNTED, Entry

    entry = Entry(COUNTED, "aten::mm", torch.ops.aten.mm.default)
    record = _core.OperatorRecord(
        entry=entry,
        call=None,
        outcome=COUNTED,
        flops=12,
        args=[torch.Size([2, 3]), torch.Size([3, 2])],
        kwargs=None,
        out=torch.Size([2, 2]),
        inputs=[1, 2],
        first_inputs=1,
        outputs=[(3, 2)],
    )
    assert (record.call, record.flops, record.inputs, record.outputs) == (
        None,
        12,
        [1, 2],
        [(3, 2)],
    )
    assert repr(record) == "OperatorRecord(aten::mm, call=None, outcome=0, flops=12)"
    with pytest.raises(ValueError, match="first_inputs is 3 but the record has 2 tensor inputs"):
        _core.OperatorRecord(
            entry=entry,
            call=None,
            outcome=COUNTED,
            flops=0,
            args=None,
            kwargs=None,
            out=None,
            inputs=[1, 2],
            first_inputs=3,
            outputs=[],
        )
    with pytest.raises(TypeError):
        _core.OperatorRecord(entry, None, COUNTED, 0, None, None, None, [], 0, [])  # type: ignore[misc]


def test_forward_methods_are_restored_and_keep_their_signature() -> None:
    import inspect

    seen: list[list[str]] = []

    class Inspecting(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            # Code that looks at a module's forward while it runs sees the real signature.
            seen.append(list(inspect.signature(self.linear.forward).parameters))
            seen.append(list(inspect.signature(self.forward).parameters))
            return self.linear(x) * scale

    model = Inspecting()
    patched = nn.ReLU()
    calls: list[int] = []

    def patched_forward(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return x

    patched.forward = patched_forward  # type: ignore[method-assign]
    outer = nn.Sequential(model, patched)
    crawl_module(outer, args=(torch.zeros(1, 3),))
    assert seen == [["input"], ["x", "scale"]]
    assert calls == [1]
    assert "forward" not in model.__dict__ and "forward" not in model.linear.__dict__
    assert patched.forward is patched_forward
    failing = nn.Sequential(nn.ReLU(), _Failing())
    with pytest.raises(ValueError, match="boom"):
        crawl_module(failing, args=(torch.zeros(1, 2),))
    assert all("forward" not in module.__dict__ for module in failing.modules())


class _Failing(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("boom")


def test_user_hooks_still_run_and_their_changes_are_seen() -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    fired: list[str] = []
    model[0].register_forward_pre_hook(lambda module, args: fired.append("pre"))
    model[0].register_forward_hook(lambda module, args, out: fired.append("post"))
    # A pre-hook that changes the input: the call records what forward received.
    model[1].register_forward_pre_hook(lambda module, args: (args[0][:, :2],))
    report = crawl_module(model, args=(torch.zeros(4, 3),))
    assert fired == ["pre", "post"]
    layers = {layer["path"]: layer for layer in report["layers"]}
    assert layers["1"]["input"]["args"][0]["shape"] == [4, 2]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_scripted_submodules_are_recorded_through_hooks() -> None:
    scripted = torch.jit.script(nn.Sequential(nn.Linear(3, 3), nn.ReLU()))
    model = nn.Sequential(nn.Linear(3, 3), scripted)
    before = _global_hooks()
    report = crawl_module(model, args=(torch.zeros(2, 3),))
    assert _global_hooks() == before
    paths = [layer["path"] for layer in report["layers"]]
    assert paths[:3] == ["", "0", "1"]
    assert report["layers"][2]["output"]["shape"] == [2, 3]
    assert report["operator_flops"]["total"]["known_value"] >= 2 * 2 * 3 * 3


class _AttentionResidual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(8, 8, 3, padding=1)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)  # (batch, channels, length): a field of 3
        tokens = x.transpose(1, 2)
        mixed, _ = self.attention(tokens, tokens, tokens)
        return x + mixed.transpose(1, 2)  # every position now sees every other one


def test_a_residual_around_attention_has_no_receptive_field() -> None:
    report = crawl_module(_AttentionResidual(), (8, 10))
    fields = {layer["path"]: layer["receptive_field"] for layer in report["layers"]}
    assert fields["conv"]["status"] == "complete" and fields["conv"]["size"] == [3.0]
    assert fields["attention"]["status"] == "unavailable"
    # The sum of the convolution's output and the attention's is not the convolution's field.
    assert fields[""]["status"] == "unavailable"
    assert "does not keep spatial positions" in fields[""]["reason"]


def test_compiled_submodules_are_recorded_without_warnings() -> None:
    import warnings

    inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    model = nn.Sequential(torch.compile(inner, backend="eager"), nn.Linear(8, 2))
    before = _global_hooks()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = crawl_module(model, args=(torch.randn(4, 8),))
    assert _global_hooks() == before
    paths = [layer["path"] for layer in report["layers"]]
    assert paths[0] == "" and paths[-1] == "1" and "0._orig_mod.0" in paths
    assert report["operator_flops"]["total"]["value"] == 2 * 4 * 8 * 8 + 2 * 4 * 8 * 2


def test_garbage_collection_is_paused_during_the_analysis_and_restored() -> None:
    import gc

    seen: list[bool] = []

    class Probe(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(gc.isenabled())
            return x + 1

    x = torch.randn(1, 4)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    crawl_module(Probe(), args=(x,))
    summary(Probe(), args=(x,))
    assert seen == [False, False]
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    # A collector the caller turned off stays off.
    gc.disable()
    try:
        crawl_module(Probe(), args=(x,))
        assert not gc.isenabled()
    finally:
        gc.enable()

    class Failing(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        crawl_module(Failing(), args=(x,))
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_objects_the_caller_froze_are_never_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    # gc.get_freeze_count walks every frozen object: a process that froze its start-up objects
    # (a pre-forking server) paid tens of milliseconds per analysis for it.
    import gc

    counted: list[int] = []
    real = gc.get_freeze_count

    def counting() -> int:
        counted.append(1)
        return real()

    monkeypatch.setattr(gc, "get_freeze_count", counting)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    gc.freeze()
    try:
        crawl_module(model, args=(torch.randn(1, 4),))
    finally:
        gc.unfreeze()
    assert counted == []
    assert gc.isenabled()


def test_the_compiled_path_stays_on_through_decompositions() -> None:
    # Under inference_mode composite operators (linear) reach the mode, which re-enters itself to
    # decompose them; the compiled path must stay installed until the analysis's own exit.
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    seen: list[bool] = []

    class Probe(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            mode = _get_current_dispatch_mode()
            seen.append(mode is not None and "__torch_dispatch__" in vars(mode))
            return x

    model = nn.Sequential(nn.Linear(4, 4), Probe(), nn.Linear(4, 4), Probe())
    with torch.inference_mode():
        x = torch.randn(2, 4)
        report = crawl_module(model, args=(x,))
        assert seen == [True, True]
        expected = torchscan.measure_flops(lambda: model(x))
    assert _operator_view(dict(report)) == _operator_view(dict(expected))


def test_the_module_walk_lists_what_pytorch_lists() -> None:
    from torchscan.crawl.call_recorder import all_named_modules

    shared = nn.Linear(2, 2)

    class OwnWalk(nn.Module):
        """Lists its first child only (a class may decide what lies under it)."""

        def __init__(self) -> None:
            super().__init__()
            self.kept = nn.Sequential(nn.ReLU(), nn.Tanh())
            self.hidden = nn.ReLU()

        def named_modules(self, memo=None, prefix="", remove_duplicate=True):  # type: ignore[no-untyped-def]
            yield prefix, self
            yield from self.kept.named_modules(
                memo, f"{prefix}.kept" if prefix else "kept", remove_duplicate
            )

    model = nn.Sequential(
        shared,
        nn.ModuleDict({"a": shared, "b": nn.ModuleList([nn.ReLU(), shared])}),
        OwnWalk(),
        nn.Sequential(nn.Sequential(nn.Identity())),
    )
    model.register_module("missing", None)
    for root in (model, ResNet18(), OwnWalk(), nn.ReLU()):
        expected = list(root.named_modules(remove_duplicate=False))
        found = all_named_modules(root)
        assert [name for name, _ in found] == [name for name, _ in expected]
        assert all(a is b for (_, a), (_, b) in zip(found, expected, strict=True))
    names = [name for name, _ in all_named_modules(model)]
    assert names.count("0") == 1 and "1.a" in names and "1.b.1" in names
    assert "2.hidden" not in names and "2.kept.1" in names and "missing" not in names


def test_operators_run_through_the_dispatcher_only_with_tensors_where_tensors_go() -> None:
    from torchscan.opflops.mode import _boxed_call

    handle, positions = _boxed_call(torch.ops.aten.mul.Tensor)
    assert handle is torch.ops.aten.mul.Tensor._handle and positions == (0, 1)
    assert _boxed_call(torch.ops.aten.convolution.default)[1] == (0, 1, 2)
    # A tensor only a keyword can give (``out``): always through the overload.
    assert _boxed_call(torch.ops.aten.add.out) == (None, ())
    assert _boxed_call(lambda: None) == (None, ())

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(3))
            self.matrix = nn.Parameter(torch.ones(3, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # A number for a tensor (mul.Tensor's ``other``), parameters and a plain tensor.
            return torch.mm((x * 2.0 + self.weight).relu(), self.matrix) * x

    x = torch.randn(2, 3)
    model = Scaled()
    report = crawl_module(model, args=(x,))
    with torch.no_grad():
        expected = torchscan.measure_flops(lambda: model(x))["operator_flops"]
    flops = report["operator_flops"]
    assert flops["total"]["status"] == "complete"
    assert flops["total"]["value"] == expected["total"]["value"] == 2 * 2 * 3 * 3
    for section in ("counted", "excluded", "uncounted"):
        assert [(r["operator"], r["calls"]) for r in flops[section]] == [  # type: ignore[literal-required]
            (r["operator"], r["calls"])
            for r in expected[section]  # type: ignore[literal-required]
        ]
    assert ("aten::mul", 2) in [(r["operator"], r["calls"]) for r in flops["excluded"]]


def test_direct_bindings_reach_their_own_overload_and_skip_function_modes() -> None:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from torchscan.opflops.mode import _boxed_call, _direct_bindings

    aten = torch.ops.aten
    x4, w, b = torch.randn(1, 2, 4, 4), torch.randn(3, 2, 3, 3), torch.randn(3)
    c2, m = torch.randn(2), torch.randn(2, 3)
    # Each overload's arguments, as the dispatcher hands them to a mode.
    calls: dict[Any, tuple[tuple[Any, ...], dict[str, Any]]] = {
        aten.convolution.default: ((x4, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}),
        aten.native_batch_norm.default: ((x4, c2, None, c2, c2.abs() + 1, False, 0.1, 1e-5), {}),
        aten.native_layer_norm.default: ((m, [3], None, torch.ones(3), 1e-5), {}),
        aten.relu.default: ((m,), {}),
        aten.relu_.default: ((m.clone(),), {}),
        aten.sigmoid.default: ((m,), {}),
        aten.tanh.default: ((m,), {}),
        aten.gelu.default: ((m,), {"approximate": "tanh"}),
        aten.add.Tensor: ((m, torch.tensor(2.0)), {"alpha": 3}),
        aten.add_.Tensor: ((m.clone(), m), {}),
        aten.mul.Tensor: ((m, m), {}),
        aten.addmm.default: ((b, m, torch.randn(3, 3)), {"beta": 2}),
        aten.mm.default: ((m, m.t()), {}),
        aten.bmm.default: ((m[None], m.t()[None]), {}),
        aten.max_pool2d_with_indices.default: ((x4, [3, 3], [2, 2], [1, 1], [1, 1], False), {}),
        aten.mean.dim: ((x4, [-1, -2], True), {}),
        aten._softmax.default: ((m, 1, False), {}),
        aten.view.default: ((m, [3, 2]), {}),
        aten.t.default: ((m,), {}),
    }
    assert set(calls) == set(_direct_bindings())

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.funcs: list[Any] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    for overload, binding in _direct_bindings().items():
        assert _boxed_call(overload)[0] is not None, overload
        args, kwargs = calls[overload]
        with Seen() as seen:
            got = binding(*args, **kwargs)
        assert seen.funcs == [overload], overload
        expected = overload(*args, **kwargs)
        for a, e in zip(
            got if isinstance(got, tuple) else (got,),
            expected if isinstance(expected, tuple) else (expected,),
            strict=True,
        ):
            assert torch.equal(a, e), overload

    # A forward that runs an operator below the function API while a ``__torch_function__`` mode
    # is active: the analysis must not hand that mode a call the model never made.
    class Functions(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.names.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    class Below(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return aten.relu.default(aten.mm.default(x, x))

    x = torch.randn(3, 3)
    with Functions() as functions:
        report = crawl_module(Below(), args=(x,))
    assert "relu" not in functions.names and "mm" not in functions.names
    assert report["operator_flops"]["total"]["value"] == 2 * 3 * 3 * 3


def test_operator_dmas_count_every_shape_as_the_python_reference() -> None:
    # A counted operator moves the elements of every shape among its arguments, keyword
    # arguments and result, through lists, tuples and dicts; sizes and strides are plain ints.
    # The compiled count gives way to Python's exact integers beyond 128 bits.
    from torchscan import _core
    from torchscan.crawl import dispatch_recorder
    from torchscan.opflops.mode import COUNTED, Entry

    class Plain(nn.Module):  # no module formula: its estimate is the operators it runs
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    size = torch.Size
    entry = Entry(COUNTED, "aten::add", torch.ops.aten.add.Tensor)
    cases = {
        "nested": (
            [size([2, 3]), 4, [size([5]), (size([1, 7]), "x")], (3, 4), [5, 6]],
            {"k": size([3, 3]), "a": [size([2, 2, 2])], "b": None},
            (size([0, 9]),),
        ),
        "huge": ([size([2**64, 2**64, 2])], None, size([1])),
    }
    for name, (args, kwargs, out) in cases.items():
        model, x = Plain(), torch.randn(1, 2)
        record = _core.OperatorRecord(
            entry=entry,
            call=0,
            outcome=COUNTED,
            flops=0,
            args=args,
            kwargs=kwargs,
            out=out,
            inputs=[],
            first_inputs=0,
            outputs=[],
        )
        layers, _ = _assemble_by_hand(model, x, [("enter", 0), record, ("leave", model, (x,), x)])
        expected = dispatch_recorder.shape_elements([args, (out,), kwargs or ()])
        assert expected == {"nested": 6 + 5 + 7 + 9 + 8 + 0, "huge": 2**129 + 1}[name]
        dmas = layers[0]["metrics"]["dmas"]
        # Partial (a leaf without a formula), known: what its own operators moved.
        assert dmas["status"] == "partial"
        assert dmas["known_value"] == (expected if expected < 2**53 else float(expected))


def test_a_failing_shape_formula_leaves_its_operator_uncounted_and_says_why() -> None:
    # Shape formulas are applied once the forward is over; one that raises counts its operator
    # as uncounted, names the error, and every module path that ran it becomes partial.
    from torch.utils import flop_counter

    def broken(*args: object, **kwargs: object) -> int:
        raise ZeroDivisionError("nope")

    registry = flop_counter.flop_registry
    saved = registry[torch.ops.aten.addmm]
    registry[torch.ops.aten.addmm] = flop_counter.shape_wrapper(broken)
    try:
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
        report = crawl_module(model, args=(torch.randn(3, 4),))
    finally:
        registry[torch.ops.aten.addmm] = saved
    section = report["operator_flops"]
    assert section["uncounted"] == [{"operator": "aten::addmm", "calls": 2}]
    assert section["total"]["status"] == "partial" and section["total"]["known_value"] == 0.0
    messages = [d["message"] for d in report["diagnostics"]]
    assert any("failed on 2 calls (ZeroDivisionError: nope" in message for message in messages)
    by_module = {entry["path"]: entry["flops"] for entry in section["modules"]}
    assert by_module["0"]["status"] == by_module["2"]["status"] == "partial"
    assert by_module["1"]["status"] == "complete"  # the ReLU ran no addmm
    assert by_module[""]["reason"] == "uncounted operators ran inside this module: aten::addmm"
    # The module estimates come from the Linear formula, whatever the operator pass found.
    assert {
        layer["path"]: layer["metrics"]["module_flops"]["status"] for layer in report["layers"]
    } == {
        "": "complete",
        "0": "complete",
        "1": "complete",
        "2": "complete",
    }
    assert report["totals"]["operator_flops"] == section["total"]
    # Afterwards the built-in formula counts again.
    again = crawl_module(model, args=(torch.randn(3, 4),))
    assert again["operator_flops"]["total"]["value"] == 2 * 3 * 4 * 4 + 2 * 3 * 4 * 2


def test_a_call_left_open_is_assembled_as_unfinished() -> None:
    # A call whose forward never reported back (a hook that misbehaved) has no inputs or output:
    # its estimates are partial and say so, its parent's too, and it gets no receptive field.
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    x = torch.randn(1, 2)
    layers, result = _assemble_by_hand(
        model,
        x,
        [
            ("enter", 0),  # the Sequential
            ("enter", 1),  # its Linear, never closed
            ("leave", model, (x,), model(x)),
        ],
    )
    totals, by_module = result.module_totals, result.by_module
    diagnostics, tallies = result.diagnostics, result.tallies
    root, linear = layers
    assert (root["path"], linear["path"]) == ("", "0")
    assert linear["input"] == {"args": [], "kwargs": {}} and linear["output"] is None
    assert linear["metrics"]["module_flops"]["status"] == "partial"
    assert linear["metrics"]["module_flops"]["reason"] == "Linear did not finish its forward"
    assert linear["receptive_field"]["reason"] == "not computed for this call"
    assert root["metrics"]["module_flops"]["reason"] == "a child module's estimate is incomplete"
    assert root["input"]["args"][0]["shape"] == [1, 2] and root["output"]["shape"] == [1, 2]
    assert linear["parameters"]["trainable"] == 6 and root["parameters"]["trainable"] == 0
    assert totals is not None and totals["module_flops"]["status"] == "partial"
    assert (by_module, diagnostics, tallies) == ([], [], [])


def _conv_linear(batch_norm: bool) -> nn.Module:
    torch.manual_seed(0)
    norm: list[nn.Module] = [nn.BatchNorm2d(8)] if batch_norm else []
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), *norm, nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10)
    ).eval()


def test_dtypes_under_autocast_are_the_ones_the_forward_computed_in() -> None:
    x = torch.randn(2, 3, 8, 8)
    model = _conv_linear(batch_norm=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        report = crawl_module(model, args=(x,))
        structure = crawl_module(model, args=(x,), mode="structure")
        with torch.no_grad():
            flops = torchscan.measure_flops(lambda: model(x), modules=model)
    # Every module returns bfloat16, the FLOPs are bfloat16's; batch norm keeps its statistics
    # in float32, the weights and the input are float32.
    assert flops["context"]["dtypes"] == ["torch.bfloat16", "torch.float32"]
    assert report["context"]["dtypes"] == flops["context"]["dtypes"]
    assert structure["context"]["dtypes"] == flops["context"]["dtypes"]
    assert {layer["output"]["dtype"] for layer in report["layers"]} == {"torch.bfloat16"}
    assert torchscan.validate_report(report) == "analysis"
    assert report["context"]["flags"]["autocast"] == {"cpu": "torch.bfloat16"}


def test_dtypes_under_autocast_list_the_parameters_dtype_after_the_computed_one() -> None:
    x = torch.randn(2, 3, 8, 8)
    model = _conv_linear(batch_norm=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        report = crawl_module(model, args=(x,))
        with torch.no_grad():
            flops = torchscan.measure_flops(lambda: model(x), modules=model)
    # No operator returns float32: the operator counter sees bfloat16 alone; the analysis also
    # knows the float32 parameters and input, which follow the dtype computed in.
    assert flops["context"]["dtypes"] == ["torch.bfloat16"]
    assert report["context"]["dtypes"] == ["torch.bfloat16", "torch.float32"]
    # Without autocast nothing changes.
    assert crawl_module(model, args=(x,))["context"]["dtypes"] == ["torch.float32"]
    assert crawl_module(model.double(), args=(x.double(),))["context"]["dtypes"] == [
        "torch.float64"
    ]


class _ToDouble(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double()


def test_dtypes_come_largest_flop_share_first_as_measure_flops_ranks_them() -> None:
    # 128 FLOPs in float32, then 8,192 in float64: float64 first, not float32 by name.
    model = nn.Sequential(nn.Linear(8, 8), _ToDouble(), nn.Linear(8, 512).double()).eval()
    x = torch.randn(1, 8)
    report = crawl_module(model, args=(x,))
    with torch.no_grad():
        flops = torchscan.measure_flops(lambda: model(x), modules=model)
    assert flops["context"]["dtypes"] == ["torch.float64", "torch.float32"]
    assert report["context"]["dtypes"] == flops["context"]["dtypes"]
