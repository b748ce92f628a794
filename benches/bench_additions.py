#!/usr/bin/env python
"""What each part of an analysis that is not the forward costs, measured with it on and off.

``crawl_module`` and ``measure_flops`` grew parts that every analysis pays since the crawl was
last measured at 1.11x a ResNet-18 forward: the passive claim of the thread for the watch of
other threads (``ThreadWatch(active=False)``, entered by every counter), the watch of
compiled code (``CompiledWatch``), the claims that refuse concurrent analyses of one model
(``_claims.claimed``), the operator views kept for torchscan
0.2 (``by_operator``, ``by_module``, ``ignored_operators``), and, for ``measure_flops``, the
watch of other threads itself, the operator bytes and the check of the report on its way out.
This benchmark times, on the peer models (ResNet-18 and MobileNetV2 by default; ``--only``
picks others of ``bench_threads.models``), torch on one thread, everything under
``torch.no_grad()``:

* ``crawl_module`` as it is, and with one part switched off at a time (the part replaced by a
  do-nothing stand-in for the duration of the call, through the private names the package
  uses); the difference is what that part costs;
* ``crawl_module`` with operator bytes switched on (the analysis has them off: its report has
  none), to show what the switch saves;
* ``crawl_module`` without the garbage collector paused, to show what the pause saves;
* ``measure_flops`` as it is, unwatched, without operator bytes and without the check of its
  report.

Timing is ``bench_floors.py``'s: pairs of (plain forward, the call), adjacent, order
alternating by round, one garbage collection per pair; the table gives each call's median
ratio over its forwards and the median, over rounds, of the call minus the full call of the
same round (milliseconds; negative: switching the part off saves that much). A measurement,
not a test: it prints a Markdown table and always exits 0.

Usage
  python benches/bench_additions.py              # 31 rounds, ResNet-18 and MobileNetV2
  python benches/bench_additions.py --quick      # 7 rounds
  python benches/bench_additions.py --only LSTM --rounds 21 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from _common import finish, machine
from bench_floors import _paired
from bench_threads import models

import torchscan
import torchscan.crawl as crawl_package
from torchscan import flops as flops_module
from torchscan.crawl import assembly, dispatch_recorder
from torchscan.flops import OperatorFlopCounter
from torchscan.reports import validation


class _Nothing:
    """A context manager (and callable) that does nothing, standing in for a part."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.result = None  # a watch's result
        self.eager_entries = 0  # a compiled-code watch's count

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@contextlib.contextmanager
def _replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    previous = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, previous)


@contextlib.contextmanager
def _no_claims(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield


def _switches() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    """Each part of an analysis, as what switches it off for one call."""
    crawl_counter = dispatch_recorder._crawl_counter_class()
    return {
        "thread claim off": lambda: _replaced(flops_module, "ThreadWatch", _Nothing),
        "compiled watch off": lambda: _replaced(flops_module, "CompiledWatch", _Nothing),
        "model claims off": lambda: _replaced(assembly._claims, "claimed", _no_claims),
        "0.2 views off": lambda: _replaced(
            dispatch_recorder, "add_legacy_views", lambda section, root: None
        ),
        "operator bytes on": lambda: _replaced(crawl_counter, "_count_bytes", True),
        "GC pause off": lambda: _replaced(crawl_package, "collection_paused", _no_claims),
    }


def _functions(model: torch.nn.Module, x: torch.Tensor) -> dict[str, Callable[[], Any]]:
    def forward() -> None:
        with torch.no_grad():
            model(x)

    def crawl() -> None:
        torchscan.crawl_module(model, args=(x,))

    def with_switch(switch: Callable[[], contextlib.AbstractContextManager[None]]) -> Any:
        def call() -> None:
            with switch():
                crawl()

        return call

    def flops() -> None:
        with torch.no_grad():
            torchscan.measure_flops(lambda: model(x))

    def flops_without(name: str, value: Any, owner: Any = OperatorFlopCounter) -> Any:
        def call() -> None:
            with _replaced(owner, name, value):
                flops()

        return call

    functions: dict[str, Callable[[], Any]] = {"forward": forward, "crawl_module": crawl}
    for name, switch in _switches().items():
        functions[f"crawl_module, {name}"] = with_switch(switch)
    functions["measure_flops"] = flops
    functions["measure_flops, unwatched"] = flops_without("_watch_threads", False)
    functions["measure_flops, no operator bytes"] = flops_without("_count_bytes", False)
    functions["measure_flops, report unchecked"] = flops_without(
        "validate_report", lambda report, *args, **kwargs: None, validation
    )
    return functions


def run(repeats: int, only: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "repeats": repeats, "models": {}}
    for name, (model, x) in models().items():
        if name not in only:
            continue
        model.eval()
        pairs = _paired(_functions(model, x), repeats=repeats, warmup=2)
        rows: dict[str, Any] = {}
        for call, timings in pairs.items():
            base = "measure_flops" if call.startswith("measure_flops") else "crawl_module"
            rows[call] = {
                "ratio": statistics.median(spent / forward for forward, spent in timings),
                "ms": statistics.median(spent for _, spent in timings) * 1e3,
                "minus_full_ms": statistics.median(
                    (spent - full) * 1e3
                    for (_, spent), (_, full) in zip(timings, pairs[base], strict=True)
                ),
            }
        forwards = [forward for timings in pairs.values() for forward, _ in timings]
        results["models"][name] = {
            "forward_ms": statistics.median(forwards) * 1e3,
            "calls": rows,
        }
    return results


def table(results: dict[str, Any]) -> str:
    machine_info = results["machine"]
    lines = [
        f"Machine: {machine_info['cpu']}, {machine_info['nproc']} CPUs, torch "
        f"{machine_info['torch']} ({machine_info['torch_threads']} thread), commit "
        f"{machine_info['git_commit']}, load {machine_info['load_average_at_start']}, "
        f"{results['repeats']} rounds, {machine_info['date']}",
        "",
        "| model | call | ratio over the forward | ms | minus the full call (ms) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in results["models"].items():
        lines.append(f"| {name} | forward | 1 | {row['forward_ms']:.2f} | |")
        for call, values in row["calls"].items():
            lines.append(
                f"| {name} | {call} | {values['ratio']:.3f}x | {values['ms']:.2f} | "
                f"{values['minus_full_ms']:+.3f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="7 rounds")
    parser.add_argument("--only", action="append", default=None, help="a model (repeatable)")
    parser.add_argument("--json", default=None, help="also write every number here")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    only = arguments.only or ["ResNet-18", "MobileNetV2"]
    results = run(7 if arguments.quick else arguments.rounds, only)
    return finish(results, table(results), arguments.json)


if __name__ == "__main__":
    sys.exit(main())
