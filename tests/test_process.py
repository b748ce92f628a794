"""``torchscan.process.measure_peak_memory``: torchscan 0.2's flat dict of bytes, with statuses."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import torchscan
from torchscan import InvalidArgumentError
from torchscan.process import measure_peak_memory

KEYS_02 = {"device", "metric", "baseline_bytes", "peak_bytes", "delta_bytes"}


class WorkloadError(Exception):
    """Raised by a workload, to check it propagates unchanged."""


def test_torchscan_0_2s_readme_example_runs() -> None:
    inputs = torch.ones(8)
    memory = measure_peak_memory(lambda: torch.cos(inputs), device=inputs.device)
    assert (memory["device"], memory["metric"]) == ("cpu", "pytorch_tensor_bytes")
    # The input (8 float32 = 32 B) is reachable from the lambda; cos makes 32 B more.
    assert (memory["baseline_bytes"], memory["peak_bytes"], memory["delta_bytes"]) == (32, 64, 32)
    assert memory.keys() >= KEYS_02
    assert (memory["status"], memory["reason"]) == ("complete", None)
    assert "allocated_peak_bytes" not in memory


def test_a_linear_layer_gives_its_parameters_input_and_output() -> None:
    layer = nn.Linear(128, 128)
    x = torch.randn(32, 128)
    calls = []

    def step() -> Any:
        calls.append(1)
        with torch.inference_mode():
            return layer(x)

    memory = torchscan.process.measure_peak_memory(step, device="cpu")
    assert calls == [1]
    # Parameters 66,048 B + input 16,384 B, then the 16,384 B output.
    assert memory["baseline_bytes"] == 82_432
    assert memory["peak_bytes"] == 98_816
    assert memory["delta_bytes"] == 16_384
    report = memory["report"]
    assert torchscan.validate_report(report) == "peak_memory"
    assert report["tensor_memory_peak"]["value"] == memory["peak_bytes"]
    assert report["tensor_memory_peak"]["scope"] == "PyTorch tracked CPU tensors"


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN tensors")
def test_an_unreadable_tensor_makes_the_bytes_lower_bounds() -> None:
    opaque = torch.randn(4).to_mkldnn()  # a tensor without a readable storage
    inputs = torch.ones(8)
    memory = measure_peak_memory(lambda: (opaque, torch.cos(inputs)), device="cpu")
    assert memory["status"] == "partial"
    assert memory["reason"] == "1 tensor without a readable storage (tensor subclasses) not counted"
    assert (memory["baseline_bytes"], memory["peak_bytes"]) == (32, 64)
    assert memory["delta_bytes"] is None  # the difference of two lower bounds bounds nothing


def test_the_device_is_required_and_checked() -> None:
    with pytest.raises(TypeError):
        measure_peak_memory(lambda: None)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match="is not a torch device"):
        measure_peak_memory(lambda: None, device="abacus")
    with pytest.raises(InvalidArgumentError, match="not supported"):
        measure_peak_memory(lambda: None, device="meta")
    with pytest.raises(InvalidArgumentError, match="zero-argument callable"):
        measure_peak_memory(torch.ones(1), device="cpu")  # type: ignore[arg-type]


def test_the_workloads_exception_propagates_unchanged() -> None:
    raised = WorkloadError("boom")

    def workload() -> None:
        raise raised

    with pytest.raises(WorkloadError) as caught:
        measure_peak_memory(workload, device="cpu")
    assert caught.value is raised


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allocator statistics of a pretend CUDA device, to test the mapping on any machine."""
    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "get_device_name", lambda device=None: "Pretend GPU")
    monkeypatch.setattr(cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(cuda, "memory_allocated", lambda device=None: 1000)
    monkeypatch.setattr(cuda, "memory_reserved", lambda device=None: 4096)
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda device=None: 5000)
    monkeypatch.setattr(cuda, "max_memory_reserved", lambda device=None: 8192)


def test_cuda_gives_the_allocators_reserved_bytes_as_0_2_did(fake_cuda: None) -> None:
    memory = measure_peak_memory(lambda: None, device="cuda")
    assert {key: value for key, value in memory.items() if key != "report"} == {
        "device": "cuda:0",
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": 4096,
        "peak_bytes": 8192,
        "delta_bytes": 4096,
        "allocated_peak_bytes": 5000,
        "status": "complete",
        "reason": None,
    }
    assert memory["report"]["allocator_reserved_peak"]["value"] == 8192


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_on_a_real_device() -> None:
    layer = nn.Linear(128, 128).cuda()
    x = torch.randn(32, 128, device="cuda")
    memory = measure_peak_memory(lambda: layer(x), device=x.device)
    assert memory["metric"] == "pytorch_reserved_bytes" and memory["status"] == "complete"
    assert memory["device"].startswith("cuda:")
    peak, allocated = memory["peak_bytes"], memory["allocated_peak_bytes"]
    assert peak is not None and allocated is not None and peak >= allocated >= 16_384
    assert memory["delta_bytes"] == peak - memory["baseline_bytes"]
