"""Whole numbers of whole things are ``int`` in reports (JSON integers), as in torchscan 0.2.

Metrics in ``B``, ``FLOPs``, ``MACs``, ``DMAs`` and ``count``, counted operators' FLOPs, the 0.2
views and diff deltas are integers when whole; fractions and other units stay floats.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import compare_reports, crawl_module, measure_flops, metric_result
from torchscan.reports.metrics import report_number


def _metrics(node: Any) -> list[dict[str, Any]]:
    """Every ``MetricResult`` in ``node``."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if {"status", "unit", "known_value", "value"} <= node.keys():
            found.append(node)
        for value in node.values():
            found.extend(_metrics(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_metrics(value))
    return found


def _cnn(width: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU(), nn.Flatten(), nn.Linear(width * 36, 4))


def test_every_whole_count_of_an_analysis_is_an_int() -> None:
    report = crawl_module(_cnn(4), (3, 8, 8))
    checked = 0
    for metric in _metrics(report):
        for key in ("value", "known_value"):
            number = metric[key]
            if number is None or metric["unit"] not in {"B", "FLOPs", "MACs", "DMAs", "count"}:
                continue
            if float(number).is_integer():
                assert type(number) is int, (metric, key)
                checked += 1
    assert checked > 40
    assert report["totals"]["parameters"]["value"] == 692
    assert type(report["layers"][1]["metrics"]["calls"]["value"]) is int
    assert json.dumps(report["totals"]["macs"]["value"]) == "4464"
    counted = report["operator_flops"]["counted"]
    assert all(type(op["flops"]) is int for op in counted)
    assert all(type(v) is int for v in report["operator_flops"]["by_operator"].values())


def test_the_diff_of_0_2s_readme_prints_an_integer_delta() -> None:
    before = crawl_module(_cnn(4), (3, 8, 8))
    after = crawl_module(_cnn(8), (3, 8, 8))
    diff = compare_reports(before, after)
    macs = diff["totals"]["macs"]
    assert f"{macs['status']} {macs['delta']}" == "complete 4464"
    assert f"{diff['totals']['parameters']['delta']}" == "688"
    assert type(diff["totals"]["parameters"]["before"]["value"]) is int
    changed = {change["path"]: change for change in diff["layers"]["changed"]}
    assert type(changed["0"]["metrics"]["macs"]["delta"]) is int


def test_flops_of_a_callable_are_ints() -> None:
    layer = nn.Linear(4, 4)
    x = torch.ones(2, 4)
    report = measure_flops(lambda: layer(x), modules=layer)
    assert report["total"]["value"] == 64 and type(report["total"]["value"]) is int
    assert report["by_operator"] == {"aten.addmm": 64}
    assert type(report["by_operator"]["aten.addmm"]) is int
    assert type(report["by_module"]["Linear"]) is int


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (112.0, "count", 112),
        (0, "B", 0),
        (2**53, "FLOPs", 2**53),
        (2**53 + 2, "MACs", float(2**53 + 2)),
        (1.5, "DMAs", 1.5),
        (2, "s", 2.0),
        (1, "ratio", 1.0),
        (10, "samples/s", 10.0),
    ],
)
def test_report_numbers_follow_the_cores_rule(value: float, unit: str, expected: float) -> None:
    number = report_number(value, unit)
    assert number == expected and type(number) is type(expected)


def test_metric_result_writes_whole_counts_as_ints() -> None:
    base = {"scope": "my model", "method": "my formula"}
    assert metric_result(status="complete", value=12.0, unit="FLOPs", **base)["value"] == 12
    built = metric_result(status="partial", known_value=3.0, unit="count", **base)
    assert type(built["known_value"]) is int
    timed = metric_result(status="complete", value=1, unit="s", **base)
    assert type(timed["value"]) is float
