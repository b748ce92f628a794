"""Timing of a workload: the first call alone, warm-up, calibrated blocks, raw evidence kept.

Statistics come from the core (``torchscan._core.block_timing``); this module only measures.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .noise import NoiseRecord, NoiseSampler, NoiseSources

__all__ = [
    "TimingBudget",
    "TimingRun",
    "run_interleaved_timing",
    "run_timing",
    "synchronizer",
    "timed_call",
    "timer_overhead_s",
]


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
    """Raw evidence of one timing pass.

    ``noise`` holds the machine's noise readings at the start and end of the timed phase (for
    interleaved runs, the one phase that all of them share).
    ``block_starts_s`` holds each block's start in seconds since the start of this run's first
    block (so the first is 0.0), read from the clock that times the blocks; ``block_starts_s[i]``
    belongs to ``block_durations_s[i]``, and no block starts before the previous one ended.
    """

    first_call_s: float
    warmup_calls: int
    calls_per_block: int
    timer_overhead_s: float
    block_durations_s: list[float] = field(default_factory=list)
    block_starts_s: list[float] = field(default_factory=list)
    stopped_by_max_time: bool = False
    noise: NoiseRecord | None = None
    """What competed with the timed phase: readings at its start and end (see ``noise``)."""
    output_dtypes: list[Any] = field(default_factory=list)
    """The floating dtypes of the first call's output tensors (set by :func:`run_timing`)."""


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


def timed_call(workload: Callable[[], Any], sync: Callable[[], None]) -> tuple[float, Any]:
    """One call of ``workload`` timed alone, device work included: ``(seconds, output)``."""
    clock = time.perf_counter_ns
    sync()
    start = clock()
    output = workload()
    sync()
    return (clock() - start) * 1e-9, output


def _warm_up(
    workload: Callable[[], Any], sync: Callable[[], None], warmup_time_s: float
) -> tuple[int, float]:
    """At least one call, then as many as fit in ``warmup_time_s``: ``(calls, s per call)``."""
    clock = time.perf_counter_ns
    warmup_calls = 0
    warmup_start = clock()
    deadline = warmup_start + int(warmup_time_s * 1e9)
    while True:
        workload()
        warmup_calls += 1
        if clock() >= deadline:
            break
    sync()
    return warmup_calls, max((clock() - warmup_start) * 1e-9 / warmup_calls, 1e-9)


def calls_to_fill_block(per_call_s: float, block_target_s: float) -> int:
    """The calls that fill a block of ``block_target_s`` (at least one)."""
    return max(1, math.ceil(block_target_s / per_call_s))


def _timed_block(
    workload: Callable[[], Any], calls_per_block: int, sync: Callable[[], None]
) -> tuple[int, int]:
    """One block of ``calls_per_block`` calls, synchronised at its edges only.

    Returns ``(start, duration)`` in nanoseconds of ``time.perf_counter_ns``; the duration is at
    least 1.
    """
    clock = time.perf_counter_ns
    sync()
    block_start = clock()
    for _ in range(calls_per_block):
        workload()
    sync()
    return block_start, max(clock() - block_start, 1)


class BlockLog:
    """Records a run's blocks from ``perf_counter_ns`` readings: durations and starts.

    Starts count from the run's first block. Readings stay integers until converted to seconds,
    so that no start is put before the previous block's end.
    """

    def __init__(self, run: TimingRun) -> None:
        self.run = run
        self.origin_ns: int | None = None
        self.last_end_ns = 0

    def add(self, start_ns: int, duration_ns: int) -> None:
        """Record a block that started at ``start_ns`` and lasted ``duration_ns`` (at least 1)."""
        # A block read as 0 ns is recorded as 1 ns, so the next start can read earlier than that
        # recorded end: it is moved to the end, keeping the blocks one after another.
        start_ns = max(start_ns, self.last_end_ns)
        if self.origin_ns is None:
            self.origin_ns = start_ns
        self.last_end_ns = start_ns + duration_ns
        self.run.block_starts_s.append((start_ns - self.origin_ns) * 1e-9)
        self.run.block_durations_s.append(duration_ns * 1e-9)


