"""The process-RSS child's whole process tree is gone when the call returns, on every path."""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from torchscan.measure.rss.parent import RssResult, _stop_grace_s, measure_process_rss

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process trees are read from Linux's /proc"
)

# The call's own limit on the timeout path; every wait of these tests derives from TIMEOUT_S.
TIMEOUT_S = 10.0
LONG_TIMEOUT_S = 120.0

# Each workload records "<pid> <start time>" of the worker and of the grandchild it leaves
# behind: a `setsid` one (subprocess.Popen(start_new_session=True)) or a double-forked daemon
# (fork, setsid, fork, the middle one exits). Then it returns, raises or sleeps.
WORKLOADS = """
    import os
    import signal
    import subprocess
    import sys
    import time

    RECORD = {record!r}


    def _record(pid):
        with open(f"/proc/{{pid}}/stat", "rb") as handle:
            start = handle.read().rpartition(b")")[2].split()[19].decode()
        with open(RECORD, "a") as handle:
            handle.write(f"{{pid}} {{start}}\\n")


    def _setsid_grandchild():
        grandchild = subprocess.Popen(["sleep", "600"], start_new_session=True)
        _record(grandchild.pid)


    def _double_forked_grandchild():
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.close(read_end)
            os.setsid()
            daemon = os.fork()
            if daemon == 0:
                os.execvp("sleep", ["sleep", "600"])
            os.write(write_end, str(daemon).encode())
            os._exit(0)
        os.close(write_end)
        pid = b""
        while chunk := os.read(read_end, 64):
            pid += chunk
        os.close(read_end)
        os.waitpid(middle, 0)
        _record(int(pid))


    def _start(kind):
        _record(os.getpid())
        _setsid_grandchild() if kind == "setsid" else _double_forked_grandchild()
        with open(RECORD + ".ready", "w") as handle:
            handle.write("ready")


    def setsid_returns():
        _start("setsid")

    def setsid_raises():
        _start("setsid")
        raise ValueError("the workload failed after starting a grandchild")

    def setsid_sleeps():
        _start("setsid")
        time.sleep(600)

    def double_fork_returns():
        _start("double_fork")

    def double_fork_raises():
        _start("double_fork")
        raise ValueError("the workload failed after starting a grandchild")

    def double_fork_sleeps():
        _start("double_fork")
        time.sleep(600)

    def stops_its_supervisor():
        # A supervisor that cannot sweep: the caller must kill the tree itself, children first.
        _start("setsid")
        supervisor = os.getppid()
        _record(supervisor)
        os.kill(supervisor, signal.SIGSTOP)
        with open(RECORD + ".stopped", "w") as handle:
            handle.write("stopped")
        time.sleep(600)
"""


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        return None


def _recorded(record: Path) -> list[tuple[int, str]]:
    if not record.exists():
        return []
    return [
        (int(pid), start)
        for pid, start in (line.split() for line in record.read_text().split("\n") if line)
    ]


def _alive(processes: list[tuple[int, str]]) -> list[int]:
    """The recorded processes that still exist, zombies included (same pid and start time)."""
    return [pid for pid, start in processes if _start_time(pid) == start]


def _running(processes: list[tuple[int, str]]) -> list[int]:
    """The recorded processes that still run: zombies (dead, waiting to be reaped) excluded."""
    running = []
    for pid in _alive(processes):
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            running.append(pid)
    return running


