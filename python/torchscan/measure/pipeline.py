"""The benchmark pass pipeline: argument checks, the passes and the report they make.

``measure_workload`` (:mod:`torchscan.measure.workload`) runs one workload through it and
``compare_workloads`` (:mod:`torchscan.measure.experiment`) two, their timing interleaved. Pass
order (ARCHITECTURE section 5): timing, then the process-RSS child, then the profiler, then the
dispatch-mode passes (operator FLOPs, tensor memory): while a dispatch mode is active,
``torch.compile``d code runs eagerly (see ``_compiled``), so what is timed is the compiled code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from .. import _arguments, _core
from .._values import describe, floating_dtypes
from ..errors import IncompleteMeasurementError, InvalidArgumentError
from ..reports import (
    BenchmarkMetrics,
    BenchmarkReport,
    Context,
    Diagnostic,
    MetricResult,
    OperatorFlops,
    PassName,
    ProfilerPass,
    TimingEvidence,
    TimingSettings,
    ValueMeta,
)
from ..reports import metrics as _metrics
from .noise import noise_metrics, noisy_machine_diagnostic, unavailable_noise_metrics
from .profiling import not_requested_profiler, run_profiler
from .timing import TimingBudget, TimingRun

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "Passes",
    "add_timing",
    "assemble_report",
    "check_budget",
    "check_metrics",
    "check_profiler_calls",
    "check_profiler_trace",
    "check_rss_timeout",
    "check_work",
    "raise_if_incomplete",
    "ranked_dtypes",
    "run_later_passes",
]

#: Every pass ``metrics=`` can select.
METRICS = (
    "latency",
    "operator_flops",
    "tensor_memory",
    "process_rss",
    "profiler",
    "hardware_peak",
)
#: The passes run when ``metrics`` is not given.
DEFAULT_METRICS = ("latency", "operator_flops", "tensor_memory")

_PASS_NAMES: tuple[PassName, ...] = (
    "latency",
    "operator_flops",
    "tensor_memory",
    "process_rss",
    "profiler",
    "hardware_peak",
)
NOT_REQUESTED = "not requested"
_LATENCY_SCOPE = "per-call mean of each timed block; block averages, not request percentiles"
_FIRST_CALL_SCOPE = "one call of the workload, timed alone, including all lazy work"
_THROUGHPUT_SCOPE = "sustained over all timed blocks"
_FLOPS_SCOPE = "operators dispatched by one call"
_FLOPS_METHOD = (
    "torch dispatch mode with per-operator FLOP formulas (FlopCounterMode conventions: "
    "2 FLOPs per multiply-accumulate, the bias add not counted)"
)
_RSS_SCOPES = {
    "process_rss_peak": "fresh child process: lifetime",
    "process_rss_workload_peak": "fresh child process: workload calls",
    "process_rss_baseline": "fresh child process: after imports and set-up",
}
_RSS_METHOD = "peak resident set size of a fresh child process running the workload"
_NOISE_WARNING = 0.10
_NOISE_HIGH = 0.25


def check_metrics(metrics: Iterable[str] | None) -> tuple[str, ...]:
    """The requested metrics, checked (``None``: the default set)."""
    if metrics is None:
        return DEFAULT_METRICS
    if isinstance(metrics, str):
        metrics = [metrics]
    chosen = list(dict.fromkeys(metrics))
    unknown = [name for name in chosen if name not in METRICS]
    if unknown or not chosen:
        raise InvalidArgumentError(
            f"metrics must be a non-empty selection of {', '.join(METRICS)}; "
            f"got {unknown or chosen}"
        )
    return tuple(name for name in METRICS if name in chosen)


def _input_metas(inputs: Any) -> list[ValueMeta]:
    if inputs is None:
        return []
    if isinstance(inputs, (tuple, list)):
        return [describe(item) for item in inputs]
    return [describe(inputs)]


def _timing_metrics(
    run: TimingRun, work_units: float, work_unit: str, clock: str | None = None
) -> tuple[dict[str, MetricResult], list[Diagnostic]]:
    timing = _core.block_timing(run.block_durations_s, run.calls_per_block)
    latency_s, iqr_s = timing.latency_s, timing.latency_iqr_s
    blocks = len(run.block_durations_s)
    clock = clock or "time.perf_counter_ns; device synchronised at block edges"
    method = (
        f"median of per-call means of {blocks:,} timed blocks of {run.calls_per_block:,} calls "
        f"({clock})"
    )
    throughput = _core.throughput(run.block_durations_s, run.calls_per_block, work_units, work_unit)
    metrics = {
        "first_call": _metrics.complete(
            run.first_call_s,
            "s",
            _FIRST_CALL_SCOPE,
            "wall clock (time.perf_counter_ns) around the first call, timed alone",
        ),
        "latency": _metrics.complete(latency_s, "s", _LATENCY_SCOPE, method),
        "latency_iqr": _metrics.complete(
            iqr_s,
            "s",
            "spread of per-call block means",
            "interquartile range of per-call block means (linear interpolation)",
        ),
        "throughput": _metrics.complete(
            throughput.value,
            throughput.unit,
            _THROUGHPUT_SCOPE,
            "work_units x calls / timed seconds (sustained, all timed blocks)",
        ),
    }
    diagnostics: list[Diagnostic] = []
    ratio = iqr_s / latency_s if latency_s > 0 else 0.0
    if ratio >= _NOISE_HIGH:
        diagnostics.append(
            {
                "code": "high_timing_noise",
                "severity": "warning",
                "metric": "latency",
                "message": (
                    f"latency IQR is {ratio:.0%} of the median: differences below that are "
                    "not meaningful on this machine; close other work or time longer"
                ),
            }
        )
    elif ratio >= _NOISE_WARNING:
        diagnostics.append(
            {
                "code": "timing_noise",
                "severity": "warning",
                "metric": "latency",
                "message": f"latency IQR is {ratio:.0%} of the median: timings are noisy",
            }
        )
    if run.noise is not None:
        noise = noise_metrics(run.noise)
        metrics.update(noise)
        noisy = noisy_machine_diagnostic(noise, run.noise.elapsed_s)
        if noisy is not None:
            diagnostics.append(noisy)
    else:
        metrics.update(unavailable_noise_metrics("the timing run recorded no noise readings"))
    if run.stopped_by_max_time:
        diagnostics.append(
            {
                "code": "few_blocks",
                "severity": "warning",
                "metric": "latency",
                "message": (
                    f"only {blocks} blocks fit in max_time_s; the latency statistics rest on "
                    "fewer blocks than min_blocks asked for"
                ),
            }
        )
    return metrics, diagnostics


def _unavailable_timing(work_unit: str) -> dict[str, MetricResult]:
    return {
        "first_call": _metrics.unavailable("s", _FIRST_CALL_SCOPE, "wall clock", NOT_REQUESTED),
        "latency": _metrics.unavailable("s", _LATENCY_SCOPE, "block timing", NOT_REQUESTED),
        "latency_iqr": _metrics.unavailable(
            "s", "spread of per-call block means", "block timing", NOT_REQUESTED
        ),
        "throughput": _metrics.unavailable(
            f"{work_unit}/s",  # checked by check_work: the core's rule
            _THROUGHPUT_SCOPE,
            "block timing",
            NOT_REQUESTED,
        ),
        **unavailable_noise_metrics(NOT_REQUESTED),
    }


def _operator_flops_pass(
    workload: Callable[[], Any],
) -> tuple[OperatorFlops, list[Diagnostic], Any]:
    """The section, its diagnostics and the counter (for the dtypes it saw)."""
    from ..flops import OperatorFlopCounter

    counter = OperatorFlopCounter()
    with counter:
        workload()
    return counter.operator_flops(scope=_FLOPS_SCOPE), counter.diagnostics(), counter


def _memory_pass(
    workload: Callable[[], Any], device: Any
) -> tuple[MetricResult, MetricResult, list[Diagnostic], list[str]]:
    from ..memory import measure_peak_memory

    report = measure_peak_memory(workload, device=str(device))
    # On CPU the reserved-bytes metric is unavailable by nature ("unsupported on device" in its
    # reason); repeating that as a diagnostic on every CPU report would only be noise.
    diagnostics = [
        diagnostic
        for diagnostic in report["diagnostics"]
        if not (device.type == "cpu" and diagnostic["code"] == "unsupported_on_device")
    ]
    return (
        report["tensor_memory_peak"],
        report["allocator_reserved_peak"],
        diagnostics,
        report["context"]["dtypes"],
    )


def _rss_pass(
    workload: Any, device: Any, timeout_s: float
) -> tuple[dict[str, MetricResult], list[Diagnostic]]:
    import torch

    from .rss.parent import measure_process_rss

    result = measure_process_rss(
        workload,
        calls=1,
        timeout_s=timeout_s,
        device=str(device),
        threads=int(torch.get_num_threads()),
    )
    return (
        {
            "process_rss_peak": result.lifetime_peak,
            "process_rss_workload_peak": result.workload_peak,
            "process_rss_baseline": result.baseline,
        },
        list(result.diagnostics),
    )


def check_work(work_units: Any, work_unit: Any) -> None:
    """Check ``work_units`` (a positive number) and ``work_unit`` (its name)."""
    _arguments.check_real(
        "work_units",
        work_units,
        minimum=_arguments.MIN_WORK_UNITS,
        maximum=_arguments.MAX_WORK_UNITS,
        meaning="units of work one call completes",
    )
    if not isinstance(work_unit, str) or not _core.is_valid_work_unit(work_unit):
        raise InvalidArgumentError(
            "work_unit must be a name such as 'samples', 'tokens' or 'images' (a letter, then "
            f"letters, digits, '_' or '-'); got {work_unit!r}"
        )


def _check_seconds(name: str, value: Any, *, zero_allowed: bool = False) -> float:
    return _arguments.check_real(
        name,
        value,
        minimum=0.0,
        maximum=_arguments.MAX_SECONDS,
        minimum_open=not zero_allowed,
        meaning="seconds",
    )


def check_budget(
    min_time_s: float, max_time_s: float, min_blocks: int, warmup_time_s: float
) -> TimingBudget:
    """The timing budget of a measurement, every limit checked."""
    minimum = _check_seconds("min_time_s", min_time_s)
    maximum = _check_seconds("max_time_s", max_time_s)
    if minimum > maximum:
        raise InvalidArgumentError(
            f"max_time_s must be >= min_time_s; got min_time_s={min_time_s!r} and "
            f"max_time_s={max_time_s!r}"
        )
    _arguments.check_integer(
        "min_blocks", min_blocks, minimum=1, maximum=_arguments.MAX_COUNT, meaning="timed blocks"
    )
    _check_seconds("warmup_time_s", warmup_time_s, zero_allowed=True)
    return TimingBudget(min_time_s, max_time_s, min_blocks, warmup_time_s)


def check_profiler_calls(profiler_calls: Any) -> None:
    """Check ``profiler_calls``, the most calls the profiler pass runs."""
    _arguments.check_integer(
        "profiler_calls",
        profiler_calls,
        minimum=1,
        maximum=_arguments.MAX_COUNT,
        meaning="calls of the profiler pass",
    )


def check_profiler_trace(profiler_trace: Any, selected: tuple[str, ...]) -> str | None:
    """The path to keep the profiler pass's trace at, checked as an output: ``None`` for none.

    A ``str`` or ``os.PathLike`` naming a file (not a directory) in a directory that exists,
    and only with the ``profiler`` pass selected; the path is recorded in the report as given,
    so it must be text (UTF-8, no NUL).
    """
    if profiler_trace is None:
        return None
    path: Any = None
    if isinstance(profiler_trace, (str, os.PathLike)):
        try:
            path = os.fspath(profiler_trace)
        except TypeError:  # an __fspath__ that returns neither str nor bytes
            path = None
    if not isinstance(path, str):
        what = "a bytes path" if isinstance(path, bytes) else type(profiler_trace).__name__
        raise InvalidArgumentError(
            "profiler_trace must be a file path (str or os.PathLike) to write the profiler "
            f"pass's Chrome trace to, or None; got {what}"
        )
    given = repr(path)
    if "profiler" not in selected:
        raise InvalidArgumentError(
            f"profiler_trace={given} keeps the trace of the profiler pass, which metrics does "
            f"not select (got {', '.join(selected)}); add 'profiler' to metrics"
        )
    if not path or "\0" in path:
        raise InvalidArgumentError(f"profiler_trace must name a file; got {given}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"profiler_trace must be text (it is recorded in the report); got {given}, which "
            "holds bytes that are not UTF-8"
        ) from None
    if os.path.isdir(path):
        raise InvalidArgumentError(f"profiler_trace must name a file; {given} is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidArgumentError(
            f"profiler_trace={given} cannot be written: no such directory: {folder}"
        )
    return path


def check_rss_timeout(rss_timeout_s: Any) -> float:
    """``rss_timeout_s`` checked: the seconds the process-RSS child may take."""
    return _check_seconds("rss_timeout_s", rss_timeout_s)


def _timing_evidence(run: TimingRun) -> TimingEvidence:
    return {
        "first_call_s": run.first_call_s,
        "warmup_calls": run.warmup_calls,
        "calls_per_block": run.calls_per_block,
        "block_durations_s": run.block_durations_s,
        "block_starts_s": run.block_starts_s,
        "timer_overhead_s": run.timer_overhead_s,
    }


class Passes:
    """The results of one workload's passes, gathered before the report is assembled."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        self.values: dict[str, MetricResult] = {}
        self.timing: TimingEvidence | None = None
        self.profiler: ProfilerPass = not_requested_profiler()
        self.operator_flops: OperatorFlops | None = None
        # The dtypes counted operators computed in, largest FLOP share first; all others seen.
        self.flop_dtypes: list[Any] = []
        self.dtypes: list[Any] = []
        # The floating dtypes of the first call's output (the precision the result came in).
        self.output_dtypes: list[Any] = []


