"""Shared paths and helpers of the Python tests."""

from __future__ import annotations

import json
import shutil
import sys
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
