"""How close to the hardware's limit: the achieved FLOP rate, the peaks and the utilization.

Exact arithmetic and statuses on numbers built here; the ``hardware_peak`` pass on the CPU with a
small budget (its statuses and its consistency with its own evidence, never its speed); and, with
``-m cuda`` (``make gpu-check``), the measured CUDA peak against the theoretical one.
"""

from __future__ import annotations

import json
import math
import types
from typing import Any

import pytest
import torch
from torch.cuda._device_limits import GPULimits as _RealLimits

from torchscan import (
    IncompleteMeasurementError,
    InvalidArgumentError,
    compare_benchmarks,
    compare_workloads,
    measure_workload,
    validate_report,
)
from torchscan.measure import peak as _peak
from torchscan.measure.noise import NoiseRecord, NoiseSnapshot
from torchscan.measure.peak import (
    Declared,
    check_peak,
    hardware_peak_section,
    measure_hardware_peak,
    peak_dtype,
    rate_metrics,
)
from torchscan.measure.timing import TimingBudget, TimingRun
from torchscan.reports import BenchmarkMetrics, Diagnostic, MeasuredPeak, MetricResult
from torchscan.reports import metrics as _metrics
from torchscan.reports.validation import format_summary

from .conftest import FIXTURES

SHORT: dict[str, Any] = {
    "min_time_s": 0.02,
    "max_time_s": 0.5,
    "min_blocks": 3,
    "warmup_time_s": 0.0,
    "print_summary": False,
}
TINY_PEAK = TimingBudget(min_time_s=0.01, max_time_s=0.2, min_blocks=2, warmup_time_s=0.0)
HOW_TO_GET_A_PEAK = "metrics=[..., 'hardware_peak']"


@pytest.fixture
def tiny_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass's budget, small: these tests check statuses and consistency, not speed."""
    monkeypatch.setattr(_peak, "PEAK_BUDGET", TINY_PEAK)


def metric(status: str, number: float | None = None, unit: str = "FLOPs") -> MetricResult:
    if status == "complete":
        assert number is not None
        return _metrics.complete(number, unit, "scope", "method")
    if status == "partial":
        assert number is not None
        return _metrics.partial(number, unit, "scope", "method", "uncounted: mylib::fused")
    return _metrics.unavailable(unit, "scope", "method", "not requested")


def metrics_of(
    flops: MetricResult, latency: MetricResult, operator_bytes: MetricResult | None = None
) -> BenchmarkMetrics:
    section: dict[str, Any] = {"operator_flops": flops, "latency": latency}
    if operator_bytes is not None:
        section["operator_bytes"] = operator_bytes
    return section  # type: ignore[return-value]


# --------------------------------------------------------------------------- peak= checked


@pytest.mark.parametrize(
    "peak",
    [
        {"flop_rate": 0, "source": "datasheet"},
        {"flop_rate": -1e12, "source": "datasheet"},
        {"flop_rate": math.nan, "source": "datasheet"},
        {"flop_rate": math.inf, "source": "datasheet"},
        {"bandwidth": -math.inf, "source": "datasheet"},
        {"flop_rate": True, "source": "datasheet"},
        {"flop_rate": "989e12", "source": "datasheet"},
        {"flop_rate": [1e12], "source": "datasheet"},
        {"flop_rate": 10**400, "source": "datasheet"},
        # Finite but outside [1, 1e30]: a utilization divided by them leaves the float range.
        {"flop_rate": 5e-324, "source": "datasheet"},
        {"flop_rate": 1e-300, "source": "datasheet"},
        {"flop_rate": 1e308, "source": "datasheet"},
        {"flop_rate": 0.999, "source": "datasheet"},
        {"flop_rate": 1.0000000000000001e30 * 1.0000001, "source": "datasheet"},
        {"bandwidth": 1e-300, "source": "datasheet"},
        {"bandwidth": 5e-324, "flop_rate": 1e12, "source": "datasheet"},
        {"bandwidth": 1e308, "source": "datasheet"},
        {"bandwidth": math.nan, "source": "datasheet"},
        {"flop_rate": 10**31, "source": "datasheet"},
        {"flop_rate": 1e12, "source": "datasheet", "sparsity": 2},
        {"flop_rate": 1e12},
        {"flop_rate": 1e12, "source": ""},
        {"flop_rate": 1e12, "source": "   "},
        {"flop_rate": 1e12, "source": 3},
        {"flop_rate": 1e12, "source": "a\0b"},
        {"flop_rate": 1e12, "source": "a\ud800b"},
        {"source": "datasheet"},
        {"flop_rate": None, "bandwidth": None, "source": "datasheet"},
        [("flop_rate", 1e12), ("source", "datasheet")],
        "989e12",
        989e12,
    ],
    ids=repr,
)
def test_a_bad_peak_is_refused_before_anything_runs(peak: Any) -> None:
    calls: list[int] = []

    def workload() -> None:
        calls.append(1)

    with pytest.raises(InvalidArgumentError, match="peak"):
        measure_workload(workload, peak=peak, **SHORT)
    assert calls == []


