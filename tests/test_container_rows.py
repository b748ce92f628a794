"""Container rows: the parameters under a module with children, in the report and where it is read.

A layer's own parameters are counted once across the report, so a container's own count is
usually 0; ``parameters["total"]`` gives what lies under it. The oracle here is independent of
the crawl: every parameter of ``module.parameters()`` (each tensor once), its storage positions
read through ``as_strided`` over an ``arange``, each position counted once.
"""

from __future__ import annotations

import copy
import html
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import crawl_module, format_summary, render_report, validate_report

from .models import ResNet18

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/reports/analysis_nested_containers.json"


def under(module: nn.Module) -> dict[str, int]:
    """The parameters under ``module``, every submodule's whether called or not, each storage
    element once at the first parameter (in ``parameters()`` order) that covers it."""
    covered: dict[int, torch.Tensor] = {}
    found = {"trainable": 0, "frozen": 0, "bytes": 0}
    for parameter in module.parameters():
        storage = parameter.untyped_storage()
        itemsize = parameter.element_size()
        mask = covered.setdefault(
            storage.data_ptr(), torch.zeros(storage.nbytes() // itemsize, dtype=torch.bool)
        )
        positions = torch.arange(mask.numel()).as_strided(
            parameter.shape, parameter.stride(), parameter.storage_offset()
        )
        distinct = torch.unique(positions)
        new = distinct[~mask[distinct]]
        mask[new] = True
        found["trainable" if parameter.requires_grad else "frozen"] += new.numel()
        found["bytes"] += new.numel() * itemsize
    return found


def check_totals(model: nn.Module, report: Any) -> None:
    """Every layer of a module with children has the oracle's total, the others none, and the
    root's is the model's totals exactly; the report is valid."""
    validate_report(report)
    modules = dict(model.named_modules())  # the first path of each module, as layers have
    containers = 0
    for layer in report["layers"]:
        module = modules[layer["path"]]
        parameters = layer["parameters"]
        if next(module.children(), None) is None:
            assert "total" not in parameters, layer["path"]
            continue
        containers += 1
        assert parameters["total"] == under(module), layer["path"]
    assert containers > 0
    root = [layer for layer in report["layers"] if layer["path"] == ""]
    totals = report["totals"]
    for layer in root:
        total = layer["parameters"]["total"]
        assert total["trainable"] == totals["trainable_parameters"]["value"]
        assert total["frozen"] == totals["frozen_parameters"]["value"]
        assert total["trainable"] + total["frozen"] == totals["parameters"]["value"]
        assert total["bytes"] == totals["parameter_bytes"]["value"]


def nested() -> nn.Sequential:
    """The issue's model, its inner convolution's bias frozen."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Sequential(nn.Conv2d(16, 16, 3), nn.ReLU()))
    model[1][0].bias.requires_grad_(False)
    return model


class TiedLM(nn.Module):
    """An embedding tied to the output projection, each in its own container."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(50, 16), nn.LayerNorm(16))
        self.decoder = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 50))
        self.decoder[2].weight = self.encoder[0].weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(tokens))


