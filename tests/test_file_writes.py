"""The one writer (`_core.write_file`) and the `torchscan-report` CLI's file I/O on every kind of
node: what is replaced, what is written through, and what is left as it was after a failure."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import threading
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


def test_write_file_writes_dev_null_and_a_copy_of_it(tmp_path: Path) -> None:
    _core.write_file("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    null = tmp_path / "null"
    make_node(null, stat.S_IFCHR, 1, 3)
    _core.write_file(null, b"discarded")
    assert stat.S_ISCHR(null.lstat().st_mode)
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


def test_cli_output_to_dev_null_and_a_copy_of_it(tmp_path: Path) -> None:
    completed = run_cli("render", str(REPORT), "-o", "/dev/null")
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    null = tmp_path / "null"
    make_node(null, stat.S_IFCHR, 1, 3)
    completed = run_cli("render", str(REPORT), "-o", str(null))
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISCHR(null.lstat().st_mode)
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
