"""Every entry point resolves ``device=`` with the same rules and says the same thing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import (
    InvalidArgumentError,
    TensorMemoryTracker,
    compare_workloads,
    crawl_module,
    measure_peak_memory,
    measure_workload,
)

MODEL = nn.Linear(4, 4)
X = torch.ones(1, 4)

ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "crawl_module": lambda device: crawl_module(MODEL, (4,), device=device),
    "measure_workload": lambda device: measure_workload(
        lambda: MODEL(X), device=device, print_summary=False
    ),
    "compare_workloads": lambda device: compare_workloads(
        lambda: MODEL(X), lambda: MODEL(X), rtol=0, atol=0, device=device, print_summary=False
    ),
    "measure_peak_memory": lambda device: measure_peak_memory(lambda: MODEL(X), device=device),
    "TensorMemoryTracker": lambda device: TensorMemoryTracker(device=device),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_name_torch_does_not_know_is_the_same_error_everywhere(entry: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        ENTRY_POINTS[entry]("gpu")
    assert str(raised.value) == (
        "device 'gpu' is not a torch device; pass 'cpu', 'cuda', 'cuda:0' or 'mps'"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_cuda_without_cuda_is_the_same_error_everywhere(entry: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        ENTRY_POINTS[entry](torch.device("cuda"))
    assert str(raised.value) == (
        "device 'cuda' was requested but no CUDA device is available (no GPU, or a CPU-only "
        "PyTorch build); pass device='cpu'"
    )


def test_measuring_needs_a_measured_device_type_the_analysis_takes_the_models() -> None:
    with pytest.raises(InvalidArgumentError, match="device type 'meta' is not supported"):
        measure_workload(lambda: MODEL(X), device="meta", print_summary=False)
    with torch.device("meta"):
        on_meta = nn.Linear(4, 4)
    report = crawl_module(on_meta, (4,), device="meta")
    assert report["context"]["device"] == "meta"
