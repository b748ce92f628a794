"""compare_benchmarks through the binding: verdicts, withheld deltas, refusals, argument checks."""

from __future__ import annotations

import json

import pytest

import torchscan
from torchscan import InvalidArgumentError, ReportComparisonError, compare_benchmarks

from .conftest import FIXTURES


def example_report_text() -> str:
    """The README workload's report of one 1 s run (150 blocks), whose blocks the tests scale."""
    return (FIXTURES / "reports" / "benchmark_readme_m3_pro.json").read_text(encoding="utf-8")


def scaled(factor: float) -> dict:
    report = json.loads(example_report_text())
    timing = report["timing"]
    timing["block_durations_s"] = [d * factor for d in timing["block_durations_s"]]
    recomputed = torchscan._core.block_timing(
        timing["block_durations_s"], timing["calls_per_block"]
    )
    for key, value in (
        ("latency", recomputed.latency_s),
        ("latency_iqr", recomputed.latency_iqr_s),
        ("throughput", 32 * recomputed.calls / recomputed.timed_s),
    ):
        report["metrics"][key]["value"] = report["metrics"][key]["known_value"] = value
    torchscan.validate_report(report)
    return report


def test_slower_candidate_with_a_passing_check() -> None:
    check = json.loads((FIXTURES / "reports" / "output_check_passed.json").read_text())
    report = compare_benchmarks(json.loads(example_report_text()), scaled(1.25), check=check)
    assert report["verdict"] == "slower"
    assert report["check"]["status"] == "passed"
    assert torchscan.validate_report(report) == "benchmark_comparison"
    latency = next(d for d in report["deltas"] if d["metric"] == "latency")
    assert latency["ratio"] == pytest.approx(1.25)
    assert latency["ratio_ci_low"] <= 1.25 <= latency["ratio_ci_high"]
    again = compare_benchmarks(json.loads(example_report_text()), scaled(1.25), check=check)
    assert again == report


def test_failed_check_withholds_deltas_and_no_check_is_unchecked() -> None:
    failed = json.loads((FIXTURES / "reports" / "output_check_failed.json").read_text())
    report = compare_benchmarks(example_report_text(), scaled(0.5), check=failed)
    assert report["verdict"] == "withheld"
    assert {d["status"] for d in report["deltas"]} == {"withheld"}
    unchecked = compare_benchmarks(example_report_text(), scaled(2.0))
    assert unchecked["check"]["status"] == "unchecked"
    assert unchecked["verdict"] == "slower"
    assert "unchecked" in [d["code"] for d in unchecked["diagnostics"]]
    # Twice as fast, but the faster report lasts 0.57 s: too short to estimate its drift.
    short = compare_benchmarks(example_report_text(), scaled(0.5))
    assert short["verdict"] == "inconclusive"
    reason = short["deltas"][0]["reason"]
    assert reason is not None
    assert reason.startswith("the candidate report is too short to estimate the drift")
    assert "0.573 s of timed blocks, less than 0.9 s" in reason


def test_different_work_is_refused() -> None:
    other = json.loads(example_report_text())
    other["workload"]["work_units"] = 64
    other["metrics"]["throughput"]["value"] *= 2
    other["metrics"]["throughput"]["known_value"] = other["metrics"]["throughput"]["value"]
    with pytest.raises(ReportComparisonError, match="different work"):
        compare_benchmarks(example_report_text(), other)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"confidence_level": 1.0},
        {"bootstrap_resamples": 0},
        {"min_effect": -0.1},
        {"seed": -1},
    ],
)
def test_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        compare_benchmarks(example_report_text(), example_report_text(), **kwargs)  # type: ignore[arg-type]


def test_paired_rounds_give_the_per_round_interval_and_say_so() -> None:
    baseline = json.loads(example_report_text())
    candidate = scaled(1.25)
    report = compare_benchmarks(baseline, candidate, paired=True)
    latency = next(d for d in report["deltas"] if d["metric"] == "latency")
    # Every round is exactly 1.25 times as long: every resample gives the same median ratio.
    assert latency["ratio_ci_low"] == pytest.approx(1.25)
    assert latency["ratio_ci_high"] == pytest.approx(1.25)
    assert report["verdict"] == "slower"
    notes = [d["message"] for d in report["diagnostics"] if d["code"] == "note"]
    assert len(notes) == 1
    assert "150 rounds" in notes[0] and "(here 1.250)" in notes[0]
    unpaired = compare_benchmarks(baseline, candidate)
    assert "note" not in [d["code"] for d in unpaired["diagnostics"]]
    assert torchscan.validate_report(report) == "benchmark_comparison"


