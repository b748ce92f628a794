"""Numbers people read: summaries and pages scale them, keep the exact value beside, never show a
nonzero value as zero; the workload summary keeps its lines; JSON stays raw SI numbers."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchscan import crawl_module, format_summary, render_report

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "python" / "torchscan" / "data" / "example_workload.json"
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.json"))


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 30 * 30, 10),
    ).eval()


def test_analysis_summary_scales_numbers_and_keeps_the_exact_value_beside() -> None:
    report = crawl_module(small_model(), (3, 32, 32))
    totals = report["totals"]
    flops = int(totals["module_flops"]["value"])
    buffer_bytes = int(totals["buffer_bytes"]["value"])
    parameter_bytes = int(totals["parameter_bytes"]["value"])
    lines = format_summary(report).splitlines()
    # BatchNorm2d(8): 8 running means and variances in float32 and one int64 counter.
    assert buffer_bytes == 2 * 8 * 4 + 8
    assert "  Buffer storage: 72 B (storage, not peak memory)" in lines
    (storage_line,) = [line for line in lines if line.startswith("  Parameter storage: ")]
    # Four significant digits: 289,000 B is 282.2 KiB.
    assert parameter_bytes == 289_000
    assert storage_line == "  Parameter storage: 282.2 KiB (289,000 B) (storage, not peak memory)"
    assert flops == 568_816
    assert "  Module FLOPs (estimate): 568.8 kFLOPs (568,816 FLOPs)" in lines
    # No number with decimals on a whole count, and nothing nonzero shown as zero.
    assert not [line for line in lines if ".000 FLOPs" in line or "0.000 MiB" in line]
    # The JSON keeps raw numbers.
    assert json.loads(json.dumps(report))["totals"]["module_flops"]["value"] == flops


def test_workload_summary_keeps_its_lines_and_only_grows_precision() -> None:
    report = json.loads((ROOT / "tests/fixtures/reports/benchmark_readme_cpu.json").read_text())
    iqr = report["metrics"]["latency_iqr"]["value"]
    assert round(iqr * 1e3, 3) == 0  # 0.000 ms with three decimals
    lines = format_summary(report).splitlines()
    assert f"  Latency IQR: {iqr * 1e3:.5f} ms" == "  Latency IQR: 0.00013 ms"
    assert "  Latency IQR: 0.00013 ms" in lines
    latency = report["metrics"]["latency"]["value"]
    assert f"  Latency (block median): {latency * 1e3:.3f} ms" in lines
    flops = report["metrics"]["operator_flops"]["value"]
    assert f"  Operator FLOPs: {flops:,.3f} FLOPs" in lines


def _cells(page: str) -> list[tuple[str | None, str]]:
    """Every table cell, fact value and card value: (its title, its text)."""
    found = []
    pattern = r'<(td|dd|div class="value")[^>]*?(?: title="([^"]*)")?>([^<]*)<'
    for _, title, text in re.findall(pattern, page):
        found.append((html.unescape(title) if title else None, html.unescape(text)))
    return found


def test_pages_show_readable_numbers_with_the_exact_value_as_title() -> None:
    page = render_report(json.loads(EXAMPLE.read_text("utf-8")))
    cells = dict((text, title) for title, text in _cells(page))
    assert cells["32 samples"] is None  # whole: no decimals, nothing more exact to say
    iqr = json.loads(EXAMPLE.read_text("utf-8"))["metrics"]["latency_iqr"]["value"]
    readable = f"{iqr * 1e9:.1f} ns"
    title = cells[readable]
    assert title is not None and title.endswith(" s")
    assert float(title.removesuffix(" s")) == iqr  # the exact value, to the last bit
    assert "0.000 ms" not in page and "32.000" not in page


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)


def _is_zero(number: str) -> bool:
    return float(number.replace(",", "")) == 0.0


def test_no_page_or_summary_shows_a_nonzero_metric_as_zero() -> None:
    for path in [EXAMPLE, *FIXTURES]:
        report: dict[str, Any] = json.loads(path.read_text("utf-8"))
        page = render_report(report)
        for title, text in _cells(page):
            if title is None or not _numbers(title):
                continue
            exact = float(_numbers(title)[0].replace(",", ""))
            shown = _numbers(text)
            if exact != 0.0 and shown:
                assert not _is_zero(shown[0]), (path.name, text, title)


def test_diffs_and_comparisons_read_as_people_read_with_the_exact_values_beside() -> None:
    from torchscan import compare_reports

    reports = ROOT / "tests" / "fixtures" / "reports"
    before = json.loads((reports / "analysis_small_cnn.json").read_text("utf-8"))
    after = json.loads((reports / "analysis_small_cnn_widened.json").read_text("utf-8"))
    lines = format_summary(compare_reports(before, after)).splitlines()
    assert "  parameters: 314 -> 618 (+304)" in lines
    assert (
        "  parameter_bytes: 1.227 KiB -> 2.414 KiB (+1.188 KiB; exact 1,256 B -> 2,472 B, +1,216 B)"
        in lines
    )
    assert "  buffer_bytes: 0 B -> 0 B (+0 B)" in lines
    comparison = json.loads((reports / "benchmark_comparison_passed.json").read_text("utf-8"))
    (latency,) = [
        line for line in format_summary(comparison).splitlines() if line.startswith("  latency:")
    ]
    (baseline,) = [delta for delta in comparison["deltas"] if delta["metric"] == "latency"]
    assert latency.startswith(
        f"  latency: {baseline['baseline'] * 1e6:.3f} us -> {baseline['candidate'] * 1e6:.3f} us "
        "(exact "
    )
