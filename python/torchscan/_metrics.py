"""Builders of ``MetricResult`` dicts: every producer states status, unit, scope and method."""

from __future__ import annotations

from .reports import MetricResult

__all__ = ["complete", "partial", "unavailable", "weaker_status"]

_ORDER = {"complete": 0, "partial": 1, "unavailable": 2}


def complete(value: float, unit: str, scope: str, method: str) -> MetricResult:
    """A complete metric: ``value == known_value``."""
    number = float(value)
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
        "known_value": float(known_value),
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
