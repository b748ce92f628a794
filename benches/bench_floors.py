#!/usr/bin/env python
"""What any dispatch-based analysis pays before it counts anything, beside what torchscan pays.

The analysis goals of the peer comparison are ratios over a plain forward: ``crawl_module`` at
most 1.08x on ResNet-18, 1.05x on the transformer, 1.03x on the LSTM and 1.35x on MobileNetV2,
and ``measure_flops`` at or below PyTorch's ``FlopCounterMode`` in the same grad mode. This
benchmark times, on the four peer models (ResNet-18 1x3x224x224, a 6-layer transformer encoder
d_model 512 at 1x128, a 2-layer LSTM 256 -> 512 over 64 steps of batch 8, MobileNetV2
1x3x224x224), torch on one thread, every call under ``torch.no_grad()``:

* ``bare dispatch``: the forward under a ``TorchDispatchMode`` whose handler only calls each
  operator: the least that counting operators through PyTorch's Python dispatch costs;
* ``floor``: what a full ``crawl_module`` pays before it records one operator, computes one
  formula or fills one value: the bare dispatch mode, a do-nothing stand-in ``forward`` set on
  every module for the call (``functools.partial`` of the class's own ``forward``, the cheapest
  way to see module calls; torchscan's stand-in records them) and, after the forward, the
  report's layer dictionaries made by ``marshal.loads`` with the garbage collector paused (the
  fastest way CPython has to create them; schema v1 returns one per module call);
* ``FlopCounterMode``: PyTorch's operator counter (totals only; no report, no watch);
* ``measure_flops`` and ``measure_flops, unwatched``: torchscan's FLOPs pass with and without its
  watch of other threads (the private switch ``OperatorFlopCounter._watch_threads``): the
  difference is what the watch, a process-wide PyTorch profiler session that ``FlopCounterMode``
  does not have, costs on this model;
* ``crawl_module`` (``mode="full"``) and ``crawl_module, structure`` (no dispatch mode);
* ``watch alone``: the watch of other threads started and read around nothing (a
  ``ThreadWatch`` entered and left), in milliseconds and as a share of the forward: its fixed
  cost, which a pass with the watch pays on top of its dispatch mode.

Timing follows the peer comparison (``../shared/peers/measure.py``): for each of these, in every
round, one garbage collection and then a pair of (plain forward, the call), adjacent, in an order
that alternates from round to round; the ratio is the call over the forward of its own pair.
Rounds go through every call in turn, so all share the machine's drift. Reported: the median
ratio with its quartiles. A measurement, not a test: it prints a Markdown table and always exits
0.

Usage
  python benches/bench_floors.py             # 31 rounds per model
  python benches/bench_floors.py --quick     # 7 rounds
  python benches/bench_floors.py --rounds 61 --only LSTM
  python benches/bench_floors.py --json out.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
from _common import finish, machine, time_once  # noqa: E402
from bench_analysis import _BareDispatch, layers_rebuilt  # noqa: E402
from bench_threads import models  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import torchscan  # noqa: E402
from torchscan._threads import ThreadWatch  # noqa: E402
from torchscan.flops import OperatorFlopCounter  # noqa: E402

#: ``crawl_module``'s goal per model (the peer comparison's).
CRAWL_GOALS = {"ResNet-18": 1.08, "transformer": 1.05, "LSTM": 1.03, "MobileNetV2": 1.35}

COLUMNS = (
    "bare dispatch",
    "floor",
    "FlopCounterMode",
    "measure_flops",
    "measure_flops, unwatched",
    "crawl_module",
    "crawl_module, structure",
    "watch alone",
)


def _stand_ins(model: nn.Module) -> list[nn.Module]:
    """Set a do-nothing stand-in ``forward`` on every module; the modules to restore."""
    modules = [m for m in model.modules() if "forward" not in vars(m)]
    for module in modules:
        module.forward = functools.partial(type(module).forward, module)  # type: ignore[method-assign]
    return modules


def _restore(modules: list[nn.Module]) -> None:
    for module in modules:
        del module.forward


def _watch_alone() -> None:
    watch = ThreadWatch(set())
    watch.__enter__()
    watch.__exit__(None, None, None)
    if not watch.result.watched:
        raise RuntimeError(f"the watch did not run: {watch.result.reason}")


def _functions(model: nn.Module, x: torch.Tensor) -> dict[str, Callable[[], Any]]:
    def forward() -> None:
        with torch.no_grad():
            model(x)

    def bare() -> None:
        with torch.no_grad(), _BareDispatch():
            model(x)

    make_layers = layers_rebuilt(model, x)

    def floor() -> None:
        modules = _stand_ins(model)
        try:
            bare()
        finally:
            _restore(modules)
        make_layers()

    def flop_counter_mode() -> None:
        with torch.no_grad(), FlopCounterMode(display=False):
            model(x)

    def measure_flops() -> None:
        with torch.no_grad():
            torchscan.measure_flops(lambda: model(x))

    def unwatched() -> None:
        OperatorFlopCounter._watch_threads = False
        try:
            measure_flops()
        finally:
            OperatorFlopCounter._watch_threads = True

    return {
        "forward": forward,
        "bare dispatch": bare,
        "floor": floor,
        "FlopCounterMode": flop_counter_mode,
        "measure_flops": measure_flops,
        "measure_flops, unwatched": unwatched,
        "crawl_module": lambda: torchscan.crawl_module(model, args=(x,)),
        "watch alone": _watch_alone,
        "crawl_module, structure": lambda: torchscan.crawl_module(
            model, args=(x,), mode="structure"
        ),
    }


def _paired(
    fns: dict[str, Callable[[], Any]], repeats: int, warmup: int
) -> dict[str, list[tuple[float, float]]]:
    """``(forward, call)`` seconds of each call in each round, paired as the peers are."""
    forward = fns["forward"]
    calls = {name: fn for name, fn in fns.items() if name != "forward"}
    for _ in range(warmup):
        forward()
        for fn in calls.values():
            fn()
    pairs: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    for index in range(repeats):
        for name, fn in calls.items():
            gc.collect()
            if index % 2:
                spent = time_once(fn)
                base = time_once(forward)
            else:
                base = time_once(forward)
                spent = time_once(fn)
            pairs[name].append((base, spent))
    return pairs


def _summary(values: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": quartiles[0], "q3": quartiles[2]}


def run(repeats: int, only: list[str] | None) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "repeats": repeats, "models": {}}
    for name, (model, x) in models().items():
        if only and name not in only:
            continue
        model.eval()
        pairs = _paired(_functions(model, x), repeats=repeats, warmup=2)
        forward = [base for pair in pairs.values() for base, _ in pair]
        row: dict[str, Any] = {
            "forward_ms": statistics.median(forward) * 1e3,
            "ratios": {
                column: _summary([spent / base for base, spent in pairs[column]])
                for column in COLUMNS
            },
            # What the watch costs: the watched pass minus the unwatched one, in milliseconds.
            "watch_ms": (
                statistics.median([spent for _, spent in pairs["measure_flops"]])
                - statistics.median([spent for _, spent in pairs["measure_flops, unwatched"]])
            )
            * 1e3,
            "watch_alone_ms": statistics.median([spent for _, spent in pairs["watch alone"]]) * 1e3,
            "crawl_goal": CRAWL_GOALS[name],
        }
        results["models"][name] = row
    return results


def render(results: dict[str, Any]) -> str:
    shown = [column for column in COLUMNS if column != "watch alone"]
    header = ["model", "forward (ms)", *shown, "watch (ms)", "watch alone (ms)", "crawl goal"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for name, row in results["models"].items():
        cells = [name, f"{row['forward_ms']:.1f}"]
        for column in shown:
            ratio = row["ratios"][column]
            cells.append(f"{ratio['median']:.3f}x [{ratio['q1']:.3f}-{ratio['q3']:.3f}]")
        cells.append(f"{row['watch_ms']:.2f}")
        share = row["ratios"]["watch alone"]["median"]
        cells.append(f"{row['watch_alone_ms']:.2f} ({share:.1%})")
        cells.append(f"<= {row['crawl_goal']:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Ratios over the forward of the same pair: median [quartiles]. floor = the bare "
        "dispatch mode with do-nothing stand-in forwards, then the report's layers made by "
        "marshal.loads; watch = median measure_flops minus median measure_flops, unwatched; "
        "watch alone = a ThreadWatch entered and left, median, and its share of the forward."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="7 rounds per model")
    parser.add_argument("--rounds", type=int, default=31, help="rounds per model (default 31)")
    parser.add_argument(
        "--only", action="append", choices=tuple(CRAWL_GOALS), help="this model only (repeatable)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds must be at least 2")
    torch.set_num_threads(1)
    results = run(7 if args.quick else args.rounds, args.only)
    return finish(results, render(results), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