@pytest.mark.parametrize("value", [5e-324, 1e-300, 1e308, math.inf, math.nan])
def test_a_peak_outside_its_range_is_named_with_the_range(value: float) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        check_peak({"flop_rate": 1e12, "bandwidth": value, "source": "datasheet"})
    assert str(raised.value) == (
        f"peak['bandwidth'] must be a positive, finite number in [1, 1e+30] (B/s); got {value!r}"
    )


def test_the_ends_of_the_peak_range_are_accepted() -> None:
    assert check_peak({"flop_rate": 1, "bandwidth": 1e30, "source": "s"}) == (
        Declared(1.0, 1e30, "s")
    )
    assert check_peak({"flop_rate": 10**30, "bandwidth": 1.0, "source": "s"}) == (
        Declared(1e30, 1.0, "s")
    )


def test_a_peak_may_leave_out_either_rate() -> None:
    assert check_peak(None) is None
    assert check_peak({"flop_rate": 989e12, "source": "H100 SXM datasheet, dense BF16"}) == (
        Declared(989e12, None, "H100 SXM datasheet, dense BF16")
    )
    assert check_peak({"bandwidth": 3_350_000_000_000, "flop_rate": None, "source": "s"}) == (
        Declared(None, 3.35e12, "s")
    )


# --------------------------------------------------------------------------- exact arithmetic


def test_a_declared_peak_gives_exact_utilization() -> None:
    # 2e9 FLOPs in 2**-7 s: 2.56e11 FLOP/s; 2**20 operator bytes in 2**-7 s: 2**27 B/s.
    flops = metric("complete", 2_000_000_000)
    latency = metric("complete", 2**-7, "s")
    operator_bytes = metric("complete", 2**20, "B")
    peak = hardware_peak_section(Declared(5.12e11, 2.0**30, "a test's declared peak"), None)
    assert peak is not None
    assert (peak["flop_rate_origin"], peak["bandwidth_origin"]) == ("declared", "declared")
    assert peak["measured"] is None
    assert peak["flop_rate"]["method"] == "declared by the caller"
    rates = rate_metrics(metrics_of(flops, latency, operator_bytes), peak)
    assert rates["achieved_flop_rate"]["value"] == 2.56e11
    assert rates["achieved_flop_rate"]["unit"] == "FLOP/s"
    assert rates["flop_utilization"]["value"] == 0.5
    assert rates["flop_utilization"]["unit"] == "ratio"
    assert rates["arithmetic_intensity"]["value"] == 1907.3486328125
    assert rates["arithmetic_intensity"]["unit"] == "FLOP/B"
    assert rates["bandwidth_utilization"]["value"] == 0.125
    for rate in rates.values():
        assert rate["status"] == "complete"
        assert rate["known_value"] == rate["value"]
    assert "declared by the caller: a test's declared peak" in (rates["flop_utilization"]["method"])


def test_a_partial_count_gives_lower_bounds() -> None:
    flops = metric("partial", 1_000_000_000)
    latency = metric("complete", 0.25, "s")
    operator_bytes = metric("partial", 2_000_000, "B")
    peak = hardware_peak_section(Declared(8e9, 1.6e7, "declared"), None)
    rates = rate_metrics(metrics_of(flops, latency, operator_bytes), peak)
    achieved = rates["achieved_flop_rate"]
    assert (achieved["status"], achieved["value"], achieved["known_value"]) == (
        "partial",
        None,
        4e9,
    )
    assert "lower bound" in str(achieved["reason"])
    utilization = rates["flop_utilization"]
    assert (utilization["status"], utilization["known_value"]) == ("partial", 0.5)
    bandwidth = rates["bandwidth_utilization"]
    assert (bandwidth["status"], bandwidth["known_value"]) == ("partial", 0.5)
    # A lower bound of the bytes bounds the intensity from above only: no number.
    intensity = rates["arithmetic_intensity"]
    assert (intensity["status"], intensity["value"], intensity["known_value"]) == (
        "unavailable",
        None,
        None,
    )


