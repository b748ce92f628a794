"""A report in a notebook: its HTML page in an isolated frame, its text summary everywhere else."""

from __future__ import annotations

import re
import sys

from .. import _core
from .._arguments import check_integer
from .validation import ReportInput, report_json

__all__ = ["DEFAULT_HEIGHT_PX", "MAX_HEIGHT_PX", "MIN_HEIGHT_PX", "ReportView", "show"]

#: The height of the frame that shows a report's page, in CSS pixels, unless ``height`` says more.
DEFAULT_HEIGHT_PX = 600
#: The lowest and highest ``height`` accepted, in CSS pixels.
MIN_HEIGHT_PX = 50
MAX_HEIGHT_PX = 100_000

_BACKTICKS = re.compile(r"`+")


class ReportView:
    """A report as a notebook shows it; returned by :func:`show`.

    Jupyter and IPython call its ``_repr_*_`` methods: ``_repr_html_`` gives the report's page
    (the bytes of :func:`~torchscan.render_report`) inside an ``<iframe srcdoc=...>``, so that
    the notebook's styles and the page's styles cannot reach each other; ``_repr_markdown_``
    gives the text summary (the lines of :func:`~torchscan.format_summary`) as a fenced code
    block; ``repr()`` and ``str()`` give the text summary itself, without its final line break.
    The page and the summary are made when the view is made, so an invalid report fails at
    :func:`show`, never while a notebook displays it.
    """

    __slots__ = ("_height_px", "_kind", "_page", "_summary")

    def __init__(self, kind: str, page: str, summary: str, height_px: int) -> None:
        self._kind = kind
        self._page = page
        self._summary = summary
        self._height_px = height_px

    @property
    def kind(self) -> str:
        """The report's ``kind`` (``"analysis"``, ``"benchmark"``, ...)."""
        return self._kind

    @property
    def html(self) -> str:
        """The report's HTML page: exactly what :func:`~torchscan.render_report` returns."""
        return self._page

    @property
    def text(self) -> str:
        """The report's text summary: exactly what :func:`~torchscan.format_summary` returns."""
        return self._summary

    @property
    def height_px(self) -> int:
        """The height of the frame, in CSS pixels; a longer page scrolls inside it."""
        return self._height_px

    def _repr_html_(self) -> str:
        """The page in an ``iframe`` whose ``srcdoc`` holds it, escaped, and no script allowed."""
        import html  # only when a notebook asks: ``import torchscan`` stays lean

        return (
            f'<iframe srcdoc="{html.escape(self._page, quote=True)}" '
            f'title="torchscan {html.escape(self._kind, quote=True)} report" sandbox="" '
            f'style="width: 100%; height: {self._height_px}px; border: 1px solid #d6d6d6; '
            'border-radius: 4px; box-sizing: border-box;"></iframe>'
        )

    def _repr_markdown_(self) -> str:
        """The text summary as a fenced code block, its fence longer than any backtick run."""
        longest = max((len(run) for run in _BACKTICKS.findall(self._summary)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{fence}text\n{self._lines()}\n{fence}\n"

    def _lines(self) -> str:
        """The summary without its final line break (a console adds its own after a repr)."""
        return self._summary.removesuffix("\n")

    def __repr__(self) -> str:
        return self._lines()

    def __str__(self) -> str:
        return self._lines()


def show(
    report: ReportInput,
    *,
    height: int = DEFAULT_HEIGHT_PX,
    max_depth: int | None = None,
) -> ReportView:
    """Return a view of a valid report that notebooks display as its HTML page.

    ``report`` is any report torchscan writes (every ``kind``), as a mapping, JSON text, or a
    path to a JSON file, as for :func:`~torchscan.render_report`. The last expression of a
    Jupyter cell is displayed: ``torchscan.show(report)`` shows the page in an ``iframe`` of
    ``height`` CSS pixels (from 50 to 100,000; the page scrolls inside it) and full width;
    ``IPython.display.display(torchscan.show(report))`` shows it from inside a loop. Where HTML
    cannot be shown (a terminal, a Markdown export) the view is the text summary, whose layers
    ``max_depth`` limits as in :func:`~torchscan.format_summary`.

    Raises :class:`~torchscan.ReportValidationError` when the report is invalid,
    :class:`~torchscan.InvalidArgumentError` for a ``height`` or ``max_depth`` out of range, and
    the errors of :func:`~torchscan.render_report` for a report that cannot be read.
    """
    height_px = check_integer(
        "height", height, minimum=MIN_HEIGHT_PX, maximum=MAX_HEIGHT_PX, meaning="CSS pixels"
    )
    if max_depth is not None:
        check_integer("max_depth", max_depth, minimum=0, maximum=sys.maxsize)
    # Read once; the core validates the same text for each of the three.
    text = report_json(report)
    kind = _core.validate_report_json(text)
    page = _core.render_report_json(text)
    summary = _core.format_summary_json(text, max_depth, False, False)
    return ReportView(kind, page, summary, height_px)
