"""Operators that run on other threads while a dispatch-mode pass counts its own thread's.

PyTorch keeps dispatch modes per thread: the operator-FLOPs and tensor-memory passes see the
operators of the thread that runs the workload, and of the threads that inherit its state
(``torch.jit.fork``, autograd's device threads), nothing else. Work handed to a thread pool, a
``threading.Thread`` or a pin-memory thread would be missing without a word. So while a pass
runs, a process-wide PyTorch profiler session with ``profile_all_threads`` records the operators
of every thread (name, thread and times only: no shapes, no memory, no stacks). When the pass
ends, the operators that ran on threads other than its own are counted, and the pass reports
itself partial with a diagnostic naming them. They are never counted in as the workload's own: a
foreign thread may have run them.

The watching passes' own threads are not recorded: while a pass runs, PyTorch's
``RecordFunction`` is switched off on its thread (and the threads that inherit its state, which
its dispatch mode reaches too), so the session costs little more than the operators of the other
threads. Each watching pass records one marker event on its thread as it ends, which tells that
the session was still its own.

One session serves every pass running at the same time on any thread: the first pass starts it,
each pass that ends reads it (which stops it) and starts it again for the passes still running.
Threads that run a pass of their own are not foreign to the others while that pass runs: their
operators are counted by their own pass.

PyTorch runs one profiler session at a time. The session is not started, and the pass says it
could not watch, when a profiler is active on the thread, when a session of the user's is
prepared or recording anywhere (see :class:`_UserProfilers`), or when the profiler cannot start.
A session of the user's that starts during a pass stops the watch first; one started through
PyTorch's private entry points takes the session over, and the pass then finds no event of its
own thread, not even its marker.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._compiled import CompiledWatch, compiled_diagnostic

__all__ = [
    "OtherThreads",
    "ThreadWatch",
    "other_threads_diagnostic",
    "other_threads_reason",
    "user_profiler_active",
    "user_profiler_starts",
    "watch_diagnostics",
]

# The kineto library prints a line each time a profiler session starts and stops (and an error
# line where no GPU exists). Its log level is read once, when the library initialises: set for
# that moment only, unless the user chose a level.
_KINETO_LOG_LEVEL = "KINETO_LOG_LEVEL"
_SILENT_LEVEL = "6"

# ``RecordScope.FUNCTION``: operator calls (the other scopes are autograd nodes, TorchScript
# functions, ``record_function`` annotations and others, which are not operators).
_FUNCTION_SCOPE = 0
_EXAMPLES = 3
_MARKER = "torchscan::thread_watch"
# How far the profiler's event times may be from ``time.time_ns`` (another clock, converted).
_CLOCK_SLACK_NS = 1_000_000


class _Quiet(threading.local):
    """How many passes on this thread switched its ``RecordFunction`` off."""

    depth = 0


_QUIET = _Quiet()


def _record_functions(enabled: bool) -> None:
    """Switch ``RecordFunction`` on this thread on or off (no-op where torch cannot)."""
    import torch

    switch = getattr(torch._C._autograd, "_enable_record_function", None)
    if switch is not None:
        switch(enabled)


def _quiet_enter() -> bool:
    """Stop recording this thread's operators while its pass runs; whether it was done.

    Nothing is switched off while a profiler of the user's records this thread: it keeps every
    event. ``RecordFunction`` is on by default and only private torch API turns it off, so the
    last pass to leave switches it back on.
    """
    import torch

    if _QUIET.depth == 0:
        try:
            if str(torch._C._autograd._profiler_type()) != "ActiveProfilerType.NONE":
                return False
            _record_functions(False)
        except Exception:  # a PyTorch without these entry points: the thread stays recorded
            return False
    _QUIET.depth += 1
    return True


def _quiet_exit() -> None:
    _QUIET.depth -= 1
    if _QUIET.depth == 0:
        _record_functions(True)


def _marker() -> bool:
    """Record one event on this thread (with ``RecordFunction`` on); whether it was recorded."""
    import torch

    fast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
    if fast is None:
        return False
    if _QUIET.depth:
        _record_functions(True)
    try:
        with fast(_MARKER):
            pass
    except Exception:
        return False
    finally:
        if _QUIET.depth:
            _record_functions(False)
    return True


@dataclass(frozen=True)
class OtherThreads:
    """What a :class:`ThreadWatch` found when its pass ended."""

    #: Whether the other threads were watched for the whole pass.
    watched: bool
    #: Why they were not (``None`` when watched).
    reason: str | None = None
    #: Operator calls on other threads, outermost calls only (the calls their code made).
    calls: int = 0
    #: Distinct threads those calls ran on.
    threads: int = 0
    #: The most frequent of those operators, ``(name, calls)``, most frequent first.
    operators: tuple[tuple[str, int], ...] = ()
    #: Times the session was read and started again while the pass ran (another pass ended):
    #: operators other threads ran in those moments were not seen.
    gaps: int = 0


class _Participant:
    __slots__ = (
        "active",
        "counts",
        "end_ns",
        "gaps",
        "own_events",
        "reason",
        "seen",
        "start_ns",
        "threads",
        "tid",
    )

    def __init__(self, tid: int, seen: set[int], active: bool) -> None:
        self.tid = tid
        self.seen = seen
        # An active participant watches; a passive one only says its thread runs a pass of its
        # own (the analysis of ``crawl_module``), so its operators are foreign to nobody.
        self.active = active
        self.start_ns = time.time_ns()
        self.end_ns: int | None = None
        self.gaps = 0
        self.counts: Counter[str] = Counter()
        self.threads: set[int] = set()
        self.own_events = 0
        self.reason: str | None = None


class _Session:
    """The process-wide profiler session shared by every active :class:`ThreadWatch`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.participants: list[_Participant] = []
        # Passes that ended while the session ran: their threads (and the threads their
        # dispatch modes reached) were their own while they ran, and only then.
        self.ended: list[_Participant] = []
        self.running = False

    # -- the profiler ----------------------------------------------------------------------

    def _start(self) -> str | None:
        """Start the profiler; the reason it could not, or ``None``."""
        try:
            import torch

            api: Any = torch.autograd  # the profiler's entry points, as torch.profiler uses them
            busy = user_profiler_active()
            if busy is not None:
                return busy
            experimental = torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
            config = api.ProfilerConfig(
                api.ProfilerState.KINETO, False, False, False, False, False, experimental
            )
            activities = {api.ProfilerActivity.CPU}
            with _quiet_kineto():
                # Prepared first, as torch.profiler does: enabling an unprepared session crashes.
                _profiler_function("_prepare_profiler")(config, activities)
                _profiler_function("_enable_profiler")(config, activities)
        except Exception as error:  # an older PyTorch, or a profiler already running
            return f"the PyTorch profiler could not watch them ({type(error).__name__}: {error})"
        self.running = True
        return None

    def _stop(self) -> list[Any] | str:
        """Stop the profiler: its events, or the reason they could not be read."""
        self.running = False
        try:
            return list(_profiler_function("_disable_profiler")().events())
        except Exception as error:
            return f"the PyTorch profiler failed ({type(error).__name__}: {error})"

    # -- participants ----------------------------------------------------------------------

    def _watching(self) -> list[_Participant]:
        return [each for each in self.participants if each.active and each.reason is None]

    def _own(self, now: int) -> dict[int, list[tuple[int, int]]]:
        """The threads of the passes of the running segment, each with the times it was own.

        The profiler's times are converted from another clock than ``time.time_ns``: each
        interval is widened by :data:`_CLOCK_SLACK_NS` on both sides.
        """
        own: dict[int, list[tuple[int, int]]] = {}
        for each in (*self.participants, *self.ended):
            end = now if each.end_ns is None else each.end_ns
            interval = (each.start_ns - _CLOCK_SLACK_NS, end + _CLOCK_SLACK_NS)
            for tid in {each.tid, *each.seen}:
                own.setdefault(tid, []).append(interval)
        return own

    def join(self, participant: _Participant) -> None:
        with self.lock:
            if participant.active and not self.running:
                participant.reason = self._start()
                if participant.reason is not None:
                    return
                self.ended = []
            self.participants.append(participant)

    def leave(self, participant: _Participant) -> None:
        with self.lock:
            if participant not in self.participants:
                return
            participant.end_ns = time.time_ns()
            self.participants.remove(participant)
            if not participant.active or participant.reason is not None or not self.running:
                if self.running:
                    self.ended.append(participant)
                return
            events = self._stop()
            watching = [participant, *self._watching()]
            now = time.time_ns()
            self.participants.append(participant)  # its own interval, for the reading
            own = self._own(now)
            self.participants.remove(participant)
            if isinstance(events, str):
                for each in watching:
                    each.reason = each.reason or events
            else:
                _distribute(events, watching, own, now)
            self.ended = []
            if self._watching():
                reason = self._start()
                for each in self._watching():
                    if reason is not None:
                        each.reason = reason
                    else:
                        each.gaps += 1

    def yield_to_user(self) -> None:
        """A profiler of the user's is starting: stop the session first, so theirs runs alone.

        The passes still running stop watching (their note says why); the operators recorded
        so far are not read, which keeps the user's start short.
        """
        with self.lock:
            if not self.running:
                return
            self._stop()
            self.ended = []
            for each in self._watching():
                each.reason = "another PyTorch profiler started while the pass ran"