def test_without_a_peak_utilization_says_how_to_get_one() -> None:
    rates = rate_metrics(
        metrics_of(metric("complete", 1e9), metric("complete", 0.5, "s")), peak=None
    )
    assert rates["achieved_flop_rate"]["value"] == 2e9
    for key in ("flop_utilization", "bandwidth_utilization"):
        utilization = rates[key]
        assert utilization["status"] == "unavailable"
        assert utilization["value"] is None and utilization["known_value"] is None
        assert HOW_TO_GET_A_PEAK in str(utilization["reason"])
        assert "peak={" in str(utilization["reason"])
    assert "operator_bytes: not recorded" in str(rates["bandwidth_utilization"]["reason"])
    assert "arithmetic_intensity" not in rates


def test_a_missing_input_is_never_a_zero() -> None:
    rates = rate_metrics(
        metrics_of(metric("complete", 1e9), metric("unavailable", unit="s")),
        hardware_peak_section(Declared(1e12, None, "declared"), None),
    )
    achieved = rates["achieved_flop_rate"]
    assert (achieved["status"], achieved["value"]) == ("unavailable", None)
    assert achieved["reason"] == "metrics.latency: unavailable (not requested)"
    assert rates["flop_utilization"]["status"] == "unavailable"
    # A peak bandwidth that was not declared gives no bandwidth utilization, and says so.
    assert "hardware_peak.bandwidth: unavailable (not declared" in str(
        rates["bandwidth_utilization"]["reason"]
    )


def test_a_quotient_beyond_the_float_range_is_unavailable_never_infinite() -> None:
    # Numbers no checked argument gives, as a report made elsewhere might: 1e300 FLOPs in
    # 1e-9 s overflows, and a rate over a peak of 1e300 underflows to zero.
    rates = rate_metrics(
        metrics_of(
            metric("complete", 1e300),
            metric("complete", 1e-9, "s"),
            metric("complete", 1e300, "B"),
        ),
        hardware_peak_section(Declared(1e12, 1e-300, "declared"), None),
    )
    achieved = rates["achieved_flop_rate"]
    assert (achieved["status"], achieved["value"], achieved["known_value"]) == (
        "unavailable",
        None,
        None,
    )
    assert achieved["reason"] == (
        "metrics.operator_flops / metrics.latency (1e+300 / 1e-09) is beyond the range of a float"
    )
    assert rates["arithmetic_intensity"]["value"] == 1.0
    for key in ("flop_utilization", "bandwidth_utilization"):
        assert rates[key]["status"] == "unavailable", key
    underflow = rate_metrics(
        metrics_of(metric("partial", 1e-300), metric("complete", 1.0, "s")),
        hardware_peak_section(Declared(1e30, None, "declared"), None),
    )
    utilization = underflow["flop_utilization"]
    assert (utilization["status"], utilization["known_value"]) == ("unavailable", None)
    assert "beyond the range of a float" in str(utilization["reason"])


def test_a_peak_out_of_range_never_makes_an_invalid_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the check (as a peak from another caller of the pipeline could be), a subnormal
    # peak leaves both utilizations unavailable with the reason: the report stays valid.
    import torchscan.measure.workload

    monkeypatch.setattr(
        torchscan.measure.workload, "check_peak", lambda peak: Declared(5e-324, 1e-300, "s")
    )
    workload, inputs = _linear()
    report = measure_workload(
        workload, inputs=inputs, metrics=["latency", "operator_flops"], peak={}, **SHORT
    )
    assert validate_report(report) == "benchmark"
    for key in ("flop_utilization", "bandwidth_utilization"):
        metric_result = report["metrics"][key]  # type: ignore[literal-required]
        assert metric_result["status"] == "unavailable", key
        assert "beyond the range of a float" in str(metric_result["reason"]), key
    assert "inf" not in format_summary(report).lower()