def _kill_leftovers(record: Path) -> None:
    """Never leave a process behind, even when a test fails."""
    for pid in _alive(_recorded(record)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _wait_for(path: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def workloads(tmp_path: Path) -> tuple[Path, Path]:
    record = tmp_path / "pids.txt"
    module = tmp_path / "tree_workloads.py"
    module.write_text(textwrap.dedent(WORKLOADS.format(record=str(record))), encoding="utf-8")
    return module, record


def _check_tree_gone(record: Path) -> list[tuple[int, str]]:
    processes = _recorded(record)
    assert len(processes) == 2, (
        f"the workload did not record its worker and grandchild: {processes}"
    )
    # No waiting: the supervisor killed and reaped them before the call returned.
    assert _alive(processes) == []
    return processes


@pytest.mark.parametrize("kind", ["setsid", "double_fork"])
def test_normal_path_leaves_no_descendant(kind: str, workloads: tuple[Path, Path]) -> None:
    module, record = workloads
    try:
        result = measure_process_rss(f"{module}:{kind}_returns", timeout_s=LONG_TIMEOUT_S)
        assert result.diagnostics == []
        assert result.workload_peak["status"] == "complete"
        _check_tree_gone(record)
    finally:
        _kill_leftovers(record)


@pytest.mark.parametrize("kind", ["setsid", "double_fork"])
def test_workload_error_leaves_no_descendant(kind: str, workloads: tuple[Path, Path]) -> None:
    module, record = workloads
    try:
        result = measure_process_rss(f"{module}:{kind}_raises", timeout_s=LONG_TIMEOUT_S)
        assert result.workload_peak["reason"] == "child process failed (exit code 1)"
        assert "the workload failed after starting a grandchild" in result.diagnostics[0]["message"]
        _check_tree_gone(record)
    finally:
        _kill_leftovers(record)


@pytest.mark.parametrize("kind", ["setsid", "double_fork"])
def test_timeout_leaves_no_descendant(kind: str, workloads: tuple[Path, Path]) -> None:
    module, record = workloads
    try:
        result: RssResult = measure_process_rss(f"{module}:{kind}_sleeps", timeout_s=TIMEOUT_S)
        assert result.workload_peak["reason"] == f"child process timed out after {TIMEOUT_S:g}s"
        assert [d["code"] for d in result.diagnostics] == ["child_process_timeout"]
        # The grandchild was started well within the timeout (the worker starts in well under a
        # second), then the worker was killed at the timeout.
        _check_tree_gone(record)
    finally:
        _kill_leftovers(record)


@pytest.mark.parametrize("kind", ["setsid", "double_fork"])
def test_keyboard_interrupt_leaves_no_descendant(kind: str, workloads: tuple[Path, Path]) -> None:
    module, record = workloads
    ready = Path(f"{record}.ready")
    started = threading.Event()

    def interrupt_when_started() -> None:
        if _wait_for(ready, LONG_TIMEOUT_S / 2):
            started.set()
            _thread.interrupt_main()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter = threading.Thread(target=interrupt_when_started, daemon=True)
    try:
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            measure_process_rss(f"{module}:{kind}_sleeps", timeout_s=LONG_TIMEOUT_S)
        interrupter.join(timeout=LONG_TIMEOUT_S)
        assert started.is_set()
        _check_tree_gone(record)
    finally:
        signal.signal(signal.SIGINT, previous)
        _kill_leftovers(record)


def test_a_stuck_supervisor_is_killed_after_its_children_within_a_bound(
    workloads: tuple[Path, Path],
) -> None:
    # The worker stops its own supervisor (SIGSTOP) and sleeps: at the timeout nothing answers
    # the request to stop. After the grace the caller freezes the tree and kills it, descendants
    # first: before, it killed only the supervisor after a fixed 20 s, and the setsid grandchild
    # lived on.
    module, record = workloads
    grace_s = _stop_grace_s(TIMEOUT_S)
    try:
        started = time.monotonic()
        result = measure_process_rss(f"{module}:stops_its_supervisor", timeout_s=TIMEOUT_S)
        elapsed_s = time.monotonic() - started
        assert Path(f"{record}.stopped").exists(), "the worker never stopped its supervisor"
        assert result.workload_peak["reason"] == f"child process timed out after {TIMEOUT_S:g}s"
        assert [d["code"] for d in result.diagnostics] == ["child_process_timeout"]
        # A generous bound derived from the timeout, never a tight time.
        assert TIMEOUT_S <= elapsed_s < TIMEOUT_S + 2 * grace_s + 30
        processes = _recorded(record)
        assert len(processes) == 3  # worker, grandchild, supervisor
        # Dead when the call returns; the worker and grandchild may wait as zombies for PID 1
        # to reap them, since their subreaper was killed.
        assert _running(processes) == []
    finally:
        _kill_leftovers(record)


def test_killed_parent_leaves_no_descendant(workloads: tuple[Path, Path]) -> None:
    # The measuring process itself is SIGKILLed mid-call: the kernel closes its end of the
    # supervisor's standard input, and the supervisor sweeps the tree on its own.
    module, record = workloads
    ready = Path(f"{record}.ready")
    code = (
        "import sys\n"
        "from torchscan.measure.rss.parent import measure_process_rss\n"
        f"measure_process_rss(sys.argv[1], timeout_s={LONG_TIMEOUT_S})\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, f"{module}:setsid_sleeps"])
    try:
        assert _wait_for(ready, LONG_TIMEOUT_S / 2), "the workload never started"
        parent.kill()
        parent.wait(timeout=LONG_TIMEOUT_S)
        processes = _recorded(record)
        assert len(processes) == 2
        deadline = time.monotonic() + LONG_TIMEOUT_S / 4
        while _alive(processes) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _alive(processes) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        _kill_leftovers(record)


def test_a_caller_that_ignores_sigchld_still_gets_a_measurement(
    workloads: tuple[Path, Path],
) -> None:
    # SIG_IGN for SIGCHLD is inherited across exec: without resetting it, the supervisor's
    # children would be reaped by the kernel, leaving no wait status, no rusage and no sweep.
    module, record = workloads
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
        "from torchscan.measure.rss.parent import measure_process_rss\n"
        f"result = measure_process_rss(sys.argv[1], timeout_s={LONG_TIMEOUT_S})\n"
        "print(result.lifetime_peak['status'], result.diagnostics)\n"
    )
    try:
        completed = subprocess.run(
            [sys.executable, "-c", code, f"{module}:setsid_returns"],
            capture_output=True,
            text=True,
            check=True,
            timeout=LONG_TIMEOUT_S,
        )
        assert completed.stdout.strip() == "complete []"
        _check_tree_gone(record)
    finally:
        _kill_leftovers(record)
