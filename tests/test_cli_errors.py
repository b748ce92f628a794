"""``python -m torchscan``: user errors, the user's exceptions and every file it writes.

Every run is a subprocess of ``python -m torchscan`` on a small workload written to a temporary
file, with a short timing budget.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import torch

from torchscan import validate_report
from torchscan.cli import main

from .conftest import ROOT

WORKLOADS = """\
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)


def workload():
    return model(x)


def helper():
    raise ValueError("raised by the workload")


def failing():
    return helper()
"""
SHORT = ("--min-time", "0.01", "--max-time", "0.05", "--metrics", "latency")
COMMAND = "python -m torchscan measure: error: "


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.py"
    path.write_text(WORKLOADS, encoding="utf-8")
    return path


def torchscan(
    *args: str | Path, stdout: int | IO[Any] = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscan", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=300,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a usage error prints on standard error (exit code 2)."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def measure(
    bench: Path, name: str, *args: str | Path, stdout: int | IO[Any] = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return torchscan("measure", f"{bench}:{name}", *SHORT, *args, stdout=stdout)


@pytest.fixture
def in_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[int, str]]]:
    """``main(argv)`` in this process: ``(exit code, standard error)``, for many quick cases.

    The workload files it imports leave nothing behind: ``sys.path`` and the modules it adds are
    put back afterwards.
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    modules_before = set(sys.modules)

    def run(*argv: str | Path) -> tuple[int, str]:
        try:
            code = main([str(argument) for argument in argv])
        except SystemExit as exit_:  # argparse's own errors
            code = int(exit_.code or 0)
        return code, capsys.readouterr().err

    yield run
    for name in set(sys.modules) - modules_before:
        if name.startswith("_torchscan_workload_"):
            del sys.modules[name]