def add_timing(
    passes: Passes,
    run: TimingRun | None,
    work_units: float,
    work_unit: str,
    clock: str | None = None,
) -> None:
    """Record a timing run, or the timing metrics as not requested when ``run`` is ``None``.

    ``clock`` says how blocks were timed when it was not the default wall clock.
    """
    if run is None:
        passes.values.update(_unavailable_timing(work_unit))
        return
    timed, found = _timing_metrics(run, work_units, work_unit, clock)
    passes.output_dtypes = passes.output_dtypes or list(run.output_dtypes)
    passes.values.update(timed)
    passes.diagnostics.extend(found)
    passes.timing = _timing_evidence(run)


def run_later_passes(
    passes: Passes,
    workload: Callable[[], Any],
    device: Any,
    selected: tuple[str, ...],
    profiler_calls: int,
    rss_timeout_s: float,
    *,
    profiler_time_s: float | None = None,
    profiler_budget: str | None = None,
    profiler_trace: str | None = None,
    rss_unavailable: str | None = None,
    on_pass: Callable[[str], None] | None = None,
) -> None:
    """The passes after timing, in order: process RSS, profiler, operator FLOPs, tensor memory.

    The profiler pass runs at most ``profiler_calls`` calls within ``profiler_time_s`` seconds (no
    time limit when ``None``), named ``profiler_budget`` in its diagnostic, and keeps its trace at
    ``profiler_trace`` (a path checked by :func:`check_profiler_trace`; see
    :func:`~torchscan.measure.profiling.run_profiler`). ``rss_unavailable`` is the reason the
    process-RSS child cannot run here, when it cannot; ``on_pass`` is told the name of each pass as
    it starts.
    """
    values = passes.values
    announce = on_pass if on_pass is not None else (lambda name: None)
    if "process_rss" in selected and rss_unavailable is not None:
        for key, scope in _RSS_SCOPES.items():
            values[key] = _metrics.unavailable("B", scope, _RSS_METHOD, rss_unavailable)
    elif "process_rss" in selected:
        announce("the process RSS pass")
        rss, found = _rss_pass(workload, device, rss_timeout_s)
        values.update(rss)
        passes.diagnostics.extend(found)
    else:
        for key, scope in _RSS_SCOPES.items():
            values[key] = _metrics.unavailable("B", scope, _RSS_METHOD, NOT_REQUESTED)

    if "profiler" in selected:
        announce("the profiler pass")
        passes.profiler, found = run_profiler(
            workload, device, profiler_calls, profiler_time_s, profiler_budget, profiler_trace
        )
        passes.diagnostics.extend(found)

    if "operator_flops" in selected:
        announce("the operator FLOPs pass")
        passes.operator_flops, found, counter = _operator_flops_pass(workload)
        values["operator_flops"] = passes.operator_flops["total"]
        values["operator_bytes"] = counter.operator_bytes()
        passes.diagnostics.extend(found)
        passes.flop_dtypes.extend(counter.flop_dtypes)
        passes.dtypes.extend(counter.dtypes)
    else:
        values["operator_flops"] = _metrics.unavailable(
            "FLOPs", _FLOPS_SCOPE, _FLOPS_METHOD, NOT_REQUESTED
        )
        from ..flops import OPERATOR_BYTES_METHOD, OPERATOR_BYTES_SCOPE

        values["operator_bytes"] = _metrics.unavailable(
            "B", OPERATOR_BYTES_SCOPE, OPERATOR_BYTES_METHOD, NOT_REQUESTED
        )

    if "tensor_memory" in selected:
        announce("the tensor memory pass")
        peak, reserved, found, stored = _memory_pass(workload, device)
        values["tensor_memory_peak"] = peak
        values["allocator_reserved_peak"] = reserved
        passes.diagnostics.extend(found)
        passes.dtypes.extend(stored)
    else:
        values["tensor_memory_peak"] = _metrics.unavailable(
            "B", "PyTorch tensor memory", "tensor memory pass", NOT_REQUESTED
        )
        values["allocator_reserved_peak"] = _metrics.unavailable(
            "B", "accelerator allocator reserved bytes", "allocator statistics", NOT_REQUESTED
        )


