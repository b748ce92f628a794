"""Reading reports in Python: size limits, paths that are not files, bytes that are not UTF-8, JSON
values that are not objects, deep nesting and keys that are not strings, and strings from module
names shown escaped (issue 22, point 5)."""

from __future__ import annotations

import errno
import io
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchscan
from torchscan import (
    InvalidArgumentError,
    ReportValidationError,
    compare_benchmarks,
    compare_reports,
    crawl_module,
    format_summary,
    render_report,
    validate_report,
)
from torchscan.reports.validation import (
    MAX_NESTING_DEPTH,
    _has_value_problems,
    _value_problems_at_paths,
    max_input_bytes,
    report_json,
)

from .conftest import FIXTURES

ANALYSIS = FIXTURES / "reports" / "analysis_small_cnn.json"
BENCHMARK = FIXTURES / "reports" / "benchmark_readme_cpu.json"

# Every public function that reads a report, called on one report argument.
READERS: dict[str, Callable[[Any], object]] = {
    "validate_report": validate_report,
    "format_summary": format_summary,
    "render_report": render_report,
    "compare_reports:before": lambda report: compare_reports(report, ANALYSIS),
    "compare_reports:after": lambda report: compare_reports(ANALYSIS, report),
    "compare_benchmarks:baseline": lambda report: compare_benchmarks(report, BENCHMARK),
    "compare_benchmarks:candidate": lambda report: compare_benchmarks(BENCHMARK, report),
}


@pytest.fixture(params=sorted(READERS))
def reader(request: pytest.FixtureRequest) -> Callable[[Any], object]:
    return READERS[str(request.param)]


@pytest.mark.parametrize("name", sorted(READERS))
def test_the_readers_accept_a_report_as_a_path_and_a_str_path(name: str) -> None:
    good = BENCHMARK if name.startswith("compare_benchmarks") else ANALYSIS
    assert READERS[name](good) == READERS[name](str(good))
    assert validate_report(str(ANALYSIS)) == "analysis"
    assert validate_report(str(BENCHMARK)) == "benchmark"


@pytest.mark.parametrize("as_path", [True, False], ids=["Path", "str"])
def test_a_missing_file_is_file_not_found_naming_it(
    reader: Callable[[Any], object], tmp_path: Path, as_path: bool
) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(FileNotFoundError) as caught:
        reader(missing if as_path else str(missing))
    assert caught.value.errno == errno.ENOENT
    assert caught.value.filename == str(missing)
    assert "JSON" not in str(caught.value)


@pytest.mark.parametrize("as_path", [True, False], ids=["Path", "str"])
def test_a_directory_is_is_a_directory_error_naming_it(
    reader: Callable[[Any], object], tmp_path: Path, as_path: bool
) -> None:
    with pytest.raises(IsADirectoryError) as caught:
        reader(tmp_path if as_path else str(tmp_path))
    assert caught.value.filename == str(tmp_path)


