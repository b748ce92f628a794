"""Process RSS of a workload, measured in a fresh child process of the same interpreter.

RSS belongs to a whole process, so it is only meaningful in a process that runs nothing but the
workload: the child (:mod:`torchscan.measure.rss.worker`) imports the workload by reference, reads
its baseline, resets its high-water mark, calls the workload and reports one JSON line. The numbers
are process RSS and are never added to tensor or allocator peaks.

The child runs under a supervisor (:mod:`torchscan.measure.rss.supervisor`), a small
standard-library process that reaps it with ``os.wait4`` and, as a Linux child subreaper, kills and
reaps every process the child started before it exits; this module asks it to stop by closing its
standard input, and which, should it not finish within a grace derived from the timeout, is frozen
with its whole tree and killed, descendants first. So the child's whole process tree is gone when
:func:`measure_process_rss` returns.

The child never runs the script being run (``__main__``) again: an object of that script, a
reference that leads to its file or its ``-m`` name, a lambda, a closure or a rebound name is
refused before any child starts, and the child refuses an imported object whose fingerprint
(:func:`torchscan.measure.rss.worker.workload_fingerprint`) is not the one given. A callable object
(or a method of one) also goes by pickle, so that the child runs it with its current state, not the
state its module gave it at import.

Linux note: ``ru_maxrss`` of a spawned child starts at the peak RSS of the process it was spawned
from (the kernel folds the pre-``exec`` address space's high-water mark into it), and resetting
the high-water mark also erases the pre-reset peak from it. So the lifetime peak is ``ru_maxrss``
only when it exceeds the supervisor's own peak, which proves it is the child's; otherwise it is
the child's own VmHWM, read before the reset and after the calls.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
import re
import selectors
import signal
import site
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from types import FunctionType, MethodType, ModuleType
from typing import Any

from ..._references import location_file
from ...errors import InvalidArgumentError
from ...reports import Diagnostic, DiagnosticCode, MetricResult
from ...reports.metrics import complete, unavailable
from .supervisor import process_table
from .worker import (
    CHILD_MARKER_ENV,
    PROTOCOL,
    SYS_PATH_ENV,
    split_reference,
    workload_fingerprint,
)

__all__ = [
    "SCOPE_BASELINE",
    "SCOPE_LIFETIME",
    "SCOPE_WORKLOAD",
    "RssResult",
    "measure_process_rss",
    "workload_reference",
]

SCOPE_LIFETIME = "fresh child process: lifetime"
SCOPE_WORKLOAD = "fresh child process: workload calls"
SCOPE_BASELINE = "fresh child process: after imports and set-up"

NOT_IMPORTABLE = "workload not importable"
_METRIC = "process_rss"
_STDERR_TAIL_LINES = 20
_STDERR_KEEP_B = 64 << 10
_STDERR_LINE_CHARS = 500
_STDOUT_KEEP_B = 1 << 20
_ERROR_CHARS = 2000
_REPORT_KEEP_B = 4096
_POLL_S = 0.02
# Once the supervisor is reaped every process that held the output pipes is gone; read what is
# there for at most this long.
_DRAIN_GRACE_S = 0.5
# How long the supervisor may take to kill and reap the process tree once asked to stop: a
# quarter of the call's timeout, within these bounds (see _stop_grace_s).
_STOP_GRACE_MIN_S = 1.0
_STOP_GRACE_MAX_S = 10.0
# Pause between reads of /proc while freezing a process tree.
_FREEZE_POLL_S = 0.005
# Run by path with ``-I -S``: it needs nothing but the standard library.
_SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")

# The methods an unavailable metric would have been measured by.
_PLANNED_BASELINE = "RSS of a fresh child process after imports and set-up"
_PLANNED_WORKLOAD = "VmHWM of a fresh child process, reset after set-up, read after the calls"
_PLANNED_LIFETIME = "peak RSS of a fresh child process (ru_maxrss via os.wait4)"

_HOW_TO_REFERENCE = (
    "Define the workload as a module-level function in a module (or a module-level callable "
    "object) and import it from there, or pass a reference such as 'package.module:function' or "
    "'path/to/file.py:function' to a file other than the script being run; to measure a "
    "function of a script, keep the script's own work under 'if __name__ == \"__main__\":' and "
    "run python -m torchscan measure path/to/script.py:function --metrics process_rss."
)
_WHY_BY_REFERENCE = (
    "process RSS is measured in a fresh child process, which imports the workload by reference "
    "and never runs the top level of the script being run (__main__) again"
)


@dataclass(frozen=True)
class RssResult:
    """The three process-RSS numbers of one child, in bytes, with what went wrong."""

    baseline: MetricResult
    """RSS after imports and set-up, before the first workload call."""
    workload_peak: MetricResult
    """Peak RSS while running the workload calls (high-water mark reset after set-up)."""
    lifetime_peak: MetricResult
    """Peak RSS over the child's whole life."""
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class _Resolved:
    """How the child imports a workload, and what it must find there."""

    reference: str
    fingerprint: dict[str, Any] | None
    stateful: bool = False
    """A callable object (or a method of one): the child gets its current state by pickle, since
    importing it afresh gives the object as its module built it, not as it is now."""
    module_name: str | None = None
    """The module's name here, when the child loads it from its file under a private name: the
    pickle names its classes by this name."""


