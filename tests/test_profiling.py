"""The profiler pass reads its events from the raw records, as ``key_averages`` counts them."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from torchscan.measure.profiling import _add_cpu_totals


def _profiled_training_steps() -> torch.profiler.profile:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randn(8, 32)

    def step() -> None:
        optimizer.zero_grad()
        model(x).sum().backward()  # ``aten::sum`` calls its own overload: merged by PyTorch
        optimizer.step()

    step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
            for _ in range(3):
                step()
    return profiler


def test_raw_totals_equal_key_averages() -> None:
    profiler = _profiled_training_steps()
    totals: dict[str, list[float]] = {}
    _add_cpu_totals(profiler.profiler.kineto_results.events(), totals)
    averages = {event.key: event for event in profiler.key_averages()}
    assert set(totals) == set(averages)
    for name, (calls, self_us, total_us) in totals.items():
        expected = averages[name]
        assert calls == expected.count, name
        # Both from the same nanosecond records: equal up to float rounding.
        assert total_us == pytest.approx(expected.cpu_time_total, rel=1e-9, abs=1e-6), name
        assert self_us == pytest.approx(expected.self_cpu_time_total, rel=1e-9, abs=1e-6), name
    assert (
        totals["aten::sum"][0]
        == averages["aten::sum"].count
        < sum(event.name() == "aten::sum" for event in profiler.profiler.kineto_results.events())
    )


def test_crossed_ranges_are_not_nested_as_pytorch_nests_them() -> None:
    # r2 starts inside r1 but ends after it: neither is the other's child.
    a = torch.randn(64, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
            first = torch.autograd.profiler.record_function("r1")
            first.__enter__()
            a @ a
            second = torch.autograd.profiler.record_function("r2")
            second.__enter__()
            a @ a
            first.__exit__(None, None, None)
            a @ a
            second.__exit__(None, None, None)
    totals: dict[str, list[float]] = {}
    _add_cpu_totals(profiler.profiler.kineto_results.events(), totals)
    averages = {event.key: event for event in profiler.key_averages()}
    for name in ("r1", "r2", "aten::mm"):
        calls, self_us, total_us = totals[name]
        assert calls == averages[name].count, name
        assert total_us == pytest.approx(averages[name].cpu_time_total, rel=1e-9, abs=1e-6)
        assert self_us == pytest.approx(averages[name].self_cpu_time_total, rel=1e-9, abs=1e-6)
    assert totals["r1"][1] > 0  # not eaten by r2, which it does not contain
