"""The operators of the analysed forward: the dispatch mode and the counter that log them.

The lean path is compiled (``_core.DispatchRecorder``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from math import prod
from typing import Any

from .. import _core
from ..flops import add_legacy_views
from ..reports import (
    ModuleOperatorFlops,
    OperatorFlops,
)
from .call_recorder import ModuleCallRecorder

_OPERATOR_SCOPE = "operators of one evaluation forward"


_SKIPPED_ARGUMENTS = (int, float, bool, str, type(None))


def _tensor_ids(values: Any) -> list[int]:
    """Identities of every tensor among an operator's arguments (tuples, lists, dicts)."""
    import torch

    found: list[int] = []
    for value in values:
        kind = type(value)
        if kind in _SKIPPED_ARGUMENTS:
            continue
        if isinstance(value, torch.Tensor):
            found.append(id(value))
        elif kind is list or kind is tuple:
            found.extend(_tensor_ids(value))
        elif kind is dict:
            found.extend(_tensor_ids(value.values()))
    return found


def shape_elements(values: Iterable[Any]) -> int:
    """Elements of every tensor shape (``torch.Size``) among values as shape formulas take them.

    Tensors were replaced by their shapes; sizes, strides and other arguments are plain lists
    and tuples of numbers, which are not shapes. ``_core.Assembler`` counts in compiled code and
    calls this only for totals beyond 128 bits.
    """
    import torch

    size_type = torch.Size
    total = 0
    for value in values:
        kind = type(value)
        if kind is size_type:
            total += prod(value)
        elif kind is list or kind is tuple:
            total += shape_elements(value)
        elif kind is dict:
            total += shape_elements(value.values())
    return int(total)


def crawl_counter(recorder: ModuleCallRecorder) -> Any:
    """An operator counter for the analysed forward (the class is built on first use)."""
    return _crawl_counter_class()(recorder)


@functools.cache
def _crawl_counter_class() -> type:
    import torch

    from ..flops import OperatorFlopCounter
    from ..opflops.formulas import shapes_of
    from ..opflops.mode import Entry

    tensor_type = torch.Tensor

    class CrawlCounter(OperatorFlopCounter):
        """The operator FLOPs counter of the analysed forward.

        Its mode is ``CompiledFlopMode``, as every counter's; every executed operator is logged,
        as a ``_core.OperatorRecord``, with the module call that ran it. Once the forward is
        over, ``_core.Assembler`` applies the deferred formulas, gives each call the FLOPs and
        DMAs of the operators it ran itself (``by_module`` is summed over the call tree) and
        replays the receptive fields from the same log; ``_apply_formulas`` counts what the
        deferred formulas came to.
        """

        # The analysed forward runs on the calling thread, from inputs torchscan made: other
        # threads are not watched (see docs/measurement-boundaries.md).
        _watch_threads = False
        # The analysis reports no operator bytes (the FLOPs pass of ``measure_workload`` does):
        # reading every operator's tensor sizes would cost its forward for nothing.
        _count_bytes = False

        def __init__(self, recorder: ModuleCallRecorder) -> None:
            super().__init__()
            self._recorder = recorder
            self._log = recorder.log if recorder.log is not None else []

        def _dispatch_scope(self) -> Any:
            return self._recorder.core  # operators ran in the innermost module call

        def _dispatch_log(self) -> list[Any]:
            return self._log

        def _attach(self, dispatch: _core.DispatchRecorder) -> None:
            pass  # the general path logs to the same list itself (``_after``)

        def _detach(self, dispatch: _core.DispatchRecorder) -> None:
            # The lean calls' tallies; their formulas are applied by the assembly (``apply``).
            self._take_tallies(dispatch)

        def _after(
            self,
            entry: Entry,
            outcome: int,
            flops: int,
            args: tuple[Any, ...],
            kwargs: Mapping[str, Any],
            out: Any,
        ) -> None:
            # The general path (the lean one is ``_core.DispatchRecorder``).
            ids = _tensor_ids(args)
            first = len(_tensor_ids(args[:1]))
            if kwargs:
                ids += _tensor_ids(kwargs.values())
            outputs = [out] if isinstance(out, tensor_type) else _tensors_of(out)
            self._log.append(
                _core.OperatorRecord(
                    entry=entry,
                    call=self._recorder.top,
                    outcome=outcome,
                    flops=flops,
                    args=[shapes_of(value) for value in args],
                    kwargs=(
                        {key: shapes_of(value) for key, value in kwargs.items()} if kwargs else None
                    ),
                    out=shapes_of(out),
                    inputs=ids,
                    first_inputs=first,
                    outputs=[(id(tensor), tensor.dim()) for tensor in outputs],
                )
            )

        def report(self, modules: list[ModuleOperatorFlops], root: str) -> OperatorFlops:
            """The ``operator_flops`` section, with the FLOPs of every module path of ``root``."""
            self._modules = {}
            section = self.operator_flops(scope=_OPERATOR_SCOPE)
            section["modules"] = modules
            add_legacy_views(section, root)
            return section

    return CrawlCounter


def _tensors_of(value: Any) -> list[Any]:
    """The tensors in ``value`` (tuples, lists, dicts), in order."""
    import torch

    found: list[Any] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)):
            pending.extend(reversed(item))
        elif isinstance(item, dict):
            pending.extend(reversed(item.values()))
    return found
