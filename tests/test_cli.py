"""`python -m torchscan demo` and the `torchscan-report` console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from torchscan import validate_report
from torchscan.cli import example_report_text

from .conftest import ROOT

README_SUMMARY = (ROOT / "tests/fixtures/example_workload.summary.txt").read_text(encoding="utf-8")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, check=False, cwd=ROOT
    )


def test_demo_measures_the_readme_workload_and_says_what_it_ran(tmp_path: Path) -> None:
    target = tmp_path / "workload.json"
    page = tmp_path / "workload.html"
    result = run(
        sys.executable, "-m", "torchscan", "demo", "--json", str(target), "--html", str(page)
    )
    assert result.returncode == 0, result.stderr
    assert "measuring the README workload" in result.stdout
    lines = result.stdout.splitlines()
    assert "Workload on cpu (1 PyTorch threads)" in lines
    assert "  Operator FLOPs: 1,048,576.000 FLOPs" in lines
    assert "    Scope: PyTorch tracked CPU tensors" in lines
    assert "  Process peak RSS: unavailable (not requested)" in lines
    report = json.loads(target.read_text(encoding="utf-8"))
    assert validate_report(report) == "benchmark"
    assert report["metrics"]["tensor_memory_peak"]["value"] == 98_816
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or html.lower().startswith("<!doctype html>")
    assert "PyTorch tracked CPU tensors" in html


def test_measure_command_writes_a_report(tmp_path: Path) -> None:
    script = tmp_path / "bench.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Linear(8, 8)\n"
        "x = torch.randn(4, 8)\n"
        "def workload():\n"
        "    return model(x)\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    result = run(
        sys.executable,
        "-m",
        "torchscan",
        "measure",
        f"{script}:workload",
        "--work-units",
        "4",
        "--work-unit",
        "rows",
        "--metrics",
        "latency,operator_flops",
        "--min-time",
        "0.05",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["workload"]["work_unit"] == "rows"
    assert report["metrics"]["operator_flops"]["value"] == 2 * 4 * 8 * 8
    assert "Throughput:" in result.stdout


def test_summary_of_the_example_is_the_readme_text(cli: str) -> None:
    result = run(cli, "summary", "-", stdin=example_report_text())
    assert result.returncode == 0, result.stderr
    assert result.stdout == README_SUMMARY


def test_console_script_prints_the_schema_file(cli: str) -> None:
    result = run(cli, "schema")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "docs/schema/report.v1.schema.json").read_text(encoding="utf-8")


def test_console_script_exit_codes(cli: str) -> None:
    assert run(cli).returncode == 2
    assert run(cli, "validate", "does-not-exist.json").returncode == 2
    assert run(cli, "validate", "-", stdin="{}").returncode == 1
    assert run(cli, "--version").stdout.startswith("torchscan-report ")


def test_module_usage_error() -> None:
    result = run(sys.executable, "-m", "torchscan", "frobnicate")
    assert result.returncode == 2
    assert result.stderr == (
        "python -m torchscan: error: argument COMMAND: invalid choice: 'frobnicate' (choose from "
        "'demo', 'measure', 'compare', 'summary') (see --help)\n"
    )


def test_readme_quotes_the_summary() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```text\n{README_SUMMARY}```" in readme
