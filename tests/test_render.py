"""`torchscan.render.render_report`: the core's HTML page, byte-identical with the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from torchscan.errors import ReportValidationError
from torchscan.render import render_report

from .conftest import ROOT

FIXTURES = sorted((ROOT / "tests/fixtures/reports").glob("*.json")) + sorted(
    (ROOT / "python/torchscan/data").glob("*.json")
)
CLI = Path(__file__).resolve().parents[1] / ".venv/bin/torchscan-report"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.name)
def test_the_page_is_the_cli_page_byte_for_byte(path: Path, tmp_path: Path) -> None:
    page = render_report(path)
    assert page.startswith("<!DOCTYPE html>")
    target = tmp_path / "page.html"
    result = subprocess.run(
        [str(CLI), "render", str(path), "-o", str(target)],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == page.encode("utf-8")


@pytest.mark.parametrize("path", FIXTURES[:3], ids=lambda path: path.name)
def test_mapping_text_and_path_give_one_page(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert render_report(json.loads(text)) == render_report(text) == render_report(str(path))


def test_an_invalid_report_raises_with_its_problems() -> None:
    with pytest.raises(ReportValidationError) as caught:
        render_report({"schema_version": 1, "kind": "analysis"})
    assert caught.value.problems