def assemble_report(
    passes: Passes,
    *,
    name: str | None,
    context: Context,
    selected: tuple[str, ...],
    budget: TimingBudget,
    inputs: Any,
    work_units: float,
    work_unit: str,
) -> BenchmarkReport:
    """The ``benchmark`` report of the passes that ran, with its settings and workload."""
    values = passes.values
    settings: TimingSettings = {
        "passes": [pass_name for pass_name in _PASS_NAMES if pass_name in selected],
        "min_time_s": float(budget.min_time_s),
        "max_time_s": float(budget.max_time_s),
        "min_blocks": int(budget.min_blocks),
        "warmup_time_s": float(budget.warmup_time_s),
        "max_timer_overhead_ratio": budget.max_timer_overhead_ratio,
    }
    metrics_section: BenchmarkMetrics = {
        "first_call": values["first_call"],
        "latency": values["latency"],
        "latency_iqr": values["latency_iqr"],
        "throughput": values["throughput"],
        "operator_flops": values["operator_flops"],
        "tensor_memory_peak": values["tensor_memory_peak"],
        "allocator_reserved_peak": values["allocator_reserved_peak"],
        "process_rss_peak": values["process_rss_peak"],
        "process_rss_workload_peak": values["process_rss_workload_peak"],
        "process_rss_baseline": values["process_rss_baseline"],
        "machine_other_cpu_ratio": values["machine_other_cpu_ratio"],
        "cpu_steal_ratio": values["cpu_steal_ratio"],
        "involuntary_context_switches": values["involuntary_context_switches"],
        "cpu_frequency": values["cpu_frequency"],
    }
    return {
        "schema_version": 1,
        "kind": "benchmark",
        "context": context,
        "diagnostics": passes.diagnostics,
        "workload": {
            "name": name,
            "work_units": float(work_units),
            "work_unit": work_unit,
            "inputs": _input_metas(inputs),
        },
        "settings": settings,
        "timing": passes.timing,
        "metrics": metrics_section,
        "operator_flops": passes.operator_flops,
        "profiler": passes.profiler,
    }


