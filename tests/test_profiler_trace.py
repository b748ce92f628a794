"""``measure_workload(..., profiler_trace=path)``: the profiler pass's Chrome trace kept in a file.

The file is written as every output of the package (a temporary file in the same directory,
then a rename), holds every profiled call and only those, and the report names it only once it
is there; bad paths are refused before the workload runs.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import torchscan
from torchscan import IncompleteMeasurementError, InvalidArgumentError, measure_workload
from torchscan.cli import main

torch.set_num_threads(1)
# The profiler pass alone, with a budget no test comes near (unless it asks for a small one).
PROFILER_ONLY: dict[str, Any] = {
    "metrics": ["profiler"],
    "print_summary": False,
    "min_time_s": 0.05,
    "max_time_s": 60.0,
}


class Linear:
    """A ``Linear(8, 8)`` workload that counts its calls: one ``aten::addmm`` per call."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.model = torch.nn.Linear(8, 8).eval()
        self.inputs = torch.randn(2, 8)
        self.calls = 0

    def __call__(self) -> torch.Tensor:
        self.calls += 1
        with torch.inference_mode():
            return self.model(self.inputs)


def trace_events(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    document = json.loads(data)
    assert isinstance(document, dict)
    events = document["traceEvents"]
    assert isinstance(events, list)
    return events


def operator_events(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("ph") == "X" and e.get("name") == name]


def profiler_warnings(report: torchscan.BenchmarkReport) -> list[str]:
    return [d["message"] for d in report["diagnostics"] if d["code"] == "profiler_failed"]


def scratch_directories() -> set[str]:
    """The profiler pass's scratch directories in the temporary directory."""
    return {
        name for name in os.listdir(tempfile.gettempdir()) if name.startswith("torchscan-trace-")
    }


@pytest.fixture
def no_scratch_left() -> Iterator[None]:
    before = scratch_directories()
    yield
    assert scratch_directories() - before == set()


@pytest.mark.usefixtures("no_scratch_left")
def test_the_trace_holds_every_profiled_call_and_the_report_names_it(tmp_path: Path) -> None:
    workload = Linear()
    path = tmp_path / "trace.json"
    report = measure_workload(workload, profiler_calls=3, profiler_trace=path, **PROFILER_ONLY)
    assert workload.calls == 3  # no other pass: every call was profiled
    profiler = report["profiler"]
    assert (profiler["status"], profiler["calls"]) == ("complete", 3)
    assert profiler.get("trace") == {
        "path": str(path),
        "format": "chrome_trace",
        "scope": "the 3 profiled calls of the profiler pass (2 profiler sessions, joined)",
        "calls": 3,
        "instrumented": True,
        "bytes": path.stat().st_size,
    }
    assert report["diagnostics"] == []
    assert torchscan.validate_report(report) == "benchmark"
    # Only the trace is left in the folder: no temporary file of the writer.
    assert sorted(os.listdir(tmp_path)) == ["trace.json"]
    events = trace_events(path)
    # One addmm and one linear per call, in both sessions joined: the 3 calls, no more.
    assert len(operator_events(events, "aten::addmm")) == 3
    assert len(operator_events(events, "aten::linear")) == 3
    (addmm,) = [op for op in profiler["top_operators"] if op["operator"] == "aten::addmm"]
    assert addmm["calls"] == 3
    document = json.loads(path.read_bytes())
    assert document["traceName"] == str(path)
    # The sessions' events are on one clock: the second session's calls follow the first's.
    starts = sorted(e["ts"] for e in operator_events(events, "aten::linear"))
    assert starts == [e["ts"] for e in operator_events(events, "aten::linear")]


@pytest.mark.usefixtures("no_scratch_left")
def test_the_summary_and_the_page_name_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "run 1" / "trace & more.json"
    path.parent.mkdir()
    report = measure_workload(Linear(), profiler_calls=2, profiler_trace=path, **PROFILER_ONLY)
    trace = report["profiler"].get("trace")
    assert trace is not None
    size = trace["bytes"]
    summary = torchscan.format_summary(report).splitlines()
    mib = f"{size / 1048576:.3f} MiB"
    assert (
        f"  Profiler trace: {path} (Chrome trace event JSON, {mib}; open it in Perfetto or "
        "chrome://tracing)"
    ) in summary
    assert (
        "    Scope: the 2 profiled calls of the profiler pass (2 profiler sessions, joined); "
        "instrumented, so its times are slower than the timed blocks'"
    ) in summary
    page = torchscan.render_report(report)
    href = "file:" + "".join(
        "&#x2f;" if part == "/" else part
        for part in "//" + str(path).replace(" ", "%20").replace("&", "%26")
    )
    shown = str(path).replace("/", "&#x2f;").replace("&", "&amp;").replace("&amp;#x2f;", "&#x2f;")
    assert f'<dt>Trace</dt><dd><a href="{href}">{shown}</a></dd>' in page
    assert "instrumented, so its times are slower than the timed blocks&#x27;" in page


@pytest.mark.usefixtures("no_scratch_left")
def test_a_gz_path_gets_a_gzip_compressed_trace_and_one_call_one_session(tmp_path: Path) -> None:
    path = tmp_path / "trace.json.gz"
    report = measure_workload(Linear(), profiler_calls=1, profiler_trace=str(path), **PROFILER_ONLY)
    assert report["profiler"].get("trace") == {
        "path": str(path),
        "format": "chrome_trace_gzip",
        "scope": "the 1 profiled call of the profiler pass",
        "calls": 1,
        "instrumented": True,
        "bytes": path.stat().st_size,
    }
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert len(operator_events(trace_events(path), "aten::addmm")) == 1
    assert torchscan.validate_report(report) == "benchmark"


@pytest.mark.usefixtures("no_scratch_left")
def test_a_pass_cut_short_by_its_budget_keeps_the_calls_that_ran(tmp_path: Path) -> None:
    calls = [0]
    weight = torch.randn(4, 4)

    def slow() -> torch.Tensor:
        calls[0] += 1
        time.sleep(0.05)
        return torch.mm(weight, weight)

    path = tmp_path / "trace.json"
    report = measure_workload(
        slow,
        metrics=["profiler"],
        print_summary=False,
        profiler_calls=100,
        min_time_s=0.05,
        max_time_s=0.4,
        profiler_trace=path,
    )
    ran = report["profiler"]["calls"]
    assert ran is not None and 1 <= ran < 100
    assert calls[0] == ran
    trace = report["profiler"].get("trace")
    assert trace is not None
    assert trace["calls"] == ran
    assert trace["scope"].endswith(f"; {ran} of the 100 requested calls fit in the time budget")
    assert len(operator_events(trace_events(path), "aten::mm")) == ran
    (warning,) = profiler_warnings(report)
    assert f"; the profile and its trace cover {ran} calls: raise max_time_s" in warning
    assert torchscan.validate_report(report) == "benchmark"


class _FspathBytes:
    def __fspath__(self) -> bytes:
        return b"trace.json"


@pytest.mark.parametrize(
    ("make", "metrics", "message"),
    [
        (
            lambda tmp: tmp / "trace.json",
            ["latency"],
            "profiler_trace={path!r} keeps the trace of the profiler pass, which metrics does "
            "not select (got latency); add 'profiler' to metrics",
        ),
        (lambda tmp: tmp, ["profiler"], "profiler_trace must name a file; {path!r} is a directory"),
        (
            lambda tmp: tmp / "missing" / "trace.json",
            ["profiler"],
            "profiler_trace={path!r} cannot be written: no such directory: {tmp}/missing",
        ),
        (
            lambda tmp: 3,
            ["profiler"],
            "profiler_trace must be a file path (str or os.PathLike) to write the profiler "
            "pass's Chrome trace to, or None; got int",
        ),
        (
            lambda tmp: b"trace.json",
            ["profiler"],
            "profiler_trace must be a file path (str or os.PathLike) to write the profiler "
            "pass's Chrome trace to, or None; got bytes",
        ),
        (
            lambda tmp: _FspathBytes(),
            ["profiler"],
            "profiler_trace must be a file path (str or os.PathLike) to write the profiler "
            "pass's Chrome trace to, or None; got a bytes path",
        ),
        (lambda tmp: "", ["profiler"], "profiler_trace must name a file; got ''"),
        (lambda tmp: "a\0b", ["profiler"], "profiler_trace must name a file; got 'a\\x00b'"),
        (
            lambda tmp: "trace-\udcff.json",
            ["profiler"],
            "profiler_trace must be text (it is recorded in the report); got "
            "'trace-\\udcff.json', which holds bytes that are not UTF-8",
        ),
    ],
    ids=[
        "not-requested",
        "directory",
        "missing-directory",
        "int",
        "bytes",
        "fspath-bytes",
        "empty",
        "nul",
        "not-utf8",
    ],
)
def test_bad_traces_are_refused_before_the_workload_runs(
    tmp_path: Path, make: Callable[[Path], Any], metrics: list[str], message: str
) -> None:
    workload = Linear()
    target = make(tmp_path)
    with pytest.raises(InvalidArgumentError) as raised:
        measure_workload(
            workload,
            metrics=metrics,
            print_summary=False,
            min_time_s=0.05,
            max_time_s=1.0,
            profiler_trace=target,
        )
    path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
    assert str(raised.value) == message.format(path=path, tmp=tmp_path)
    assert workload.calls == 0
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.usefixtures("no_scratch_left")
def test_a_failing_write_leaves_no_file_and_names_no_trace(
    tmp_path: Path, full_device: Path
) -> None:
    # A link to a mknod copy of /dev/full: the writer writes through it, and the device refuses
    # every byte.
    path = tmp_path / "trace.json"
    path.symlink_to(full_device)
    report = measure_workload(Linear(), profiler_calls=2, profiler_trace=path, **PROFILER_ONLY)
    assert report["profiler"]["status"] == "complete"
    assert "trace" not in report["profiler"]
    assert profiler_warnings(report) == [
        f"the profiler trace was not written to {path}: No space left on device"
    ]
    assert torchscan.validate_report(report) == "benchmark"
    assert sorted(os.listdir(tmp_path)) == ["trace.json"]  # the link alone, no temporary file
    assert path.is_symlink() and os.readlink(path) == str(full_device)
    with pytest.raises(IncompleteMeasurementError) as raised:
        measure_workload(
            Linear(), profiler_calls=2, profiler_trace=path, strict=True, **PROFILER_ONLY
        )
    assert raised.value.metrics == [("profiler_trace", "unavailable")]


@pytest.mark.usefixtures("no_scratch_left")
def test_a_directory_removed_during_the_pass_is_said_and_nothing_is_claimed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    path = folder / "trace.json"
    workload = Linear()

    def removes_the_folder() -> torch.Tensor:
        if folder.exists():
            folder.rmdir()
        return workload()

    report = measure_workload(
        removes_the_folder, profiler_calls=2, profiler_trace=path, **PROFILER_ONLY
    )
    assert "trace" not in report["profiler"]
    assert profiler_warnings(report) == [
        f"the profiler trace was not written to {path}: No such file or directory"
    ]
    assert not folder.exists()
    assert torchscan.validate_report(report) == "benchmark"


def _failing_export(monkeypatch: pytest.MonkeyPatch, fail_at: set[int]) -> list[int]:
    """Make ``export_chrome_trace`` fail at the given calls (1-based); returns the call count."""
    real = torch.profiler.profile.export_chrome_trace
    count = [0]

    def export(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        if count[0] in fail_at:
            raise RuntimeError("export failed on purpose")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", export)
    return count


@pytest.mark.usefixtures("no_scratch_left")
def test_a_session_that_cannot_be_exported_leaves_a_trace_of_fewer_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exported = _failing_export(monkeypatch, {2})
    path = tmp_path / "trace.json"
    report = measure_workload(Linear(), profiler_calls=4, profiler_trace=path, **PROFILER_ONLY)
    assert exported[0] == 2
    assert report["profiler"]["calls"] == 4
    trace = report["profiler"].get("trace")
    assert trace is not None
    assert (trace["calls"], trace["scope"]) == (
        1,
        "1 of the 4 profiled calls of the profiler pass",
    )
    assert len(operator_events(trace_events(path), "aten::addmm")) == 1
    assert profiler_warnings(report) == [
        f"the profiler trace {path} covers 1 of the 4 profiled calls: exporting the other 3 "
        "failed (RuntimeError: export failed on purpose)"
    ]
    assert torchscan.validate_report(report) == "benchmark"
    _failing_export(monkeypatch, {2})  # counted afresh: the next pass's second session fails
    with pytest.raises(IncompleteMeasurementError) as raised:
        measure_workload(
            Linear(), profiler_calls=4, profiler_trace=path, strict=True, **PROFILER_ONLY
        )
    assert raised.value.metrics == [("profiler_trace", "partial")]


@pytest.mark.usefixtures("no_scratch_left")
def test_no_exported_session_keeps_the_old_file_and_claims_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_export(monkeypatch, {1, 2})
    path = tmp_path / "trace.json"
    path.write_text("an older trace\n", encoding="utf-8")
    report = measure_workload(Linear(), profiler_calls=2, profiler_trace=path, **PROFILER_ONLY)
    assert "trace" not in report["profiler"]
    assert profiler_warnings(report) == [
        f"the profiler trace was not written to {path}: exporting it failed (RuntimeError: "
        "export failed on purpose; RuntimeError: export failed on purpose)"
    ]
    assert path.read_text(encoding="utf-8") == "an older trace\n"
    assert sorted(os.listdir(tmp_path)) == ["trace.json"]


@pytest.mark.usefixtures("no_scratch_left")
def test_a_pass_that_cannot_run_writes_no_trace_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        report = measure_workload(Linear(), profiler_calls=2, profiler_trace=path, **PROFILER_ONLY)
    assert report["profiler"]["status"] == "unavailable"
    assert "trace" not in report["profiler"]
    (warning,) = profiler_warnings(report)
    assert warning.startswith("the profiler pass did not run: a PyTorch profiler is ")
    assert warning.endswith(f"; no profiler trace was written to {path}")
    assert not path.exists()
    assert torchscan.validate_report(report) == "benchmark"


def test_the_workload_exception_propagates_and_no_file_is_left(tmp_path: Path) -> None:
    before = scratch_directories()
    error = ValueError("raised by the workload")

    def failing() -> None:
        raise error

    path = tmp_path / "trace.json"
    with pytest.raises(ValueError, match="raised by the workload") as raised:
        measure_workload(failing, profiler_calls=2, profiler_trace=path, **PROFILER_ONLY)
    assert raised.value is error
    assert os.listdir(tmp_path) == []
    assert scratch_directories() - before == set()


TRACED_MODULE = """
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8).eval()
    inputs = torch.randn(2, 8)


    def workload():
        with torch.inference_mode():
            return model(inputs)
"""


@pytest.mark.usefixtures("no_scratch_left")
def test_with_the_rss_child_the_trace_is_still_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # process_rss runs the workload in a fresh child process; the profiler pass runs here, after
    # it, and keeps its trace all the same.
    (tmp_path / "ts_traced_workload.py").write_text(
        textwrap.dedent(TRACED_MODULE), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("ts_traced_workload")
    try:
        path = tmp_path / "trace.json"
        report = measure_workload(
            module.workload,
            metrics=["process_rss", "profiler"],
            print_summary=False,
            min_time_s=0.05,
            max_time_s=60.0,
            profiler_calls=2,
            profiler_trace=path,
        )
    finally:
        monkeypatch.delitem(__import__("sys").modules, "ts_traced_workload")
    assert report["metrics"]["process_rss_workload_peak"]["status"] == "complete"
    trace = report["profiler"].get("trace")
    assert trace is not None and trace["calls"] == 2
    assert len(operator_events(trace_events(path), "aten::addmm")) == 2
    assert torchscan.validate_report(report) == "benchmark"


BENCH = """
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8).eval()
    inputs = torch.randn(2, 8)
    (__import__("pathlib").Path(__file__).parent / "imported").touch()


    def workload():
        with torch.inference_mode():
            return model(inputs)
"""


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[int, str]]]:
    """``python -m torchscan`` in this process: ``(exit code, standard error)``."""
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))
    modules_before = set(sys.modules)

    def run(*argv: str | Path) -> tuple[int, str]:
        try:
            code = main([str(argument) for argument in argv])
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        return code, capsys.readouterr().err

    yield run
    for name in set(sys.modules) - modules_before:
        if name.startswith("_torchscan_workload_"):
            del sys.modules[name]