def test_the_fixtures_rates_are_what_the_pass_computes() -> None:
    report = json.loads((FIXTURES / "reports/benchmark_hardware_peak.json").read_text("utf-8"))
    rates = rate_metrics(report["metrics"], report["hardware_peak"])
    for key, rate in rates.items():
        assert rate == report["metrics"][key], key
    # The example: y = a @ b, a 256 x 512 and b 512 x 128 in float32.
    assert report["metrics"]["operator_flops"]["value"] == 33_554_432
    assert report["metrics"]["operator_bytes"]["value"] == 917_504


def test_the_peak_dtype_is_the_main_floating_dtype() -> None:
    assert peak_dtype(["torch.bfloat16", "torch.float32"]) == "torch.bfloat16"
    assert peak_dtype(["torch.int64", "torch.float16"]) == "torch.float16"
    assert peak_dtype(["torch.int64"]) == "torch.float32"
    assert peak_dtype([]) == "torch.float32"


# --------------------------------------------------------------------------- measure_workload


def _linear() -> tuple[Any, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128).eval()
    inputs = torch.randn(1, 128)

    @torch.inference_mode()
    def workload() -> torch.Tensor:
        return model(inputs)

    return workload, inputs


def test_a_declared_peak_is_recorded_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    workload, inputs = _linear()
    source = "a declared peak for a test: dense float32, no sparsity factor"
    report = measure_workload(
        workload,
        inputs=inputs,
        metrics=["latency", "operator_flops"],
        peak={"flop_rate": 1e12, "bandwidth": 1e11, "source": source},
        **{**SHORT, "print_summary": True},
    )
    printed = capsys.readouterr().out
    assert validate_report(report) == "benchmark"
    peak = report["hardware_peak"]
    assert peak["declared"] is not None and peak["declared"]["source"] == source
    assert peak["measured"] is None
    assert report["settings"]["passes"] == ["latency", "operator_flops"]
    achieved = report["metrics"]["achieved_flop_rate"]
    assert achieved["status"] == "complete"
    assert achieved["value"] == (
        report["metrics"]["operator_flops"]["value"] / report["metrics"]["latency"]["value"]
    )
    utilization = report["metrics"]["flop_utilization"]
    assert utilization["value"] == achieved["value"] / 1e12
    assert source in utilization["method"]
    # The operator bytes of the same pass give the intensity and the bandwidth utilization.
    metrics = report["metrics"]
    assert metrics["operator_bytes"]["status"] == "complete"
    assert metrics["arithmetic_intensity"]["value"] == (
        metrics["operator_flops"]["value"] / metrics["operator_bytes"]["value"]
    )
    bandwidth = metrics["bandwidth_utilization"]
    assert bandwidth["status"] == "complete"
    assert bandwidth["value"] == pytest.approx(
        metrics["operator_bytes"]["value"] / metrics["latency"]["value"] / 1e11, rel=1e-12
    )
    # The summary adds its lines after the ones it always printed, which stay as they were.
    assert "  Achieved: " in printed
    assert "declared peak)" in printed
    plain = json.loads(json.dumps(report))
    del plain["hardware_peak"]
    for key in (
        "achieved_flop_rate",
        "operator_bytes",
        "arithmetic_intensity",
        "flop_utilization",
        "bandwidth_utilization",
    ):
        del plain["metrics"][key]
    before = format_summary(plain)
    assert printed.startswith(before.split("  Diagnostics:")[0])
    assert "Achieved" not in before