_SESSION = _Session()


class _UserProfilers:
    """The user's PyTorch profiler sessions, seen where PyTorch's functions start them.

    ``torch.profiler`` drives ``torch.autograd.profiler``, which prepares, starts and stops
    sessions through three functions it takes from ``torch.autograd``; torchscan wraps them in
    both modules (see :func:`_watch_user_profilers`). A session started through ``torch._C``
    directly is not seen here (the watch finds it afterwards, from its events).

    PyTorch's profiler library runs one session at a time: starting the watch's session while
    the user's is prepared (a ``torch.profiler.schedule`` in its warm-up) or recording cancels
    theirs, and their trace export then crashes. So the watch does not start while theirs
    exists, and when theirs starts during a pass the watch stops first (the pass says so).
    """

    installed = False
    #: Whether a session of the user's is prepared or recording.
    session = False
    #: How many times a session was prepared or started through the wrapped functions.
    starts = 0


_USER = _UserProfilers()
_INSTALL_LOCK = threading.Lock()


def _user_session_starts() -> None:
    _USER.session = True
    _USER.starts += 1
    _SESSION.yield_to_user()
    if _QUIET.depth:
        _record_functions(True)  # the user's profiler records this thread's operators again


def _user_session_ends() -> None:
    _USER.session = False


