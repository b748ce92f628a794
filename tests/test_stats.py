"""The core's statistics, through the binding, against Python's `statistics` module."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchscan import _core

FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
SAMPLES = st.lists(FINITE, min_size=1, max_size=300)
PAIRS_OR_MORE = st.lists(FINITE, min_size=2, max_size=300)


def close(left: float, right: float) -> bool:
    return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(SAMPLES)
def test_median_mean_min_max(values: list[float]) -> None:
    assert _core.median(values) == statistics.median(values) or close(
        _core.median(values), statistics.median(values)
    )
    assert close(_core.mean(values), statistics.fmean(values))
    assert _core.min(values) == min(values)
    assert _core.max(values) == max(values)


@settings(max_examples=300, deadline=None)
@given(PAIRS_OR_MORE)
def test_quartiles_and_iqr_match_inclusive_quantiles(values: list[float]) -> None:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    ours = _core.quartiles(values)
    assert all(close(a, b) for a, b in zip(ours, (q1, q2, q3), strict=True)), (ours, (q1, q2, q3))
    assert close(_core.iqr(values), q3 - q1)


@settings(max_examples=200, deadline=None)
@given(PAIRS_OR_MORE, st.integers(min_value=2, max_value=20))
def test_quantile_matches_inclusive_cut_points(values: list[float], n: int) -> None:
    cuts = statistics.quantiles(values, n=n, method="inclusive")
    for i, expected in enumerate(cuts, start=1):
        assert close(_core.quantile(values, i / n), expected)


@settings(max_examples=300, deadline=None)
@given(SAMPLES)
def test_median_absolute_deviation(values: list[float]) -> None:
    center = statistics.median(values)
    expected = statistics.median([abs(v - center) for v in values])
    assert close(_core.median_absolute_deviation(values), expected)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=1e-7, max_value=10.0), min_size=1, max_size=100),
    st.integers(min_value=1, max_value=100_000),
)
def test_block_timing(durations: list[float], calls: int) -> None:
    latency, iqr, total_calls, timed = _core.block_timing(durations, calls)
    means = [d / calls for d in durations]
    assert close(latency, statistics.median(means))
    if len(means) >= 2:
        q1, _, q3 = statistics.quantiles(means, n=4, method="inclusive")
        assert close(iqr, q3 - q1)
    else:
        assert iqr == 0.0
    assert total_calls == calls * len(durations)
    assert close(timed, math.fsum(durations))


@pytest.mark.parametrize(
    "function",
    [
        _core.median,
        _core.iqr,
        _core.mean,
        _core.min,
        _core.max,
        _core.median_absolute_deviation,
        _core.quartiles,
    ],
)
def test_errors_not_panics(function: object) -> None:
    assert callable(function)
    with pytest.raises(ValueError, match="no values"):
        function([])
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="value 1 is"):
            function([1.0, bad])


def test_quantile_range_and_zero_calls() -> None:
    with pytest.raises(ValueError, match="outside"):
        _core.quantile([1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="outside"):
        _core.quantile([1.0, 2.0], math.nan)
    with pytest.raises(ValueError, match="calls per block"):
        _core.block_timing([1.0], 0)
    with pytest.raises(ValueError, match="value 0 is"):
        _core.block_timing([math.nan], 3)
