"""Comparison of two analysis reports of a model, through the Rust core (the one implementation)."""

from __future__ import annotations

import json
from typing import cast

from . import _core
from .errors import ReportComparisonError, ReportValidationError
from .reports import ReportDiff
from .validation import ReportInput, report_json

__all__ = ["ReportComparisonError", "compare_reports"]


def _side_json(side: str, report: ReportInput) -> str:
    """The JSON text of one side; a problem serializing it names the side in its paths."""
    try:
        return report_json(report)
    except ReportValidationError as error:
        raise ReportValidationError(
            [(f"{side}:{path}", message) for path, message in error.problems]
        ) from None


def compare_reports(before: ReportInput, after: ReportInput) -> ReportDiff:
    """Compare two analyses of a model; return the ``report_diff`` report.

    ``before`` and ``after`` are each an ``analysis`` report as a mapping (as torchscan's functions
    return it), JSON text (``str`` or UTF-8 ``bytes``) or a path object (``os.PathLike``; a plain
    ``str`` is JSON text, not a file name).

    Each model-wide total (parameters, buffers, storage bytes, module FLOPs/MACs/DMAs and operator
    FLOPs) is compared with the weaker status of the two sides: ``before``/``after`` are set for a
    complete side, and ``delta`` only when both sides are complete; otherwise ``reason`` says
    which side is not complete and why. Layers are matched by module path and call index into
    ``layers_added``, ``layers_removed`` and ``layers_changed``. A ``context_mismatch`` warning
    notes a different device, dtypes, torch version or training mode; a ``structure_changed``
    note notes added or removed layers. The result is the one ``torchscan-report diff`` writes
    with ``--format json``, and it is validated before it is returned.

    Raises :class:`~torchscan.errors.ReportValidationError` when either report is invalid (each
    problem's path starts with ``before:`` or ``after:``), :class:`ReportComparisonError` when the
    reports cannot be compared, and :class:`TypeError` for an input of another type.
    """
    before_text = _side_json("before", before)
    after_text = _side_json("after", after)
    try:
        text = _core.compare_reports_json(before_text, after_text)
    except _core.CoreValidationError as error:
        problems = [(str(path), str(message)) for path, message in error.args[0]]
        raise ReportValidationError(problems) from None
    except _core.CoreCompareError as error:
        raise ReportComparisonError(str(error.args[0])) from None
    return cast(ReportDiff, json.loads(text))
