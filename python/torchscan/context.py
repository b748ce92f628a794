"""The ``context`` of a report: versions, platform, device, threads and flags that change numbers.

Never tensor values, file paths or reprs of user objects.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from . import _core
from ._values import dtype_name
from .reports import Context, Flags

__all__ = ["THREAD_ENV_VARS", "capture_context", "cpu_model", "current_flags", "device_name"]

#: Environment variables that set thread counts, recorded when set.
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "TORCH_NUM_THREADS",
)


@lru_cache(maxsize=1)
def _platform() -> tuple[str, str]:
    """Python version and platform string: fixed for the life of the process."""
    return platform.python_version(), platform.platform()


@lru_cache(maxsize=1)
def cpu_model() -> str | None:
    """The CPU model name, from ``/proc/cpuinfo`` on Linux or the platform elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "Processor") and value.strip():
                    return value.strip()
    except OSError:
        pass
    name = platform.processor()
    return name or None


def device_name(device: Any) -> str | None:
    """A human name of ``device`` (a ``torch.device``): the GPU's name, or the CPU model."""
    import torch

    if device.type == "cuda" and torch.cuda.is_available():
        return str(torch.cuda.get_device_name(device))
    if device.type == "cpu":
        return cpu_model()
    return None


def _flags() -> Flags:
    import torch

    cudnn = torch.backends.cudnn
    return {
        "grad_enabled": bool(torch.is_grad_enabled()),
        "inference_mode": bool(torch.is_inference_mode_enabled()),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(cudnn.allow_tf32),
        "cudnn_benchmark": bool(cudnn.benchmark),
        "cudnn_deterministic": bool(cudnn.deterministic),
        "float32_matmul_precision": str(torch.get_float32_matmul_precision()),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "autocast": _autocast(),
    }


# The device types whose autocast state is recorded.
_AUTOCAST_DEVICES = ("cpu", "cuda", "mps", "xpu")


def _autocast() -> dict[str, str]:
    """The autocast regions active on this thread: device type to the dtype they compute in."""
    import torch

    active: dict[str, str] = {}
    # One query in the usual case of no region at all: after a forward every code path runs
    # with cold caches, and five queries, some of them raising, cost tens of microseconds.
    any_enabled = getattr(torch._C, "_is_any_autocast_enabled", None)
    if any_enabled is not None and not any_enabled():
        return active
    for device_type in _AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device_type):
                active[device_type] = dtype_name(torch.get_autocast_dtype(device_type))
        except (RuntimeError, TypeError, AttributeError):  # a device type this build lacks
            continue
    return active


def qualified_type_name(obj: Any) -> str:
    """The class of ``obj`` as a report's ``model_type`` names it (torchscan 0.2's layout).

    ``__module__.__qualname__``, for example ``torch.nn.modules.conv.Conv2d``.
    """
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def class_name(obj: Any) -> str:
    """The name torchscan 0.2's ``by_module`` gives ``obj``'s class, as the core reads it.

    The last dotted component of its ``model_type``: ``ResNet`` for
    ``torchvision.models.resnet.ResNet``.
    """
    return type(obj).__qualname__.rsplit(".", 1)[-1]


def capture_context(
    device: Any = None,
    dtypes: Iterable[Any] = (),
    *,
    model_type: str | None = None,
    training_before: bool | None = None,
    flags: Flags | None = None,
    execution_mode: str | None = None,
    devices: Iterable[str] = (),
    ranked: bool = False,
) -> Context:
    """Return the context of a report made now on ``device`` (a ``torch.device`` or ``None``).

    ``flags`` overrides the captured flags, for a caller that records them before changing
    grad mode. ``dtypes`` are recorded sorted by name, or, with ``ranked``, in the order given
    (the precision computed in first), each once. Thread counts are recorded, never changed.
    """
    import torch

    if ranked:
        names = list(dict.fromkeys(dtype_name(dtype) for dtype in dtypes))
    else:
        names = sorted({dtype_name(dtype) for dtype in dtypes})
    return {
        "torchscan_version": _core.__version__,
        "torch_version": str(torch.__version__),
        "python_version": _platform()[0],
        "platform": _platform()[1],
        "cpu_model": cpu_model(),
        "device": str(device) if device is not None else None,
        "device_name": device_name(device) if device is not None else None,
        "torch_threads": int(torch.get_num_threads()),
        "torch_interop_threads": int(torch.get_num_interop_threads()),
        "thread_env": {name: os.environ[name] for name in THREAD_ENV_VARS if name in os.environ},
        "flags": flags if flags is not None else _flags(),
        "dtypes": names,
        "model_type": model_type,
        "training_before": training_before,
        "execution_mode": execution_mode,
        "devices": list(devices),
    }


def current_flags() -> Flags:
    """The flags that change numbers, as they are now."""
    return _flags()
