"""The profiler pass: a separate, instrumented run of a capped number of calls.

The pass stays within a time budget (``max_time_s`` of ``measure_workload``): after each call
it estimates the next one as the mean of the calls so far and stops before a call that would end
past the budget, so that it runs fewer than the requested calls on a slow workload; it always
runs at least one. The calls it ran are ``calls``, those requested ``requested_calls``, and a
``profiler_failed`` warning says how many fitted.
"""

from __future__ import annotations

import contextlib
import os
import time
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
    workload: Callable[[], Any],
    device: Any,
    calls: int,
    max_time_s: float | None = None,
    budget: str | None = None,
) -> tuple[ProfilerPass, list[Diagnostic]]:
    """Profile up to ``calls`` calls of ``workload`` within ``max_time_s`` seconds of calls.

    Before each call after the first, the pass stops when the calls so far plus one more of
    their mean duration would pass ``max_time_s`` (``None``: no budget); on CUDA the first call
    is synchronized so that its duration includes the device's work. ``budget`` names the
    budget in the diagnostic (default ``max_time_s=<max_time_s> s``; an experiment gives each side
    half of its ``max_time_s``).
    The workload's own exception propagates.
    """
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
            ran, elapsed_s = _profiled_calls(workload, device, calls, max_time_s)
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
        "calls": ran,
        "requested_calls": calls,
        "top_operators": rows[:_TOP],
    }
    if ran == calls:
        return section, []
    diagnostic: Diagnostic = {
        "code": "profiler_failed",
        "severity": "warning",
        "metric": "profiler",
        "message": (
            f"{ran} of {calls} profiler calls fit in "
            f"{budget if budget is not None else f'max_time_s={max_time_s:g} s'} (the calls took "
            f"{elapsed_s:.3g} s, {elapsed_s / ran:.3g} s each, and the next would have passed "
            f"it); the profile covers {ran} calls: raise max_time_s (--max-time) or lower "
            "profiler_calls (--profiler-calls) to profile every requested call"
        ),
    }
    return section, [diagnostic]


def _profiled_calls(
    workload: Callable[[], Any], device: Any, calls: int, max_time_s: float | None
) -> tuple[int, float]:
    """Run up to ``calls`` calls within ``max_time_s``; return the calls run and their seconds."""
    import torch

    cuda = device.type == "cuda"
    start = time.perf_counter()
    ran = 0
    while True:
        workload()
        ran += 1
        if cuda and ran == 1:
            torch.cuda.synchronize(device)
        elapsed_s = time.perf_counter() - start
        if ran >= calls:
            break
        if max_time_s is not None and elapsed_s + elapsed_s / ran > max_time_s:
            break
    if cuda:
        torch.cuda.synchronize(device)
        elapsed_s = time.perf_counter() - start
    return ran, elapsed_s


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
