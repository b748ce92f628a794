"""``python -m torchscan``: outputs never clobber inputs or each other, ``--json -`` stays JSON.

Every command refuses, before anything runs, an output that is the same file as an input (the
workload's file) or as another output; ``--json -`` keeps standard output for the JSON while the
user's code prints; ``{rank}`` is replaced in every path before any check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torchscan import validate_report

from .conftest import report_cli
from .test_cli_errors import torchscan as cli_errors_torchscan
from .test_distributed import _torchrun_measure
from .test_loader import main_in_process, restored_imports, torchscan

SHORT = ("--min-time", "0.01", "--max-time", "0.05", "--metrics", "latency")
BENCH = """
import torch

with open({marker!r}, "w") as marker:
    marker.write("imported")

model = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)


def workload():
    return model(x)


def make():
    return model
"""


@pytest.fixture
def in_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Callable[..., tuple[int, str]]]:
    """``main(argv)`` in this process, the modules and ``sys.path`` restored afterwards."""
    restoring = restored_imports(monkeypatch, tmp_path)
    next(restoring)
    yield main_in_process(capsys)
    next(restoring, None)


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    """A workload file that leaves ``imported`` beside it when it is imported."""
    path = tmp_path / "bench.py"
    path.write_text(BENCH.format(marker=str(tmp_path / "imported")), encoding="utf-8")
    return path


def refused(run: Callable[..., tuple[int, str]], command: str, *argv: str | Path) -> str:
    """The one error line of ``command`` (exit 2), with nothing imported."""
    code, stderr = run(command, *argv)
    assert code == 2, stderr
    [line] = stderr.splitlines()
    prefix = f"python -m torchscan {command}: error: "
    assert line.startswith(prefix)
    return line.removeprefix(prefix)


SAME = "every output needs a file of its own, apart from the inputs"


def test_two_outputs_naming_one_file_are_refused(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    out = tmp_path / "x.json"
    workload = f"{bench}:workload"
    assert refused(in_process, "measure", workload, *SHORT, "--json", out, "--html", out) == (
        f"--html {out} is the same file as --json {out}: one would overwrite the other; {SAME}"
    )
    # By resolved path: another spelling, or a symlink to the other output.
    link = tmp_path / "link.json"
    link.symlink_to(out)
    assert refused(
        in_process, "measure", workload, *SHORT, "--json", out, "--html", link
    ).startswith(f"--html {link} is the same file as --json {out}:")
    other = f"{tmp_path}/sub/../x.json"
    (tmp_path / "sub").mkdir()
    assert refused(
        in_process, "compare", workload, workload, *SHORT, "--json", out, "--baseline-json", other
    ).startswith(f"--baseline-json {other} is the same file as --json {out}:")
    assert refused(
        in_process,
        "measure",
        workload,
        "--metrics",
        "latency,profiler",
        "--json",
        out,
        "--profiler-trace",
        out,
    ).startswith(f"--profiler-trace {out} is the same file as --json {out}:")
    assert refused(
        in_process, "summary", f"{bench}:make", "--input-shape", "4", "--json", out, "--html", out
    ).startswith(f"--html {out} is the same file as --json {out}:")
    assert refused(in_process, "demo", "--json", out, "--html", out).startswith(
        f"--html {out} is the same file as --json {out}:"
    )
    # Two outputs on standard output would interleave.
    assert refused(
        in_process, "compare", workload, workload, *SHORT, "--json", "-", "--check-json", "-"
    ) == (
        "--json - and --check-json - would both write to standard output: give one of them a file"
    )
    assert not out.exists()
    assert not (tmp_path / "imported").exists()


def test_an_output_that_is_an_input_is_refused(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    before = bench.read_text(encoding="utf-8")
    workload = f"{bench}:workload"
    assert refused(in_process, "measure", workload, *SHORT, "--json", bench) == (
        f"--json {bench} is the same file as the workload {workload}: it would be "
        f"overwritten; {SAME}"
    )
    # A hard link to the input is the same file (one inode).
    hard = tmp_path / "report.json"
    os.link(bench, hard)
    assert refused(in_process, "measure", workload, *SHORT, "--html", hard).startswith(
        f"--html {hard} is the same file as the workload {workload}:"
    )
    candidate = tmp_path / "candidate.py"
    candidate.write_text(bench.read_text(encoding="utf-8"), encoding="utf-8")
    assert refused(
        in_process,
        "compare",
        workload,
        f"{candidate}:workload",
        *SHORT,
        "--candidate-json",
        candidate,
    ).startswith(f"--candidate-json {candidate} is the same file as the candidate {candidate}:")
    assert refused(
        in_process, "summary", f"{bench}:make", "--input-shape", "4", "--json", bench
    ).startswith(f"--json {bench} is the same file as the model {bench}:make:")
    assert bench.read_text(encoding="utf-8") == before
    assert not (tmp_path / "imported").exists()


def test_an_output_to_the_file_standard_output_is_beside_json_dash_is_refused(
    bench: Path, tmp_path: Path
) -> None:
    # --json - writes standard output: /dev/stdout, or the file it is redirected to, is the
    # same file, and would have the page in the middle of the JSON (exit 0 before).
    out = tmp_path / "out.txt"
    for argv in (
        ("--json", "-", "--html", "/dev/stdout"),
        ("--html", "/dev/stdout", "--json", "-"),
        ("--json", "-", "--html", str(out)),
    ):
        with out.open("wb") as stdout:
            result = cli_errors_torchscan(
                "measure", f"{bench}:workload", *SHORT, *argv, stdout=stdout
            )
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.splitlines()
        assert "is the same file as" in line and SAME in line
        assert out.read_bytes() == b""
        assert not (tmp_path / "imported").exists()


def test_the_null_device_may_take_several_outputs(
    bench: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    code, stderr = in_process(
        "measure", f"{bench}:workload", *SHORT, "--json", os.devnull, "--html", os.devnull
    )
    assert (code, stderr) == (0, "")


# --- --json - ------------------------------------------------------------------------------------

PRINTING = """
import ctypes
import os
import sys