def test_the_hardware_peak_pass_on_cpu(tiny_peak: None) -> None:
    workload, inputs = _linear()
    report = measure_workload(
        workload,
        inputs=inputs,
        metrics=["latency", "operator_flops", "hardware_peak"],
        **SHORT,
    )
    assert validate_report(report) == "benchmark"
    assert report["settings"]["passes"] == ["latency", "operator_flops", "hardware_peak"]
    peak = report["hardware_peak"]
    measured = peak["measured"]
    assert measured is not None and peak["declared"] is None
    assert measured["dtype"] == "torch.float32"
    assert (peak["flop_rate_origin"], peak["bandwidth_origin"]) == ("measured", "measured")
    for key, timing_key, work in (
        ("flop_rate", "matmul_timing", 2.0 * measured["matmul_size"] ** 3),
        ("bandwidth", "copy_timing", 2.0 * measured["copy_bytes"]),
    ):
        rate = measured[key]  # type: ignore[literal-required]
        assert rate["status"] == "complete", rate
        assert peak[key] == rate  # type: ignore[literal-required]
        timing = measured[timing_key]  # type: ignore[literal-required]
        # A peak is the fastest block's rate: noise only slows a block down.
        per_call = min(timing["block_durations_s"]) / timing["calls_per_block"]
        assert rate["value"] == work / per_call
    assert "1 PyTorch thread" in measured["flop_rate"]["scope"] or (
        f"{torch.get_num_threads()} PyTorch threads" in measured["flop_rate"]["scope"]
    )
    for key in ("theoretical_flop_rate", "theoretical_bandwidth"):
        theoretical = measured[key]  # type: ignore[literal-required]
        assert theoretical["status"] == "unavailable"
        assert "CUDA" in str(theoretical["reason"])
    utilization = report["metrics"]["flop_utilization"]
    assert utilization["status"] == "complete"
    assert utilization["value"] == (
        report["metrics"]["achieved_flop_rate"]["value"] / measured["flop_rate"]["value"]
    )
    assert "measured dense matmul peak" in utilization["method"]


def test_a_declared_rate_is_used_over_the_measured_one(tiny_peak: None) -> None:
    workload, inputs = _linear()
    report = measure_workload(
        workload,
        inputs=inputs,
        metrics=["latency", "operator_flops", "hardware_peak"],
        peak={"flop_rate": 2e12, "source": "declared for a test"},
        **SHORT,
    )
    assert validate_report(report) == "benchmark"
    peak = report["hardware_peak"]
    assert peak["measured"] is not None and peak["declared"] is not None
    # The caller declared a compute rate and no bandwidth: each rate has its own origin.
    assert (peak["flop_rate_origin"], peak["bandwidth_origin"]) == ("declared", "measured")
    assert peak["flop_rate"]["value"] == 2e12
    assert peak["bandwidth"] == peak["measured"]["bandwidth"]
    method = report["metrics"]["flop_utilization"]["method"]
    assert "declared by the caller: declared for a test" in method
    assert "a declared peak is used over the measured one" in method


