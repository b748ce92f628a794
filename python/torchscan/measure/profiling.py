"""The profiler pass: a separate, instrumented run of a capped number of calls.

The pass stays within a time budget (``max_time_s`` of ``measure_workload``), its whole time
counted but the profiler library's one-time start: the calls, stopping the profiler and reading
its events (which can take longer than the calls themselves on a workload of many small
operators). It profiles one call
first, alone, and times everything that call cost; the other calls are profiled in a second
session, given the share of the remaining budget that calls took in the first, and stop before
a call that would pass it (estimated as the mean of the calls so far). So a slow workload runs
fewer than the requested calls; at least one always runs. The two sessions' operators are
added together. The calls it ran are ``calls``, those requested ``requested_calls``, and a
``profiler_failed`` warning says how many fitted.

Asked to keep its trace (``profiler_trace`` of ``measure_workload``), the pass exports each
session's Chrome trace (``export_chrome_trace``) to a private scratch directory as soon as the
session ends, so the export counts in the pass's time like reading the events; the sessions'
traces are then joined into one (every event of both, on the one clock of the process) and
written through the package's one file writer (``torchscan._core.write_file``: a temporary file
in the target's directory, then a rename), gzip-compressed when the path ends in ``.gz``. The
report's ``profiler.trace`` names the file only once it is written; what could not be kept is
said by a ``profiler_failed`` warning.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ..reports import Diagnostic, ProfiledOperator, ProfilerPass, ProfilerTrace

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
    trace: str | None = None,
) -> tuple[ProfilerPass, list[Diagnostic]]:
    """Profile up to ``calls`` calls of ``workload`` within ``max_time_s`` seconds in all.

    The whole pass counts (see the module documentation): one call profiled alone, then the
    others in a second session given the calls' share of the time left, stopping before a call
    that would pass it (``None``: no budget); on CUDA the first call of each session is
    synchronized so that its duration includes the device's work. ``budget`` names the
    budget in the diagnostic (default ``max_time_s=<max_time_s> s``; an experiment gives each side
    half of its ``max_time_s``). ``trace`` (a checked path, see ``check_profiler_trace``) keeps
    the Chrome trace of every profiled call there.
    The workload's own exception propagates, and no scratch file is left behind.
    """
    if trace is None:
        return _run_profiler(workload, device, calls, max_time_s, budget, None)
    try:
        scratch = tempfile.mkdtemp(prefix="torchscan-trace-")
    except OSError as error:  # no temporary directory: the pass runs, its trace is not kept
        section, diagnostics = _run_profiler(workload, device, calls, max_time_s, budget, None)
        reason = error.strerror or str(error) or type(error).__name__
        lost = f"the profiler trace was not written to {trace}: no scratch directory ({reason})"
        return section, [*diagnostics, _warning(lost)]
    try:
        return _run_profiler(workload, device, calls, max_time_s, budget, (trace, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_profiler(
    workload: Callable[[], Any],
    device: Any,
    calls: int,
    max_time_s: float | None,
    budget: str | None,
    trace: tuple[str, str] | None,
) -> tuple[ProfilerPass, list[Diagnostic]]:
    """:func:`run_profiler`, ``trace`` the trace's path and the scratch directory's."""
    from .._threads import user_profiler_active, user_profiler_starts

    path = None if trace is None else trace[0]
    exports = _Exports(None if trace is None else trace[1])
    busy = user_profiler_active()
    if busy is not None:
        # PyTorch runs one profiler session at a time: starting this one would cancel the
        # user's (and exporting a cancelled trace can crash the process).
        return _failed(
            f"the profiler pass did not run: {busy}, and PyTorch runs one profiler session at "
            "a time; measure outside the profiler, or drop 'profiler' from metrics",
            severity="warning",
            trace=path,
        )
    began = time.perf_counter()
    starts = user_profiler_starts()
    totals: dict[str, list[float]] = {}
    pilot = _profile_session(workload, device, 1, None, totals, exports)
    if isinstance(pilot, str):
        return _failed(pilot, trace=path)
    ran, elapsed_s, start_s = pilot
    if calls > 1:
        # Starting the first session (the profiler library's one-time set-up in a process) is
        # not a cost of the calls: the rest of the pass is what the budget holds.
        spent_s = time.perf_counter() - began - start_s
        call_share = min(1.0, elapsed_s / spent_s) if spent_s > 0 else 1.0
        left_s = None if max_time_s is None else (max_time_s - spent_s) * call_share
        # A second session only when at least one more call fits (its start and read included).
        if left_s is None or left_s >= elapsed_s:
            rest = _profile_session(workload, device, calls - 1, left_s, totals, exports)
            if isinstance(rest, str):
                return _failed(rest, trace=path)
            ran += rest[0]
            elapsed_s += rest[1]
    # Each of this pass's sessions is prepared and started once; any other start means the
    # workload started a profiler of its own, which took the session over.
    sessions = 1 if calls == 1 or ran == 1 else 2
    if user_profiler_starts() - starts > 2 * sessions:
        return _failed(
            "the profiler pass recorded nothing of its own: the workload started a PyTorch "
            "profiler, which took the session over (PyTorch runs one at a time); profile the "
            "workload with its own profiler, or drop 'profiler' from metrics",
            severity="warning",
            trace=path,
        )
    rows: list[ProfiledOperator] = [
        {
            "operator": key,
            "calls": int(count),
            "self_time_s": max(self_us, 0.0) * 1e-6,
            "total_time_s": max(total_us, 0.0) * 1e-6,
        }
        for key, (count, self_us, total_us) in totals.items()
        if count > 0
    ]
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
    # The pass's own time, before its trace is joined and written (which the budget leaves out).
    pass_s = time.perf_counter() - began - start_s
    diagnostics: list[Diagnostic] = []
    if path is not None:
        kept, problem = _keep_trace(path, exports, ran, calls)
        if kept is not None:
            section["trace"] = kept
        if problem is not None:
            diagnostics.append(_warning(problem))
    if ran == calls:
        return section, diagnostics
    named = budget if budget is not None else f"max_time_s={max_time_s:g} s"
    if max_time_s is not None and pass_s > max_time_s:
        # Even the first call, which always runs, did not fit.
        what = (
            f"{ran} of {calls} profiler calls ran, past {named}: profiling and reading the first "
            f"call alone took {pass_s:.3g} s (one call always runs)"
        )
    else:
        what = (
            f"{ran} of {calls} profiler calls fit in {named}, starting, stopping and reading "
            f"the profiler included (the calls took {elapsed_s:.3g} s, {elapsed_s / ran:.3g} s "
            "each, and the next would have passed it)"
        )
    trace_kept = section.get("trace")
    covered = "the profile covers"
    if trace_kept is not None and trace_kept["calls"] == ran:
        covered = "the profile and its trace cover"
    cut_short = _warning(
        f"{what}; {covered} {ran} calls: raise max_time_s (--max-time) or lower "
        "profiler_calls (--profiler-calls) to profile every requested call"
    )
    return section, [cut_short, *diagnostics]


def _warning(message: str) -> Diagnostic:
    return {
        "code": "profiler_failed",
        "severity": "warning",
        "metric": "profiler",
        "message": message,
    }


class _Exports:
    """Where each profiler session's trace goes, and what came of each export.

    ``directory`` is the scratch directory (``None``: no trace is kept). ``done`` lists the
    exported files with the calls each session ran, ``failed`` why each other export failed.
    """

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.done: list[tuple[str, int]] = []
        self.failed: list[str] = []

    def export(self, profiler: Any, ran: int) -> None:
        """Export ``profiler``'s trace of a session that ran ``ran`` calls (when one is kept)."""
        if self.directory is None:
            return
        session = len(self.done) + len(self.failed) + 1
        target = os.path.join(self.directory, f"session-{session}.json")
        try:
            with _quiet_stderr():
                profiler.export_chrome_trace(target)
        except Exception as error:  # the profiler's own failure: that session's trace is lost
            self.failed.append(f"{type(error).__name__}: {error}")
            return
        self.done.append((target, ran))


