"""How close to the hardware's limit: the peak a benchmark is compared with, and its rates.

The ``hardware_peak`` pass measures what the device attains here (a dense square matmul in the
workload's dominant floating dtype, a large copy), timed by the latency pass's own block timing
(:func:`torchscan.measure.timing.run_timing`), on the same device and thread setting as the
workload; on CUDA it also records the device's theoretical peak from its properties, where torch
knows the architecture. A caller may declare a peak instead (``peak=``), with its source. The report
then gains ``metrics.achieved_flop_rate`` (operator FLOPs over the warmed latency) and the
utilization metrics, each with the status rules of every metric: complete only when every input is
complete, a lower bound when the numerator is one, unavailable with the reason otherwise, never a
zero for a missing number. The Rust validator recomputes every one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _arguments
from ..errors import InvalidArgumentError
from ..reports import (
    BenchmarkMetrics,
    DeclaredPeak,
    Diagnostic,
    HardwarePeak,
    MeasuredPeak,
    MetricResult,
    PeakOrigin,
    PeakTiming,
)
from ..reports import metrics as _metrics
from .noise import noise_metrics, noise_past_thresholds
from .timing import TimingBudget, run_timing, synchronizer, timed_call

__all__ = [
    "DECLARED_METHOD",
    "PEAK_BUDGET",
    "PEAK_SPREAD",
    "RETIME_FACTOR",
    "SEARCH_CALLS",
    "Declared",
    "check_peak",
    "hardware_peak_section",
    "measure_hardware_peak",
    "peak_dtype",
    "rate_metrics",
]

#: The ``method`` of a declared peak rate.
DECLARED_METHOD = "declared by the caller"

#: The timing budget of each of the pass's two measurements: a small one, so that the whole pass
#: stays near a second on a CPU (the first calls, warm-up and sizing included).
PEAK_BUDGET = TimingBudget(min_time_s=0.25, max_time_s=0.6, min_blocks=5, warmup_time_s=0.05)

_PEAK_KEYS = ("flop_rate", "bandwidth", "source")
_FLOATING = ("torch.float16", "torch.bfloat16", "torch.float32", "torch.float64")
# Matmul sizes double from the first (see _search_size); a copy moves this many bytes each way
# (well past any CPU's or GPU's last-level cache).
_FIRST_SIZE = 256
_LARGEST_SIZE = {"cpu": 2048}
_LARGEST_ACCELERATOR_SIZE = 8192
_CALL_TARGET_S = {"cpu": 0.01}
_ACCELERATOR_CALL_TARGET_S = 0.005
_COPY_BYTES = {"cpu": 128 * 1024 * 1024}
_ACCELERATOR_COPY_BYTES = 256 * 1024 * 1024
#: Timed calls of each size in the search (after one untimed call): the fastest one counts, so
#: one call slowed by another process does not end the search.
SEARCH_CALLS = 3
# A size that reached the target time ends the search only when its rate rose by less than this
# factor over the best smaller size (the rate has levelled off); a size slower than the best
# smaller one by this factor is a drop, and the search goes on _PAST_A_DROP sizes past drops.
_RISE = 1.25
_PAST_A_DROP = 2
# The size used: the largest whose rate is within this factor of the best rate of the search.
_NEAR_BEST = 1.1
# The search stops before a size that would take it past this time (its sizes' calls so far,
# and the next size's at the rate of the last one).
_SEARCH_LIMIT_S = {"cpu": 1.5}
_ACCELERATOR_SEARCH_LIMIT_S = 0.5
#: The matmul is timed again when its fastest block ran this much slower per call than the
#: fastest call of the search at its size: something slowed every block down.
RETIME_FACTOR = 1.5
#: A measurement's blocks spread when their IQR reaches this share of their median.
PEAK_SPREAD = 0.25

_HOW_TO_GET_A_PEAK = (
    "measure one with metrics=[..., 'hardware_peak'] or declare one with "
    "peak={'flop_rate': ..., 'bandwidth': ..., 'source': ...}"
)


@dataclass(frozen=True)
class Declared:
    """A peak declared by the caller, checked: its rates (FLOP/s, B/s) and its source."""

    flop_rate: float | None
    bandwidth: float | None
    source: str


def check_peak(peak: Any) -> Declared | None:
    """``peak=`` checked before anything runs: ``None``, or the declared peak.

    A mapping of ``flop_rate`` (FLOP/s), ``bandwidth`` (B/s) and ``source`` (non-empty text).
    Either rate may be left out (or ``None``), not both; each given rate is an ``int`` or
    ``float`` (never a ``bool``) in [1, 1e30] (:data:`~torchscan._arguments.MIN_PEAK_RATE` to
    :data:`~torchscan._arguments.MAX_PEAK_RATE`): far below any device and far above every
    machine built, so that every utilization divided by it stays a finite number. Any other key,
    a missing or empty ``source``, or another type raises
    :class:`~torchscan.InvalidArgumentError`.
    """
    if peak is None:
        return None
    if not isinstance(peak, Mapping):
        raise InvalidArgumentError(
            "peak must be a dict such as {'flop_rate': 989e12, 'bandwidth': 3.35e12, "
            f"'source': 'H100 SXM datasheet, dense BF16'}} or None; got {type(peak).__name__}"
        )
    unknown = [key for key in peak if key not in _PEAK_KEYS]
    if unknown:
        shown = ", ".join(repr(key) for key in unknown)
        raise InvalidArgumentError(
            f"peak has unknown key{'s' if len(unknown) > 1 else ''} {shown}; its keys are "
            "'flop_rate' (FLOP/s), 'bandwidth' (B/s) and 'source' (where the numbers come from)"
        )
    source = peak.get("source")
    if not isinstance(source, str) or not source.strip():
        got = "nothing" if "source" not in peak else repr(source)
        raise InvalidArgumentError(
            "peak needs a 'source': non-empty text saying where the numbers come from (for "
            f"example 'H100 SXM datasheet, dense BF16, no sparsity'); got {got}"
        )
    if "\0" in source:
        raise InvalidArgumentError("peak['source'] must be text without NUL characters")
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            "peak['source'] must be text (it is recorded in the report); it holds characters "
            "that are not UTF-8"
        ) from None
    rates: dict[str, float | None] = {}
    for key, meaning in (("flop_rate", "FLOP/s"), ("bandwidth", "B/s")):
        value = peak.get(key)
        rates[key] = (
            None
            if value is None
            else _arguments.check_real(
                f"peak[{key!r}]",
                value,
                minimum=_arguments.MIN_PEAK_RATE,
                maximum=_arguments.MAX_PEAK_RATE,
                meaning=meaning,
            )
        )
    if rates["flop_rate"] is None and rates["bandwidth"] is None:
        raise InvalidArgumentError(
            "peak declares neither 'flop_rate' (FLOP/s) nor 'bandwidth' (B/s); give at least one"
        )
    return Declared(rates["flop_rate"], rates["bandwidth"], source)


def peak_dtype(dtypes: list[str]) -> str:
    """The dtype the pass measures in.

    The first floating dtype of ``context.dtypes`` (the workload's main precision first), else
    ``torch.float32``.
    """
    return next((name for name in dtypes if name in _FLOATING), "torch.float32")


# ---------------------------------------------------------------------------------------------
# The measured peak


def _threads_text(device: Any) -> str:
    import torch

    threads = int(torch.get_num_threads())
    return f"on {device} with {threads} PyTorch thread{'s' if threads != 1 else ''}"


def _tf32_allowed() -> bool:
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32) or (
        torch.get_float32_matmul_precision() != "highest"
    )


def _precision_note(device: Any, dtype: Any) -> str:
    """What decides the matmul's arithmetic on this device, for the method."""
    import torch

    if device.type == "cuda" and dtype == torch.float32:
        return (
            "TF32 tensor cores allowed (float32 inputs rounded to TF32)"
            if _tf32_allowed()
            else "TF32 not allowed: full float32 arithmetic"
        )
    return f"{dtype} arithmetic as torch.mm runs it on {device.type}"


def _timing_of(run: Any) -> tuple[PeakTiming, float]:
    """The evidence of a timing run and its fastest block's per-call time.

    A peak is what the device attains: noise (other processes, preemption) only ever slows a
    block down, so the fastest block is the closest to it, where a workload's latency takes the
    median.
    """
    timing: PeakTiming = {
        "calls_per_block": int(run.calls_per_block),
        "block_durations_s": list(run.block_durations_s),
    }
    per_call_s = min(run.block_durations_s) / run.calls_per_block
    return timing, per_call_s


def _blocks_text(timing: PeakTiming) -> str:
    blocks = len(timing["block_durations_s"])
    calls = timing["calls_per_block"]
    return (
        f"{blocks:,} timed block{'s' if blocks != 1 else ''} of {calls:,} "
        f"call{'s' if calls != 1 else ''}"
    )


def _matmul_flops(size: int) -> float:
    return 2.0 * size * size * size


def _search_size(
    fastest_s: Callable[[int], float], largest: int, target_s: float, limit_s: float
) -> tuple[int, list[tuple[int, float]]]:
    """The matmul size to time, and every size tried with its fastest call's seconds.

    Sizes double from the first. ``fastest_s(size)`` is the fastest of :data:`SEARCH_CALLS`
    timed calls of that size (after one untimed call: a size costs about ``SEARCH_CALLS + 1``
    times it). The search stops at the largest size; before a size that would take the search
    past ``limit_s`` (at the rate of the last size); at a size that reached ``target_s`` once
    its rate rose by less than a quarter over the best smaller size (the rate levelled off); and
    at the third size slower by a quarter than the best smaller one (a drop, where another
    process slowed every call). One slow call, or one slow size, does not end it. The size used
    is the largest whose rate is within 10% of the best rate of the search.
    """
    tried: list[tuple[int, float]] = []
    drops = 0
    spent_s = 0.0
    size = _FIRST_SIZE
    while True:
        try:
            seconds = max(fastest_s(size), 1e-9)
        except (RuntimeError, MemoryError):
            if not tried:
                raise
            break  # a size too large for the device: the sizes before it
        rate = _matmul_flops(size) / seconds
        best_before = max((_matmul_flops(n) / s for n, s in tried), default=None)
        tried.append((size, seconds))
        spent_s += seconds * (SEARCH_CALLS + 1)
        if size >= largest:
            break
        if spent_s + _matmul_flops(2 * size) / rate * (SEARCH_CALLS + 1) > limit_s:
            break
        if best_before is not None and rate * _RISE < best_before:
            drops += 1
            if drops > _PAST_A_DROP:
                break
        elif seconds >= target_s and best_before is not None and rate < best_before * _RISE:
            break
        size *= 2
    best = max(_matmul_flops(n) / s for n, s in tried)
    chosen = max(n for n, s in tried if _matmul_flops(n) / s * _NEAR_BEST >= best)
    return chosen, tried


def _fastest_matmul_s(device: Any, dtype: Any, size: int, sync: Callable[[], None]) -> float:
    """The fastest of :data:`SEARCH_CALLS` timed calls of one matmul of ``size``.

    One untimed call first: lazy initialisation (a BLAS handle, a kernel choice) stays out.
    """
    call = _matmul(device, dtype, size)
    call()
    return min(timed_call(call, sync)[0] for _ in range(SEARCH_CALLS))


def _matmul(device: Any, dtype: Any, size: int) -> Callable[[], Any]:
    """One ``size x size`` by ``size x size`` matmul into a tensor allocated once."""
    import torch

    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    return lambda: torch.mm(a, b, out=out)


def _copy(device: Any, dtype: Any, numel: int) -> Callable[[], Any]:
    """One copy of ``numel`` elements into a second tensor as large, both allocated once."""
    import torch

    source = torch.zeros(numel, device=device, dtype=dtype)
    target = torch.empty(numel, device=device, dtype=dtype)
    return lambda: target.copy_(source)


def _per_call_s(run: Any) -> float:
    return float(min(run.block_durations_s)) / int(run.calls_per_block)


def _search_text(tried: list[tuple[int, float]]) -> str:
    rates = ", ".join(f"{n:,}: {_matmul_flops(n) / s / 1e9:.3g}" for n, s in tried)
    return (
        f"the size from a search doubling from {_FIRST_SIZE:,}, the fastest of {SEARCH_CALLS} "
        f"calls of each size in GFLOP/s ({rates})"
    )


def _measure_matmul(
    device: Any, dtype: Any, budget: TimingBudget, findings: list[str]
) -> tuple[int, PeakTiming | None, MetricResult, Any]:
    """The matmul's size, its timing, its rate and its timing run (``None`` when it failed).

    Appends to ``findings`` what says the rate may be below what the device attains.
    """
    sync = synchronizer(device)
    kind = device.type
    scope_tail = _threads_text(device)
    size = _FIRST_SIZE
    try:
        size, tried = _search_size(
            lambda n: _fastest_matmul_s(device, dtype, n, sync),
            _LARGEST_SIZE.get(kind, _LARGEST_ACCELERATOR_SIZE),
            _CALL_TARGET_S.get(kind, _ACCELERATOR_CALL_TARGET_S),
            _SEARCH_LIMIT_S.get(kind, _ACCELERATOR_SEARCH_LIMIT_S),
        )
        search_s = dict(tried)[size]
        run = run_timing(_matmul(device, dtype, size), device, budget)
        retimed = ""
        if _per_call_s(run) > RETIME_FACTOR * search_s:
            slower = _per_call_s(run) / search_s
            again = run_timing(_matmul(device, dtype, size), device, budget)
            retimed = (
                f"; timed twice, the run with the faster fastest block kept (the first one's "
                f"ran {slower:.2f}x slower per call than the search's fastest call)"
            )
            if _per_call_s(again) < _per_call_s(run):
                run = again
    except (RuntimeError, MemoryError) as error:  # an unsupported dtype, out of memory
        scope = f"attainable dense matmul rate in {dtype} {scope_tail}"
        method = "torch.mm of two square matrices, timed in blocks"
        reason = f"the matmul could not run: {' '.join(str(error).split())[:300]}"
        return size, None, _metrics.unavailable("FLOP/s", scope, method, reason), None
    timing, per_call_s = _timing_of(run)
    if per_call_s > RETIME_FACTOR * search_s:
        findings.append(
            f"its fastest timed block ran {per_call_s / search_s:.2f}x slower per call than the "
            f"fastest call of the size search (threshold {RETIME_FACTOR:g}x), timed twice"
        )
    flops = _matmul_flops(size)
    scope = (
        f"attainable dense matmul rate: one {size:,} x {size:,} by {size:,} x {size:,} {dtype} "
        f"torch.mm {scope_tail}"
    )
    method = (
        f"2 x {size:,}^3 FLOPs over the fastest block's per-call time of {_blocks_text(timing)}, "
        "timed as "
        f"the latency pass times the workload (first call alone, warm-up, blocks synchronised at "
        f"their edges); {_precision_note(device, dtype)}; {_search_text(tried)}{retimed}"
    )
    return size, timing, _metrics.complete(flops / per_call_s, "FLOP/s", scope, method), run


def _measure_copy(
    device: Any, dtype: Any, budget: TimingBudget
) -> tuple[int, PeakTiming | None, MetricResult, Any]:
    import torch

    element = torch.empty((), dtype=dtype).element_size()
    copy_bytes = _COPY_BYTES.get(device.type, _ACCELERATOR_COPY_BYTES)
    numel = copy_bytes // element
    copy_bytes = numel * element
    scope = (
        f"large-copy bandwidth: one copy of {copy_bytes:,} B ({copy_bytes / 2**20:g} MiB) of "
        f"{dtype} into a second tensor as large, each byte read once and written once, "
        f"{_threads_text(device)}"
    )
    try:
        run = run_timing(_copy(device, dtype, numel), device, budget)
    except (RuntimeError, MemoryError) as error:
        method = "Tensor.copy_ of a large tensor, timed in blocks"
        reason = f"the copy could not run: {' '.join(str(error).split())[:300]}"
        return copy_bytes, None, _metrics.unavailable("B/s", scope, method, reason), None
    timing, per_call_s = _timing_of(run)
    method = (
        f"2 x {copy_bytes:,} B (read and written) over the fastest block's per-call time of "
        f"{_blocks_text(timing)}, timed as the latency pass times the workload"
    )
    bandwidth = _metrics.complete(2.0 * copy_bytes / per_call_s, "B/s", scope, method)
    return copy_bytes, timing, bandwidth, run


def _theoretical(device: Any, dtype: Any) -> tuple[MetricResult, MetricResult]:
    """The device's theoretical peaks from its properties.

    Known for CUDA devices whose architecture ``torch.cuda._device_limits.GPULimits`` describes;
    unavailable with the reason elsewhere.
    """
    compute_scope = (
        f"theoretical peak compute rate of the device in {dtype}: SMs x FMA per cycle per SM x 2 "
        "x clock; never attained in practice, and thermal and power limits are ignored"
    )
    memory_scope = (
        "theoretical peak DRAM bandwidth of the device: 2 x bus width x memory clock (double "
        "data rate); never attained in practice"
    )
    method = "torch.cuda._device_limits.GPULimits, from the device properties"
    if device.type != "cuda":
        reason = (
            "torch describes theoretical peaks of CUDA devices only; declare a datasheet's "
            "peak with peak=, its source naming the precision and sparsity it assumes"
        )
        return (
            _metrics.unavailable("FLOP/s", compute_scope, method, reason),
            _metrics.unavailable("B/s", memory_scope, method, reason),
        )
    import importlib

    import torch

    try:
        limits_module = importlib.import_module("torch.cuda._device_limits")
        limits = limits_module.GPULimits(device)
    except Exception as error:  # a private helper of torch: absent, moved or failing
        reason = f"this torch has no usable torch.cuda._device_limits.GPULimits ({error})"
        return (
            _metrics.unavailable("FLOP/s", compute_scope, method, reason),
            _metrics.unavailable("B/s", memory_scope, method, reason),
        )
    properties = limits.device_properties
    tensor_cores = dtype != torch.float32 or _tf32_allowed()
    units = (
        ("TF32 tensor cores" if dtype == torch.float32 else "tensor cores")
        if tensor_cores
        else "CUDA cores (TF32 not allowed)"
    )
    try:
        rate = float(limits.get_tflops_per_second(dtype, use_tensor_cores=tensor_cores)) * 1e12
        compute_method = (
            f"{method} (compute capability {properties.major}.{properties.minor}, "
            f"{properties.multi_processor_count} SMs, clock {properties.clock_rate / 1e3:g} MHz): "
            f"{units}, dense (no sparsity factor)"
        )
        compute = _metrics.complete(rate, "FLOP/s", compute_scope, compute_method)
    except Exception as error:  # an architecture or a dtype torch's table does not list
        compute = _metrics.unavailable(
            "FLOP/s",
            compute_scope,
            method,
            f"torch does not know this architecture's {dtype} rate on {units}: {error}",
        )
    try:
        bandwidth = float(limits.get_memory_bandwidth_Bps())
        memory_method = (
            f"{method} (memory bus {properties.memory_bus_width} bits, memory clock "
            f"{properties.memory_clock_rate / 1e3:g} MHz)"
        )
        memory = _metrics.complete(bandwidth, "B/s", memory_scope, memory_method)
    except Exception as error:  # a property this torch does not read
        memory = _metrics.unavailable(
            "B/s",
            memory_scope,
            method,
            f"torch does not describe this device's memory: {error}",
        )
    for metric in (compute, memory):
        if metric["status"] == "complete" and not (metric["value"] or 0) > 0:
            metric.update(  # a property read as 0: no number rather than a zero
                _metrics.unavailable(
                    metric["unit"], metric["scope"], method, "the device properties gave 0"
                )
            )
    return compute, memory


def _spread(durations: list[float]) -> float:
    """IQR over median of block durations (quartiles by linear interpolation); 0 for one block."""
    if len(durations) < 2:
        return 0.0
    ordered = sorted(durations)

    def quantile(share: float) -> float:
        position = share * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    median = quantile(0.5)
    return (quantile(0.75) - quantile(0.25)) / median if median > 0 else 0.0


def _noise_findings(run: Any) -> list[str]:
    """What competed with a timing run of the pass: noise past its thresholds, spread blocks."""
    findings: list[str] = []
    if run.noise is not None:
        metrics = noise_metrics(run.noise)
        findings.extend(words for _, words in noise_past_thresholds(metrics, run.noise.elapsed_s))
    spread = _spread(list(run.block_durations_s))
    if spread >= PEAK_SPREAD:
        findings.append(
            f"its {len(run.block_durations_s):,} timed blocks spread (IQR {spread:.0%} of the "
            f"median; threshold {PEAK_SPREAD:.0%})"
        )
    return findings


def _noisy_peak(what: str, metric: str, findings: list[str]) -> Diagnostic:
    return {
        "code": "noisy_peak",
        "severity": "warning",
        "metric": metric,
        "message": (
            f"the hardware_peak pass's {what} may read below what the device attains: "
            + "; ".join(findings)
            + ". A utilization divided by it then reads high: measure the peak again on a quiet "
            "machine, or declare one with peak="
        ),
    }


def measure_hardware_peak(
    device: Any,
    dtype_name: str,
    budget: TimingBudget | None = None,
    diagnostics: list[Diagnostic] | None = None,
) -> MeasuredPeak:
    """The ``hardware_peak`` pass on ``device``, in ``dtype_name``.

    A dense square matmul and a large copy, each timed with ``budget`` (:data:`PEAK_BUDGET` when
    ``None``) as the latency pass times a workload, with the caller's thread setting; and the
    device's theoretical peaks where torch knows them. The matmul's size comes from a search
    that one slow call does not end (:func:`_search_size`), and the matmul is timed again when
    its fastest block ran :data:`RETIME_FACTOR` times slower per call than the search's fastest
    call. A ``noisy_peak`` warning per measured rate that may read low (other processes, steal
    or preemption past the ``noisy_machine`` thresholds while it was timed, blocks whose IQR
    reaches :data:`PEAK_SPREAD` of their median, a matmul still slower than its search) is
    appended to ``diagnostics`` when given.
    """
    import torch

    budget = budget if budget is not None else PEAK_BUDGET
    dtype = getattr(torch, dtype_name.removeprefix("torch."))
    matmul_findings: list[str] = []
    size, matmul_timing, flop_rate, matmul_run = _measure_matmul(
        device, dtype, budget, matmul_findings
    )
    copy_bytes, copy_timing, bandwidth, copy_run = _measure_copy(device, dtype, budget)
    theoretical_flop_rate, theoretical_bandwidth = _theoretical(device, dtype)
    if diagnostics is not None:
        for what, metric, run, findings in (
            ("matmul rate", "hardware_peak.measured.flop_rate", matmul_run, matmul_findings),
            ("copy bandwidth", "hardware_peak.measured.bandwidth", copy_run, []),
        ):
            if run is not None:
                findings = _noise_findings(run) + findings
                if findings:
                    diagnostics.append(_noisy_peak(what, metric, findings))
    return {
        "dtype": dtype_name,
        "matmul_size": size,
        "matmul_timing": matmul_timing,
        "copy_bytes": copy_bytes,
        "copy_timing": copy_timing,
        "flop_rate": flop_rate,
        "bandwidth": bandwidth,
        "theoretical_flop_rate": theoretical_flop_rate,
        "theoretical_bandwidth": theoretical_bandwidth,
    }


# ---------------------------------------------------------------------------------------------
# The section and the rates


def _declared_section(declared: Declared) -> DeclaredPeak:
    def rate(value: float | None, unit: str, what: str) -> MetricResult:
        scope = f"the caller's declared peak {what}, not measured by torchscan"
        if value is None:
            return _metrics.unavailable(unit, scope, DECLARED_METHOD, "not declared")
        return _metrics.complete(value, unit, scope, DECLARED_METHOD)

    return {
        "source": declared.source,
        "flop_rate": rate(declared.flop_rate, "FLOP/s", "compute rate"),
        "bandwidth": rate(declared.bandwidth, "B/s", "memory bandwidth"),
    }


def hardware_peak_section(
    declared: Declared | None, measured: MeasuredPeak | None
) -> HardwarePeak | None:
    """The report's ``hardware_peak``; ``None`` without a declared or a measured peak.

    Both peaks as recorded, and for each rate the one that utilization uses: the declared one
    when the caller declared it, else the measured one.
    """
    if declared is None and measured is None:
        return None
    declared_section = _declared_section(declared) if declared is not None else None
    section: dict[str, Any] = {"declared": declared_section, "measured": measured}
    for key, unit, what in (
        ("flop_rate", "FLOP/s", "peak compute rate"),
        ("bandwidth", "B/s", "peak memory bandwidth"),
    ):
        origin: PeakOrigin | None = None
        used: MetricResult | None = None
        for name, part in (("declared", declared_section), ("measured", measured)):
            if part is not None and part[key]["status"] == "complete":  # type: ignore[literal-required]
                origin = "declared" if name == "declared" else "measured"
                used = dict(part[key])  # type: ignore[literal-required, assignment]
                break
        if used is None:
            reasons = []
            if declared_section is not None:
                reasons.append(f"not declared (peak= gave no {key})")
            elif measured is None:
                reasons.append("no peak was declared")
            if measured is not None:
                reasons.append(f"not measured ({measured[key]['reason']})")  # type: ignore[literal-required]
            else:
                reasons.append("the hardware_peak pass was not requested")
            used = _metrics.unavailable(
                unit, f"the {what} utilization divides by", "none", "; ".join(reasons)
            )
        section[key] = used
        section[f"{key}_origin"] = origin
    return {
        "flop_rate": section["flop_rate"],
        "flop_rate_origin": section["flop_rate_origin"],
        "bandwidth": section["bandwidth"],
        "bandwidth_origin": section["bandwidth_origin"],
        "declared": section["declared"],
        "measured": section["measured"],
    }


def _known(metric: MetricResult | None) -> float | None:
    if metric is None or metric["status"] == "unavailable":
        return None
    number = metric["value"] if metric["status"] == "complete" else metric["known_value"]
    return None if number is None else float(number)


def _quotient(
    numerator: tuple[str, MetricResult | None],
    divisor: tuple[str, MetricResult | None],
    unit: str,
    scope: str,
    method: str,
    *,
    missing: str,
) -> MetricResult:
    """``numerator / divisor``, each given with its name, with the status rules.

    Complete when both are, a lower bound when the numerator is partial and the divisor
    complete, unavailable with the reasons otherwise, and unavailable too when the quotient
    leaves the float range (an infinity, or zero for a nonzero numerator). ``missing`` is the
    reason when the divisor is absent altogether.
    """
    (top_name, top), (bottom_name, bottom) = numerator, divisor
    reasons = []
    if top is None:
        reasons.append(f"{top_name}: not recorded")
    elif top["status"] == "unavailable":
        reasons.append(f"{top_name}: unavailable ({top['reason']})")
    if bottom is None:
        reasons.append(missing)
    elif bottom["status"] != "complete":
        reasons.append(f"{bottom_name}: {bottom['status']} ({bottom['reason']})")
    elif not float(bottom["value"] or 0.0) > 0.0:
        reasons.append(f"{bottom_name}: 0")
    top_number, bottom_number = _known(top), _known(bottom)
    if reasons or top is None or top_number is None or bottom_number is None:
        return _metrics.unavailable(unit, scope, method, "; ".join(reasons) or "no number")
    quotient = top_number / bottom_number
    if not math.isfinite(quotient) or (quotient == 0.0 and top_number != 0.0):
        # Inputs from far apart in the float range: no number rather than an infinity or a zero.
        return _metrics.unavailable(
            unit,
            scope,
            method,
            f"{top_name} / {bottom_name} ({top_number:g} / {bottom_number:g}) is beyond the "
            "range of a float",
        )
    if top["status"] == "partial":
        return _metrics.partial(
            quotient,
            unit,
            scope,
            method,
            f"{top_name}: partial, so this is a lower bound ({top['reason']})",
        )
    return _metrics.complete(quotient, unit, scope, method)


def _peak_words(peak: HardwarePeak, key: str) -> str:
    """Where the peak rate ``key`` utilization uses comes from, in words."""
    origin = peak[f"{key}_origin"]  # type: ignore[literal-required]
    declared, measured = peak["declared"], peak["measured"]
    if origin == "declared" and declared is not None:
        words = f"the declared peak, declared by the caller: {declared['source']}"
        if measured is not None and measured[key]["status"] == "complete":  # type: ignore[literal-required]
            words += "; a declared peak is used over the measured one recorded beside it"
        return words
    if key == "flop_rate":
        return "the measured dense matmul peak of the hardware_peak pass"
    return "the measured large-copy bandwidth of the hardware_peak pass"


def rate_metrics(metrics: BenchmarkMetrics, peak: HardwarePeak | None) -> dict[str, MetricResult]:
    """The rates of a benchmark's metrics against ``peak``.

    ``achieved_flop_rate``, ``flop_utilization`` and ``bandwidth_utilization``, and
    ``arithmetic_intensity`` too when the metrics carry ``operator_bytes``. Never a zero for a
    missing number.
    """
    flops = metrics["operator_flops"]
    latency = metrics["latency"]
    operator_bytes = metrics.get("operator_bytes")
    achieved = _quotient(
        ("metrics.operator_flops", flops),
        ("metrics.latency", latency),
        "FLOP/s",
        "operators dispatched by one call, over the warmed time of one call",
        "metrics.operator_flops / metrics.latency (operator FLOPs of one call over the median "
        "per-call time of the timed blocks)",
        missing="metrics.latency: not recorded",
    )
    rates: dict[str, MetricResult] = {"achieved_flop_rate": achieved}
    if operator_bytes is not None:
        rates["arithmetic_intensity"] = _quotient(
            ("metrics.operator_flops", flops),
            ("metrics.operator_bytes", operator_bytes),
            "FLOP/B",
            "operators dispatched by one call: FLOPs per byte of their tensor inputs and outputs",
            "metrics.operator_flops / metrics.operator_bytes",
            missing="metrics.operator_bytes: not recorded",
        )
    flop_peak, no_flop_peak = _used_peak(peak, "flop_rate")
    bandwidth_peak, no_bandwidth_peak = _used_peak(peak, "bandwidth")
    flop_words = _peak_words(peak, "flop_rate") if peak is not None else "no peak"
    rates["flop_utilization"] = _quotient(
        ("metrics.achieved_flop_rate", achieved),
        ("hardware_peak.flop_rate", flop_peak),
        "ratio",
        "achieved operator FLOP rate as a share of the peak compute rate; above 1 when the "
        "workload beats the peak it is compared with",
        f"metrics.achieved_flop_rate / hardware_peak.flop_rate ({flop_words})",
        missing=no_flop_peak,
    )
    achieved_bandwidth = _quotient(
        ("metrics.operator_bytes", operator_bytes),
        ("metrics.latency", latency),
        "B/s",
        "operator bytes of one call over its warmed time",
        "metrics.operator_bytes / metrics.latency",
        missing="metrics.latency: not recorded",
    )
    bandwidth_words = _peak_words(peak, "bandwidth") if peak is not None else "no peak"
    rates["bandwidth_utilization"] = _quotient(
        ("operator bytes per second", achieved_bandwidth),
        ("hardware_peak.bandwidth", bandwidth_peak),
        "ratio",
        "operator bytes per second (a model of traffic with no cache reuse between operators, "
        "not DRAM traffic) as a share of the peak bandwidth; above 1 when caches serve them",
        f"metrics.operator_bytes / metrics.latency / hardware_peak.bandwidth ({bandwidth_words})",
        missing=no_bandwidth_peak,
    )
    return rates


def _used_peak(peak: HardwarePeak | None, key: str) -> tuple[MetricResult | None, str]:
    """The peak rate ``key`` that utilization divides by, or ``None`` and why there is none."""
    if peak is None:
        return None, f"no peak to compare with: {_HOW_TO_GET_A_PEAK}"
    rate: MetricResult = peak[key]  # type: ignore[literal-required]
    if rate["status"] != "complete":
        return None, f"hardware_peak.{key}: unavailable ({rate['reason']}); {_HOW_TO_GET_A_PEAK}"
    return rate, ""
