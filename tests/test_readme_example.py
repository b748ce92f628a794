"""The README's example output is what the example prints today.

The block under "Start with your workload" is the summary of one real run of the example above
it (the bundled report, made by ``scripts/example_report.py``). Here the example runs again, as
written but with a short timing budget, and the README's lines are checked against what it
prints: every line's label, order and fixed numbers exactly, and the numbers that vary from run
to run and machine to machine (times, rates, machine noise) by pattern. Nothing is missing and
nothing is added, except the diagnostics, which a busy machine adds at the end (documented).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import torchscan

from .conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BUNDLED = ROOT / "python" / "torchscan" / "data" / "example_workload.json"

NUMBER = r"\d{1,3}(,\d{3})*(\.\d+)?"
UNAVAILABLE = r"unavailable \(.+\)"
TIME = rf"{NUMBER} ms"
#: The lines whose values vary between runs and machines, by label, and what their values are.
VARYING = {
    "First call": TIME,
    "Latency (block median)": TIME,
    "Latency IQR": TIME,
    "Throughput": rf"{NUMBER} samples/s",
    "Other CPU use": rf"[01]\.\d{{3}}|{UNAVAILABLE}",
    "CPU steal": rf"[01]\.\d{{3}}|{UNAVAILABLE}",
    "Involuntary context switches": rf"{NUMBER}|{UNAVAILABLE}",
    "CPU frequency": rf"{NUMBER} MHz|{UNAVAILABLE}",
}
LINE = re.compile(r"^( *)([^:]+): (.*)$")


def readme_example() -> str:
    """The first Python block of the README's "Start with your workload"."""
    section = README.split("## Start with your workload", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def readme_lines() -> list[str]:
    """The summary the README shows under the example."""
    shown = README.split("One observed run (", 1)[1]
    return shown.split("```text\n", 1)[1].split("```", 1)[0].splitlines()


def without_diagnostics(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines before the diagnostics block, and that block (which always ends a summary)."""
    if "  Diagnostics:" not in lines:
        return lines, []
    at = lines.index("  Diagnostics:")
    return lines[:at], lines[at:]


def mismatches(shown: list[str], printed: list[str]) -> list[str]:
    """What differs between the README's lines and a fresh run's, line by line."""
    found = []
    for number, (expected, actual) in enumerate(zip(shown, printed, strict=False), start=1):
        match = LINE.match(expected)
        pattern = VARYING.get(match.group(2)) if match else None
        if match is None or pattern is None:
            if actual != expected:
                found.append(f"line {number}: README {expected!r}, printed {actual!r}")
            continue
        indent, label, value = match.groups()
        if not re.fullmatch(pattern, value):
            found.append(f"line {number}: the README's {label} {value!r} is not {pattern}")
        printed_match = LINE.match(actual)
        if printed_match is None or printed_match.group(1, 2) != (indent, label):
            found.append(f"line {number}: README {expected!r}, printed {actual!r}")
        elif not re.fullmatch(pattern, printed_match.group(3)):
            found.append(f"line {number}: printed {actual!r}, whose value is not {pattern}")
    if len(shown) != len(printed):
        found.append(
            f"the README shows {len(shown)} lines, a run prints {len(printed)}: "
            f"{shown[len(printed) :] or printed[len(shown) :]}"
        )
    return found


def test_the_comparison_finds_a_missing_a_moved_and_a_changed_line() -> None:
    shown = readme_lines()
    assert mismatches(shown, shown) == []
    assert mismatches(shown, shown[:-1]) == [
        f"the README shows {len(shown)} lines, a run prints {len(shown) - 1}: {shown[-1:]}"
    ]
    moved = [shown[0], shown[2], shown[1], *shown[3:]]
    assert mismatches(shown, moved) == [
        f"line 2: README {shown[1]!r}, printed {shown[2]!r}",
        f"line 3: README {shown[2]!r}, printed {shown[1]!r}",
    ]
    flops = shown.index("  Operator FLOPs: 1,048,576.000 FLOPs")
    changed = [*shown[:flops], "  Operator FLOPs: 1,048,577.000 FLOPs", *shown[flops + 1 :]]
    assert mismatches(shown, changed) == [
        f"line {flops + 1}: README '  Operator FLOPs: 1,048,576.000 FLOPs', printed "
        "'  Operator FLOPs: 1,048,577.000 FLOPs'"
    ]
    faster = [line.replace("samples/s", "calls/s") for line in shown]
    assert len(mismatches(shown, faster)) == 1


def test_the_readme_shows_the_lines_a_fresh_run_of_its_example_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    threads = torch.get_num_threads()
    # The example as written, with a short timing budget; it prints its summary and writes
    # workload.json in the folder it runs in.
    monkeypatch.setattr(
        torchscan,
        "measure_workload",
        functools.partial(torchscan.measure_workload, min_time_s=0.2, max_time_s=2.0),
    )
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(readme_example(), "README.md#python-0", "exec"), {"__name__": "__main__"})
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    report: dict[str, Any] = json.loads((tmp_path / "workload.json").read_text("utf-8"))
    assert printed == torchscan.format_summary(report)
    shown, _ = without_diagnostics(readme_lines())
    lines, diagnostics = without_diagnostics(printed.splitlines())
    assert mismatches(shown, lines) == [], printed
    assert all(line.startswith("    ") for line in diagnostics[1:]), printed
    # The README's fixed numbers, which do not depend on the machine.
    for line in [
        "Workload on cpu (1 PyTorch threads)",
        "  Operator FLOPs: 1,048,576.000 FLOPs",
        "  PyTorch peak memory: 0.094 MiB",
        "    Scope: PyTorch tracked CPU tensors",
        "  Process peak RSS: unavailable (not requested)",
        "  Profiler: not requested (separate instrumented pass)",
        "  Machine noise during timing:",
    ]:
        assert line in shown


def test_the_readme_names_where_its_run_was_made() -> None:
    context = json.loads(BUNDLED.read_text(encoding="utf-8"))["context"]
    shown = " ".join(README.split("One observed run (", 1)[1].split("):\n", 1)[0].split())
    assert shown.startswith(
        f"{context['cpu_model']} CPU, {context['platform']}, Python {context['python_version']}, "
        f"PyTorch {context['torch_version']}, FP32, one PyTorch thread;"
    ), shown
    assert context["torch_threads"] == 1 and context["dtypes"] == ["torch.float32"]
