"""What competes with a timed workload: other CPU use, steal, preemption and CPU frequency.

The timing loop reads a :class:`NoiseSnapshot` at the start and at the end of its timed phase
(two reads of a few small ``/proc`` files, never inside a block), and
:func:`noise_metrics` turns the pair into the report's noise metrics. Every source is a path of
:class:`NoiseSources`, so tests can point them at files of their own.

- ``machine_other_cpu_ratio``: the busy CPU time of all CPUs (``/proc/stat``: user, nice,
  system, irq, softirq) minus this process's own CPU time (``/proc/self/stat``: utime + stime,
  all its threads), over the CPU time of all CPUs (every column of the ``cpu`` line but guest
  and guest_nice, which ``user`` and ``nice`` already include). The denominator is elapsed time
  x all online CPUs, not only the CPUs of the process's affinity mask: work on any CPU shares
  caches, memory bandwidth and the package's power budget with the workload. In a distributed
  job, the CPU time of the job's other ranks on the same host (``/proc/<pid>/stat``) is taken
  out too: they are the job, not noise.
- ``cpu_steal_ratio``: the ``steal`` column over the same total.
- ``involuntary_context_switches``: ``nonvoluntary_ctxt_switches`` of
  ``/proc/thread-self/status``, the thread that runs the timing loop, over the timed phase.
- ``cpu_frequency``: the mean of ``scaling_cur_freq`` of the CPUs in the affinity mask, read at
  the start and the end, in Hz.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

from ..reports import Diagnostic, MetricResult
from ..reports import metrics as _metrics

__all__ = [
    "NOISE_METRICS",
    "NOISY_CONTEXT_SWITCHES_PER_S",
    "NOISY_OTHER_CPU_RATIO",
    "NOISY_STEAL_RATIO",
    "NoiseRecord",
    "NoiseSampler",
    "NoiseSnapshot",
    "NoiseSources",
    "noise_metrics",
    "noise_past_thresholds",
    "noisy_machine_diagnostic",
    "unavailable_noise_metrics",
]

#: The noise metrics of a benchmark report, in report order.
NOISE_METRICS = (
    "machine_other_cpu_ratio",
    "cpu_steal_ratio",
    "involuntary_context_switches",
    "cpu_frequency",
)
#: ``noisy_machine`` when other processes used more than this share of all CPU time.
NOISY_OTHER_CPU_RATIO = 0.10
#: ``noisy_machine`` when the hypervisor stole more than this share of all CPU time.
NOISY_STEAL_RATIO = 0.02
#: ``noisy_machine`` when the timing thread was preempted more often than this per second.
NOISY_CONTEXT_SWITCHES_PER_S = 50.0

_CPU_SCOPE = "all online CPUs of the machine, during the timed phase"
_OTHER_METHOD = (
    "/proc/stat busy jiffies (user, nice, system, irq, softirq) minus this process's utime + "
    "stime (/proc/self/stat), over all jiffies of all CPUs, read at the start and end of the "
    "timed phase"
)
_STEAL_METHOD = (
    "/proc/stat steal jiffies over all jiffies of all CPUs, read at the start and end of the "
    "timed phase"
)
_SWITCHES_SCOPE = "the thread that ran the timing loop, during the timed phase"
_SWITCHES_METHOD = (
    "difference of nonvoluntary_ctxt_switches in /proc/thread-self/status between the start "
    "and end of the timed phase"
)
_FREQUENCY_SCOPE = "CPUs of the process's affinity mask, at the start and end of the timed phase"
_FREQUENCY_METHOD = "mean of cpufreq scaling_cur_freq (kHz, written in Hz) over CPUs and reads"
# Columns of a /proc/stat cpu line, after the label.
_BUSY_COLUMNS = (0, 1, 2, 5, 6)  # user, nice, system, irq, softirq
_STEAL_COLUMN = 7
_TOTAL_COLUMNS = 8  # user .. steal; guest and guest_nice are already in user and nice
_NOT_LINUX = "not Linux: /proc and /sys are read only on Linux"


@dataclass(frozen=True)
class NoiseSources:
    """Where the readings come from; the defaults are the running kernel's files."""

    proc_stat: str = "/proc/stat"
    self_stat: str = "/proc/self/stat"
    thread_status: str = "/proc/thread-self/status"
    cpu_sysfs: str = "/sys/devices/system/cpu"
    cpus: tuple[int, ...] | None = None
    """CPUs whose frequency is read; ``None`` means the process's affinity mask."""
    peer_stats: tuple[str, ...] = ()
    """The ``stat`` files of the processes whose CPU time is the workload's own besides this
    one (the job's other ranks on this host)."""
    linux: bool = field(default_factory=lambda: sys.platform.startswith("linux"))