def _keep_trace(
    path: str, exports: _Exports, ran: int, requested: int
) -> tuple[ProfilerTrace | None, str | None]:
    """Join the sessions' exported traces and write them to ``path``.

    Returns the report's trace section (``None`` when nothing was written) and what went wrong
    (``None`` when the trace covers every profiled call).
    """
    from .. import _core

    failures = "; ".join(exports.failed)
    try:
        data = _joined_traces([file for file, _ in exports.done], path)
    except (OSError, ValueError) as error:
        return None, (
            f"the profiler trace was not written to {path}: the profiler's trace could not be "
            f"read back ({type(error).__name__}: {error})"
        )
    if data is None:
        return None, (
            f"the profiler trace was not written to {path}: exporting it failed ({failures})"
        )
    try:
        _core.write_file(path, data)
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        return None, f"the profiler trace was not written to {path}: {reason}"
    covered = sum(calls for _, calls in exports.done)
    sessions = len(exports.done)
    scope = f"the {covered:,} profiled call{'s' if covered != 1 else ''} of the profiler pass"
    if sessions > 1:
        scope += f" ({sessions} profiler sessions, joined)"
    problem = None
    if covered < ran:
        scope = f"{covered:,} of the {ran:,} profiled calls of the profiler pass"
        problem = (
            f"the profiler trace {path} covers {covered} of the {ran} profiled calls: "
            f"exporting the other {ran - covered} failed ({failures})"
        )
    if ran < requested:
        scope += f"; {ran:,} of the {requested:,} requested calls fit in the time budget"
    kept: ProfilerTrace = {
        "path": path,
        "format": "chrome_trace_gzip" if path.endswith(".gz") else "chrome_trace",
        "scope": scope,
        "calls": covered,
        "instrumented": True,
        "bytes": len(data),
    }
    return kept, problem


