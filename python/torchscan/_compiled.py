"""Compiled code met while a dispatch-mode pass runs.

While a ``TorchDispatchMode`` is active on a thread, PyTorch's compiler (Dynamo) does not run
compiled code on that thread: each time a ``torch.compile``d module or function is entered, its
frame is skipped ("non-infra torch dispatch mode present") and runs eagerly, operator by
operator, so the pass sees (and counts) eager execution. Nothing is recompiled and no compiled
graph is dropped: the next call after the pass runs the compiled code again. A function compiled
with ``fullgraph=True`` raises instead (no frame could be compiled).

:class:`CompiledWatch` records those skips as they happen on the pass's thread, through Dynamo's
thread-local list of skip reasons, so compiled code is found wherever the workload calls it, not
only when the callable itself is compiled. It reads Dynamo only when Dynamo is already loaded:
this module never imports it. So compiled code created inside the workload is not found when
it is the first use of ``torch.compile`` in the process (PyTorch loads Dynamo then, after the
pass started); a compiled module or function made before the pass always is.

:func:`without_dynamo` keeps Dynamo out of the passes' own ``__torch_dispatch__`` frames, as
PyTorch's ``TorchDispatchMode`` does for its subclasses, but without importing Dynamo: PyTorch's
wrapper imports it on the first operator (close to a second and about 180 MB on the first
analysis of a process), although no compiled code can run before something else imported it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["CompiledWatch", "compiled_diagnostic", "explain_fullgraph_error", "without_dynamo"]

_DYNAMO = "torch._dynamo"
_EVAL_FRAME = "torch._dynamo.eval_frame"
# Dynamo's words for a frame it skipped because a dispatch mode was active.
_DISPATCH_MODE_SKIP = "dispatch mode"


class CompiledWatch:
    """Context manager: how many times compiled code was entered (and ran eagerly) inside it.

    After exit, :attr:`eager_entries` counts the frames Dynamo skipped because of the pass's
    dispatch mode (each compiled call skips its own frame and the frames it calls, hooks
    included: a count of frames, not of calls).
    """

    def __init__(self) -> None:
        """Nothing is read until entered."""
        self.eager_entries = 0
        self._tls: Any = None
        self._saved: Any = None
        self._mine: list[str] | None = None

    def __enter__(self) -> CompiledWatch:
        """Start collecting Dynamo's skip reasons on this thread."""
        self.eager_entries = 0
        eval_frame = sys.modules.get(_EVAL_FRAME)
        tls = getattr(eval_frame, "dynamo_tls", None)
        self._tls = tls
        if tls is not None and hasattr(tls, "skip_reasons"):
            self._saved = tls.skip_reasons
            self._mine = []
            tls.skip_reasons = self._mine
        return self

    def __exit__(self, *exc: object) -> None:
        """Count the skips and put Dynamo's list back as it was."""
        tls, self._tls = self._tls, None
        mine, self._mine = self._mine, None
        if tls is None or mine is None:
            return
        reasons = list(mine)
        current = getattr(tls, "skip_reasons", None)
        # A fullgraph compile starts a list of its own on the thread: its skips count too.
        if isinstance(current, list) and current is not mine:
            reasons.extend(current)
        tls.skip_reasons = self._saved
        self._saved = None
        self.eager_entries = sum(_DISPATCH_MODE_SKIP in str(reason) for reason in reasons)


def compiled_diagnostic(watch: CompiledWatch, metric: str, what: str) -> dict[str, Any] | None:
    """The ``compiled_callable`` diagnostic of a pass, or ``None`` when no compiled code ran.

    ``what`` names what the pass measured of eager execution ("the operators counted").
    """
    if not watch.eager_entries:
        return None
    found = "the workload ran torch.compile'd code"
    return {
        "code": "compiled_callable",
        "severity": "info",
        "metric": metric,
        "message": (
            f"{found}; while this pass's dispatch mode is active PyTorch skips compiled code, "
            f"so it ran eagerly and {what} those of eager execution. The compiled code is kept: "
            "calls after the pass run it compiled again"
        ),
    }


def explain_fullgraph_error(error: BaseException | None) -> None:
    """Add a note to the error a ``fullgraph=True`` function raises under a dispatch mode."""
    if not isinstance(error, RuntimeError):
        return
    text = str(error)
    if "fullgraph=True" not in text or _DISPATCH_MODE_SKIP not in text:
        return
    add_note = getattr(error, "add_note", None)  # Python 3.11 and later
    if add_note is None:
        return
    add_note(
        "torchscan: the operator FLOPs and tensor memory passes run the workload under a "
        "dispatch mode, where PyTorch cannot run compiled code, so torch.compile(fullgraph=True) "
        "finds no frame to compile and raises; measure the uncompiled model (its operators are "
        "the same), or time the compiled one with metrics=['latency']"
    )


def without_dynamo(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` as a ``__torch_dispatch__`` that Dynamo never traces, without loading Dynamo.

    PyTorch wraps the ``__torch_dispatch__`` of dispatch modes in ``torch._disable_dynamo``,
    whose wrapper imports Dynamo on its first call to build the disabled function it keeps in
    the handler's ``__dynamo_disable`` attribute. The same wrapper is used here, around an
    object that answers that attribute itself: the handler as it is while Dynamo is not loaded
    (no compiled code can run then: ``torch.compile`` loads it), the disabled handler from the
    first call after something loaded it (before a pass or during one). Dynamo sees PyTorch's
    own wrapper, as for any dispatch mode. The modes using it opt out of PyTorch's wrapping
    (``_should_skip_dynamo``), which would wrap it again.
    """
    from torch._compile import _disable_dynamo

    return _disable_dynamo(_LazilyDisabled(handler), recursive=True)


class _LazilyDisabled:
    """A handler whose ``__dynamo_disable`` is itself until Dynamo is loaded (see above)."""

    def __init__(self, handler: Callable[..., Any]) -> None:
        functools.update_wrapper(self, handler)
        self._handler = handler
        self._disabled: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only attributes not found otherwise come here: ``__dynamo_disable`` is never set.
        if name != "__dynamo_disable":
            raise AttributeError(name)
        dynamo = sys.modules.get(_DYNAMO)
        disable = getattr(dynamo, "disable", None)
        if disable is None:  # not loaded, or being imported on another thread: none runs yet
            return self._handler
        if self._disabled is None:
            try:
                self._disabled = disable(self._handler, recursive=True, wrapping=False)
            except TypeError:  # a PyTorch whose disable has no ``wrapping``
                self._disabled = disable(self._handler, recursive=True)
        return self._disabled
