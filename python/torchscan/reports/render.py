"""The self-contained HTML page of a report, rendered by the Rust core (the one implementation)."""

from __future__ import annotations

from .. import _core
from .validation import ReportInput, report_json

__all__ = ["render_report"]


def render_report(report: ReportInput) -> str:
    """Return the HTML page of a valid report: the bytes ``torchscan-report render`` writes.

    ``report`` is a mapping (as returned by torchscan's functions), JSON text, or a path to a JSON
    file. The page is one file with inline CSS, no script and no external request. Raises
    :class:`ReportValidationError` when the report is invalid.
    """
    text = report_json(report)
    return _core.render_report_json(text)
