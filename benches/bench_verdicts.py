#!/usr/bin/env python
"""Measure how often verdicts of change are right, apart and interleaved, quiet and loaded.

A measurement, not a test: it prints a Markdown table with PASS/FAIL per target and always exits
0. Torch runs on one thread, in this process, with default settings of ``measure_workload``,
``compare_benchmarks`` and ``compare_workloads`` (``metrics=["latency"]``).

Workloads: ``a @ b`` with ``a`` and ``b`` of 256 x 256 float32 (the baseline); a candidate 10%
slower and one 5% slower, which also multiply the first rows of ``a`` by ``b`` (the same kind of
work, so that a change of the machine's load changes both sides alike). The rows are calibrated
at start-up on long interleaved runs (median of per-round ratios) and measured again at the end.

Experiments, in each condition:
  apart        cycles of four ``measure_workload`` reports, A1, S10, A2, S5 (the order rotates
               from cycle to cycle); ``compare_benchmarks(A1, A2)`` is A/A, ``(A1, S10)`` the 10%
               slowdown, ``(A2, S5)`` the 5% slowdown.
  interleaved  ``compare_workloads(A, A)``, ``(A, S10)`` and ``(A, S5)`` in turn.

Conditions:
  quiet   nothing else started by the bench.
  loaded  a load generator that the bench starts before the condition and stops after it: one
          process per CPU, each busy (a pure-Python loop) for a time drawn uniformly from 1-3 s,
          then idle (asleep) for 1-3 s, at random, as on a shared CI runner. The processes
          stop themselves if the bench dies (they watch their parent), and the bench kills them
          on every exit path.

Repeatability: five fresh processes run the README example (``measure_workload`` of
``Linear(128, 128)`` on 32 x 128 inputs) and their median latencies are compared (max / min),
quiet and loaded; under load, every report more than 5% off the quiet median should carry
``noisy_machine`` (a report that fell in a quiet spell of the generator need not).

Targets (issue: verdicts that hold on a busy machine)
  A/A: at most 1 verdict of change (``faster`` or ``slower``) in 100, in every condition.
  10% slowdown apart, quiet: ``slower`` in at least 90 of 100.
  5% slowdown interleaved: ``slower`` in at least 95 of 100, quiet and loaded.
  One interleaved experiment at default settings: median at most 5 s.
  Repeatability: max / min of five median latencies at most 1.05 quiet; loaded, every report
  whose latency is more than 5% off the quiet median carries ``noisy_machine``.

Usage
  python benches/bench_verdicts.py                      # 100 of each (about 60-90 minutes)
  python benches/bench_verdicts.py --runs 20            # 20 of each
  python benches/bench_verdicts.py --conditions quiet --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

import torchscan

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, machine  # noqa: E402
from bench_experiments import _interleaved_ratio  # noqa: E402

SIZE = 256
SLOWDOWNS = {"10%": 1.10, "5%": 1.05}
CALIBRATION_TOLERANCE = 0.006
MAX_FALSE_PER_100 = 1
MIN_APART_10_PER_100 = 90
MIN_INTERLEAVED_5_PER_100 = 95
MAX_MEDIAN_EXPERIMENT_S = 5.0
MAX_REPEAT_RATIO = 1.05

# The load generator: busy 1-3 s, idle 1-3 s, at random; it stops when its parent is gone.
LOADER = """
import os, random, sys, time
rng = random.Random(int(sys.argv[1]))
parent = os.getppid()
while os.getppid() == parent:
    end = time.monotonic() + rng.uniform(1.0, 3.0)
    while time.monotonic() < end:
        pass
    time.sleep(rng.uniform(1.0, 3.0))
"""


@contextlib.contextmanager
def load_generator(seed: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """One bursty busy process per CPU for the duration of the block; killed on every exit."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(os.cpu_count() or 1):
            processes.append(
                subprocess.Popen([sys.executable, "-c", LOADER, str(seed * 1000 + index)])
            )
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --------------------------------------------------------------------------- workloads


def _workloads() -> tuple[Callable[[], Any], Callable[[int], Callable[[], Any]]]:
    torch.manual_seed(0)
    a = torch.randn(SIZE, SIZE)
    b = torch.randn(SIZE, SIZE)

    @torch.inference_mode()
    def baseline() -> Any:
        return a @ b

    def slower(rows: int) -> Callable[[], Any]:
        @torch.inference_mode()
        def candidate() -> Any:
            output = a @ b
            torch.mm(a[:rows], b)
            return output

        return candidate

    return baseline, slower


