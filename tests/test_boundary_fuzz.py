"""Property tests of the Python boundary: arbitrary values into every function that reads a report.

Hypothesis draws nested JSON-like values (NaN and infinities, integers past every float and past
Python's 4,300-digit conversion limit, keys that are not strings, nesting past 127 levels, cycles,
objects JSON cannot hold) both as whole reports and planted at a random place inside the fixture
reports, and passes them as mappings, as JSON text and as files. Each of ``validate_report``,
``format_summary``, ``render_report``, ``compare_reports`` and ``compare_benchmarks`` must either
succeed with a result that is itself valid, or raise ``ReportValidationError`` (or
``ReportComparisonError`` for a comparison the core refuses): never ``RecursionError``,
``TypeError``, ``KeyError``, ``OverflowError`` or a crash. The number of cases is in
``CASES_PER_TEST`` (docs/guarantees.md gives the total).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from torchscan import (
    ReportComparisonError,
    ReportValidationError,
    compare_benchmarks,
    compare_reports,
    format_summary,
    render_report,
    validate_report,
)
from torchscan.reports.validation import MAX_NESTING_DEPTH

from .conftest import FIXTURES

CASES_PER_TEST = 600
FIXTURE_TEXTS = {
    path.name: path.read_text(encoding="utf-8")
    for path in sorted((FIXTURES / "reports").glob("*.json"))
}
ANALYSIS = json.loads(FIXTURE_TEXTS["analysis_small_cnn.json"])
BENCHMARK = json.loads(FIXTURE_TEXTS["benchmark_readme_cpu.json"])

# What a reader may raise for bad input; anything else is a bug.
EXPECTED = (ReportValidationError, ReportComparisonError)

SETTINGS = settings(
    max_examples=CASES_PER_TEST,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**53 - 2, max_value=2**64 + 2),
    st.sampled_from([30, 400, 4301]).map(lambda digits: 10**digits),  # past f64 and past str()
    st.just(-(2**63) - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]),
)
texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["", "\x00", "\u202e", "a\u202eb\x00c", "{{ x }}", "<script>", "analysis", "benchmark"]
    ),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
keys = st.one_of(
    texts,
    texts,
    texts,
    st.integers(-3, 3),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.tuples(st.integers(0, 3)),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=20,
)


def _deep(levels: int, leaf: object, as_dict: bool) -> object:
    value = leaf
    for _ in range(levels):
        value = {"x": value} if as_dict else [value]
    return value


deep_values = st.builds(
    _deep,
    st.sampled_from([MAX_NESTING_DEPTH - 2, MAX_NESTING_DEPTH - 1, MAX_NESTING_DEPTH, 2_000]),
    scalars,
    st.booleans(),
)
# Planted inside a report: anything, an object JSON cannot hold included.
hostile = st.one_of(values, values, values, deep_values, st.builds(object))
# A whole report argument: any JSON-like value but a str (a str is JSON text or a file name, tested
# in test_report_inputs.py) and an object of another type (a TypeError, by design).
reports = st.one_of(values, deep_values).filter(lambda value: not isinstance(value, str))


def _containers(value: object, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every dict and list in a JSON document (iteratively: fixtures are shallow)."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[object, tuple[Any, ...]]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            found.append(where)
            stack.extend((child, (*where, key)) for key, child in node.items())
        elif isinstance(node, list):
            found.append(where)
            stack.extend((child, (*where, index)) for index, child in enumerate(node))
    return found


displayed = st.one_of(
    texts,
    st.sampled_from(["\u202e", "\x00", "\x1b[31m", "\u2028", "<script>alert(1)</script>"]).map(
        lambda bad: f"conv{bad}1"
    ),
)


def _at(report: Any, place: tuple[Any, ...]) -> Any:
    for step in place:
        report = report[step]
    return report


def _children(container: Any) -> list[tuple[Any, object]]:
    if isinstance(container, dict):
        return list(container.items())
    return list(enumerate(container))


@st.composite
def planted(draw: st.DrawFn, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A fixture report with one drawn value set, added or swapped at a drawn place."""
    if base is None:
        base = json.loads(FIXTURE_TEXTS[draw(st.sampled_from(sorted(FIXTURE_TEXTS)))])
    report = copy.deepcopy(base)
    if draw(st.integers(0, 2)) == 0:
        # A string of the report (a module name, a type, a message) made hostile to displays.
        leaves = [
            (place, key)
            for place in _containers(report)
            for key, child in _children(_at(report, place))
            if isinstance(child, str)
        ]
        if leaves:
            place, key = draw(st.sampled_from(leaves))
            _at(report, place)[key] = draw(displayed)
            return report
    place = draw(st.sampled_from(_containers(report)))
    container = _at(report, place)
    if draw(st.booleans()):
        # Half the time, a value of the same JSON type as the one it replaces: mostly still a valid
        # report, so the renderers and comparisons run on hostile strings and edge numbers.
        slots = list(container) if isinstance(container, dict) else range(len(container))
        if slots:
            slot = draw(st.sampled_from(list(slots)))
            old = container[slot]
            if isinstance(old, str):
                container[slot] = draw(texts)
                return report
            if isinstance(old, (int, float)) and not isinstance(old, bool):
                container[slot] = draw(numbers)
                return report
    value = draw(hostile)
    if isinstance(container, dict):
        key = draw(st.one_of(st.sampled_from(sorted(container) or ["x"]), keys))
        if draw(st.integers(0, 9)) == 0:
            container[key] = container  # a cycle
        else:
            container[key] = value
    elif container:
        container[draw(st.integers(0, len(container) - 1))] = value
    else:
        container.append(value)
    return report


