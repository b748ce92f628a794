#!/usr/bin/env python
"""Where a dispatch mode's cost lands: in the operators' kernels, or in the mode's own layer.

``bench_floors.py`` times the forward under a ``TorchDispatchMode`` that only calls each operator
(the "bare dispatch" floor of every dispatch-based analysis). This script profiles the same two
forwards, plain and under that mode, with PyTorch's CPU profiler, and prints each profiler key's
self CPU time (median over the rounds) with the difference: ``PythonDispatchMode`` is the time
spent in the mode's layer itself (PyTorch's call into Python and back, the handler), the
``aten::`` keys the operators and their kernels. Torch runs on one thread, under
``torch.no_grad()``, on ResNet-18 at 1x3x224x224 (``tests/models.py``) or MobileNetV2
(torchvision, random weights). A measurement, not a test: it prints a Markdown table and always
exits 0.

Usage
  python benches/profile_dispatch.py                 # ResNet-18, 6 rounds
  python benches/profile_dispatch.py --model mobilenet_v2 --rounds 11
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's own start and stop lines

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class _BareDispatch(TorchDispatchMode):
    """Calls each operator and nothing else."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


def _model(name: str) -> torch.nn.Module:
    if name == "resnet18":
        from tests.models import ResNet18

        return ResNet18().eval()
    import torchvision

    return torchvision.models.mobilenet_v2().eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--model", choices=("resnet18", "mobilenet_v2"), default="resnet18")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--top", type=int, default=12)
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = _model(options.model)
    x = torch.randn(1, 3, 224, 224)

    def plain() -> None:
        with torch.no_grad():
            model(x)

    def bare() -> None:
        with torch.no_grad(), _BareDispatch():
            model(x)

    for warm in (plain, bare, plain, bare):
        warm()
    times: dict[str, dict[str, list[float]]] = {}
    for _ in range(options.rounds):
        for name, forward in (("plain", plain), ("bare", bare)):
            with profile(activities=[ProfilerActivity.CPU]) as profiler:
                forward()
            for event in profiler.key_averages():
                times.setdefault(event.key, {}).setdefault(name, []).append(
                    event.self_cpu_time_total
                )
    rows = []
    for key, by_call in times.items():
        plain_us = statistics.median(by_call.get("plain", [0.0]))
        bare_us = statistics.median(by_call.get("bare", [0.0]))
        rows.append((bare_us - plain_us, key, plain_us, bare_us))
    rows.sort(reverse=True)
    total_plain = sum(row[2] for row in rows)
    total_bare = sum(row[3] for row in rows)
    print(f"{options.model}, {options.rounds} rounds, torch {torch.__version__}, one thread\n")
    print("| profiler key | plain (ms) | bare dispatch (ms) | difference (ms) |")
    print("| --- | --- | --- | --- |")
    for difference, key, plain_us, bare_us in rows[: options.top]:
        print(f"| `{key}` | {plain_us / 1e3:.2f} | {bare_us / 1e3:.2f} | {difference / 1e3:+.2f} |")
    print(
        f"| all keys | {total_plain / 1e3:.2f} | {total_bare / 1e3:.2f} | "
        f"{(total_bare - total_plain) / 1e3:+.2f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
