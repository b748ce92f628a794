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
    and tuples of numbers, which are not shapes.
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


# An executed operator in the forward's log is a list, by position (``_OP_*`` name some):
# entry, the innermost module call active, the outcome (COUNTED with its FLOPs, DEFERRED for a
# built-in shape formula applied after the forward, EXCLUDED or UNCOUNTED), the FLOPs, the
# arguments, keyword arguments and result as shape formulas take them (tensors replaced by their
# shapes; for a call that is not counted, None and the result's number of dimensions), how many
# tensor arguments belong to the first argument, the result tensors (one identity for a tensor
# result, else a list of (identity, number of dimensions)), then the identities of the tensor
# arguments (positional, then keyword) to the end.
_OP_FIRST_COUNT = 6


_OP_SHAPED_OUT = 7


_OP_OUT_IDS = 8


_OP_INPUT_IDS = 9


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
                    for entry, calls, uncounted in dispatch.__func__.tallies():
                        stats = self._stats_for(entry.name)
                        stats.calls += calls
                        stats.uncounted_calls += uncounted
                        if stats.exclusion is None:
                            stats.exclusion = entry.exclusion

    class CrawlCounter(OperatorFlopCounter):
        """The operator FLOPs counter of the analysed forward.

        Every executed operator is logged with the module call that ran it (see ``_OP_*``).
        Once the forward is over, ``_core.assemble`` applies the deferred formulas, gives each
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
                [
                    entry,
                    self._recorder.top,
                    outcome,
                    flops,
                    [shapes_of(value) for value in args],
                    {key: shapes_of(value) for key, value in kwargs.items()} if kwargs else None,
                    first,
                    shapes_of(out),
                    [(id(tensor), tensor.dim()) for tensor in outputs],
                    *ids,
                ]
            )

        def apply(self, tallies: list[tuple[Entry, int, int, int, list[str]]]) -> None:
            """Count what the deferred formulas came to once the forward was over.

            ``_core.assemble`` applies them: ``(entry, counted calls, FLOPs, uncounted calls,
            failures)`` per entry, a failing formula counted as the mode counts one.
            """
            for entry, counted, flops, uncounted, failures in tallies:
                stats = self._stats_for(entry.name)
                stats.counted_calls += counted
                stats.flops += flops
                stats.uncounted_calls += uncounted
                stats.failures.extend(failures[: max(0, 3 - len(stats.failures))])

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
