"""`python -m torchscan demo` and the `torchscan-report` console script."""

from __future__ import annotations

import subprocess
import sys

from torchscan.cli import example_report_text

from .conftest import ROOT

README_SUMMARY = (ROOT / "tests/fixtures/example_workload.summary.txt").read_text(encoding="utf-8")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, check=False, cwd=ROOT
    )


def test_demo_validates_the_bundled_report_and_says_what_it_ran() -> None:
    result = run(sys.executable, "-m", "torchscan", "demo")
    assert result.returncode == 0, result.stderr
    assert "validated the bundled example benchmark report" in result.stdout
    assert "does not measure workloads yet" in result.stdout
    assert result.stdout.endswith(README_SUMMARY)


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
    assert "invalid choice" in result.stderr


def test_readme_quotes_the_summary() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```text\n{README_SUMMARY}```" in readme
