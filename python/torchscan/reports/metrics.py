"""Builders of ``MetricResult`` dicts: every producer states status, unit, scope and method."""

from __future__ import annotations

import sys

from . import MetricResult

__all__ = [
    "INTEGRAL_UNITS",
    "complete",
    "metric_result",
    "partial",
    "report_number",
    "unavailable",
    "weaker_status",
]

_ORDER = {"complete": 0, "partial": 1, "unavailable": 2}

#: Units of whole things: their whole numbers are ``int`` (JSON integers), as in torchscan 0.2.
INTEGRAL_UNITS = frozenset({"B", "FLOPs", "MACs", "DMAs", "count"})

#: 2**53: every integer up to this magnitude is exact as a float (and in JavaScript).
MAX_EXACT_INTEGER = 2**53

_LARGEST_FLOAT = sys.float_info.max


def report_number(value: float, unit: str) -> float:
    """``value`` as a report writes it in ``unit`` (the core's rule).

    An ``int`` for a whole number of whole things (bytes, FLOPs, MACs, DMAs, counts) up to 2**53,
    else a ``float``.
    """
    number = float(value)
    if unit in INTEGRAL_UNITS and number.is_integer() and abs(number) <= MAX_EXACT_INTEGER:
        return int(number)
    return number


def complete(value: float, unit: str, scope: str, method: str) -> MetricResult:
    """A complete metric: ``value == known_value``."""
    number = report_number(value, unit)
    return {
        "status": "complete",
        "value": number,
        "known_value": number,
        "unit": unit,
        "scope": scope,
        "method": method,
        "reason": None,
    }


def partial(known_value: float, unit: str, scope: str, method: str, reason: str) -> MetricResult:
    """A partial metric: ``known_value`` is a lower bound and ``reason`` says what is missing."""
    return {
        "status": "partial",
        "value": None,
        "known_value": report_number(known_value, unit),
        "unit": unit,
        "scope": scope,
        "method": method,
        "reason": reason,
    }


def unavailable(unit: str, scope: str, method: str, reason: str) -> MetricResult:
    """An unavailable metric: no number, and ``reason`` says why."""
    return {
        "status": "unavailable",
        "value": None,
        "known_value": None,
        "unit": unit,
        "scope": scope,
        "method": method,
        "reason": reason,
    }


def weaker_status(*statuses: str) -> str:
    """The weakest of ``statuses`` (``unavailable`` < ``partial`` < ``complete``)."""
    return max(statuses, key=_ORDER.__getitem__, default="complete")


#: The reason a partial or unavailable metric built by :func:`metric_result` gets when its
#: caller gives none.
NO_REASON_GIVEN = "no reason given"


def metric_result(
    *,
    status: str,
    unit: str,
    scope: str,
    method: str,
    value: float | None = None,
    known_value: float | None = None,
    reason: str | None = None,
) -> MetricResult:
    """A ``MetricResult`` for your own numbers, with its status invariant enforced.

    torchscan 0.2's builder, keyword for keyword, plus ``reason``:

    - ``complete`` needs ``value`` (``known_value``, if given, must equal it) and no ``reason``;
    - ``partial`` needs ``known_value``, the lower bound; ``value`` must be ``None``;
    - ``unavailable`` takes neither number.

    A partial or unavailable metric without a ``reason`` gets ``"no reason given"``. Raises
    :class:`~torchscan.InvalidArgumentError` (a ``ValueError``) for any other combination, an
    unknown status, a non-finite number (an ``int`` too large for a float included) or an empty
    unit, scope or method.
    """
    from math import isfinite

    from ..errors import InvalidArgumentError

    for name, text in (("unit", unit), ("scope", scope), ("method", method)):
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError(f"{name} must be a non-empty string, got {text!r}")
    numbers: dict[str, float | None] = {}
    for name, number in (("value", value), ("known_value", known_value)):
        if number is not None:
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise InvalidArgumentError(f"{name} must be a number or None, got {number!r}")
            # A huge int is compared exactly: float() of it would raise OverflowError.
            if isinstance(number, int) and abs(number) > _LARGEST_FLOAT:
                raise InvalidArgumentError(
                    f"{name} must fit in a finite float, got an int of {number.bit_length()} bits"
                )
            if not isfinite(number):
                raise InvalidArgumentError(f"{name} must be finite, got {number!r}")
            number = float(number)
        numbers[name] = number
    value, known_value = numbers["value"], numbers["known_value"]
    if status == "complete":
        if value is None:
            raise InvalidArgumentError("a complete metric needs a value")
        if known_value is not None and known_value != value:
            raise InvalidArgumentError(
                f"a complete metric's known_value equals its value ({value}), got {known_value}"
            )
        if reason is not None:
            raise InvalidArgumentError("a complete metric has no reason")
        return complete(value, unit, scope, method)
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise InvalidArgumentError(f"reason must be a non-empty string or None, got {reason!r}")
    if status == "partial":
        if known_value is None:
            raise InvalidArgumentError("a partial metric needs known_value, its lower bound")
        if value is not None:
            raise InvalidArgumentError("a partial metric has no value; give known_value only")
        return partial(known_value, unit, scope, method, reason or NO_REASON_GIVEN)
    if status == "unavailable":
        if value is not None or known_value is not None:
            raise InvalidArgumentError("an unavailable metric has neither value nor known_value")
        return unavailable(unit, scope, method, reason or NO_REASON_GIVEN)
    raise InvalidArgumentError(
        f"status must be 'complete', 'partial' or 'unavailable', got {status!r}"
    )
