"""The machine and checkout a benchmark ran on: shared by the scripts of this folder."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
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
