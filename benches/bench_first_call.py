#!/usr/bin/env python
"""The first analysis of a process: its cost over the second, and the cost of ``import torchscan``.

Each round starts fresh Python processes, one per function. A process imports torch, then
torchscan (each timed), builds one ``nn.Linear(8, 8)`` and calls the function twice, timing
both calls: ``crawl_module(model, (8,))``, ``summary(model, (8,))`` (printing into a buffer) and
``measure_flops(lambda: model(x))``. It also says whether PyTorch's compiler (``torch._dynamo``)
was loaded by then. Goals: the first call costs at most 0.2 s more than the second, and
``import torchscan`` after ``import torch`` takes at most 50 ms. Medians over the rounds; torch
runs on one thread. A measurement, not a test: it prints a Markdown table and always exits 0.

Usage
  python benches/bench_first_call.py            # 7 rounds
  python benches/bench_first_call.py --quick    # 3 rounds
  python benches/bench_first_call.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, machine

FUNCTIONS = ("crawl_module", "summary", "measure_flops")
FIRST_CALL_LIMIT_S = 0.2
IMPORT_LIMIT_S = 0.05

CHILD = """
import contextlib, io, json, sys, time
start = time.perf_counter()
import torch
after_torch = time.perf_counter()
import torchscan
after_torchscan = time.perf_counter()
torch.set_num_threads(1)
model = torch.nn.Linear(8, 8)
x = torch.randn(1, 8)
name = sys.argv[1]
def call():
    if name == "measure_flops":
        return torchscan.measure_flops(lambda: model(x))
    if name == "summary":
        with contextlib.redirect_stdout(io.StringIO()):
            return torchscan.summary(model, (8,))
    return torchscan.crawl_module(model, (8,))
times = []
for _ in range(2):
    begin = time.perf_counter()
    call()
    times.append(time.perf_counter() - begin)
print(json.dumps({
    "import_torch_s": after_torch - start,
    "import_torchscan_s": after_torchscan - after_torch,
    "first_s": times[0],
    "second_s": times[1],
    "dynamo_loaded": "torch._dynamo" in sys.modules,
}))
"""


def _child(name: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": machine(),
        "first_call_limit_s": FIRST_CALL_LIMIT_S,
        "import_limit_s": IMPORT_LIMIT_S,
        "functions": {},
    }
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in FUNCTIONS}
    _child(FUNCTIONS[0])  # warm the file cache
    for _ in range(rounds):
        for name in FUNCTIONS:
            samples[name].append(_child(name))
    for name, rows in samples.items():
        results["functions"][name] = {
            key: statistics.median(row[key] for row in rows)
            for key in ("import_torch_s", "import_torchscan_s", "first_s", "second_s")
        } | {
            "extra_s": statistics.median(row["first_s"] - row["second_s"] for row in rows),
            "dynamo_loaded": any(row["dynamo_loaded"] for row in rows),
            "rounds": len(rows),
        }
    return results


def render(results: dict[str, Any]) -> str:
    lines = [
        "| function | import torch (ms) | import torchscan (ms) | first call (ms) | "
        "second call (ms) | first - second (ms) | Dynamo loaded | goal |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in results["functions"].items():
        ok = (
            row["extra_s"] <= results["first_call_limit_s"]
            and row["import_torchscan_s"] <= results["import_limit_s"]
        )
        lines.append(
            f"| `{name}` | {row['import_torch_s'] * 1e3:.0f} | "
            f"{row['import_torchscan_s'] * 1e3:.1f} | {row['first_s'] * 1e3:.1f} | "
            f"{row['second_s'] * 1e3:.2f} | {row['extra_s'] * 1e3:.1f} | "
            f"{'yes' if row['dynamo_loaded'] else 'no'} | {'PASS' if ok else 'FAIL'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    results = run(3 if args.quick else 7)
    return finish(results, render(results), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