import torch

print("printed at import")
os.write(1, b"written to fd 1 at import\\n")
ctypes.CDLL(None).printf(b"printf at import\\n")
model = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)


def workload():
    print("printed by the workload")
    sys.stdout.write("written by the workload\\n")
    os.write(1, b"written to fd 1 by the workload\\n")
    return model(x)


class Printing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        print("printed by the factory")
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        print("printed by forward")
        return self.linear(x)
"""


def validated(stdout: str) -> str:
    """What ``torchscan-report validate -`` says of ``stdout``, which must pass."""
    result = subprocess.run(
        [report_cli(), "validate", "-"],
        input=stdout,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.mark.parametrize("command", ["measure", "compare", "summary"])
def test_json_on_stdout_stays_json_while_the_users_code_prints(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "printing.py"
    path.write_text(PRINTING, encoding="utf-8")
    argv: tuple[str, ...] = {
        "measure": ("measure", f"{path}:workload", *SHORT, "--profiler-calls", "2"),
        "compare": ("compare", f"{path}:workload", f"{path}:workload", *SHORT),
        "summary": ("summary", f"{path}:Printing", "--input-shape", "4"),
    }[command]
    result = torchscan(*argv, "--json", "-")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert validate_report(report) in ("benchmark", "benchmark_comparison", "analysis")
    assert "1 checked: 1 valid" in validated(result.stdout)
    # The user's prints went to standard error, C's and the descriptor's included.
    for line in ("printed at import", "written to fd 1 at import", "printf at import"):
        assert line in result.stderr
    if command == "summary":
        assert "printed by the factory" in result.stderr
        assert "printed by forward" in result.stderr
    else:
        for line in (
            "printed by the workload",
            "written by the workload",
            "written to fd 1 by the workload",
        ):
            assert line in result.stderr


def test_standard_output_is_back_after_the_users_code(
    tmp_path: Path, in_process: Callable[..., tuple[int, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "printing.py"
    path.write_text(PRINTING, encoding="utf-8")
    code, _ = in_process("measure", f"{path}:workload", *SHORT, "--json", "-")
    assert code == 0
    assert sys.stdout is not sys.stderr
    print("after")  # the fixture read what the command printed: this is new
    assert capsys.readouterr().out == "after\n"


# --- {rank} --------------------------------------------------------------------------------------


def test_rank_is_replaced_before_the_paths_are_checked(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    (tmp_path / "out0").mkdir()
    json_path = f"{tmp_path}/out{{rank}}/r.json"
    trace = f"{tmp_path}/out{{rank}}/trace.json"
    code, stderr = in_process(
        "measure",
        f"{bench}:workload",
        "--min-time",
        "0.01",
        "--max-time",
        "5",
        "--metrics",
        "latency,profiler",
        "--profiler-calls",
        "2",
        "--json",
        json_path,
        "--profiler-trace",
        trace,
    )
    assert (code, stderr) == (0, "")
    report = json.loads((tmp_path / "out0" / "r.json").read_text(encoding="utf-8"))
    assert report["profiler"]["trace"]["path"] == f"{tmp_path}/out0/trace.json"
    assert (tmp_path / "out0" / "trace.json").stat().st_size > 0
    code, stderr = in_process(
        "summary", f"{bench}:make", "--input-shape", "4", "--json", f"{tmp_path}/s{{rank}}.json"
    )
    assert code == 0, stderr
    assert (tmp_path / "s0.json").exists()


@pytest.fixture
def rank_1_of_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The environment torchrun gives rank 1 of 2 (no process group is made by the refusals).

    Relative outputs are in ``tmp_path``: nothing is written anywhere else.
    """
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("rank_1_of_2")
def test_paths_the_ranks_would_share_are_refused_before_the_import(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    workload = f"{bench}:workload"
    profiled = ("--metrics", "latency,profiler")
    assert refused(
        in_process,
        "measure",
        workload,
        *profiled,
        "--json",
        "r{rank}.json",
        "--profiler-trace",
        "trace.json",
    ) == (
        "--profiler-trace trace.json in a job of 2 ranks: every rank writes its own, so put "
        "{rank} in the path (--profiler-trace trace{rank}.json); --gather gathers the reports, "
        "not the traces"
    )
    assert refused(
        in_process,
        "measure",
        workload,
        *profiled,
        "--gather",
        "--json",
        "r.json",
        "--profiler-trace",
        "trace.json",
    ).startswith("--profiler-trace trace.json in a job of 2 ranks:")
    # {rank} that still names one file for two ranks.
    shared = f"{tmp_path}/out{{rank}}/../r.json"
    assert refused(in_process, "measure", workload, "--json", shared) == (
        f"--json {shared} of rank 1 ({tmp_path}/out1/../r.json) is the same file as --json "
        f"{shared} of rank 0 ({tmp_path}/out0/../r.json): every rank needs files of its own"
    )
    assert refused(
        in_process, "summary", f"{bench}:make", "--input-shape", "4", "--json", "s.json"
    ) == (
        "--json s.json in a job of 2 ranks: every rank writes its own, so put {rank} in the "
        "path (--json rank{rank}.json)"
    )
    assert not (tmp_path / "imported").exists()


@pytest.mark.usefixtures("rank_1_of_2")
def test_compare_under_torchrun_is_refused(
    bench: Path, tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    workload = f"{bench}:workload"
    out = tmp_path / "c.json"
    assert refused(in_process, "compare", workload, workload, "--json", out) == (
        "python -m torchscan compare cannot run per rank: this is rank 1 of a job of 2 ranks "
        "(torchrun, or WORLD_SIZE set), where every rank would run both workloads and write "
        "the same outputs; run it in one process, without torchrun, or measure each workload "
        "under torchrun (python -m torchscan measure ... --gather --json base.json) and compare "
        "the reports with torchscan-report compare"
    )
    assert not (tmp_path / "imported").exists()
    assert not out.exists()


# --- under torchrun ------------------------------------------------------------------------------


def test_each_rank_writes_its_own_trace_and_report_under_torchrun(tmp_path: Path) -> None:
    for rank in (0, 1):
        (tmp_path / f"out{rank}").mkdir()
    code, output = _torchrun_measure(
        tmp_path,
        "--metrics",
        "latency,profiler",
        "--profiler-calls",
        "2",
        "--json",
        "out{rank}/r.json",
        "--profiler-trace",
        "trace{rank}.json",
    )
    assert code == 0, output[-6000:]
    for rank in (0, 1):
        report = json.loads((tmp_path / f"out{rank}" / "r.json").read_text(encoding="utf-8"))
        assert report["context"]["distributed"]["rank"] == rank
        trace = report["profiler"]["trace"]
        assert trace["path"] == f"trace{rank}.json"
        assert trace["bytes"] == (tmp_path / f"trace{rank}.json").stat().st_size > 0
    assert not (tmp_path / "trace{rank}.json").exists()


def test_gathered_reports_name_each_ranks_own_trace_under_torchrun(tmp_path: Path) -> None:
    code, output = _torchrun_measure(
        tmp_path,
        "--metrics",
        "latency,profiler",
        "--profiler-calls",
        "2",
        "--gather",
        "--json",
        "step.json",
        "--profiler-trace",
        "trace{rank}.json",
    )
    assert code == 0, output[-6000:]
    step = json.loads((tmp_path / "step.json").read_text(encoding="utf-8"))
    assert validate_report(step) == "distributed_benchmark"
    paths = [report["profiler"]["trace"]["path"] for report in step["rank_reports"]]
    assert paths == ["trace0.json", "trace1.json"]
    for rank in (0, 1):
        assert (tmp_path / f"trace{rank}.json").stat().st_size > 0
