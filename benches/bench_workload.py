"""measure_workload against its performance targets, in one process, 1 thread.

(a) the default measure_workload on the README example takes at most 3 s of wall time after
    imports; (b) its latency median is within 5% of torch.utils.benchmark's blocked_autorange
    (min_run_time=1) run beside it; (c) five consecutive calls give medians whose max/min is at
    most 1.10. Prints a Markdown table; a measurement, not a test (exit code 0).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.utils.benchmark as benchmark

import torchscan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default=None, help="also write the numbers here")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)

    @torch.inference_mode()
    def workload() -> torch.Tensor:
        return model(inputs)

    def measure() -> dict:
        return torchscan.measure_workload(
            workload,
            device="cpu",
            inputs=inputs,
            work_units=32,
            work_unit="samples",
            print_summary=False,
        )

    start = time.perf_counter()
    first = measure()
    first_wall_s = time.perf_counter() - start
    # (a) and (c): five consecutive calls, nothing else in between.
    walls, medians = [], []
    for _ in range(5):
        start = time.perf_counter()
        report = measure()
        walls.append(time.perf_counter() - start)
        medians.append(report["metrics"]["latency"]["value"])
    # (b): five more calls, each beside a Timer run, interleaved, so drift affects both.
    paired, references = [], []
    for _ in range(5):
        paired.append(measure()["metrics"]["latency"]["value"])
        timer = benchmark.Timer(
            stmt="workload()", globals={"workload": workload}, num_threads=1
        ).blocked_autorange(min_run_time=1)
        references.append(timer.median)
    reference_s = sorted(references)[2]
    ours_s = sorted(paired)[2]
    rows = [
        (
            "(a) wall time, first call in the process (includes lazy torch imports)",
            f"{first_wall_s:.2f} s",
            "info",
            "",
        ),
        (
            "(a) wall time, default measure_workload (median of 5, after imports)",
            f"{sorted(walls)[2]:.2f} s",
            "<= 3 s",
            "PASS" if sorted(walls)[2] <= 3 else "FAIL",
        ),
        (
            "(b) latency median, torchscan (median of 5 runs beside the Timer's)",
            f"{ours_s * 1e6:.3f} us",
            "",
            "",
        ),
        (
            "(b) torch.utils.benchmark blocked_autorange(min_run_time=1) median",
            f"{reference_s * 1e6:.3f} us",
            "",
            "",
        ),
        (
            "(b) ratio torchscan / Timer",
            f"{ours_s / reference_s:.3f}",
            "within 5%",
            "PASS" if abs(ours_s / reference_s - 1) <= 0.05 else "FAIL",
        ),
        (
            "(c) max/min of five consecutive medians",
            f"{max(medians) / min(medians):.3f}",
            "<= 1.10",
            "PASS" if max(medians) / min(medians) <= 1.10 else "FAIL",
        ),
        (
            "(c) for reference: max/min of the five interleaved Timer medians",
            f"{max(references) / min(references):.3f}",
            "info",
            "",
        ),
    ]
    print(f"torch {torch.__version__}, torchscan {torchscan.__version__}, 1 thread\n")
    print("| Target | Value | Limit | Result |\n|---|---|---|---|")
    for name, value, limit, result in rows:
        print(f"| {name} | {value} | {limit} | {result} |")
    del first
    if arguments.json:
        with open(arguments.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "first_wall_s": first_wall_s,
                    "walls_s": walls,
                    "medians_s": medians,
                    "paired_medians_s": paired,
                    "timer_medians_s": references,
                },
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()
