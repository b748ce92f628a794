"""``measure_workload``: honest numbers for a callable that does the work of your application.

The passes, their checks and the report they make are the benchmark pass pipeline
(:mod:`torchscan._pipeline`), shared with ``compare_workloads``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from ._devices import resolve_device
from ._pipeline import (
    DEFAULT_METRICS,
    METRICS,
    Passes,
    add_timing,
    assemble_report,
    check_budget,
    check_metrics,
    check_profiler_calls,
    check_profiler_trace,
    check_rss_timeout,
    check_work,
    raise_if_incomplete,
    ranked_dtypes,
    run_later_passes,
)
from .context import capture_context, current_flags
from .errors import InvalidArgumentError
from .reports import BenchmarkReport
from .timing import run_timing

__all__ = ["DEFAULT_METRICS", "METRICS", "measure_workload"]


def measure_workload(
    workload: Callable[[], Any],
    *,
    device: str = "cpu",
    inputs: Any = None,
    work_units: float = 1,
    work_unit: str = "calls",
    metrics: Iterable[str] | None = None,
    print_summary: bool = True,
    strict: bool = False,
    min_time_s: float = 1.0,
    max_time_s: float = 10.0,
    min_blocks: int = 20,
    warmup_time_s: float = 0.1,
    profiler_calls: int = 100,
    rss_timeout_s: float = 120.0,
    profiler_trace: str | os.PathLike[str] | None = None,
) -> BenchmarkReport:
    """Measure ``workload`` (a zero-argument callable) on ``device``; return a ``BenchmarkReport``.

    ``inputs`` is recorded as metadata only (shapes, dtypes, devices), never passed to the
    callable. ``work_units`` declares the units of work one call completes, named ``work_unit``
    (throughput is in ``<work_unit>/s``). ``metrics`` selects passes among ``latency`` (first
    call, warmed latency, throughput), ``operator_flops``, ``tensor_memory``, ``process_rss``
    (a fresh child process; needs an importable workload) and ``profiler`` (a separate
    instrumented pass of ``profiler_calls`` calls, fewer when the pass, reading its events
    included, would end past ``max_time_s`` seconds: at least one runs, the report records both
    counts and a ``profiler_failed`` warning says how many fit); the default is the first three.
    ``profiler_trace`` (a ``str`` or ``os.PathLike``; needs ``profiler`` in ``metrics``) keeps
    torch.profiler's Chrome trace of every profiled call in that file (gzip-compressed when it
    ends in ``.gz``), written atomically as every output of the package; ``report["profiler"]
    ["trace"]`` then names it (path as given, format, the calls it covers, size in bytes) and
    says it is instrumented: its times are slower than the timed blocks'. A trace that could not
    be written, or covers fewer calls than were profiled, is said by a ``profiler_failed``
    warning, and the report never names a file that was not written.
    The timing
    budget (``min_time_s``, ``max_time_s``, ``min_blocks``, ``warmup_time_s``) is recorded in the
    report. The latency pass also records the machine's noise during the timed blocks (other
    processes' share of the CPU time, CPU steal, the timing thread's involuntary context switches,
    CPU frequency; see :mod:`torchscan.noise`) and adds a ``noisy_machine`` diagnostic when one
    passes its threshold. ``print_summary=False`` prints nothing; ``strict=True`` raises
    :class:`~torchscan.IncompleteMeasurementError` (carrying the report) when a requested metric
    is partial or unavailable. The thread count is recorded, never changed. The workload's own
    exception propagates unchanged, and no pass leaves a hook, a mode or a setting behind.

    Numeric arguments are ``int`` or ``float`` (never ``bool``), finite and in range, or
    :class:`~torchscan.InvalidArgumentError` names the argument before the workload runs:
    ``work_units`` in [1e-9, 1e18] (so every throughput stays a finite, non-zero number);
    ``min_time_s`` and ``max_time_s`` in (0, 86400] seconds with ``min_time_s <= max_time_s``;
    ``warmup_time_s`` in [0, 86400]; ``rss_timeout_s`` (the process-RSS child's time limit) in
    (0, 86400]; ``min_blocks`` and ``profiler_calls`` integers from 1 to 1,000,000.
    ``profiler_trace`` is refused the same way when ``metrics`` leaves out ``profiler``, when it
    names a directory or a file in a directory that does not exist, or is not a path; with
    ``strict=True`` a trace not written (or covering fewer calls than profiled) is incomplete.
    """
    if not callable(workload):
        raise InvalidArgumentError(
            f"workload must be a zero-argument callable; got {type(workload).__name__}"
        )
    resolved = resolve_device(device)
    selected = check_metrics(metrics)
    check_work(work_units, work_unit)
    budget = check_budget(min_time_s, max_time_s, min_blocks, warmup_time_s)
    check_profiler_calls(profiler_calls)
    check_rss_timeout(rss_timeout_s)
    trace = check_profiler_trace(profiler_trace, selected)

    flags = current_flags()
    passes = Passes([])
    run = run_timing(workload, resolved, budget) if "latency" in selected else None
    add_timing(passes, run, float(work_units), work_unit)
    run_later_passes(
        passes,
        workload,
        resolved,
        selected,
        profiler_calls,
        rss_timeout_s,
        profiler_time_s=budget.max_time_s,
        profiler_trace=trace,
    )
    report = assemble_report(
        passes,
        name=getattr(workload, "__qualname__", None),
        context=capture_context(resolved, ranked_dtypes(passes, inputs), flags=flags, ranked=True),
        selected=selected,
        budget=budget,
        inputs=inputs,
        work_units=work_units,
        work_unit=work_unit,
    )
    if print_summary:
        from .validation import format_summary

        sys.stdout.write(format_summary(report))
        sys.stdout.flush()
    if strict:
        raise_if_incomplete(report, selected, trace_requested=trace is not None)
    return report
