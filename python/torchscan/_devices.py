"""The one device resolver: what a ``device=`` argument means, with one set of rules and errors.

Every entry point that takes a device (``crawl_module``, ``summary``, ``measure_workload``,
``compare_workloads``, ``measure_peak_memory``, ``TensorMemoryTracker``, the command line)
resolves it here: a ``str`` or ``torch.device`` that torch parses, a CUDA device that exists
(``"cuda"`` is the current CUDA device, made explicit: ``cuda:0``), MPS where it is available.
The measuring entry points work on CPU, CUDA and MPS; the analysis also takes the device types
a model may live on (``meta``, other accelerators) and checks the model's device itself.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["MEASURED_DEVICE_TYPES", "resolve_device"]

#: The device types the measuring passes (timing, tensor memory, RSS) work on.
MEASURED_DEVICE_TYPES = ("cpu", "cuda", "mps")


def resolve_device(
    device: Any, *, supported: Collection[str] | None = MEASURED_DEVICE_TYPES, what: str = ""
) -> Any:
    """``device`` as a ``torch.device``, or an :class:`~torchscan.InvalidArgumentError`.

    ``supported`` lists the device types the caller works on (``None``: any type torch knows);
    ``what`` names what is measured in the error for another type (``"tensor memory"``).
    A CUDA device is made explicit (``cuda`` is ``cuda:<current device>``) and must exist.
    """
    import torch

    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"device {device!r} is not a torch device; pass 'cpu', 'cuda', 'cuda:0' or 'mps'"
        ) from error
    if supported is not None and resolved.type not in supported:
        measured = f"{what} is measured on" if what else "supported device types:"
        raise InvalidArgumentError(
            f"device type {resolved.type!r} is not supported ({measured} "
            f"{', '.join(supported)}); pass device='cpu' or a CUDA device"
        )
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidArgumentError(
                f"device {str(device)!r} was requested but no CUDA device is available "
                "(no GPU, or a CPU-only PyTorch build); pass device='cpu'"
            )
        index = resolved.index if resolved.index is not None else torch.cuda.current_device()
        count = torch.cuda.device_count()
        if not 0 <= index < count:
            raise InvalidArgumentError(
                f"device {str(device)!r} does not exist: this machine has {count} CUDA "
                f"device{'s' if count != 1 else ''} (cuda:0 to cuda:{count - 1})"
            )
        return torch.device("cuda", index)
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidArgumentError(
            f"device {str(device)!r} was requested but MPS is not available "
            "(torch.backends.mps.is_available() is False); pass device='cpu'"
        )
    return resolved
