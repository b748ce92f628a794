"""Numeric arguments of the public functions: in range, or InvalidArgumentError naming them.

The regression tests pin the exact messages of values that used to slip through (a throughput of
``inf`` from ``work_units=1e308``, an ``OverflowError`` from a huge int, ``StatisticsError`` from a
confidence level next to 1). The property tests draw valid, edge and invalid values for every
numeric argument of every public function that returns a report, and check each outcome against
an independent statement of the documented ranges: every valid call returns reports that pass
``validate_report``, every invalid one raises ``InvalidArgumentError`` naming an invalid argument.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchscan import (
    InvalidArgumentError,
    check_outputs,
    compare_benchmarks,
    compare_workloads,
    crawl_module,
    format_summary,
    measure_workload,
    metric_result,
    summary,
    validate_report,
)

TINY = 5e-324  # the smallest positive float
BELOW_ONE = math.nextafter(1.0, 0.0)  # the largest float below 1
HUGE_INT = 10**400  # beyond every finite float
NOT_NUMBERS: list[Any] = [True, False, None, "1", 1j, object()]
NON_FINITE = [math.nan, math.inf, -math.inf]


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


torch.manual_seed(0)
MODEL = torch.nn.Linear(4, 4)
INPUT = torch.randn(2, 4)


def workload() -> torch.Tensor:
    with torch.no_grad():
        return MODEL(INPUT)


QUICK: dict[str, Any] = {
    "min_time_s": 0.002,
    "max_time_s": 0.01,
    "min_blocks": 2,
    "warmup_time_s": 0.0,
    "print_summary": False,
}


def error_of(call: Callable[[], object]) -> str:
    with pytest.raises(InvalidArgumentError) as caught:
        call()
    return str(caught.value)


# Regression tests: each value below used to give an invalid report or a bare Python error.


def test_a_huge_work_units_is_refused_instead_of_an_infinite_throughput() -> None:
    message = error_of(lambda: measure_workload(workload, work_units=1e308, **QUICK))
    assert message == (
        "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one call "
        "completes); got 1e+308"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"work_units": HUGE_INT},
            "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one "
            "call completes); got an int of 1329 bits, beyond any finite float",
        ),
        (
            {"work_units": TINY},
            "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one "
            "call completes); got 5e-324",
        ),
        (
            {"work_units": True},
            "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one "
            "call completes); got True of type bool",
        ),
        (
            {"max_time_s": 1e308},
            "max_time_s must be a positive, finite number in (0, 86400] (seconds); got 1e+308",
        ),
        (
            {"min_time_s": math.nan},
            "min_time_s must be a positive, finite number in (0, 86400] (seconds); got nan",
        ),
        (
            {"min_time_s": 0.5, "max_time_s": 0.1},
            "max_time_s must be >= min_time_s; got min_time_s=0.5 and max_time_s=0.1",
        ),
        (
            {"warmup_time_s": -1.0},
            "warmup_time_s must be a finite number in [0, 86400] (seconds); got -1.0",
        ),
        (
            {"min_blocks": 10**30},
            "min_blocks must be an integer from 1 to 1,000,000 (timed blocks); got "
            "1000000000000000000000000000000",
        ),
        (
            {"profiler_calls": 2.0},
            "profiler_calls must be an integer from 1 to 1,000,000 (calls of the profiler pass); "
            "got 2.0 of type float",
        ),
        (
            {"rss_timeout_s": -1},
            "rss_timeout_s must be a positive, finite number in (0, 86400] (seconds); got -1",
        ),
        (
            {"rss_timeout_s": math.inf},
            "rss_timeout_s must be a positive, finite number in (0, 86400] (seconds); got inf",
        ),
    ],
)
def test_measure_workload_names_the_argument_out_of_range(
    arguments: dict[str, Any], message: str
) -> None:
    calls: list[int] = []

    def counted() -> None:
        calls.append(1)

    assert error_of(lambda: measure_workload(counted, **{**QUICK, **arguments})) == message
    assert calls == []  # refused before the workload ran


def test_a_confidence_level_next_to_one_is_usable() -> None:
    # 0.5 + level / 2 rounds to 1.0 here, where the normal quantile is undefined.
    experiment = compare_workloads(
        workload,
        workload,
        rtol=0,
        atol=0,
        metrics=["latency"],
        confidence_level=BELOW_ONE,
        bootstrap_resamples=10,
        **QUICK,
    )
    assert validate_report(experiment.comparison) == "benchmark_comparison"
    assert experiment.comparison["settings"]["confidence_level"] == BELOW_ONE


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"confidence_level": 1},
            "confidence_level must be a positive, finite number in (0, 1); got 1",
        ),
        (
            {"confidence_level": math.nan},
            "confidence_level must be a positive, finite number in (0, 1); got nan",
        ),
        (
            {"bootstrap_resamples": 1_000_001},
            "bootstrap_resamples must be an integer from 1 to 1,000,000; got 1000001",
        ),
        (
            {"seed": 2**64},
            "seed must be an integer from 0 to 18,446,744,073,709,551,615; got "
            "18446744073709551616",
        ),
        (
            {"seed": False},
            "seed must be an integer from 0 to 18,446,744,073,709,551,615; got False of type bool",
        ),
        (
            {"min_effect": math.inf},
            "min_effect must be a finite number >= 0 (a relative change, for example 0.02); "
            "got inf",
        ),
    ],
)
def test_compare_benchmarks_names_the_option_out_of_range(
    arguments: dict[str, Any], message: str, benchmark: dict[str, Any]
) -> None:
    assert error_of(lambda: compare_benchmarks(benchmark, benchmark, **arguments)) == message


def test_tolerances_and_metric_numbers_refuse_an_int_beyond_every_float() -> None:
    assert error_of(lambda: check_outputs(1.0, 1.0, rtol=HUGE_INT, atol=0)) == (
        "rtol must be a finite number >= 0 (a tolerance); got an int of 1329 bits, beyond any "
        "finite float"
    )
    assert error_of(
        lambda: metric_result(status="complete", value=HUGE_INT, unit="s", scope="s", method="m")
    ) == ("value must fit in a finite float, got an int of 1329 bits")
    # The largest int that is still a finite float is a tolerance like any other.
    largest = int(sys.float_info.max)
    assert validate_report(check_outputs(1.0, 1.0, rtol=largest, atol=0)) == "output_check"


def test_max_depth_beyond_the_core_is_refused_before_the_analysis() -> None:
    report = crawl_module(MODEL, (4,))
    expected = "max_depth must be an integer from 0 to 9,223,372,036,854,775,807; got {}"
    assert error_of(lambda: format_summary(report, max_depth=2**70)) == expected.format(2**70)
    assert error_of(lambda: format_summary(report, max_depth=-1)) == expected.format(-1)
    assert error_of(lambda: summary(MODEL, (4,), max_depth=2**64, file=io.StringIO())) == (
        expected.format(2**64)
    )


@pytest.mark.parametrize(
    ("input_shape", "message"),
    [
        (
            (2**70,),
            "input_shape must describe at most 2**48 elements per input (its bytes must fit "
            "torch's 64-bit sizes); got about 2**70",
        ),
        (
            (2**25, 2**24),
            "input_shape must describe at most 2**48 elements per input (its bytes must fit "
            "torch's 64-bit sizes); got about 2**49",
        ),
        ((-HUGE_INT,), "input_shape sizes must be positive, got a size below zero"),
        ((4, 0), "input_shape sizes must be positive, got (4, 0)"),
    ],
)
def test_input_shape_is_refused_before_torch_allocates(
    input_shape: tuple[int, ...], message: str
) -> None:
    assert error_of(lambda: crawl_module(MODEL, input_shape)) == message


# Property tests: an oracle that states the documented ranges, independently of the code.


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def in_range(
    value: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> bool:
    if not is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
        return False
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        return False
    above_low = value > low if low_open else value >= low
    below_high = value < high if high_open else value <= high
    return above_low and below_high


def is_count(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


RANGES: dict[str, Callable[[Any], bool]] = {
    "work_units": lambda v: in_range(v, 1e-9, 1e18),
    "min_time_s": lambda v: in_range(v, 0, 86_400, low_open=True),
    "max_time_s": lambda v: in_range(v, 0, 86_400, low_open=True),
    "warmup_time_s": lambda v: in_range(v, 0, 86_400),
    "rss_timeout_s": lambda v: in_range(v, 0, 86_400, low_open=True),
    "min_blocks": lambda v: is_count(v, 1, 1_000_000),
    "profiler_calls": lambda v: is_count(v, 1, 1_000_000),
    "rtol": lambda v: in_range(v, 0, math.inf),
    "atol": lambda v: in_range(v, 0, math.inf),
    "min_effect": lambda v: in_range(v, 0, math.inf),
    "confidence_level": lambda v: in_range(v, 0, 1, low_open=True, high_open=True),
    "bootstrap_resamples": lambda v: is_count(v, 1, 1_000_000),
    "seed": lambda v: is_count(v, 0, 2**64 - 1),
    "max_depth": lambda v: v is None or is_count(v, 0, sys.maxsize),
}


def invalid_names(arguments: dict[str, Any]) -> set[str]:
    """The arguments the documented ranges refuse (``max_time_s`` below a valid ``min_time_s``)."""
    invalid = {name for name, value in arguments.items() if not RANGES[name](value)}
    if (
        {"min_time_s", "max_time_s"} <= arguments.keys()
        and not invalid & {"min_time_s", "max_time_s"}
        and arguments["min_time_s"] > arguments["max_time_s"]
    ):
        invalid.add("max_time_s")
    return invalid


def outcome(call: Callable[[], Any], arguments: dict[str, Any]) -> Any:
    """Run ``call``; ``None`` when it was refused as the oracle expects, else its result."""
    invalid = invalid_names(arguments)
    if not invalid:
        return call()
    with pytest.raises(InvalidArgumentError) as caught:
        call()
    named = str(caught.value).split(" ", 1)[0]
    assert named in invalid, (str(caught.value), invalid)
    return None


# Invalid values any numeric argument may meet; several are valid for some arguments.
HOSTILE_VALUES = [0, -1, -0.0, -TINY, TINY, 1e308, -1e308, HUGE_INT, -HUGE_INT, 2**64, 2**63]
HOSTILE = st.sampled_from([*HOSTILE_VALUES, *NON_FINITE, *NOT_NUMBERS])


def numbers(valid: st.SearchStrategy[Any], *edges: Any) -> st.SearchStrategy[Any]:
    """Valid values (cheap to run), the range's edges, and hostile values."""
    return st.one_of(valid, st.sampled_from(edges), HOSTILE) if edges else st.one_of(valid, HOSTILE)