def _serialized(report: object) -> str | None:
    """The report as JSON text, when json.dumps can write it (else None)."""
    try:
        return json.dumps(report, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None


def _outcome(call: Callable[[], object]) -> object:
    """The result of ``call``, or the type and problems of an expected error."""
    try:
        return call()
    except EXPECTED as error:
        problems = getattr(error, "problems", None)
        return (type(error).__name__, problems if problems is not None else str(error))


def _check_every_form(read: Callable[[Any], object], report: object, tmp_path: Path) -> object:
    """Run ``read`` on the mapping, and on its JSON text and file when it has one: same outcome."""
    outcome = _outcome(lambda: read(report))
    event(f"outcome: {type(outcome).__name__ if not isinstance(outcome, tuple) else outcome[0]}")
    text = _serialized(report)
    if text is not None and isinstance(report, dict) and not _has_non_string_keys(report):
        assert _outcome(lambda: read(text)) == outcome
        path = tmp_path / "report.json"
        path.write_text(text, encoding="utf-8")
        assert _outcome(lambda: read(path)) == outcome
    return outcome


def _has_non_string_keys(value: object) -> bool:
    stack = [value]
    seen = 0
    while stack and seen < 100_000:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if any(not isinstance(key, str) for key in node):
                return True
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("boundary")


@SETTINGS
@given(report=st.one_of(reports, planted(), planted()))
def test_validate_report(report: object, tmp_dir: Path) -> None:
    outcome = _check_every_form(validate_report, report, tmp_dir)
    if isinstance(outcome, str):
        assert isinstance(report, dict)
        assert outcome == report["kind"]


@SETTINGS
@given(report=st.one_of(reports, planted(), planted()))
def test_format_summary(report: object, tmp_dir: Path) -> None:
    outcome = _check_every_form(format_summary, report, tmp_dir)
    if isinstance(outcome, str):
        assert outcome.strip()
        assert "\u202e" not in outcome
        assert "\x00" not in outcome


@SETTINGS
@given(report=st.one_of(reports, planted(), planted()))
def test_render_report(report: object, tmp_dir: Path) -> None:
    outcome = _check_every_form(render_report, report, tmp_dir)
    if isinstance(outcome, str):
        assert outcome.lower().startswith("<!doctype html>")
        assert "\u202e" not in outcome
        assert "\x00" not in outcome
        assert "<script" not in outcome.lower()


@SETTINGS
@given(
    changed=st.one_of(reports, planted(ANALYSIS)),
    changed_side=st.booleans(),
)
def test_compare_reports(changed: object, changed_side: bool, tmp_dir: Path) -> None:
    def compare(report: object) -> object:
        if changed_side:
            return compare_reports(report, ANALYSIS)  # type: ignore[arg-type]
        return compare_reports(ANALYSIS, report)  # type: ignore[arg-type]

    outcome = _check_every_form(compare, changed, tmp_dir)
    if isinstance(outcome, dict):
        assert validate_report(outcome) == "report_diff"


@SETTINGS
@given(
    changed=st.one_of(reports, planted(BENCHMARK)),
    changed_side=st.booleans(),
)
def test_compare_benchmarks(changed: object, changed_side: bool, tmp_dir: Path) -> None:
    def compare(report: object) -> object:
        if changed_side:
            return compare_benchmarks(report, BENCHMARK, bootstrap_resamples=200)  # type: ignore[arg-type]
        return compare_benchmarks(BENCHMARK, report, bootstrap_resamples=200)  # type: ignore[arg-type]

    outcome = _check_every_form(compare, changed, tmp_dir)
    if isinstance(outcome, dict):
        assert validate_report(outcome) == "benchmark_comparison"
