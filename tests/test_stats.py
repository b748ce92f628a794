"""The core's statistics that Python uses, through the binding, against `statistics`.

The others (median, quantiles, mean, ...) are tested in Rust (`stats.rs`) against an
independent implementation of the same definitions; the binding exposes what Python calls.
"""

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
    timing = _core.block_timing(durations, calls)
    latency, iqr, total_calls, timed = (
        timing.latency_s,
        timing.latency_iqr_s,
        timing.calls,
        timing.timed_s,
    )
    means = [d / calls for d in durations]
    assert close(latency, statistics.median(means))
    if len(means) >= 2:
        q1, _, q3 = statistics.quantiles(means, n=4, method="inclusive")
        assert close(iqr, q3 - q1)
    else:
        assert iqr == 0.0
    assert total_calls == calls * len(durations)
    assert close(timed, math.fsum(durations))


def test_errors_not_panics() -> None:
    with pytest.raises(ValueError, match="no values"):
        _core.median_absolute_deviation([])
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="value 1 is"):
            _core.median_absolute_deviation([1.0, bad])


def test_zero_calls_and_bad_blocks() -> None:
    with pytest.raises(ValueError, match="calls per block"):
        _core.block_timing([1.0], 0)
    with pytest.raises(ValueError, match="value 0 is"):
        _core.block_timing([math.nan], 3)
