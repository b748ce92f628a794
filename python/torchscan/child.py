"""Process RSS of a workload, measured in a fresh child process of the same interpreter.

RSS belongs to a whole process, so it is only meaningful in a process that runs nothing but the
workload: the child (:mod:`torchscan._child_main`) imports the workload by reference, reads its
baseline, resets its high-water mark, calls the workload and reports one JSON line. The numbers
are process RSS and are never added to tensor or allocator peaks.

Linux note: ``ru_maxrss`` of a spawned child starts at the *parent's* peak RSS (the kernel folds
the pre-``exec`` address space's high-water mark into it), and resetting the high-water mark also
erases the pre-reset peak from it. So the lifetime peak is ``ru_maxrss`` from ``os.wait4`` only
when it exceeds this process's own peak, which proves it is the child's; otherwise it is the
child's own VmHWM, read before the reset and after the calls.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import selectors
import signal
import site
import subprocess
import sys
import time
from dataclasses import dataclass, field
from types import MethodType, ModuleType
from typing import Any

from ._child_main import CHILD_MARKER_ENV, PROTOCOL, SYS_PATH_ENV, split_reference
from ._metrics import complete, unavailable
from .errors import InvalidArgumentError
from .reports import Diagnostic, DiagnosticCode, MetricResult

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
_POLL_S = 0.02
# Once the child is reaped, a grandchild that inherited its stderr may hold the pipe open; read
# what is there for this long, then stop waiting for end-of-file.
_DRAIN_GRACE_S = 0.5

# The methods an unavailable metric would have been measured by.
_PLANNED_BASELINE = "RSS of a fresh child process after imports and set-up"
_PLANNED_WORKLOAD = "VmHWM of a fresh child process, reset after set-up, read after the calls"
_PLANNED_LIFETIME = "peak RSS of a fresh child process (ru_maxrss via os.wait4)"

_HOW_TO_REFERENCE = (
    "process RSS is measured in a fresh child process, which imports the workload by name; a "
    "closure, lambda, nested function, partial or bound method of a local object cannot be "
    "imported there. Define the workload as a module-level function (or a module-level callable "
    "object), or pass a reference such as 'package.module:function' or "
    "'path/to/file.py:function', to measure process RSS."
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


# --- references ---------------------------------------------------------------------------------


def workload_reference(workload: object) -> str | None:
    """A reference the child can import ``workload`` by, or ``None`` when there is none.

    A string is checked for form only (``"module:qualname"`` or ``"path/to/file.py:qualname"``;
    a relative path is made absolute) and never imported here. A function, class or callable
    object gives ``"module:qualname"`` when its module is importable by name in a fresh process
    and the name leads back to this very object, else ``"/abs/path/file.py:qualname"`` from the
    module's file (a script's ``__main__`` included). Closures, lambdas, nested functions, bound
    methods of local objects and anything else not re-importable give ``None``.
    """
    if isinstance(workload, str):
        return _string_reference(workload)
    qualname = getattr(workload, "__qualname__", None)
    module_name = getattr(workload, "__module__", None)
    if isinstance(qualname, str) and isinstance(module_name, str):
        module = sys.modules.get(module_name)
        if module is not None and _resolves_to(module, qualname, workload):
            reference = _module_reference(module, qualname)
            if reference is not None:
                return reference
    if isinstance(workload, MethodType):
        # A bound method of a module-level object: "module:object_name.method".
        owner_name = _global_name_of(workload.__self__)
        if owner_name is not None:
            module, name = owner_name
            return _module_reference(module, f"{name}.{workload.__func__.__name__}")
        return None
    if callable(workload) and not isinstance(workload, type):
        # A callable object (an ``nn.Module`` instance, say) bound to a module-level name.
        found = _global_name_of(workload)
        if found is not None:
            return _module_reference(*found)
    return None


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
    except AttributeError:
        return False
    if found is workload:
        return True
    # ``Class.classmethod`` builds a new bound method on each access; equal ones are the same.
    # Only methods are compared with ``==``: a user object's ``__eq__`` may do anything.
    return isinstance(found, MethodType) and isinstance(workload, MethodType) and found == workload


def _global_name_of(obj: object) -> tuple[ModuleType, str] | None:
    """The module-level name ``obj`` is bound to: in its own module, its class's or ``__main__``."""
    own_module = getattr(obj, "__module__", None)
    names = [own_module if isinstance(own_module, str) else "", type(obj).__module__, "__main__"]
    candidates = [sys.modules.get(name) for name in dict.fromkeys(names) if name]
    for module in candidates:
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            if value is obj and name.isidentifier():
                return module, name
    return None


