"""Range checks of numeric arguments: one place, one message form, for every public function.

A numeric argument is a Python ``int`` or ``float`` (``bool`` is not a number here); it must be
finite and inside its documented range, or :class:`~torchscan.InvalidArgumentError` names it,
what was given and what is accepted. Integers are compared exactly, so a huge ``int`` is refused
by its range instead of overflowing a float conversion.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from .errors import InvalidArgumentError

__all__ = [
    "MAX_BOOTSTRAP_RESAMPLES",
    "MAX_COUNT",
    "MAX_PEAK_RATE",
    "MAX_SECONDS",
    "MAX_WORK_UNITS",
    "MIN_PEAK_RATE",
    "MIN_WORK_UNITS",
    "check_integer",
    "check_real",
]

#: The longest time budget or timeout, in seconds: one day.
MAX_SECONDS = 86_400.0
#: The fewest and most units of work one call may declare: every throughput derived from them
#: (``work_units x calls / timed seconds``) stays a finite, non-zero float.
MIN_WORK_UNITS = 1e-9
MAX_WORK_UNITS = 1e18
#: The smallest and largest peak rate a caller may declare, in FLOP/s or B/s: far below any
#: device and far above every machine built, and a range in which every utilization derived
#: from them (a workload's rate over the peak) stays a finite float.
MIN_PEAK_RATE = 1.0
MAX_PEAK_RATE = 1e30
#: The largest block count or profiled call count.
MAX_COUNT = 1_000_000
#: The most bootstrap resamples (the core's limit too).
MAX_BOOTSTRAP_RESAMPLES = 1_000_000


def _shown(value: Any) -> str:
    """``repr`` of a value, shortened: a 400-digit integer is not worth printing whole."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        # repr of an int past 4,300 digits raises ValueError (sys.set_int_max_str_digits).
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:  # a user object whose repr fails is shown by its type alone
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else f"{text[:37]}..."


def _interval(minimum: float, maximum: float, minimum_open: bool, maximum_open: bool) -> str:
    left = "(" if minimum_open else "["
    right = ")" if maximum_open else "]"
    return f"{left}{minimum:g}, {maximum:g}{right}"


def check_real(
    name: str,
    value: Any,
    *,
    minimum: float,
    maximum: float = math.inf,
    minimum_open: bool = False,
    maximum_open: bool = False,
    meaning: str = "",
) -> float:
    """Return ``value`` as a ``float`` if it is a finite number in the given range, else raise.

    ``minimum_open``/``maximum_open`` exclude the bound itself. ``meaning`` ends the message
    (for example ``"seconds"``).
    """
    suffix = f" ({meaning})" if meaning else ""
    kind = "a positive, finite number" if minimum > 0 or minimum_open else "a finite number"
    if maximum == math.inf:
        accepted = f"{kind} {'>' if minimum_open else '>='} {minimum:g}{suffix}"
    else:
        interval = _interval(minimum, maximum, minimum_open, maximum_open)
        accepted = f"{kind} in {interval}{suffix}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(
            f"{name} must be {accepted}; got {_shown(value)} of type {type(value).__name__}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be {accepted}; got {_shown(value)}")
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        raise InvalidArgumentError(
            f"{name} must be {accepted}; got {_shown(value)}, beyond any finite float"
        )
    # int and float compare exactly in Python, so a huge int never overflows here.
    below = value <= minimum if minimum_open else value < minimum
    above = value >= maximum if maximum_open else value > maximum
    if below or above:
        raise InvalidArgumentError(f"{name} must be {accepted}; got {_shown(value)}")
    return float(value)


def check_integer(name: str, value: Any, *, minimum: int, maximum: int, meaning: str = "") -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) from ``minimum`` to ``maximum``."""
    suffix = f" ({meaning})" if meaning else ""
    accepted = f"an integer from {minimum:,} to {maximum:,}{suffix}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(
            f"{name} must be {accepted}; got {_shown(value)} of type {type(value).__name__}"
        )
    if not minimum <= value <= maximum:
        raise InvalidArgumentError(f"{name} must be {accepted}; got {_shown(value)}")
    return int(value)
