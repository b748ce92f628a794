"""The standalone `torchscan-report` binary and the console script of `pip install torchscan`.

Both run the same Rust code (`torchscan_report::main_with_args`): one as a binary of its own
(`cargo install`, or the `torchscan-report` wheel), the other through the extension module. Every
command on every fixture must give the same standard output, standard error and exit code, byte
for byte. The binary is the one named by ``TORCHSCAN_REPORT_BINARY`` (``make dist-check`` points
it at the one the wheel installed), else the one cargo builds from this tree (a Rust toolchain
builds the package anyway).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from .conftest import FIXTURES, invalid_fixtures, report_cli

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted((FIXTURES / "reports").glob("*.json"))
ANALYSES = [path for path in REPORTS if path.name.startswith("analysis_")]
DISTRIBUTED = FIXTURES / "distributed"
BENCHMARKS = [
    path
    for path in REPORTS
    if path.name.startswith("benchmark_") and not path.name.startswith("benchmark_comparison")
]


@pytest.fixture(scope="module")
def binary() -> str:
    """The binary named by ``TORCHSCAN_REPORT_BINARY``, else the one cargo builds from this tree."""
    named = os.environ.get("TORCHSCAN_REPORT_BINARY")
    if named:
        return named
    # Never a stale one: cargo rebuilds it when the sources changed (a no-op otherwise).
    try:
        subprocess.run(
            ["cargo", "build", "--locked", "--quiet", "-p", "torchscan-report"],
            cwd=ROOT,
            check=True,
            timeout=1200,
        )
    except OSError as error:  # no cargo, or one this user may not run (another user's rustup)
        reason = (
            f"cargo cannot be run here ({error.strerror}): set TORCHSCAN_REPORT_BINARY to a "
            "torchscan-report binary built from this tree"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return str(ROOT / "target" / "debug" / "torchscan-report")


def _commands() -> Iterator[tuple[str, list[str]]]:
    yield "help", ["--help"]
    yield "version", ["--version"]
    yield "schema", ["schema"]
    yield "usage-error", ["summary"]
    yield "unknown-command", ["frobnicate"]
    yield "missing-file", ["summary", str(FIXTURES / "no-such-report.json")]
    for command in ("validate", "summary", "render"):
        yield f"{command}-help", [command, "--help"]
    for path in REPORTS:
        yield f"validate-{path.stem}", ["validate", str(path)]
        yield f"summary-{path.stem}", ["summary", str(path)]
        yield f"render-{path.stem}", ["render", str(path)]
    for path in invalid_fixtures():
        yield f"validate-invalid-{path.stem}", ["validate", str(path)]
    yield "validate-all", ["validate", *map(str, REPORTS)]
    for before, after in pairwise(ANALYSES):
        for form in ("text", "json", "html"):
            yield (
                f"diff-{before.stem}-{after.stem}-{form}",
                [
                    "diff",
                    str(before),
                    str(after),
                    "--format",
                    form,
                ],
            )
    for before, after in pairwise(BENCHMARKS):
        for form in ("text", "json", "html"):
            yield (
                f"compare-{before.stem}-{after.stem}-{form}",
                [
                    "compare",
                    str(before),
                    str(after),
                    "--format",
                    form,
                ],
            )
    yield (
        "compare-fail-on",
        [
            "compare",
            str(FIXTURES / "reports" / "benchmark_readme_cpu.json"),
            str(FIXTURES / "reports" / "benchmark_readme_cpu_1s.json"),
            "--fail-on",
            "slower,faster,inconclusive,no_detectable_change",
        ],
    )
    yield "compare-analysis-refused", ["compare", str(ANALYSES[0]), str(ANALYSES[1])]
    ranks = [str(DISTRIBUTED / "rank0.json"), str(DISTRIBUTED / "rank1.json")]
    merged = str(DISTRIBUTED / "merged.json")
    for form in ("text", "json", "html"):
        yield f"merge-{form}", ["merge", *ranks, "--format", form]
    yield "merge-refused", ["merge", ranks[0]]
    yield "merge-help", ["merge", "--help"]
    for command in ("validate", "summary", "render"):
        yield f"{command}-merged", [command, merged]
    yield "compare-merged", ["compare", merged, merged]
    yield "compare-merged-refused", ["compare", ranks[0], merged]


COMMANDS = list(_commands())


def _run(program: str, arguments: list[str]) -> tuple[int, bytes, bytes]:
    done = subprocess.run(
        [program, *arguments],
        capture_output=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return done.returncode, done.stdout, done.stderr


def test_every_command_is_exercised() -> None:
    # The comparison below covers each command on real inputs, failing ones included.
    names = {arguments[0] for _, arguments in COMMANDS}
    assert {"validate", "summary", "render", "diff", "compare", "merge", "schema"} <= names
    assert len(REPORTS) >= 16
    assert len(ANALYSES) >= 2
    assert len(BENCHMARKS) >= 2


@pytest.mark.parametrize(("name", "arguments"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_the_binary_and_the_console_script_agree_byte_for_byte(
    binary: str, name: str, arguments: list[str]
) -> None:
    del name
    expected = _run(report_cli(), arguments)
    assert _run(binary, arguments) == expected


def test_the_binary_writes_the_same_file(binary: str, tmp_path: Path) -> None:
    report = FIXTURES / "reports" / "benchmark_readme_cpu.json"
    outputs = []
    for index, program in enumerate((report_cli(), binary)):
        target = tmp_path / f"page-{index}.html"
        code, out, err = _run(program, ["render", str(report), "-o", str(target)])
        assert (code, out, err) == (0, b"", b"")
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith(b"<!DOCTYPE html>")
