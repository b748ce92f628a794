"""The operators of the analysed forward: the dispatch mode and the counter that log them.

The lean path is compiled (``_core.DispatchRecorder``).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable, Mapping
from math import prod
from typing import Any

from .. import _core
from ..flops import add_legacy_views
from ..reports import (
    ModuleOperatorFlops,
    OperatorFlops,
)
from .call_recorder import _Recorder

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


def _shape_elements(values: Iterable[Any]) -> int:
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
            total += _shape_elements(value)
        elif kind is dict:
            total += _shape_elements(value.values())
    return int(total)


def _crawl_counter(recorder: _Recorder) -> Any:
    """An operator counter for the analysed forward (the class is built on first use)."""
    return _crawl_counter_class()(recorder)


@functools.cache
def _crawl_counter_class() -> type:
    import torch

    from ..flops import OperatorFlopCounter
    from ..opflops.formulas import shapes_of
    from ..opflops.mode import COUNTED, DEFERRED, UNCOUNTED, Entry, OperatorFlopMode

    tensor_type = torch.Tensor

    class CrawlMode(OperatorFlopMode):
        """The counter's dispatch mode: the usual calls are logged by compiled code.

        A lean call (see ``Entry.lean``) without tensors among its keyword arguments is run and
        logged as shapes and identities by ``_core.DispatchRecorder``, installed as this
        instance's ``__torch_dispatch__``: its formula, DMAs and receptive-field step are worked
        out after the forward, and no Python frame runs for it. Every other call takes the
        general path (the class's own ``__torch_dispatch__``, which TorchDynamo is kept out of),
        which counts it as ``measure_flops`` does and logs it through ``CrawlCounter._after``.
        """

        def __init__(self, counter: Any, *rest: Any) -> None:
            super().__init__(counter, *rest)
            self._depth = 0
            self.__torch_dispatch__ = types.MethodType(  # type: ignore[method-assign]
                _core.DispatchRecorder(
                    self._entries,
                    types.MethodType(OperatorFlopMode.__torch_dispatch__, self),
                    counter._recorder.core,
                    counter._log,
                    torch.Tensor,
                    torch.nn.Parameter,
                    torch._C._dispatch_call_boxed,
                    torch._C._len_torch_function_stack,
                    COUNTED,
                    DEFERRED,
                    UNCOUNTED,
                ),
                self,
            )

        def __enter__(self) -> Any:
            self._depth += 1  # the general path re-enters the mode to decompose an operator
            return super().__enter__()

        def __exit__(self, *exc: Any) -> Any:
            self._depth -= 1
            try:
                return super().__exit__(*exc)
            finally:
                # At the outermost exit only. The recorder refers back to the mode: unlinked,
                # both are freed at once.
                dispatch = None if self._depth else self.__dict__.pop("__torch_dispatch__", None)
                if dispatch is not None:
                    for tally in dispatch.__func__.tallies():
                        stats = self._stats_for(tally.entry.name)
                        stats.calls += tally.calls
                        stats.uncounted_calls += tally.uncounted
                        if stats.exclusion is None:
                            stats.exclusion = tally.entry.exclusion

    class CrawlCounter(OperatorFlopCounter):
        """The operator FLOPs counter of the analysed forward.

        Every executed operator is logged, as a ``_core.OperatorRecord``, with the module call
        that ran it.
        Once the forward is over, ``_core.Assembler`` applies the deferred formulas, gives each
        call the FLOPs and DMAs of the operators it ran itself (``by_module`` is summed over
        the call tree) and replays the receptive fields from the same log; ``apply`` counts
        what the deferred formulas came to.
        """

        # The analysed forward runs on the calling thread, from inputs torchscan made: other
        # threads are not watched (see docs/measurement-boundaries.md).
        _watch_threads = False

        def __init__(self, recorder: _Recorder) -> None:
            super().__init__()
            self._recorder = recorder
            self._log = recorder.log if recorder.log is not None else []

        def _mode_class(self) -> type[OperatorFlopMode]:
            return CrawlMode

        def _after(
            self,
            entry: Entry,
            outcome: int,
            flops: int,
            args: tuple[Any, ...],
            kwargs: Mapping[str, Any],
            out: Any,
        ) -> None:
            # The general path (the lean one is ``CrawlMode.__torch_dispatch__``).
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

        def apply(self, tallies: list[_core.FormulaTally]) -> None:
            """Count what the deferred formulas came to once the forward was over.

            ``_core.Assembler`` applies them, one tally per entry, a failing formula counted as
            the mode counts one.
            """
            for tally in tallies:
                stats = self._stats_for(tally.entry.name)
                stats.counted_calls += tally.counted
                stats.flops += tally.flops
                stats.uncounted_calls += tally.uncounted
                stats.failures.extend(tally.failures[: max(0, 3 - len(stats.failures))])

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