@dataclass
class _Tally:
    """Process-RSS requests refused in this process because it is itself a process-RSS child."""

    nested_requests: int = 0


_TALLY = _Tally()


def __getattr__(name: str) -> int:
    # The worker (``torchscan.measure.rss.worker``) reads ``nested_requests`` after importing the
    # workload's module.
    if name == "nested_requests":
        return _TALLY.nested_requests
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- references ---------------------------------------------------------------------------------


def workload_reference(workload: object) -> str | None:
    """A reference the child can import ``workload`` by, or ``None`` when there is none.

    A string is checked for form only (``"module:qualname"`` or ``"path/to/file.py:qualname"``;
    a relative path is made absolute; ``__main__`` is refused) and never imported here. A
    function, class, bound method or callable object gives ``"module:qualname"`` when its module
    is importable by name in a fresh process, else ``"/abs/path/file.py:qualname"`` from the
    module's file, provided that the name leads back to this very object. Objects of the script
    being run (``__main__``), references that lead to its file or to the module name it was run
    as (``python -m``), lambdas, closures and nested functions, functions whose module binds
    their name to another object, bound methods of unnamed objects and anything else not
    re-importable give ``None``. (A callable object's current state is sent by pickle besides.)
    """
    resolved = _resolve(workload)
    return resolved.reference if isinstance(resolved, _Resolved) else None


def _resolve(workload: object) -> _Resolved | str:
    """The reference and fingerprint of ``workload``, or why the child cannot import it."""
    resolved = _resolve_reference(workload)
    if isinstance(resolved, _Resolved):
        rerun = _names_the_main_script(resolved.reference)
        if rerun is not None:
            return rerun
    return resolved


def _resolve_reference(workload: object) -> _Resolved | str:
    if isinstance(workload, str):
        reference = _string_reference(workload)
        if reference is None:
            return (
                f"{workload!r} is not a reference of the form 'package.module:function' or "
                "'path/to/file.py:function' (and '__main__' names the child itself)"
            )
        return _Resolved(reference, None)
    if isinstance(workload, MethodType):
        return _resolve_method(workload)
    qualname = getattr(workload, "__qualname__", None)
    module_name = getattr(workload, "__module__", None)
    if isinstance(workload, (FunctionType, type)) or (
        isinstance(qualname, str) and isinstance(module_name, str)
    ):
        # A function, class or builtin; plain objects have no ``__qualname__`` of their own.
        return _resolve_named(workload, qualname, module_name)
    if callable(workload):
        # A callable object (an ``nn.Module`` instance, say) bound to a module-level name.
        found = _global_name_of(workload)
        if found is None:
            where = (
                "is bound to a name in the script being run (__main__) only"
                if _bound_in_main(workload)
                else "is not bound to a name at the top level of an importable module"
            )
            return f"the {type(workload).__name__} object given {where}"
        return _with_module(workload, *found, stateful=True)
    return f"a {type(workload).__name__} is not callable"


def _bound_in_main(obj: object) -> bool:
    main = sys.modules.get("__main__")
    return main is not None and any(value is obj for value in list(vars(main).values()))


def _resolve_named(workload: object, qualname: object, module_name: object) -> _Resolved | str:
    """A function, class or builtin: importable by its own module and qualified name only."""
    label = f"{qualname}" if isinstance(qualname, str) else repr(workload)
    if not isinstance(qualname, str) or not isinstance(module_name, str):
        return f"{label} has no module and qualified name to import it by"
    if "<lambda>" in qualname.split("."):
        return f"{label!r} is a lambda, which has no name to import it by"
    if "<locals>" in qualname.split("."):
        return f"{label!r} is a closure or nested function, which cannot be imported by name"
    if module_name in ("__main__", "__mp_main__"):
        return f"{label!r} is defined in the script being run (__main__)"
    module = sys.modules.get(module_name)
    if module is None:
        return f"its module {module_name!r} is not imported in this process"
    if not _resolves_to(module, qualname, workload):
        return (
            f"{module_name}.{qualname} is now another object than the workload given (the name "
            "was rebound after the function was defined)"
        )
    return _with_module(workload, module, qualname)


