"""The CUDA paths that only a GPU machine can run: ``make gpu-check`` runs them (``-m cuda``).

Skipped where there is no CUDA device; the two-rank NCCL test needs two GPUs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from torchscan import validate_report

from .conftest import ROOT
from .test_distributed import LAUNCH_TIMEOUT_S, WORKER, _env, _run_session

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.cuda
@needs_cuda
def test_the_readme_example_runs_on_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = _readme_example()
    replacements = {
        "model = torch.nn.Linear(128, 128).eval()": (
            'model = torch.nn.Linear(128, 128).eval().to("cuda")'
        ),
        "inputs = torch.randn(32, 128)": 'inputs = torch.randn(32, 128, device="cuda")',
        'device="cpu"': 'device="cuda"',
    }
    for old, new in replacements.items():
        assert old in code, old  # the README example changed: update this test with it
        code = code.replace(old, new)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md#python-0 on CUDA", "exec"), {"__name__": "__main__"})
    report = json.loads((tmp_path / "workload.json").read_text(encoding="utf-8"))
    assert validate_report(report) == "benchmark"
    assert report["context"]["device"].startswith("cuda")
    for key in ("latency", "throughput", "tensor_memory_peak", "allocator_reserved_peak"):
        assert report["metrics"][key]["status"] == "complete", key


def _ddp_on_cuda(ranks: int, tmp_path: Path) -> dict[str, object]:
    args = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(ranks),
        str(WORKER),
        "ddp",
        str(tmp_path),
    ]
    code, output = _run_session(args, _env(DEVICE="cuda"), LAUNCH_TIMEOUT_S)
    assert code == 0, output[-6000:]
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    assert validate_report(merged) == "distributed_benchmark"
    return merged


@pytest.mark.cuda
@needs_cuda
def test_one_rank_on_nccl_times_blocks_with_cuda_events(tmp_path: Path) -> None:
    merged = _ddp_on_cuda(1, tmp_path)
    (rank,) = merged["rank_reports"]  # type: ignore[misc]
    assert rank["context"]["distributed"]["backend"] == "nccl"
    assert "CUDA events" in rank["metrics"]["latency"]["method"]
    assert merged["straggler"]["rank"] is None  # type: ignore[index]


@pytest.mark.cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_ranks_on_nccl(tmp_path: Path) -> None:
    merged = _ddp_on_cuda(2, tmp_path)
    assert merged["job"]["world_size"] == 2  # type: ignore[index]
    assert merged["job"]["backend"] == "nccl"  # type: ignore[index]
    devices = [report["context"]["device"] for report in merged["rank_reports"]]  # type: ignore[index]
    assert devices == ["cuda:0", "cuda:1"]
