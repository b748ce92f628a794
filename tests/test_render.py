"""`torchscan.reports.render.render_report`: the core's HTML page, byte-identical with the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from torchscan.errors import ReportValidationError
from torchscan.reports.render import render_report

from .conftest import ROOT, report_cli

FIXTURES = sorted((ROOT / "tests/fixtures/reports").glob("*.json")) + sorted(
    (ROOT / "python/torchscan/data").glob("*.json")
)
# The console script of the interpreter running the tests, wherever its environment lives.
CLI = report_cli()


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


def _context_rows(page: str) -> dict[str, tuple[str, str, bool]]:
    """The contexts table of a comparison page: setting -> (baseline, candidate, marked)."""
    table = page[page.index('<table class="sides">') : page.index("</table>", page.index("sides"))]
    rows = {}
    for line in table.splitlines():
        if not line.startswith("<tr") or "<td>" not in line:
            continue
        cells = [
            cell.split("</td>")[0].split(">", 1)[1].replace("<strong>", "").replace("</strong>", "")
            for cell in line.split("<td")[1:]
        ]
        differs = line.startswith('<tr class="differs">')
        assert cells[3] == ("&#8800; differs" if differs else "same"), line
        rows[cells[0]] = (cells[1], cells[2], differs)
    return rows


def test_a_comparison_page_shows_both_measured_contexts() -> None:
    """Device, threads, torch and Python come from the two reports, never `unknown`."""
    import platform

    import torch

    from torchscan import compare_benchmarks, measure_workload

    model = torch.nn.Linear(8, 8)
    inputs = torch.randn(2, 8)

    def workload() -> torch.Tensor:
        return model(inputs)

    baseline = measure_workload(
        workload, inputs=inputs, metrics=["operator_flops"], print_summary=False
    )
    candidate = json.loads(json.dumps(baseline))
    candidate["context"]["torch_threads"] = baseline["context"]["torch_threads"] + 3
    comparison = compare_benchmarks(baseline, candidate)
    # The comparison's own context records only the torchscan version that compared.
    assert comparison["context"]["device"] is None
    page = render_report(comparison)
    assert "unknown" not in page
    rows = _context_rows(page)
    threads = torch.get_num_threads()
    assert rows["Device"] == ("cpu", "cpu", False)
    assert rows["Threads"] == (str(threads), str(threads + 3), True)
    assert rows["torch"] == (torch.__version__, torch.__version__, False)
    assert rows["Python"] == (platform.python_version(),) * 2 + (False,)
    assert rows["dtypes"] == ("float32", "float32", False)
    assert [label for label, row in rows.items() if row[2]] == ["Threads"]
    assert "1 setting differs (marked \u2260)." in page