@pytest.mark.usefixtures("no_scratch_left")
def test_the_cli_keeps_the_trace(tmp_path: Path, run_cli: Callable[..., tuple[int, str]]) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(textwrap.dedent(BENCH), encoding="utf-8")
    (tmp_path / "out").mkdir()
    trace, out = tmp_path / "out" / "trace.json", tmp_path / "out" / "report.json"
    options = ("--metrics", "profiler", "--max-time", "60", "--profiler-calls", "2")
    assert run_cli(
        "measure", f"{bench}:workload", *options, "--profiler-trace", trace, "--json", out
    ) == (0, "")
    report = json.loads(out.read_text(encoding="utf-8"))
    assert torchscan.validate_report(report) == "benchmark"
    assert report["profiler"]["trace"]["path"] == str(trace)
    assert report["profiler"]["trace"]["bytes"] == trace.stat().st_size
    assert len(operator_events(trace_events(trace), "aten::addmm")) == 2


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ("--metrics", "latency", "--profiler-trace", "{tmp}/t.json"),
            "profiler_trace='{tmp}/t.json' keeps the trace of the profiler pass, which metrics "
            "does not select (got latency); add 'profiler' to metrics",
        ),
        (
            ("--metrics", "profiler", "--profiler-trace", "{tmp}/missing/t.json"),
            "profiler_trace='{tmp}/missing/t.json' cannot be written: no such directory: "
            "{tmp}/missing",
        ),
        (
            ("--metrics", "profiler", "--profiler-trace", "{tmp}"),
            "profiler_trace must name a file; '{tmp}' is a directory",
        ),
        (
            ("--metrics", "profiler", "--profiler-trace", "-"),
            "--profiler-trace needs a file name; '-' (standard output) is refused",
        ),
    ],
    ids=["not-requested", "missing-directory", "directory", "stdout"],
)
def test_the_cli_refuses_a_bad_trace_before_importing_the_workload(
    tmp_path: Path,
    run_cli: Callable[..., tuple[int, str]],
    argv: tuple[str, ...],
    error: str,
) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(textwrap.dedent(BENCH), encoding="utf-8")
    code, stderr = run_cli("measure", f"{bench}:workload", *(a.format(tmp=tmp_path) for a in argv))
    assert (code, stderr) == (
        2,
        f"python -m torchscan measure: error: {error.format(tmp=tmp_path)}\n",
    )
    assert not (tmp_path / "imported").exists()  # the workload's module was never imported
