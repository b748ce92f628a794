"""Validation and text summaries of reports, through the Rust core (the one implementation)."""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import _core
from .._arguments import check_integer
from ..errors import InvalidArgumentError, ReportValidationError

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_INPUT_BYTES_VARIABLE",
    "MAX_NESTING_DEPTH",
    "SUMMARY_COLUMNS",
    "check_col_names",
    "format_summary",
    "max_input_bytes",
    "report_json",
    "validate_report",
]

ReportInput = Mapping[str, Any] | str | bytes | os.PathLike[str]
"""What the functions that read a report accept (other JSON values are rejected as invalid)."""

MAX_INPUT_BYTES_VARIABLE = "TORCHSCAN_MAX_INPUT_BYTES"
"""The environment variable that changes the size limit of report files (bytes, at least 1)."""

DEFAULT_MAX_INPUT_BYTES = 1 << 30
"""Report files longer than this (1 GiB) are refused unless the environment variable says more."""

MAX_NESTING_DEPTH = 127
"""The deepest nesting of objects and arrays a report may have, the root object counting as one."""

# A str this long, or with a line break or NUL, is JSON text, never a file name.
_MAX_PATH_CHARS = 4096
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPED = {
    code: f"\\u{code:04x}"
    for code in (
        *range(0x20),
        *range(0x7F, 0xA0),
        0x061C,
        0x200E,
        0x200F,
        *range(0x2028, 0x202F),
        *range(0x2066, 0x206A),
    )
}


def max_input_bytes() -> int:
    """The size limit of report files: ``TORCHSCAN_MAX_INPUT_BYTES`` when set, else 1 GiB.

    The variable is read at each call, and must be a whole number of bytes, at least 1, or
    :class:`~torchscan.InvalidArgumentError` names it. ``torchscan-report`` reads the same variable.
    """
    value = os.environ.get(MAX_INPUT_BYTES_VARIABLE)
    if value is None:
        return DEFAULT_MAX_INPUT_BYTES
    text = value.strip()
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise InvalidArgumentError(
            f"invalid {MAX_INPUT_BYTES_VARIABLE} value {value!r}: expected a whole number of "
            "bytes, at least 1"
        )
    return int(text)


def _read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of a report file, read up to the size limit."""
    limit = max_input_bytes()
    try:
        data = _core.read_file(path, max_bytes=limit)
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise OSError(
                errno.EFBIG,
                f"larger than the limit of {limit} bytes; raise it with the environment variable "
                f"{MAX_INPUT_BYTES_VARIABLE}",
                os.fsdecode(path),
            ) from None
        raise
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        name = _display(os.fsdecode(path))
        raise ReportValidationError(
            [("$", f"{name} is not UTF-8 text: byte {error.start} is {data[error.start]:#04x}")]
        ) from None


def _display(text: str) -> str:
    """``text`` with control and bidirectional formatting characters escaped, as the core does."""
    return text.translate(_ESCAPED)


def _key_path(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _has_value_problems(report: object) -> bool:
    """Whether :func:`_value_problems` would find anything: the same walk without paths.

    Every report torchscan writes is checked on its way out, so the common case (no problem)
    builds no path text; the paths are made only when there is something to report.
    """
    stack: list[tuple[object, int]] = [(report, 1)]
    while stack:
        value, depth = stack.pop()
        kind = type(value)
        children: Any
        if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
            children = value.values()  # type: ignore[attr-defined]
            for key in value:  # type: ignore[attr-defined]
                if not isinstance(key, str):
                    return True
        elif kind is list or kind is tuple or isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        if depth > MAX_NESTING_DEPTH:
            return True
        for child in children:
            if not isinstance(child, (str, int, float)) and child is not None:
                stack.append((child, depth + 1))
    return False


def _value_problems(report: object) -> list[tuple[str, str]]:
    """Keys that are not strings, and nesting past the limit, each with its JSON path.

    ``json.dumps`` would write an ``int`` key as a string, silently, and fail with
    ``RecursionError`` on deep or circular nesting: both are found here first, without recursion.
    """
    if not _has_value_problems(report):
        return []
    return _value_problems_at_paths(report)


def _value_problems_at_paths(report: object) -> list[tuple[str, str]]:
    """The walk of :func:`_value_problems` that names every problem's JSON path."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[object, str, int]] = [(report, "$", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, Mapping):
            items: list[tuple[str, object]] = []
            for key, item in value.items():
                if isinstance(key, str):
                    items.append((_key_path(path, key), item))
                else:
                    problems.append((path, f"a key is {type(key).__name__} {key!r}, not a string"))
        elif isinstance(value, (list, tuple)):
            items = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
        else:
            continue
        if depth > MAX_NESTING_DEPTH:
            problems.append(
                (
                    path,
                    f"nested too deeply: a report nests at most {MAX_NESTING_DEPTH} arrays and "
                    "objects (the root object counts as one)",
                )
            )
            continue
        stack.extend((child, child_path, depth + 1) for child_path, child in reversed(items))
    return [(_display(path), _display(message)) for path, message in problems]


