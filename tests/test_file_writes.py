"""The one writer (`_core.write_file`) and the `torchscan-report` CLI's file I/O on every kind of
node: what is replaced, what is written through, and what is left as it was after a failure.
Devices are `mknod` copies in a temporary directory: no test writes a real device."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchscan import _core

from .conftest import FIXTURES, report_cli

REPORT = FIXTURES / "reports" / "analysis_partial_operator_flops_tied_weights.json"
TIMEOUT_S = 120


def temporaries(directory: Path) -> list[str]:
    """Entries that look like the writer's temporary files."""
    return sorted(
        name for name in os.listdir(directory) if name.startswith(".") and name.endswith(".tmp")
    )


def run_cli(
    *args: str, stdout: int | None = subprocess.PIPE, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [report_cli(), *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
        timeout=TIMEOUT_S,
        env=env,
    )


@pytest.fixture(scope="module")
def rendered() -> bytes:
    """The page `render` writes for REPORT."""
    completed = run_cli("render", str(REPORT))
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def stderr_line(completed: subprocess.CompletedProcess[bytes]) -> str:
    """The one line of standard error."""
    text = completed.stderr.decode()
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text.rstrip("\n")


def make_node(path: Path, kind: int, major: int, minor: int) -> None:
    try:
        os.mknod(path, kind | 0o644, os.makedev(major, minor))
    except PermissionError as error:
        pytest.skip(f"mknod is not permitted here: {error}")


def read_fifo_in_thread(path: Path) -> tuple[threading.Thread, list[bytes]]:
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as fifo:
            received.append(fifo.read())

    # A daemon: if the FIFO were replaced, the blocked reader must not keep the tests alive.
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, received


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted in a temporary directory, unmounted afterwards."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def remount_read_only(mount_point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)


# _core.write_file


def test_write_file_replaces_a_0600_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    target.write_bytes(b"old")
    target.chmod(0o600)
    _core.write_file(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert temporaries(tmp_path) == []


def test_write_file_reaches_every_hard_link(tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_bytes(b"old old")
    os.link(first, second)
    inode = first.stat().st_ino
    _core.write_file(str(second), b"new")
    for name in (first, second):
        assert name.read_bytes() == b"new"
        assert name.stat().st_ino == inode
        assert name.stat().st_nlink == 2
    assert temporaries(tmp_path) == []


def test_write_file_writes_through_symlinks_and_creates_dangling_targets(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.json"
    target.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(Path("real") / "out.json")
    _core.write_file(link, b"new")
    assert link.is_symlink() and os.readlink(link) == "real/out.json"
    assert target.read_bytes() == b"new"

    dangling = tmp_path / "dangling.json"
    dangling.symlink_to("created.json")
    _core.write_file(dangling, b"created")
    assert dangling.is_symlink()
    assert (tmp_path / "created.json").read_bytes() == b"created"
    assert temporaries(tmp_path) == [] and temporaries(tmp_path / "real") == []


def test_write_file_writes_a_fifo_directly(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, received = read_fifo_in_thread(fifo)
    _core.write_file(fifo, b"through the pipe")
    reader.join(timeout=TIMEOUT_S)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert temporaries(tmp_path) == []


def test_write_file_writes_a_copy_of_dev_null(tmp_path: Path) -> None:
    null = tmp_path / "null"
    make_node(null, stat.S_IFCHR, 1, 3)
    _core.write_file(null, b"discarded")
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert null.lstat().st_rdev == os.makedev(1, 3)
    assert temporaries(tmp_path) == []


def test_write_file_takes_a_255_byte_name(tmp_path: Path) -> None:
    target = tmp_path / ("n" * 255)
    _core.write_file(target, b"first")
    inode = target.stat().st_ino
    _core.write_file(target, b"second")
    assert target.read_bytes() == b"second"
    assert target.stat().st_ino != inode  # replaced atomically, by rename
    assert temporaries(tmp_path) == []


def test_write_file_through_proc_fd_of_a_file_open_for_append_acts_as_shell_redirection(
    tmp_path: Path,
) -> None:
    """`> /proc/self/fd/N` rewrites the file the descriptor has open, from its start; it never
    replaces it (the descriptor would then write to a file nobody sees)."""
    log = tmp_path / "log.txt"
    log.write_bytes(b"old line\n")
    inode = log.stat().st_ino
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        _core.write_file(f"/proc/self/fd/{descriptor}", b"new content\n")
        assert log.read_bytes() == b"new content\n"
        assert log.stat().st_ino == inode
        os.write(descriptor, b"appended\n")
    finally:
        os.close(descriptor)
    assert log.read_bytes() == b"new content\nappended\n"
    assert temporaries(tmp_path) == []


def test_write_file_through_proc_fd_of_a_pipe_reaches_the_reader() -> None:
    read_end, write_end = os.pipe()
    try:
        assert os.readlink(f"/proc/self/fd/{write_end}").startswith("pipe:[")
        _core.write_file(f"/proc/self/fd/{write_end}", b"through the pipe")
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            assert reader.read() == b"through the pipe"
    finally:
        for descriptor in (read_end, write_end):
            with contextlib.suppress(OSError):  # closed already
                os.close(descriptor)


def write_as_nobody(path: Path, data: bytes) -> tuple[int, str]:
    """`_core.write_file(path, data)` in a forked child running as user nobody (65534): the
    `errno` and `filename` of the `OSError` it raised, or `(0, "")` when it succeeded."""
    if os.geteuid() != 0:
        pytest.skip("switching to user nobody needs root")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running any of the parent's cleanup
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                _core.write_file(path, data)
                answer = "0\n"
            except OSError as error:
                answer = f"{error.errno}\n{error.filename}"
            os.write(write_end, answer.encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        answer = reader.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, answer
    code, _, filename = answer.partition("\n")
    return int(code), filename


def test_write_file_on_a_read_only_hard_linked_file_acts_as_opening_it_for_writing() -> None:
    """As root, opening a 0444 file for writing succeeds, and so does the in-place write; as
    user nobody it fails with PermissionError naming the file, the file untouched."""
    directory = Path(tempfile.mkdtemp(prefix="torchscan-readonly-"))
    try:
        directory.chmod(0o755)
        first, second = directory / "first.json", directory / "second.json"
        first.write_bytes(b"old")
        os.link(first, second)
        first.chmod(0o444)
        errno_seen, filename_seen = write_as_nobody(first, b"new")
        assert (errno_seen, filename_seen) == (errno.EACCES, str(first))
        assert second.read_bytes() == b"old"
        if os.access(first, os.W_OK):  # root, as `>` finds it
            _core.write_file(first, b"new")
            assert second.read_bytes() == b"new"
            assert second.stat().st_ino == first.stat().st_ino
        assert stat.S_IMODE(second.stat().st_mode) == 0o444
        assert second.stat().st_nlink == 2
        assert temporaries(directory) == []
    finally:
        for entry in directory.iterdir():
            entry.unlink()
        directory.rmdir()


WAITING_FOR_A_READER = {"hrtimer_nanosleep", "do_nanosleep", "wait_for_partner"}


def wait_until_waiting_for_a_reader(wchan: Path, deadline: float) -> bool:
    """Whether the thread whose `wchan` file this is sleeps in the writer's wait for a FIFO
    reader (or blocks in `open` for a partner) before `deadline`."""
    while time.monotonic() < deadline:
        try:
            if wchan.read_text().strip() in WAITING_FOR_A_READER:
                return True
        except OSError:
            return False
        time.sleep(0.005)
    return False


def test_write_file_waiting_for_a_fifo_reader_raises_keyboard_interrupt(tmp_path: Path) -> None:
    """Ctrl-C (here SIGINT sent to the main thread, with the test's own handler, so that it works
    when the suite runs with SIGINT ignored) stops a write to a FIFO nobody reads. Should it not,
    a rescue reader opens the FIFO at the deadline so that the test fails instead of hanging."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    main_thread = threading.main_thread()
    assert threading.current_thread() is main_thread
    wchan = Path(f"/proc/self/task/{main_thread.native_id}/wchan")
    deadline = time.monotonic() + TIMEOUT_S
    outcome: dict[str, bool] = {"signalled": False, "rescued": False}

    def interrupt() -> None:
        if wait_until_waiting_for_a_reader(wchan, deadline):
            outcome["signalled"] = True
            signal.pthread_kill(main_thread.ident or 0, signal.SIGINT)
        # Give the main thread until the deadline to leave write_file, then rescue it.
        while time.monotonic() < deadline and outcome["signalled"] and not finished.is_set():
            time.sleep(0.01)
        if not finished.is_set():
            outcome["rescued"] = True
            descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            finished.wait(TIMEOUT_S)
            os.close(descriptor)

    def raise_keyboard_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def write_and_say_so() -> None:
        try:
            _core.write_file(fifo, b"nobody reads this")
        finally:
            finished.set()

    finished = threading.Event()
    previous = signal.signal(signal.SIGINT, raise_keyboard_interrupt)
    sender = threading.Thread(target=interrupt)
    try:
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            write_and_say_so()
    finally:
        finished.set()
        sender.join(TIMEOUT_S)
        signal.signal(signal.SIGINT, previous)
    assert not sender.is_alive()
    assert outcome == {"signalled": True, "rescued": False}
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert temporaries(tmp_path) == []


def test_write_file_on_a_copy_of_dev_full_raises_enospc(tmp_path: Path) -> None:
    full = tmp_path / "full"
    make_node(full, stat.S_IFCHR, 1, 7)
    with pytest.raises(OSError, match="No space left on device") as raised:
        _core.write_file(full, b"nowhere to go")
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.strerror == os.strerror(errno.ENOSPC)
    assert raised.value.filename == str(full)
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert temporaries(tmp_path) == []


def test_write_file_errors_are_the_oserror_subclasses_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "out.json"
    with pytest.raises(FileNotFoundError) as not_found:
        _core.write_file(missing, b"x")
    assert (not_found.value.errno, not_found.value.filename) == (errno.ENOENT, str(missing))
    assert not_found.value.strerror == os.strerror(errno.ENOENT)

    directory = tmp_path / "directory"
    directory.mkdir()
    with pytest.raises(IsADirectoryError) as is_directory:
        _core.write_file(directory, b"x")
    assert (is_directory.value.errno, is_directory.value.filename) == (errno.EISDIR, str(directory))

    one, two = tmp_path / "one", tmp_path / "two"
    one.symlink_to("two")
    two.symlink_to("one")
    with pytest.raises(OSError, match="Too many levels of symbolic links") as loop:
        _core.write_file(one, b"x")
    assert (loop.value.errno, loop.value.filename) == (errno.ELOOP, str(one))
    assert temporaries(tmp_path) == []


def test_write_file_on_a_read_only_file_system_keeps_the_old_content(tmpfs: Path) -> None:
    plain, linked = tmpfs / "plain.json", tmpfs / "linked.json"
    plain.write_bytes(b"old plain")
    linked.write_bytes(b"old linked")
    os.link(linked, tmpfs / "linked-too.json")
    remount_read_only(tmpfs)
    for path, old in ((plain, b"old plain"), (linked, b"old linked")):
        with pytest.raises(OSError, match="Read-only file system") as raised:
            _core.write_file(path, b"new")
        assert (raised.value.errno, raised.value.filename) == (errno.EROFS, str(path))
        assert path.read_bytes() == old
    assert temporaries(tmpfs) == []


def test_write_file_on_a_full_file_system_keeps_the_old_content(tmpfs: Path) -> None:
    plain, linked = tmpfs / "plain.json", tmpfs / "linked.json"
    plain.write_bytes(b"a" * 65536)
    linked.write_bytes(b"b" * 65536)
    os.link(linked, tmpfs / "linked-too.json")
    for path, old in ((plain, b"a" * 65536), (linked, b"b" * 65536)):
        with pytest.raises(OSError, match="No space left on device") as raised:
            _core.write_file(path, b"n" * 512 * 1024)
        assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(path))
        assert path.read_bytes() == old
    assert (tmpfs / "linked-too.json").read_bytes() == b"b" * 65536
    assert temporaries(tmpfs) == []


def test_read_file_stops_at_the_limit(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="larger than the limit of 4096 bytes") as raised:
        _core.read_file("/dev/zero", 4096)
    assert raised.value.errno == errno.EFBIG
    assert raised.value.filename == "/dev/zero"
    assert raised.value.strerror == (
        "larger than the limit of 4096 bytes (4 KiB); raise it with --max-input-bytes or "
        "TORCHSCAN_MAX_INPUT_BYTES"
    )
    exact = tmp_path / "exact.json"
    exact.write_bytes(b"x" * 100)
    assert _core.read_file(exact, 100) == b"x" * 100
    with pytest.raises(FileNotFoundError):
        _core.read_file(tmp_path / "missing.json")
    with pytest.raises(IsADirectoryError):
        _core.read_file(tmp_path)


def test_read_file_default_limit_is_one_gib() -> None:
    import inspect

    assert inspect.signature(_core.read_file).parameters["max_bytes"].default == 1 << 30


# the torchscan-report CLI


def test_cli_output_to_a_copy_of_dev_full_exits_2_and_stays_a_device(tmp_path: Path) -> None:
    full = tmp_path / "full"
    make_node(full, stat.S_IFCHR, 1, 7)
    completed = run_cli("render", str(REPORT), "-o", str(full))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot write {full}: No space left on device (os error 28)"
    )
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert temporaries(tmp_path) == []


def test_cli_stdout_to_a_copy_of_dev_full_exits_2_like_o(tmp_path: Path) -> None:
    full = tmp_path / "full"
    make_node(full, stat.S_IFCHR, 1, 7)
    with open(full, "wb") as device:
        completed = run_cli("render", str(REPORT), stdout=device.fileno())
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        "torchscan-report: cannot write <stdout>: No space left on device (os error 28)"
    )


def test_cli_broken_pipe_on_stdout_exits_2_like_o() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = run_cli("render", str(REPORT), stdout=write_end)
    finally:
        os.close(write_end)
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        "torchscan-report: cannot write <stdout>: Broken pipe (os error 32)"
    )


def test_cli_output_to_a_fifo_reaches_the_reader(tmp_path: Path, rendered: bytes) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, received = read_fifo_in_thread(fifo)
    completed = run_cli("render", str(REPORT), "-o", str(fifo))
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    reader.join(timeout=TIMEOUT_S)
    assert received == [rendered]
    assert temporaries(tmp_path) == []


def test_cli_output_to_a_copy_of_dev_null(tmp_path: Path) -> None:
    null = tmp_path / "null"
    make_node(null, stat.S_IFCHR, 1, 3)
    completed = run_cli("render", str(REPORT), "-o", str(null))
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert null.lstat().st_rdev == os.makedev(1, 3)
    assert temporaries(tmp_path) == []


def test_cli_output_to_dev_stdout_reaches_a_pipe(rendered: bytes) -> None:
    completed = run_cli("render", str(REPORT), "-o", "/dev/stdout")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == rendered
    assert completed.stderr == b""


def test_cli_waiting_for_a_fifo_reader_stops_on_sigint(tmp_path: Path) -> None:
    """The console script, started with SIGINT at its default action (as a terminal starts it,
    whatever this suite's disposition), dies of SIGINT while it waits for a FIFO reader."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    default_sigint_then_exec = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            default_sigint_then_exec,
            report_cli(),
            *("render", str(REPORT), "-o", str(fifo)),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        waiting = wait_until_waiting_for_a_reader(
            Path(f"/proc/{process.pid}/wchan"), time.monotonic() + TIMEOUT_S
        )
        assert waiting, "the console script never waited for a reader"
        process.send_signal(signal.SIGINT)
        process.wait(TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.communicate()
    assert process.returncode == -signal.SIGINT
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert temporaries(tmp_path) == []


def test_cli_output_keeps_mode_hard_links_and_symlinks(tmp_path: Path, rendered: bytes) -> None:
    secret = tmp_path / "secret.html"
    secret.write_bytes(b"old")
    secret.chmod(0o600)
    first, second = tmp_path / "first.html", tmp_path / "second.html"
    first.write_bytes(b"old")
    os.link(first, second)
    target, link = tmp_path / "target.html", tmp_path / "link.html"
    target.write_bytes(b"old")
    link.symlink_to("target.html")
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to("created.html")
    for output in (secret, first, link, dangling):
        completed = run_cli("render", str(REPORT), "-o", str(output))
        assert completed.returncode == 0, completed.stderr
    assert secret.read_bytes() == rendered
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert first.read_bytes() == second.read_bytes() == rendered
    assert first.stat().st_ino == second.stat().st_ino
    assert link.is_symlink() and target.read_bytes() == rendered
    assert dangling.is_symlink() and (tmp_path / "created.html").read_bytes() == rendered
    assert temporaries(tmp_path) == []


def test_cli_never_follows_a_symlink_planted_under_a_pid_name(tmp_path: Path) -> None:
    """The old temporary name `.NAME.<pid>.tmp` was predictable: links planted under the next
    few hundred process ids must not lead the writer to a victim file."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    last_pid = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    for pid in range(last_pid + 1, last_pid + 500):
        (tmp_path / f".out.html.{pid}.tmp").symlink_to(victim)
    completed = run_cli("render", str(REPORT), "-o", str(tmp_path / "out.html"))
    assert completed.returncode == 0, completed.stderr
    assert victim.read_bytes() == b"victim"
    assert len(temporaries(tmp_path)) == 499


def test_cli_output_failures_keep_the_old_content(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "out.html"
    completed = run_cli("render", str(REPORT), "-o", str(missing))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot write {missing}: No such file or directory (os error 2)"
    )
    directory = tmp_path / "directory"
    directory.mkdir()
    (directory / "kept").write_bytes(b"kept")
    completed = run_cli("render", str(REPORT), "-o", str(directory))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot write {directory}: Is a directory (os error 21)"
    )
    assert (directory / "kept").read_bytes() == b"kept"
    assert temporaries(tmp_path) == []


def test_cli_output_on_a_read_only_file_system_exits_2(tmpfs: Path) -> None:
    target = tmpfs / "out.html"
    target.write_bytes(b"old")
    remount_read_only(tmpfs)
    completed = run_cli("render", str(REPORT), "-o", str(target))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot write {target}: Read-only file system (os error 30)"
    )
    assert target.read_bytes() == b"old"
    assert temporaries(tmpfs) == []


def test_cli_stops_reading_a_device_that_never_ends() -> None:
    completed = run_cli("summary", "/dev/zero", "--max-input-bytes", "65536")
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        "torchscan-report: cannot read /dev/zero: larger than the limit of 65536 bytes (64 KiB); "
        "raise it with --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES"
    )
    env = {**os.environ, "TORCHSCAN_MAX_INPUT_BYTES": "1000"}
    completed = run_cli("validate", "/dev/zero", env=env)
    assert completed.returncode == 2
    assert completed.stderr.decode().splitlines()[0] == (
        "torchscan-report: cannot read /dev/zero: larger than the limit of 1000 bytes; "
        "raise it with --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES"
    )


def test_cli_limit_option_beats_the_environment_and_bad_values_exit_2() -> None:
    size = REPORT.stat().st_size
    env = {**os.environ, "TORCHSCAN_MAX_INPUT_BYTES": "10"}
    completed = run_cli("validate", str(REPORT), "--max-input-bytes", str(size), env=env)
    assert completed.returncode == 0, completed.stderr
    completed = run_cli("summary", str(REPORT), "--max-input-bytes", str(size - 1))
    assert completed.returncode == 2
    for value in ("0", "-1", "1e9", "lots"):
        completed = run_cli("validate", str(REPORT), "--max-input-bytes", value)
        assert completed.returncode == 2
        assert stderr_line(completed) == (
            f"torchscan-report: invalid --max-input-bytes value `{value}`: expected a whole "
            "number of bytes, at least 1"
        )
    env = {**os.environ, "TORCHSCAN_MAX_INPUT_BYTES": "lots"}
    completed = run_cli("validate", str(REPORT), env=env)
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        "torchscan-report: invalid TORCHSCAN_MAX_INPUT_BYTES value `lots`: expected a whole "
        "number of bytes, at least 1"
    )


def test_cli_unreadable_inputs_exit_2_with_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    completed = run_cli("summary", str(missing))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot read {missing}: No such file or directory (os error 2)"
    )
    completed = run_cli("render", str(tmp_path))
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        f"torchscan-report: cannot read {tmp_path}: Is a directory (os error 21)"
    )
    completed = run_cli("validate", str(missing))
    assert completed.returncode == 2


def test_cli_invalid_utf8_is_an_invalid_report(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'{"kind": "caf\xe9"}')
    completed = run_cli("summary", str(latin1))
    assert completed.returncode == 1
    assert stderr_line(completed) == (
        f"{latin1}: $: not valid UTF-8 (invalid byte at offset 13); a report is JSON text in UTF-8"
    )
    completed = run_cli("validate", str(latin1))
    assert completed.returncode == 1


def test_cli_stdin_named_twice_is_a_usage_error() -> None:
    completed = subprocess.run(
        [report_cli(), "validate", "-", "-"],
        input=b"{}",
        capture_output=True,
        check=False,
        timeout=TIMEOUT_S,
    )
    assert completed.returncode == 2
    assert stderr_line(completed) == (
        "torchscan-report: standard input (`-`) can be named only once"
    )
