"""torchscan 0.2's ``torchscan.process``: ``measure_peak_memory`` returning its flat dict of bytes.

Code written for torchscan 0.2 keeps running::

    from torchscan.process import measure_peak_memory

    memory = measure_peak_memory(lambda: model(x), device=x.device)
    print(memory["device"], memory["metric"], memory["peak_bytes"])

The numbers come from :func:`torchscan.measure_peak_memory` (the ``peak_memory`` report, kept
whole under ``"report"``), so they carry a status: ``"status"`` and ``"reason"`` say whether the
bytes are exact (``complete``), lower bounds (``partial``) or missing (``unavailable``, bytes
``None``), where 0.2 gave bare numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal, TypedDict, cast

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - exercised on Python 3.10 only
    from typing_extensions import NotRequired

from .errors import InvalidArgumentError
from .reports import MetricResult, PeakMemoryReport
from .reports.metrics import weaker_status

__all__ = ["ProcessPeakMemory", "measure_peak_memory"]


Status = Literal["complete", "partial", "unavailable"]


class ProcessPeakMemory(TypedDict):
    """torchscan 0.2's result of ``measure_peak_memory``, with the status of its numbers."""

    #: The device measured: ``cpu``, ``cuda:N`` or ``mps``.
    device: str
    #: What the bytes count: ``pytorch_tensor_bytes`` (CPU and MPS: the storage tracker's tensor
    #: bytes) or ``pytorch_reserved_bytes`` (CUDA: the caching allocator's reserved bytes).
    metric: Literal["pytorch_tensor_bytes", "pytorch_reserved_bytes"]
    #: Bytes when the workload started (a lower bound when ``status`` is ``partial``).
    baseline_bytes: int | None
    #: Peak bytes during the workload, baseline included (a lower bound when ``partial``).
    peak_bytes: int | None
    #: ``peak_bytes - baseline_bytes``; ``None`` unless both are exact (the difference of two
    #: lower bounds bounds nothing).
    delta_bytes: int | None
    #: CUDA only: the allocator's peak allocated (tensor) bytes.
    allocated_peak_bytes: NotRequired[int | None]
    #: The weakest status of the numbers above.
    status: Status
    #: Why a number is partial or unavailable; ``None`` when complete.
    reason: str | None
    #: The whole ``peak_memory`` report the numbers come from (scope, method, context).
    report: PeakMemoryReport


def _bytes(metric: MetricResult) -> int | None:
    known = metric["known_value"]
    return None if known is None else int(known)


def measure_peak_memory(workload: Callable[[], object], *, device: Any) -> ProcessPeakMemory:
    """Run ``workload()`` once and return torchscan 0.2's dict of its peak PyTorch memory.

    Args:
        workload: a zero-argument callable, invoked exactly once.
        device: the device the workload runs on (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or
            a ``torch.device``); required, as in 0.2.

    On CPU and MPS, ``metric`` is ``pytorch_tensor_bytes``: ``baseline_bytes`` is the tensor
    storage reachable from ``workload`` when it starts and ``peak_bytes`` the tracked peak, as
    :func:`torchscan.measure_peak_memory` measures them (scope ``PyTorch tracked CPU tensors``;
    never process RSS). On CUDA, ``metric`` is ``pytorch_reserved_bytes``: ``baseline_bytes`` is
    ``torch.cuda.memory_reserved`` before the call, ``peak_bytes`` the caching allocator's peak
    reserved bytes and ``allocated_peak_bytes`` its peak allocated bytes (every tensor of the
    process on that device).

    The keys 0.2 gave are all there. ``status`` and ``reason`` say whether the bytes are exact,
    lower bounds or missing, and ``report`` holds the ``peak_memory`` report they come from.
    Raises :class:`~torchscan.InvalidArgumentError` (a ``ValueError``) for a workload that is not
    callable and for an unknown or unavailable device, where 0.2 raised ``RuntimeError`` or
    ``NotImplementedError``. The workload's own exception propagates unchanged.

    """
    from ._devices import resolve_device
    from .memory import measure_peak_memory as measure

    if not callable(workload):
        raise InvalidArgumentError(
            "workload must be a zero-argument callable (e.g. lambda: model(x)); got "
            f"{type(workload).__name__}"
        )
    resolved = resolve_device(device, what="peak memory")
    reserved_before: int | None = None
    if resolved.type == "cuda":
        import torch

        torch.cuda.synchronize(resolved)
        reserved_before = int(torch.cuda.memory_reserved(resolved))
    report = measure(workload, device=resolved)
    baseline, tensor_peak = report["baseline"], report["tensor_memory_peak"]
    if reserved_before is not None:
        reserved_peak = report["allocator_reserved_peak"]
        used = [tensor_peak, reserved_peak]
        result: ProcessPeakMemory = {
            "device": str(resolved),
            "metric": "pytorch_reserved_bytes",
            "baseline_bytes": reserved_before,
            "peak_bytes": _bytes(reserved_peak),
            "delta_bytes": None,
            "allocated_peak_bytes": _bytes(tensor_peak),
            "status": "complete",
            "reason": None,
            "report": report,
        }
    else:
        used = [baseline, tensor_peak]
        result = {
            "device": str(resolved),
            "metric": "pytorch_tensor_bytes",
            "baseline_bytes": _bytes(baseline),
            "peak_bytes": _bytes(tensor_peak),
            "delta_bytes": None,
            "status": "complete",
            "reason": None,
            "report": report,
        }
    status = cast(Status, weaker_status(*(metric["status"] for metric in used)))
    result["status"] = status
    reasons = [metric["reason"] for metric in used if metric["reason"]]
    result["reason"] = "; ".join(dict.fromkeys(reasons)) if reasons else None
    if status == "complete":
        peak, start = result["peak_bytes"], result["baseline_bytes"]
        assert peak is not None and start is not None  # complete metrics carry their values
        result["delta_bytes"] = peak - start
    return result