def _joined_traces(files: list[str], name: str) -> bytes | None:
    """One Chrome trace of the sessions' exported ``files``, in order, named ``name``.

    Every event of every session is kept (metadata events repeated by a later session once), its
    timestamps moved onto the first session's base time (the same clock, so normally unchanged).
    ``None`` when there is no file; gzip-compressed (with no time stamp) for a ``.gz`` name.
    """
    joined: dict[str, Any] | None = None
    events: list[Any] = []
    seen_metadata: set[str] = set()
    base_ns = 0
    for file in files:
        with open(file, "rb") as handle:
            document = json.load(handle)
        if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
            raise ValueError(f"{os.path.basename(file)} is not a Chrome trace (no traceEvents)")
        session_base = document.get("baseTimeNanoseconds")
        session_base_ns = session_base if isinstance(session_base, int) else 0
        if joined is None:
            joined, base_ns = document, session_base_ns
        shift_us = (session_base_ns - base_ns) / 1000
        for event in document["traceEvents"]:
            if isinstance(event, dict) and event.get("ph") == "M":
                key = json.dumps(event, sort_keys=True)
                if key in seen_metadata:
                    continue
                seen_metadata.add(key)
            if shift_us and isinstance(event, dict) and isinstance(event.get("ts"), (int, float)):
                event["ts"] += shift_us
            events.append(event)
    if joined is None:
        return None
    joined["traceEvents"] = events
    joined["traceName"] = name
    data = json.dumps(joined, separators=(",", ":")).encode("utf-8")
    if name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    return data


