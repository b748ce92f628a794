#!/usr/bin/env python
"""The cost of watching other threads in the operator-FLOPs pass, on the four peer models.

While ``measure_flops`` (and the FLOPs and tensor-memory passes of ``measure_workload``) run,
one process-wide profiler session records the operators of every thread, so work handed to
other threads is never a silent zero. This benchmark times ``measure_flops(lambda: model(x))``
under ``torch.no_grad()`` with the watch on and off (the private switch
``OperatorFlopCounter._watch_threads``), interleaved, on the models of the peer comparison:
ResNet-18 (1x3x224x224), a 6-layer transformer encoder (d_model 512, 8 heads, FF 2048, 1x128),
a 2-layer LSTM (256 -> 512, 64 steps, batch 8) and MobileNetV2 (1x3x224x224). Goal: the watched
pass takes at most 1.05x the unwatched one (medians). Torch runs on one thread. A measurement,
not a test: it prints a Markdown table and always exits 0.

Usage
  python benches/bench_threads.py            # 15 rounds per model
  python benches/bench_threads.py --quick    # 5 rounds
  python benches/bench_threads.py --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
from _common import finish, interleaved, machine  # noqa: E402
from torch import nn  # noqa: E402

import torchscan  # noqa: E402
from torchscan.flops import OperatorFlopCounter  # noqa: E402

LIMIT = 1.05


def models() -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """The four peer models, built with random weights, in evaluation mode."""
    import torchvision

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    return {
        "ResNet-18": (torchvision.models.resnet18(), torch.randn(1, 3, 224, 224)),
        "transformer": (
            nn.TransformerEncoder(layer, 6, enable_nested_tensor=False),
            torch.randn(1, 128, 512),
        ),
        "LSTM": (nn.LSTM(256, 512, num_layers=2), torch.randn(64, 8, 256)),
        "MobileNetV2": (torchvision.models.mobilenet_v2(), torch.randn(1, 3, 224, 224)),
    }


def _flops(model: nn.Module, x: torch.Tensor, watch: bool) -> None:
    OperatorFlopCounter._watch_threads = watch
    try:
        with torch.no_grad():
            torchscan.measure_flops(lambda: model(x))
    finally:
        OperatorFlopCounter._watch_threads = True


def run(repeats: int) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "limit": LIMIT, "models": {}}
    for name, (model, x) in models().items():
        model.eval()
        times = interleaved(
            {
                "watched": lambda model=model, x=x: _flops(model, x, True),
                "unwatched": lambda model=model, x=x: _flops(model, x, False),
            },
            repeats=repeats,
            warmup=2,
            collect=True,
        )
        watched = statistics.median(times["watched"])
        unwatched = statistics.median(times["unwatched"])
        results["models"][name] = {
            "watched_s": watched,
            "unwatched_s": unwatched,
            "ratio": watched / unwatched,
        }
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        "| model | measure_flops, watched (ms) | unwatched (ms) | ratio | goal |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in results["models"].items():
        verdict = "PASS" if row["ratio"] <= results["limit"] else "FAIL"
        lines.append(
            f"| {name} | {row['watched_s'] * 1e3:.1f} | {row['unwatched_s'] * 1e3:.1f} | "
            f"{row['ratio']:.3f}x | <= {results['limit']:.2f}x {verdict} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds per model")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = run(5 if args.quick else 15)
    return finish(results, render(results), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