def test_paired_rounds_need_the_same_number_of_blocks() -> None:
    fewer = json.loads(example_report_text())
    timing = fewer["timing"]
    timing["block_durations_s"] = timing["block_durations_s"][:-1]
    recomputed = torchscan._core.block_timing(
        timing["block_durations_s"], timing["calls_per_block"]
    )
    for key, value in (
        ("latency", recomputed.latency_s),
        ("latency_iqr", recomputed.latency_iqr_s),
        ("throughput", 32 * recomputed.calls / recomputed.timed_s),
    ):
        fewer["metrics"][key]["value"] = fewer["metrics"][key]["known_value"] = value
    with pytest.raises(ReportComparisonError, match="150 timed blocks and the candidate 149"):
        compare_benchmarks(example_report_text(), fewer, paired=True)
    assert compare_benchmarks(example_report_text(), fewer)["kind"] == "benchmark_comparison"


def test_context_differences_are_named_plainly() -> None:
    candidate = scaled(1.0)
    candidate["context"]["torch_version"] = "9.9.9"
    candidate["context"]["torch_threads"] = 8
    candidate["context"]["flags"]["grad_enabled"] = not candidate["context"]["flags"][
        "grad_enabled"
    ]
    baseline = json.loads(example_report_text())
    report = compare_benchmarks(baseline, candidate)
    [mismatch] = [d for d in report["diagnostics"] if d["code"] == "context_mismatch"]
    before = baseline["context"]
    grad = str(before["flags"]["grad_enabled"]).lower()
    other = str(not before["flags"]["grad_enabled"]).lower()
    assert f"threads ({before['torch_threads']} vs 8)" in mismatch["message"]
    assert f"torch version ({before['torch_version']} vs 9.9.9)" in mismatch["message"]
    assert f"flag grad_enabled ({grad} vs {other})" in mismatch["message"]
    # Only what differs is named, and never as debug text.
    assert "inference_mode" not in mismatch["message"]
    assert "Some(" not in mismatch["message"] and "Flags {" not in mismatch["message"]


def with_blocks(scale: float, work_units: float) -> dict:
    """The README workload's report with 150 one-call blocks of about ``scale`` seconds."""
    report = json.loads(example_report_text())
    timing = report["timing"]
    timing["calls_per_block"] = 1
    timing["block_durations_s"] = [scale * (1 + (i % 7) / 100) for i in range(150)]
    report["workload"]["work_units"] = work_units
    recomputed = torchscan._core.block_timing(timing["block_durations_s"], 1)
    for key, value in (
        ("latency", recomputed.latency_s),
        ("latency_iqr", recomputed.latency_iqr_s),
        ("throughput", work_units * recomputed.calls / recomputed.timed_s),
    ):
        report["metrics"][key]["value"] = report["metrics"][key]["known_value"] = value
    torchscan.validate_report(report)
    return report


def test_a_subnormal_baseline_latency_gives_a_valid_comparison_not_a_runtime_error() -> None:
    """A valid baseline whose latency is the smallest float (5e-324 s) against 1 ms: the ratio
    is past the range of a float, so it is null with the reason, and the verdict is
    inconclusive; before, the core found its own comparison invalid (a bare RuntimeError)."""
    baseline, candidate = with_blocks(5e-324, 5e-324), with_blocks(1e-3, 5e-324)
    assert baseline["metrics"]["latency"]["value"] == 5e-324
    report = compare_benchmarks(baseline, candidate)
    assert torchscan.validate_report(report) == "benchmark_comparison"
    latency = next(d for d in report["deltas"] if d["metric"] == "latency")
    assert latency["status"] == "complete"
    assert latency["ratio"] is None
    assert latency["verdict"] == "inconclusive"
    assert latency["reason"].startswith(
        "the ratio candidate / baseline (1.03e-3 / 5e-324) is past the range of a float, so it "
        "is not stated; "
    )
    assert "why: the ratio candidate / baseline" in torchscan.format_summary(report)
