#!/usr/bin/env python
"""The cost of the ``hardware_peak`` pass on the CPU, and where a workload lands against it.

The pass (``metrics=[..., "hardware_peak"]``) times a dense square matmul and a large copy with
the latency pass's block timing, at its default budget. This benchmark times the pass itself
(``torchscan.measure.peak.measure_hardware_peak`` on ``cpu`` in float32, torch on one thread) over a
few rounds and prints its wall time: goal, at most 2 s by default. For information it then
measures two workloads with the pass: a 1024 x 1024 float32 matmul, whose ``flop_utilization``
against the measured matmul peak on the same thread should land near 1, and a
``Linear(128, 128)`` on one sample, which should land far below it. A measurement, not a test:
it prints a Markdown table and always exits 0.

Usage
  python benches/bench_hardware_peak.py            # 5 rounds
  python benches/bench_hardware_peak.py --rounds 9
  python benches/bench_hardware_peak.py --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from _common import finish, machine

import torchscan
from torchscan.measure.peak import measure_hardware_peak

LIMIT_S = 2.0


def _utilization(workload: Any) -> float | None:
    report = torchscan.measure_workload(
        workload,
        metrics=["latency", "operator_flops", "hardware_peak"],
        min_time_s=0.5,
        print_summary=False,
    )
    metric = report["metrics"]["flop_utilization"]
    return metric["value"] if metric["status"] == "complete" else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    options = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device("cpu")
    seconds = []
    rates = []
    for _ in range(options.rounds):
        start = time.perf_counter()
        peak = measure_hardware_peak(device, "torch.float32")
        seconds.append(time.perf_counter() - start)
        rates.append(peak["flop_rate"]["value"])
    square = torch.randn(1024, 1024)
    layer = torch.nn.Linear(128, 128).eval()
    sample = torch.randn(1, 128)

    @torch.no_grad()
    def linear() -> Any:
        return layer(sample)

    results: dict[str, Any] = {
        "machine": machine(),
        "limit_s": LIMIT_S,
        "pass_s": seconds,
        "pass_median_s": statistics.median(seconds),
        "matmul_peak_flop_rate": rates,
        "utilization_matmul_1024": _utilization(lambda: square @ square),
        "utilization_linear_128_one_sample": _utilization(linear),
    }
    median = results["pass_median_s"]
    table = "\n".join(
        [
            "| Measure | Value |",
            "|---|---|",
            f"| hardware_peak pass, median of {options.rounds} (goal <= {LIMIT_S:g} s) | "
            f"{median:.2f} s ({'met' if median <= LIMIT_S else 'NOT met'}) |",
            f"| measured matmul peak, median | {statistics.median(rates) / 1e9:.1f} GFLOP/s |",
            f"| flop_utilization, 1024 x 1024 matmul | {results['utilization_matmul_1024']} |",
            "| flop_utilization, Linear(128, 128) on one sample | "
            f"{results['utilization_linear_128_one_sample']} |",
        ]
    )
    return finish(results, table, options.json)


if __name__ == "__main__":
    sys.exit(main())