def _module_reference(module: ModuleType, qualname: str) -> str | None:
    name = module.__name__
    spec = getattr(module, "__spec__", None)
    if name == "__main__" and spec is not None and spec.name and spec.name != "__main__":
        # Run with ``python -m package.module``: the module imports by that name.
        name = spec.name
    if name != "__main__" and _importable_by_name(name, module):
        return f"{name}:{qualname}"
    # Loaded from a file under a name a fresh process cannot find (a script's ``__main__``, a
    # module loaded with ``spec_from_file_location``): the child loads the same file.
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
    if spec is not None and spec.name != name and module.__name__ != "__main__":
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
    stdout: bytearray = field(default_factory=bytearray)
    stderr_tail: bytearray = field(default_factory=bytearray)
    timed_out: bool = False
    start_error: str | None = None


def _maxrss_to_bytes(maxrss: int) -> int:
    # ru_maxrss is in bytes on macOS and in KiB on Linux and the BSDs.
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def _own_peak_rss_b() -> int | None:
    """Peak RSS of this (parent) process: VmHWM on Linux, ``ru_maxrss`` elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    return _maxrss_to_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _reap(pid: int, run: _ChildRun, *, block: bool) -> bool:
    """Reap ``pid`` with ``os.wait4``, keeping its status and rusage; ``True`` once it is reaped."""
    try:
        reaped_pid, status, usage = os.wait4(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        # Someone else (a SIGCHLD handler, say) reaped it: the status and rusage are lost.
        return True
    if reaped_pid == 0:
        return False
    run.wait_status = status
    run.maxrss_b = _maxrss_to_bytes(usage.ru_maxrss)
    return True


def _has_exited(pid: int, run: _ChildRun) -> bool:
    """Whether the child has exited, leaving it unreaped where the platform allows.

    Unreaped, its pid (and so its process group id) cannot be reused, so the group can still be
    killed safely. ``waitid(WNOWAIT)`` is used on Linux only; elsewhere the child is reaped here.
    """
    if sys.platform == "linux":
        try:
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True
    return _reap(pid, run, block=False)


def _kill_group(pid: int, *, leader_too: bool) -> None:
    """SIGKILL the child's process group (grandchildren included), and the child itself.

    The child alone is signalled too in case it left its group; never once it is reaped, when its
    pid may already belong to another process.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if leader_too:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _pump(selector: selectors.BaseSelector, run: _ChildRun, timeout_s: float) -> None:
    """Read what is ready on the child's pipes, waiting at most ``timeout_s``."""
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
        else:
            run.stderr_tail += chunk
            del run.stderr_tail[:-_STDERR_KEEP_B]