def _looks_like_path(text: str) -> bool:
    return bool(text) and len(text) <= _MAX_PATH_CHARS and not any(c in text for c in "\n\r\0")


def report_json(report: ReportInput) -> str:
    """Return the JSON text of ``report``: a mapping, JSON text (``str``/``bytes``) or a file path.

    A path object (``os.PathLike``) is always a file. A ``str`` that starts with ``{`` or ``[``
    (after white space) is JSON text; another ``str`` is a file name when such a file exists, or
    when it is not JSON text either (so a missing file raises :class:`FileNotFoundError`, never a
    JSON error). Files are read up to the size limit (1 GiB, see :func:`max_input_bytes`); a file
    that cannot be read raises the :class:`OSError` subclass naming it, and one that is not UTF-8
    raises :class:`ReportValidationError`.

    Non-finite floats are written as ``NaN``/``Infinity`` so that the validator can point at them.
    Another JSON value (a list, a number, ``None``) is written as JSON too, so that the validator
    rejects it as a value that is not an object. A key that is not a string, nesting deeper than
    127 levels (a cycle included), or a value JSON cannot hold raises
    :class:`ReportValidationError`; an argument of another type raises :class:`TypeError`.
    """
    if isinstance(report, os.PathLike):
        return _read_text(report)
    if isinstance(report, bytes):
        try:
            return report.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ReportValidationError([("$", f"not UTF-8 text: {error}")]) from None
    if isinstance(report, str):
        stripped = report.lstrip()
        if stripped[:1] in ("{", "[") or not _looks_like_path(report):
            return report
        if os.path.lexists(report):
            return _read_text(report)
        try:
            json.loads(report)
        except ValueError:
            # Neither JSON text nor an existing file: a file name that is missing.
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), report) from None
        return report
    if report is None or isinstance(report, (Mapping, list, tuple, int, float)):
        # Any JSON value (``json.load`` gives these): one that is not an object is an invalid
        # report, as on the command line.
        problems = _value_problems(report)
        if problems:
            raise ReportValidationError(problems)
        try:
            return json.dumps(report, allow_nan=True)
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            message = _display(f"not JSON-serializable: {error}")
            raise ReportValidationError([("$", message)]) from None
    raise TypeError(
        "a report is a mapping (as returned by torchscan), JSON text, or a path to a JSON file; "
        f"got {type(report).__name__}"
    )


def validate_report(report: ReportInput) -> str:
    """Check ``report`` against schema version 1 and every invariant; return its ``kind``.

    ``report`` is a mapping (as returned by torchscan's functions), JSON text, or a path to a JSON
    file. Raises :class:`ReportValidationError` whose ``problems`` lists every problem with its JSON
    path. The verdict is the one ``torchscan-report validate`` gives for the same JSON.
    """
    text = report_json(report)
    return _core.validate_report_json(text)


def format_summary(
    report: ReportInput,
    *,
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    col_names: Sequence[str] | None = None,
) -> str:
    """Return the text summary of a valid report: the lines ``torchscan-report summary`` prints.

    ``max_depth`` hides analysis layers nested deeper than that (the root's children are depth
    1); it is an integer from 0 to ``sys.maxsize``, or :class:`~torchscan.InvalidArgumentError`
    names it. ``receptive_field`` adds each layer's receptive field to the analysis table, and
    ``effective_rf_stats`` its effective stride and padding (one number when every spatial
    dimension agrees, else one per dimension such as ``7x3``). ``col_names`` chooses the
    analysis table's columns after the layer name, in order, by torchinfo's names or
    torchscan's (``torchscan.reports.validation.SUMMARY_COLUMNS``), each column once (see
    docs/coming-from-torchinfo.md). Raises
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
    columns = check_col_names(col_names)
    text = report_json(report)
    return _core.format_summary_json(text, max_depth, receptive_field, effective_rf_stats, columns)


#: The names ``col_names`` takes: torchinfo's ``col_names`` and torchscan's own.
SUMMARY_COLUMNS: tuple[str, ...] = tuple(_core.SUMMARY_COLUMNS)


def check_col_names(col_names: Sequence[str] | None) -> list[str] | None:
    """``col_names`` as a list of known column names, or :class:`InvalidArgumentError`."""
    if col_names is None:
        return None
    if isinstance(col_names, (str, bytes)) or not isinstance(col_names, Iterable):
        raise InvalidArgumentError(
            f"col_names must be a list of column names, for example ('output_size', "
            f"'num_params'), got {col_names!r}"
        )
    names = list(col_names)
    if not names:
        raise InvalidArgumentError("col_names must name at least one column")
    if not all(isinstance(name, str) for name in names):
        raise InvalidArgumentError(f"col_names must be column names (strings), got {names!r}")
    # The core knows the columns: an unknown name, a repeat, or two names of one column raise
    # InvalidArgumentError("col_names: ...") from there.
    _core.check_summary_columns(names)
    return names
