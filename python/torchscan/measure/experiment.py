"""``compare_workloads``: a checked A/B experiment in one run, timed in interleaved blocks.

The baseline and the candidate are called once each from the same random-number state and their
outputs checked; then both are timed in rounds of one block each, every second round in reverse
order (A B, B A, ...), so that drift of a shared machine weighs on both alike, until the latency
interval is narrow enough; then the core compares the two reports round by round, with the check.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._devices import resolve_device
from .._values import floating_dtypes
from ..context import capture_context, current_flags
from ..errors import InvalidArgumentError
from ..reports import BenchmarkComparison, BenchmarkReport, OutputCheck, Verdict
from ..reports.comparison import check_comparison_options, compare_benchmarks
from .output_check import check_outputs, check_tolerance
from .pipeline import (
    Passes,
    add_timing,
    assemble_report,
    check_budget,
    check_metrics,
    check_profiler_calls,
    check_rss_timeout,
    check_work,
    ranked_dtypes,
    run_later_passes,
)
from .timing import (
    TimingRun,
    run_interleaved_timing,
    synchronizer,
    timed_call,
    timer_overhead_s,
)

__all__ = ["Experiment", "compare_workloads"]


@dataclass(frozen=True)
class Experiment:
    """What :func:`compare_workloads` returns: two benchmark reports, the check, the comparison.

    Each field is a plain, JSON-serializable report (``json.dumps`` it to keep the evidence);
    ``verdict`` is the comparison's overall verdict.
    """

    baseline: BenchmarkReport
    candidate: BenchmarkReport
    check: OutputCheck
    comparison: BenchmarkComparison

    @property
    def verdict(self) -> Verdict:
        """The latency verdict of the comparison (``withheld`` when the check failed)."""
        return self.comparison["verdict"]


@contextmanager
def _same_random_state(device: Any) -> Iterator[None]:
    """Run a block from the current random-number state and put that state back afterwards."""
    import torch

    if device.type == "cuda":
        with torch.random.fork_rng(devices=[device.index], device_type="cuda"):
            yield
    elif device.type == "mps":
        with torch.random.fork_rng(device_type="mps"):
            yield
    else:
        with torch.random.fork_rng(devices=[]):
            yield


def _precise_enough(
    target_half_width: float, confidence_level: float
) -> Callable[[list[TimingRun]], bool]:
    """Whether the latency interval of the rounds so far is expected to be narrow enough.

    The expected half-width of the interval of the median of per-round log ratios is
    ``z * 1.2533 * 1.4826 * MAD / sqrt(rounds)``: the standard error of a median, with the spread
    estimated robustly. The verdict itself comes from the core's bootstrap; this only decides
    when timing can stop.
    """
    # 0.5 + level / 2 rounds to 1.0 for the levels closest to 1, where inv_cdf is undefined.
    z = statistics.NormalDist().inv_cdf(min(0.5 + confidence_level / 2, math.nextafter(1.0, 0.0)))

    def precise_enough(runs: list[TimingRun]) -> bool:
        baseline, candidate = runs
        log_ratios = [
            math.log(
                (candidate_s / candidate.calls_per_block) / (baseline_s / baseline.calls_per_block)
            )
            for baseline_s, candidate_s in zip(
                baseline.block_durations_s, candidate.block_durations_s, strict=True
            )
        ]
        spread = _core.median_absolute_deviation(log_ratios)
        half_width = z * 1.2533 * 1.4826 * spread / math.sqrt(len(log_ratios))
        return half_width <= target_half_width

    return precise_enough


def _check_callable(side: str, workload: Any) -> None:
    if not callable(workload):
        raise InvalidArgumentError(
            f"{side} must be a zero-argument callable; got {type(workload).__name__}"
        )


def compare_workloads(
    baseline: Callable[[], Any],
    candidate: Callable[[], Any],
    *,
    rtol: float,
    atol: float,
    equal_nan: bool = False,
    check_dtype: bool = True,
    device: str = "cpu",
    inputs: Any = None,
    work_units: float = 1,
    work_unit: str = "calls",
    metrics: Iterable[str] | None = None,
    print_summary: bool = True,
    min_time_s: float = 2.0,
    max_time_s: float = 10.0,
    min_blocks: int = 20,
    warmup_time_s: float = 0.2,
    min_effect: float = 0.02,
    confidence_level: float = 0.95,
    bootstrap_resamples: int = 2000,
    seed: int = 0,
    profiler_calls: int = 100,
    rss_timeout_s: float = 120.0,
) -> Experiment:
    """Check and time a baseline and a candidate callable side by side; return an ``Experiment``.

    Both are zero-argument callables doing the same work (``work_units`` of ``work_unit`` per
    call) on ``device``. First each is called once, from the same random-number state (restored
    afterwards), and the outputs go through :func:`~torchscan.check_outputs` with ``rtol``,
    ``atol``, ``equal_nan`` and ``check_dtype``; these calls are also each side's first call,
    timed alone. Then both are warmed up and timed in interleaved rounds of one block each
    (blocks of about ``min_time_s / (4 * min_blocks)``), in pairs of rounds whose order is
    reversed (A B, B A or B A, A B, drawn from ``seed``), so that drift of a shared machine weighs
    on both alike.
    Rounds continue until ``min_time_s`` (both sides together) and ``min_blocks`` rounds are
    reached and the latency interval is expected to be no wider than ``min_effect / 2`` on each
    side, or until ``max_time_s`` has passed: a quiet machine stops early, a noisy one is timed
    longer. Each report's ``timing.block_starts_s`` counts from that side's own first block
    (so each starts at 0.0); the other side's blocks fall in the gaps between them. Both reports
    carry the same noise metrics, read at the start and end of the one interleaved phase. The other
    passes of ``metrics`` (as in :func:`~torchscan.measure_workload`; the
    default is latency, operator FLOPs and tensor memory) run afterwards, side by side; the
    profiler pass of each side stays within half of ``max_time_s``, so both stay within it. The
    context is captured once, for both reports.

    Finally :func:`~torchscan.compare_benchmarks` compares the reports round by round
    (``paired=True``: the latency interval is that of the median of per-round ratios) with the
    check, ``min_effect``, ``confidence_level``, ``bootstrap_resamples`` and ``seed``; a failed
    check withholds every delta. ``print_summary=False`` prints nothing; otherwise the
    comparison's text summary is printed. The thread count is recorded, never changed. A
    callable's own exception propagates unchanged. Bad arguments raise
    :class:`~torchscan.InvalidArgumentError` before either callable runs.

    Numeric arguments have the ranges of :func:`~torchscan.measure_workload` (``work_units``,
    ``min_time_s``, ``max_time_s``, ``min_blocks``, ``warmup_time_s``, ``profiler_calls``,
    ``rss_timeout_s``), of :func:`~torchscan.check_outputs` (``rtol``, ``atol``) and of
    :func:`~torchscan.compare_benchmarks` (``confidence_level``, ``bootstrap_resamples``,
    ``seed``, ``min_effect``).
    """
    _check_callable("baseline", baseline)
    _check_callable("candidate", candidate)
    resolved = resolve_device(device)
    selected = check_metrics(metrics)
    if "hardware_peak" in selected:
        raise InvalidArgumentError(
            "compare_workloads does not run the hardware_peak pass (a peak belongs to a "
            "machine, not to a change); measure it with measure_workload(..., "
            "metrics=[..., 'hardware_peak'])"
        )
    check_work(work_units, work_unit)
    budget = check_budget(min_time_s, max_time_s, min_blocks, warmup_time_s)
    check_profiler_calls(profiler_calls)
    check_rss_timeout(rss_timeout_s)
    check_tolerance("rtol", rtol)
    check_tolerance("atol", atol)
    check_comparison_options(confidence_level, bootstrap_resamples, seed, min_effect)

    flags = current_flags()
    sync = synchronizer(resolved)
    overhead_s = timer_overhead_s()
    with _same_random_state(resolved):
        baseline_first_s, baseline_output = timed_call(baseline, sync)
    with _same_random_state(resolved):
        candidate_first_s, candidate_output = timed_call(candidate, sync)
    check = check_outputs(
        baseline_output,
        candidate_output,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_dtype=check_dtype,
    )
    # The precision each result came in (the context's dtypes without an operator FLOPs pass).
    output_dtypes = [floating_dtypes(baseline_output), floating_dtypes(candidate_output)]
    del baseline_output, candidate_output

    sides = (baseline, candidate)
    passes = [Passes([]) for _ in sides]
    for side_passes, dtypes in zip(passes, output_dtypes, strict=True):
        side_passes.output_dtypes = dtypes
    if "latency" in selected:
        runs = run_interleaved_timing(
            sides,
            resolved,
            budget,
            first_calls_s=[baseline_first_s, candidate_first_s],
            overhead_s=overhead_s,
            order_seed=seed,
            until=_precise_enough(min_effect / 2, confidence_level),
        )
        for side_passes, run in zip(passes, runs, strict=True):
            add_timing(side_passes, run, float(work_units), work_unit)
    else:
        for side_passes in passes:
            add_timing(side_passes, None, float(work_units), work_unit)
    for side_passes, workload in zip(passes, sides, strict=True):
        run_later_passes(
            side_passes,
            workload,
            resolved,
            selected,
            profiler_calls,
            rss_timeout_s,
            profiler_time_s=budget.max_time_s / 2,
            profiler_budget=(
                f"{budget.max_time_s / 2:g} s (each side's half of max_time_s="
                f"{budget.max_time_s:g} s)"
            ),
        )

    # Each side its own dtypes: the precision each computed in (the change may be the point).
    contexts = [
        capture_context(resolved, ranked_dtypes(side_passes, inputs), flags=flags, ranked=True)
        for side_passes in passes
    ]
    baseline_report, candidate_report = (
        assemble_report(
            side_passes,
            name=getattr(workload, "__qualname__", None),
            context=context,
            selected=selected,
            budget=budget,
            inputs=inputs,
            work_units=work_units,
            work_unit=work_unit,
        )
        for side_passes, workload, context in zip(passes, sides, contexts, strict=True)
    )
    comparison = compare_benchmarks(
        baseline_report,
        candidate_report,
        check=check,
        confidence_level=confidence_level,
        bootstrap_resamples=bootstrap_resamples,
        seed=seed,
        min_effect=min_effect,
        paired="latency" in selected,
    )
    if print_summary:
        from ..reports.validation import format_summary

        sys.stdout.write(format_summary(comparison))
        sys.stdout.flush()
    return Experiment(baseline_report, candidate_report, check, comparison)
