"""measure_workload: passes, timing evidence, summary lines, state and errors."""

from __future__ import annotations

import io
import sys

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

import torchscan
from torchscan import IncompleteMeasurementError, InvalidArgumentError, measure_workload

torch.set_num_threads(1)
FAST = {"min_time_s": 0.05, "max_time_s": 0.5, "min_blocks": 5, "warmup_time_s": 0.01}


def readme_workload() -> tuple[object, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)

    @torch.inference_mode()
    def workload() -> torch.Tensor:
        return model(inputs)

    return workload, inputs


def test_latency_and_flops_report_is_valid_and_recomputable() -> None:
    workload, inputs = readme_workload()
    report = measure_workload(
        workload,
        inputs=inputs,
        work_units=32,
        work_unit="samples",
        metrics=["latency", "operator_flops"],
        print_summary=False,
        **FAST,
    )
    assert torchscan.validate_report(report) == "benchmark"
    timing = report["timing"]
    assert timing is not None
    assert len(timing["block_durations_s"]) >= 5
    assert timing["calls_per_block"] >= 1
    recomputed = torchscan._core.block_timing(
        timing["block_durations_s"], timing["calls_per_block"]
    )
    metrics = report["metrics"]
    assert metrics["latency"]["value"] == recomputed.latency_s
    assert metrics["latency_iqr"]["value"] == recomputed.latency_iqr_s
    assert metrics["throughput"]["value"] == pytest.approx(
        32 * recomputed.calls / recomputed.timed_s
    )
    assert metrics["throughput"]["unit"] == "samples/s"
    assert metrics["operator_flops"]["value"] == 1_048_576
    assert metrics["tensor_memory_peak"]["reason"] == "not requested"
    assert metrics["process_rss_peak"]["reason"] == "not requested"
    assert report["profiler"]["reason"] == "not requested"
    assert report["workload"]["inputs"][0]["shape"] == [32, 128]
    assert report["workload"]["name"].endswith("workload")
    assert report["settings"]["passes"] == ["latency", "operator_flops"]
    assert report["context"]["torch_threads"] == 1


def test_summary_lines_follow_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    workload, inputs = readme_workload()
    measure_workload(
        workload, inputs=inputs, work_units=32, work_unit="samples", metrics=["latency"], **FAST
    )
    lines = capsys.readouterr().out.splitlines()
    labels = [line.split(":")[0] for line in lines]
    assert labels[:5] == [
        "Workload on cpu (1 PyTorch threads)",
        "  First call",
        "  Latency (block median)",
        "  Latency IQR",
        "  Throughput",
    ]
    assert "  Process peak RSS: unavailable (not requested)" in lines
    assert "  Profiler: not requested (separate instrumented pass)" in lines


def test_print_summary_false_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    workload, _ = readme_workload()
    measure_workload(workload, metrics=["latency"], print_summary=False, **FAST)
    assert capsys.readouterr().out == ""


def test_profiler_pass_lists_top_operators() -> None:
    workload, _ = readme_workload()
    report = measure_workload(
        workload, metrics=["profiler"], print_summary=False, profiler_calls=5, **FAST
    )
    profiler = report["profiler"]
    assert profiler["status"] == "complete"
    assert profiler["calls"] == profiler["requested_calls"] == 5
    assert profiler_diagnostics(report) == []
    names = [op["operator"] for op in profiler["top_operators"]]
    assert "aten::addmm" in names
    assert "instrumentation" in profiler["scope"]
    assert report["timing"] is None
    assert report["metrics"]["latency"]["reason"] == "not requested"
    assert torchscan.validate_report(report) == "benchmark"


def sleeping_workload(seconds: float) -> tuple[object, list[int]]:
    """A workload that sleeps ``seconds`` per call (at least that long) and counts its calls."""
    import time

    calls = [0]

    def workload() -> None:
        calls[0] += 1
        time.sleep(seconds)

    return workload, calls


def profiler_diagnostics(report: torchscan.BenchmarkReport) -> list[torchscan.Diagnostic]:
    return [d for d in report["diagnostics"] if d["code"] == "profiler_failed"]


def test_the_profiler_pass_stays_within_max_time_s() -> None:
    # Each call sleeps at least 0.05 s, and the pass stops before a call that would end past
    # max_time_s by the mean of the calls so far: at most 0.5 / 0.05 = 10 calls, however busy
    # the machine (a slower machine runs fewer, never more).
    workload, calls = sleeping_workload(0.05)
    report = measure_workload(
        workload,
        metrics=["profiler"],
        print_summary=False,
        profiler_calls=100,
        min_time_s=0.05,
        max_time_s=0.5,
    )
    profiler = report["profiler"]
    assert profiler["status"] == "complete"
    ran = profiler["calls"]
    assert ran is not None and 1 <= ran <= 10
    assert calls[0] == ran  # no timing pass: every call of the workload was profiled
    assert profiler["requested_calls"] == 100
    (diagnostic,) = profiler_diagnostics(report)
    assert diagnostic["severity"] == "warning"
    assert diagnostic["metric"] == "profiler"
    assert diagnostic["message"].startswith(
        f"{ran} of 100 profiler calls fit in max_time_s=0.5 s, starting, stopping and reading "
        "the profiler included (the calls took "
    )
    assert "--profiler-calls" in diagnostic["message"]
    assert torchscan.validate_report(report) == "benchmark"
    summary = torchscan.format_summary(report)
    assert f"  Profiler: {ran} calls of 100 requested, within the time budget (" in summary


