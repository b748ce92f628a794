#!/usr/bin/env python
"""Measure torchscan's analysis overhead against its performance targets.

Every target is a *ratio* measured inside one run, side by side, with torch on one thread, so the
numbers hold across machines of different speed. This is a measurement, not a test: it prints a
Markdown table with PASS/FAIL per target and always exits 0.

Targets
  (a) ``crawl_module(resnet18, args=(x,))`` at 1x3x224x224 costs at most 1.15x a plain
      ``torch.no_grad()`` eval forward (medians of interleaved runs after warm-up).
  (b) ``crawl_module`` on a 2,000-module ``nn.Sequential`` (Linear(16,16)/ReLU alternating) takes
      at most 11x the 200-module stack (medians, full mode; structure mode reported too).
  (c) ``import torchscan`` adds at most 100 ms to ``import torch`` (fresh subprocesses,
      interleaved, medians).
  (d) information only: which peer tools are importable here (nothing is installed or run).
  (e) ``crawl_module`` on a 10,000-module ``nn.Sequential`` (the stack of (b)) costs at most
      10 microseconds per module over a plain ``torch.no_grad()`` forward of it (medians of
      interleaved runs after warm-up; full mode). Two floors are timed beside it: a dispatch
      mode that only calls each operator, and creating the report's layers with nothing computed.

Usage
  python benches/bench_analysis.py            # full run (~1 minute on a 2-core VM)
  python benches/bench_analysis.py --quick    # fewer repetitions, a smoke run
  python benches/bench_analysis.py --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, interleaved, machine, time_once  # noqa: E402

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Torch is imported at module level only after the path set-up; the import benchmark (c) uses
# fresh subprocesses, so this in-process import does not affect it.
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import torchscan  # noqa: E402

LIMIT_RESNET = 1.15
LIMIT_DEEP = 11.0
LIMIT_IMPORT_MS = 100.0
LIMIT_PER_MODULE_US = 10.0
PEER_MODULES = ("torchinfo", "torchsummary", "ptflops", "thop", "fvcore", "calflops", "deepspeed")


# --------------------------------------------------------------------------- helpers


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _verdict(ratio: float, limit: float) -> str:
    return "PASS" if ratio <= limit else "FAIL"


def _resnet18() -> nn.Module:
    from tests.models import ResNet18  # torchvision's resnet18 layout, written by hand

    return ResNet18()


def _deep_stack(n_modules: int) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Linear(16, 16) if i % 2 == 0 else nn.ReLU() for i in range(n_modules)
    ]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- (a) ResNet-18


def bench_resnet(repeats: int, warmup: int) -> dict[str, Any]:
    torch.manual_seed(0)
    model = _resnet18().eval()
    x = torch.randn(1, 3, 224, 224)

    def forward() -> None:
        with torch.no_grad():
            model(x)

    # The very first crawl pays for lazily imported analysis code and tables: report it apart.
    cold = time_once(lambda: torchscan.crawl_module(model, args=(x,)), collect=True)

    times = interleaved(
        {
            "forward": forward,
            "crawl_full": lambda: torchscan.crawl_module(model, args=(x,)),
            "crawl_structure": lambda: torchscan.crawl_module(model, args=(x,), mode="structure"),
        },
        repeats=repeats,
        warmup=warmup,
        collect=True,
    )
    med = {k: statistics.median(v) for k, v in times.items()}
    forward_deciles = statistics.quantiles(times["forward"], n=10)
    return {
        "repeats": repeats,
        "warmup": warmup,
        "first_crawl_full_ms": _ms(cold),
        # For information: each crawl against the forward of its own round, which a machine
        # whose speed drifts during the run affects far less than a ratio of medians; and how
        # much the forward itself drifted (90th over 10th percentile).
        "median_round_ratio_full": statistics.median(
            full / forward
            for full, forward in zip(times["crawl_full"], times["forward"], strict=True)
        ),
        "forward_p90_over_p10": forward_deciles[-1] / forward_deciles[0],
        "median_ms": {k: _ms(v) for k, v in med.items()},
        "min_ms": {k: _ms(min(v)) for k, v in times.items()},
        "ratio_full": med["crawl_full"] / med["forward"],
        "ratio_structure": med["crawl_structure"] / med["forward"],
        "ratio_of_minima_full": min(times["crawl_full"]) / min(times["forward"]),
        "ratio_of_minima_structure": min(times["crawl_structure"]) / min(times["forward"]),
        "limit": LIMIT_RESNET,
    }


# --------------------------------------------------------------------------- (b) deep stack


def bench_deep(repeats: int, warmup: int, sizes: tuple[int, int] = (200, 2000)) -> dict[str, Any]:
    small_n, big_n = sizes
    torch.manual_seed(0)
    small = _deep_stack(small_n).eval()
    big = _deep_stack(big_n).eval()
    x = torch.randn(1, 16)
    fns = {}
    for mode in ("full", "structure"):
        fns[f"{small_n}_{mode}"] = lambda m=mode: torchscan.crawl_module(small, args=(x,), mode=m)
        fns[f"{big_n}_{mode}"] = lambda m=mode: torchscan.crawl_module(big, args=(x,), mode=m)

    def fwd(model: nn.Module) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                model(x)

        return run

    fns[f"{small_n}_forward"] = fwd(small)
    fns[f"{big_n}_forward"] = fwd(big)
    times = interleaved(fns, repeats=repeats, warmup=warmup, collect=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "repeats": repeats,
        "warmup": warmup,
        "sizes": [small_n, big_n],
        "median_ms": {k: _ms(v) for k, v in med.items()},
        "min_ms": {k: _ms(min(v)) for k, v in times.items()},
        "ratio_full": med[f"{big_n}_full"] / med[f"{small_n}_full"],
        "ratio_structure": med[f"{big_n}_structure"] / med[f"{small_n}_structure"],
        "ratio_of_minima_full": min(times[f"{big_n}_full"]) / min(times[f"{small_n}_full"]),
        "ratio_of_minima_structure": (
            min(times[f"{big_n}_structure"]) / min(times[f"{small_n}_structure"])
        ),
        "ratio_forward": med[f"{big_n}_forward"] / med[f"{small_n}_forward"],
        "per_module_us": {
            f"{n}_{mode}": med[f"{n}_{mode}"] / n * 1e6
            for n in (small_n, big_n)
            for mode in ("full", "structure")
        },
        "limit": LIMIT_DEEP,
    }


# --------------------------------------------------------------------------- (e) per module


class _BareDispatch(TorchDispatchMode):
    """A dispatch mode that only calls each operator: what any dispatch-based count pays."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def layers_rebuilt(model: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    """A call that creates the crawl's layer dictionaries of ``model(x)`` with nothing computed.

    ``marshal.loads`` of the finished report's layers, with the garbage collector paused as the
    crawl pauses it: the fastest way CPython has to create those dictionaries.
    """
    import gc
    import marshal

    layers = marshal.dumps(torchscan.crawl_module(model, args=(x,))["layers"])

    def rebuild() -> None:
        gc.disable()
        try:
            marshal.loads(layers)
        finally:
            gc.enable()

    return rebuild


def bench_per_module(repeats: int, warmup: int, size: int = 10_000) -> dict[str, Any]:
    """What the analysis adds per module of a very deep model: (crawl - forward) / modules.

    Two floors are timed in the same rounds, for information: the forward under a dispatch mode
    that only calls each operator (what counting operators by dispatch costs before any
    counting), and ``marshal.loads`` of the finished report's layers (the fastest way CPython
    has to create those dictionaries, with nothing computed), with the garbage collector paused
    as the crawl pauses it.
    """
    torch.manual_seed(0)
    model = _deep_stack(size).eval()
    x = torch.randn(1, 16)

    def forward() -> None:
        with torch.no_grad():
            model(x)

    def bare_dispatch() -> None:
        with torch.no_grad(), _BareDispatch():
            model(x)

    fns = {
        "forward": forward,
        "crawl_full": lambda: torchscan.crawl_module(model, args=(x,)),
        "bare_dispatch": bare_dispatch,
        "layers_rebuilt": layers_rebuilt(model, x),
    }
    times = interleaved(fns, repeats=repeats, warmup=warmup, collect=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    rounds = [c - f for c, f in zip(times["crawl_full"], times["forward"], strict=True)]
    dispatch_floor = (med["bare_dispatch"] - med["forward"]) / size * 1e6
    layers_floor = med["layers_rebuilt"] / size * 1e6
    return {
        "repeats": repeats,
        "warmup": warmup,
        "modules": size,
        "median_ms": {k: _ms(v) for k, v in med.items()},
        "over_forward_us_per_module": (med["crawl_full"] - med["forward"]) / size * 1e6,
        "median_round_over_forward_us_per_module": statistics.median(rounds) / size * 1e6,
        "floor_dispatch_us_per_module": dispatch_floor,
        "floor_layers_us_per_module": layers_floor,
        "floor_us_per_module": dispatch_floor + layers_floor,
        "limit_us": LIMIT_PER_MODULE_US,
    }


# --------------------------------------------------------------------------- (c) import time

# Run in a fresh interpreter: time ``import torchscan`` right after ``import torch`` (what the
# package adds), then the first analysis, which in a fresh process also pays for code torch itself
# imports lazily the first time a dispatch mode runs (``torch._dynamo``).
_DELTA_CODE = r"""
import json, sys, time
import torch
from torch import nn
t0 = time.perf_counter()
import torchscan
t1 = time.perf_counter()
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
t2 = time.perf_counter()
torchscan.crawl_module(model, (3, 8, 8))
t3 = time.perf_counter()
print(json.dumps({"import_torchscan": t1 - t0, "first_crawl": t3 - t2}))
"""

# Torch's own operator counter, first use in a fresh interpreter: the same lazy torch imports.
_PEER_CODE = r"""
import json, time
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
x = torch.randn(1, 3, 8, 8)
t0 = time.perf_counter()
with torch.no_grad(), FlopCounterMode(display=False):
    model(x)
