"""`torchscan-report compare` gives exactly what `torchscan.compare_benchmarks` gives."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from torchscan import _core, compare_benchmarks, validate_report

from .conftest import FIXTURES, ROOT

REPORTS = FIXTURES / "reports"
EXAMPLE = REPORTS / "benchmark_readme_m3_pro.json"
README_CPU = REPORTS / "benchmark_readme_cpu.json"
CUDA = REPORTS / "benchmark_cuda_full.json"
CHECKS = {
    None: None,
    "passed": REPORTS / "output_check_passed.json",
    "failed": REPORTS / "output_check_failed.json",
}
# Every pair of fixture benchmark reports that count the same work per call.
PAIRS = [
    (README_CPU, EXAMPLE),
    (EXAMPLE, README_CPU),
    (README_CPU, README_CPU),
    (CUDA, CUDA),
]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"confidence_level": 0.9, "bootstrap_resamples": 500, "seed": 7, "min_effect": 0.05},
]


def run(cli: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cli, *args], capture_output=True, text=True, check=False, cwd=ROOT, timeout=60
    )


def option_flags(options: dict[str, Any]) -> list[str]:
    flags = []
    for name, value in options.items():
        flags += [f"--{name.replace('_', '-')}", str(value)]
    return flags


def test_the_fixtures_pair_up() -> None:
    for baseline, candidate in PAIRS:
        base = json.loads(baseline.read_text(encoding="utf-8"))
        cand = json.loads(candidate.read_text(encoding="utf-8"))
        assert base["kind"] == cand["kind"] == "benchmark"
        assert base["workload"]["work_units"] == cand["workload"]["work_units"]


@pytest.mark.parametrize("options", OPTIONS, ids=["defaults", "options"])
@pytest.mark.parametrize("check", list(CHECKS), ids=[str(name) for name in CHECKS])
@pytest.mark.parametrize(("baseline", "candidate"), PAIRS, ids=lambda path: path.stem)
def test_compare_json_equals_compare_benchmarks(
    cli: str, baseline: Path, candidate: Path, check: str | None, options: dict[str, Any]
) -> None:
    check_path = CHECKS[check]
    args = ["compare", str(baseline), str(candidate), "--format", "json", *option_flags(options)]
    if check_path is not None:
        args += ["--check", str(check_path)]
    result = run(cli, *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""

    from_python = compare_benchmarks(baseline, candidate, check=check_path, **options)
    assert json.loads(result.stdout) == from_python
    assert validate_report(from_python) == "benchmark_comparison"
    settings: dict[str, Any] = {"confidence_level": 0.95, "bootstrap_resamples": 2000, "seed": 0}
    settings |= {"min_effect": 0.02, **options}
    assert from_python["settings"] == settings

    # Byte for byte: the core's own text for the same inputs and options.
    core_text = _core.compare_benchmarks_json(
        baseline.read_text(encoding="utf-8"),
        candidate.read_text(encoding="utf-8"),
        check_path.read_text(encoding="utf-8") if check_path is not None else None,
        settings["confidence_level"],
        settings["bootstrap_resamples"],
        settings["seed"],
        settings["min_effect"],
    )
    assert result.stdout == core_text


def test_compare_gate_and_refusal_exit_codes(cli: str) -> None:
    failed = CHECKS["failed"]
    assert failed is not None
    gated = run(cli, "compare", str(README_CPU), str(EXAMPLE), "--check", str(failed))
    assert gated.returncode == 0
    assert gated.stdout.startswith("Comparison: withheld\n")
    gate = ["--fail-on", "withheld"]
    gated = run(cli, "compare", str(README_CPU), str(EXAMPLE), "--check", str(failed), *gate)
    assert gated.returncode == 1
    assert gated.stdout.startswith("Comparison: withheld\n")
    assert gated.stderr == "torchscan-report: the verdict is `withheld`, which --fail-on rejects\n"
    refused = run(cli, "compare", str(README_CPU), str(CUDA))
    assert refused.returncode == 1
    assert "the reports count different work" in refused.stderr
    assert run(cli, "compare", str(README_CPU), str(EXAMPLE), "--seed", "x").returncode == 2
