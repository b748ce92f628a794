"""Validation and text summaries of reports, through the Rust core (the one implementation)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from . import _core
from ._arguments import check_integer
from .errors import ReportValidationError

__all__ = ["format_summary", "report_json", "validate_report"]

ReportInput = Mapping[str, Any] | str | bytes | os.PathLike[str]


def report_json(report: ReportInput) -> str:
    """Return the JSON text of ``report``: a mapping, JSON text (``str``/``bytes``) or a file path.

    A ``str`` that is not JSON text but names an existing file is read as that file.

    Non-finite floats are written as ``NaN``/``Infinity`` so that the validator can point at them.
    Raises :class:`ReportValidationError` when a mapping cannot be serialized to JSON.
    """
    if isinstance(report, os.PathLike):
        with open(report, encoding="utf-8") as handle:
            return handle.read()
    if isinstance(report, bytes):
        try:
            return report.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ReportValidationError([("$", f"not UTF-8 text: {error}")]) from None
    if isinstance(report, str):
        stripped = report.lstrip()
        if stripped[:1] not in ("{", "[") and stripped and os.path.isfile(report):
            # A path given as a string: JSON text always starts with an object or array here.
            with open(report, encoding="utf-8") as handle:
                return handle.read()
        return report
    if isinstance(report, Mapping):
        try:
            return json.dumps(report, allow_nan=True)
        except (TypeError, ValueError) as error:
            raise ReportValidationError([("$", f"not JSON-serializable: {error}")]) from None
    raise TypeError(
        "a report is a mapping (as returned by torchscan), JSON text, or a path to a JSON file; "
        f"got {type(report).__name__}"
    )


def _problems(error: _core.CoreValidationError) -> list[tuple[str, str]]:
    return [(str(path), str(message)) for path, message in error.args[0]]


def validate_report(report: ReportInput) -> str:
    """Check ``report`` against schema version 1 and every invariant; return its ``kind``.

    ``report`` is a mapping (as returned by torchscan's functions), JSON text, or a path to a JSON
    file. Raises :class:`ReportValidationError` whose ``problems`` lists every problem with its JSON
    path. The verdict is the one ``torchscan-report validate`` gives for the same JSON.
    """
    text = report_json(report)
    try:
        return _core.validate_report_json(text)
    except _core.CoreValidationError as error:
        raise ReportValidationError(_problems(error)) from None


def format_summary(
    report: ReportInput,
    *,
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str:
    """Return the text summary of a valid report: the lines ``torchscan-report summary`` prints.

    ``max_depth`` hides analysis layers nested deeper than that (the root's children are depth
    1); it is an integer from 0 to ``sys.maxsize``, or :class:`~torchscan.InvalidArgumentError`
    names it. ``receptive_field`` adds each layer's receptive field to the analysis table, and
    ``effective_rf_stats`` its effective stride and padding (one number when every spatial
    dimension agrees, else one per dimension such as ``7x3``). Raises
    :class:`ReportValidationError` when the report is invalid. Programs should read the JSON,
    never this text.
    """
    if max_depth is not None:
        check_integer("max_depth", max_depth, minimum=0, maximum=sys.maxsize)
    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
    ):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    text = report_json(report)
    try:
        return _core.format_summary_json(text, max_depth, receptive_field, effective_rf_stats)
    except _core.CoreValidationError as error:
        raise ReportValidationError(_problems(error)) from None