print(json.dumps({"first_flopcountermode": time.perf_counter() - t0}))
"""


def _run_python(code: str, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env=env,
        cwd=str(REPO / "benches"),
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, proc.stdout


def bench_import(repeats: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("PYTHONPATH", None)  # torchscan is installed (editable) in this interpreter
    wall_codes = {"torch": "import torch", "torch+torchscan": "import torch, torchscan"}
    # one warm-up each so the page cache holds every file involved
    for code in (*wall_codes.values(), _DELTA_CODE):
        _run_python(code, env)
    wall: dict[str, list[float]] = {k: [] for k in wall_codes}
    delta: list[float] = []
    first_crawl: list[float] = []
    first_peer: list[float] = []
    for _ in range(repeats):
        for name, code in wall_codes.items():
            wall[name].append(_run_python(code, env)[0])
        out = json.loads(_run_python(_DELTA_CODE, env)[1])
        delta.append(out["import_torchscan"])
        first_crawl.append(out["first_crawl"])
        first_peer.append(json.loads(_run_python(_PEER_CODE, env)[1])["first_flopcountermode"])
    med = {k: statistics.median(v) for k, v in wall.items()}
    return {
        "repeats": repeats,
        "wall_median_ms": {k: _ms(v) for k, v in med.items()},
        "wall_min_ms": {k: _ms(min(v)) for k, v in wall.items()},
        "wall_stdev_ms": {k: _ms(statistics.stdev(v)) for k, v in wall.items() if len(v) > 1},
        "wall_added_ms": _ms(med["torch+torchscan"] - med["torch"]),
        "wall_added_min_ms": _ms(min(wall["torch+torchscan"]) - min(wall["torch"])),
        "import_after_torch_median_ms": _ms(statistics.median(delta)),
        "import_after_torch_max_ms": _ms(max(delta)),
        "first_crawl_fresh_process_median_ms": _ms(statistics.median(first_crawl)),
        "first_flopcountermode_fresh_process_median_ms": _ms(statistics.median(first_peer)),
        "limit_ms": LIMIT_IMPORT_MS,
    }


# --------------------------------------------------------------------------- (d) peers


def peers_info() -> dict[str, Any]:
    run_sh = REPO.parent / "shared" / "peers" / "run.sh"
    return {
        "peer_modules_importable": {
            name: importlib.util.find_spec(name) is not None for name in PEER_MODULES
        },
        "peers_run_sh": str(run_sh) if run_sh.exists() else None,
    }


# --------------------------------------------------------------------------- report


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"torchscan analysis benchmark — {m['date']}{' (quick)' if results['quick'] else ''}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs; Python {m['python']}, torch {m['torch']} "
        f"({m['torch_threads']} thread), torchscan {m['torchscan']}, commit {m['git_commit']}"
        f"{' + uncommitted changes' if m['git_tracked_changes'] else ''}",
        "",
        "| Target | Measurement | Value | Limit | Result |",
        "|---|---|---|---|---|",
    ]
    a = results.get("resnet")
    if a:
        md = a["median_ms"]
        lines += [
            f"| (a) ResNet-18 crawl vs forward | forward median ({a['repeats']} runs) "
            f"| {md['forward']:.1f} ms | | |",
            f"| | crawl full median | {md['crawl_full']:.1f} ms | | |",
            f"| | **crawl full / forward** | **{a['ratio_full']:.2f}x** "
            f"(of minima {a['ratio_of_minima_full']:.2f}x) "
            f"| ≤ {a['limit']:.2f}x | **{_verdict(a['ratio_full'], a['limit'])}** |",
            f"| | median of the rounds' crawl full / forward (each against its own round's "
            f"forward) | {a['median_round_ratio_full']:.2f}x | | info |",
            f"| | forward 90th / 10th percentile (the machine's drift during the run) "
            f"| {a['forward_p90_over_p10']:.2f} | | info |",
            f"| | crawl structure median | {md['crawl_structure']:.1f} ms | | |",
            f"| | crawl structure / forward | {a['ratio_structure']:.2f}x "
            f"(of minima {a['ratio_of_minima_structure']:.2f}x) "
            f"| (info; ≤ {a['limit']:.2f}x) "
            f"| {_verdict(a['ratio_structure'], a['limit'])} (info) |",
            f"| | first (cold) crawl full, in-process "
            f"| {a['first_crawl_full_ms']:.0f} ms | | info |",
        ]
    b = results.get("deep")
    if b:
        s, g = b["sizes"]
        md = b["median_ms"]
        pm = b["per_module_us"]
        lines += [
            f"| (b) deep Sequential scaling | crawl full, {s} modules (median of {b['repeats']}) "
            f"| {md[f'{s}_full']:.1f} ms ({pm[f'{s}_full']:.0f} µs/module) | | |",
            f"| | crawl full, {g} modules | {md[f'{g}_full']:.1f} ms "
            f"({pm[f'{g}_full']:.0f} µs/module) | | |",
            f"| | **full: {g} / {s}** | **{b['ratio_full']:.2f}x** "
            f"(of minima {b['ratio_of_minima_full']:.2f}x) | ≤ {b['limit']:.0f}x "
            f"| **{_verdict(b['ratio_full'], b['limit'])}** |",
            f"| | crawl structure, {s} / {g} modules | {md[f'{s}_structure']:.1f} ms / "
            f"{md[f'{g}_structure']:.1f} ms | | |",
            f"| | structure: {g} / {s} | {b['ratio_structure']:.2f}x "
            f"(of minima {b['ratio_of_minima_structure']:.2f}x) | (info; ≤ {b['limit']:.0f}x) "
            f"| {_verdict(b['ratio_structure'], b['limit'])} (info) |",
            f"| | plain forward {s} / {g} modules | {md[f'{s}_forward']:.2f} ms / "
            f"{md[f'{g}_forward']:.2f} ms ({b['ratio_forward']:.2f}x) | | info |",
        ]
    c = results.get("import")
    if c:
        wm = c["wall_median_ms"]
        sd = c.get("wall_stdev_ms", {})
        added = c["import_after_torch_median_ms"]
        lines += [
            f'| (c) import overhead | `python -c "import torch"` wall (median of '
            f"{c['repeats']} fresh subprocesses, interleaved) | {wm['torch']:.0f} ms "
            f"(sd {sd.get('torch', 0):.0f} ms) | | |",
            f'| | `python -c "import torch, torchscan"` wall | {wm["torch+torchscan"]:.0f} ms '
            f"(sd {sd.get('torch+torchscan', 0):.0f} ms) | | |",
            f"| | difference of the wall medians (noisy: sd above) | {c['wall_added_ms']:.0f} ms "
            f"(of minima: {c['wall_added_min_ms']:.0f} ms) | ≤ {c['limit_ms']:.0f} ms "
            f"| {_verdict(c['wall_added_ms'], c['limit_ms'])} (info) |",
            f"| | **`import torchscan` timed inside a fresh process right after `import torch`** "
            f"(median; max {c['import_after_torch_max_ms']:.0f} ms) | **{added:.0f} ms** "
            f"| ≤ {c['limit_ms']:.0f} ms | **{_verdict(added, c['limit_ms'])}** |",
            f"| | first `crawl_module` (tiny CNN) in a fresh process, after import "
            f"| {c['first_crawl_fresh_process_median_ms']:.0f} ms | | info |",
            f"| | for comparison: first `torch.utils.flop_counter.FlopCounterMode` forward, "
            f"fresh process | {c['first_flopcountermode_fresh_process_median_ms']:.0f} ms "
            "| | info |",
        ]
    d = results.get("peers")
    if d:
        have = [k for k, v in d["peer_modules_importable"].items() if v]
        lines.append(
            f"| (d) peers | importable here: {', '.join(have) if have else 'none'} "
            f"| — | | info (peers/run.sh {'present, not run' if d['peers_run_sh'] else 'absent'}) |"
        )
    e = results.get("per_module")
    if e:
        md = e["median_ms"]
        over = e["over_forward_us_per_module"]
        lines += [
            f"| (e) per-module overhead | forward / crawl full, {e['modules']:,} modules "
            f"(medians of {e['repeats']}) | {md['forward']:.1f} ms / {md['crawl_full']:.1f} ms "
            "| | |",
            f"| | **(crawl - forward) / modules** | **{over:.2f} µs** "
            f"(rounds' own: {e['median_round_over_forward_us_per_module']:.2f} µs) "
            f"| ≤ {e['limit_us']:.0f} µs | **{_verdict(over, e['limit_us'])}** |",
            f"| | floor: a dispatch mode that only calls each operator, over the forward "
            f"| {e['floor_dispatch_us_per_module']:.2f} µs | | info |",
            f"| | floor: `marshal.loads` of the report's layers (creating them, nothing computed) "
            f"| {e['floor_layers_us_per_module']:.2f} µs | | info |",
            f"| | floor: the two together | {e['floor_us_per_module']:.2f} µs "
            f"| ≤ {e['limit_us']:.0f} µs | {_verdict(e['floor_us_per_module'], e['limit_us'])} "
            "(info) |",
        ]
    lines.append("")
    lines.append(f"Total benchmark wall time: {results['wall_s']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument(
        "--only",
        choices=("resnet", "deep", "import", "peers", "per_module"),
        action="append",
        help="run only these parts (repeatable)",
    )
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    parts = set(args.only or ("resnet", "deep", "import", "peers", "per_module"))
    q = args.quick
    started = time.perf_counter()
    results: dict[str, Any] = {"quick": q, "machine": machine()}
    try:
        if "resnet" in parts:
            results["resnet"] = bench_resnet(repeats=3 if q else 51, warmup=1 if q else 3)
        if "deep" in parts:
            results["deep"] = bench_deep(repeats=3 if q else 15, warmup=1 if q else 3)
        if "import" in parts:
            results["import"] = bench_import(repeats=3 if q else 11)
        if "peers" in parts:
            results["peers"] = peers_info()
        if "per_module" in parts:
            results["per_module"] = bench_per_module(repeats=3 if q else 11, warmup=1 if q else 2)
    except Exception as exc:  # a measurement: report what broke, still exit 0
        results["error"] = f"{type(exc).__name__}: {exc}"
    results["wall_s"] = time.perf_counter() - started

    return finish(results, render(results), args.json)


if __name__ == "__main__":
    sys.exit(main())
