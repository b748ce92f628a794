"""``timing.block_starts_s``: when each timed block started, written by measure_workload and
compare_workloads, checked by the validator, and used by the comparison of reports measured
apart only for each report's timed span."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import torch

import torchscan
from torchscan import compare_benchmarks, compare_workloads, measure_workload
from torchscan.measure.timing import BlockLog, TimingBudget, TimingRun, run_timing
from torchscan.reports import BenchmarkReport, TimingEvidence

torch.set_num_threads(1)
FAST: dict[str, Any] = {
    "min_time_s": 0.05,
    "max_time_s": 0.5,
    "min_blocks": 5,
    "warmup_time_s": 0.01,
    "print_summary": False,
}


def matmul() -> Any:
    torch.manual_seed(0)
    a = torch.randn(64, 64)
    b = torch.randn(64, 64)
    return lambda: a @ b


def assert_blocks_in_time_order(starts: list[float], durations: list[float]) -> None:
    """The invariants the validator checks, written out: one start per block, first 0, order."""
    assert len(starts) == len(durations)
    assert starts[0] == 0.0
    for index in range(1, len(starts)):
        end = starts[index - 1] + durations[index - 1]
        assert starts[index] >= end - 1e-9 * max(abs(starts[index]), abs(end))
        assert starts[index] > starts[index - 1]


def timing_of(report: BenchmarkReport) -> TimingEvidence:
    timing = report["timing"]
    assert timing is not None
    return timing


def starts_of(timing: TimingEvidence) -> list[float]:
    starts = timing.get("block_starts_s")
    assert starts is not None
    return starts


def test_a_timing_run_keeps_each_block_start_within_its_wall_time() -> None:
    budget = TimingBudget(min_time_s=0.05, max_time_s=0.5, min_blocks=5, warmup_time_s=0.01)
    before = time.perf_counter()
    run = run_timing(matmul(), torch.device("cpu"), budget)
    wall_s = time.perf_counter() - before
    assert len(run.block_durations_s) >= 5
    assert_blocks_in_time_order(run.block_starts_s, run.block_durations_s)
    assert run.block_starts_s[-1] + run.block_durations_s[-1] <= wall_s


def test_measure_workload_writes_block_starts_that_validate() -> None:
    before = time.perf_counter()
    report = measure_workload(matmul(), work_units=1, metrics=["latency"], **FAST)
    wall_s = time.perf_counter() - before
    timing = timing_of(report)
    starts, durations = starts_of(timing), timing["block_durations_s"]
    assert_blocks_in_time_order(starts, durations)
    assert starts[-1] + durations[-1] <= wall_s
    assert torchscan.validate_report(report) == "benchmark"
    # The JSON text carries the field right after the durations.
    text = json.dumps(report)
    assert text.index('"block_durations_s"') < text.index('"block_starts_s"')
    assert text.index('"block_starts_s"') < text.index('"timer_overhead_s"')


def test_without_latency_there_is_no_timing_and_no_starts() -> None:
    report = measure_workload(matmul(), work_units=1, metrics=["operator_flops"], **FAST)
    assert report["timing"] is None
    assert torchscan.validate_report(report) == "benchmark"


def test_each_side_of_an_experiment_counts_its_starts_from_its_own_first_block() -> None:
    workload = matmul()
    experiment = compare_workloads(
        workload, workload, rtol=0, atol=0, metrics=["latency"], seed=3, **FAST
    )
    base, cand = timing_of(experiment.baseline), timing_of(experiment.candidate)
    assert_blocks_in_time_order(starts_of(base), base["block_durations_s"])
    assert_blocks_in_time_order(starts_of(cand), cand["block_durations_s"])
    # The other side's blocks ran in each side's gaps: all of them but perhaps the first and the
    # last fall between this side's first start and last end.
    for own, other in ((base, cand), (cand, base)):
        span_s = starts_of(own)[-1] + own["block_durations_s"][-1]
        idle_s = span_s - sum(own["block_durations_s"])
        inner_s = sum(other["block_durations_s"][1:-1])
        assert idle_s >= inner_s * (1 - 1e-9)
    for report in (experiment.baseline, experiment.candidate):
        assert torchscan.validate_report(report) == "benchmark"


def without_starts(report: BenchmarkReport) -> BenchmarkReport:
    stripped = copy.deepcopy(report)
    timing = stripped["timing"]
    assert timing is not None
    del timing["block_starts_s"]
    return stripped


def without_noise(report: BenchmarkReport) -> BenchmarkReport:
    """The report as written before noise was recorded: no noise metrics, no noisy_machine."""
    stripped: Any = copy.deepcopy(report)
    for key in (
        "machine_other_cpu_ratio",
        "cpu_steal_ratio",
        "involuntary_context_switches",
        "cpu_frequency",
    ):
        stripped["metrics"].pop(key, None)
    stripped["diagnostics"] = [d for d in stripped["diagnostics"] if d["code"] != "noisy_machine"]
    assert torchscan.validate_report(stripped) == "benchmark"
    return stripped  # type: ignore[no-any-return]


def test_paired_comparisons_ignore_starts_and_apart_ones_use_only_the_span() -> None:
    workload = matmul()
    experiment = compare_workloads(
        workload, workload, rtol=0, atol=0, metrics=["latency"], seed=5, **FAST
    )
    baseline, candidate = experiment.baseline, experiment.candidate
    stripped = (without_starts(baseline), without_starts(candidate))
    assert torchscan.validate_report(stripped[0]) == "benchmark"
    # Reports as written before starts and noise existed, with and without starts added back:
    # the same paired comparison. (With noise metrics, the switch rate of a noisy side is per
    # second of the span, which starts make exact.)
    old = tuple(without_noise(report) for report in stripped)
    old_with_starts = tuple(without_noise(report) for report in (baseline, candidate))
    with_field = compare_benchmarks(*old_with_starts, seed=1, paired=True)
    assert with_field == compare_benchmarks(*old, seed=1, paired=True)
    assert "block_starts_s" not in json.dumps(with_field)
    # What compare_workloads returned is what its reports give.
    assert experiment.comparison == compare_benchmarks(
        baseline, candidate, check=experiment.check, seed=5, paired=True
    )
    # Apart, a report's span runs from its first block's start to its last block's end, or is
    # the sum of its blocks without starts: these reports are far too short either way, and the
    # reason gives the span each way.
    timing = baseline["timing"]
    assert timing is not None and timing.get("block_starts_s") is not None
    starts, durations = timing["block_starts_s"], timing["block_durations_s"]
    assert starts is not None
    for reports, span in (
        ((baseline, candidate), starts[-1] + durations[-1]),
        (stripped, sum(durations)),
    ):
        apart = compare_benchmarks(*reports)
        latency = apart["deltas"][0]
        assert latency["verdict"] == "inconclusive"
        assert latency["ratio_ci_low"] is None and latency["ratio_ci_high"] is None
        assert latency["reason"] is not None
        assert f"{span:.3f} s of timed blocks, less than 0.9 s" in latency["reason"]


def test_a_block_read_as_zero_nanoseconds_keeps_the_next_start_after_it() -> None:
    run = TimingRun(first_call_s=1e-6, warmup_calls=1, calls_per_block=1, timer_overhead_s=0.0)
    log = BlockLog(run)
    # perf_counter_ns readings: a block of 0 ns (recorded as 1 ns), then one read at the same
    # instant, then ordinary ones.
    log.add(5_000, 1)
    log.add(5_000, 250)
    log.add(6_000, 1_000)
    log.add(7_000, 3)
    # Nanoseconds, converted as the timing loop converts them.
    assert run.block_durations_s == [ns * 1e-9 for ns in (1, 250, 1_000, 3)]
    assert run.block_starts_s == [ns * 1e-9 for ns in (0, 1, 1_000, 2_000)]
    assert_blocks_in_time_order(run.block_starts_s, run.block_durations_s)
