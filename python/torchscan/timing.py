"""Timing of a workload: the first call alone, warm-up, calibrated blocks, raw evidence kept.

Statistics come from the core (``torchscan._core.block_timing``); this module only measures.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TimingBudget", "TimingRun", "run_timing", "synchronizer", "timer_overhead_s"]


@dataclass(frozen=True)
class TimingBudget:
    """How long to time: recorded in the report as ``settings``."""

    min_time_s: float = 1.0
    max_time_s: float = 10.0
    min_blocks: int = 20
    warmup_time_s: float = 0.1
    max_timer_overhead_ratio: float = 1e-4


@dataclass
class TimingRun:
    """Raw evidence of one timing pass."""

    first_call_s: float
    warmup_calls: int
    calls_per_block: int
    timer_overhead_s: float
    block_durations_s: list[float] = field(default_factory=list)
    stopped_by_max_time: bool = False


def synchronizer(device: Any) -> Callable[[], None]:
    """What waits for queued device work: a no-op on CPU, ``synchronize`` on CUDA and MPS."""
    import torch

    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def timer_overhead_s(samples: int = 2000) -> float:
    """The smallest interval between two consecutive timer reads, in seconds."""
    clock = time.perf_counter_ns
    best = math.inf
    for _ in range(samples):
        start = clock()
        end = clock()
        if end > start:
            best = min(best, end - start)
    return (best if math.isfinite(best) else 1.0) * 1e-9


class _Progress:
    """A one-line progress bar on an interactive stderr, for measurements longer than ~2 s."""

    def __init__(self, expected_s: float) -> None:
        stream = sys.stderr
        self.enabled = expected_s > 2.0 and bool(getattr(stream, "isatty", lambda: False)())
        self.expected_s = expected_s
        self.last = 0.0

    def update(self, elapsed_s: float, blocks: int) -> None:
        if not self.enabled or elapsed_s - self.last < 0.2:
            return
        self.last = elapsed_s
        share = min(elapsed_s / self.expected_s, 1.0)
        bar = "#" * int(share * 30)
        sys.stderr.write(f"\rtorchscan: timing [{bar:<30}] {blocks} blocks")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def run_timing(workload: Callable[[], Any], device: Any, budget: TimingBudget) -> TimingRun:
    """Time ``workload``: the first call alone, then warm-up, then calibrated blocks.

    Calls per block are chosen so that reading the timer costs less than
    ``budget.max_timer_overhead_ratio`` of a block, and so that at least ``min_blocks`` blocks fit
    in ``min_time_s``. Blocks continue until both the minimum time and the minimum block count
    are reached, or ``max_time_s`` has passed. Device work is synchronised at block edges only.
    The workload's own exception propagates unchanged.
    """
    clock = time.perf_counter_ns
    sync = synchronizer(device)
    overhead_s = timer_overhead_s()

    sync()
    start = clock()
    workload()
    sync()
    first_call_s = max((clock() - start) * 1e-9, overhead_s)

    # Warm-up: at least one call, then as many as fit in the warm-up time.
    warmup_calls = 0
    warmup_start = clock()
    deadline = warmup_start + int(budget.warmup_time_s * 1e9)
    while True:
        workload()
        warmup_calls += 1
        if clock() >= deadline:
            break
    sync()
    per_call_s = max((clock() - warmup_start) * 1e-9 / warmup_calls, 1e-9)

    block_target_s = max(
        overhead_s / budget.max_timer_overhead_ratio,
        budget.min_time_s / (2 * budget.min_blocks),
    )
    calls_per_block = max(1, math.ceil(block_target_s / per_call_s))
    run = TimingRun(
        first_call_s=first_call_s,
        warmup_calls=warmup_calls,
        calls_per_block=calls_per_block,
        timer_overhead_s=overhead_s,
    )
    progress = _Progress(max(budget.min_time_s, first_call_s * budget.min_blocks))
    timing_start = clock()
    try:
        while True:
            sync()
            block_start = clock()
            for _ in range(calls_per_block):
                workload()
            sync()
            duration_ns = clock() - block_start
            run.block_durations_s.append(max(duration_ns, 1) * 1e-9)
            elapsed_s = (clock() - timing_start) * 1e-9
            progress.update(elapsed_s, len(run.block_durations_s))
            enough = len(run.block_durations_s) >= budget.min_blocks
            if enough and elapsed_s >= budget.min_time_s:
                break
            if elapsed_s >= budget.max_time_s:
                run.stopped_by_max_time = not enough
                break
    finally:
        progress.close()
    return run