def test_a_copy_that_cannot_run_leaves_the_bandwidth_unavailable(
    tiny_peak: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_copy(device: Any, dtype: Any, numel: int) -> Any:
        raise RuntimeError("CUDA out of memory. Tried to allocate 256.00 MiB")

    monkeypatch.setattr(_peak, "_copy", no_copy)
    workload, _ = _linear()
    with pytest.raises(IncompleteMeasurementError) as caught:
        measure_workload(
            workload,
            metrics=["latency", "operator_flops", "hardware_peak"],
            strict=True,
            **SHORT,
        )
    report = caught.value.report
    assert validate_report(report) == "benchmark"
    assert ("hardware_peak.measured.bandwidth", "unavailable") in caught.value.metrics
    measured = report["hardware_peak"]["measured"]
    assert measured["copy_timing"] is None
    assert "the copy could not run: CUDA out of memory" in str(measured["bandwidth"]["reason"])
    assert report["hardware_peak"]["bandwidth_origin"] is None
    assert measured["flop_rate"]["status"] == "complete"
    assert report["metrics"]["flop_utilization"]["status"] == "complete"


def test_the_pass_measures_in_the_dtype_it_is_given() -> None:
    measured = measure_hardware_peak(torch.device("cpu"), "torch.float64", TINY_PEAK)
    assert measured["dtype"] == "torch.float64"
    assert measured["flop_rate"]["status"] == "complete"
    assert "torch.float64" in measured["flop_rate"]["scope"]
    assert measured["copy_bytes"] % 8 == 0


def test_without_a_peak_no_section_is_written() -> None:
    workload, _ = _linear()
    report = measure_workload(workload, metrics=["latency", "operator_flops"], **SHORT)
    assert "hardware_peak" not in report
    assert report["metrics"]["flop_utilization"]["status"] == "unavailable"


def test_compare_workloads_refuses_the_pass() -> None:
    workload, _ = _linear()
    with pytest.raises(InvalidArgumentError, match="hardware_peak"):
        compare_workloads(
            workload, workload, rtol=0.0, atol=0.0, metrics=["latency", "hardware_peak"]
        )


def test_a_comparison_shows_the_change_of_utilization() -> None:
    report = json.loads((FIXTURES / "reports/benchmark_hardware_peak.json").read_text("utf-8"))
    comparison = compare_benchmarks(report, report)
    rows = {delta["metric"]: delta for delta in comparison["deltas"]}
    for key in ("achieved_flop_rate", "flop_utilization"):
        assert rows[key]["status"] == "complete"
        assert rows[key]["ratio"] == 1.0
        assert rows[key]["verdict"] is None


# --------------------------------------------------------------------------- the peak pass's noise


def _scripted(seconds: dict[int, float]) -> tuple[Any, list[int]]:
    """A ``fastest_s`` of the size search that gives each size's seconds and logs the sizes."""
    asked: list[int] = []

    def fastest_s(size: int) -> float:
        asked.append(size)
        return seconds[size]

    return fastest_s, asked


def _search(seconds: dict[int, float], limit_s: float = 1.5) -> tuple[int, list[int]]:
    fastest_s, asked = _scripted(seconds)
    size, tried = _peak._search_size(fastest_s, 2048, 0.01, limit_s)
    assert [n for n, _ in tried] == asked
    return size, asked


def test_the_size_search_stops_where_the_rate_levels_off() -> None:
    # A quiet CPU at about 107 GFLOP/s: 1,024 reaches 10 ms with no rise over 512.
    quiet = {256: 0.0003, 512: 0.0025, 1024: 0.02, 2048: 0.16}
    assert _search(quiet) == (1024, [256, 512, 1024])


def test_a_slow_first_size_does_not_end_the_size_search() -> None:
    # Calls of 256 slowed by other processes reach the 10 ms target; the larger sizes rise far
    # above their rate, so the search goes on to where the rate levels off.
    assert _search({256: 0.016, 512: 0.0014, 1024: 0.011, 2048: 0.09}) == (
        1024,
        [256, 512, 1024],
    )
    # Every size slowed by a fixed stall: the rate keeps rising up to the largest size.
    stalled = {256: 0.016, 512: 0.018, 1024: 0.027, 2048: 0.106}
    assert _search(stalled) == (2048, [256, 512, 1024, 2048])


def test_the_size_search_goes_on_past_a_drop() -> None:
    # 1,024 slowed tenfold (a drop): the search goes on, and keeps the best size it found.
    size, asked = _search({256: 0.0003, 512: 0.0025, 1024: 0.2, 2048: 0.16}, limit_s=10.0)
    assert (size, asked) == (2048, [256, 512, 1024, 2048])
    # Within its time limit only: 1,024 at its slow rate would take the search past 1.5 s.
    assert _search({256: 0.0003, 512: 0.0025, 1024: 0.2, 2048: 0.16}) == (512, [256, 512, 1024])


def test_a_size_too_large_for_the_device_ends_the_search_at_the_sizes_before() -> None:
    def fastest_s(size: int) -> float:
        if size > 512:
            raise RuntimeError("out of memory")
        return {256: 0.0003, 512: 0.0025}[size]

    assert _peak._search_size(fastest_s, 2048, 0.01, 1.5)[0] == 512


def test_one_slow_call_no_longer_ends_the_measured_search(
    tiny_peak: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pass's own timer, scripted by the matmul's size: the first timed call of 256 x 256 is
    # slow (20 ms, past the 10 ms target), every other call takes a quiet machine's time.
    quiet = {256: 0.0003, 512: 0.0025, 1024: 0.02, 2048: 0.16}
    slow_once = [0.02]

    def timer(call: Any, sync: Any) -> tuple[float, Any]:
        output = call()
        size = int(output.shape[0])
        return (slow_once.pop() if size == 256 and slow_once else quiet[size]), output

    monkeypatch.setattr(_peak, "timed_call", timer)
    monkeypatch.setattr(_peak, "RETIME_FACTOR", 1e9, raising=False)  # the blocks timed once
    measured = measure_hardware_peak(torch.device("cpu"), "torch.float32")
    assert measured["matmul_size"] == 1024
    assert "(256: 112, 512: 107, 1,024: 107)" in measured["flop_rate"]["method"]


def _run(per_call_s: list[float], calls: int = 2, busy: bool = False) -> TimingRun:
    """A timing run of the pass with these blocks; other processes at 45% of the CPU if busy."""

    def snapshot(jiffies: tuple[int, ...], own: int, at_ns: int) -> NoiseSnapshot:
        return NoiseSnapshot(jiffies, own, 0, "no cpufreq driver", at_ns)

    start = snapshot((0,) * 8, 0, 0)
    # 200 jiffies in all: 100 busy, of which 10 this process's.
    end = snapshot((100 if busy else 10, 0, 0, 100 if busy else 190, 0, 0, 0, 0), 10, 10**9)
    return TimingRun(
        first_call_s=per_call_s[0],
        warmup_calls=1,
        calls_per_block=calls,
        timer_overhead_s=1e-8,
        block_durations_s=[value * calls for value in per_call_s],
        block_starts_s=[float(index) for index in range(len(per_call_s))],
        noise=NoiseRecord(start, end),
    )


def _scripted_pass(
    monkeypatch: pytest.MonkeyPatch, runs: list[TimingRun]
) -> tuple[MeasuredPeak, list[Diagnostic], list[TimingRun]]:
    """The pass with a scripted search (512 x 512 at 0.16 s a call) and these timing runs."""
    monkeypatch.setattr(
        _peak, "_fastest_matmul_s", lambda device, dtype, size, sync: {256: 0.02, 512: 0.16}[size]
    )
    left = list(runs)
    monkeypatch.setattr(_peak, "run_timing", lambda workload, device, budget: left.pop(0))
    diagnostics: list[Diagnostic] = []
    measured = measure_hardware_peak(torch.device("cpu"), "torch.float32", None, diagnostics)
    return measured, diagnostics, left


def test_a_matmul_slower_than_its_search_is_timed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    slow, quiet, copy = _run([0.5, 0.52, 0.51]), _run([0.17, 0.17, 0.171]), _run([0.01] * 3)
    measured, diagnostics, left = _scripted_pass(monkeypatch, [slow, quiet, copy])
    assert left == []
    assert measured["matmul_size"] == 512
    timing = measured["matmul_timing"]
    assert timing is not None and timing["block_durations_s"] == quiet.block_durations_s
    assert measured["flop_rate"]["value"] == 2.0 * 512**3 / 0.17
    assert (
        "timed twice, the run with the faster fastest block kept (the first one's ran "
        in (measured["flop_rate"]["method"])
    )
    assert diagnostics == []


def test_a_peak_pass_on_a_busy_machine_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both matmul runs 3x slower than the search and taken on a busy machine, the copy's blocks
    # spread: a noisy_peak warning for each rate, with its reasons.
    matmul = _run([0.5, 0.52, 0.51], busy=True)
    again = _run([0.49, 0.6, 0.5], busy=True)
    copy = _run([0.01, 0.02, 0.011, 0.03])
    measured, diagnostics, _ = _scripted_pass(monkeypatch, [matmul, again, copy])
    timing = measured["matmul_timing"]
    assert timing is not None and timing["block_durations_s"] == again.block_durations_s
    assert [(d["code"], d["severity"], d["metric"]) for d in diagnostics] == [
        ("noisy_peak", "warning", "hardware_peak.measured.flop_rate"),
        ("noisy_peak", "warning", "hardware_peak.measured.bandwidth"),
    ]
    assert diagnostics[0]["message"] == (
        "the hardware_peak pass's matmul rate may read below what the device attains: "
        "machine_other_cpu_ratio 0.450 (other processes used 45% of all CPU time; threshold "
        "0.10); its fastest timed block ran 3.06x slower per call than the fastest call of the "
        "size search (threshold 1.5x), timed twice. A utilization divided by it then reads high: "
        "measure the peak again on a quiet machine, or declare one with peak="
    )
    assert (
        "its 4 timed blocks spread (IQR 76% of the median; threshold 25%)"
        in (diagnostics[1]["message"])
    )
    # A quiet pass says nothing.
    quiet = [_run([0.17, 0.17, 0.171]), _run([0.01] * 3)]
    assert _scripted_pass(monkeypatch, quiet)[1] == []


def test_the_peak_pass_warning_reaches_the_report(
    tiny_peak: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run_timing = _peak.run_timing

    def busy(workload: Any, device: Any, budget: Any) -> TimingRun:
        run = real_run_timing(workload, device, budget)
        run.noise = _run([1.0], busy=True).noise
        return run

    monkeypatch.setattr(_peak, "run_timing", busy)
    workload, inputs = _linear()
    report = measure_workload(
        workload, inputs=inputs, metrics=["latency", "operator_flops", "hardware_peak"], **SHORT
    )
    assert validate_report(report) == "benchmark"
    noisy = [d for d in report["diagnostics"] if d["code"] == "noisy_peak"]
    assert [d["metric"] for d in noisy] == [
        "hardware_peak.measured.flop_rate",
        "hardware_peak.measured.bandwidth",
    ]
    assert all("machine_other_cpu_ratio 0.450" in d["message"] for d in noisy)
    assert "warning noisy_peak: the hardware_peak pass's matmul rate" in format_summary(report)


# --------------------------------------------------------------------------- CUDA


class _H100Limits:
    """torch's ``GPULimits`` with the properties of an H100 SXM, so that the theoretical path runs
    without a GPU: 132 SMs at 1,980 MHz, a 5,120-bit bus at 2,619 MHz."""

    def __init__(self, device: Any) -> None:
        self._real = _RealLimits.__new__(_RealLimits)
        self._real.device_properties = types.SimpleNamespace(
            major=9,
            minor=0,
            multi_processor_count=132,
            clock_rate=1_980_000,
            memory_bus_width=5120,
            memory_clock_rate=2_619_000,
        )
        self._real.compute_capability = 90
        self.device_properties = self._real.device_properties

    def get_tflops_per_second(self, dtype: Any, use_tensor_cores: bool = True) -> float:
        return float(self._real.get_tflops_per_second(dtype, use_tensor_cores))

    def get_memory_bandwidth_Bps(self) -> int:
        return int(self._real.get_memory_bandwidth_Bps())


@pytest.mark.parametrize(
    ("dtype", "tf32", "fma_per_cycle", "units"),
    [
        (torch.float32, False, 128, "CUDA cores (TF32 not allowed)"),
        (torch.float32, True, 1024, "TF32 tensor cores"),
        (torch.bfloat16, False, 2048, "tensor cores"),
    ],
)
def test_the_theoretical_peak_follows_the_dtype_and_tf32(
    monkeypatch: pytest.MonkeyPatch, dtype: Any, tf32: bool, fma_per_cycle: int, units: str
) -> None:
    import torch.cuda._device_limits as limits

    monkeypatch.setattr(limits, "GPULimits", _H100Limits)
    monkeypatch.setattr(_peak, "_tf32_allowed", lambda: tf32)
    compute, memory = _peak._theoretical(torch.device("cuda", 0), dtype)
    assert compute["status"] == "complete", compute["reason"]
    assert compute["value"] == 132 * fma_per_cycle * 2 * 1_980_000 / 1e9 * 1e12
    assert f"{units}, dense (no sparsity factor)" in compute["method"]
    assert "compute capability 9.0, 132 SMs, clock 1980 MHz" in compute["method"]
    assert memory["value"] == 2 * 5120 // 8 * 2_619_000 * 1000  # 3.352 TB/s
    assert "theoretical" in compute["scope"] and "never attained" in memory["scope"]


def test_an_architecture_torch_does_not_know_has_no_theoretical_peak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch.cuda._device_limits as limits

    class Unknown(_H100Limits):
        def get_tflops_per_second(self, dtype: Any, use_tensor_cores: bool = True) -> float:
            raise RuntimeError("No data for sm_89 and torch.float32.")

    monkeypatch.setattr(limits, "GPULimits", Unknown)
    compute, memory = _peak._theoretical(torch.device("cuda", 0), torch.float32)
    assert (compute["status"], compute["value"]) == ("unavailable", None)
    assert "No data for sm_89" in str(compute["reason"])
    assert memory["status"] == "complete"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_measured_cuda_peak_stays_below_the_theoretical_one() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    for dtype in ("torch.float32", "torch.bfloat16"):
        measured = measure_hardware_peak(device, dtype)
        for key in ("flop_rate", "bandwidth"):
            assert measured[key]["status"] == "complete", measured[key]  # type: ignore[literal-required]
        for measured_key, theoretical_key in (
            ("flop_rate", "theoretical_flop_rate"),
            ("bandwidth", "theoretical_bandwidth"),
        ):
            theoretical = measured[theoretical_key]  # type: ignore[literal-required]
            if theoretical["status"] != "complete":
                assert theoretical["reason"], theoretical
                continue
            value = measured[measured_key]["value"]  # type: ignore[literal-required]
            assert value <= theoretical["value"] * 1.05, (dtype, measured_key, value, theoretical)