def calibrate(
    baseline: Callable[[], Any], slower: Callable[[int], Callable[[], Any]], target: float
) -> dict[str, Any]:
    """The rows of the extra product that make the candidate ``target`` times slower."""
    rows = max(1, round((target - 1) * SIZE))
    attempts: list[dict[str, Any]] = []
    for _ in range(4):
        measured = _interleaved_ratio(baseline, slower(rows), 4.0)
        attempts.append({"rows": rows, "ratio": measured})
        if abs(measured - target) <= CALIBRATION_TOLERANCE:
            break
        per_row = max((measured - 1) / rows, 1e-6)
        rows = min(SIZE, max(1, rows + round((target - measured) / per_row)))
    best = min(attempts, key=lambda found: abs(found["ratio"] - target))
    return {"rows": best["rows"], "ratio": best["ratio"], "attempts": attempts}


# --------------------------------------------------------------------------- experiments


def _latency(comparison: Mapping[str, Any]) -> Any:
    return next(d for d in comparison["deltas"] if d["metric"] == "latency")


def _noisy(report: Mapping[str, Any]) -> bool:
    return any(d["code"] == "noisy_machine" for d in report["diagnostics"])


def _record(comparison: Mapping[str, Any], seconds: float, noisy: bool) -> dict[str, Any]:
    latency = _latency(comparison)
    return {
        "verdict": comparison["verdict"],
        "ratio": latency["ratio"],
        "ci": [latency["ratio_ci_low"], latency["ratio_ci_high"]],
        "reason": latency["reason"],
        "noisy": noisy,
        "seconds": seconds,
    }