def _resolve_method(workload: MethodType) -> _Resolved | str:
    """A bound method: of a class (``Class.classmethod``) or of a module-level object."""
    module_name = getattr(workload, "__module__", None)
    qualname = getattr(workload, "__qualname__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module_name in ("__main__", "__mp_main__"):
        return f"{qualname!r} is defined in the script being run (__main__)"
    if (
        isinstance(qualname, str)
        and module is not None
        and _resolves_to(module, qualname, workload)
    ):
        return _with_module(workload, module, qualname)
    owner_name = _global_name_of(workload.__self__)
    if owner_name is None:
        where = (
            "bound to a name in the script being run (__main__) only"
            if _bound_in_main(workload.__self__)
            else "not bound to a name at the top level of an importable module"
        )
        return f"{qualname!r} is a method of an object {where}"
    owner_module, name = owner_name
    return _with_module(
        workload, owner_module, f"{name}.{workload.__func__.__name__}", stateful=True
    )


def _with_module(
    workload: object, module: ModuleType, qualname: str, *, stateful: bool = False
) -> _Resolved | str:
    if module.__name__ in ("__main__", "__mp_main__"):
        return f"{qualname!r} is defined in the script being run (__main__)"
    reference = _module_reference(module, qualname)
    if reference is None:
        return f"its module {module.__name__!r} cannot be imported in a fresh process"
    by_path = not reference.startswith(f"{module.__name__}:")
    return _Resolved(
        reference,
        workload_fingerprint(workload),
        stateful,
        module.__name__ if by_path and stateful else None,
    )


def _real_path(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _main_script() -> tuple[str | None, str | None]:
    """The real path of the script being run and the module name it was run as (``-m``)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    return (
        _real_path(path) if isinstance(path, str) else None,
        name if isinstance(name, str) else None,
    )


def _names_the_main_script(reference: str) -> str | None:
    """Why importing ``reference`` would run the script being run again, or ``None``.

    The script's top level is its work when it has no main guard (a loop measuring workloads,
    files written, a training run): the child must not run it a second time, whatever name or
    path leads to it.
    """
    main_path, main_name = _main_script()
    if main_path is None and main_name is None:
        return None  # an interactive session or python -c: no file to run again
    split = split_reference(reference)
    if split is None:
        return None
    target, qualname, is_path = split
    if is_path:
        same = main_path is not None and _real_path(target) == main_path
        # Reports carry no paths: the file's name says which script it is.
        shown = f"{os.path.basename(target)}:{qualname}"
    else:
        found = location_file(target)  # found without importing anything
        same = target == main_name or (
            main_path is not None and found is not None and _real_path(found) == main_path
        )
        shown = reference
    if not same:
        return None
    return (
        f"{shown!r} names the script being run (__main__): importing it in the child would run "
        "the script's top level a second time"
    )


def _string_reference(text: str) -> str | None:
    split = split_reference(text)
    if split is None:
        return None
    target, qualname, is_path = split
    if is_path:
        return f"{os.path.abspath(target)}:{qualname}"
    return f"{target}:{qualname}"


def _resolves_to(module: ModuleType, qualname: str, workload: object) -> bool:
    """Whether ``qualname`` in ``module`` is ``workload`` (``<locals>`` and lambdas never are)."""
    if not all(part.isidentifier() for part in qualname.split(".")):
        return False
    found: Any = module
    try:
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:  # a missing name, or a module __getattr__ or property that raises
        return False
    if found is workload:
        return True
    # ``Class.classmethod`` builds a new bound method on each access; equal ones are the same.
    # Only methods are compared with ``==``: a user object's ``__eq__`` may do anything.
    return isinstance(found, MethodType) and isinstance(workload, MethodType) and found == workload


def _global_name_of(obj: object) -> tuple[ModuleType, str] | None:
    """The module-level name ``obj`` is bound to: in its own module or its class's.

    Never in ``__main__``: the child does not run the script being run again.
    """
    own_module = getattr(obj, "__module__", None)
    names = [own_module if isinstance(own_module, str) else "", type(obj).__module__]
    candidates = [
        sys.modules.get(name)
        for name in dict.fromkeys(names)
        if name and name not in ("__main__", "__mp_main__")
    ]
    for module in candidates:
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            if value is obj and name.isidentifier():
                return module, name
    return None


def _module_reference(module: ModuleType, qualname: str) -> str | None:
    name = module.__name__
    if _importable_by_name(name, module):
        return f"{name}:{qualname}"
    # Loaded from a file under a name a fresh process cannot find (a module loaded with
    # ``spec_from_file_location``, such as ``python -m torchscan measure file.py:fn`` loads): the
    # child loads the same file by path, through the loader the command line uses
    # (torchscan._references, the same private name for the same file), and the fingerprint
    # checks it.
    path = getattr(module, "__file__", None)
    if isinstance(path, str) and path.endswith(".py") and os.path.isfile(path):
        return f"{os.path.abspath(path)}:{qualname}"
    return None


def _importable_by_name(name: str, module: ModuleType) -> bool:
    """Whether a fresh process (given this ``sys.path``) would import ``name`` as ``module``.

    Asks the import system's finders for the top-level package directly, bypassing
    ``sys.modules``, and checks the answer is the file that is loaded here.
    """
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.name != name:
        return False  # registered under an alias
    top = name.partition(".")[0]
    if top in sys.builtin_module_names:
        return True
    loaded = sys.modules.get(top)
    loaded_spec = getattr(loaded, "__spec__", None)
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            found = find_spec(top, None)
        except Exception:  # a broken third-party finder answers nothing; ask the next one
            continue
        if found is None:
            continue
        if loaded_spec is not None and found.origin != loaded_spec.origin:
            return False
        return _inside_package(module, found.submodule_search_locations) if "." in name else True
    return False


def _inside_package(module: ModuleType, locations: Any) -> bool:
    """Whether a submodule's file lies in its top-level package's folders (so the name finds it)."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or locations is None:
        return True  # nothing to contradict the name
    path = os.path.abspath(path)
    return any(path.startswith(os.path.join(os.path.abspath(folder), "")) for folder in locations)


# --- running the child ---------------------------------------------------------------------------


@dataclass
class _ChildRun:
    """What the parent saw of one child: its wait status, rusage peak and output."""

    wait_status: int | None = None
    maxrss_b: int | None = None
    spawner_peak_b: int | None = None
    """Peak RSS of the process the worker was spawned from (the supervisor), which the kernel
    carries into the worker's ``ru_maxrss``."""
    stdout: bytearray = field(default_factory=bytearray)
    stderr_tail: bytearray = field(default_factory=bytearray)
    report: bytearray = field(default_factory=bytearray)
    timed_out: bool = False
    start_error: str | None = None


def _maxrss_to_bytes(maxrss: int) -> int:
    # ru_maxrss is in bytes on macOS and in KiB on Linux and the BSDs.
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def _pump(selector: selectors.BaseSelector, run: _ChildRun, timeout_s: float) -> None:
    """Read what is ready on the supervisor's pipes, waiting at most ``timeout_s``."""
    if not selector.get_map():
        time.sleep(timeout_s)
        return
    for key, _ in selector.select(timeout=timeout_s):
        fd = key.fd
        chunk = os.read(fd, 65536)
        if not chunk:
            selector.unregister(fd)
        elif key.data == "stdout":
            if len(run.stdout) < _STDOUT_KEEP_B:
                run.stdout += chunk
        elif key.data == "report":
            if len(run.report) < _REPORT_KEEP_B:
                run.report += chunk
        else:
            run.stderr_tail += chunk
            del run.stderr_tail[:-_STDERR_KEEP_B]


def _read_report(run: _ChildRun) -> None:
    """Take the worker's wait status and peaks from the supervisor's one report line."""
    words = bytes(run.report).decode("utf-8", errors="replace").strip().split(" ", 1)
    if words[0] == "failed" and len(words) == 2:
        run.start_error = words[1]
        return
    fields = words[1].split() if len(words) == 2 else []
    if words[0] != "exited" or len(fields) != 4 or not all(f.isdigit() for f in fields):
        return
    run.wait_status, run.maxrss_b, run.spawner_peak_b = (int(f) for f in fields[:3])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Ask the supervisor to kill the worker and sweep (idempotent): close its standard input."""
    if proc.stdin is not None and not proc.stdin.closed:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _stop_grace_s(timeout_s: float) -> float:
    """How long the supervisor gets to kill and reap the tree: ``timeout_s / 4``, in [1, 10] s."""
    return min(_STOP_GRACE_MAX_S, max(_STOP_GRACE_MIN_S, timeout_s / 4))


def _is_stopped(state: str) -> bool:
    return state in ("T", "t")


def _is_dead(state: str) -> bool:
    return state in ("Z", "X", "x")


def _kill_tree(root_pid: int, grace_s: float) -> None:
    """SIGKILL ``root_pid`` and every process below it, descendants first; all dead on return.

    The tree is frozen top-down with SIGSTOP before anything is killed: a stopped parent cannot
    reap its children, so a pid read from ``/proc`` below a stopped process is still that process
    when it is signalled, never a reused one. Then every process below the root is SIGKILLed, and
    the root, still stopped, holds each as a zombie until it has died; a descendant orphaned
    meanwhile becomes the root's child (it is a subreaper) and is killed too. The root goes last.
    Freezing takes at most half of ``grace_s``, the whole at most ``grace_s``. Where there is no
    ``/proc`` only the root is killed.
    """
    started = time.monotonic()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(root_pid, signal.SIGSTOP)
    tree: list[int] = []
    table = process_table()
    while table:
        tree = []
        settled = True
        # Only the children of a process that has stopped are safe to signal.
        parents = [root_pid]
        while parents:
            parent = parents.pop()
            state = table.get(parent, (0, "X"))[1]
            if _is_dead(state):
                continue
            tree.append(parent)
            if not _is_stopped(state):
                settled = False
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(parent, signal.SIGSTOP)
                continue
            parents.extend(pid for pid, (ppid, _) in table.items() if ppid == parent)
        if settled or time.monotonic() >= started + grace_s / 2:
            break
        time.sleep(_FREEZE_POLL_S)
        table = process_table()
    killed: list[int] = []
    to_kill = [pid for pid in reversed(tree) if pid != root_pid]
    while table:
        # Each pid is signalled once, while its parent (stopped, or dead and unreaped) holds it.
        for pid in to_kill:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += to_kill
        # A SIGKILLed process takes a moment to die: wait until each has. Orphans come to the
        # root, which is stopped and so reaps none of them: kill them as well.
        table = process_table()
        if not _is_stopped(table.get(root_pid, (0, "X"))[1]):
            break  # the root runs (or is gone): its children are its own to reap
        to_kill = [
            pid
            for pid, (ppid, state) in table.items()
            if ppid == root_pid and not _is_dead(state) and pid not in killed
        ]
        alive = [pid for pid in killed if not _is_dead(table.get(pid, (0, "X"))[1])]
        if time.monotonic() >= started + grace_s:
            for pid in to_kill:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            break
        if not alive and not to_kill:
            break
        time.sleep(_FREEZE_POLL_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(root_pid, signal.SIGKILL)


def _end_supervisor(proc: subprocess.Popen[bytes], wait_s: float, grace_s: float) -> None:
    """Wait ``wait_s`` for the supervisor to finish its sweep; then kill the tree ourselves.

    The supervisor normally kills and reaps everything below it at once. One that does not in
    time (stopped, starved, or stuck on a descendant) is frozen together with every process below
    it, for at most ``grace_s``, and all are SIGKILLed, its descendants first, so that none is
    left behind.
    """
    _stop(proc)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid, grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def _run_child(argv: list[str], env: dict[str, str], timeout_s: float) -> _ChildRun:
    """Run the worker ``argv`` under the supervisor; its whole process tree ends before return.

    The supervisor's standard output and error are the worker's; its report comes on a pipe of
    its own, and the end of its standard input (closed here on a timeout, on any exception,
    KeyboardInterrupt included, or by the kernel if this process dies) tells it to kill the
    worker and every descendant.
    """
    run = _ChildRun()
    grace_s = _stop_grace_s(timeout_s)
    report_read, report_write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", _SUPERVISOR, str(report_write), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            pass_fds=(report_write,),
            # Its own session, so a Ctrl-C in the terminal reaches only this process, which then
            # cleans up.
            start_new_session=True,
        )
    except OSError as error:
        os.close(report_read)
        run.start_error = f"{type(error).__name__}: {error}"
        return run
    finally:
        os.close(report_write)
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    try:
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
        selector.register(report_read, selectors.EVENT_READ, "report")
        deadline = time.monotonic() + timeout_s
        stop_by: float | None = None
        # The report pipe ends when the supervisor exits: only it holds the write end.
        while report_read in selector.get_map():
            now = time.monotonic()
            if stop_by is None and now >= deadline:
                run.timed_out = True
                _stop(proc)
                stop_by = now + grace_s
            if stop_by is not None and now >= stop_by:
                break  # the supervisor did not finish its sweep; the tree is killed below
            limit = stop_by if stop_by is not None else deadline
            _pump(selector, run, max(0.0, min(_POLL_S, limit - now)))
        left_s = grace_s if stop_by is None else max(0.0, stop_by - time.monotonic())
        _end_supervisor(proc, left_s, grace_s)
        # Every process that held the output pipes is gone: read them to their end.
        drain_until = time.monotonic() + _DRAIN_GRACE_S
        while selector.get_map() and time.monotonic() < drain_until:
            _pump(selector, run, _POLL_S)
    finally:
        # Whatever happened (KeyboardInterrupt included), no process of the tree outlives the
        # call: without its standard input the supervisor kills and reaps them all.
        if proc.returncode is None:
            _end_supervisor(proc, grace_s, grace_s)
        selector.close()
        os.close(report_read)
        if proc.stdin is not None:
            proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
    _read_report(run)
    return run


# --- interpreting the result ---------------------------------------------------------------------


# Directory parts of absolute paths (tracebacks name files): reports carry no file paths, so a
# path keeps only its last component.
_DIRECTORIES = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[/\\][^/\\\s\"':]+)+[/\\]")


def _stderr_tail(run: _ChildRun) -> str:
    lines = run.stderr_tail.decode("utf-8", errors="replace").splitlines()
    tail = [_DIRECTORIES.sub("", line)[:_STDERR_LINE_CHARS] for line in lines]
    return "\n".join(tail[-_STDERR_TAIL_LINES:])


def _with_tail(message: str, run: _ChildRun) -> str:
    tail = _stderr_tail(run)
    if not tail:
        return f"{message}; the child wrote nothing to its standard error"
    return f"{message}; last lines of the child's standard error:\n{tail}"


def _exit_reason(status: int | None) -> str:
    if status is None:
        return "child process failed (its supervisor reported no exit status)"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"child process failed (killed by signal {name})"
    return f"child process failed (exit code {os.waitstatus_to_exitcode(status)})"


def _failure(code: DiagnosticCode, reason: str, message: str) -> RssResult:
    return RssResult(
        baseline=unavailable("B", SCOPE_BASELINE, _PLANNED_BASELINE, reason),
        workload_peak=unavailable("B", SCOPE_WORKLOAD, _PLANNED_WORKLOAD, reason),
        lifetime_peak=unavailable("B", SCOPE_LIFETIME, _PLANNED_LIFETIME, reason),
        diagnostics=[{"code": code, "severity": "error", "metric": _METRIC, "message": message}],
    )


def _parse_result(stdout: bytes) -> dict[str, Any] | None:
    lines = [line for line in stdout.decode("utf-8", errors="replace").splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    try:
        payload = json.loads(lines[0])
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("protocol") != PROTOCOL:
        return None
    return payload


def _nonnegative_int(payload: dict[str, Any], key: str) -> int | None:
    value = payload.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _interpret(run: _ChildRun, *, timeout_s: float, calls: int) -> RssResult:
    if run.start_error is not None:
        return _failure(
            "child_process_failed",
            "child process failed (could not start)",
            f"the process-RSS child could not start: {run.start_error}",
        )
    if run.timed_out:
        return _failure(
            "child_process_timeout",
            f"child process timed out after {timeout_s:g}s",
            _with_tail(
                f"the process-RSS child did not finish within {timeout_s:g} s (imports, set-up "
                f"and {calls} call(s)) and was killed; give it a longer timeout",
                run,
            ),
        )
    payload = _parse_result(bytes(run.stdout))
    if payload is not None and payload.get("ok") is False:
        error = str(payload.get("error", "unknown error"))[:_ERROR_CHARS]
        stage = payload.get("stage")
        if payload.get("refused") is True:
            return _failure(
                "workload_not_importable",
                NOT_IMPORTABLE,
                f"the process-RSS child refused the workload: {error}. {_HOW_TO_REFERENCE}",
            )
        if stage == "import":
            return _failure(
                "workload_not_importable",
                NOT_IMPORTABLE,
                _with_tail(f"the process-RSS child could not import the workload: {error}", run),
            )
        what = "the workload raised" if stage == "workload" else "set-up failed"
        return _failure(
            "child_process_failed",
            _exit_reason(run.wait_status),
            _with_tail(f"in the process-RSS child, {what}: {error}", run),
        )
    exited_cleanly = (
        run.wait_status is not None
        and os.WIFEXITED(run.wait_status)
        and os.WEXITSTATUS(run.wait_status) == 0
    )
    if not exited_cleanly:
        hint = ""
        if (
            run.wait_status is not None
            and os.WIFSIGNALED(run.wait_status)
            and os.WTERMSIG(run.wait_status) == signal.SIGKILL
        ):
            hint = " (SIGKILL often means the out-of-memory killer)"
        reason = _exit_reason(run.wait_status)
        return _failure(
            "child_process_failed", reason, _with_tail(f"the process-RSS {reason}{hint}", run)
        )
    baseline_b = _nonnegative_int(payload or {}, "baseline_b")
    workload_peak_b = _nonnegative_int(payload or {}, "workload_peak_b")
    if payload is None or baseline_b is None or workload_peak_b is None:
        return _failure(
            "child_process_failed",
            "child process failed (no result line on its standard output)",
            _with_tail("the process-RSS child exited without a valid result line", run),
        )
    return _measured(payload, baseline_b, workload_peak_b, run, calls)


def _measured(
    payload: dict[str, Any],
    baseline_b: int,
    workload_peak_b: int,
    run: _ChildRun,
    calls: int,
) -> RssResult:
    call_text = f"{calls} call{'s' if calls != 1 else ''}"
    baseline_method = (
        f"{payload.get('baseline_method', 'RSS')} after imports, set-up and gc.collect(), "
        "before the first call"
    )
    if payload.get("peak_method") == "vmhwm":
        workload_method = (
            "VmHWM from /proc/self/status, reset through /proc/self/clear_refs after set-up, "
            f"read after {call_text}"
        )
        own_peak_source = "the child's VmHWM, read before the reset and after the calls"
    else:
        workload_method = (
            f"psutil RSS sampled every ~1 ms in a background thread over {call_text} (the "
            "high-water mark cannot be reset here; a spike between samples can be missed)"
        )
        own_peak_source = "the child's ru_maxrss before the calls and its sampled workload peak"
    setup_peak_b = _nonnegative_int(payload, "setup_peak_b") or 0
    own_peak_b = max(setup_peak_b, workload_peak_b, baseline_b)
    # The kernel folds the peak of the process a child was spawned from (here the small
    # supervisor) into the child's ru_maxrss: only a larger one is surely the child's own.
    attributable = (
        run.maxrss_b is not None
        and run.spawner_peak_b is not None
        and run.maxrss_b > run.spawner_peak_b
    )
    if attributable and run.maxrss_b is not None:
        lifetime_b = max(run.maxrss_b, own_peak_b)
        lifetime_method = f"ru_maxrss via os.wait4 (at least {own_peak_source})"
    else:
        lifetime_b = own_peak_b
        lifetime_method = (
            f"{own_peak_source}; ru_maxrss via os.wait4 not used: it was not above the peak RSS "
            "of the process that spawned the child, which the kernel carries into it"
        )
    return RssResult(
        baseline=complete(baseline_b, "B", SCOPE_BASELINE, baseline_method),
        workload_peak=complete(workload_peak_b, "B", SCOPE_WORKLOAD, workload_method),
        lifetime_peak=complete(lifetime_b, "B", SCOPE_LIFETIME, lifetime_method),
        diagnostics=[],
    )


def _child_env() -> dict[str, str]:
    """The child's environment: ours, plus our ``sys.path`` and a way to find torchscan itself."""
    env = dict(os.environ)
    env[SYS_PATH_ENV] = json.dumps(sys.path)
    env[CHILD_MARKER_ENV] = "1"
    # ``-m torchscan.measure.rss.worker`` runs before the child adopts this sys.path, so a torchscan
    # imported from a source folder added at run time must be on PYTHONPATH. A site directory is
    # left alone: on PYTHONPATH it would come before the standard library.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    site_dirs = {os.path.abspath(path) for path in site.getsitepackages()}
    site_dirs.add(os.path.abspath(site.getusersitepackages()))
    if package_root not in site_dirs:
        existing = env.get("PYTHONPATH")
        env["PYTHONPATH"] = package_root + (os.pathsep + existing if existing else "")
    return env


# --- entry point ---------------------------------------------------------------------------------


def measure_process_rss(
    workload: object,
    *,
    calls: int = 1,
    timeout_s: float = 120.0,
    device: str = "cpu",
    threads: int | None = None,
) -> RssResult:
    """Process RSS of ``workload`` (called ``calls`` times with no arguments) in a fresh child.

    The child is ``sys.executable -m torchscan.measure.rss.worker``, with this environment and this
    ``sys.path``, started by a small supervisor (:mod:`torchscan.measure.rss.supervisor`); it sets
    ``torch.set_num_threads(threads)`` when ``threads`` is given and initialises ``device`` before
    the baseline. Within ``timeout_s`` (imports included) it must finish, or it is killed. When
    this returns, by any path (KeyboardInterrupt included), the child and every process it
    started are gone: on Linux the supervisor is a child subreaper that kills and reaps every
    descendant, ``setsid`` and double-forked ones included.

    ``workload`` is a reference string, or an object the child can import by reference (see
    :func:`workload_reference`); the child checks that what it imports is the same function
    (module, qualified name, file, first line and a hash of its code). A callable object, or a
    method of one, is also pickled and the child runs the unpickled object (of the same class),
    so a change of its state after import is measured; one that cannot be pickled is refused.
    An object of the script being run (``__main__``), a reference to that script's file or
    ``-m`` module, a lambda, a closure or a rebound name gives all three metrics ``unavailable``
    with reason ``workload not importable`` and a diagnostic that says how to pass it; so does a
    module whose import in the child asks for process RSS itself. A crash, a timeout, or a
    workload that raises gives ``unavailable`` and an ``error`` diagnostic that carries the last
    lines of the child's standard error. Never raises for a workload's failure.

    After a timeout or an exception the supervisor gets ``min(10, max(1, timeout_s / 4))`` s to
    kill and reap the tree; past that the tree is frozen and killed from here, so the call
    returns within about ``timeout_s`` plus twice that grace.
    """
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise InvalidArgumentError(f"calls must be a positive integer, got {calls!r}")
    if not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise InvalidArgumentError(f"timeout_s must be a positive number, got {timeout_s!r}")
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise InvalidArgumentError(f"threads must be None or a positive integer, got {threads!r}")
    if not hasattr(os, "wait4"):
        return _failure(
            "child_process_failed",
            "child process failed (os.wait4 is not available on this platform)",
            "process RSS needs os.wait4 to reap the child with its resource usage; this platform "
            "(Windows) has none",
        )
    if os.environ.get(CHILD_MARKER_ENV):
        # Counted, so that a child whose import of the workload's module ends up here refuses
        # that module (torchscan.measure.rss.worker reads the count).
        _TALLY.nested_requests += 1
        return _failure(
            "child_process_failed",
            "child process failed (process RSS requested inside a process-RSS child)",
            "process RSS was requested inside a process-RSS child, which never starts another: "
            "the workload's module measures itself when it is imported, or the workload measures "
            "process RSS. Put such a call under 'if __name__ == \"__main__\":' so importing the "
            "module only defines the workload",
        )
    resolved = _resolve(workload)
    if not isinstance(resolved, _Resolved):
        return _failure(
            "workload_not_importable",
            NOT_IMPORTABLE,
            f"{_WHY_BY_REFERENCE}, and {resolved}. {_HOW_TO_REFERENCE}",
        )
    argv = [sys.executable, "-m", "torchscan.measure.rss.worker", resolved.reference]
    argv += ["--calls", str(calls), "--device", str(device)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if resolved.fingerprint is not None:
        argv += ["--fingerprint", json.dumps(resolved.fingerprint, sort_keys=True)]
    state_path: str | None = None
    if resolved.stateful:
        pickled = _pickle_state(workload)
        if not isinstance(pickled, _PickledState):
            return _failure(
                "workload_not_importable",
                NOT_IMPORTABLE,
                f"{_WHY_BY_REFERENCE}; the {type(workload).__name__} object given is sent to it "
                f"by pickle, since importing {resolved.reference.rpartition(':')[2]!r} afresh "
                "would give the object as its module builds it at import, not as it is now, and "
                f"it cannot be pickled ({pickled}). Make the object picklable, or build it inside "
                "a module-level function and pass that function, so the child builds the same "
                "object.",
            )
        state_path = pickled.path
        argv += ["--state", state_path]
        if resolved.module_name is not None:
            argv += ["--state-module", resolved.module_name]
    try:
        run = _run_child(argv, _child_env(), float(timeout_s))
    finally:
        if state_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(state_path)
    return _interpret(run, timeout_s=float(timeout_s), calls=calls)


@dataclass(frozen=True)
class _PickledState:
    path: str


def _pickle_state(workload: object) -> _PickledState | str:
    """Pickle ``workload`` into a new private file; its path, or why it cannot be pickled."""
    descriptor, path = tempfile.mkstemp(prefix="torchscan-rss-", suffix=".pickle")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            pickle.dump(workload, handle, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # a user's __reduce__ may raise anything
        with contextlib.suppress(OSError):
            os.unlink(path)
        text = f"{type(error).__name__}: {error}"
        return _DIRECTORIES.sub("", text)[:_ERROR_CHARS]
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return _PickledState(path)