class TransposedTie(nn.Module):
    """A decoder weight that is a transposed view of the encoder's (overlapping storage)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(32, 16), nn.Tanh())
        self.decoder = nn.Sequential(nn.Linear(16, 32))
        self.decoder[0].weight = nn.Parameter(self.encoder[0].weight.data.t())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))


class Uncalled(nn.Module):
    """A container whose ``spare`` child and ``extra`` container never run."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.body.spare = nn.Linear(8, 3)
        self.extra = nn.Sequential(nn.Linear(8, 5), nn.Linear(5, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body[1](self.body[0](x))


class CalledTwice(nn.Module):
    """One block applied twice."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block(8)
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.block(self.block(x)))


class TwoPaths(nn.Module):
    """One block reachable as ``first`` and as ``stage.second``."""

    def __init__(self) -> None:
        super().__init__()
        self.first = Block(8)
        self.stage = nn.Sequential(nn.Linear(8, 8))
        self.stage.second = self.first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stage.second(self.stage[0](self.first(x)))


class Frozen(nn.Module):
    """A frozen backbone and a trainable head, the head partly frozen too."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        self.backbone.requires_grad_(False)
        self.head[1].bias.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


CASES = {
    "nested": (nested, {"input_shape": (3, 32, 32)}),
    "tied": (TiedLM, {"args": (torch.randint(0, 50, (1, 7)),)}),
    "transposed_tie": (TransposedTie, {"input_shape": (32,)}),
    "never_called": (Uncalled, {"input_shape": (8,)}),
    "called_twice": (CalledTwice, {"input_shape": (8,)}),
    "two_paths": (TwoPaths, {"input_shape": (8,)}),
    "frozen": (Frozen, {"input_shape": (3, 8, 8)}),
    "resnet18": (ResNet18, {"input_shape": (3, 32, 32), "mode": "structure"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_container_layer_has_the_storage_total_under_it(case: str) -> None:
    make, arguments = CASES[case]
    model = make()
    check_totals(model, crawl_module(model, **arguments))


def test_known_totals_by_hand() -> None:
    # Embedding 50x16 = 800 (the tied weight), LayerNorm 32, Linear(16,16) 272, bias 50.
    tied = crawl_module(TiedLM(), args=(torch.randint(0, 50, (1, 7)),))
    by_path = {layer["path"]: layer["parameters"] for layer in tied["layers"]}
    assert by_path[""]["total"] == {"trainable": 1154, "frozen": 0, "bytes": 4616}
    assert by_path["encoder"]["total"] == {"trainable": 832, "frozen": 0, "bytes": 3328}
    assert by_path["decoder"]["total"] == {"trainable": 1122, "frozen": 0, "bytes": 4488}
    # The tied weight is the decoder's own only if the encoder did not count it first.
    assert by_path["decoder.2"]["trainable"] == 50
    # Transposed tie: the 512 shared elements once, biases 16 and 32.
    transposed = crawl_module(TransposedTie(), (32,))
    by_path = {layer["path"]: layer["parameters"] for layer in transposed["layers"]}
    assert by_path[""]["total"] == {"trainable": 560, "frozen": 0, "bytes": 2240}
    assert by_path["decoder"]["total"] == {"trainable": 544, "frozen": 0, "bytes": 2176}
    # Never called: body's spare Linear(8,3) = 27 and extra's 45 + 12 count under the root.
    uncalled = crawl_module(Uncalled(), (8,))
    by_path = {layer["path"]: layer["parameters"] for layer in uncalled["layers"]}
    assert set(by_path) == {"", "body.0", "body.1"}
    assert by_path[""]["total"] == {"trainable": 72 + 27 + 57, "frozen": 0, "bytes": 624}
    assert uncalled["totals"]["parameters"]["value"] == 156


def test_a_module_called_twice_has_its_total_on_every_call() -> None:
    report = crawl_module(CalledTwice(), (8,))
    block = [layer for layer in report["layers"] if layer["path"] == "block"]
    assert [layer["call_index"] for layer in block] == [0, 1]
    assert [layer["parameters"]["total"] for layer in block] == [
        {"trainable": 72, "frozen": 0, "bytes": 288}
    ] * 2
    # Its own count is still taken once, at the first layer holding each tensor.
    fc = [
        layer["parameters"]["trainable"]
        for layer in report["layers"]
        if layer["path"] == "block.fc"
    ]
    assert fc == [72, 0]


def test_structure_mode_gives_the_same_totals() -> None:
    full = crawl_module(Frozen(), (3, 8, 8))
    structure = crawl_module(Frozen(), (3, 8, 8), mode="structure")
    assert [layer["parameters"] for layer in full["layers"]] == [
        layer["parameters"] for layer in structure["layers"]
    ]


def nested_report() -> Any:
    torch.manual_seed(0)
    return crawl_module(nested(), (3, 32, 32))


def test_the_summary_shows_totals_in_parentheses_with_a_legend() -> None:
    text = format_summary(nested_report())
    lines = text.splitlines()
    start = lines.index("Layer (type)    Output shape      Params  Trainable      FLOPs       MACs")
    assert lines[start - 1 : start + 8] == [
        "-------------------------------------------------------------------------",
        "Layer (type)    Output shape      Params  Trainable      FLOPs       MACs",
        "-------------------------------------------------------------------------",
        "0 (Conv2d)      [1, 16, 30, 30]     448        448     777,600    388,800",
        "1 (Sequential)  [1, 16, 28, 28]  (2,320)    (2,304)  3,625,216  1,806,336",
        "  0 (Conv2d)    [1, 16, 28, 28]   2,320      2,304   3,612,672  1,806,336",
        "  1 (ReLU)      [1, 16, 28, 28]       0          0      12,544          0",
        "-------------------------------------------------------------------------",
        "(n) = all parameters under the module, submodules included (each storage element once)",
    ]


def test_max_depth_keeps_the_total_of_a_container_whose_children_are_hidden() -> None:
    lines = format_summary(nested_report(), max_depth=1).splitlines()
    start = lines.index("Layer (type)    Output shape      Params  Trainable      FLOPs       MACs")
    assert lines[start + 2 : start + 6] == [
        "0 (Conv2d)      [1, 16, 30, 30]     448        448     777,600    388,800",
        "1 (Sequential)  [1, 16, 28, 28]  (2,320)    (2,304)  3,625,216  1,806,336",
        "-------------------------------------------------------------------------",
        "(n) = all parameters under the module, submodules included (each storage element once)",
    ]


def without_totals(report: Any) -> Any:
    """The report as a build from before totals were recorded wrote it."""
    old = copy.deepcopy(report)
    for layer in old["layers"]:
        layer["parameters"].pop("total", None)
    return old


def test_a_report_without_totals_validates_and_shows_own_counts_as_before() -> None:
    old = without_totals(nested_report())
    assert validate_report(old) == "analysis"
    text = format_summary(old)
    assert "(n) =" not in text
    lines = text.splitlines()
    start = lines.index("Layer (type)    Output shape     Params  Trainable      FLOPs       MACs")
    assert lines[start + 2 : start + 7] == [
        "0 (Conv2d)      [1, 16, 30, 30]     448        448    777,600    388,800",
        "1 (Sequential)  [1, 16, 28, 28]       0          0  3,625,216  1,806,336",
        "  0 (Conv2d)    [1, 16, 28, 28]   2,320      2,304  3,612,672  1,806,336",
        "  1 (ReLU)      [1, 16, 28, 28]       0          0     12,544          0",
        "------------------------------------------------------------------------",
    ]
    page = render_report(old)
    assert "Parameters in parentheses" not in page
    assert '<td class="n">0</td>' in page
    assert "parameters under this module" not in page


def test_the_page_shows_the_total_with_the_own_count_in_its_title() -> None:
    page = render_report(nested_report())
    cell = re.search(r'<td style="padding-left:1em">1</td>.*?</tr>', page)
    assert cell is not None
    title = (
        "2,320 parameters under this module (2,304 trainable, 16 frozen; 9,280 B); its own: 0 (0 B)"
    )
    assert f'<td class="n" title="{title}">(2,320)</td>' in cell.group(0)
    root_title = (
        "2,768 parameters under this module (2,752 trainable, 16 frozen; 11,072 B); "
        "its own: 0 (0 B)"
    )
    assert f'<td class="n" title="{root_title}">(2,768)</td>' in page
    found = re.search(r'<p class="small">(Share:[^<]*)</p>', page)
    assert found is not None
    note = html.unescape(found.group(1))
    assert note == (
        "Share: each layer's module FLOPs against the root's. Parameters in parentheses: all "
        "parameters under the module, submodules included (each storage element once); hover "
        "for its own count."
    )


def test_validation_refuses_a_total_that_contradicts_the_report() -> None:
    from torchscan.errors import ReportValidationError

    report = nested_report()
    wrong_root = copy.deepcopy(report)
    wrong_root["layers"][0]["parameters"]["total"]["trainable"] -= 1
    below_own = copy.deepcopy(report)
    below_own["layers"][3]["parameters"]["total"] = {"trainable": 2000, "frozen": 16, "bytes": 8064}
    for broken, path in [
        (wrong_root, "$.layers[0].parameters.total"),
        (below_own, "$.layers[3].parameters.total.trainable"),
    ]:
        with pytest.raises(ReportValidationError) as caught:
            validate_report(broken)
        assert path in [where for where, _ in caught.value.problems]


def test_the_fixture_with_totals_is_a_report_of_this_build() -> None:
    report = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert validate_report(report) == "analysis"
    totals = {layer["path"]: layer["parameters"].get("total") for layer in report["layers"]}
    assert totals[""] == {"trainable": 718, "frozen": 240, "bytes": 3832}
    assert totals["blocks"] == {"trainable": 592, "frozen": 0, "bytes": 2368}
    assert totals["blocks.0.conv"] is None


def test_frames_have_the_totals_as_columns_nan_on_leaves_and_old_reports() -> None:
    pandas = pytest.importorskip("pandas")
    del pandas
    from torchscan import to_frame

    report = nested_report()
    frame = to_frame(report, table="layers").set_index("path")
    assert frame.loc["1", "params"] == 0
    assert frame.loc["1", "params_total"] == 2320
    assert frame.loc["1", "trainable_params_total"] == 2304
    assert frame.loc["1", "frozen_params_total"] == 16
    assert frame.loc["1", "param_bytes_total"] == 9280
    assert frame.loc["", "params_total"] == report["totals"]["parameters"]["value"]
    assert math.isnan(frame.loc["1.0", "params_total"])
    assert frame.attrs["units"]["params_total"] == "count"
    assert frame.attrs["units"]["param_bytes_total"] == "B"
    old = to_frame(without_totals(report), table="layers")
    assert old["params_total"].isna().all()
    assert str(old["params_total"].dtype) == "float64"