WORK_UNITS = numbers(st.floats(1e-9, 1e18), 1e-9, 1e18, 1, 32, 1e18 * (1 + 1e-15), 1e-9 * 0.999)
# Cheap times only: a valid but long budget would time for hours.
SHORT_S = numbers(st.sampled_from([TINY, 1e-6, 0.001, 0.003]), 0.002)
BUDGET_S = numbers(st.sampled_from([0.002, 0.005, 0.01]), 86_400.5, 1e9)
WARMUP_S = numbers(st.sampled_from([0, 0.0, TINY, 0.001]), 86_400.5)
TIMEOUT_S = numbers(st.floats(TINY, 86_400), 86_400, 86_400.5, TINY)
BLOCKS = numbers(st.integers(1, 5), 1_000_000, 1_000_001, 1.0, 2.5)
PROFILER_CALLS = numbers(st.integers(1, 1_000_000), 1_000_001, 3.0)
TOLERANCE = numbers(st.floats(0, 1e308), 0, 0.0, sys.float_info.max, int(sys.float_info.max))
MIN_EFFECT = numbers(st.floats(0, 1e308), 0, 0.02, sys.float_info.max)
LEVEL = numbers(
    st.floats(TINY, BELOW_ONE), TINY, BELOW_ONE, 0.5, 0.95, 1.0, 1, math.nextafter(0.0, -1.0)
)
RESAMPLES = numbers(st.integers(1, 200), 1, 1_000_000, 1_000_001, 2000.0)
SEEDS = numbers(st.integers(0, 2**64 - 1), 0, 2**64 - 1, 2**64, -1)
MAX_DEPTH = numbers(st.integers(0, 5), None, sys.maxsize, sys.maxsize + 1, 1.0)

