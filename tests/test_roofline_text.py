"""The roofline's words for a workload with no FLOPs: never NaN or infinity in text."""

from __future__ import annotations

import html
import re
from typing import Any

import torch

from torchscan import format_summary, measure_workload, render_report, validate_report

torch.set_num_threads(1)

NOT_A_NUMBER = re.compile(r"\b(NaN|nan|inf|Infinity)\b")


def _copy_report() -> Any:
    """A workload that only copies (0 FLOPs, some operator bytes) against a declared peak."""
    x = torch.randn(64, 64)
    return measure_workload(
        lambda: x.clone(),
        metrics=["latency", "operator_flops"],
        peak={"flop_rate": 1e12, "bandwidth": 1e11, "source": "test: a declared peak"},
        min_time_s=0.05,
        max_time_s=1.0,
        warmup_time_s=0.0,
        print_summary=False,
    )


def _caption(page: str) -> str:
    """The roofline's caption, as a reader sees it."""
    captions = [
        html.unescape(text).strip()
        for text in re.findall(r"<figcaption[^>]*>(.*?)</figcaption>", page, re.DOTALL)
        if "Roofline" in text
    ]
    assert len(captions) == 1, captions
    return captions[0]


def test_a_workload_without_flops_says_its_share_of_the_roof_is_unavailable() -> None:
    report = _copy_report()
    assert validate_report(report) == "benchmark"
    assert report["metrics"]["operator_flops"]["value"] == 0
    page = render_report(report)
    caption = _caption(page)
    assert caption.endswith(
        "The workload, at 0 FLOP/B and 0 FLOP/s, is memory-bound: its roof there is 0 FLOP/s; "
        "the share of it reached is unavailable: no FLOPs were counted (operator FLOPs are 0)."
    ), caption
    assert NOT_A_NUMBER.search(html.unescape(page)) is None
    summary = format_summary(report)
    assert NOT_A_NUMBER.search(summary) is None, summary
    lines = summary.splitlines()
    assert "  Achieved: 0 FLOP/s (0.0% of 1.000 TFLOP/s, declared peak)" in lines
    assert (
        "  Bound: memory-bound: arithmetic intensity 0 FLOP/B is below the ridge point 10 FLOP/B "
        "(1.000 TFLOP/s over 100.0 GB/s)"
    ) in lines