def run_apart(
    workloads: dict[str, Callable[[], Any]], runs: int, progress: str
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` cycles of four reports measured apart, and their three comparisons."""
    found: dict[str, list[dict[str, Any]]] = {"A/A": [], "10%": [], "5%": []}
    order = ["A1", "S10", "A2", "S5"]
    for index in range(runs):
        reports: dict[str, Any] = {}
        seconds: dict[str, float] = {}
        shift = index % len(order)
        for name in order[shift:] + order[:shift]:
            start = time.perf_counter()
            reports[name] = torchscan.measure_workload(
                workloads[name], metrics=["latency"], print_summary=False
            )
            seconds[name] = time.perf_counter() - start
        for kind, (base, cand) in {
            "A/A": ("A1", "A2"),
            "10%": ("A1", "S10"),
            "5%": ("A2", "S5"),
        }.items():
            comparison = torchscan.compare_benchmarks(reports[base], reports[cand])
            noisy = _noisy(reports[base]) or _noisy(reports[cand])
            found[kind].append(_record(comparison, seconds[base] + seconds[cand], noisy))
        sys.stderr.write(
            f"\r{progress} apart {index + 1}/{runs}: "
            + ", ".join(f"{kind} {found[kind][-1]['verdict']}" for kind in found)
            + "      "
        )
        sys.stderr.flush()
    sys.stderr.write("\n")
    return found


def run_interleaved(
    baseline: Callable[[], Any],
    candidates: dict[str, Callable[[], Any]],
    runs: int,
    progress: str,
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` one-run experiments of each kind, in turn."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in candidates}
    for index in range(runs):
        for kind, candidate in candidates.items():
            start = time.perf_counter()
            experiment = torchscan.compare_workloads(
                baseline, candidate, rtol=0, atol=0, metrics=["latency"], print_summary=False
            )
            seconds = time.perf_counter() - start
            noisy = _noisy(experiment.baseline) or _noisy(experiment.candidate)
            found[kind].append(_record(experiment.comparison, seconds, noisy))
        sys.stderr.write(
            f"\r{progress} interleaved {index + 1}/{runs}: "
            + ", ".join(f"{kind} {found[kind][-1]['verdict']}" for kind in found)
            + "      "
        )
        sys.stderr.flush()
    sys.stderr.write("\n")
    return found


def _readme_example() -> str:
    """The README's first Python example, as it is documented."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def run_repeatability(count: int) -> list[dict[str, Any]]:
    """``count`` fresh processes running the README example; their latencies and noise."""
    found = []
    script = _readme_example()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(count):
            subprocess.run(
                [sys.executable, "-c", script],
                cwd=folder,
                check=True,
                capture_output=True,
                timeout=300,
            )
            report = json.loads((Path(folder) / "workload.json").read_text(encoding="utf-8"))
            found.append(
                {
                    "latency_s": report["metrics"]["latency"]["value"],
                    "noisy": _noisy(report),
                    "other_cpu": (report["metrics"].get("machine_other_cpu_ratio") or {}).get(
                        "value"
                    ),
                }
            )
    return found


def run_condition(
    name: str, runs: int, repeats: int, workloads: dict[str, Callable[[], Any]]
) -> dict[str, Any]:
    baseline = workloads["A1"]
    started = time.perf_counter()
    apart = run_apart(workloads, runs, name)
    interleaved = run_interleaved(
        baseline, {"A/A": baseline, "10%": workloads["S10"], "5%": workloads["S5"]}, runs, name
    )
    repeatability = run_repeatability(repeats)
    return {
        "apart": apart,
        "interleaved": interleaved,
        "repeatability": repeatability,
        "seconds": time.perf_counter() - started,
    }


def run_all(runs: int, repeats: int, conditions: list[str], seed: int) -> dict[str, Any]:
    baseline, slower = _workloads()
    for _ in range(200):
        baseline()
    calibration = {kind: calibrate(baseline, slower, target) for kind, target in SLOWDOWNS.items()}
    workloads = {
        "A1": baseline,
        "A2": baseline,
        "S10": slower(calibration["10%"]["rows"]),
        "S5": slower(calibration["5%"]["rows"]),
    }
    for kind, found in calibration.items():
        sys.stderr.write(f"calibrated {kind}: {found['rows']} rows, {found['ratio']:.3f}x\n")
    results: dict[str, Any] = {"runs": runs, "calibration": calibration, "conditions": {}}
    for condition in conditions:
        if condition == "loaded":
            with load_generator(seed):
                results["conditions"][condition] = run_condition(
                    condition, runs, repeats, workloads
                )
        else:
            results["conditions"][condition] = run_condition(condition, runs, repeats, workloads)
    for kind in SLOWDOWNS:
        key = "S10" if kind == "10%" else "S5"
        calibration[kind]["ratio_after"] = _interleaved_ratio(baseline, workloads[key], 4.0)
    return results


# --------------------------------------------------------------------------- report


def _counts(records: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(r["verdict"] for r in records).items()))


def summarize(found: dict[str, Any]) -> dict[str, Any]:
    runs = found["runs"]
    summary: dict[str, Any] = {}
    for condition, data in found["conditions"].items():
        cells: dict[str, Any] = {}
        for path in ("apart", "interleaved"):
            for kind, records in data[path].items():
                counts = _counts(records)
                changes = counts.get("faster", 0) + counts.get("slower", 0)
                seconds = sorted(r["seconds"] for r in records)
                cell = {
                    "verdicts": counts,
                    "changes": changes,
                    "slower": counts.get("slower", 0),
                    "noisy": sum(r["noisy"] for r in records),
                    "median_s": statistics.median(seconds),
                }
                if kind == "A/A":
                    cell["ok"] = changes * 100 <= MAX_FALSE_PER_100 * runs
                elif kind == "10%" and path == "apart" and condition == "quiet":
                    cell["ok"] = counts.get("slower", 0) * 100 >= MIN_APART_10_PER_100 * runs
                elif kind == "5%" and path == "interleaved":
                    cell["ok"] = counts.get("slower", 0) * 100 >= MIN_INTERLEAVED_5_PER_100 * runs
                cells[f"{path} {kind}"] = cell
        latencies = [r["latency_s"] for r in data["repeatability"]]
        spread = max(latencies) / min(latencies) if latencies else None
        repeat = {
            "latencies_ms": [value * 1e3 for value in latencies],
            "max_over_min": spread,
            "noisy": sum(r["noisy"] for r in data["repeatability"]),
            "other_cpu": [r["other_cpu"] for r in data["repeatability"]],
        }
        if condition == "quiet":
            repeat["ok"] = spread is not None and spread <= MAX_REPEAT_RATIO
        else:
            # Under load, a report may still fall in a quiet spell of the generator: it need not
            # be noisy, but every report off the quiet median by more than 5% must be.
            quiet = found["conditions"].get("quiet")
            reference = (
                statistics.median(r["latency_s"] for r in quiet["repeatability"])
                if quiet
                else min(latencies)
            )
            unflagged = [
                r
                for r in data["repeatability"]
                if not r["noisy"]
                and max(r["latency_s"] / reference, reference / r["latency_s"]) > MAX_REPEAT_RATIO
            ]
            repeat["unflagged_outliers"] = len(unflagged)
            repeat["ok"] = not unflagged
        interleaved_seconds = sorted(
            r["seconds"] for records in data["interleaved"].values() for r in records
        )
        summary[condition] = {
            "cells": cells,
            "repeatability": repeat,
            "interleaved_median_s": statistics.median(interleaved_seconds),
            "seconds": data["seconds"],
        }
    return summary


def _pass(ok: bool | None) -> str:
    return "info" if ok is None else ("**PASS**" if ok else "**FAIL**")


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"torchscan verdict benchmark — {m['date']}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs; Python {m['python']}, torch {m['torch']} "
        f"({m['torch_threads']} thread), torchscan {m['torchscan']}, commit {m['git_commit']}"
        f"{' + uncommitted changes' if m['git_tracked_changes'] else ''}; load average at "
        f"start {m['load_average_at_start']}",
        "",
    ]
    found = results.get("experiments")
    if found:
        runs = found["runs"]
        calibration = found["calibration"]
        lines.append(
            "Calibration (median of per-round ratios over 4 s interleaved runs, start / end): "
            + "; ".join(
                f"{kind}: {c['rows']} extra rows, {c['ratio']:.3f}x / "
                f"{c.get('ratio_after', 0):.3f}x"
                for kind, c in calibration.items()
            )
        )
        lines += [
            "",
            "| Condition | Path | Change | Verdicts | Reports with `noisy_machine` | "
            "Median s | Target | Result |",
            "|---|---|---|---|---|---|---|---|",
        ]
        targets = {
            "A/A": f"≤ {MAX_FALSE_PER_100}/100 changes",
            "apart 10%": f"≥ {MIN_APART_10_PER_100}/100 slower (quiet)",
            "interleaved 5%": f"≥ {MIN_INTERLEAVED_5_PER_100}/100 slower",
        }
        for condition, summary in results["summary"].items():
            for key, cell in summary["cells"].items():
                path, kind = key.split(" ", 1)
                target = targets.get(kind) or targets.get(key, "")
                if key == "apart 10%" and condition != "quiet":
                    target = ""
                lines.append(
                    f"| {condition} | {path} | {kind} | "
                    + ", ".join(f"{v} {n}" for v, n in cell["verdicts"].items())
                    + f" (of {runs}) | {cell['noisy']} | {cell['median_s']:.2f} | {target} | "
                    f"{_pass(cell.get('ok'))} |"
                )
        lines += [
            "",
            "| Condition | Repeatability | Value | Target | Result |",
            "|---|---|---|---|---|",
        ]
        for condition, summary in results["summary"].items():
            repeat = summary["repeatability"]
            lines.append(
                f"| {condition} | README example in {len(repeat['latencies_ms'])} fresh "
                f"processes: median latencies (ms) "
                + ", ".join(f"{v:.5f}" for v in repeat["latencies_ms"])
                + f"; noisy {repeat['noisy']} | max/min {repeat['max_over_min']:.3f} | "
                + (
                    f"≤ {MAX_REPEAT_RATIO}"
                    if condition == "quiet"
                    else "every report more than 5% off the quiet median noisy "
                    f"({repeat['unflagged_outliers']} not)"
                )
                + f" | {_pass(repeat['ok'])} |"
            )
        lines += [
            "",
            "| Condition | Interleaved experiment, median s | Target | Result |",
            "|---|---|---|---|",
        ]
        for condition, summary in results["summary"].items():
            median = summary["interleaved_median_s"]
            target_ok = median <= MAX_MEDIAN_EXPERIMENT_S if condition == "quiet" else None
            lines.append(
                f"| {condition} | {median:.2f} s (condition took {summary['seconds']:.0f} s) | "
                f"{'≤ 5 s (default settings)' if condition == 'quiet' else ''} | "
                f"{_pass(target_ok)} |"
            )
    lines.append("")
    lines.append(f"Total benchmark wall time: {results['wall_s']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="experiments of each kind")
    parser.add_argument("--repeats", type=int, default=5, help="fresh README processes")
    parser.add_argument(
        "--conditions",
        nargs="+",
        choices=["quiet", "loaded"],
        default=["quiet", "loaded"],
        help="which conditions to run, in order",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the load generator")
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    random.seed(args.seed)
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine()}
    try:
        results["experiments"] = run_all(
            max(1, args.runs), max(2, args.repeats), args.conditions, args.seed
        )
        results["summary"] = summarize(results["experiments"])
    except Exception as exc:  # a measurement: report what broke, still exit 0
        results["error"] = f"{type(exc).__name__}: {exc}"
    results["wall_s"] = time.perf_counter() - started
    return finish(results, render(results), args.json)


if __name__ == "__main__":
    sys.exit(main())