@dataclass(frozen=True)
class NoiseSnapshot:
    """One reading of every source; a reading that failed holds the reason instead."""

    cpu_jiffies: tuple[int, ...] | str
    own_jiffies: int | str
    involuntary_switches: int | str
    frequencies_hz: tuple[float, ...] | str
    time_ns: int
    peers: int = 0
    """Processes besides this one whose CPU time ``own_jiffies`` includes."""


@dataclass(frozen=True)
class NoiseRecord:
    """The snapshots at the start and at the end of a timed phase."""

    start: NoiseSnapshot
    end: NoiseSnapshot

    @property
    def elapsed_s(self) -> float:
        """Wall-clock seconds between the two snapshots."""
        return max(self.end.time_ns - self.start.time_ns, 0) * 1e-9


def _read_text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as file:
        return file.read()


def _read_cpu_jiffies(path: str) -> tuple[int, ...] | str:
    try:
        text = _read_text(path)
    except OSError as error:
        return f"{path} is not readable ({error.strerror or error})"
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            try:
                return tuple(int(value) for value in fields[1:])
            except ValueError:
                return f"the cpu line of {path} is not a list of integers"
    return f"{path} has no aggregate cpu line"


def _read_own_jiffies(path: str) -> int | str:
    try:
        text = _read_text(path)
    except OSError as error:
        return f"{path} is not readable ({error.strerror or error})"
    # The command name (field 2) is in parentheses and may hold spaces: split after its end.
    fields = text[text.rfind(")") + 1 :].split()
    try:
        # Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
        return int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return f"{path} has no utime and stime fields"


def _read_jiffies_of(paths: tuple[str, ...]) -> int | str:
    """The summed utime + stime of every process's ``stat`` file, or the first reason not."""
    total = 0
    for path in paths:
        found = _read_own_jiffies(path)
        if isinstance(found, str):
            return found
        total += found
    return total


def _other_method(peers: int) -> str:
    if peers == 0:
        return _OTHER_METHOD
    return _OTHER_METHOD.replace(
        "minus this process's utime + stime (/proc/self/stat)",
        f"minus the utime + stime of this process and of the job's {peers} other "
        f"rank{'s' if peers != 1 else ''} on this host (/proc/self/stat, /proc/<pid>/stat)",
    )


def _read_involuntary_switches(path: str) -> int | str:
    try:
        text = _read_text(path)
    except OSError as error:
        return f"{path} is not readable ({error.strerror or error})"
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "nonvoluntary_ctxt_switches":
            try:
                return int(value.strip())
            except ValueError:
                break
    return f"{path} has no nonvoluntary_ctxt_switches line"


def _read_frequencies(root: str, cpus: tuple[int, ...]) -> tuple[float, ...] | str:
    if not cpus:
        return "the process's affinity mask lists no CPU"
    readings = []
    for cpu in cpus:
        path = f"{root}/cpu{cpu}/cpufreq/scaling_cur_freq"
        try:
            readings.append(int(_read_text(path).strip()) * 1e3)
        except FileNotFoundError:
            return (
                f"no cpufreq scaling_cur_freq for cpu{cpu}: no frequency driver, "
                "usual in virtual machines"
            )
        except (OSError, ValueError):
            return f"cpufreq scaling_cur_freq of cpu{cpu} is not readable as a number"
    return tuple(readings)


def _affinity() -> tuple[int, ...]:
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return ()
    return tuple(sorted(getter(0)))


