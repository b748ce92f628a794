"""The profiler pass: a separate, instrumented run of a capped number of calls."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .reports import Diagnostic, ProfiledOperator, ProfilerPass

__all__ = ["PROFILER_METHOD", "PROFILER_SCOPE", "not_requested_profiler", "run_profiler"]

PROFILER_METHOD = "torch.profiler over a capped number of calls; top operators by self time"
PROFILER_SCOPE = "separate instrumented pass; times include instrumentation"
_TOP = 10


def not_requested_profiler() -> ProfilerPass:
    """The profiler section when the pass was not requested."""
    return {
        "status": "unavailable",
        "reason": "not requested",
        "method": PROFILER_METHOD,
        "scope": PROFILER_SCOPE,
        "calls": None,
        "top_operators": [],
    }


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 while the profiler starts and stops (its C++ side prints)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def run_profiler(
    workload: Callable[[], Any], device: Any, calls: int
) -> tuple[ProfilerPass, list[Diagnostic]]:
    """Profile ``calls`` calls of ``workload``; the workload's own exception propagates."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiler: Any = profile(activities=activities, record_shapes=False)
        try:
            with _quiet_stderr():
                profiler.__enter__()
        except Exception as error:  # the profiler itself failed: the pass is unavailable
            return _failed(f"the profiler could not start: {type(error).__name__}: {error}")
        try:
            for _ in range(calls):
                workload()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        finally:
            with _quiet_stderr():
                profiler.__exit__(None, None, None)
        events = profiler.key_averages()
    use_device = device.type == "cuda"
    rows: list[ProfiledOperator] = []
    for event in events:
        self_us = float(
            getattr(event, "self_device_time_total", 0.0)
            if use_device
            else getattr(event, "self_cpu_time_total", 0.0)
        )
        total_us = float(
            getattr(event, "device_time_total", 0.0)
            if use_device
            else getattr(event, "cpu_time_total", 0.0)
        )
        if event.count <= 0:
            continue
        rows.append(
            {
                "operator": str(event.key),
                "calls": int(event.count),
                "self_time_s": max(self_us, 0.0) * 1e-6,
                "total_time_s": max(total_us, 0.0) * 1e-6,
            }
        )
    rows.sort(key=lambda row: (-row["self_time_s"], row["operator"]))
    section: ProfilerPass = {
        "status": "complete",
        "reason": None,
        "method": PROFILER_METHOD,
        "scope": PROFILER_SCOPE,
        "calls": calls,
        "top_operators": rows[:_TOP],
    }
    return section, []


def _failed(message: str) -> tuple[ProfilerPass, list[Diagnostic]]:
    section: ProfilerPass = {
        "status": "unavailable",
        "reason": "profiler failed",
        "method": PROFILER_METHOD,
        "scope": PROFILER_SCOPE,
        "calls": None,
        "top_operators": [],
    }
    diagnostic: Diagnostic = {
        "code": "profiler_failed",
        "severity": "error",
        "metric": "profiler",
        "message": message,
    }
    return section, [diagnostic]
