"""Measurement across the ranks of a ``torch.distributed`` job: barriers, agreed decisions, gather.

Every decision that sets how many times the workload runs (warm-up calls, calls per block, the
number of blocks) is agreed by all ranks through one small all-reduce, so that block *i* times
the same calls on every rank, and a workload that issues collectives of its own (DDP, FSDP)
never waits for a rank that stopped calling it. The all-reduce before each block is the
barrier: its wait is recorded per block, outside the timed interval.

Every exchange waits at most ``rank_timeout_s`` seconds: a rank that died, hung or stopped
calling ``measure_workload`` gives the others a :class:`~torchscan.DistributedMeasurementError`
naming the phase, never a hang.
"""

from __future__ import annotations

import datetime
import math
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DistributedMeasurementError, InvalidArgumentError
from ..reports import DistributedContext
from .noise import NoiseRecord, NoiseSampler, NoiseSources
from .timing import (
    BlockLog,
    TimingBudget,
    TimingRun,
    calls_to_fill_block,
    synchronizer,
    timed_call,
    timer_overhead_s,
)

__all__ = ["RankJob", "detect_job", "rank_process_rss_peak", "run_aligned_timing"]

_ENV_NEEDED = ("MASTER_ADDR", "MASTER_PORT")


def _env_int(name: str) -> int | None:
    text = os.environ.get(name)
    if text is None or text.strip() == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(
            f"the environment variable {name}={text!r} is not a whole number; torchrun sets it "
            "for every rank"
        ) from None
    if value < 0:
        raise InvalidArgumentError(f"the environment variable {name}={value} is negative")
    return value


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