class NoiseSampler:
    """Reads every noise source at once; see the module docstring for what each one means."""

    def __init__(self, sources: NoiseSources | None = None) -> None:
        self.sources = sources if sources is not None else NoiseSources()
        self.cpus = self.sources.cpus if self.sources.cpus is not None else _affinity()

    def snapshot(self) -> NoiseSnapshot:
        """One reading of every source, with the ``perf_counter_ns`` time it was taken."""
        sources = self.sources
        if not sources.linux:
            return NoiseSnapshot(_NOT_LINUX, _NOT_LINUX, _NOT_LINUX, _NOT_LINUX, 0)
        return NoiseSnapshot(
            cpu_jiffies=_read_cpu_jiffies(sources.proc_stat),
            own_jiffies=_read_jiffies_of((sources.self_stat, *sources.peer_stats)),
            involuntary_switches=_read_involuntary_switches(sources.thread_status),
            frequencies_hz=_read_frequencies(sources.cpu_sysfs, self.cpus),
            time_ns=time.perf_counter_ns(),
            peers=len(sources.peer_stats),
        )


def unavailable_noise_metrics(reason: str) -> dict[str, MetricResult]:
    """Every noise metric as unavailable for ``reason`` (for example ``not requested``)."""
    return {
        "machine_other_cpu_ratio": _metrics.unavailable("ratio", _CPU_SCOPE, _OTHER_METHOD, reason),
        "cpu_steal_ratio": _metrics.unavailable("ratio", _CPU_SCOPE, _STEAL_METHOD, reason),
        "involuntary_context_switches": _metrics.unavailable(
            "count", _SWITCHES_SCOPE, _SWITCHES_METHOD, reason
        ),
        "cpu_frequency": _metrics.unavailable("Hz", _FREQUENCY_SCOPE, _FREQUENCY_METHOD, reason),
    }


def _first_reason(*readings: object) -> str | None:
    for reading in readings:
        if isinstance(reading, str):
            return reading
    return None


def _cpu_ratios(record: NoiseRecord) -> tuple[MetricResult, MetricResult]:
    start, end = record.start, record.end
    other_method = _other_method(end.peers)
    reason = _first_reason(start.cpu_jiffies, end.cpu_jiffies)
    if reason is not None:
        return (
            _metrics.unavailable("ratio", _CPU_SCOPE, other_method, reason),
            _metrics.unavailable("ratio", _CPU_SCOPE, _STEAL_METHOD, reason),
        )
    assert not isinstance(start.cpu_jiffies, str) and not isinstance(end.cpu_jiffies, str)
    deltas = [
        after - before for before, after in zip(start.cpu_jiffies, end.cpu_jiffies, strict=False)
    ]
    total = sum(deltas[:_TOTAL_COLUMNS])
    if total <= 0:
        why = "the timed phase was shorter than one clock tick of /proc/stat"
        return (
            _metrics.unavailable("ratio", _CPU_SCOPE, other_method, why),
            _metrics.unavailable("ratio", _CPU_SCOPE, _STEAL_METHOD, why),
        )
    own_reason = _first_reason(start.own_jiffies, end.own_jiffies)
    if own_reason is None:
        assert isinstance(start.own_jiffies, int) and isinstance(end.own_jiffies, int)
        busy = sum(deltas[column] for column in _BUSY_COLUMNS if column < len(deltas))
        other = busy - (end.own_jiffies - start.own_jiffies)
        # Both counters advance in whole ticks, sampled a little apart: clamp the rounding.
        other_ratio = _metrics.complete(
            min(max(other / total, 0.0), 1.0), "ratio", _CPU_SCOPE, other_method
        )
    else:
        other_ratio = _metrics.unavailable("ratio", _CPU_SCOPE, other_method, own_reason)
    if len(deltas) > _STEAL_COLUMN:
        steal_ratio = _metrics.complete(
            min(max(deltas[_STEAL_COLUMN] / total, 0.0), 1.0), "ratio", _CPU_SCOPE, _STEAL_METHOD
        )
    else:
        steal_ratio = _metrics.unavailable(
            "ratio", _CPU_SCOPE, _STEAL_METHOD, "the kernel reports no steal column in /proc/stat"
        )
    return other_ratio, steal_ratio