def _watch_user_profilers() -> None:
    """Wrap the functions ``torch.autograd.profiler`` calls to prepare, start and stop a session.

    The wrappers call PyTorch's own functions with the same arguments and return what they
    return; they only note that the user's session exists. Installed once, when torch is
    loaded (at ``import torchscan`` when torch came first, else at the first pass).
    """
    if _USER.installed:
        return
    modules = [sys.modules.get(name) for name in ("torch.autograd", "torch.autograd.profiler")]
    if modules[1] is None:
        return
    with _INSTALL_LOCK:
        if _USER.installed:
            return
        for module in modules:
            for name, before, after in (
                ("_prepare_profiler", _user_session_starts, None),
                ("_enable_profiler", _user_session_starts, None),
                ("_disable_profiler", None, _user_session_ends),
            ):
                original = getattr(module, name, None)
                if original is None:
                    continue
                # The watch's own session calls PyTorch's functions, never the wrappers.
                _ORIGINALS.setdefault(name, getattr(original, "__wrapped__", original))
                if not getattr(original, "_torchscan_noting", False):
                    setattr(module, name, _noting(original, before, after))
        _USER.installed = True


def _noting(
    original: Callable[..., Any],
    before: Callable[[], None] | None,
    after: Callable[[], None] | None,
) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before()
        try:
            return original(*args, **kwargs)
        finally:
            if after is not None:
                after()

    call._torchscan_noting = True  # type: ignore[attr-defined]
    return call


