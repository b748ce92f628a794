"""The supervisor between the parent and the process-RSS child: nothing the child starts survives.

Run by :mod:`torchscan.measure.rss.parent` as ``python -I -S <this file> <report_fd> <worker
argv...>``, by path, so it imports nothing but the standard library and stays small. It starts the
worker (``python -m torchscan.measure.rss.worker ...``) in a session of its own, with this process's
standard output and error, and waits until the worker exits or the parent asks it to stop: any byte
on, or the end of, its standard input (the parent closes its end on a timeout, an interrupt or its
own death). Then it SIGKILLs the worker's process group and, on Linux, every process left below it,
reaps them all, and writes one line to ``report_fd``::

    exited <worker wait status> <worker ru_maxrss in bytes> <own peak RSS in bytes> <swept>

(``failed <message>`` when the worker could not start) and exits.

On Linux the supervisor is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant
orphaned by its parent's exit (a double fork) is reparented to it rather than to PID 1, whatever
session or process group it moved to (``setsid``), so the sweep sees every descendant as a child
of its own: it kills and reaps its children until it has none left. The worker dies with the
supervisor (``PR_SET_PDEATHSIG``, set by the worker itself), should the supervisor be killed.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from collections.abc import Iterator

_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.05
_CHANGED_SIGNALS = (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The worker reads this to check that the supervisor that started it is still its parent.
SUPERVISOR_PID_ENV = "TORCHSCAN_RSS_SUPERVISOR"


class _Stop(Exception):
    """Raised by the SIGTERM and SIGHUP handlers: stop the worker and sweep."""


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop(signum)


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, str]]:
    """``pid -> (parent pid, state letter)`` of every process, from ``/proc`` (Linux).

    Empty where ``/proc`` cannot be listed. The one reader of ``/proc/<pid>/stat`` in the
    package: :mod:`torchscan.measure.rss.parent` freezes and kills process trees with it too.
    """
    table: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # The command name is in parentheses and may hold anything: split after the last ")".
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1 and fields[1].isdigit():
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
    return table


def _children() -> Iterator[int]:
    """The pids whose parent is this process."""
    me = os.getpid()
    for pid, (parent, _) in process_table().items():
        if parent == me:
            yield pid


def _sweep(subreaper: bool) -> int:
    """SIGKILL and reap every child left (with a subreaper: every descendant); the count reaped."""
    reaped = 0
    while True:
        if subreaper:
            # A child's pid cannot be reused before it is reaped here, so killing it is safe.
            for pid in _children():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        try:
            # Blocks until one child ends; the children of a killed child are this process's
            # children by then (reparented at their parent's exit), and the next scan finds them.
            os.waitpid(-1, 0)
        except ChildProcessError:
            return reaped
        except InterruptedError:
            continue
        reaped += 1


def _kill_worker(pid: int) -> None:
    """SIGKILL the worker's process group and the worker (never called once it is reaped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _worker_exited(pid: int) -> bool:
    """Whether the worker has exited, leaving it unreaped so its pid and group stay its own."""
    if hasattr(os, "waitid"):
        try:
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True
    return False  # pragma: no cover - every POSIX platform CPython supports has waitid


def _own_peak_b() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def _wait(pid: int, control: int) -> None:
    """Return when the worker has exited, or after killing it when the parent asks to stop."""
    pidfd = -1
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    try:
        watched = [control] + ([pidfd] if pidfd >= 0 else [])
        while not _worker_exited(pid):
            ready, _, _ = select.select(watched, [], [], None if pidfd >= 0 else _POLL_S)
            if control in ready:
                # A byte or end-of-file: the parent wants the worker gone.
                _kill_worker(pid)
                return
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _spawn(worker_argv: list[str], env: dict[str, str]) -> int:
    """Start the worker in a session of its own, with ``/dev/null`` as its standard input."""
    stdin = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    # The worker gets default dispositions for the signals this process changed.
    defaults = _CHANGED_SIGNALS
    try:
        return os.posix_spawn(
            worker_argv[0], worker_argv, env, file_actions=stdin, setsigdef=defaults, setsid=True
        )
    except NotImplementedError:  # pragma: no cover - no POSIX_SPAWN_SETSID (old macOS)
        return os.posix_spawn(
            worker_argv[0], worker_argv, env, file_actions=stdin, setsigdef=defaults, setpgroup=0
        )


def _reap_worker(pid: int) -> tuple[int, int]:
    """The worker's wait status and ``ru_maxrss`` in bytes (``os.wait4``), once it has ended."""
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
        except InterruptedError:
            continue
        maxrss = int(usage.ru_maxrss)
        return status, maxrss if sys.platform == "darwin" else maxrss * 1024


def main(argv: list[str]) -> int:
    """Supervise ``argv[1:]`` and report on fd ``argv[0]``; the return value is the exit status."""
    report_fd = int(argv[0])
    os.set_inheritable(report_fd, False)
    # Ignored SIGCHLD (inherited from a caller that ignores it) would make the kernel reap the
    # worker and every descendant itself: no wait status, no rusage, no sweep.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # A Ctrl-C meant for the parent is the parent's to handle: it closes our standard input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    subreaper = _become_subreaper()
    env = dict(os.environ)
    env[SUPERVISOR_PID_ENV] = str(os.getpid())
    try:
        pid = _spawn(argv[1:], env)
    except OSError as error:
        os.write(report_fd, f"failed {type(error).__name__}: {error}\n".encode())
        return 1
    try:
        _wait(pid, control=0)
    except _Stop:
        pass
    finally:
        # From here on nothing interrupts the clean-up.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        # The worker, exited or not, is unreaped, so its pid and process group are still its own:
        # the group goes now (descendants that stayed in it, on every platform); the subreaper
        # sweep (Linux) gets the ones that left it.
        _kill_worker(pid)
    status, maxrss_b = _reap_worker(pid)
    swept = _sweep(subreaper)
    own_peak_b = _own_peak_b()
    os.write(report_fd, f"exited {status} {maxrss_b} {own_peak_b} {swept}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
