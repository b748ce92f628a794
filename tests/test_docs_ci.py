"""The CI recipe of docs/ci.md: its workflow is well formed and its steps do what the page says.

Every ``run`` step but the install runs here, in the order of the workflow, with the
``torchscan-report`` command of this environment, on reports measured for the test: a candidate
much slower than its baseline fails the gate and still leaves the comparison's page, and a
candidate equal to its baseline passes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from torchscan import measure_workload

from .conftest import FIXTURES, ROOT

yaml = pytest.importorskip("yaml")

PAGE = ROOT / "docs" / "ci.md"


def _workflow() -> dict[str, Any]:
    blocks = re.findall(r"^```yaml\n(.*?)^```", PAGE.read_text("utf-8"), re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1
    loaded = yaml.safe_load(blocks[0])
    assert isinstance(loaded, dict)
    return loaded


def _steps() -> list[dict[str, Any]]:
    jobs = _workflow()["jobs"]
    assert list(jobs) == ["reports"]
    steps = jobs["reports"]["steps"]
    assert isinstance(steps, list)
    return steps


def test_the_workflow_installs_only_the_report_command() -> None:
    steps = _steps()
    installs = [step for step in steps if "pip install" in step.get("run", "")]
    assert len(installs) == 1
    command = installs[0]["run"]
    assert re.findall(r'pip install "([\w-]+) @ ', command) == ["torchscan-report"]
    match = re.search(r"#subdirectory=(\S+?)\"", command)
    assert match is not None
    assert (ROOT / match.group(1) / "pyproject.toml").exists()
    upload = [step for step in steps if step.get("uses", "").startswith("actions/upload-artifact")]
    assert len(upload) == 1 and upload[0]["if"] == "always()"


def _measure(workload: Any) -> dict[str, Any]:
    torch.set_num_threads(1)
    return dict(
        measure_workload(
            workload, metrics=["latency"], print_summary=False, work_units=64, work_unit="rows"
        )
    )


@pytest.fixture(scope="module")
def measured() -> tuple[dict[str, Any], dict[str, Any]]:
    threads = torch.get_num_threads()
    x = torch.randn(64, 128)
    weight = torch.randn(128, 128)
    try:
        fast = _measure(lambda: x @ weight)
        slow = _measure(lambda: torch.stack([row @ weight for row in x]))
    finally:
        torch.set_num_threads(threads)
    return fast, slow


def _run_steps(folder: Path) -> list[tuple[str, int, str]]:
    """Run every ``run`` step but the install, as the workflow would; name, status, output."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    results = []
    for step in _steps():
        if "run" not in step or "pip install" in step["run"]:
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", step["run"]],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        results.append((step["name"], done.returncode, done.stdout + done.stderr))
        if done.returncode != 0:
            break  # as a job stops at a failed step (the upload runs anyway: `if: always()`)
    return results


def _reports(folder: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> None:
    reports = folder / "reports"
    reports.mkdir()
    (reports / "baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
    (reports / "candidate.json").write_text(json.dumps(candidate), encoding="utf-8")
    shutil.copy(FIXTURES / "reports" / "analysis_small_cnn.json", reports / "analysis.json")


def test_a_slower_candidate_fails_the_gate_and_keeps_the_page(
    measured: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    fast, slow = measured
    _reports(tmp_path, fast, slow)
    results = _run_steps(tmp_path)
    names = [name for name, _, _ in results]
    assert names == ["Validate every report", "Render every report", "Gate a regression"]
    assert [status for _, status, _ in results] == [0, 0, 1]
    assert "3 checked: 3 valid, 0 invalid" in results[0][2]
    assert "the verdict is `slower`, which --fail-on rejects" in results[2][2]
    pages = sorted(path.name for path in (tmp_path / "pages").iterdir())
    assert pages == ["analysis.html", "baseline.html", "candidate.html", "comparison.html"]
    page = (tmp_path / "pages" / "comparison.html").read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>") and "slower" in page


def test_an_unchanged_candidate_passes_the_gate(
    measured: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    fast, _ = measured
    _reports(tmp_path, fast, fast)
    results = _run_steps(tmp_path)
    assert [(name, status) for name, status, _ in results] == [
        ("Validate every report", 0),
        ("Render every report", 0),
        ("Gate a regression", 0),
    ]
    assert (tmp_path / "pages" / "comparison.html").exists()


def test_an_invalid_report_stops_the_job_at_validation(
    measured: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    fast, _ = measured
    broken = {**fast, "kind": "benchmarks"}
    _reports(tmp_path, fast, broken)
    results = _run_steps(tmp_path)
    assert [(name, status) for name, status, _ in results] == [("Validate every report", 1)]
    assert "reports/candidate.json: $.kind" in results[0][2]
