"""compare_reports through the binding: totals, layers, refusals and invalid input."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from torchscan import _core
from torchscan.errors import ReportValidationError, TorchscanError
from torchscan.reports.comparison import ReportComparisonError, compare_reports
from torchscan.reports.validation import validate_report

from .conftest import FIXTURES

REPORTS = FIXTURES / "reports"
SMALL = REPORTS / "analysis_small_cnn.json"
WIDENED = REPORTS / "analysis_small_cnn_widened.json"
STRUCTURE = REPORTS / "analysis_structure_mode.json"
PARTIAL = REPORTS / "analysis_partial_operator_flops_tied_weights.json"
ANALYSES = [SMALL, WIDENED, STRUCTURE, PARTIAL]

TOTALS = [
    ("parameters", "count"),
    ("trainable_parameters", "count"),
    ("frozen_parameters", "count"),
    ("parameter_bytes", "B"),
    ("buffer_elements", "count"),
    ("buffer_bytes", "B"),
    ("shared_tensors", "count"),
    ("module_flops", "FLOPs"),
    ("operator_flops", "FLOPs"),
    ("macs", "MACs"),
    ("dmas", "DMAs"),
]


def load(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def total(diff: Any, metric: str) -> Any:
    return diff["totals"][metric]


@pytest.mark.parametrize("path", ANALYSES, ids=lambda p: p.name)
def test_a_report_compared_with_itself_has_no_change(path: Path) -> None:
    diff = compare_reports(path, path)
    assert validate_report(diff) == "report_diff"
    # keyed by the analysis report's total names, sorted, as torchscan 0.2's diff was
    assert list(diff["totals"]) == sorted(name for name, _ in TOTALS)
    assert [(name, diff["totals"][name]["unit"]) for name, _ in TOTALS] == TOTALS
    for entry in diff["totals"].values():
        if entry["status"] == "complete":
            assert entry["delta"] == 0
            assert entry["before"] == entry["after"]
            assert entry["reason"] is None
        else:
            assert entry["delta"] is None
            assert entry["reason"]
    assert diff["layers"]["added"] == []
    assert diff["layers"]["removed"] == []
    assert diff["layers"]["changed"] == []
    assert diff["diagnostics"] == []
    report = load(path)
    assert diff["before"]["model_type"] == report["context"]["model_type"]
    assert diff["after"]["context"] == report["context"]
    assert diff["context"]["torchscan_version"] == _core.__version__


def test_mapping_text_bytes_and_path_give_the_same_diff() -> None:
    by_path = compare_reports(SMALL, WIDENED)
    text = WIDENED.read_text(encoding="utf-8")
    assert compare_reports(load(SMALL), text) == by_path
    assert compare_reports(SMALL.read_bytes(), text.encode()) == by_path


def test_a_widened_model_changes_totals_and_layers() -> None:
    diff = compare_reports(SMALL, WIDENED)
    parameters = total(diff, "parameters")
    assert (parameters["before"]["value"], parameters["after"]["value"], parameters["delta"]) == (
        314,
        618,
        304,
    )
    # torchscan 0.2's layout: each side is the report's own metric result, unchanged.
    assert parameters["before"] == load(SMALL)["totals"]["parameters"]
    assert parameters["after"] == load(WIDENED)["totals"]["parameters"]
    flops = total(diff, "module_flops")
    assert flops["status"] == "complete"
    assert flops["delta"] == 403_360
    assert total(diff, "operator_flops")["after"]["value"] == 777_920
    assert [(layer["path"], layer["type_name"]) for layer in diff["layers"]["added"]] == [
        ("5", "Identity")
    ]
    assert diff["layers"]["removed"] == []
    assert [layer["path"] for layer in diff["layers"]["changed"]] == ["0", "1", "2", "3", "4"]
    conv = diff["layers"]["changed"][0]
    assert conv["changes"][0] == {
        "field": "output",
        "before": "tensor [1, 8, 30, 30] float32",
        "after": "tensor [1, 16, 30, 30] float32",
    }
    assert {"field": "parameters.trainable", "before": "224", "after": "448"} in conv["changes"]
    assert {"field": "parameters.bytes", "before": "896", "after": "1,792"} in conv["changes"]
    # torchscan 0.2's layout: each changed metric with both sides and, when complete, the delta.
    flops_change = conv["metrics"]["module_flops"]
    assert (flops_change["status"], flops_change["delta"]) == ("complete", 388_800)
    assert flops_change["before"]["value"] == 388_800 and flops_change["after"]["value"] == 777_600
    assert set(conv["metrics"]) == {"module_flops", "macs", "dmas"}
    assert diff["layers"]["changed"][3]["metrics"] == {}  # Flatten: only shapes changed
    added = diff["layers"]["added"][0]
    assert added["metrics"]["module_flops"]["value"] == 0.0
    [structure] = diff["diagnostics"]
    assert (structure["code"], structure["severity"]) == ("structure_changed", "info")

    reverse = compare_reports(WIDENED, SMALL)
    assert reverse["layers"]["removed"] == diff["layers"]["added"]
    assert reverse["layers"]["added"] == []
    assert total(reverse, "parameters")["delta"] == -304


def test_a_partial_side_gives_no_delta_and_the_weaker_status() -> None:
    diff = compare_reports(SMALL, PARTIAL)
    assert validate_report(diff) == "report_diff"
    flops = total(diff, "module_flops")
    assert flops["status"] == "partial"
    assert flops["before"]["value"] == 403_360
    assert flops["after"]["status"] == "partial"
    assert flops["after"]["value"] is None
    assert flops["after"] == load(PARTIAL)["totals"]["module_flops"]
    assert flops["delta"] is None
    assert flops["reason"] == "after is partial: FusedGELU has no estimate formula"
    structure = compare_reports(STRUCTURE, STRUCTURE)
    unavailable = total(structure, "operator_flops")
    assert unavailable["status"] == "unavailable"
    assert unavailable["reason"].startswith("before is unavailable: not requested")


def test_a_different_context_is_a_warning() -> None:
    after = load(SMALL)
    after["context"]["device"] = "cuda:0"
    after["context"]["torch_version"] = "2.16.0"
    diff = compare_reports(SMALL, after)
    [mismatch] = diff["diagnostics"]
    assert (mismatch["code"], mismatch["severity"]) == ("context_mismatch", "warning")
    assert "device (cpu before, cuda:0 after)" in mismatch["message"]
    assert "torch_version (2.15.0 before, 2.16.0 after)" in mismatch["message"]


def test_different_modes_are_refused() -> None:
    with pytest.raises(
        ReportComparisonError, match="before is `full`, after is `structure`"
    ) as info:
        compare_reports(SMALL, STRUCTURE)
    assert isinstance(info.value, TorchscanError)
    assert "in the same mode" in info.value.reason


def test_different_methods_are_refused() -> None:
    after = load(SMALL)
    after["operator_flops"]["total"]["method"] = "another counter"
    after["totals"]["operator_flops"]["method"] = "another counter"
    for entry in after["operator_flops"]["modules"]:
        entry["flops"]["method"] = "another counter"
    with pytest.raises(ReportComparisonError, match="the `operator_flops` method differs"):
        compare_reports(SMALL, after)


def test_different_schema_versions_are_refused() -> None:
    after = copy.deepcopy(load(SMALL))
    after["schema_version"] = 2
    with pytest.raises(
        ReportComparisonError, match="before is schema_version 1, after is schema_version 2"
    ):
        compare_reports(SMALL, after)


def test_other_kinds_are_refused() -> None:
    with pytest.raises(ReportComparisonError, match="the report after is a `benchmark` report"):
        compare_reports(SMALL, REPORTS / "benchmark_readme_cpu.json")


def test_invalid_input_names_the_side_in_every_path() -> None:
    with pytest.raises(ReportValidationError) as info:
        compare_reports("[]", SMALL)
    assert info.value.problems == [("before:$", "a report is a JSON object, got an array")]
    broken = load(SMALL)
    broken["totals"]["parameters"]["value"] = 1
    with pytest.raises(ReportValidationError) as info:
        compare_reports(SMALL, broken)
    assert info.value.problems[0][0] == "after:$.totals.parameters.known_value"
    assert all(path.startswith("after:$") for path, _ in info.value.problems)
    with pytest.raises(ReportValidationError) as info:
        compare_reports(SMALL, {"bad": object()})
    assert info.value.problems[0][0] == "after:$"
    with pytest.raises(ReportValidationError) as info:
        compare_reports(b"\xff", SMALL)
    assert info.value.problems[0][0] == "before:$"


def test_non_finite_numbers_are_invalid_input() -> None:
    broken = load(SMALL)
    broken["totals"]["parameter_bytes"]["value"] = float("nan")
    with pytest.raises(ReportValidationError) as info:
        compare_reports(broken, SMALL)
    assert info.value.problems[0][0] == "before:$.totals.parameter_bytes.value"


def test_other_input_types_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="a report is a mapping"):
        compare_reports(SMALL, object())  # type: ignore[arg-type]


def test_a_json_value_that_is_not_an_object_is_an_invalid_side() -> None:
    with pytest.raises(ReportValidationError) as caught:
        compare_reports(SMALL, 42)  # type: ignore[arg-type]
    assert caught.value.problems == [("after:$", "a report is a JSON object, got a number")]


def test_core_errors_are_torchscan_errors() -> None:
    # The core raises torchscan's own exceptions: no Python site translates them again.
    small = SMALL.read_text(encoding="utf-8")
    with pytest.raises(ReportValidationError) as invalid:
        _core.compare_reports_json(small, "{}")
    assert invalid.value.problems[0][0] == "after:$.schema_version"
    with pytest.raises(ReportComparisonError) as refused:
        _core.compare_reports_json(small, STRUCTURE.read_text(encoding="utf-8"))
    assert isinstance(refused.value.reason, str) and refused.value.reason
    text = _core.compare_reports_json(small, WIDENED.read_text(encoding="utf-8"))
    assert text.endswith("}\n")
    assert json.loads(text) == compare_reports(SMALL, WIDENED)


def test_comparison_error_pickles() -> None:
    error = ReportComparisonError("the analysis modes differ")
    restored = pickle.loads(pickle.dumps(error))
    assert isinstance(restored, ReportComparisonError)
    assert restored.reason == "the analysis modes differ"
    assert str(restored) == "the analysis modes differ"