@dataclass
class RankJob:
    """A process's place in a distributed job, and the exchanges of one measurement."""

    rank: int
    local_rank: int
    world_size: int
    backend: str
    host: str
    created: bool
    timeout_s: float
    tensor_device: Any
    exchanges: int = 0
    phase: str = "set-up"
    measurement_id: str = ""

    def context(self) -> DistributedContext:
        """The report's ``context.distributed``."""
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "backend": self.backend,
            "host": self.host,
            "process_group": "created" if self.created else "existing",
            "measurement_id": self.measurement_id,
        }

    def describe(self) -> str:
        """``rank R of N``, as messages name this rank."""
        return f"rank {self.rank} of {self.world_size}"

    def _lost(self, error: BaseException, what: str) -> DistributedMeasurementError:
        text = _first_line(error)
        if "timed out" in text.lower() or "timeout" in text.lower():
            reason = (
                f"{self.describe()} waited {self.timeout_s:g} s (rank_timeout_s) at {what} "
                f"({self.phase}) and not every rank arrived: a rank died, hung or stopped "
                "calling measure_workload"
            )
        else:
            reason = (
                f"{self.describe()} lost the other ranks at {what} ({self.phase}): a rank died "
                f"or left the job ({text})"
            )
        return DistributedMeasurementError(reason, self.phase)

    def _wait(self, work: Any, what: str) -> None:
        try:
            work.wait(timeout=datetime.timedelta(seconds=self.timeout_s))
        except Exception as error:  # the backends raise RuntimeError or DistBackendError
            raise self._lost(error, what) from error

    def exchange(self, values: list[float]) -> tuple[list[float], float]:
        """Every rank's ``values``, reduced by maximum, and the seconds this rank waited.

        The exchange is a barrier: it returns once every rank has sent its values.
        """
        import torch
        import torch.distributed as dist

        tensor = torch.tensor(values, dtype=torch.float64, device=self.tensor_device)
        clock = time.perf_counter_ns
        start = clock()
        try:
            work = dist.all_reduce(tensor, op=dist.ReduceOp.MAX, async_op=True)
        except Exception as error:
            raise self._lost(error, "a barrier") from error
        self._wait(work, "a barrier")
        reduced = [float(value) for value in tensor.tolist()]  # waits for the device too
        waited = (clock() - start) * 1e-9
        self.exchanges += 1
        return reduced, waited

    def barrier(self) -> float:
        """Wait for every rank; the seconds this rank waited."""
        return self.exchange([0.0])[1]

    def sequence_number(self) -> int | None:
        """The collectives issued so far on every process group this rank belongs to.

        ``None`` when a group does not count them (not every backend does): the caller then
        assumes the workload synchronises the ranks.
        """
        import torch.distributed as dist

        try:
            groups = list(dist.distributed_c10d._world.pg_map)
            if not groups:
                groups = [dist.distributed_c10d._get_default_group()]
            total = 0
            for group in groups:
                # Only the groups this rank belongs to are in the map.
                total += int(group._get_sequence_number_for_group())  # type: ignore[attr-defined]
            return total
        except Exception:  # not every backend counts its collectives
            return None

    def all_gather_text(self, text: str) -> list[str]:
        """Every rank's ``text``, by rank."""
        import torch
        import torch.distributed as dist

        data = text.encode("utf-8")
        (longest,), _ = self.exchange([float(len(data))])
        size = int(longest)
        buffer = torch.zeros(size + 8, dtype=torch.uint8)
        buffer[:8] = torch.tensor(list(len(data).to_bytes(8, "little")), dtype=torch.uint8)
        if data:
            buffer[8 : 8 + len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        buffer = buffer.to(self.tensor_device)
        gathered = [torch.empty_like(buffer) for _ in range(self.world_size)]
        try:
            work = dist.all_gather(gathered, buffer, async_op=True)
        except Exception as error:
            raise self._lost(error, "the gather of the reports") from error
        self._wait(work, "the gather of the reports")
        self.exchanges += 1
        texts = []
        for tensor in gathered:
            raw = bytes(tensor.cpu().tolist())
            length = int.from_bytes(raw[:8], "little")
            texts.append(raw[8 : 8 + length].decode("utf-8"))
        return texts

    def agree(self, settings: dict[str, Any]) -> None:
        """Check that every rank measures with the same ``settings`` (JSON-serializable).

        Ranks that ran different passes or budgets would call the workload a different number
        of times, and a workload with collectives would wait for ever: every rank raises the
        same :class:`~torchscan.InvalidArgumentError`, naming the first setting that differs.
        """
        import json
        import uuid

        # Rank 0's id names this measurement in every rank's report, so that reports of two
        # measurements are never merged as one.
        proposal = {"id": uuid.uuid4().hex, "settings": settings}
        texts = self.all_gather_text(json.dumps(proposal, sort_keys=True, default=str))
        first = json.loads(texts[0])
        self.measurement_id = str(first["id"])
        mine = first["settings"]
        for rank, text in enumerate(texts[1:], start=1):
            theirs = json.loads(text)["settings"]
            for name in sorted(set(mine) | set(theirs)):
                if mine.get(name) != theirs.get(name):
                    raise InvalidArgumentError(
                        f"every rank must call measure_workload with the same arguments: rank "
                        f"0 passed {name}={mine.get(name)!r} and rank {rank} "
                        f"{name}={theirs.get(name)!r}"
                    )

    def local_peer_pids(self) -> list[int]:
        """The process ids of the job's other ranks that share this host's process namespace.

        Ranks are matched by the kernel's boot id and the pid namespace, so that a rank in
        another container (its own pid namespace) or on another machine is never read by pid.
        """
        key = _process_namespace()
        texts = self.all_gather_text(f"{key}\n{os.getpid()}")
        pids = []
        for rank, text in enumerate(texts):
            their_key, _, pid = text.rpartition("\n")
            if rank != self.rank and key and their_key == key and pid.isdigit():
                pids.append(int(pid))
        return pids

    def close(self) -> None:
        """Destroy the process group when this measurement created it."""
        if self.created:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def detect_job(device: Any, timeout_s: float) -> RankJob | None:
    """The distributed job this process belongs to, or ``None`` outside one.

    An initialised default process group is used as it is. Without one, ``RANK`` and
    ``WORLD_SIZE`` (as ``torchrun`` sets them) with a world size above 1 make this function
    initialise one from the environment (``env://``: ``MASTER_ADDR`` and ``MASTER_PORT``),
    with the ``nccl`` backend on CUDA and ``gloo`` otherwise; :meth:`RankJob.close` destroys it.
    """
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch without distributed support
        return None
    if not dist.is_available():
        return None
    created = False
    if not dist.is_initialized():
        world = _env_int("WORLD_SIZE")
        rank = _env_int("RANK")
        if world is None or rank is None or world <= 1:
            return None
        missing = [name for name in _ENV_NEEDED if not os.environ.get(name)]
        if missing:
            raise InvalidArgumentError(
                f"RANK={rank} and WORLD_SIZE={world} say this is rank {rank} of a distributed "
                f"job, but {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
                "set: launch with torchrun, or initialise torch.distributed yourself"
            )
        if rank >= world:
            raise InvalidArgumentError(f"RANK={rank} is not below WORLD_SIZE={world}")
        backend = "nccl" if device.type == "cuda" and dist.is_nccl_available() else "gloo"
        try:
            dist.init_process_group(
                backend=backend,
                init_method="env://",
                timeout=datetime.timedelta(seconds=timeout_s),
            )
        except Exception as error:
            raise DistributedMeasurementError(
                f"rank {rank} of {world} could not join the job's process group within "
                f"{timeout_s:g} s (rank_timeout_s) from MASTER_ADDR and MASTER_PORT: "
                f"{_first_line(error)}",
                "set-up",
            ) from error
        created = True
    rank = int(dist.get_rank())
    world = int(dist.get_world_size())
    backend = str(dist.get_backend())
    local = _env_int("LOCAL_RANK")
    local_rank = local if local is not None and local < world else (0 if world == 1 else rank)
    tensor_device: Any = "cpu"
    if "nccl" in backend:
        import torch

        tensor_device = torch.device("cuda", torch.cuda.current_device())
    return RankJob(
        rank=rank,
        local_rank=local_rank,
        world_size=world,
        backend=backend,
        host=socket.gethostname(),
        created=created,
        timeout_s=timeout_s,
        tensor_device=tensor_device,
    )


def _process_namespace() -> str:
    """The kernel's boot id and this process's pid namespace; empty where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot} {namespace}"


def rank_process_rss_peak() -> int | None:
    """The peak RSS of this process since it started, in bytes (``getrusage``), if known."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return int(peak if sys.platform == "darwin" else peak * 1024)


class _BlockClock:
    """Times one block: CUDA events on a CUDA device, ``perf_counter_ns`` elsewhere."""

    def __init__(self, device: Any) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        self.method = (
            "CUDA events around each block (device work included)"
            if self.cuda
            else "time.perf_counter_ns; device synchronised at block edges"
        )

    def time_block(
        self, workload: Callable[[], Any], calls: int, sync: Callable[[], None]
    ) -> tuple[int, int]:
        clock = time.perf_counter_ns
        if not self.cuda:
            sync()
            start = clock()
            for _ in range(calls):
                workload()
            sync()
            return start, max(clock() - start, 1)
        import torch

        begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        sync()
        start = clock()
        begin.record()
        for _ in range(calls):
            workload()
        end.record()
        end.synchronize()
        return start, max(int(begin.elapsed_time(end) * 1e6), 1)


@dataclass
class AlignedRun:
    """A timing run whose blocks were aligned across ranks."""

    run: TimingRun
    barrier_waits_s: list[float]
    collectives_per_call: int | None
    clock_method: str


def run_aligned_timing(
    workload: Callable[[], Any],
    device: Any,
    budget: TimingBudget,
    job: RankJob,
    *,
    noise_sources: NoiseSources | None = None,
) -> AlignedRun:
    """Time ``workload`` on every rank with the same calls in every block.

    A barrier precedes the first call. Warm-up runs at least one call and goes on while any rank
    is still inside its ``warmup_time_s``. Calls per block are the fewest any rank calibrated
    (the slowest rank's), or one when the workload issues collectives of its own (the ranks
    then meet inside every call, and one call per block lets the barriers see each call's
    end). Before every block the ranks exchange their stop conditions (the barrier, its wait
    recorded): blocks end when every
    rank has ``min_blocks`` blocks and ``min_time_s`` seconds, or when any rank passed
    ``max_time_s``.
    """
    clock = time.perf_counter_ns
    sync = synchronizer(device)
    overhead_s = timer_overhead_s()
    job.phase = "before the first call"
    job.barrier()
    job.phase = "the first call"
    first_call_s, output = timed_call(workload, sync)
    from .._values import floating_dtypes

    dtypes = floating_dtypes(output)
    del output
    job.phase = "warm-up"
    before = job.sequence_number()
    exchanges_before = job.exchanges
    warmup_calls = 0
    spent_ns = 0
    deadline = clock() + int(budget.warmup_time_s * 1e9)
    while True:
        sync()
        start = clock()
        workload()
        sync()
        now = clock()
        spent_ns += now - start
        warmup_calls += 1
        (going,), _ = job.exchange([1.0 if now < deadline else 0.0])
        if going == 0.0:
            break
    after = job.sequence_number()
    collectives: int | None = None
    if before is not None and after is not None:
        issued = after - before - (job.exchanges - exchanges_before)
        collectives = max(0, math.ceil(issued / warmup_calls))
    per_call_s = max(spent_ns * 1e-9 / warmup_calls, 1e-9)
    block_target_s = max(
        overhead_s / budget.max_timer_overhead_ratio,
        budget.min_time_s / (2 * budget.min_blocks),
    )
    local_calls = calls_to_fill_block(per_call_s, block_target_s)
    job.phase = "calibration"
    # Blocks are sized by the slowest rank's calls (the fewest calls per block), so that its
    # blocks, which make the step time, stay within the budget.
    (fewest, any_collectives), _ = job.exchange(
        [-float(local_calls), 1.0 if collectives is None or collectives > 0 else 0.0]
    )
    calls_per_block = 1 if any_collectives else max(1, int(-fewest))
    run = TimingRun(
        first_call_s=max(first_call_s, overhead_s),
        warmup_calls=warmup_calls,
        calls_per_block=calls_per_block,
        timer_overhead_s=overhead_s,
    )
    run.output_dtypes = dtypes
    log = BlockLog(run)
    block_clock = _BlockClock(device)
    job.phase = "calibration"
    peers = job.local_peer_pids()
    if noise_sources is None and peers:
        # The other ranks on this host are the job itself: their CPU time is not noise.
        noise_sources = NoiseSources(peer_stats=tuple(f"/proc/{pid}/stat" for pid in peers))
    sampler = NoiseSampler(noise_sources)
    noise_start = sampler.snapshot()
    waits: list[float] = []
    timing_start = clock()
    while True:
        blocks = len(waits)
        job.phase = f"the barrier before block {blocks}"
        elapsed_s = (clock() - timing_start) * 1e-9
        enough = blocks >= budget.min_blocks and elapsed_s >= budget.min_time_s
        over = elapsed_s >= budget.max_time_s
        (any_over, any_short), waited = job.exchange([1.0 if over else 0.0, 0.0 if enough else 1.0])
        if blocks > 0 and (any_short == 0.0 or any_over == 1.0):
            run.stopped_by_max_time = blocks < budget.min_blocks
            break
        waits.append(waited)
        job.phase = f"block {blocks}"
        log.add(*block_clock.time_block(workload, calls_per_block, sync))
    run.noise = NoiseRecord(noise_start, sampler.snapshot())
    job.phase = "after the timed blocks"
    return AlignedRun(run, waits, collectives, block_clock.method)