def ranked_dtypes(passes: Passes, inputs: Any) -> list[str]:
    """The dtypes of a benchmark's context: the main precision first, then the others by name.

    The dtypes counted operators computed in come first, largest FLOP share first. Without an
    operator FLOPs pass (latency alone), the floating dtypes of the first call's output come
    first, by name: the precision the result came in. The other dtypes the passes saw and those
    of ``inputs=`` follow, by name.
    """
    from .._values import dtype_name

    first = [dtype_name(dtype) for dtype in passes.flop_dtypes]
    if not first:
        first = sorted({dtype_name(dtype) for dtype in passes.output_dtypes})
    others = {dtype_name(dtype) for dtype in passes.dtypes}
    others.update(dtype_name(dtype) for dtype in passes.output_dtypes)
    others.update(dtype_name(dtype) for dtype in floating_dtypes(inputs))
    return first + sorted(others - set(first))


def raise_if_incomplete(
    report: BenchmarkReport, selected: tuple[str, ...], *, trace_requested: bool = False
) -> None:
    """Raise ``IncompleteMeasurementError`` when a requested metric is not complete.

    With ``trace_requested``, a profiler trace that was not written, or that covers fewer calls
    than were profiled, counts as incomplete too (``profiler_trace``).
    """
    metrics_section = report["metrics"]
    profiler = report["profiler"]
    requested = {
        "latency": ("first_call", "latency", "latency_iqr", "throughput"),
        "operator_flops": ("operator_flops",),
        "tensor_memory": ("tensor_memory_peak",),
        "process_rss": (
            "process_rss_peak",
            "process_rss_workload_peak",
            "process_rss_baseline",
        ),
    }
    incomplete = [
        (name, str(metrics_section[name]["status"]))  # type: ignore[literal-required]
        for pass_name in selected
        for name in requested.get(pass_name, ())
        if metrics_section[name]["status"] != "complete"  # type: ignore[literal-required]
    ]
    if "profiler" in selected and profiler["status"] != "complete":
        incomplete.append(("profiler", str(profiler["status"])))
    peak = report.get("hardware_peak")
    measured = peak["measured"] if peak is not None else None
    if "hardware_peak" in selected and measured is not None:
        incomplete.extend(
            (f"hardware_peak.measured.{name}", str(measured[name]["status"]))
            for name in ("flop_rate", "bandwidth")
            if measured[name]["status"] != "complete"
        )
    if trace_requested:
        trace = profiler.get("trace")
        if trace is None:
            incomplete.append(("profiler_trace", "unavailable"))
        elif trace["calls"] != profiler["calls"]:
            incomplete.append(("profiler_trace", "partial"))
    if incomplete:
        raise IncompleteMeasurementError(report, incomplete)
