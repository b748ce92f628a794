#!/usr/bin/env python
"""The cost of counting operator bytes in the operator-FLOPs pass, on the four peer models.

``OperatorFlopCounter`` adds up, in the pass that counts FLOPs, the bytes of every executed
operator's distinct tensor arguments and results (``OperatorFlopCounter.operator_bytes``). This
benchmark times ``measure_flops(lambda: model(x))`` under ``torch.no_grad()`` with the bytes
counted and not (the private switch ``OperatorFlopCounter._count_bytes``), interleaved, on the
models of the peer comparison: ResNet-18 (1x3x224x224), a 6-layer transformer encoder (d_model
512, 8 heads, FF 2048, 1x128), a 2-layer LSTM (256 -> 512, 64 steps, batch 8) and MobileNetV2
(1x3x224x224). Goal: the pass with bytes takes at most 1.05x the pass without (medians). The
counter alone (``with OperatorFlopCounter(): model(x)``, no report) is timed the same way for
information: it leaves out the report's fixed cost, so its ratio is the bytes' cost over the
counted forward itself. Last, for information, the worst case: 2,000 additions of 4x4 tensors
under the counter, where the operators cost next to nothing and the count is most of the time;
the difference per operator is printed. Torch runs on one thread. A measurement, not a test: it
prints a Markdown table and always exits 0.

Usage
  python benches/bench_operator_bytes.py            # 15 rounds per model
  python benches/bench_operator_bytes.py --quick    # 5 rounds
  python benches/bench_operator_bytes.py --rounds 31
  python benches/bench_operator_bytes.py --json out.json
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
from bench_threads import models  # noqa: E402
from torch import nn  # noqa: E402

import torchscan  # noqa: E402
from torchscan.flops import OperatorFlopCounter  # noqa: E402

LIMIT = 1.05
TINY_OPERATORS = 2_000


def _flops(model: nn.Module, x: torch.Tensor, count_bytes: bool) -> None:
    OperatorFlopCounter._count_bytes = count_bytes
    try:
        with torch.no_grad():
            torchscan.measure_flops(lambda: model(x))
    finally:
        OperatorFlopCounter._count_bytes = True


def _counter(model: nn.Module, x: torch.Tensor, count_bytes: bool) -> None:
    OperatorFlopCounter._count_bytes = count_bytes
    try:
        with torch.no_grad(), OperatorFlopCounter():
            model(x)
    finally:
        OperatorFlopCounter._count_bytes = True


def _tiny(a: torch.Tensor, count_bytes: bool) -> None:
    OperatorFlopCounter._count_bytes = count_bytes
    try:
        with OperatorFlopCounter():
            for _ in range(TINY_OPERATORS):
                a + a
    finally:
        OperatorFlopCounter._count_bytes = True


def _operator_bytes(model: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """The model's operator bytes and operator calls (checks that the count runs)."""
    counter = OperatorFlopCounter()
    with torch.no_grad(), counter:
        model(x)
    value = counter.operator_bytes()["value"]
    assert isinstance(value, int)
    return value, sum(counter.calls().values())


def run(repeats: int) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "limit": LIMIT, "models": {}}
    for name, (model, x) in models().items():
        model.eval()
        times = interleaved(
            {
                "with": lambda model=model, x=x: _flops(model, x, True),
                "without": lambda model=model, x=x: _flops(model, x, False),
                "counter_with": lambda model=model, x=x: _counter(model, x, True),
                "counter_without": lambda model=model, x=x: _counter(model, x, False),
            },
            repeats=repeats,
            warmup=2,
            collect=True,
        )
        medians = {key: statistics.median(values) for key, values in times.items()}
        operator_bytes, calls = _operator_bytes(model, x)
        results["models"][name] = {
            "with_s": medians["with"],
            "without_s": medians["without"],
            "ratio": medians["with"] / medians["without"],
            "counter_with_s": medians["counter_with"],
            "counter_without_s": medians["counter_without"],
            "counter_ratio": medians["counter_with"] / medians["counter_without"],
            "operator_bytes": operator_bytes,
            "operator_calls": calls,
        }
    a = torch.randn(4, 4)
    times = interleaved(
        {"with": lambda: _tiny(a, True), "without": lambda: _tiny(a, False)},
        repeats=repeats,
        warmup=2,
        collect=True,
    )
    with_s, without_s = (statistics.median(times[key]) for key in ("with", "without"))
    results["tiny"] = {
        "operators": TINY_OPERATORS,
        "with_s": with_s,
        "without_s": without_s,
        "ratio": with_s / without_s,
        "per_operator_us": (with_s - without_s) / TINY_OPERATORS * 1e6,
    }
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        "| model | operator calls | operator bytes | measure_flops, with bytes (ms) | without (ms) "
        "| ratio | goal | counter alone, with / without (ms) | ratio (info) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in results["models"].items():
        verdict = "PASS" if row["ratio"] <= results["limit"] else "FAIL"
        lines.append(
            f"| {name} | {row['operator_calls']:,} | {row['operator_bytes']:,} | "
            f"{row['with_s'] * 1e3:.1f} | {row['without_s'] * 1e3:.1f} | "
            f"{row['ratio']:.3f}x | <= {results['limit']:.2f}x {verdict} | "
            f"{row['counter_with_s'] * 1e3:.1f} / {row['counter_without_s'] * 1e3:.1f} | "
            f"{row['counter_ratio']:.3f}x |"
        )
    tiny = results["tiny"]
    lines.append(
        f"\nWorst case (info): {tiny['operators']:,} additions of 4x4 tensors under the counter, "
        f"{tiny['with_s'] * 1e3:.2f} ms with bytes, {tiny['without_s'] * 1e3:.2f} ms without "
        f"({tiny['ratio']:.3f}x, {tiny['per_operator_us']:+.3f} us per operator)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds per model")
    parser.add_argument("--rounds", type=int, help="rounds per model (default 15)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = run(args.rounds or (5 if args.quick else 15))
    return finish(results, render(results), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