def test_the_profiler_pass_always_runs_one_call() -> None:
    # One call of 0.2 s is already past max_time_s=0.1: the first call runs, no other.
    workload, calls = sleeping_workload(0.2)
    report = measure_workload(
        workload,
        metrics=["profiler"],
        print_summary=False,
        profiler_calls=3,
        min_time_s=0.05,
        max_time_s=0.1,
    )
    assert (report["profiler"]["calls"], report["profiler"]["requested_calls"]) == (1, 3)
    assert calls[0] == 1
    (diagnostic,) = profiler_diagnostics(report)
    assert diagnostic["message"].startswith(
        "1 of 3 profiler calls ran, past max_time_s=0.1 s: profiling and reading the first call "
        "alone took "
    )
    assert torchscan.validate_report(report) == "benchmark"


def test_each_side_of_an_experiment_profiles_within_half_of_max_time_s() -> None:
    # Each side has 0.25 s: calls of at least 0.05 s give at most 5 calls per side.
    baseline, baseline_calls = sleeping_workload(0.05)
    candidate, candidate_calls = sleeping_workload(0.05)
    experiment = torchscan.compare_workloads(
        baseline,
        candidate,
        rtol=0,
        atol=0,
        metrics=["profiler"],
        print_summary=False,
        profiler_calls=100,
        min_time_s=0.05,
        max_time_s=0.5,
    )
    for report, calls in (
        (experiment.baseline, baseline_calls),
        (experiment.candidate, candidate_calls),
    ):
        ran = report["profiler"]["calls"]
        assert ran is not None and 1 <= ran <= 5
        assert calls[0] == ran + 1  # the checked first call, then the profiled calls
        (diagnostic,) = profiler_diagnostics(report)
        assert diagnostic["message"].startswith(
            f"{ran} of 100 profiler calls fit in 0.25 s (each side's half of max_time_s=0.5 s), "
            "starting, stopping and reading the profiler included"
        )


def test_the_workload_exception_propagates_and_nothing_is_left_behind() -> None:
    error = RuntimeError("from the workload")
    calls = 0

    def failing() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise error

    with pytest.raises(RuntimeError) as caught:
        measure_workload(failing, metrics=["latency"], print_summary=False, **FAST)
    assert caught.value is error
    assert _get_current_dispatch_mode() is None

    def failing_in_flops() -> None:
        raise error

    with pytest.raises(RuntimeError) as caught:
        measure_workload(failing_in_flops, metrics=["operator_flops"], print_summary=False)
    assert caught.value is error
    assert _get_current_dispatch_mode() is None
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"device": "gpu"}, "not a torch device"),
        ({"metrics": ["latency", "speed"]}, "metrics must be"),
        ({"metrics": []}, "metrics must be"),
        ({"work_units": 0}, "positive"),
        ({"work_units": float("nan")}, "positive"),
        ({"work_unit": "samples per second"}, "work_unit must be"),
        ({"min_time_s": 2.0, "max_time_s": 1.0}, "min_time_s"),
        ({"min_blocks": 0}, "min_blocks"),
    ],
)
def test_bad_arguments_say_what_to_do(kwargs: dict[str, object], match: str) -> None:
    workload, _ = readme_workload()
    with pytest.raises(InvalidArgumentError, match=match):
        measure_workload(workload, print_summary=False, **kwargs)  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_missing_cuda_is_a_clear_error() -> None:
    workload, _ = readme_workload()
    with pytest.raises(InvalidArgumentError, match="no CUDA device"):
        measure_workload(workload, device="cuda", print_summary=False)


def test_not_a_callable() -> None:
    with pytest.raises(InvalidArgumentError, match="zero-argument callable"):
        measure_workload(42, print_summary=False)  # type: ignore[arg-type]


def test_strict_raises_with_the_report_when_a_requested_metric_is_missing() -> None:
    @torch.library.custom_op("torchscan_test::workload_op", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    x = torch.zeros(4)
    with pytest.raises(IncompleteMeasurementError) as caught:
        measure_workload(
            lambda: op(x), metrics=["operator_flops"], print_summary=False, strict=True
        )
    assert ("operator_flops", "partial") in caught.value.metrics
    assert caught.value.report["metrics"]["operator_flops"]["status"] == "partial"


def test_compiled_callable_gets_a_diagnostic_and_timing_runs_first() -> None:
    workload, _ = readme_workload()
    compiled = torch.compile(workload, backend="eager")
    report = measure_workload(
        compiled, metrics=["latency", "operator_flops"], print_summary=False, **FAST
    )
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes.count("compiled_callable") == 1
    assert report["metrics"]["latency"]["status"] == "complete"
    assert report["metrics"]["operator_flops"]["value"] == 1_048_576


def test_measure_peak_memory_is_exported() -> None:
    workload, _ = readme_workload()
    report = torchscan.measure_peak_memory(workload, device="cpu")
    assert report["tensor_memory_peak"]["value"] == 98_816
    assert torchscan.validate_report(report) == "peak_memory"


class _Terminal(io.StringIO):
    """A stderr that says it is interactive."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("interactive", "min_time_s", "expect_bar"),
    [(True, 2.2, True), (False, 2.2, False), (True, 0.05, False)],
    ids=["long-on-a-terminal", "long-not-a-terminal", "short-on-a-terminal"],
)
def test_progress_bar_only_for_long_measurements_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, interactive: bool, min_time_s: float, expect_bar: bool
) -> None:
    workload, _ = readme_workload()
    stream = _Terminal() if interactive else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    budget = {**FAST, "min_time_s": min_time_s, "max_time_s": min_time_s + 1.0}
    report = measure_workload(workload, metrics=["latency"], print_summary=False, **budget)
    written = stream.getvalue()
    if expect_bar:
        assert "torchscan: timing [" in written and "blocks" in written
        assert written.endswith("\r")  # the line is cleared once timing ends
    else:
        assert written == ""
    assert report["metrics"]["latency"]["status"] == "complete"
