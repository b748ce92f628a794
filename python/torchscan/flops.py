"""Operator FLOPs: count every operator a callable executes, under PyTorch's conventions.

:class:`OperatorFlopCounter` is a context manager over a private ``TorchDispatchMode``. Every
operator that runs is put in exactly one class:

* *counted*: it has a formula (PyTorch's ``torch.utils.flop_counter`` registry, torchscan's
  formulas for the CPU kernels PyTorch leaves out, or a formula the caller gives). A
  multiply-accumulate is 2 FLOPs; bias adds and other elementwise work are not counted.
* *excluded by convention*: elementwise, normalization, pooling, reduction, data movement,
  allocation, or no floating-point arithmetic at all (comparisons, masks, checks). Listed with
  call counts; the total stays complete.
* *uncounted*: anything else. The total becomes partial (a lower bound) and a diagnostic names the
  operator, so an unknown kernel is never a silent zero.

:func:`measure_flops` runs a zero-argument callable once under a counter and returns a ``flops``
report. This module does not import torch until a counter starts, so ``import torchscan`` stays
fast.

In the same pass a counter adds up the *operator bytes*
(:meth:`OperatorFlopCounter.operator_bytes`): the bytes of every executed operator's distinct
tensor arguments and results, each operator on its own; views and metadata queries count 0 (see
``docs/measurement-boundaries.md``).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import _claims, _core
from ._compiled import CompiledWatch, explain_fullgraph_error
from ._threads import OtherThreads, ThreadWatch, other_threads_reason, watch_diagnostics
from .context import class_name
from .errors import InvalidArgumentError
from .reports import (
    CountedOperator,
    Diagnostic,
    ExcludedOperator,
    FlopReport,
    MetricResult,
    ModuleOperatorFlops,
    OperatorFlops,
    UncountedOperator,
)
from .reports.metrics import complete, partial, report_number, unavailable

if TYPE_CHECKING:
    from .opflops.classify import ExclusionClass
    from .opflops.formulas import RawFormula
    from .opflops.mode import Entry, OperatorFlopMode

_native_id = threading.get_native_id

# The outcomes the dispatch mode reports (``opflops.mode``), repeated here so this module does not
# import torch before a counter starts.
COUNTED = 0
UNCOUNTED = 2

__all__ = [
    "FLOPS_METHOD",
    "OPERATOR_BYTES_METHOD",
    "OPERATOR_BYTES_SCOPE",
    "CalledModules",
    "FlopFormula",
    "ModulePaths",
    "OperatorFlopCounter",
    "measure_flops",
]

#: The ``method`` of every operator-FLOPs metric.
FLOPS_METHOD = (
    "torch dispatch mode with per-operator FLOP formulas "
    "(matmul and convolution: 2 FLOPs per multiply-accumulate)"
)
#: The ``method`` of the operator-bytes metric (:meth:`OperatorFlopCounter.operator_bytes`).
OPERATOR_BYTES_METHOD = (
    "torch dispatch mode (the FLOP-counting pass): numel x element size of each distinct tensor "
    "argument and result of every executed operator; views and metadata queries 0 bytes"
)
#: The ``scope`` of the operator-bytes metric.
OPERATOR_BYTES_SCOPE = (
    "the bytes of every operator's distinct tensor inputs and outputs, each operator on its own "
    "(no cache reuse between operators modelled); not DRAM traffic measured by the hardware"
)
_CALL_SCOPE = "operators executed by one call"
_COUNTER_SCOPE = "operators executed while the counter was active"
MODULE_PATH_SCOPE = "operators executed inside this module, children included"

#: A FLOP formula in ``FlopCounterMode``'s convention: ``formula(*shapes, out_shape=..., **kwargs)``
#: where every tensor argument is replaced by its shape (``torch.Size``), returning an ``int``.
#: A formula with the attribute ``_get_raw = True`` (as ``register_flop_formula(get_raw=True)``
#: sets) gets the tensors themselves and the output as ``out_val=...`` instead.
FlopFormula = Callable[..., int]

#: A callable returning the module paths active now, outermost first (``["", "layer1",
#: "layer1.0"]``): how a caller that tracks modules itself tells the counter where it is.
ModulePaths = Callable[[], Iterable[str]]


class _OperatorStats:
    """Tallies of one operator name, updated by the dispatch mode on every call."""

    __slots__ = ("calls", "counted_calls", "exclusion", "failures", "flops", "uncounted_calls")

    def __init__(self) -> None:
        self.calls = 0
        self.flops = 0
        self.counted_calls = 0
        self.uncounted_calls = 0
        self.exclusion: ExclusionClass | None = None
        self.failures: list[str] = []


@dataclass
class _ModuleStats:
    flops: int = 0
    uncounted: set[str] = field(default_factory=set)


def module_operator_flops(
    path: str, flops: int, uncounted: Iterable[str] | None
) -> ModuleOperatorFlops:
    """The ``modules`` entry of a module path: its FLOPs, partial when ``uncounted`` names any."""
    if uncounted:
        names = ", ".join(sorted(uncounted))
        reason = f"uncounted operators ran inside this module: {names}"
        return {
            "path": path,
            "flops": partial(flops, "FLOPs", MODULE_PATH_SCOPE, FLOPS_METHOD, reason),
        }
    return {"path": path, "flops": complete(flops, "FLOPs", MODULE_PATH_SCOPE, FLOPS_METHOD)}


def _module_roots(modules: Any) -> list[tuple[str, Any]]:
    """``(path prefix, module)`` pairs from a module, a name->module mapping or an iterable."""
    import torch

    if modules is None:
        return []
    if isinstance(modules, torch.nn.Module):
        return [("", modules)]
    if isinstance(modules, Mapping):
        roots = list(modules.items())
    elif isinstance(modules, Iterable) and not isinstance(modules, (str, bytes)):
        # Roots of an iterable are named by their position: "0", "1", ...
        roots = [(str(index), module) for index, module in enumerate(modules)]
    else:
        raise InvalidArgumentError(
            "modules must be a torch.nn.Module, a mapping of names to modules or an iterable of "
            f"modules; got {type(modules).__name__}"
        )
    for name, module in roots:
        if not isinstance(name, str) or not isinstance(module, torch.nn.Module):
            raise InvalidArgumentError(
                "modules must map names (str) to torch.nn.Module instances; got "
                f"{type(name).__name__} -> {type(module).__name__}"
            )
    return roots


class CalledModules:
    """Context manager tracking every module whose forward runs inside it, by global hooks.

    Modules are named exactly as PyTorch's ``FlopCounterMode`` (its ``ModuleTracker``) and
    torchscan 0.2 named them: a module met for the first time gets its class's ``__name__``
    unless a parent already named it, and the first call of a module names its whole subtree
    after it, depth first (``Sequential.0``, ``Sequential.0.conv``); a module reached again under
    another parent takes that later name. Two modules of one class met separately share the name.
    Only calls on the thread that entered are tracked. Give :meth:`active` to
    :class:`OperatorFlopCounter` as ``module_paths``. The hooks are removed on exit, on every
    path.
    """

    def __init__(self) -> None:
        """Nothing is registered until entered."""
        self._names: dict[int, str] = {}
        self._seen: set[int] = set()  # modules whose subtree has been named
        self._held: list[Any] = []  # keeps named modules alive, so their ids stay theirs
        self._stack: list[str] = []
        self._calls: list[int] = []  # the module of each stack entry
        self._handles: list[Any] = []
        self._thread: int | None = None

    def active(self) -> tuple[str, ...]:
        """The names of the modules running now, outermost first."""
        return tuple(self._stack)

    def _name(self, module: Any) -> str:
        """``ModuleTracker._get_mod_name``, walked without recursion."""
        key = id(module)
        if key not in self._names:
            self._names[key] = type(module).__name__
            self._held.append(module)
        name = self._names[key]
        if key in self._seen:
            return name
        # Each frame: a module and the iterator over its children; a child is named, then its
        # own subtree is walked before its next sibling, and a module is seen once walked.
        frames = [(module, name, iter(module.named_children()))]
        while frames:
            parent, prefix, children = frames[-1]
            step = next(children, None)
            if step is None:
                frames.pop()
                self._seen.add(id(parent))
                continue
            child_name, child = step
            child_key = id(child)
            child_path = self._names[child_key] = f"{prefix}.{child_name}"
            self._held.append(child)
            if child_key not in self._seen:
                frames.append((child, child_path, iter(child.named_children())))
        return name

    def _pre_hook(self, module: Any, _args: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        try:
            name = self._name(module)
        except BaseException:
            # The forward hook still runs (always_call) and pops this call's entry.
            name = type(module).__name__
            raise
        finally:
            self._stack.append(name)
            self._calls.append(id(module))

    def _post_hook(self, module: Any, _args: Any, _out: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        key = id(module)
        # Normally the top; searching from the top keeps the stack right if another hook raised.
        for index in range(len(self._calls) - 1, -1, -1):
            if self._calls[index] == key:
                del self._calls[index], self._stack[index]
                return

    def __enter__(self) -> CalledModules:
        """Register the global forward pre-hook and forward hook."""
        from torch.nn.modules import module as nn_module

        self._thread = threading.get_ident()
        self._handles.append(nn_module.register_module_forward_pre_hook(self._pre_hook))
        try:
            handle = nn_module.register_module_forward_hook(self._post_hook, always_call=True)
        except BaseException:
            self._remove()
            raise
        self._handles.append(handle)
        return self

    def __exit__(self, *exc: object) -> None:
        """Remove the hooks and forget the modules."""
        self._remove()

    def _remove(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        self._stack, self._calls = [], []
        self._names, self._seen, self._held = {}, set(), []
        self._thread = None


def _join(prefix: str, name: str) -> str:
    if not prefix:
        return name
    return f"{prefix}.{name}" if name else prefix


def _formula_key(key: Any) -> Any:
    """Normalize a ``formulas`` key: an ``OpOverload``/``OpOverloadPacket``, or ``"ns::name"``."""
    import torch

    if isinstance(key, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return key
    if isinstance(key, torch._ops.HigherOrderOperator):
        return key
    if isinstance(key, str) and "::" in key and all(key.split("::", 1)):
        return key
    raise InvalidArgumentError(
        "a formulas key is an operator (torch.ops.mylib.op or torch.ops.mylib.op.default) or its "
        f"name as 'namespace::name'; got {key!r}"
    )


def _user_formulas(formulas: Mapping[Any, FlopFormula] | None) -> dict[Any, RawFormula]:
    from .opflops.formulas import from_shape_formula

    if formulas is None:
        return {}
    if not isinstance(formulas, Mapping):
        raise InvalidArgumentError(
            "formulas must be a mapping of operators to FLOP formulas; got "
            f"{type(formulas).__name__}"
        )
    resolved: dict[Any, RawFormula] = {}
    for key, formula in formulas.items():
        if not callable(formula):
            raise InvalidArgumentError(
                f"the formula for {key!r} must be callable; got {type(formula).__name__}"
            )
        raw = bool(getattr(formula, "_get_raw", False))
        resolved[_formula_key(key)] = from_shape_formula(formula, raw=raw)
    return resolved


def _user_formula_error(name: str, error: BaseException) -> BaseException:
    return InvalidArgumentError(
        f"the FLOP formula given for `{name}` failed: {type(error).__name__}: {error}; a formula "
        "takes the operator's arguments with tensors replaced by their shapes (and out_shape=...) "
        "and returns an int >= 0"
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class OperatorFlopCounter:
    """Context manager counting the FLOPs of every operator executed inside it.

    Args:
        modules: attribute FLOPs to modules: a ``torch.nn.Module`` (its path is ``""``, children
            ``"layer1.0"``), a mapping of names to modules (paths prefixed by the name) or an
            iterable of modules (prefixed ``"0"``, ``"1"``...). The counter registers a forward
            pre-hook and an always-called forward hook on every submodule and removes them all on
            exit. Operators run by autograd's backward are outside any forward, so they count in
            the total but in no module. The hooks ignore calls from other threads, and the
            modules are held shared while the counter is active (see
            :class:`~torchscan.ConcurrentAnalysisError`).
        module_paths: instead of ``modules``, a callable returning the module paths active now,
            outermost first, for callers that track modules themselves.
        formulas: formulas for this counter only, keyed by operator (``torch.ops.mylib.op``,
            ``torch.ops.mylib.op.default``) or its name ``"mylib::op"`` (``"mylib::op.overload"``
            for one overload). Each is a :data:`FlopFormula` (``FlopCounterMode``'s convention:
            shapes in, ``int`` out). They take precedence over built-in formulas.

    The counter is not reentrant (entering it while active raises); entering it again after exit
    starts a new count. It counts the operators of the thread that entered it only (PyTorch
    keeps dispatch modes per thread), and of threads that inherit its state (``torch.jit.fork``).
    Operators that run on other threads meanwhile (a thread pool, a ``threading.Thread``) are
    found by a process-wide profiler session and never counted: the total is then ``partial``,
    its known value what this thread did, with an ``other_threads`` diagnostic (see
    ``docs/measurement-boundaries.md``). Compiled code entered inside runs eagerly and gets a
    ``compiled_callable`` diagnostic. Read the results after exit with :meth:`operator_flops`,
    :meth:`operator_bytes` and :meth:`diagnostics`.

    """

    # Whether other threads are watched while the counter is active (see ``_threads``).
    _watch_threads = True
    # Whether the pass adds up operator bytes (``benches/bench_operator_bytes.py`` turns it off to
    # time what they cost).
    _count_bytes = True

    def __init__(
        self,
        *,
        modules: Any = None,
        module_paths: ModulePaths | None = None,
        formulas: Mapping[Any, FlopFormula] | None = None,
    ) -> None:
        """Check the arguments; nothing is registered until the counter is entered."""
        if modules is not None and module_paths is not None:
            raise InvalidArgumentError(
                "pass modules (the counter tracks them with hooks) or module_paths (you track "
                "them), not both"
            )
        if module_paths is not None and not callable(module_paths):
            raise InvalidArgumentError(
                "module_paths must be a callable returning the active module paths; got "
                f"{type(module_paths).__name__}"
            )
        self._roots = _module_roots(modules)
        single = _single_module(modules)
        # torchscan 0.2 named modules from the root's class name (PyTorch's FlopCounterMode).
        self._root_type: str | None = class_name(single) if single is not None else None
        self._module_paths = module_paths
        self._formulas = _user_formulas(formulas)
        self._mode: OperatorFlopMode | None = None
        self._handles: list[Any] = []
        self._stack: list[str] = []
        self._thread: int | None = None
        self._hold: _claims.Hold | None = None
        self._watch: ThreadWatch | None = None
        # The name a refused claim gives this counter (measure_flops gives its own).
        self._caller = "OperatorFlopCounter"
        self._reset()

    def _reset(self) -> None:
        self._operators: dict[str, _OperatorStats] = {}
        self._modules: dict[str, _ModuleStats] = {}
        self._devices: list[Any] = []
        self._dtypes: set[Any] = set()
        # FLOPs by the dtype of the counted operator's result: the precision computed in.
        self._dtype_flops: dict[Any, int] = {}
        # Native ids of the threads the dispatch mode ran on (``torch.jit.fork`` and autograd's
        # device threads inherit it): not foreign to the thread watch.
        self._threads_seen: set[int] = set()
        self._other_threads: OtherThreads | None = None
        self._compiled = CompiledWatch()
        self._stack.clear()  # in place: the compiled dispatch reads this very list
        # The mode's compiled dispatch while it is active (the general path logs through it),
        # and the list it logs to, which its ledger reads in batches.
        self._dispatch: _core.DispatchRecorder | None = None
        self._ledger_log: list[Any] = []
        # Operator bytes, known once the mode has exited (``None`` before), and the tensors whose
        # size could not be read.
        self._operator_bytes: int | None = None
        self._unsized_tensors = 0

    # -- module tracking -------------------------------------------------------------------

    @property
    def module_stack(self) -> tuple[str, ...]:
        """The module paths active now, outermost first (from hooks or ``module_paths``)."""
        if self._module_paths is not None:
            return tuple(self._module_paths())
        return tuple(self._stack)

    def _enter_module(self, path: str) -> None:
        self._stack.append(path)
        self._modules.setdefault(path, _ModuleStats())

    def _exit_module(self, path: str) -> None:
        # Normally the top; searching from the top keeps the stack right if a hook of another
        # module raised between our pre-hook and our post-hook.
        for index in range(len(self._stack) - 1, -1, -1):
            if self._stack[index] == path:
                del self._stack[index]
                return

    def _tracked_modules(self) -> list[tuple[str, Any]]:
        """``(path, module)`` of every module tracked, each once (under its first path)."""
        tracked: list[tuple[str, Any]] = []
        seen: set[int] = set()
        for prefix, root in self._roots:
            for name, module in root.named_modules():
                if id(module) in seen:
                    continue  # a module shared by two roots is tracked under its first path
                seen.add(id(module))
                tracked.append((_join(prefix, name), module))
        return tracked

    def _register_hooks(self, tracked: list[tuple[str, Any]]) -> None:
        thread = self._thread
        for path, module in tracked:
            # Only the entering thread's calls: the model run by another thread is not counted.
            def pre_hook(_module: Any, _args: Any, path: str = path) -> None:
                if threading.get_ident() == thread:
                    self._enter_module(path)

            def post_hook(_module: Any, _args: Any, _out: Any, path: str = path) -> None:
                if threading.get_ident() == thread:
                    self._exit_module(path)

            self._handles.append(module.register_forward_pre_hook(pre_hook))
            self._handles.append(module.register_forward_hook(post_hook, always_call=True))

    def _remove_hooks(self) -> None:
        handles, self._handles = self._handles, []
        try:
            for handle in handles:
                handle.remove()
        finally:
            self._stack.clear()
            hold, self._hold = self._hold, None
            if hold is not None:
                hold.release()

    # -- context manager -------------------------------------------------------------------

    def __enter__(self) -> OperatorFlopCounter:
        """Register the module hooks and push the dispatch mode.

        With ``modules``, raises :class:`~torchscan.ConcurrentAnalysisError` (before anything is
        registered) while ``crawl_module`` or ``summary`` analyses one of them.
        """
        if self._mode is not None:
            raise InvalidArgumentError("this OperatorFlopCounter is already active")
        self._reset()
        mode = self._mode_class()(self, self._formulas, _user_formula_error)
        # A counter that does not watch still claims its thread, so that watching passes on
        # other threads do not take its operators for foreign work.
        watch = ThreadWatch(self._threads_seen, active=self._watch_threads)
        try:
            self._thread = threading.get_ident()
            if self._roots:
                tracked = self._tracked_modules()
                # Shared: counters only add hooks filtered to their own thread, so any number
                # of them may run at once, but not while an analysis changes the modules.
                self._hold = _claims.Hold(tracked, self._caller, exclusive=False)
                self._register_hooks(tracked)
            watch.__enter__()
            self._watch = watch
            self._compiled.__enter__()
            mode.__enter__()
        except BaseException:
            self._compiled.__exit__(None, None, None)
            self._leave_watch()
            self._remove_hooks()
            raise
        self._mode = mode
        return self

    def _leave_watch(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.__exit__(None, None, None)
            if self._watch_threads:
                self._other_threads = watch.result

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Pop the dispatch mode and remove every hook; an exception propagates unchanged."""
        mode, self._mode = self._mode, None
        try:
            if mode is not None:
                mode.__exit__(exc_type, exc, traceback)
        finally:
            try:
                self._compiled.__exit__(None, None, None)
                explain_fullgraph_error(exc)
                self._leave_watch()
            finally:
                self._remove_hooks()

    def _mode_class(self) -> type[OperatorFlopMode]:
        """The dispatch mode this counter pushes: the compiled one, as ``crawl_module``'s."""
        from .opflops.mode import CompiledFlopMode

        return CompiledFlopMode

    # -- the compiled dispatch (see ``CompiledFlopMode``) ----------------------------------

    def _dispatch_scope(self) -> Any:
        """Where operators ran: the live list of module paths, or the caller's callable."""
        paths = self._module_paths
        if paths is None:
            return self._stack  # filled by this counter's hooks (empty without ``modules``)
        owner = getattr(paths, "__self__", None)
        if isinstance(owner, CalledModules) and getattr(paths, "__func__", None) is (
            CalledModules.active
        ):
            return owner._stack  # the same paths, read without calling back into Python
        return paths

    def _dispatch_log(self) -> list[Any]:
        return self._ledger_log

    def _attach(self, dispatch: _core.DispatchRecorder) -> None:
        self._dispatch = dispatch

    def _take_tallies(self, dispatch: _core.DispatchRecorder) -> None:
        """Add the calls the compiled dispatch tallied (its lean path) to this counter's stats."""
        for tally in dispatch.tallies():
            stats = self._stats_for(tally.entry.name)
            stats.calls += tally.calls
            stats.uncounted_calls += tally.uncounted
            if stats.exclusion is None:
                stats.exclusion = tally.entry.exclusion

    def _detach(self, dispatch: _core.DispatchRecorder) -> None:
        """Take what the compiled dispatch counted: calls, formulas, modules, dtypes, threads."""
        self._dispatch = None
        self._take_tallies(dispatch)
        ledger = dispatch.ledger()
        self._apply_formulas(ledger.formulas)
        for found in ledger.modules:
            module = self._modules.get(found.path)
            if module is None:
                module = self._modules[found.path] = _ModuleStats()
            module.flops += found.flops
            module.uncounted.update(found.uncounted)
        for dtype, flops in ledger.dtype_flops.items():
            self._dtype_flops[dtype] = self._dtype_flops.get(dtype, 0) + flops
        for device in ledger.devices:
            if device not in self._devices:
                self._devices.append(device)
        self._dtypes.update(ledger.dtypes)
        self._threads_seen.update(ledger.threads)
        if self._count_bytes:
            self._operator_bytes = (self._operator_bytes or 0) + ledger.operator_bytes
            self._unsized_tensors += ledger.unsized_tensors

    def _apply_formulas(self, tallies: list[_core.FormulaTally]) -> None:
        """Count what the deferred shape formulas came to, a failing one as the mode counts."""
        for tally in tallies:
            stats = self._stats_for(tally.entry.name)
            stats.counted_calls += tally.counted
            stats.flops += tally.flops
            stats.uncounted_calls += tally.uncounted
            stats.failures.extend(tally.failures[: max(0, 3 - len(stats.failures))])

    # -- called by the dispatch mode -------------------------------------------------------

    def _stats_for(self, name: str) -> _OperatorStats:
        stats = self._operators.get(name)
        if stats is None:
            stats = self._operators[name] = _OperatorStats()
        return stats

    def _after(
        self,
        entry: Entry,
        outcome: int,
        flops: int,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> None:
        # The general path. Results carry the devices and dtypes the work ran in (their
        # arguments are results of earlier operators or the caller's inputs, which the caller
        # describes); the compiled dispatch notes them and logs the call, so that its ledger
        # attributes every operator to its modules and dtype in the order they ran.
        dispatch = self._dispatch
        if dispatch is None:  # the mode re-entered after its outermost exit: nothing to log to
            return
        self._threads_seen.add(_native_id())
        if self._count_bytes and entry.moves_data:
            dispatch.add_bytes(args, kwargs, out)
        paths = self.module_stack
        dispatch.append(
            _core.OperatorRecord(
                entry=entry,
                call=None,
                outcome=outcome,
                flops=flops,
                args=None,
                kwargs=None,
                out=None,
                inputs=[],
                first_inputs=0,
                outputs=[],
                paths=paths if paths else None,
                dtype=dispatch.observe(out),
            )
        )

    # -- results ---------------------------------------------------------------------------

    @property
    def device(self) -> Any:
        """The device of the tensors seen (a ``torch.device``): an accelerator over the CPU."""
        for device in self._devices:
            if device.type not in ("cpu", "meta"):
                return device
        for kind in ("cpu", "meta"):
            for device in self._devices:
                if device.type == kind:
                    return device
        return None

    @property
    def dtypes(self) -> list[Any]:
        """The floating-point dtypes of the tensors seen, sorted by name."""
        return sorted(self._dtypes, key=str)

    @property
    def computed_dtypes(self) -> list[Any]:
        """The floating dtypes seen, largest FLOP share first, then the others by name.

        An operator's FLOPs count for the dtype of its result (under autocast, the dtype it
        computed in). Dtypes with equal FLOPs are ordered by name.
        """
        shares = self._dtype_flops
        return sorted(self._dtypes, key=lambda dtype: (-shares.get(dtype, 0), str(dtype)))

    @property
    def flop_dtypes(self) -> list[Any]:
        """The dtypes counted operators computed in, largest FLOP share first (then by name)."""
        shares = self._dtype_flops
        return sorted(
            (dtype for dtype, flops in shares.items() if flops),
            key=lambda dtype: (-shares[dtype], str(dtype)),
        )

    @property
    def other_threads(self) -> OtherThreads | None:
        """What ran on other threads during the last count (``None`` when not watched)."""
        return self._other_threads

    def _foreign_reason(self) -> str | None:
        found = self._other_threads
        return other_threads_reason(found) if found is not None else None

    def _uncounted_names(self) -> list[str]:
        return sorted(name for name, op in self._operators.items() if op.uncounted_calls)

    @property
    def total_flops(self) -> int:
        """FLOPs of the counted operators: exact when complete, a lower bound otherwise."""
        return sum(op.flops for op in self._operators.values() if not op.uncounted_calls)

    @property
    def complete(self) -> bool:
        """Whether every executed operator was counted or excluded, all on watched threads."""
        return not self._uncounted_names() and self._foreign_reason() is None

    def operator_flops(self, scope: str = _COUNTER_SCOPE) -> OperatorFlops:
        """The ``OperatorFlops`` section of a report for what ran (operators sorted by name)."""
        counted: list[CountedOperator] = []
        excluded: list[ExcludedOperator] = []
        uncounted: list[UncountedOperator] = []
        for name in sorted(self._operators):
            op = self._operators[name]
            if op.uncounted_calls:
                # One uncounted call puts the operator in ``uncounted``; its counted calls are left
                # out of the total, which stays the sum of the ``counted`` list.
                uncounted.append({"operator": name, "calls": op.calls})
            elif op.counted_calls:
                counted.append(
                    {"operator": name, "calls": op.calls, "flops": report_number(op.flops, "FLOPs")}
                )
            else:
                assert op.exclusion is not None
                excluded.append({"operator": name, "calls": op.calls, "class": op.exclusion})
        total_value = sum(op["flops"] for op in counted)
        total: MetricResult
        reasons = []
        if uncounted:
            names = ", ".join(op["operator"] for op in uncounted)
            reasons.append(f"{_plural(len(uncounted), 'operator')} without a FLOP formula: {names}")
        foreign = self._foreign_reason()
        if foreign is not None:
            reasons.append(foreign)
        if reasons:
            total = partial(total_value, "FLOPs", scope, FLOPS_METHOD, "; ".join(reasons))
        else:
            total = complete(total_value, "FLOPs", scope, FLOPS_METHOD)
        modules: list[ModuleOperatorFlops] = []
        for path, module in self._modules.items():
            modules.append(module_operator_flops(path, module.flops, module.uncounted))
        section: OperatorFlops = {
            "total": total,
            "counted": counted,
            "excluded": excluded,
            "uncounted": uncounted,
            "modules": modules,
            "by_operator": {},
            "by_module": {},
            "ignored_operators": {},
        }
        found = self._other_threads
        if found is not None and found.watched:
            section["other_threads"] = {"calls": found.calls, "threads": found.threads}
        add_legacy_views(section, self._root_type)
        return section

    def operator_bytes(self) -> MetricResult:
        """The operator bytes of what ran, as a metric (in ``B``); read after exit.

        Every executed operator counts ``numel * element_size`` of each distinct tensor (by
        identity) among its arguments, positional and keyword, inside lists and tuples too, and
        its results: an in-place ``add_`` counts its ``self`` once, ``a * a`` counts ``a`` once.
        Views (every result aliases an input: ``view``, ``t``, ``expand``, ``as_strided``...)
        and metadata queries count 0; copies count. Summed over all operators, each on its own:
        a model of memory traffic with no cache reuse between operators, not DRAM traffic
        measured by the hardware (see ``docs/measurement-boundaries.md``).

        ``complete`` unless operators ran on other threads meanwhile (as for
        :meth:`operator_flops`: the known value is what this thread did) or a tensor's size could
        not be read (symbolic sizes, sparse layouts); an operator without a FLOP formula still
        has its bytes counted. ``unavailable`` before the counter has exited.
        """
        total = self._operator_bytes
        if total is None:
            reason = (
                "operator bytes were not counted"
                if not self._count_bytes
                else "the counter has not run: operator bytes are read after it exits"
            )
            return unavailable("B", OPERATOR_BYTES_SCOPE, OPERATOR_BYTES_METHOD, reason)
        reasons = []
        if self._unsized_tensors:
            reasons.append(
                f"the size of {_plural(self._unsized_tensors, 'tensor')} could not be read "
                "(symbolic sizes or a sparse layout); they are not counted"
            )
        foreign = self._foreign_reason()
        if foreign is not None:
            reasons.append(foreign)
        if reasons:
            return partial(
                total, "B", OPERATOR_BYTES_SCOPE, OPERATOR_BYTES_METHOD, "; ".join(reasons)
            )
        return complete(total, "B", OPERATOR_BYTES_SCOPE, OPERATOR_BYTES_METHOD)

    def diagnostics(self) -> list[Diagnostic]:
        """One ``uncounted_operator`` warning per uncounted operator, sorted by operator name.

        Then, where they apply: ``other_threads`` (operators ran on other threads), a ``note``
        (other threads could not be watched) and ``compiled_callable`` (compiled code ran
        eagerly).
        """
        found: list[Diagnostic] = self._operator_diagnostics()
        found.extend(
            watch_diagnostics(  # type: ignore[arg-type]
                self._other_threads, self._compiled, "operator_flops", "the operators counted are"
            )
        )
        return found

    def _operator_diagnostics(self) -> list[Diagnostic]:
        found: list[Diagnostic] = []
        for name in self._uncounted_names():
            op = self._operators[name]
            calls = _plural(op.calls, "call")
            if op.failures:
                detail = "; ".join(op.failures)
                message = (
                    f"`{name}` ({calls}): its FLOP formula failed on "
                    f"{_plural(op.uncounted_calls, 'call')} ({detail}); operator FLOPs are a "
                    "lower bound"
                )
            else:
                message = (
                    f"`{name}` ({calls}) has no FLOP formula, so operator FLOPs are a lower "
                    f"bound; pass formulas={{'{name}': formula}} to count it"
                )
            found.append(
                {
                    "code": "uncounted_operator",
                    "severity": "warning",
                    "metric": "operator_flops",
                    "message": message,
                    "operator": name,
                }
            )
        return found

    def calls(self) -> Counter[str]:
        """Calls of every executed operator, by name."""
        return Counter({name: op.calls for name, op in self._operators.items()})


def _single_module(modules: Any) -> Any:
    import torch

    return modules if isinstance(modules, torch.nn.Module) else None


def legacy_operator_name(operator: str) -> str:
    """An operator as torchscan 0.2 named it (PyTorch's packet name): ``aten.addmm``."""
    return operator.replace("::", ".", 1)


def add_legacy_views(section: OperatorFlops, root: str | None) -> None:
    """Fill torchscan 0.2's ``by_operator``, ``by_module`` and ``ignored_operators`` of ``section``.

    They repeat ``counted``, ``modules`` and ``excluded`` under 0.2's names: operators as
    ``aten.addmm``, modules as the root's class name then the path (``ResNet.layer1.0``; the
    path alone when ``root`` is ``None``), each sorted by name. The core checks they agree.
    """
    reasons = _exclusion_reasons()

    def module_name(path: str) -> str:
        if root is None:
            return path
        return f"{root}.{path}" if path else root

    section["by_operator"] = dict(
        sorted((legacy_operator_name(op["operator"]), op["flops"]) for op in section["counted"])
    )
    section["by_module"] = dict(
        sorted(
            (module_name(entry["path"]), known)
            for entry in section["modules"]
            if (known := entry["flops"]["known_value"]) is not None
        )
    )
    section["ignored_operators"] = {
        legacy_operator_name(op["operator"]): {"calls": op["calls"], "reason": reasons[op["class"]]}
        for op in sorted(section["excluded"], key=lambda op: legacy_operator_name(op["operator"]))
    }


@functools.cache
def _exclusion_reasons() -> dict[str, str]:
    """The reason torchscan 0.2's ``ignored_operators`` give each exclusion class (the core's)."""
    return _core.exclusion_reasons()


def measure_flops(
    fn: Callable[[], Any],
    *,
    modules: Any = None,
    formulas: Mapping[Any, FlopFormula] | None = None,
    custom_mapping: Mapping[Any, FlopFormula] | None = None,
) -> FlopReport:
    """Run ``fn()`` once under an :class:`OperatorFlopCounter` and return a ``flops`` report.

    Args:
        fn: a zero-argument callable: a forward, a training step (backward included), anything.
        modules: a module, a mapping of names to modules or an iterable of modules whose forward
            calls get an operator-FLOPs breakdown (``operator_flops.modules``, each module
            inclusive of its children). Backward operators count in the total, not in modules.
            Left out, every module whose forward runs on this thread is tracked (global module
            hooks, removed on every path) and named as PyTorch's ``FlopCounterMode`` and
            torchscan 0.2 named it: ``Sequential``, ``Sequential.0`` (see
            :class:`CalledModules`).
        formulas: FLOP formulas for this call only, keyed by operator or ``"namespace::name"``:
            how a custom operator is counted. Each takes the operator's arguments with tensors
            replaced by shapes, plus ``out_shape=``, and returns an ``int`` (PyTorch's
            ``FlopCounterMode`` convention; a formula with ``_get_raw = True`` gets tensors).
        custom_mapping: the name torchscan 0.2 gave ``formulas``; give one or the other.

    The report's ``context`` records the grad and inference-mode flags as they were when ``fn``
    started, the device of the tensors seen and the floating dtypes seen. ``fn``'s own exception
    propagates unchanged (the same object); the dispatch mode and every hook are removed on every
    path, ``KeyboardInterrupt`` included. Only this thread's work is counted: other threads may
    run the same model, or measure it, meanwhile. With ``modules``, the modules are held shared
    while ``fn`` runs: :class:`~torchscan.ConcurrentAnalysisError` is raised, before ``fn`` runs,
    while ``crawl_module`` or ``summary`` analyses one of them.

    """
    from .context import capture_context, current_flags, qualified_type_name
    from .reports.validation import validate_report

    if not callable(fn):
        raise InvalidArgumentError(
            f"fn must be a zero-argument callable (e.g. lambda: model(x)); got {type(fn).__name__}"
        )
    if custom_mapping is not None:
        if formulas is not None:
            raise InvalidArgumentError(
                "custom_mapping is the former name of formulas; pass one of them, not both"
            )
        formulas = custom_mapping
    called = CalledModules() if modules is None else None
    if called is None:
        counter = OperatorFlopCounter(modules=modules, formulas=formulas)
    else:
        counter = OperatorFlopCounter(module_paths=called.active, formulas=formulas)
    counter._caller = "measure_flops"
    model = _single_module(modules)
    model_type = qualified_type_name(model) if model is not None else None
    training_before = bool(model.training) if model is not None else None
    flags = current_flags()
    if called is None:
        with counter:
            fn()
    else:
        with called, counter:
            fn()
    qualname = getattr(fn, "__qualname__", None)
    operator_flops = counter.operator_flops(_CALL_SCOPE)
    report: FlopReport = {
        "schema_version": 1,
        "kind": "flops",
        "context": capture_context(
            counter.device,
            counter.computed_dtypes,
            model_type=model_type,
            training_before=training_before,
            flags=flags,
            ranked=True,
        ),
        "diagnostics": counter.diagnostics(),
        "callable": qualname if isinstance(qualname, str) else None,
        "total": operator_flops["total"].copy(),
        "operator_flops": operator_flops,
        # torchscan 0.2's views, at the top where its callers read them.
        "by_operator": dict(operator_flops["by_operator"]),
        "by_module": dict(operator_flops["by_module"]),
        "ignored_operators": {
            name: dict(entry)  # type: ignore[misc]
            for name, entry in operator_flops["ignored_operators"].items()
        },
    }
    # Our own report must be valid; a problem here is a torchscan bug and is raised as such.
    validate_report(report)
    return report
