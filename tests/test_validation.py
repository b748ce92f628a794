"""validate_report and the CLI give the same verdict, with every problem's JSON path."""

from __future__ import annotations

import copy
import json
import math
import subprocess
from pathlib import Path

import pytest

import torchscan
from torchscan import ReportValidationError, TorchscanError, validate_report

from .conftest import FIXTURES, expected_invalid_paths, invalid_fixtures, valid_fixtures

VALID = valid_fixtures()
INVALID = invalid_fixtures()


def test_fixture_sets_are_substantial() -> None:
    assert len(VALID) >= 7
    assert len(INVALID) >= 30
    assert {p.name for p in INVALID} == set(expected_invalid_paths())


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_fixture_passes_as_mapping_text_and_path(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    report = json.loads(text)
    assert validate_report(report) == report["kind"]
    assert validate_report(text) == report["kind"]
    assert validate_report(text.encode()) == report["kind"]
    assert validate_report(path) == report["kind"]
    assert validate_report(str(path)) == report["kind"]


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_fixture_is_rejected_at_its_defect(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    with pytest.raises(ReportValidationError) as caught:
        validate_report(text)
    paths = [problem_path for problem_path, _ in caught.value.problems]
    assert expected_invalid_paths()[path.name] in paths
    # A fixture that Python's json module can load (without a key given twice, which json.loads
    # would drop) gives the same problems as a value, whatever its JSON type.
    try:
        report = json.loads(text, object_pairs_hook=_unique_keys)
    except ValueError:
        return
    with pytest.raises(ReportValidationError) as caught_mapping:
        validate_report(report)
    assert caught_mapping.value.problems == caught.value.problems


@pytest.mark.parametrize("path", VALID + INVALID, ids=lambda p: p.name)
def test_cli_gives_the_same_verdict_and_problems(path: Path, cli: str) -> None:
    result = subprocess.run(
        [cli, "validate", str(path)], capture_output=True, text=True, check=False
    )
    try:
        validate_report(path)
        python_lines: list[str] = []
    except ReportValidationError as error:
        python_lines = [f"{path}: {p}: {m}" for p, m in error.problems]
    assert result.returncode == (1 if python_lines else 0), result.stderr
    assert result.stdout.splitlines() == python_lines


def _readme_report() -> dict[str, object]:
    # The README workload's report as torchscan 0.3.0 wrote it (no rates, no noise metrics): the
    # problems below are those of its metrics alone.
    path = FIXTURES / "reports" / "benchmark_readme_m3_pro.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(report, dict)
    return report


def test_every_problem_is_listed_with_its_path() -> None:
    report = _readme_report()
    metrics = report["metrics"]
    assert isinstance(metrics, dict)
    metrics["latency"]["value"] = None
    metrics["process_rss_peak"]["reason"] = None
    metrics["tensor_memory_peak"]["unit"] = "MiB"
    with pytest.raises(ReportValidationError) as caught:
        validate_report(report)
    paths = [path for path, _ in caught.value.problems]
    assert paths == [
        "$.metrics.latency.value",
        "$.metrics.tensor_memory_peak.unit",
        "$.metrics.process_rss_peak.reason",
    ]
    message = str(caught.value)
    assert message.startswith("report is invalid (3 problems):\n")
    assert "  $.metrics.tensor_memory_peak.unit: unknown unit `MiB`" in message


def test_non_finite_numbers_are_reported_at_their_paths() -> None:
    report = _readme_report()
    report["timing"]["block_durations_s"][1] = math.nan  # type: ignore[index]
    report["metrics"]["first_call"]["value"] = math.inf  # type: ignore[index]
    with pytest.raises(ReportValidationError) as caught:
        validate_report(report)
    paths = [path for path, _ in caught.value.problems]
    assert "$.timing.block_durations_s[1]" in paths
    assert "$.metrics.first_call.value" in paths


def test_unknown_schema_version_names_readable_versions() -> None:
    report = _readme_report()
    report["schema_version"] = 2
    with pytest.raises(ReportValidationError) as caught:
        validate_report(report)
    assert caught.value.problems == [
        ("$.schema_version", "unsupported schema_version 2; this build reads versions: 1")
    ]
    assert torchscan.READABLE_SCHEMA_VERSIONS == (1,)


def test_the_input_mapping_is_not_modified() -> None:
    report = _readme_report()
    before = copy.deepcopy(report)
    validate_report(report)
    assert report == before


def test_errors_are_torchscan_errors_and_value_errors() -> None:
    with pytest.raises(ReportValidationError) as caught:
        validate_report({"schema_version": 1, "kind": "benchmark", "tensor": object()})
    assert isinstance(caught.value, TorchscanError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.problems[0][0] == "$"
    assert "not JSON-serializable" in caught.value.problems[0][1]


def test_wrong_argument_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="a report is a mapping"):
        validate_report(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got set"):
        validate_report({1, 2})  # type: ignore[arg-type]


def test_validation_error_pickles_with_its_problems() -> None:
    import pickle

    error = ReportValidationError([("$.a", "bad")])
    restored = pickle.loads(pickle.dumps(error))
    assert restored.problems == [("$.a", "bad")]
    assert str(restored) == str(error)