def run_timing(
    workload: Callable[[], Any],
    device: Any,
    budget: TimingBudget,
    *,
    noise_sources: NoiseSources | None = None,
) -> TimingRun:
    """Time ``workload``: the first call alone, then warm-up, then calibrated blocks.

    Calls per block are chosen so that reading the timer costs less than
    ``budget.max_timer_overhead_ratio`` of a block, and so that at least ``min_blocks`` blocks fit
    in ``min_time_s``. Blocks continue until both the minimum time and the minimum block count
    are reached, or ``max_time_s`` has passed. Device work is synchronised at block edges only.
    The workload's own exception propagates unchanged. The machine's noise is read from
    ``noise_sources`` (the running kernel's files by default) at the start and end of the timed
    blocks.
    """
    sync = synchronizer(device)
    overhead_s = timer_overhead_s()
    first_call_s, output = timed_call(workload, sync)
    from .._values import floating_dtypes

    dtypes = floating_dtypes(output)
    del output  # not kept alive while the blocks run
    run = run_interleaved_timing(
        [workload],
        device,
        budget,
        first_calls_s=[first_call_s],
        overhead_s=overhead_s,
        noise_sources=noise_sources,
    )[0]
    run.output_dtypes = dtypes
    return run


def run_interleaved_timing(
    workloads: Sequence[Callable[[], Any]],
    device: Any,
    budget: TimingBudget,
    *,
    first_calls_s: Sequence[float],
    overhead_s: float | None = None,
    order_seed: int | None = None,
    until: Callable[[list[TimingRun]], bool] | None = None,
    noise_sources: NoiseSources | None = None,
) -> list[TimingRun]:
    """Time several workloads in rounds of one block each; return one ``TimingRun`` each.

    Each workload's first call was timed by the caller (``first_calls_s``). Each is warmed up for
    ``budget.warmup_time_s``; calls per block are calibrated as in :func:`run_timing` for each,
    and all workloads run the largest of these, so that their blocks differ only by the
    workloads' own speed. Then rounds run one block of every workload, and rounds come in pairs
    whose second round reverses the first's order (A B then B A, for two workloads): each
    workload goes first equally often, and slow drift of the machine weighs on all alike. With
    ``order_seed``, each pair of rounds starts in an order drawn at random from that seed (A B,
    B A or B A, A B), so that no periodic interference can keep hitting one workload. Pairs of
    rounds continue until every workload has ``min_blocks`` blocks, the rounds have lasted
    ``min_time_s`` (the whole interleaved phase) and ``until`` (when given) returns true for the
    runs so far, or until ``max_time_s`` has passed. Every workload gets the same number of
    blocks. Each run's ``block_starts_s`` count from that run's own first block, so each starts
    at 0.0; the blocks of the other workloads fall in the gaps between them. The machine's noise
    is read from ``noise_sources`` just before the first round and just after the last (never
    inside a block), and every run gets the same record. A workload's own exception propagates
    unchanged.
    """
    clock = time.perf_counter_ns
    sync = synchronizer(device)
    if overhead_s is None:
        overhead_s = timer_overhead_s()
    block_target_s = max(
        overhead_s / budget.max_timer_overhead_ratio,
        budget.min_time_s / (2 * budget.min_blocks * len(workloads)),
    )
    warm_ups = [_warm_up(workload, sync, budget.warmup_time_s) for workload in workloads]
    # One block size for all: blocks of different sizes meet a shared machine's time slicing
    # differently (a few percent on a busy machine), which would bias the comparison.
    calls_per_block = max(
        calls_to_fill_block(per_call_s, block_target_s) for _, per_call_s in warm_ups
    )
    runs = [
        TimingRun(
            first_call_s=max(first_call_s, overhead_s),
            warmup_calls=warmup_calls,
            calls_per_block=calls_per_block,
            timer_overhead_s=overhead_s,
        )
        for (warmup_calls, _), first_call_s in zip(warm_ups, first_calls_s, strict=True)
    ]
    forward = list(range(len(workloads)))
    backward = forward[::-1]
    draw = random.Random(order_seed) if order_seed is not None else None
    progress = _Progress(max(budget.min_time_s, max(first_calls_s) * budget.min_blocks))
    logs = [BlockLog(run) for run in runs]
    sampler = NoiseSampler(noise_sources)
    noise_start = sampler.snapshot()
    timing_start = clock()
    rounds = 0
    try:
        while True:
            flip = draw is not None and draw.random() < 0.5
            for order in (backward, forward) if flip else (forward, backward):
                for index in order:
                    logs[index].add(
                        *_timed_block(workloads[index], runs[index].calls_per_block, sync)
                    )
                rounds += 1
                if len(workloads) == 1:
                    break  # one workload: rounds need no pairing
            elapsed_s = (clock() - timing_start) * 1e-9
            progress.update(elapsed_s, rounds * len(workloads))
            enough = rounds >= budget.min_blocks
            if enough and elapsed_s >= budget.min_time_s and (until is None or until(runs)):
                break
            if elapsed_s >= budget.max_time_s:
                for run in runs:
                    run.stopped_by_max_time = not enough
                break
    finally:
        progress.close()
    record = NoiseRecord(noise_start, sampler.snapshot())
    for run in runs:
        run.noise = record
    return runs