def test_bad_workload_references_are_one_line_usage_errors(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    missing = tmp_path / "missing.py"
    cases = {
        f"{bench}:nope": f"{bench} has no attribute 'nope'",
        f"{bench}:model.nope": f"{bench} has no attribute 'model.nope'",
        f"{missing}:workload": f"no such file: {missing}",
        f"{tmp_path}:workload": f"not a Python file: {tmp_path}",
        "torchscan_no_such_module:workload": "no module named 'torchscan_no_such_module'",
        "torchscan_no_such_module.sub:workload": "no module named 'torchscan_no_such_module'",
        "torchscan.no_such_module:workload": "no module named 'torchscan.no_such_module'",
        "no-separator": (
            "a workload is 'module:function' or 'path/to/file.py:function', got 'no-separator'"
        ),
        f"{bench}:": (
            f"a workload is 'module:function' or 'path/to/file.py:function', got '{bench}:'"
        ),
        f"{bench}:x": f"{bench}:x is a Tensor, not a callable; name a function that takes no "
        "arguments",
    }
    for reference, message in cases.items():
        assert in_process("measure", reference, *SHORT) == (2, COMMAND + message + "\n")
    # The same through a real run of python -m torchscan: exit code 2, one line.
    result = torchscan("measure", f"{missing}:workload", *SHORT)
    assert one_line_error(result) == COMMAND + f"no such file: {missing}"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ("--metrics", "latency,speed"),
            "metrics must be a non-empty selection of latency, operator_flops, tensor_memory, "
            "process_rss, profiler, hardware_peak; got ['speed']",
        ),
        (
            ("--work-units", "1e308"),
            "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one "
            "call completes); got 1e+308",
        ),
        (
            ("--work-units", "nan"),
            "work_units must be a positive, finite number in [1e-09, 1e+18] (units of work one "
            "call completes); got nan",
        ),
        (
            ("--min-time", "inf"),
            "min_time_s must be a positive, finite number in (0, 86400] (seconds); got inf",
        ),
        (
            ("--min-time", "0"),
            "min_time_s must be a positive, finite number in (0, 86400] (seconds); got 0.0",
        ),
        (
            ("--work-unit", "rows per second"),
            "work_unit must be a name such as 'samples', 'tokens' or 'images' (a letter, then "
            "letters, digits, '_' or '-'); got 'rows per second'",
        ),
        (
            ("--device", "gpu"),
            "device 'gpu' is not a torch device; pass 'cpu', 'cuda', 'cuda:0' or 'mps'",
        ),
        (
            ("--profiler-calls", "0"),
            "profiler_calls must be an integer from 1 to 1,000,000 (calls of the profiler "
            "pass); got 0",
        ),
        (
            ("--profiler-calls", "1000001"),
            "profiler_calls must be an integer from 1 to 1,000,000 (calls of the profiler "
            "pass); got 1000001",
        ),
        (
            ("--peak-flop-rate", "0", "--peak-source", "datasheet"),
            "--peak-flop-rate must be a positive, finite number in [1, 1e+30] (FLOP/s); got 0.0",
        ),
        (
            ("--peak-flop-rate", "5e-324", "--peak-source", "datasheet"),
            "--peak-flop-rate must be a positive, finite number in [1, 1e+30] (FLOP/s); got 5e-324",
        ),
        (
            ("--peak-bandwidth", "1e308", "--peak-source", "datasheet"),
            "--peak-bandwidth must be a positive, finite number in [1, 1e+30] (B/s); got 1e+308",
        ),
        (
            ("--peak-bandwidth", "inf", "--peak-source", "datasheet"),
            "--peak-bandwidth must be a positive, finite number in [1, 1e+30] (B/s); got inf",
        ),
        (
            ("--peak-flop-rate", "989e12"),
            "--peak-source is needed: non-empty text saying where the numbers come from (for "
            "example 'H100 SXM datasheet, dense BF16, no sparsity'); got nothing",
        ),
        (
            ("--peak-source", "datasheet"),
            "the declared peak gives neither --peak-flop-rate (FLOP/s) nor --peak-bandwidth "
            "(B/s); give at least one",
        ),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    bench: Path,
    options: tuple[str, ...],
    message: str,
    in_process: Callable[..., tuple[int, str]],
) -> None:
    assert in_process("measure", f"{bench}:workload", *SHORT, *options) == (
        2,
        COMMAND + message + "\n",
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cuda_without_cuda_is_a_one_line_usage_error(bench: Path) -> None:
    result = measure(bench, "workload", "--device", "cuda")
    assert one_line_error(result) == (
        COMMAND + "device 'cuda' was requested but no CUDA device is available (no GPU, or a "
        "CPU-only PyTorch build); pass device='cpu'"
    )


def test_argparse_errors_are_one_line_too(
    bench: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    assert in_process("measure", f"{bench}:workload", "--min-time", "abc") == (
        2,
        "python -m torchscan measure: error: argument --min-time: invalid float value: 'abc' "
        "(see --help)\n",
    )
    result = torchscan("frobnicate")
    assert one_line_error(result).startswith(
        "python -m torchscan: error: argument COMMAND: invalid choice: 'frobnicate'"
    )


def test_a_declared_peak_reaches_the_report(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    out = tmp_path / "measured.json"
    options = ("--metrics", "latency,operator_flops", "--peak-flop-rate", "1e12")
    source = ("--peak-source", "a datasheet, dense float32")
    assert in_process("measure", f"{bench}:workload", *SHORT, *options, *source, "--json", out) == (
        0,
        "",
    )
    peak = json.loads(out.read_text(encoding="utf-8"))["hardware_peak"]
    assert peak["declared"]["source"] == "a datasheet, dense float32"
    assert peak["flop_rate"]["value"] == 1e12
    assert peak["bandwidth_origin"] is None


def test_profiler_calls_reach_measure_and_both_sides_of_compare(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    out = tmp_path / "measured.json"
    options = ("--metrics", "profiler", "--max-time", "60", "--profiler-calls", "3")
    assert in_process("measure", f"{bench}:workload", *options, "--json", out) == (0, "")
    profiler = json.loads(out.read_text(encoding="utf-8"))["profiler"]
    assert (profiler["calls"], profiler["requested_calls"]) == (3, 3)
    sides = (tmp_path / "baseline.json", tmp_path / "candidate.json")
    assert in_process(
        "compare",
        f"{bench}:workload",
        f"{bench}:workload",
        *options[:4],
        "--profiler-calls",
        "2",
        "--baseline-json",
        sides[0],
        "--candidate-json",
        sides[1],
        "--json",
        tmp_path / "comparison.json",
    ) == (0, "")
    for side in sides:
        report = json.loads(side.read_text(encoding="utf-8"))
        assert validate_report(report) == "benchmark"
        assert (report["profiler"]["calls"], report["profiler"]["requested_calls"]) == (2, 2)
    # argparse refuses a number that is not an integer, on one line.
    code, error = in_process("measure", f"{bench}:workload", "--profiler-calls", "2.5")
    assert (code, error) == (
        2,
        "python -m torchscan measure: error: argument --profiler-calls: invalid int value: "
        "'2.5' (see --help)\n",
    )


def test_compare_options_out_of_range_are_refused_before_the_workloads_load(
    tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    # The module would fail to import: the options are checked first.
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    for options, message in [
        (("--seed", "-1"), "seed must be an integer from 0 to 18,446,744,073,709,551,615; got -1"),
        (("--rtol", "nan"), "rtol must be a finite number >= 0 (a tolerance); got nan"),
        (
            ("--min-effect", "-0.5"),
            "min_effect must be a finite number >= 0 (a relative change, for example 0.02); "
            "got -0.5",
        ),
    ]:
        assert in_process("compare", f"{broken}:f", f"{broken}:f", *options) == (
            2,
            f"python -m torchscan compare: error: {message}\n",
        )


def traceback_frames(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip().startswith("File ")]


def test_an_exception_of_the_workload_shows_its_traceback_and_exits_one(bench: Path) -> None:
    result = measure(bench, "failing")
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert result.stderr.endswith("ValueError: raised by the workload\n")
    frames = traceback_frames(result.stderr)
    # The user's frames, from the first one: torchscan's own are left out.
    assert frames == [
        f'File "{bench}", line 17, in failing',
        f'File "{bench}", line 13, in helper',
    ]
    result = torchscan("compare", f"{bench}:workload", f"{bench}:failing", *SHORT)
    assert result.returncode == 1, result.stderr
    assert result.stderr.endswith("ValueError: raised by the workload\n")


def test_an_exception_on_import_shows_its_traceback_and_exits_one(tmp_path: Path) -> None:
    raising = tmp_path / "raising.py"
    raising.write_text("import torch\n\nraise RuntimeError('import failed')\n", encoding="utf-8")
    result = torchscan("measure", f"{raising}:workload", *SHORT)
    assert result.returncode == 1, result.stderr
    assert traceback_frames(result.stderr) == [f'File "{raising}", line 3, in <module>']
    assert result.stderr.endswith("RuntimeError: import failed\n")

    # A module that exists but imports one that does not is the user's error, not a usage error.
    importing = tmp_path / "importing.py"
    importing.write_text("import torchscan_absent_dependency\n", encoding="utf-8")
    result = torchscan("measure", f"{importing}:workload", *SHORT)
    assert result.returncode == 1, result.stderr
    assert result.stderr.endswith(
        "ModuleNotFoundError: No module named 'torchscan_absent_dependency'\n"
    )

    syntax = tmp_path / "syntax.py"
    syntax.write_text("def workload(:\n    pass\n", encoding="utf-8")
    result = torchscan("measure", f"{syntax}:workload", *SHORT)
    assert result.returncode == 1, result.stderr
    assert f'File "{syntax}", line 1' in result.stderr
    assert "SyntaxError" in result.stderr.splitlines()[-1]


def test_an_output_that_cannot_be_written_is_refused_before_the_measurement(
    bench: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    bench.write_text(
        WORKLOADS + f"\n\ndef marking():\n    open({str(marker)!r}, 'w').close()\n",
        encoding="utf-8",
    )
    missing = tmp_path / "no" / "such" / "out.json"
    result = measure(bench, "marking", "--json", missing)
    assert one_line_error(result) == (
        COMMAND + f"cannot write {missing}: no such directory: {missing.parent}"
    )
    result = measure(bench, "marking", "--json", tmp_path)
    assert one_line_error(result) == COMMAND + f"cannot write {tmp_path}: Is a directory"
    assert not marker.exists()


def report_of(text: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(text)
    assert validate_report(report) == "benchmark"
    return report


def test_outputs_go_through_the_writer_new_file_mode_and_symlink(
    bench: Path, tmp_path: Path
) -> None:
    new = tmp_path / "new.json"
    private = tmp_path / "private.json"
    private.write_text("old", encoding="utf-8")
    private.chmod(0o600)
    target = tmp_path / "target.json"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    for output in (new, private, link):
        result = measure(bench, "workload", "--json", output)
        assert result.returncode == 0, result.stderr
        report_of(output.read_text(encoding="utf-8"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert link.is_symlink() and os.readlink(link) == target.name
    report_of(target.read_text(encoding="utf-8"))
    # Nothing else is left in the folder: no temporary file.
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "bench.py",
        "link.json",
        "new.json",
        "private.json",
        "target.json",
    ]


class FifoReader:
    """A FIFO and a thread that reads everything written to it.

    A descriptor opened read-write keeps the FIFO open, so that the reader neither blocks on
    its open nor sees end of file before :meth:`finish` closes it, whatever a writer does.
    """

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.keeper: int | None = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self.received: list[bytes] = []
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.opened.wait(timeout=60)

    def _read(self) -> None:
        with open(self.path, "rb") as pipe:
            self.opened.set()
            self.received.append(pipe.read())

    def finish(self) -> bytes:
        """Everything written so far: the reader sees end of file once the keeper is closed."""
        if self.keeper is not None:
            os.close(self.keeper)
            self.keeper = None
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return b"".join(self.received)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[FifoReader]:
    reader = FifoReader(tmp_path / "fifo")
    yield reader
    reader.finish()


def test_a_fifo_is_written_directly(bench: Path, fifo: FifoReader) -> None:
    result = measure(bench, "workload", "--json", fifo.path)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.path.lstat().st_mode)  # still the FIFO, never replaced
    report_of(fifo.finish().decode("utf-8"))


def test_a_full_device_fails_the_same_way_as_a_file_and_as_stdout(
    bench: Path, full_device: Path
) -> None:
    result = measure(bench, "workload", "--json", full_device)
    assert one_line_error(result) == (
        COMMAND + f"cannot write {full_device}: No space left on device"
    )
    assert stat.S_ISCHR(full_device.lstat().st_mode)  # still the device
    with open(full_device, "wb") as stdout:
        result = measure(bench, "workload", "--json", "-", stdout=stdout)
    assert one_line_error(result) == (
        COMMAND + "cannot write to standard output: No space left on device"
    )
    with open(full_device, "wb") as stdout:  # the summary, when the report goes to a file
        result = measure(bench, "workload", stdout=stdout)
    assert one_line_error(result) == (
        COMMAND + "cannot write to standard output: No space left on device"
    )


def test_a_broken_pipe_on_stdout_is_a_one_line_usage_error(bench: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    with os.fdopen(write_end, "wb") as stdout:
        result = measure(bench, "workload", "--json", "-", stdout=stdout)
    assert one_line_error(result) == COMMAND + "cannot write to standard output: Broken pipe"


def test_measure_to_stdout_prints_the_report_alone(bench: Path) -> None:
    result = measure(bench, "workload", "--json", "-")
    assert result.returncode == 0, result.stderr
    report = report_of(result.stdout)
    assert report["workload"]["name"] == "workload"
    assert result.stderr == ""