#: PyTorch's own session functions, as they were before any wrapping.
_ORIGINALS: dict[str, Callable[..., Any]] = {}


def _profiler_function(name: str) -> Any:
    """PyTorch's ``torch.autograd.<name>`` itself, never the wrapper that notes the user's."""
    import torch

    return _ORIGINALS.get(name) or getattr(torch.autograd, name)


def user_profiler_starts() -> int:
    """How many profiler sessions were prepared or started through PyTorch's functions so far."""
    return _USER.starts


def user_profiler_active() -> str | None:
    """Why a profiler session of the user's rules out another one now, or ``None``."""
    import torch

    _watch_user_profilers()
    if str(torch._C._autograd._profiler_type()) != "ActiveProfilerType.NONE":
        return "a PyTorch profiler is active on this thread"
    if _USER.session or getattr(torch.autograd.profiler, "_is_profiler_enabled", False):
        return "a PyTorch profiler is prepared or recording in this process"
    return None


def _distribute(
    events: list[Any],
    participants: list[_Participant],
    own: dict[int, list[tuple[int, int]]],
    end_ns: int,
) -> None:
    """Count the events of foreign threads into each participant whose pass they overlapped.

    ``own`` holds the threads that ran a pass of their own during the segment, with the times
    they did: an operator a thread runs after its own pass ended is foreign again.
    """
    by_thread: dict[int, list[tuple[int, int, str]]] = {}
    own_events: Counter[int] = Counter()
    for event in events:
        try:
            tid = event.device_resource_id()
            start = event.start_ns()
            intervals = own.get(tid)
            if intervals is not None and any(a <= start <= b for a, b in intervals):
                own_events[tid] += 1
                continue
            if event.scope() != _FUNCTION_SCOPE:
                continue
            end = start + event.duration_ns()
            name = str(event.name())
        except Exception:  # an event of a kind this reading does not know
            continue
        by_thread.setdefault(tid, []).append((start, end, name))
    # The outermost calls of each foreign thread: a call inside another call (``linear`` runs
    # ``addmm``) is part of it.
    outermost: list[tuple[int, int, str]] = []
    for tid, calls in by_thread.items():
        calls.sort(key=lambda call: (call[0], -call[1]))
        reach = -1
        for start, end, name in calls:
            if start >= reach:
                outermost.append((start, tid, name))
                reach = end
            else:
                reach = max(reach, end)
    for participant in participants:
        participant.own_events += own_events[participant.tid]
        for start, tid, name in outermost:
            if participant.start_ns <= start <= end_ns:
                participant.counts[name] += 1
                participant.threads.add(tid)


class _QuietKineto:
    """Set kineto's log level to silent while it initialises, unless the user set one."""

    initialised = False

    def __enter__(self) -> None:
        self._set = not _QuietKineto.initialised and _KINETO_LOG_LEVEL not in os.environ
        if self._set:
            os.environ[_KINETO_LOG_LEVEL] = _SILENT_LEVEL

    def __exit__(self, *exc: object) -> None:
        _QuietKineto.initialised = True
        if self._set:
            os.environ.pop(_KINETO_LOG_LEVEL, None)


def _quiet_kineto() -> _QuietKineto:
    return _QuietKineto()


