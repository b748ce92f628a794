"""What the benchmark scripts of this folder share: interleaved timing, the machine, the output."""

from __future__ import annotations

import datetime as _dt
import gc
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()


def machine() -> dict[str, Any]:
    """CPU model, core count, versions, torch threads, git commit and load at the start."""
    import torch

    import torchscan

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit: str | None = None
    dirty: bool | None = None
    try:
        commit = _git("rev-parse", "--short", "HEAD") or None
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    except OSError:
        pass
    try:
        load: tuple[float, float, float] | None = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchscan": getattr(torchscan, "__version__", "?"),
        "torch_threads": torch.get_num_threads(),
        "git_commit": commit,
        "git_tracked_changes": dirty,
        "load_average_at_start": load,
    }


def time_once(fn: Callable[[], Any], collect: bool = False) -> float:
    """Seconds one call of ``fn`` takes; with ``collect``, after a full garbage collection."""
    if collect:
        gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    fns: dict[str, Callable[[], Any]], repeats: int, warmup: int, collect: bool = False
) -> dict[str, list[float]]:
    """Run every function once per round, round after round; return the timings in seconds.

    With ``collect``, a full garbage collection runs before each timed call, so that no call
    pays for the garbage of the one before.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(time_once(fn, collect))
    return times


def finish(results: dict[str, Any], table: str, json_path: str | None) -> int:
    """Print the table (and the error of a broken run), write the JSON if asked; exit code 0."""
    print(table)
    if "error" in results:
        print(f"\nERROR during the run: {results['error']}")
    if json_path:
        Path(json_path).write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nwrote {json_path}")
    return 0
