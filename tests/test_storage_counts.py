"""Parameters and buffers counted by the storage they cover: ties through views, flat buffers."""

from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import crawl_module, summary, validate_report

torch.set_num_threads(1)


class Holder(nn.Module):
    """Parameters (and buffers) given as tensors, each a view chosen by the test."""

    def __init__(self, parameters: dict[str, torch.Tensor], buffers: Any = None) -> None:
        super().__init__()
        for name, tensor in parameters.items():
            self.register_parameter(name, tensor if isinstance(tensor, nn.Parameter) else None)
        for name, tensor in (buffers or {}).items():
            self.register_buffer(name, tensor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def totals(report: Any) -> tuple[int, int, int, int]:
    t = report["totals"]
    return (
        t["parameters"]["value"],
        t["trainable_parameters"]["value"],
        t["parameter_bytes"]["value"],
        t["shared_tensors"],
    )


def layer_sums(report: Any) -> tuple[int, int]:
    """Parameter elements and bytes summed over the layers."""
    elements = sum(
        p["parameters"]["trainable"] + p["parameters"]["frozen"] for p in report["layers"]
    )
    return elements, sum(p["parameters"]["bytes"] for p in report["layers"])


def shared_message(report: Any) -> str | None:
    found = [d["message"] for d in report["diagnostics"] if d["code"] == "shared_tensors"]
    assert len(found) <= 1
    return found[0] if found else None


def transposed_tie() -> nn.Sequential:
    model = nn.Sequential(nn.Linear(32, 16, bias=False), nn.Linear(16, 32, bias=False))
    model[1].weight = nn.Parameter(model[0].weight.data.t())
    return model


def test_a_transposed_tie_counts_its_storage_once() -> None:
    model = transposed_tie()
    storage = model[0].weight.untyped_storage()
    assert storage.data_ptr() == model[1].weight.untyped_storage().data_ptr()
    assert storage.nbytes() == 512 * 4  # one storage of 32 x 16 floats
    report = crawl_module(model, (32,))
    assert totals(report) == (512, 512, 2048, 1)
    assert shared_message(report) == (
        "1 shared tensor(s) (a tensor under more than one name, or tensors that overlap in one "
        "storage) were counted once, each storage element once: 0.weight, 1.weight (2 tensors "
        "overlapping in one storage: 1,024 elements, 512 counted)"
    )
    layers = {layer["path"]: layer["parameters"] for layer in report["layers"]}
    assert layers["0"] == {"trainable": 512, "frozen": 0, "bytes": 2048, "shared": False}
    # The tied weight's storage was counted at layer 0.
    assert layers["1"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}
    assert layer_sums(report) == (512, 2048)
    validate_report(report)
    # The table's totals are the report's.
    buffer = io.StringIO()
    summary(model, (32,), mode="structure", file=buffer)
    assert "Parameters: 512 (trainable 512, frozen 0)" in buffer.getvalue()


def test_a_transposed_tie_on_the_meta_device_is_counted_once_too() -> None:
    with torch.device("meta"):
        model = transposed_tie()
    report = crawl_module(model, args=(torch.zeros(1, 32, device="meta"),), mode="structure")
    assert totals(report) == (512, 512, 2048, 1)


def flat_model(slices: list[tuple[int, int]], frozen: tuple[int, ...] = ()) -> Holder:
    """Parameters that are slices ``[start, stop)`` of one flat buffer, as FSDP keeps them."""
    flat = torch.zeros(1000)
    parameters = {}
    for index, (start, stop) in enumerate(slices):
        parameter = nn.Parameter(flat[start:stop], requires_grad=index not in frozen)
        parameters[f"p{index}"] = parameter
    return Holder(parameters)


def test_disjoint_views_of_one_flat_buffer_count_in_full() -> None:
    # Reshaped like the parameters they stand for; 100 elements of the buffer are unused.
    flat = torch.zeros(1000)
    model = Holder(
        {
            "weight": nn.Parameter(flat[0:600].view(20, 30)),
            "bias": nn.Parameter(flat[600:620]),
            "other": nn.Parameter(flat[720:1000].view(28, 10)),
        }
    )
    report = crawl_module(model, (3,))
    assert totals(report) == (600 + 20 + 280, 900, 900 * 4, 0)
    assert shared_message(report) is None
    assert layer_sums(report) == (900, 3600)


def test_partly_overlapping_slices_count_their_union() -> None:
    # [0, 300) and [200, 500): 300 + 200 distinct elements; the first in order counts 300.
    report = crawl_module(flat_model([(0, 300), (200, 500)], frozen=(0,)), (3,))
    assert totals(report) == (500, 200, 2000, 1)
    assert report["totals"]["frozen_parameters"]["value"] == 300
    assert shared_message(report) is not None
    assert "p0, p1 (2 tensors overlapping in one storage: 600 elements, 500 counted)" in (
        shared_message(report) or ""
    )
    # Three slices chained by overlaps, one apart: [0, 10), [5, 20), [15, 30); [40, 50) alone.
    report = crawl_module(flat_model([(0, 10), (5, 20), (15, 30), (40, 50)]), (3,))
    assert totals(report) == (30 + 10, 40, 160, 1)
    assert "p0, p1, p2 (3 tensors overlapping in one storage: 40 elements, 30 counted)" in (
        shared_message(report) or ""
    )


def test_same_shape_ties_are_still_counted_once() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    model[1].weight = model[0].weight  # the same Parameter under two names
    model[1].bias = nn.Parameter(model[0].bias.data)  # another Parameter, the same view
    report = crawl_module(model, (8,))
    assert totals(report) == (64 + 8, 72, 288, 2)
    assert shared_message(report) == (
        "2 shared tensor(s) (a tensor under more than one name, or tensors that overlap in one "
        "storage) were counted once, each storage element once: 0.weight = 1.weight; 0.bias, "
        "1.bias (2 tensors overlapping in one storage: 16 elements, 8 counted)"
    )
    assert layer_sums(report) == (72, 288)


def test_expanded_and_strided_views_count_the_elements_they_cover() -> None:
    # An expanded view covers its 4 elements once, not 3 x 4.
    report = crawl_module(Holder({"row": nn.Parameter(torch.randn(4).expand(3, 4))}), (3,))
    assert totals(report) == (4, 4, 16, 0)
    # The even and odd columns of one 8 x 8 storage do not overlap: 32 + 32.
    grid = torch.zeros(8, 8)
    halves = Holder({"even": nn.Parameter(grid[:, ::2]), "odd": nn.Parameter(grid[:, 1::2])})
    report = crawl_module(halves, (3,))
    assert totals(report) == (64, 64, 256, 0)
    assert shared_message(report) is None
    # Every other column of a weight that is itself a parameter is already counted with it.
    model = Holder({"weight": nn.Parameter(grid)})
    model.columns = nn.Parameter(model.weight.data[:, ::2])
    report = crawl_module(model, (3,))
    assert totals(report) == (64, 64, 256, 1)
    # Every other column of the top half, then the whole top half: 16 + 16 more.
    half = Holder({"columns": nn.Parameter(grid[:4, ::2]), "top": nn.Parameter(grid[:4])})
    assert totals(crawl_module(half, (3,))) == (32, 32, 128, 1)


def test_overlapping_buffers_are_counted_by_storage_too() -> None:
    flat = torch.zeros(20)
    model = Holder({}, {"a": flat[0:10], "b": flat[5:15], "c": flat[15:20]})
    report = crawl_module(model, (3,))
    assert report["totals"]["buffer_elements"]["value"] == 20
    assert report["totals"]["buffer_bytes"]["value"] == 80
    assert report["totals"]["shared_tensors"] == 1
    assert "a, b (2 tensors overlapping in one storage: 20 elements, 15 counted)" in (
        shared_message(report) or ""
    )
    assert sum(layer["buffers"]["elements"] for layer in report["layers"]) == 20


def test_layers_count_a_tie_at_the_first_layer_that_runs() -> None:
    # The transposed copy belongs to the layer called first: it is counted there.
    model = transposed_tie()

    class Reversed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = model[0]
            self.second = model[1]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.first(self.second(x[..., :16]))

    report = crawl_module(Reversed(), (16,))
    assert totals(report) == (512, 512, 2048, 1)
    layers = {layer["path"]: layer["parameters"] for layer in report["layers"]}
    assert layers["second"] == {"trainable": 512, "frozen": 0, "bytes": 2048, "shared": False}
    assert layers["first"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}


@pytest.mark.parametrize("mode", ["full", "structure"])
def test_models_without_shared_storage_count_as_before(mode: str) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Linear(6, 2))
    report = crawl_module(model, (3, 8, 8), mode=mode)
    parameters = sum(p.numel() for p in model.parameters())
    assert totals(report) == (parameters, parameters, parameters * 4, 0)
    assert report["totals"]["buffer_elements"]["value"] == 4 + 4 + 1