# Hypothesis examples per property, recorded in the docs (docs/guarantees.md).
EXAMPLES = {
    "measure_workload": 80,
    "compare_workloads": 30,
    "compare_benchmarks": 200,
    "check_outputs": 200,
    "summary": 60,
    "crawl_module": 100,
}
PROPERTY = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "derandomize": True,
}


@settings(max_examples=EXAMPLES["measure_workload"], **PROPERTY)
@given(
    work_units=WORK_UNITS,
    min_time_s=SHORT_S,
    max_time_s=BUDGET_S,
    min_blocks=BLOCKS,
    warmup_time_s=WARMUP_S,
    profiler_calls=PROFILER_CALLS,
    rss_timeout_s=TIMEOUT_S,
)
def test_measure_workload_returns_a_valid_report_or_names_the_bad_argument(
    **arguments: Any,
) -> None:
    report = outcome(
        lambda: measure_workload(workload, work_unit="rows", print_summary=False, **arguments),
        arguments,
    )
    if report is not None:
        assert validate_report(report) == "benchmark"
        assert report["workload"]["work_units"] == float(arguments["work_units"])
        assert math.isfinite(report["metrics"]["throughput"]["value"])
        assert report["metrics"]["throughput"]["value"] > 0


@settings(max_examples=EXAMPLES["compare_workloads"], **PROPERTY)
@given(
    work_units=WORK_UNITS,
    min_time_s=SHORT_S,
    max_time_s=BUDGET_S,
    min_blocks=BLOCKS,
    rtol=TOLERANCE,
    atol=TOLERANCE,
    min_effect=MIN_EFFECT,
    confidence_level=LEVEL,
    bootstrap_resamples=RESAMPLES,
    seed=SEEDS,
)
def test_compare_workloads_returns_valid_reports_or_names_the_bad_argument(
    **arguments: Any,
) -> None:
    experiment = outcome(
        lambda: compare_workloads(
            workload,
            workload,
            metrics=["latency"],
            print_summary=False,
            warmup_time_s=0.0,
            **arguments,
        ),
        arguments,
    )
    if experiment is not None:
        assert validate_report(experiment.baseline) == "benchmark"
        assert validate_report(experiment.candidate) == "benchmark"
        assert validate_report(experiment.check) == "output_check"
        assert validate_report(experiment.comparison) == "benchmark_comparison"