def noise_metrics(record: NoiseRecord) -> dict[str, MetricResult]:
    """The noise metrics of a timed phase, keyed as in the report (see :data:`NOISE_METRICS`)."""
    start, end = record.start, record.end
    other_ratio, steal_ratio = _cpu_ratios(record)
    switches_reason = _first_reason(start.involuntary_switches, end.involuntary_switches)
    if switches_reason is None:
        assert isinstance(start.involuntary_switches, int)
        assert isinstance(end.involuntary_switches, int)
        switches = _metrics.complete(
            max(end.involuntary_switches - start.involuntary_switches, 0),
            "count",
            _SWITCHES_SCOPE,
            _SWITCHES_METHOD,
        )
    else:
        switches = _metrics.unavailable("count", _SWITCHES_SCOPE, _SWITCHES_METHOD, switches_reason)
    frequency_reason = _first_reason(start.frequencies_hz, end.frequencies_hz)
    if frequency_reason is None:
        assert not isinstance(start.frequencies_hz, str)
        assert not isinstance(end.frequencies_hz, str)
        readings = start.frequencies_hz + end.frequencies_hz
        mean_hz = sum(readings) / len(readings)
        frequency = (
            _metrics.complete(mean_hz, "Hz", _FREQUENCY_SCOPE, _FREQUENCY_METHOD)
            if mean_hz > 0
            else _metrics.unavailable(
                "Hz", _FREQUENCY_SCOPE, _FREQUENCY_METHOD, "scaling_cur_freq reads 0"
            )
        )
    else:
        frequency = _metrics.unavailable(
            "Hz", _FREQUENCY_SCOPE, _FREQUENCY_METHOD, frequency_reason
        )
    return {
        "machine_other_cpu_ratio": other_ratio,
        "cpu_steal_ratio": steal_ratio,
        "involuntary_context_switches": switches,
        "cpu_frequency": frequency,
    }


def noise_past_thresholds(
    metrics: dict[str, MetricResult], timed_s: float
) -> list[tuple[str, str]]:
    """Each noise metric past its threshold, as ``(metric, words)``, in report order.

    Thresholds: other processes above :data:`NOISY_OTHER_CPU_RATIO` of all CPU time, steal above
    :data:`NOISY_STEAL_RATIO`, and more than :data:`NOISY_CONTEXT_SWITCHES_PER_S` involuntary
    context switches per second of the timed phase (``timed_s`` long).
    """
    passed: list[tuple[str, str]] = []
    other = metrics["machine_other_cpu_ratio"]["value"]
    if other is not None and other > NOISY_OTHER_CPU_RATIO:
        passed.append(
            (
                "machine_other_cpu_ratio",
                f"machine_other_cpu_ratio {other:.3f} (other processes used {other:.0%} of all "
                f"CPU time; threshold {NOISY_OTHER_CPU_RATIO:.2f})",
            )
        )
    steal = metrics["cpu_steal_ratio"]["value"]
    if steal is not None and steal > NOISY_STEAL_RATIO:
        passed.append(
            (
                "cpu_steal_ratio",
                f"cpu_steal_ratio {steal:.3f} (threshold {NOISY_STEAL_RATIO:.2f})",
            )
        )
    switches = metrics["involuntary_context_switches"]["value"]
    if switches is not None and timed_s > 0:
        per_s = switches / timed_s
        if per_s > NOISY_CONTEXT_SWITCHES_PER_S:
            passed.append(
                (
                    "involuntary_context_switches",
                    f"involuntary_context_switches {int(switches):,} in {timed_s:.2f} s "
                    f"({per_s:,.0f} per second; threshold {NOISY_CONTEXT_SWITCHES_PER_S:.0f})",
                )
            )
    return passed


def noisy_machine_diagnostic(metrics: dict[str, MetricResult], timed_s: float) -> Diagnostic | None:
    """A ``noisy_machine`` warning naming each noise metric past its threshold, or ``None``.

    The thresholds are :func:`noise_past_thresholds`'s.
    """
    passed = noise_past_thresholds(metrics, timed_s)
    if not passed:
        return None
    return {
        "code": "noisy_machine",
        "severity": "warning",
        "metric": passed[0][0],
        "message": (
            "the machine was busy while the workload was timed: "
            + "; ".join(text for _, text in passed)
            + "; timings may be slower and more spread than on a quiet machine"
        ),
    }