class ThreadWatch:
    """Context manager: watch the other threads while a pass runs on this one.

    ``seen`` is the set of native thread ids on which the pass's own dispatch mode ran (it may
    grow while the pass runs): those threads are not foreign. Read :attr:`result` after exit.
    A passive watch (``active=False``) watches nothing: it tells the watching passes on other
    threads that this thread's operators belong to a pass of its own.
    """

    def __init__(self, seen: set[int], *, active: bool = True) -> None:
        """Nothing starts until entered; ``active=False`` only claims the thread (see above)."""
        self._seen = seen
        self._active = active
        self._participant: _Participant | None = None
        self._quiet = False
        self.result = OtherThreads(False, "the pass has not run")

    def __enter__(self) -> ThreadWatch:
        """Join (or start) the process-wide session."""
        _watch_user_profilers()
        participant = _Participant(threading.get_native_id(), self._seen, self._active)
        _SESSION.join(participant)
        self._participant = participant
        if participant.reason is None and participant.active:
            self._quiet = _quiet_enter()
        return self

    def __exit__(self, *exc: object) -> None:
        """Leave the session and read what ran elsewhere."""
        participant, self._participant = self._participant, None
        if participant is None:
            return
        quiet, self._quiet = self._quiet, False
        marked = participant.reason is None and participant.active and _SESSION.running
        marked = marked and _marker()
        if quiet:
            _quiet_exit()
        _SESSION.leave(participant)
        # The session recorded no event of this thread, not even the marker (or, where no marker
        # could be recorded, none of the pass's operators): another profiler took it over.
        ran = marked or (not quiet and participant.tid in participant.seen)
        lost = participant.own_events == 0 and ran
        if participant.reason is None and participant.active and lost:
            participant.reason = "another PyTorch profiler started while the pass ran" + (
                " (it recorded no operator of the pass's thread until the pass ended; start it"
                " before the measurement to keep them)"
                if quiet
                else ""
            )
        if participant.reason is not None or not participant.active:
            self.result = OtherThreads(False, participant.reason or "not watched")
            return
        self.result = OtherThreads(
            True,
            None,
            sum(participant.counts.values()),
            len(participant.threads),
            tuple(participant.counts.most_common(_EXAMPLES)),
            participant.gaps,
        )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def other_threads_reason(found: OtherThreads) -> str | None:
    """The partial reason of a pass whose workload ran operators elsewhere, or ``None``."""
    if not found.calls:
        return None
    return (
        f"{_plural(found.calls, 'operator call')} ran on "
        f"{_plural(found.threads, 'other thread')} while the workload ran; they are not counted"
    )


def other_threads_diagnostic(found: OtherThreads, metric: str) -> dict[str, Any] | None:
    """The diagnostic of a pass's watch: operators elsewhere (warning), or no watch (note)."""
    if not found.watched:
        return {
            "code": "note",
            "severity": "info",
            "metric": metric,
            "message": (
                f"operators on other threads were not watched: {found.reason}; work the "
                "workload hands to other threads would be missing from this pass"
            ),
        }
    if not found.calls:
        if not found.gaps:
            return None
        return {
            "code": "note",
            "severity": "info",
            "metric": metric,
            "message": (
                f"no operator ran on another thread while the watch of other threads ran, but "
                f"it was read and started again {_plural(found.gaps, 'time')} while the pass "
                "ran (another pass ended), about a millisecond each: operators other threads "
                "ran in those moments were not seen"
            ),
        }
    examples = ", ".join(f"`{name}` ({count:,})" for name, count in found.operators)
    return {
        "code": "other_threads",
        "severity": "warning",
        "metric": metric,
        "message": (
            f"{_plural(found.calls, 'operator call')} ran on "
            f"{_plural(found.threads, 'other thread')} while the workload ran (most frequent: "
            f"{examples}); this pass sees its own thread only, so they are not counted and "
            "the value is a lower bound. Run the work on the calling thread (call the model "
            "directly instead of through a thread pool or threading.Thread) to count it"
        ),
    }


def watch_diagnostics(
    found: OtherThreads | None, compiled: CompiledWatch, metric: str, what: str
) -> list[dict[str, Any]]:
    """What a dispatch-mode pass adds for ``metric``: other threads, then compiled code.

    ``found`` is ``None`` when the pass did not watch; ``what`` names what the pass measured of
    eager execution (see :func:`~torchscan._compiled.compiled_diagnostic`).
    """
    diagnostics = [
        other_threads_diagnostic(found, metric) if found is not None else None,
        compiled_diagnostic(compiled, metric, what),
    ]
    return [diagnostic for diagnostic in diagnostics if diagnostic is not None]


_watch_user_profilers()  # torch imported before torchscan: watched from the start