def _run_child(argv: list[str], env: dict[str, str], timeout_s: float) -> _ChildRun:
    run = _ChildRun()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            # Its own process group, so a timeout or an interrupt kills grandchildren too, and a
            # Ctrl-C in the terminal reaches only the parent, which then cleans up.
            start_new_session=True,
        )
    except OSError as error:
        run.start_error = f"{type(error).__name__}: {error}"
        return run
    assert proc.stdout is not None and proc.stderr is not None
    reaped = False
    selector = selectors.DefaultSelector()
    try:
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr.fileno(), selectors.EVENT_READ, "stderr")
        deadline = time.monotonic() + timeout_s
        drain_until: float | None = None
        while True:
            now = time.monotonic()
            if drain_until is None:
                exited = _has_exited(proc.pid, run)
                if not exited and now >= deadline:
                    run.timed_out = True
                if exited or run.timed_out:
                    # Grandchildren go with it: none outlives the call or holds its pipes open.
                    _kill_group(proc.pid, leader_too=run.timed_out)
                    reaped = _reap(proc.pid, run, block=True)
                    drain_until = time.monotonic() + _DRAIN_GRACE_S
                    continue
            elif not selector.get_map() or now >= drain_until:
                break
            limit = drain_until if drain_until is not None else deadline
            _pump(selector, run, max(0.0, min(_POLL_S, limit - now)))
    finally:
        # Whatever happened (KeyboardInterrupt included), no child or grandchild outlives the call.
        if not reaped:
            _kill_group(proc.pid, leader_too=True)
            reaped = _reap(proc.pid, run, block=True)
        if run.wait_status is not None:
            # Tell Popen the exit status, so it never waits on a pid that is no longer its child.
            proc.returncode = os.waitstatus_to_exitcode(run.wait_status)
        else:
            proc.returncode = -signal.SIGKILL
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
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
        return "child process failed (its exit status was collected elsewhere)"
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


def _interpret(
    run: _ChildRun, *, timeout_s: float, calls: int, parent_peak_b: int | None
) -> RssResult:
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
    return _measured(payload, baseline_b, workload_peak_b, run, calls, parent_peak_b)


def _measured(
    payload: dict[str, Any],
    baseline_b: int,
    workload_peak_b: int,
    run: _ChildRun,
    calls: int,
    parent_peak_b: int | None,
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
    attributable = (
        run.maxrss_b is not None and parent_peak_b is not None and run.maxrss_b > parent_peak_b
    )
    if attributable and run.maxrss_b is not None:
        lifetime_b = max(run.maxrss_b, own_peak_b)
        lifetime_method = f"ru_maxrss via os.wait4 (at least {own_peak_source})"
    else:
        lifetime_b = own_peak_b
        lifetime_method = (
            f"{own_peak_source}; ru_maxrss via os.wait4 not used: it was not above this "
            "process's own peak RSS, which the kernel carries into a spawned child"
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
    # ``-m torchscan._child_main`` runs before the child adopts this sys.path, so a torchscan
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

    The child is ``sys.executable -m torchscan._child_main``, with this environment and this
    ``sys.path``; it sets ``torch.set_num_threads(threads)`` when ``threads`` is given and
    initialises ``device`` before the baseline. Within ``timeout_s`` (imports included) it must
    finish, or it is killed with its process group. A crash, a timeout, a workload that cannot be
    imported or raises gives all three metrics ``unavailable`` and an ``error`` diagnostic that
    carries the last lines of the child's standard error. Never raises for a workload's failure.
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
        return _failure(
            "child_process_failed",
            "child process failed (process RSS requested inside a process-RSS child)",
            "process RSS was requested while the process-RSS child imported the workload: its "
            "module measures itself at import time. Put that call under "
            "'if __name__ == \"__main__\":' so importing the module only defines the workload",
        )
    reference = workload_reference(workload)
    if reference is None:
        return _failure("workload_not_importable", NOT_IMPORTABLE, _HOW_TO_REFERENCE)
    argv = [sys.executable, "-m", "torchscan._child_main", reference, "--calls", str(calls)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    argv += ["--device", str(device)]
    run = _run_child(argv, _child_env(), float(timeout_s))
    # Read after the child is reaped: this process's peak only grows, so a ru_maxrss above it
    # cannot be the peak the kernel carried over from here at spawn time.
    parent_peak_b = _own_peak_rss_b()
    return _interpret(run, timeout_s=float(timeout_s), calls=calls, parent_peak_b=parent_peak_b)
