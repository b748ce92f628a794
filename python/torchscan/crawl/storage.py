"""A model's parameter and buffer totals, counted by storage (``_core.OwnStorage``)."""

from __future__ import annotations

from .. import _core
from ..reports import MetricResult
from ..reports import metrics as _metrics

_STORAGE_SCOPE = "storage of unique {what} (storage, not peak memory)"


_STORAGE_METHOD = (
    "storage bytes covered by the tensors, each counted once (shared tensors and overlapping "
    "views once)"
)


_COUNT_SCOPE = "elements of unique {what} of the model"


_COUNT_METHOD = (
    "storage elements covered by the tensors, each counted once (shared tensors and "
    "overlapping views once)"
)


def _count(value: int, what: str) -> MetricResult:
    """An element count among the totals: always complete, unit ``count``."""
    return _metrics.complete(int(value), "count", _COUNT_SCOPE.format(what=what), _COUNT_METHOD)


def totals_storage(walked: _core.StorageWalk) -> tuple[dict[str, MetricResult], list[str]]:
    """Storage totals and the description of each tie, for the ``shared_tensors`` diagnostic.

    ``walked`` holds the totals and ties ``_core.walk_storage`` found: every storage element
    is counted once, so a tensor under two names, or views that overlap in one storage (a
    transposed tie), count what they cover together, and disjoint views of one flat buffer
    count in full.
    """
    parameters, trainable = walked.parameters, walked.trainable
    storage = {
        "parameters": _count(parameters, "parameters"),
        "trainable_parameters": _count(trainable, "parameters that require grad"),
        "frozen_parameters": _count(parameters - trainable, "parameters that do not require grad"),
        "parameter_bytes": _metrics.complete(
            int(walked.parameter_bytes),
            "B",
            _STORAGE_SCOPE.format(what="parameters"),
            _STORAGE_METHOD,
        ),
        "buffer_elements": _count(walked.buffer_elements, "buffers"),
        "buffer_bytes": _metrics.complete(
            int(walked.buffer_bytes), "B", _STORAGE_SCOPE.format(what="buffers"), _STORAGE_METHOD
        ),
    }
    return storage, [_describe_tie(tie) for tie in walked.ties]


def _describe_tie(tie: _core.StorageTie) -> str:
    """One group of tensors counted once, for the ``shared_tensors`` diagnostic."""
    if tie.tensors == 1:
        return " = ".join(tie.names)
    return (
        f"{', '.join(tie.names)} ({tie.tensors} tensors overlapping in one storage: "
        f"{tie.elements:,} elements, {tie.counted:,} counted)"
    )