def test_a_device_that_never_ends_stops_at_the_limit(
    reader: Callable[[Any], object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", "65536")
    with pytest.raises(OSError, match="larger than the limit") as caught:
        reader(Path("/dev/zero"))
    assert caught.value.errno == errno.EFBIG
    assert caught.value.filename == "/dev/zero"
    assert caught.value.strerror == (
        "larger than the limit of 65536 bytes; raise it with the environment variable "
        "TORCHSCAN_MAX_INPUT_BYTES"
    )


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO whose writer never stops until the reader closes it."""
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    written = [0]

    def feed() -> None:
        try:
            with open(fifo, "wb") as handle:
                while True:
                    handle.write(b"[" * 65536)
                    written[0] += 65536
        except (BrokenPipeError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    yield fifo
    # Unblock a writer still waiting for a reader, then wait for it.
    try:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass
    feeder.join(timeout=60)
    assert not feeder.is_alive()


def test_an_endless_pipe_stops_at_the_limit(
    endless_fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", str(1 << 20))
    with pytest.raises(OSError, match="larger than the limit") as caught:
        validate_report(str(endless_fifo))
    assert caught.value.errno == errno.EFBIG
    assert caught.value.filename == str(endless_fifo)


def test_the_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = ANALYSIS.read_bytes()
    exact = tmp_path / "exact.json"
    exact.write_bytes(text)
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", str(len(text)))
    assert validate_report(exact) == "analysis"
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", str(len(text) - 1))
    with pytest.raises(OSError, match=f"larger than the limit of {len(text) - 1} bytes"):
        validate_report(exact)


def test_the_default_limit_is_one_gibibyte(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHSCAN_MAX_INPUT_BYTES", raising=False)
    assert max_input_bytes() == 1 << 30
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", " 4096 ")
    assert max_input_bytes() == 4096


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "1e9", "x", "", "٣"])
def test_a_bad_limit_names_the_variable(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHSCAN_MAX_INPUT_BYTES", value)
    with pytest.raises(InvalidArgumentError, match="invalid TORCHSCAN_MAX_INPUT_BYTES value"):
        validate_report(ANALYSIS)


def test_bytes_that_are_not_utf8_name_the_file(
    reader: Callable[[Any], object], tmp_path: Path
) -> None:
    bad = tmp_path / "bad\u202e.json"
    bad.write_bytes(b'{"schema_version": 1, "kind": "\xff"}')
    with pytest.raises(ReportValidationError) as caught:
        reader(bad)
    (path, message), *_ = caught.value.problems
    assert path.endswith("$")
    assert message == f"{tmp_path}/bad\\u202e.json is not UTF-8 text: byte 31 is 0xff"


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ([ANALYSIS.name], "an array"),
        ((), "an array"),
        (42, "a number"),
        (1.5, "a number"),
        (True, "a boolean"),
        (None, "null"),
    ],
)
def test_a_json_value_that_is_not_an_object_is_an_invalid_report(
    reader: Callable[[Any], object], value: object, found: str
) -> None:
    with pytest.raises(ReportValidationError) as caught:
        reader(value)
    assert [message for _, message in caught.value.problems] == [
        f"a report is a JSON object, got {found}"
    ]


def test_json_load_of_an_array_file_agrees_with_the_command_line(tmp_path: Path, cli: str) -> None:
    import subprocess

    array = tmp_path / "array.json"
    array.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(ReportValidationError) as caught:
        validate_report(json.loads(array.read_text(encoding="utf-8")))
    result = subprocess.run([cli, "validate", str(array)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{array}: {p}: {m}" for p, m in caught.value.problems]


def _nested(levels: int) -> object:
    """``levels`` arrays around a string, built without recursion."""
    value: object = "conv"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [MAX_NESTING_DEPTH - 1, MAX_NESTING_DEPTH, 10_000])
def test_deep_nesting_in_a_mapping_agrees_with_the_core(levels: int) -> None:
    report = json.loads(ANALYSIS.read_text(encoding="utf-8"))
    report["kind"] = _nested(levels)
    with pytest.raises(ReportValidationError) as from_mapping:
        validate_report(report)
    if levels >= MAX_NESTING_DEPTH:
        # The root object and `levels` arrays: one level too many from 127 arrays on.
        assert from_mapping.value.problems == [
            (
                "$.kind" + "[0]" * (MAX_NESTING_DEPTH - 1),
                "nested too deeply: a report nests at most 127 arrays and objects (the root "
                "object counts as one)",
            )
        ]
    else:
        assert from_mapping.value.problems[0][1].startswith("must be a string")
    if levels < 1000:  # json.dumps itself recurses; the core reads the text without recursion
        with pytest.raises(ReportValidationError) as from_text:
            validate_report(json.dumps(report))
        assert from_text.value.problems == from_mapping.value.problems


def test_deep_nesting_in_json_text_is_refused_without_recursion() -> None:
    text = ANALYSIS.read_text(encoding="utf-8").replace(
        '"kind": "analysis"', '"kind": ' + "[" * 100_000 + "]" * 100_000, 1
    )
    with pytest.raises(ReportValidationError, match="nested too deeply"):
        validate_report(text)


def test_a_mapping_that_contains_itself_is_refused(reader: Callable[[Any], object]) -> None:
    report = json.loads(ANALYSIS.read_text(encoding="utf-8"))
    report["layers"][0]["inputs"] = report
    with pytest.raises(ReportValidationError) as caught:
        reader(report)
    assert caught.value.problems[0][1].startswith("nested too deeply")


def test_keys_that_are_not_strings_are_refused_with_their_paths() -> None:
    report = json.loads(ANALYSIS.read_text(encoding="utf-8"))
    report[1] = "one"
    report["layers"][0]["a\u202eb"] = {(1, 2): None, None: 0}
    with pytest.raises(ReportValidationError) as caught:
        validate_report(report)
    assert caught.value.problems == [
        ("$", "a key is int 1, not a string"),
        ('$.layers[0]["a\\u202eb"]', "a key is tuple (1, 2), not a string"),
        ('$.layers[0]["a\\u202eb"]', "a key is NoneType None, not a string"),
    ]


_JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=2) | st.integers() | st.none(), children, max_size=4)
        | st.dictionaries(st.text(max_size=2), children, max_size=4).map(MappingProxyType)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_LIKE, depth=st.integers(0, MAX_NESTING_DEPTH + 2))
def test_the_quick_check_finds_what_the_walk_with_paths_finds(value: object, depth: int) -> None:
    # Every report is checked on its way out by the walk without paths; the paths are made
    # only when it finds something, so the two must agree on every value.
    for _ in range(depth):
        value = [value]
    assert _has_value_problems(value) == bool(_value_problems_at_paths(value))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (object(), "Object of type object is not JSON serializable"),
        (10**5000, "Exceeds the limit (4300 digits) for integer string conversion"),
        (torch.tensor(1.0), "Object of type Tensor is not JSON serializable"),
    ],
    ids=["object", "huge-int", "tensor"],
)
def test_values_json_cannot_hold_are_invalid(value: object, message: str) -> None:
    report = json.loads(ANALYSIS.read_text(encoding="utf-8"))
    report["model"] = value
    with pytest.raises(ReportValidationError) as caught:
        validate_report(report)
    (path, text), *_ = caught.value.problems
    assert path == "$"
    assert text.startswith("not JSON-serializable: " + message)


def test_a_str_that_is_json_is_never_read_as_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "42").write_text(ANALYSIS.read_text(encoding="utf-8"), encoding="utf-8")
    # "42" names a file here, and the file wins: a str that is not an object or array is a path
    # when such a file exists.
    assert validate_report("42") == "analysis"
    # Text that starts with `{` or `[` is always JSON.
    with pytest.raises(ReportValidationError, match="got an array"):
        validate_report(" [42]")
    assert report_json('{"a": 1}') == '{"a": 1}'


# A module name with a NUL and a right-to-left override: shown escaped everywhere it is displayed.
HOSTILE = "a\u202eb\x00c"
SHOWN = "a\\u202eb\\u0000c"


def _hostile_model() -> nn.Module:
    model = nn.Sequential()
    model.add_module(HOSTILE, nn.Linear(3, 2))
    return model


def test_module_names_show_escaped_in_every_display() -> None:
    torch.manual_seed(0)
    model = _hostile_model()
    report = crawl_module(model, args=(torch.randn(1, 3),))
    # The report keeps the name as it is; only displays escape it.
    assert [layer["name"] for layer in report["layers"]][1] == HOSTILE
    printed = io.StringIO()
    torchscan.summary(model, args=(torch.randn(1, 3),), file=printed)
    table = format_summary(report)
    page = render_report(report)
    for shown in (printed.getvalue(), table, page):
        assert SHOWN in shown
        assert "\u202e" not in shown
        assert "\x00" not in shown
    assert printed.getvalue() == table + "\n" or printed.getvalue() == table
