"""Shared paths and helpers of the Python tests."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
VALID_DIRS = (FIXTURES / "reports", ROOT / "python" / "torchscan" / "data")


def valid_fixtures() -> list[Path]:
    return sorted(path for folder in VALID_DIRS for path in folder.glob("*.json"))


def invalid_fixtures() -> list[Path]:
    return sorted((FIXTURES / "invalid").glob("*.json"))


def expected_invalid_paths() -> dict[str, str]:
    return json.loads((FIXTURES / "invalid_expected.json").read_text(encoding="utf-8"))


def report_cli() -> str:
    """The `torchscan-report` console script of the interpreter running the tests."""
    script = Path(sys.executable).parent / "torchscan-report"
    if script.exists():
        return str(script)
    found = shutil.which("torchscan-report")
    if found is None:
        raise RuntimeError("the torchscan-report console script is not installed")
    return found


@pytest.fixture(scope="session")
def cli() -> str:
    return report_cli()


def _dev_null_kind() -> str:
    try:
        mode = os.lstat("/dev/null").st_mode
    except OSError as error:
        return f"missing ({error.strerror})"
    if stat.S_ISCHR(mode):
        return "a character device"
    return f"not a character device (file type {stat.S_IFMT(mode):o})"


@pytest.fixture(scope="session", autouse=True)
def dev_null_stays_a_device() -> Iterator[None]:
    """Fails the run when /dev/null is no longer a character device at its end: a test that
    replaced it would have made every later write to it fill the disk."""
    before = _dev_null_kind()
    yield
    after = _dev_null_kind()
    assert after == "a character device", f"/dev/null was {before} at the start, now {after}"


@pytest.fixture
def full_device(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of /dev/full (character device 1, 7) made with mknod in a folder of its own.

    No test writes the real device. Where mknod is not permitted the test skips, except under
    ``CI=true`` (CI runs as root), where it fails.
    """
    path = tmp_path_factory.mktemp("devices") / "full"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError as error:
        reason = f"mknod of a /dev/full copy is not permitted here: {error}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
