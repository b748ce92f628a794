"""compare_workloads and `python -m torchscan compare`: check, interleaved timing, verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

import torchscan
from torchscan import Experiment, InvalidArgumentError, compare_workloads
from torchscan.cli import main
from torchscan.reports import MetricDelta

from .conftest import ROOT

torch.set_num_threads(1)
FAST: dict[str, Any] = {
    "min_time_s": 0.2,
    "max_time_s": 2.0,
    "min_blocks": 6,
    "warmup_time_s": 0.01,
    "print_summary": False,
}


def matmuls(repeats: int) -> Any:
    """A workload of ``repeats`` identical 96x96 matrix products; returns the last one."""
    torch.manual_seed(0)
    a = torch.randn(96, 96)
    b = torch.randn(96, 96)

    def workload() -> torch.Tensor:
        out = a
        for _ in range(repeats):
            out = a @ b
        return out

    return workload


def latency(experiment: Experiment) -> MetricDelta:
    return next(d for d in experiment.comparison["deltas"] if d["metric"] == "latency")


def test_a_candidate_doing_three_times_the_work_is_slower() -> None:
    experiment = compare_workloads(
        matmuls(2), matmuls(6), rtol=0, atol=0, work_units=4, work_unit="rows", **FAST
    )
    assert experiment.check["passed"]
    assert experiment.verdict == "slower"
    assert experiment.comparison["verdict"] == "slower"
    low = latency(experiment)["ratio_ci_low"]
    assert low is not None and low > 1.5
    timings = [experiment.baseline["timing"], experiment.candidate["timing"]]
    assert timings[0] is not None and timings[1] is not None
    # One block size for both, sized for the faster side: the slower side's blocks are longer.
    assert timings[0]["calls_per_block"] == timings[1]["calls_per_block"]
    assert sum(timings[1]["block_durations_s"]) > 1.5 * sum(timings[0]["block_durations_s"])
    flops = next(d for d in experiment.comparison["deltas"] if d["metric"] == "operator_flops")
    assert flops["ratio"] == 3.0
    for report in (experiment.baseline, experiment.candidate):
        assert torchscan.validate_report(report) == "benchmark"
        assert report["workload"]["work_unit"] == "rows"
        assert report["workload"]["work_units"] == 4.0
        assert report["settings"]["passes"] == ["latency", "operator_flops", "tensor_memory"]
    assert torchscan.validate_report(experiment.check) == "output_check"
    assert torchscan.validate_report(experiment.comparison) == "benchmark_comparison"
    assert experiment.baseline["context"] == experiment.candidate["context"]
    assert experiment.baseline["context"] is not experiment.candidate["context"]
    assert experiment.comparison["check"]["status"] == "passed"
    notes = [d for d in experiment.comparison["diagnostics"] if d["code"] == "note"]
    assert len(notes) == 1 and "paired rounds" in notes[0]["message"]


def test_the_same_workload_on_both_sides_is_not_faster_or_slower() -> None:
    workload = matmuls(3)
    experiment = compare_workloads(
        workload, workload, rtol=0, atol=0, metrics=["latency"], min_effect=0.25, **FAST
    )
    assert experiment.check["passed"]
    assert experiment.verdict in ("no_detectable_change", "inconclusive")
    low, high = latency(experiment)["ratio_ci_low"], latency(experiment)["ratio_ci_high"]
    assert low is not None and high is not None
    assert low <= 1.25 and high >= 0.75
    baseline_timing = experiment.baseline["timing"]
    candidate_timing = experiment.candidate["timing"]
    assert baseline_timing is not None and candidate_timing is not None
    rounds = len(baseline_timing["block_durations_s"])
    assert rounds == len(candidate_timing["block_durations_s"])
    assert rounds >= 6 and rounds % 2 == 0
    assert experiment.baseline["metrics"]["operator_flops"]["reason"] == "not requested"


def test_different_outputs_withhold_every_delta() -> None:
    torch.manual_seed(0)
    x = torch.randn(16, 16)

    def baseline() -> torch.Tensor:
        return x * 2

    def candidate() -> tuple[torch.Tensor]:
        return (x * 2.5,)

    def close_but_wrong() -> torch.Tensor:
        return x * 2.001

    experiment = compare_workloads(baseline, close_but_wrong, rtol=1e-6, atol=0, **FAST)
    assert not experiment.check["passed"]
    assert experiment.verdict == "withheld"
    assert {d["status"] for d in experiment.comparison["deltas"]} == {"withheld"}
    assert all(d["ratio"] is None for d in experiment.comparison["deltas"])
    codes = [d["code"] for d in experiment.comparison["diagnostics"]]
    assert "output_check_failed" in codes
    # The measurements are still there, for a reader who wants to know why.
    assert experiment.baseline["metrics"]["latency"]["status"] == "complete"
    assert torchscan.validate_report(experiment.comparison) == "benchmark_comparison"

    structure = compare_workloads(baseline, candidate, rtol=1, atol=1, metrics=["latency"], **FAST)
    assert not structure.check["structure_matches"]
    assert structure.verdict == "withheld"


def block_order(seed: int) -> list[tuple[str, str]]:
    """Run an experiment of two labelled workloads; return the order of each timed round."""
    calls: list[str] = []
    work = matmuls(2)

    def side(name: str) -> Any:
        def workload() -> Any:
            calls.append(name)
            return work()

        return workload

    experiment = compare_workloads(
        side("A"), side("B"), rtol=0, atol=0, metrics=["latency"], seed=seed, **FAST
    )
    base, cand = experiment.baseline["timing"], experiment.candidate["timing"]
    assert base is not None and cand is not None
    # The check calls (also the first calls), then each side's warm-up.
    prefix = ["A", "B"] + ["A"] * base["warmup_calls"] + ["B"] * cand["warmup_calls"]
    assert calls[: len(prefix)] == prefix
    # Both sides run blocks of the same number of calls.
    assert base["calls_per_block"] == cand["calls_per_block"]
    calls_per_block = {"A": base["calls_per_block"], "B": cand["calls_per_block"]}
    blocks: list[str] = []
    position = len(prefix)
    while position < len(calls):
        label = calls[position]
        size = calls_per_block[label]
        assert calls[position : position + size] == [label] * size
        blocks.append(label)
        position += size
    assert len(blocks) == 2 * len(base["block_durations_s"])
    return [(blocks[index], blocks[index + 1]) for index in range(0, len(blocks), 2)]


def test_blocks_are_interleaved_and_alternate_which_side_goes_first() -> None:
    rounds = block_order(seed=0)
    assert len(rounds) >= 6 and len(rounds) % 2 == 0
    assert all(sorted(one_round) == ["A", "B"] for one_round in rounds)
    # Rounds come in pairs, the second reversing the first (A B, B A or B A, A B) ...
    pairs = [(rounds[index], rounds[index + 1]) for index in range(0, len(rounds), 2)]
    assert all(first == second[::-1] for first, second in pairs)
    # ... so each side goes first in exactly half of the rounds ...
    assert sum(one_round[0] == "A" for one_round in rounds) == len(rounds) // 2
    # ... and which pair order comes is drawn from the seed.
    assert {first for first, _ in pairs} == {("A", "B"), ("B", "A")}


def timed_seconds(experiment: Experiment) -> float:
    timing = [experiment.baseline["timing"], experiment.candidate["timing"]]
    return sum(sum(side["block_durations_s"]) for side in timing if side is not None)


def test_timing_goes_on_until_the_interval_is_narrow_enough() -> None:
    workload = matmuls(2)
    budget = {**FAST, "min_time_s": 0.2, "max_time_s": 1.0, "metrics": ["latency"]}
    # A minimum effect of 5x needs a half-width of 2.5 (in log ratio): met as soon as the minimum
    # time is reached, even on a busy machine.
    loose = compare_workloads(workload, workload, rtol=0, atol=0, min_effect=5.0, **budget)
    # A zero minimum effect asks for a zero-width interval: never met, so timing stops at
    # max_time_s.
    exact = compare_workloads(workload, workload, rtol=0, atol=0, min_effect=0.0, **budget)
    assert timed_seconds(exact) >= 0.8
    assert timed_seconds(loose) < timed_seconds(exact) / 2


def test_both_check_calls_start_from_the_same_random_state_and_it_is_restored() -> None:
    torch.manual_seed(1)
    seen: list[torch.Tensor] = []

    def sample() -> torch.Tensor:
        value = torch.rand(4)
        seen.append(value)
        return value

    experiment = compare_workloads(sample, sample, rtol=0, atol=0, metrics=["operator_flops"])
    assert experiment.check["passed"]
    assert len(seen) == 4  # the two check calls, then one operator-count call per side
    assert torch.equal(seen[0], seen[1])
    # The state was put back after the check calls: the next call draws the same numbers.
    assert torch.equal(seen[2], seen[0])
    assert not torch.equal(seen[3], seen[2])
    assert experiment.baseline["timing"] is None
    assert experiment.comparison["verdict"] == "inconclusive"


def test_a_failing_callable_propagates_its_exception_and_leaves_state_as_it_was() -> None:
    error = RuntimeError("from the candidate")
    baseline = matmuls(1)
    torch.manual_seed(2)
    rng_before = torch.get_rng_state()
    grad_before = torch.is_grad_enabled()
    threads_before = torch.get_num_threads()

    def failing_first() -> torch.Tensor:
        torch.rand(3)  # consumes random numbers before failing
        raise error

    with pytest.raises(RuntimeError) as caught:
        compare_workloads(baseline, failing_first, rtol=0, atol=0, **FAST)
    assert caught.value is error
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert torch.is_grad_enabled() == grad_before
    assert torch.get_num_threads() == threads_before
    assert _get_current_dispatch_mode() is None

    calls = 0

    def failing_later() -> torch.Tensor:
        nonlocal calls
        calls += 1
        if calls == 5:
            raise error
        return torch.zeros(2)

    with pytest.raises(RuntimeError) as caught:
        compare_workloads(
            lambda: torch.zeros(2), failing_later, rtol=0, atol=0, metrics=["latency"], **FAST
        )
    assert caught.value is error
    assert calls == 5
    assert torch.get_num_threads() == threads_before
    assert torch.is_grad_enabled() == grad_before

    def failing_in_flops() -> torch.Tensor:
        if _get_current_dispatch_mode() is not None:
            raise error
        return torch.zeros(2)

    with pytest.raises(RuntimeError) as caught:
        compare_workloads(
            lambda: torch.zeros(2),
            failing_in_flops,
            rtol=0,
            atol=0,
            metrics=["latency", "operator_flops"],
            **FAST,
        )
    assert caught.value is error
    assert _get_current_dispatch_mode() is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"baseline": 3}, "baseline must be a zero-argument callable"),
        ({"candidate": None}, "candidate must be a zero-argument callable"),
        ({"rtol": -1.0}, "rtol"),
        ({"atol": float("nan")}, "atol"),
        ({"min_effect": -0.1}, "min_effect"),
        ({"confidence_level": 1.5}, "confidence_level"),
        ({"min_blocks": 0}, "min_blocks"),
        ({"min_time_s": 3.0, "max_time_s": 1.0}, "min_time_s"),
        ({"work_unit": "rows per second"}, "work_unit"),
        ({"metrics": ["speed"]}, "metrics must be"),
        ({"device": "gpu"}, "not a torch device"),
    ],
)
def test_bad_arguments_are_refused_before_any_call(kwargs: dict[str, Any], match: str) -> None:
    called: list[str] = []

    def workload() -> torch.Tensor:
        called.append("call")
        return torch.zeros(1)

    arguments: dict[str, Any] = {
        "baseline": workload,
        "candidate": workload,
        "rtol": 0.0,
        "atol": 0.0,
        **FAST,
    }
    arguments.update(kwargs)
    with pytest.raises(InvalidArgumentError, match=match):
        compare_workloads(**arguments)
    assert called == []


def test_the_summary_is_the_comparison_text(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = {**FAST, "print_summary": True}
    experiment = compare_workloads(
        matmuls(1), matmuls(1), rtol=0, atol=0, metrics=["latency"], **arguments
    )
    out = capsys.readouterr().out
    assert out == torchscan.format_summary(experiment.comparison)
    assert out.startswith("Comparison: ")
    assert "  Output check: passed" in out.splitlines()[1]


def write_workloads(folder: Path) -> tuple[Path, Path]:
    base = folder / "base.py"
    base.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "a = torch.randn(64, 64)\n"
        "def workload():\n"
        "    return a @ a\n",
        encoding="utf-8",
    )
    fast = folder / "fast.py"
    fast.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "a = torch.randn(64, 64)\n"
        "def workload():\n"
        "    return torch.mm(a, a)\n"
        "def wrong():\n"
        "    return a @ a + 1\n",
        encoding="utf-8",
    )
    return base, fast


def test_compare_command_writes_the_comparison_and_both_reports(tmp_path: Path) -> None:
    base, fast = write_workloads(tmp_path)
    outputs = {name: tmp_path / f"{name}.json" for name in ("comparison", "base", "cand", "check")}
    page = tmp_path / "comparison.html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscan",
            "compare",
            f"{base}:workload",
            f"{fast}:workload",
            "--rtol",
            "1e-5",
            "--atol",
            "1e-6",
            "--work-units",
            "64",
            "--work-unit",
            "rows",
            "--metrics",
            "latency",
            "--min-time",
            "0.2",
            "--json",
            str(outputs["comparison"]),
            "--html",
            str(page),
            "--baseline-json",
            str(outputs["base"]),
            "--candidate-json",
            str(outputs["cand"]),
            "--check-json",
            str(outputs["check"]),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    comparison = json.loads(outputs["comparison"].read_text(encoding="utf-8"))
    assert torchscan.validate_report(comparison) == "benchmark_comparison"
    assert comparison["check"]["status"] == "passed"
    assert comparison["work_unit"] == "rows"
    assert result.stdout == torchscan.format_summary(comparison)
    kinds = {name: torchscan.validate_report(path) for name, path in outputs.items()}
    assert kinds == {
        "comparison": "benchmark_comparison",
        "base": "benchmark",
        "cand": "benchmark",
        "check": "output_check",
    }
    assert page.read_text(encoding="utf-8").lower().startswith("<!doctype html>")


def test_compare_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, fast = write_workloads(tmp_path)
    out = tmp_path / "comparison.json"
    common = ["--metrics", "latency", "--min-time", "0.1", "--json", str(out)]
    assert main(["compare", f"{base}:workload", f"{fast}:wrong", *common]) == 1
    comparison = json.loads(out.read_text(encoding="utf-8"))
    assert comparison["verdict"] == "withheld"
    assert main(["compare", f"{base}:workload", f"{fast}:workload", "--rtol", "-1"]) == 2
    assert "rtol must be a finite number >= 0 (a tolerance); got -1.0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["compare", f"{base}:workload"])
    assert usage.value.code == 2
    assert "the following arguments are required: candidate" in capsys.readouterr().err
    assert main(["compare", f"{base}:workload", f"{fast}:missing"]) == 2
    assert capsys.readouterr().err == (
        f"python -m torchscan compare: error: {fast} has no attribute 'missing'\n"
    )