def _profile_session(
    workload: Callable[[], Any],
    device: Any,
    calls: int,
    max_time_s: float | None,
    totals: dict[str, list[float]],
    exports: _Exports,
) -> tuple[int, float, float] | str:
    """Profile up to ``calls`` calls within ``max_time_s`` seconds of calls in one session.

    Adds each operator's calls, self time and total time (microseconds) to ``totals``, and
    exports the session's trace when ``exports`` keeps one; returns the calls run, their seconds
    and the seconds starting the profiler took, or why it failed.
    """
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    use_device = device.type == "cuda"
    if use_device:
        activities.append(ProfilerActivity.CUDA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiler: Any = profile(activities=activities, record_shapes=False)
        starting = time.perf_counter()
        try:
            with _quiet_stderr():
                profiler.__enter__()
        except Exception as error:  # the profiler itself failed: the pass is unavailable
            return f"the profiler could not start: {type(error).__name__}: {error}"
        start_s = time.perf_counter() - starting
        try:
            ran, elapsed_s = _profiled_calls(workload, device, calls, max_time_s)
        finally:
            with _quiet_stderr():
                profiler.__exit__(None, None, None)
        results = getattr(profiler.profiler, "kineto_results", None)
        if not use_device and results is not None:
            # CPU time only: read from the session's raw events, many times faster than
            # key_averages (which builds a Python object per event and costs more than the
            # calls on a workload of small operators).
            _add_cpu_totals(results.events(), totals)
            exports.export(profiler, ran)
            return ran, elapsed_s, start_s
        events = profiler.key_averages()
        exports.export(profiler, ran)
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
        row = totals.setdefault(str(event.key), [0.0, 0.0, 0.0])
        row[0] += int(event.count)
        row[1] += self_us
        row[2] += total_us
    return ran, elapsed_s, start_s


class _Span:
    __slots__ = ("children", "duration", "end", "name")

    def __init__(self, end: int, name: str, duration: int) -> None:
        self.end = end
        self.name = name
        self.duration = duration
        self.children: list[_Span] = []


def _add_cpu_totals(events: Any, totals: dict[str, list[float]]) -> None:
    """Add each CPU event's calls, self time and total time (microseconds) to ``totals``.

    As ``key_averages`` counts them: an event's total time is its duration; its self time is
    that duration less the durations of the events directly inside it on the same thread; and
    an event that is the only one directly inside an event of the same name (an operator
    calling its own overload) is merged into it, as PyTorch does.
    """
    by_thread: dict[int, list[tuple[int, int, str]]] = {}
    alone: list[_Span] = []  # async events (start and end on different threads): no nesting
    for event in events:
        if str(event.device_type()) != "DeviceType.CPU":
            continue
        start = int(event.start_ns())
        end = start + max(int(event.duration_ns()), 0)
        if event.is_async():
            alone.append(_Span(end, str(event.name()), end - start))
            continue
        by_thread.setdefault(int(event.start_thread_id()), []).append(
            (start, end, str(event.name()))
        )

    def commit(root: _Span) -> None:
        pending = [root]
        while pending:
            span = pending.pop()
            children = span.children
            while len(children) == 1 and children[0].name == span.name:
                children = children[0].children
            row = totals.setdefault(span.name, [0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += (span.duration - sum(child.duration for child in children)) * 1e-3
            row[2] += span.duration * 1e-3
            pending.extend(children)

    def close(stack: list[_Span]) -> None:
        span = stack.pop()
        if stack:
            stack[-1].children.append(span)
        else:
            commit(span)

    for spans in by_thread.values():
        spans.sort(key=lambda span: (span[0], -span[1]))
        stack: list[_Span] = []  # the open events, outermost first
        for start, end, name in spans:
            # As PyTorch nests them: an event inside another is its child; one that starts
            # inside it but ends after it (ranges that cross) is not.
            while stack and (stack[-1].end <= start or end > stack[-1].end):
                close(stack)
            stack.append(_Span(end, name, end - start))
        while stack:
            close(stack)
    for span in alone:
        commit(span)


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


def _failed(
    message: str, severity: str = "error", trace: str | None = None
) -> tuple[ProfilerPass, list[Diagnostic]]:
    if trace is not None:
        message += f"; no profiler trace was written to {trace}"
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
        "severity": "warning" if severity == "warning" else "error",
        "metric": "profiler",
        "message": message,
    }
    return section, [diagnostic]
