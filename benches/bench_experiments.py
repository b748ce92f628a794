#!/usr/bin/env python
"""Measure the statistical quality of ``torchscan.compare_workloads`` with its default settings.

A checked experiment is only useful if its verdicts can be trusted on the machine at hand. This
runs many real experiments, in one process with torch on one thread, and counts verdicts. It is
a measurement, not a test: it prints a Markdown table with PASS/FAIL per target and always exits
0.

Targets (default settings of ``compare_workloads``, ``metrics=["latency"]``)
  (a) A/A: the same callable on both sides gives a ``faster`` or ``slower`` verdict in at most
      1 of 100 experiments.
  (b) A true 5% slowdown is called ``slower`` in at least 95 of 100 experiments.
  (c) information: the time one experiment takes (median, 90th percentile, total).

The workload is a small MLP (20 x ``Linear(256, 256)`` + ``ReLU``, batch 64, float32, inference
mode; about 2 ms per call on one thread on a quiet machine). The slower candidate runs the same
MLP and then a 21st layer of the same shape on rows of its output (5% more of the same work by
construction, so that the slowdown does not change with the machine's load; the output is the
baseline's, so the check passes). At start-up the slowdown is calibrated: its ratio is measured
as the median of per-round ratios over long interleaved runs, and the rows of the extra layer
are adjusted until it is 1.05x (within 0.004, when 64 rows are enough); it is measured again at
the end, and both sides are also measured apart (``measure_workload`` on each, alternately), for
comparison. A/A and 5% experiments alternate, so that changes of the machine's load weigh on
both.

Usage
  python benches/bench_experiments.py            # 100 + 100 experiments (~10-20 minutes)
  python benches/bench_experiments.py --quick    # 10 + 10, a smoke run
  python benches/bench_experiments.py --runs 30 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import torchscan
from torchscan.measure.timing import TimingBudget, run_interleaved_timing

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, machine  # noqa: E402

TARGET_SLOWDOWN = 1.05
CALIBRATION_TOLERANCE = 0.004
MAX_FALSE_PER_100 = 1
MIN_DETECTED_PER_100 = 95
LAYERS = 20
WIDTH = 256
BATCH = 64


# --------------------------------------------------------------------------- workloads


def _workloads() -> tuple[Callable[[], Any], Callable[[int], Callable[[], Any]]]:
    """The baseline, and a factory of candidates that also run a 21st layer on some rows."""
    torch.manual_seed(0)
    modules: list[torch.nn.Module] = []
    for _ in range(LAYERS + 1):
        modules += [torch.nn.Linear(WIDTH, WIDTH).eval(), torch.nn.ReLU()]
    layers, extra_layer = modules[: 2 * LAYERS], modules[2 * LAYERS :]
    inputs = torch.randn(BATCH, WIDTH)

    def run(chain: list[torch.nn.Module], values: torch.Tensor) -> torch.Tensor:
        for module in chain:
            values = module(values)
        return values

    @torch.inference_mode()
    def baseline() -> Any:
        return run(layers, inputs)

    def slower(extra_rows: int) -> Callable[[], Any]:
        # The extra work is one more layer of the same shape, run the same way: work of the same
        # kind, so that a change of the machine's load changes both sides alike. The output is
        # the baseline's, so that the output check passes.
        @torch.inference_mode()
        def candidate() -> Any:
            output = run(layers, inputs)
            run(extra_layer, output[:extra_rows])
            return output

        return candidate

    return baseline, slower


def _interleaved_ratio(
    baseline: Callable[[], Any], candidate: Callable[[], Any], seconds: float
) -> float:
    """Median of per-round ratios candidate / baseline over a long interleaved run."""
    runs = run_interleaved_timing(
        [baseline, candidate],
        torch.device("cpu"),
        TimingBudget(min_time_s=seconds, max_time_s=seconds * 3, min_blocks=100),
        first_calls_s=[0.0, 0.0],
        order_seed=1,
    )
    base = [d / runs[0].calls_per_block for d in runs[0].block_durations_s]
    cand = [d / runs[1].calls_per_block for d in runs[1].block_durations_s]
    return statistics.median(c / b for b, c in zip(base, cand, strict=True))


def _apart_ratio(
    baseline: Callable[[], Any], candidate: Callable[[], Any], repeats: int
) -> dict[str, Any]:
    """Both measured apart with ``measure_workload`` (alternately); ratio of median latencies."""
    latencies: dict[str, list[float]] = {"baseline": [], "candidate": []}
    for _ in range(repeats):
        for name, workload in (("baseline", baseline), ("candidate", candidate)):
            report = torchscan.measure_workload(
                workload, metrics=["latency"], print_summary=False, min_time_s=1.0
            )
            value = report["metrics"]["latency"]["value"]
            assert value is not None
            latencies[name].append(value)
    medians = {name: statistics.median(values) for name, values in latencies.items()}
    pairs = [c / b for b, c in zip(latencies["baseline"], latencies["candidate"], strict=True)]
    return {
        "repeats": repeats,
        "pair_ratios": pairs,
        "baseline_latency_ms": medians["baseline"] * 1e3,
        "candidate_latency_ms": medians["candidate"] * 1e3,
        "ratio": medians["candidate"] / medians["baseline"],
    }


def calibrate(
    baseline: Callable[[], Any], slower: Callable[[int], Callable[[], Any]], quick: bool
) -> dict[str, Any]:
    """Find the rows of the extra layer that make the candidate 5% slower; verify the result.

    The extra layer's cost is close to affine in its rows: two probes give a first estimate,
    then a few corrections on the measured ratio.
    """
    seconds = 3.0 if quick else 6.0
    for _ in range(50):
        baseline()
    probes = {rows: _interleaved_ratio(baseline, slower(rows), seconds) for rows in (8, BATCH)}
    per_row = (probes[BATCH] - probes[8]) / (BATCH - 8)
    fixed = probes[8] - 1 - 8 * per_row
    rows = min(BATCH, max(1, round((TARGET_SLOWDOWN - 1 - fixed) / max(per_row, 1e-6))))
    attempts: list[dict[str, Any]] = []
    for _ in range(4):
        measured = _interleaved_ratio(baseline, slower(rows), seconds)
        attempts.append({"extra_rows": rows, "interleaved_ratio": measured})
        if abs(measured - TARGET_SLOWDOWN) <= CALIBRATION_TOLERANCE:
            break
        rows = min(BATCH, max(1, rows + round((TARGET_SLOWDOWN - measured) / max(per_row, 1e-6))))
    best = min(attempts, key=lambda found: abs(found["interleaved_ratio"] - TARGET_SLOWDOWN))
    return {
        "extra_rows": best["extra_rows"],
        "probes": {str(rows): ratio for rows, ratio in probes.items()},
        "attempts": attempts,
        "interleaved_ratio": best["interleaved_ratio"],
        "apart": _apart_ratio(baseline, slower(best["extra_rows"]), repeats=2 if quick else 5),
    }


# --------------------------------------------------------------------------- experiments


def _experiment(baseline: Callable[[], Any], candidate: Callable[[], Any]) -> dict[str, Any]:
    start = time.perf_counter()
    experiment = torchscan.compare_workloads(
        baseline, candidate, rtol=0, atol=0, metrics=["latency"], print_summary=False
    )
    seconds = time.perf_counter() - start
    latency = next(d for d in experiment.comparison["deltas"] if d["metric"] == "latency")
    timing = experiment.baseline["timing"]
    assert timing is not None
    return {
        "verdict": experiment.verdict,
        "ratio_of_medians": latency["ratio"],
        "ci": [latency["ratio_ci_low"], latency["ratio_ci_high"]],
        "rounds": len(timing["block_durations_s"]),
        "calls_per_block": timing["calls_per_block"],
        "baseline_latency_s": experiment.baseline["metrics"]["latency"]["value"],
        "seconds": seconds,
    }


def run_experiments(runs: int, quick: bool) -> dict[str, Any]:
    baseline, slower = _workloads()
    calibration = calibrate(baseline, slower, quick)
    candidate = slower(calibration["extra_rows"])
    sys.stderr.write(
        f"calibrated: {calibration['extra_rows']} extra rows, "
        f"{calibration['interleaved_ratio']:.3f}x interleaved, "
        f"{calibration['apart']['ratio']:.3f}x apart\n"
    )
    results: dict[str, list[dict[str, Any]]] = {"aa": [], "slowdown": []}
    started = time.perf_counter()
    for index in range(runs):
        results["aa"].append(_experiment(baseline, baseline))
        results["slowdown"].append(_experiment(baseline, candidate))
        sys.stderr.write(
            f"\r{index + 1}/{runs} pairs of experiments "
            f"(A/A: {results['aa'][-1]['verdict']}, 5%: {results['slowdown'][-1]['verdict']})   "
        )
        sys.stderr.flush()
    sys.stderr.write("\n")
    experiments_s = time.perf_counter() - started
    calibration["interleaved_ratio_after"] = _interleaved_ratio(
        baseline, candidate, 3.0 if quick else 6.0
    )
    start = time.perf_counter()
    torchscan.compare_workloads(baseline, candidate, rtol=0, atol=0, print_summary=False)
    default_metrics_s = time.perf_counter() - start
    return {
        "runs": runs,
        "calibration": calibration,
        "results": results,
        "experiments_s": experiments_s,
        "default_metrics_experiment_s": default_metrics_s,
    }


def summarize(found: dict[str, Any]) -> dict[str, Any]:
    runs = found["runs"]
    summary: dict[str, Any] = {}
    for kind, experiments in found["results"].items():
        verdicts = Counter(e["verdict"] for e in experiments)
        seconds = sorted(e["seconds"] for e in experiments)
        widths = [e["ci"][1] - e["ci"][0] for e in experiments if None not in e["ci"]]
        summary[kind] = {
            "verdicts": dict(sorted(verdicts.items())),
            "median_s": statistics.median(seconds),
            "p90_s": seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))],
            "max_s": seconds[-1],
            "total_s": sum(seconds),
            "median_rounds": statistics.median(e["rounds"] for e in experiments),
            "median_ci_width": statistics.median(widths) if widths else None,
        }
    false_verdicts = sum(summary["aa"]["verdicts"].get(v, 0) for v in ("faster", "slower"))
    detected = summary["slowdown"]["verdicts"].get("slower", 0)
    summary["false_verdicts"] = false_verdicts
    summary["detected"] = detected
    summary["false_ok"] = false_verdicts * 100 <= MAX_FALSE_PER_100 * runs
    summary["detected_ok"] = detected * 100 >= MIN_DETECTED_PER_100 * runs
    all_seconds = sorted(
        e["seconds"] for experiments in found["results"].values() for e in experiments
    )
    summary["all_median_s"] = statistics.median(all_seconds)
    summary["all_p90_s"] = all_seconds[min(len(all_seconds) - 1, int(0.9 * len(all_seconds)))]
    return summary


# --------------------------------------------------------------------------- report


def _pass(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _verdicts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"torchscan checked-experiment benchmark — {m['date']}"
        f"{' (quick)' if results['quick'] else ''}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs; Python {m['python']}, torch {m['torch']} "
        f"({m['torch_threads']} thread), torchscan {m['torchscan']}, commit {m['git_commit']}"
        f"{' + uncommitted changes' if m['git_tracked_changes'] else ''}; load average at "
        f"start {m['load_average_at_start']}",
        "",
    ]
    found = results.get("experiments")
    if found:
        s = results["summary"]
        runs = found["runs"]
        c = found["calibration"]
        aa, slow = s["aa"], s["slowdown"]
        lines += [
            "| Target | Measurement | Value | Limit | Result |",
            "|---|---|---|---|---|",
            f"| calibration | candidate = the MLP, then a 21st `Linear(256, 256)` + `ReLU` "
            f"on {c['extra_rows']} of {BATCH} rows; interleaved (median per-round ratio) "
            f"| {c['interleaved_ratio']:.3f}x at start, "
            f"{c['interleaved_ratio_after']:.3f}x at the end | {TARGET_SLOWDOWN:.2f}x "
            f"± {CALIBRATION_TOLERANCE} | info |",
            f"| | measured apart (`measure_workload`, {c['apart']['repeats']} each, "
            f"ratio of median latencies) | {c['apart']['ratio']:.3f}x "
            f"({c['apart']['baseline_latency_ms']:.3f} ms vs "
            f"{c['apart']['candidate_latency_ms']:.3f} ms; each pair: "
            f"{', '.join(f'{r:.3f}' for r in c['apart']['pair_ratios'])}) | | info |",
            f"| (a) A/A false verdicts | `faster` + `slower` of {runs} "
            f"({_verdicts(aa['verdicts'])}) | **{s['false_verdicts']}/{runs}** "
            f"| ≤ {MAX_FALSE_PER_100}/100 | **{_pass(s['false_ok'])}** |",
            f"| (b) 5% slowdown detected | `slower` of {runs} ({_verdicts(slow['verdicts'])}) "
            f"| **{s['detected']}/{runs}** | ≥ {MIN_DETECTED_PER_100}/100 "
            f"| **{_pass(s['detected_ok'])}** |",
            f"| | median interval width (A/A; 5%) | {aa['median_ci_width']:.4f}; "
            f"{slow['median_ci_width']:.4f} | | info |",
            f"| | median rounds per experiment (A/A; 5%) | {aa['median_rounds']:.0f}; "
            f"{slow['median_rounds']:.0f} | | info |",
            f"| (c) time per experiment | median (90th percentile, max) of all "
            f"{2 * runs} | {s['all_median_s']:.2f} s ({s['all_p90_s']:.2f} s, "
            f"{max(aa['max_s'], slow['max_s']):.2f} s) | | info |",
            f"| | total of the {2 * runs} experiments | {found['experiments_s']:.0f} s | | info |",
            f"| | one experiment with the default metrics (latency, operator FLOPs, tensor "
            f"memory) | {found['default_metrics_experiment_s']:.2f} s | | info |",
        ]
    lines.append("")
    lines.append(f"Total benchmark wall time: {results['wall_s']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 + 10 experiments (smoke run)")
    parser.add_argument("--runs", type=int, default=None, help="experiments of each kind")
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    runs = args.runs if args.runs is not None else (10 if args.quick else 100)
    started = time.perf_counter()
    results: dict[str, Any] = {"quick": args.quick, "machine": machine()}
    try:
        results["experiments"] = run_experiments(max(1, runs), args.quick)
        results["summary"] = summarize(results["experiments"])
    except Exception as exc:  # a measurement: report what broke, still exit 0
        results["error"] = f"{type(exc).__name__}: {exc}"
    results["wall_s"] = time.perf_counter() - started

    return finish(results, render(results), args.json)


if __name__ == "__main__":
    sys.exit(main())
