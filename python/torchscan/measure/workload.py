"""``measure_workload``: honest numbers for a callable that does the work of your application.

The passes, their checks and the report they make are the benchmark pass pipeline
(:mod:`torchscan.measure.pipeline`), shared with ``compare_workloads``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, overload

from .._devices import resolve_device
from ..context import capture_context, current_flags
from ..errors import (
    DistributedMeasurementError,
    IncompleteMeasurementError,
    InvalidArgumentError,
    ReportMergeError,
)
from ..reports import BenchmarkReport, Diagnostic, DistributedBenchmarkReport
from .peak import (
    Declared,
    check_peak,
    hardware_peak_section,
    measure_hardware_peak,
    peak_dtype,
    rate_metrics,
)
from .pipeline import (
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
from .timing import run_timing

__all__ = ["DEFAULT_METRICS", "METRICS", "measure_workload"]

_RSS_IN_JOB = (
    "a fresh child process cannot join this job's process group (a workload that issues "
    "collectives would wait for ranks that never come); rank_process_rss_peak gives this "
    "rank's own process peak"
)


@overload
def measure_workload(
    workload: Callable[[], Any],
    *,
    device: str = ...,
    inputs: Any = ...,
    work_units: float = ...,
    work_unit: str = ...,
    metrics: Iterable[str] | None = ...,
    print_summary: bool = ...,
    strict: bool = ...,
    min_time_s: float = ...,
    max_time_s: float = ...,
    min_blocks: int = ...,
    warmup_time_s: float = ...,
    profiler_calls: int = ...,
    rss_timeout_s: float = ...,
    profiler_trace: str | os.PathLike[str] | None = ...,
    gather: Literal[False] = ...,
    rank_timeout_s: float = ...,
    peak: Mapping[str, Any] | None = ...,
) -> BenchmarkReport: ...


@overload
def measure_workload(
    workload: Callable[[], Any],
    *,
    device: str = ...,
    inputs: Any = ...,
    work_units: float = ...,
    work_unit: str = ...,
    metrics: Iterable[str] | None = ...,
    print_summary: bool = ...,
    strict: bool = ...,
    min_time_s: float = ...,
    max_time_s: float = ...,
    min_blocks: int = ...,
    warmup_time_s: float = ...,
    profiler_calls: int = ...,
    rss_timeout_s: float = ...,
    profiler_trace: str | os.PathLike[str] | None = ...,
    gather: bool,
    rank_timeout_s: float = ...,
    peak: Mapping[str, Any] | None = ...,
) -> BenchmarkReport | DistributedBenchmarkReport: ...


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
    gather: bool = False,
    rank_timeout_s: float = 300.0,
    peak: Mapping[str, Any] | None = None,
) -> BenchmarkReport | DistributedBenchmarkReport:
    """Measure ``workload`` (a zero-argument callable) on ``device``; return a ``BenchmarkReport``.

    ``inputs`` is recorded as metadata only (shapes, dtypes, devices), never passed to the callable.
    ``work_units`` declares the units of work one call completes, named ``work_unit`` (throughput is
    in ``<work_unit>/s``). ``metrics`` selects passes among ``latency`` (first call, warmed latency,
    throughput), ``operator_flops``, ``tensor_memory``, ``process_rss`` (a fresh child process;
    needs an importable workload), ``hardware_peak`` (see below) and ``profiler`` (a separate
    instrumented pass of ``profiler_calls`` calls, fewer when the pass, reading its events included,
    would end past ``max_time_s`` seconds: at least one runs, the report records both counts and a
    ``profiler_failed`` warning says how many fit); the default is the first three.
    ``profiler_trace`` (a ``str`` or ``os.PathLike``; needs ``profiler`` in ``metrics``) keeps
    torch.profiler's Chrome trace of every profiled call in that file (gzip-compressed when it ends
    in ``.gz``), written atomically as every output of the package; ``report["profiler"] ["trace"]``
    then names it (path as given, format, the calls it covers, size in bytes) and says it is
    instrumented: its times are slower than the timed blocks'. A trace that could not be written, or
    covers fewer calls than were profiled, is said by a ``profiler_failed`` warning, and the report
    never names a file that was not written. The timing budget (``min_time_s``, ``max_time_s``,
    ``min_blocks``, ``warmup_time_s``) is recorded in the report. The latency pass also records the
    machine's noise during the timed blocks (other processes' share of the CPU time, CPU steal, the
    timing thread's involuntary context switches, CPU frequency; see :mod:`torchscan.measure.noise`)
    and adds a ``noisy_machine`` diagnostic when one passes its threshold. ``print_summary=False``
    prints nothing; ``strict=True`` raises :class:`~torchscan.IncompleteMeasurementError` (carrying
    the report) when a requested metric is partial or unavailable. The thread count is recorded,
    never changed. The workload's own exception propagates unchanged, and no pass leaves a hook, a
    mode or a setting behind.

    How close to the hardware's limit: whenever the ``latency`` and ``operator_flops`` passes
    ran, ``metrics.achieved_flop_rate`` (``FLOP/s``) is the operator FLOPs of one call over the
    warmed latency (a lower bound when the FLOPs are partial). The ``hardware_peak`` pass, run
    after every other, measures the device's attainable dense matmul rate in the workload's main
    floating dtype (the first of ``context.dtypes``, else float32) and its large-copy bandwidth,
    timed as the latency pass times the workload, on the same device with the same threads, in
    about a second on a CPU; on CUDA it also records the theoretical peaks torch derives from
    the device's properties, labelled theoretical. ``peak={"flop_rate": ..., "bandwidth": ...,
    "source": "..."}`` declares a peak instead (FLOP/s and B/s, each in [1, 1e30]; either rate
    may be left out, ``source`` says where the numbers come from). Both are kept in
    ``report["hardware_peak"]``; ``metrics.flop_utilization`` and
    ``metrics.bandwidth_utilization`` (``ratio``) divide by the declared peak when there is one,
    else the measured one, and are unavailable, saying how to get one, without a peak.

    Numeric arguments are ``int`` or ``float`` (never ``bool``), finite and in range, or
    :class:`~torchscan.InvalidArgumentError` names the argument before the workload runs:
    ``work_units`` in [1e-9, 1e18] (so every throughput stays a finite, non-zero number);
    ``min_time_s`` and ``max_time_s`` in (0, 86400] seconds with ``min_time_s <= max_time_s``;
    ``warmup_time_s`` in [0, 86400]; ``rss_timeout_s`` (the process-RSS child's time limit) in
    (0, 86400]; ``min_blocks`` and ``profiler_calls`` integers from 1 to 1,000,000.
    ``profiler_trace`` is refused the same way when ``metrics`` leaves out ``profiler``, when it
    names a directory or a file in a directory that does not exist, or is not a path; ``peak``
    when it is not a dict of ``flop_rate`` and ``bandwidth`` (finite, positive numbers; at
    least one) and ``source`` (non-empty text) with no other key; with
    ``strict=True`` a trace not written (or covering fewer calls than profiled) is incomplete.

    In a ``torch.distributed`` job (an initialised default process group, or ``RANK`` and
    ``WORLD_SIZE`` above 1 as ``torchrun`` sets them, in which case a group is initialised from
    the environment and destroyed afterwards) every rank must call ``measure_workload`` with the
    same arguments. The report's ``context.distributed`` records rank, local rank, world size,
    backend and host; warm-up and every timed block are aligned across ranks by barriers
    outside the timed intervals (``timing.barrier_waits_s`` records this rank's wait before each
    block), so block *i* times the same calls on every rank; a workload that issues collectives
    of its own is timed one call per block. The profiler pass runs exactly ``profiler_calls``
    calls on every rank, the process-RSS child is unavailable (``metrics.rank_process_rss_peak``
    gives this rank's own process peak), and only rank 0 prints its summary. With
    ``gather=True`` every rank's report is gathered onto rank 0, which returns the merged
    ``distributed_benchmark`` report (see :func:`~torchscan.merge_rank_reports`) and prints its
    summary; the other ranks return their own report. A rank that dies, hangs or stops calling
    gives the others a :class:`~torchscan.DistributedMeasurementError` within
    ``rank_timeout_s`` seconds (in (0, 86400]; default 300) at the next barrier. Outside a
    job, ``gather`` changes nothing.
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
    declared = check_peak(peak)
    if not isinstance(gather, bool):
        raise InvalidArgumentError(f"gather must be True or False; got {gather!r}")
    timeout_s = check_rank_timeout(rank_timeout_s)

    from .ranks import detect_job

    job = detect_job(resolved, timeout_s)
    if job is None:
        report = _measure(
            workload,
            resolved,
            selected,
            budget,
            profiler_calls,
            rss_timeout_s,
            trace,
            inputs,
            work_units,
            work_unit,
            None,
            declared,
        )
        shown: BenchmarkReport | DistributedBenchmarkReport = report
    else:
        try:
            job.phase = "the check of the arguments"
            job.agree(
                {
                    "device_type": resolved.type,
                    "metrics": list(selected),
                    "work_unit": work_unit,
                    "min_time_s": budget.min_time_s,
                    "max_time_s": budget.max_time_s,
                    "min_blocks": budget.min_blocks,
                    "warmup_time_s": budget.warmup_time_s,
                    "profiler_calls": profiler_calls,
                    "profiler_trace": trace is not None,
                    "gather": gather,
                    "peak": declared is not None,
                    "strict": strict,
                    "work_units": float(work_units),
                    "workload": getattr(workload, "__qualname__", None),
                }
            )
            if strict and "process_rss" in selected:
                raise InvalidArgumentError(
                    "strict=True with 'process_rss' in metrics always fails in a distributed "
                    f"job: {_RSS_IN_JOB}; leave process_rss out"
                )
            report = _measure(
                workload,
                resolved,
                selected,
                budget,
                profiler_calls,
                rss_timeout_s,
                trace,
                inputs,
                work_units,
                work_unit,
                job,
                declared,
            )
            shown = _gather(report, job) if gather else report
        except (DistributedMeasurementError, InvalidArgumentError, ReportMergeError):
            raise
        except BaseException as error:
            # The workload's own exception propagates unchanged; a note says where it came
            # (Python 3.11 and later show notes with the traceback).
            add_note = getattr(error, "add_note", None)
            if add_note is not None:
                add_note(
                    f"torchscan: raised on {job.describe()} during {job.phase} of "
                    "measure_workload; when it comes from a collective, another rank may have "
                    "died or hung"
                )
            raise
        finally:
            job.close()
    if print_summary and (job is None or job.rank == 0):
        from ..reports.validation import format_summary

        sys.stdout.write(format_summary(shown))
        sys.stdout.flush()
    if strict:
        try:
            raise_if_incomplete(report, selected, trace_requested=trace is not None)
        except IncompleteMeasurementError as error:
            if shown is report:
                raise
            # Rank 0 of a gathered job: the error carries the merged report, nothing is lost.
            raise IncompleteMeasurementError(shown, error.metrics) from None
    return shown


def check_rank_timeout(rank_timeout_s: Any) -> float:
    """``rank_timeout_s`` checked: a number of seconds in (0, 86400]."""
    from .. import _arguments

    return _arguments.check_real(
        "rank_timeout_s",
        rank_timeout_s,
        minimum=0.0,
        maximum=86400.0,
        minimum_open=True,
        meaning="seconds a rank waits for the others at a barrier",
    )


def _measure(
    workload: Callable[[], Any],
    resolved: Any,
    selected: tuple[str, ...],
    budget: Any,
    profiler_calls: int,
    rss_timeout_s: float,
    trace: str | None,
    inputs: Any,
    work_units: float,
    work_unit: str,
    job: Any,
    declared: Declared | None = None,
) -> BenchmarkReport:
    """Every requested pass on this process; ``job`` aligns them across ranks when given.

    ``declared`` is the caller's checked ``peak=``; the ``hardware_peak`` pass runs last, after
    the context names the workload's dtypes.
    """
    flags = current_flags()
    passes = Passes([])
    run = None
    aligned = None
    if "latency" in selected:
        if job is None:
            run = run_timing(workload, resolved, budget)
        else:
            from .ranks import run_aligned_timing

            aligned = run_aligned_timing(workload, resolved, budget, job)
            run = aligned.run
    clock = None
    if aligned is not None:
        clock = (
            f"{aligned.clock_method}; blocks aligned across {job.world_size} ranks by a barrier "
            "before each, outside the timed interval"
        )
    add_timing(passes, run, float(work_units), work_unit, clock)

    def announce(name: str) -> None:
        if job is not None:
            job.phase = name

    run_later_passes(
        passes,
        workload,
        resolved,
        selected,
        profiler_calls,
        rss_timeout_s,
        # In a job every rank profiles the same calls: a time limit could stop them apart.
        profiler_time_s=budget.max_time_s if job is None else None,
        profiler_budget=None if job is None else f"profiler_calls={profiler_calls}",
        profiler_trace=trace,
        rss_unavailable=None if job is None else _RSS_IN_JOB,
        on_pass=announce,
    )
    context = capture_context(resolved, ranked_dtypes(passes, inputs), flags=flags, ranked=True)
    if job is not None:
        context["distributed"] = job.context()
    measured = None
    peak_diagnostics: list[Diagnostic] = []
    if "hardware_peak" in selected:
        announce("the hardware peak pass")
        measured = measure_hardware_peak(
            resolved, peak_dtype(context["dtypes"]), diagnostics=peak_diagnostics
        )
    report = assemble_report(
        passes,
        name=getattr(workload, "__qualname__", None),
        context=context,
        selected=selected,
        budget=budget,
        inputs=inputs,
        work_units=work_units,
        work_unit=work_unit,
    )
    report["diagnostics"].extend(peak_diagnostics)
    hardware_peak = hardware_peak_section(declared, measured)
    if hardware_peak is not None:
        report["hardware_peak"] = hardware_peak
    # The bytes of the operator FLOPs pass; intensity and bandwidth utilization follow from them.
    report["metrics"]["operator_bytes"] = passes.values["operator_bytes"]
    for key, metric in rate_metrics(report["metrics"], hardware_peak).items():
        report["metrics"][key] = metric  # type: ignore[literal-required]
    if job is not None:
        from ..reports import metrics as _metrics
        from .ranks import rank_process_rss_peak

        if aligned is not None and report["timing"] is not None:
            report["timing"]["barrier_waits_s"] = aligned.barrier_waits_s
            if aligned.collectives_per_call is not None:
                report["timing"]["collectives_per_call"] = aligned.collectives_per_call
        peak = rank_process_rss_peak()
        scope = "this rank's process: lifetime, imports and set-up included"
        method = "getrusage(RUSAGE_SELF).ru_maxrss at the end of the measurement"
        report["metrics"]["rank_process_rss_peak"] = (
            _metrics.complete(peak, "B", scope, method)
            if peak is not None
            else _metrics.unavailable("B", scope, method, "getrusage is not available here")
        )
        job.phase = "the barrier after the passes"
        job.barrier()
    return report


def _gather(report: BenchmarkReport, job: Any) -> BenchmarkReport | DistributedBenchmarkReport:
    """Every rank's report gathered; rank 0 gets the merged report, the others their own."""
    job.phase = "the gather of the reports"
    texts = job.all_gather_text(json.dumps(report))
    if job.rank != 0:
        return report
    from ..reports.merge import merge_rank_reports

    return merge_rank_reports(texts)
