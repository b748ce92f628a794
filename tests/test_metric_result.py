"""``metric_result``: torchscan 0.2's builder of ``MetricResult`` dicts, with its invariants."""

from __future__ import annotations

import math
from typing import Any

import pytest

import torchscan
from torchscan import InvalidArgumentError, metric_result

BASE: dict[str, Any] = {"unit": "FLOPs", "scope": "my model", "method": "my formula"}


def test_the_names_torchscan_0_2_exported_are_importable() -> None:
    from torchscan import (  # noqa: F401
        AnalysisReport,
        Diagnostic,
        FlopReport,
        IncompleteAnalysisError,
        LayerReport,
        MetricResult,
        ReportDiff,
        compare_reports,
        crawl_module,
        measure_flops,
        summary,
    )

    assert LayerReport is torchscan.Layer
    assert {"LayerReport", "metric_result"} <= set(torchscan.__all__)


def test_a_complete_metric_has_its_value_as_known_value() -> None:
    assert metric_result(status="complete", value=12, **BASE) == {
        "status": "complete",
        "value": 12.0,
        "known_value": 12.0,
        "unit": "FLOPs",
        "scope": "my model",
        "method": "my formula",
        "reason": None,
    }
    # torchscan 0.2's callers also passed the same number as known_value.
    same = metric_result(status="complete", value=3.5, known_value=3.5, **BASE)
    assert same["value"] == same["known_value"] == 3.5


def test_partial_and_unavailable_metrics_say_why() -> None:
    partial = metric_result(status="partial", known_value=7, reason="one layer unknown", **BASE)
    assert (partial["value"], partial["known_value"], partial["reason"]) == (
        None,
        7.0,
        "one layer unknown",
    )
    assert metric_result(status="partial", known_value=0, **BASE)["reason"] == "no reason given"
    missing = metric_result(status="unavailable", **BASE)
    assert (missing["value"], missing["known_value"], missing["reason"]) == (
        None,
        None,
        "no reason given",
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"status": "complete"}, "needs a value"),
        ({"status": "complete", "value": 1, "known_value": 2}, "known_value equals its value"),
        ({"status": "complete", "value": 1, "reason": "x"}, "has no reason"),
        ({"status": "partial"}, "needs known_value"),
        ({"status": "partial", "value": 1, "known_value": 1}, "has no value"),
        ({"status": "unavailable", "known_value": 1}, "neither value nor known_value"),
        ({"status": "done", "value": 1}, "status must be"),
        ({"status": "complete", "value": math.inf}, "must be finite"),
        ({"status": "complete", "value": "1"}, "must be a number"),
        ({"status": "complete", "value": True}, "must be a number"),
        ({"status": "partial", "known_value": 1, "reason": " "}, "reason must be"),
    ],
)
def test_an_impossible_combination_is_refused(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        metric_result(**{**BASE, **arguments})
    assert isinstance(caught.value, ValueError)  # as torchscan 0.2 raised


def test_an_empty_unit_scope_or_method_is_refused() -> None:
    for name in ("unit", "scope", "method"):
        with pytest.raises(InvalidArgumentError, match=f"{name} must be a non-empty string"):
            metric_result(status="complete", value=1, **{**BASE, name: ""})