@pytest.fixture(scope="module")
def benchmark() -> dict[str, Any]:
    report: dict[str, Any] = measure_workload(
        workload, metrics=["latency"], work_units=2, **{**QUICK, "min_blocks": 4}
    )
    return report


@settings(max_examples=EXAMPLES["compare_benchmarks"], **PROPERTY)
@given(
    confidence_level=LEVEL,
    bootstrap_resamples=RESAMPLES,
    seed=SEEDS,
    min_effect=MIN_EFFECT,
    paired=st.booleans(),
)
def test_compare_benchmarks_returns_a_valid_report_or_names_the_bad_option(
    benchmark: dict[str, Any], paired: bool, **arguments: Any
) -> None:
    check = check_outputs(workload(), workload(), rtol=0, atol=0)
    comparison = outcome(
        lambda: compare_benchmarks(benchmark, benchmark, check=check, paired=paired, **arguments),
        arguments,
    )
    if comparison is not None:
        assert validate_report(comparison) == "benchmark_comparison"


@settings(max_examples=EXAMPLES["check_outputs"], **PROPERTY)
@given(rtol=TOLERANCE, atol=TOLERANCE, scale=st.sampled_from([0.0, 1.0, 1e300, -1e-300]))
def test_check_outputs_returns_a_valid_report_or_names_the_bad_tolerance(
    scale: float, **arguments: Any
) -> None:
    baseline = torch.tensor([1.0, -2.0, 3.5]) * scale
    candidate = baseline + torch.tensor([0.0, 1e-3, -1e-3])
    report = outcome(lambda: check_outputs(baseline, candidate, **arguments), arguments)
    if report is not None:
        assert validate_report(report) == "output_check"
        assert report["rtol"] == float(arguments["rtol"])


SIZES = st.one_of(st.integers(1, 3), HOSTILE, st.sampled_from([2**70, 2**48 + 1]))


def shape_is_valid(shape: list[Any]) -> bool:
    return all(is_count(size, 1, 2**48) for size in shape) and math.prod(shape) <= 2**48


@settings(max_examples=EXAMPLES["crawl_module"], **PROPERTY)
@given(shape=st.lists(SIZES, min_size=1, max_size=3))
def test_crawl_module_returns_a_valid_report_or_refuses_the_input_shape(
    shape: list[Any],
) -> None:
    model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh())
    if shape_is_valid(shape):
        assert validate_report(crawl_module(model, tuple(shape))) == "analysis"
    else:
        assert error_of(lambda: crawl_module(model, tuple(shape))).startswith("input_shape ")


@settings(max_examples=EXAMPLES["summary"], **PROPERTY)
@given(max_depth=MAX_DEPTH)
def test_summary_returns_a_valid_report_or_names_max_depth(**arguments: Any) -> None:
    model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.nn.ReLU())
    table = io.StringIO()
    report = outcome(
        lambda: summary(model, (4,), mode="structure", file=table, **arguments), arguments
    )
    if report is not None:
        assert validate_report(report) == "analysis"
        assert table.getvalue().strip()
