"""Peak tensor memory of one call: a storage tracker on CPU, allocator statistics on CUDA.

On CPU (and MPS, whose ``torch.mps`` module has no peak statistics) :class:`TensorMemoryTracker`
runs a private ``TorchDispatchMode`` that sees every tensor an operator takes or returns and
counts tensor *storages*, the unit PyTorch allocates:

* a storage first seen during the tracked region, and not alive before it, is new: its
  ``untyped_storage().nbytes()`` is added once, however many tensors (views) share it;
* in-place operators, views and ``out=`` results reuse a storage and add nothing, but a storage
  that grows (``resize_``, an ``out=`` argument resized) adds the growth;
* a storage is subtracted when it is freed, through a weak-reference callback on its Python
  object (PyTorch keeps one Python object per live storage, so the callback fires when the last
  tensor, view or autograd-saved reference lets go, not when the first tensor dies).

The peak is the largest sum of live tracked storage bytes, baseline included. The *baseline* is
the tensor storage alive when tracking starts: by default every tensor of the process on the
device (a ``gc.get_objects()`` scan), or the tensors reachable from ``roots``.
:func:`measure_peak_memory` uses the callable as the root, so its baseline is the memory the
workload can reach (its model and inputs), not whatever other tensors the process holds.

On CUDA the caching allocator's own statistics are used (``memory_allocated`` when the call
starts, ``max_memory_allocated`` and ``max_memory_reserved`` after
``reset_peak_memory_stats``): every tensor of the process on that device, with no hooks.

This module does not import torch until a tracker is created, so ``import torchscan`` stays fast.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any

from ._compiled import (
    CompiledWatch,
    explain_fullgraph_error,
    without_dynamo,
)
from ._devices import resolve_device
from ._threads import OtherThreads, ThreadWatch, other_threads_reason, watch_diagnostics
from .errors import InvalidArgumentError
from .reports import Diagnostic, MetricResult, PeakMemoryReport
from .reports.metrics import complete, partial, unavailable

__all__ = [
    "CPU_SCOPE",
    "CUDA_ALLOCATED_SCOPE",
    "CUDA_RESERVED_SCOPE",
    "TensorMemoryTracker",
    "measure_peak_memory",
]

#: The scope of the CPU tracker's numbers.
CPU_SCOPE = "PyTorch tracked CPU tensors"
#: The scope of CUDA allocated bytes (baseline and peak).
CUDA_ALLOCATED_SCOPE = "CUDA caching allocator: allocated bytes"
#: The scope of CUDA reserved bytes.
CUDA_RESERVED_SCOPE = "CUDA caching allocator: reserved bytes"
_MPS_SCOPE = "PyTorch tracked MPS tensors"

_UNSUPPORTED = "unsupported on device"
_RESERVED_METHOD = "torch.cuda.max_memory_reserved after reset_peak_memory_stats"
_TRACKER_PEAK_METHOD = (
    "torch dispatch mode: every tensor storage an operator creates during the call is counted "
    "once (untyped storage nbytes) and released by a weak-reference callback when freed; peak of "
    "live tracked storage bytes, baseline included"
)
_PROCESS_BASELINE_METHOD = (
    "distinct storages of every live tensor of the process on the device (gc scan, parameter "
    "gradients included) when tracking started"
)
_ROOTS_BASELINE_METHOD = (
    "distinct storages of the tensors reachable from the callable when the call started: its "
    "closure, the globals it names, its defaults, a bound method's self, and the attributes, "
    "containers, parameters, buffers and gradients of the objects and modules reachable from them"
)

#: The most objects the reachability walk visits before it stops (and the baseline is partial).
_WALK_LIMIT = 1_000_000

# Objects the reachability walk never enters: they hold no tensors a workload owns (a Python
# module or a class would lead the walk through the whole program).
_OPAQUE = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    range,
    type,
    types.ModuleType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    weakref.ref,
)


class _Entry:
    """A tracked live storage: the weak reference whose callback releases it, and its size."""

    __slots__ = ("nbytes", "ref")

    def __init__(self, ref: weakref.ref[Any], nbytes: int) -> None:
        self.ref = ref
        self.nbytes = nbytes


# -- devices ----------------------------------------------------------------------------------


# -- storages and reachability ----------------------------------------------------------------


def _storages(tensor: Any) -> list[Any] | None:
    """The untyped storages holding ``tensor``'s memory, or ``None`` when they cannot be read."""
    import torch

    try:
        layout = tensor.layout
        if layout == torch.strided:
            return [tensor.untyped_storage()]
        # Sparse tensors have no storage of their own; their component tensors hold the memory.
        parts: tuple[Any, ...]
        if layout == torch.sparse_coo:
            parts = (tensor._indices(), tensor._values())
        elif layout in (torch.sparse_csr, torch.sparse_bsr):
            parts = (tensor.crow_indices(), tensor.col_indices(), tensor.values())
        elif layout in (torch.sparse_csc, torch.sparse_bsc):
            parts = (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
        else:
            return None
        return [part.untyped_storage() for part in parts]
    except (RuntimeError, NotImplementedError, TypeError, AttributeError):
        # Tensor subclasses without a real storage (wrapper subclasses, mkldnn tensors).
        return None


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object and the code nested in it (lambdas, comprehensions) may load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _referents(obj: Any) -> Iterator[Any]:
    """What a workload can reach from ``obj`` without running its code (no properties)."""
    if isinstance(obj, (tuple, list, set, frozenset)):
        yield from obj
        return
    if isinstance(obj, dict):
        yield from obj.keys()
        yield from obj.values()
        return
    if isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell: the variable is not bound yet
                yield cell.cell_contents
        yield obj.__defaults__
        yield obj.__kwdefaults__
        module_globals = obj.__globals__
        for name in _global_names(obj.__code__):
            if name in module_globals:
                yield module_globals[name]
        yield obj.__dict__  # functools.wraps puts the wrapped function here
        return
    if isinstance(obj, types.MethodType):
        yield obj.__self__
        yield obj.__func__
        return
    if isinstance(obj, types.BuiltinMethodType):
        yield obj.__self__  # a bound builtin such as tensor.add (a module for plain builtins)
        return
    if isinstance(obj, functools.partial):
        yield obj.func
        yield obj.args
        yield obj.keywords
        return
    # Any other object (a torch.nn.Module included: its parameters, buffers and submodules live
    # in dicts of its __dict__): its instance attributes and slots, never its properties.
    try:
        attributes = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        attributes = None
    if isinstance(attributes, dict):
        yield attributes
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{cls.__name__.lstrip('_')}{slot}"  # a private name, as Python stores it
            with contextlib.suppress(AttributeError):  # an unset slot
                yield object.__getattribute__(obj, slot)


def _leaf_grad(tensor: Any) -> Any:
    # ``.grad`` of a leaf is a plain attribute; reading it on a non-leaf warns, so it is skipped.
    try:
        return tensor.grad if tensor.is_leaf else None
    except Exception:  # a tensor subclass with an unusual ``grad``: nothing to follow
        return None


def _reachable_tensors(roots: Iterable[Any], limit: int = _WALK_LIMIT) -> tuple[list[Any], bool]:
    """Tensors reachable from ``roots`` (see ``_ROOTS_BASELINE_METHOD``); True if truncated.

    The walk stops after ``limit`` objects, and then says so.
    """
    import torch

    tensor_type = torch.Tensor
    found: list[Any] = []
    seen: set[int] = set()
    pending = list(roots)
    visited = 0
    while pending:
        obj = pending.pop()
        if isinstance(obj, _OPAQUE) or id(obj) in seen:
            continue
        seen.add(id(obj))
        visited += 1
        if visited > limit:
            return found, True
        if issubclass(type(obj), tensor_type):
            found.append(obj)
            grad = _leaf_grad(obj)
            if grad is not None:
                pending.append(grad)
            continue
        if isinstance(obj, (torch.dtype, torch.device, torch.Size)):
            continue
        pending.extend(_referents(obj))
    return found, False


# -- the dispatch mode ------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _mode_class() -> Any:
    """The private ``TorchDispatchMode`` subclass, built on first use so torch loads lazily."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    composite_key = torch._C.DispatchKey.CompositeImplicitAutograd
    native_id = threading.get_native_id
    higher_order = torch._ops.HigherOrderOperator
    tensor_type = torch.Tensor
    base: Any = TorchDispatchMode  # untyped; seen through Any so strict mypy accepts it

    class _StorageTrackingMode(base):  # type: ignore[misc]
        supports_higher_order_operators = True

        def __init__(self, tracker: TensorMemoryTracker) -> None:
            super().__init__()
            self._tracker = tracker
            self._composite: dict[Any, bool] = {}
            self._seen_thread = tracker._threads_seen.add

        def _is_composite(self, func: Any) -> bool:
            known = self._composite.get(func)
            if known is None:
                try:
                    known = composite_key in func.py_kernels or bool(
                        torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), composite_key)
                    )
                except RuntimeError:  # not registered with the dispatcher (``prim::device``)
                    known = False
                self._composite[func] = known
            return known

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Not PyTorch's wrapper, which imports Dynamo: ``without_dynamo`` keeps it out.
            return False

        def _dispatch(
            self,
            func: Any,
            _types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs if kwargs else {}
            if not isinstance(func, higher_order) and self._is_composite(func):
                # A composite operator reaches the mode whole under inference_mode; re-entering
                # the mode for its decomposition (the same kernels it would run) makes the
                # temporaries it creates visible, as they are when autograd decomposes it.
                with self:
                    out = func.decompose(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            out = func(*args, **kwargs)
            # Arguments too: a storage made outside any operator (torch.from_numpy) is first seen
            # there, and a storage resized in place is re-measured.
            self._observe((args, kwargs, out))
            self._seen_thread(native_id())
            return out

        __torch_dispatch__ = without_dynamo(_dispatch)

        def _observe(self, values: Any) -> None:
            # Operator arguments only nest tuples, lists and dicts: a plain walk is cheaper than
            # pytree on every operator.
            see = self._tracker._see_tensor
            pending = [values]
            while pending:
                value = pending.pop()
                if isinstance(value, tensor_type):
                    see(value)
                elif isinstance(value, (tuple, list)):
                    pending.extend(value)
                elif isinstance(value, dict):
                    pending.extend(value.values())

    return _StorageTrackingMode


# -- the tracker ------------------------------------------------------------------------------


class TensorMemoryTracker:
    """Context manager measuring the peak PyTorch tensor memory of the code inside it.

    Args:
        device: ``"cpu"`` (default), ``"cuda"``, ``"cuda:N"`` or ``"mps"`` (or a
            ``torch.device``). An unknown or unavailable device raises
            :class:`~torchscan.errors.InvalidArgumentError`.
        roots: objects whose reachable tensors form the baseline (see below). ``None`` (default)
            counts every live tensor of the process on the device.

    **CPU and MPS** (scope ``PyTorch tracked CPU tensors`` / ``PyTorch tracked MPS tensors``): a
    private ``TorchDispatchMode`` counts tensor storages. A storage created during the region is
    counted once, by its untyped storage, with ``untyped_storage().nbytes()`` bytes, and
    subtracted when a weak-reference callback on the storage reports it freed; views, in-place
    operators and ``out=`` results add nothing unless the storage grows (``resize_``). A
    composite operator that reaches the mode whole (under ``inference_mode``) is decomposed, so
    its temporaries count as they do when autograd decomposes it. A storage made outside any
    operator (``torch.from_numpy``, ``torch.frombuffer``, DLPack) counts from the first operator
    that takes or returns it, even if its memory belongs to another library. Storages alive
    before the region and outside the baseline are never counted. The baseline is:

    * ``roots=None``: every distinct storage on the device of every live tensor the garbage
      collector knows about (``gc.get_objects()``, after a collection), and leaf gradients;
    * ``roots`` given: the distinct storages of the tensors reachable from the roots: function
      closures, the globals a function's code names, defaults, a bound method's ``self``,
      ``functools.partial`` arguments, containers, instance attributes and slots (so the
      parameters, buffers and submodules of a ``torch.nn.Module``), and leaf gradients. Class
      attributes and properties are not followed.

    Baseline storages freed during the region are subtracted too. The peak is the largest total
    of live tracked storage bytes at any operator boundary, baseline included. Not seen: memory
    an operator allocates and frees internally (kernel workspaces), allocator overhead and
    fragmentation, memory outside tensor storages, storages resized through the storage object
    itself, and work on other threads. A tensor whose storage cannot be read (a wrapper
    subclass) makes the numbers ``partial``.

    **CUDA** (scopes ``CUDA caching allocator: allocated bytes`` / ``...: reserved bytes``): no
    mode or hook. The device is synchronized, its peak statistics reset, and the baseline is
    ``torch.cuda.memory_allocated``; on exit (synchronized again) the peak is
    ``max_memory_allocated`` and the reserved peak ``max_memory_reserved``. These cover every
    tensor of the process on that device; ``roots`` only supplies the dtypes of the context.

    The tracker is not reentrant; entering it again after exit starts a new measurement. The
    mode is removed on every path, ``KeyboardInterrupt`` included, and an exception of the code
    inside propagates unchanged. Read the results with :meth:`baseline`,
    :meth:`tensor_memory_peak`, :meth:`allocator_reserved_peak` and :meth:`diagnostics`, or the
    byte counts :attr:`baseline_bytes` and :attr:`peak_bytes`.

    """

    def __init__(self, device: Any = "cpu", *, roots: Iterable[Any] | None = None) -> None:
        """Check the device; nothing is scanned or installed until the tracker is entered."""
        self._device = resolve_device(device, what="tensor memory")
        self._roots: tuple[Any, ...] | None = tuple(roots) if roots is not None else None
        self._mode: Any = None
        self._entered = False
        self._reset()

    def _reset(self) -> None:
        self._live: dict[int, _Entry] = {}
        self._preexisting: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._live_bytes = 0
        self._baseline_bytes: int | None = None
        self._peak_bytes: int | None = None
        self._reserved_peak_bytes: int | None = None
        self._new_storages = 0
        self._unreadable_baseline = 0
        self._unreadable = 0
        self._truncated = False
        self._compiled = CompiledWatch()
        self._threads_seen: set[int] = set()
        self._watch: ThreadWatch | None = None
        self._other_threads: OtherThreads | None = None
        self._dtypes: set[Any] = set()
        self._failed: str | None = None

    # -- properties --------------------------------------------------------------------------

    @property
    def device(self) -> Any:
        """The measured device (a ``torch.device``; CUDA with its index)."""
        return self._device

    @property
    def uses_allocator(self) -> bool:
        """True on CUDA, where the caching allocator's statistics are read instead of a mode."""
        return bool(self._device.type == "cuda")

    @property
    def scope(self) -> str:
        """The scope of the baseline and the peak."""
        if self._device.type == "cuda":
            return CUDA_ALLOCATED_SCOPE
        return _MPS_SCOPE if self._device.type == "mps" else CPU_SCOPE

    @property
    def baseline_bytes(self) -> int:
        """Tensor bytes alive when tracking started."""
        if self._baseline_bytes is None:
            raise InvalidArgumentError(
                "the tracker has not run: use it as `with TensorMemoryTracker() as tracker:`"
            )
        return self._baseline_bytes

    @property
    def peak_bytes(self) -> int | None:
        """The peak tensor bytes so far, baseline included (``None`` if it could not be read)."""
        self.baseline_bytes  # noqa: B018 - raises if the tracker never ran
        if self._mode is not None:
            return max(self._peak_bytes or 0, self._live_bytes)
        return self._peak_bytes

    @property
    def live_bytes(self) -> int:
        """Tracked bytes alive now (CPU and MPS; while active or at exit)."""
        self.baseline_bytes  # noqa: B018 - raises if the tracker never ran
        return self._live_bytes

    @property
    def reserved_peak_bytes(self) -> int | None:
        """CUDA only: peak reserved bytes of the caching allocator; ``None`` elsewhere."""
        return self._reserved_peak_bytes

    @property
    def new_storages(self) -> int:
        """How many storages created during the region were counted (CPU and MPS)."""
        return self._new_storages

    @property
    def dtypes(self) -> list[Any]:
        """The floating dtypes of the baseline and of the tensors seen, sorted by name."""
        return sorted(self._dtypes, key=str)

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self) -> TensorMemoryTracker:
        """Scan the baseline, then push the dispatch mode (or reset the CUDA peak statistics)."""
        if self._entered:
            raise InvalidArgumentError("this TensorMemoryTracker is already active")
        self._reset()
        self._entered = True
        try:
            if self.uses_allocator:
                self._enter_allocator()
            else:
                self._enter_tracker()
        except BaseException:
            self._leave()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Pop the mode and read the peak; an exception of the tracked code propagates unchanged."""
        explain_fullgraph_error(exc)
        try:
            if self.uses_allocator:
                self._exit_allocator(failed=exc is not None)
            else:
                self._peak_bytes = max(self._peak_bytes or 0, self._live_bytes)
        finally:
            self._leave()

    def _leave(self) -> None:
        mode, self._mode = self._mode, None
        try:
            if mode is not None:
                from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

                if any(active is mode for active in _get_current_dispatch_mode_stack()):
                    mode.__exit__(None, None, None)
        finally:
            self._compiled.__exit__(None, None, None)
            watch, self._watch = self._watch, None
            if watch is not None:
                watch.__exit__(None, None, None)
                self._other_threads = watch.result
            self._entered = False
            # Dropping the weak references drops their callbacks: nothing is left behind.
            self._live = {}
            self._preexisting = weakref.WeakValueDictionary()

    # -- CPU and MPS: the storage tracker ----------------------------------------------------

    def _enter_tracker(self) -> None:
        import torch

        tensor_type = torch.Tensor
        # A collection first, so tensors of unreachable cycles are neither baseline nor "alive".
        gc.collect()
        scanned: list[Any] = []
        for obj in gc.get_objects():
            if issubclass(type(obj), tensor_type):
                scanned.append(obj)
                grad = _leaf_grad(obj)
                if grad is not None:
                    # A gradient set by autograd may have no Python object yet; reading it makes
                    # one, so the optimizer's later use of it is not mistaken for a new storage.
                    scanned.append(grad)
        if self._roots is None:
            baseline_tensors = scanned
        else:
            baseline_tensors, self._truncated = _reachable_tensors(self._roots)
        # Storages alive now are never new. A weak mapping forgets a storage when it is freed, so
        # a new storage that reuses its address is still counted.
        alive = scanned if self._roots is None else [*scanned, *baseline_tensors]
        for tensor in alive:
            for storage in _storages(tensor) or ():
                self._preexisting[storage._cdata] = storage
        del scanned, alive
        for tensor in baseline_tensors:
            storages = _storages(tensor)
            if storages is None:
                if tensor.device.type == self._device.type:
                    self._unreadable_baseline += 1
                continue
            if tensor.device.type == self._device.type and tensor.dtype.is_floating_point:
                self._dtypes.add(tensor.dtype)
            for storage in storages:
                self._track(storage)
        del baseline_tensors
        self._baseline_bytes = self._live_bytes
        self._peak_bytes = self._live_bytes
        watch = ThreadWatch(self._threads_seen)
        watch.__enter__()
        self._watch = watch
        self._compiled.__enter__()
        # Held before it is pushed, so an interrupt between the two cannot leave it behind:
        # ``_leave`` pops it only if it is on the stack.
        self._mode = _mode_class()(self)
        self._mode.__enter__()

    def _track(self, storage: Any) -> None:
        """Count ``storage`` as live until its weak-reference callback reports it freed."""
        if storage.device.type != self._device.type:
            return
        key = storage._cdata
        if key in self._live:
            return
        size = int(storage.nbytes())
        ref = weakref.ref(storage, functools.partial(self._release, key))
        self._live[key] = _Entry(ref, size)
        self._live_bytes += size

    def _release(self, key: int, ref: weakref.ref[Any]) -> None:
        # Runs when a tracked storage is freed. The identity check ignores a stale callback for
        # an address that a newer storage already took.
        entry = self._live.get(key)
        if entry is not None and entry.ref is ref:
            del self._live[key]
            self._live_bytes -= entry.nbytes

    def _see_tensor(self, tensor: Any) -> None:
        """Called by the mode for every tensor an operator takes or returns."""
        if tensor.device.type != self._device.type:
            return
        storages = _storages(tensor)
        if storages is None:
            self._unreadable += 1
            return
        if tensor.dtype.is_floating_point:
            self._dtypes.add(tensor.dtype)
        for storage in storages:
            self._see_storage(storage)

    def _see_storage(self, storage: Any) -> None:
        key = storage._cdata
        entry = self._live.get(key)
        if entry is not None:
            size = int(storage.nbytes())
            if entry.ref() is storage:
                if size != entry.nbytes:  # resized in place
                    self._live_bytes += size - entry.nbytes
                    entry.nbytes = size
                    self._bump()
                return
            # The address belonged to a storage already freed whose callback has not run (it
            # normally runs first); the newcomer replaces it.
            if self._live.pop(key, None) is entry:
                self._live_bytes -= entry.nbytes
        elif self._preexisting.get(key) is storage:
            return  # alive before the region and outside the baseline: not tracked
        self._track(storage)
        self._new_storages += 1
        self._bump()

    def _bump(self) -> None:
        if self._peak_bytes is None or self._live_bytes > self._peak_bytes:
            self._peak_bytes = self._live_bytes

    # -- CUDA: allocator statistics ----------------------------------------------------------

    def _enter_allocator(self) -> None:
        import torch

        if self._roots is not None:
            tensors, _ = _reachable_tensors(self._roots)
            for tensor in tensors:
                if tensor.device == self._device and tensor.dtype.is_floating_point:
                    self._dtypes.add(tensor.dtype)
        # No compiled_callable diagnostic: without a dispatch mode, compiled code stays compiled.
        torch.cuda.synchronize(self._device)
        torch.cuda.reset_peak_memory_stats(self._device)
        self._baseline_bytes = int(torch.cuda.memory_allocated(self._device))
        self._peak_bytes = self._baseline_bytes

    def _exit_allocator(self, *, failed: bool) -> None:
        import torch

        try:
            # Kernels still queued allocate nothing new, but synchronizing makes the reading
            # follow the work it describes.
            torch.cuda.synchronize(self._device)
            self._peak_bytes = int(torch.cuda.max_memory_allocated(self._device))
            self._reserved_peak_bytes = int(torch.cuda.max_memory_reserved(self._device))
        except Exception as error:
            # After the tracked code raised (possibly a CUDA error that synchronize would raise
            # again) its exception must propagate, not ours.
            if not failed:
                raise
            self._peak_bytes = None
            self._failed = f"{type(error).__name__}: {error}"

    # -- results -----------------------------------------------------------------------------

    def _partial_reason(self, *, baseline_only: bool, foreign: bool = True) -> str | None:
        reasons = []
        if self._truncated:
            reasons.append(
                f"the reachability walk stopped after {_WALK_LIMIT:,} objects; tensors beyond "
                "it are not in the baseline"
            )
        if foreign and not baseline_only and self._other_threads is not None:
            elsewhere = other_threads_reason(self._other_threads)
            if elsewhere is not None:
                reasons.append(elsewhere)
        unreadable = self._unreadable_baseline + (0 if baseline_only else self._unreadable)
        if unreadable:
            reasons.append(
                f"{unreadable:,} tensor{'s' if unreadable != 1 else ''} without a readable "
                "storage (tensor subclasses) not counted"
            )
        return "; ".join(reasons) if reasons else None

    def baseline(self) -> MetricResult:
        """The baseline as a metric (unit ``B``)."""
        value = self.baseline_bytes
        if self.uses_allocator:
            method = "torch.cuda.memory_allocated when tracking started (synchronized)"
            return complete(value, "B", CUDA_ALLOCATED_SCOPE, method)
        method = _PROCESS_BASELINE_METHOD if self._roots is None else _ROOTS_BASELINE_METHOD
        reason = self._partial_reason(baseline_only=True)
        if reason is not None:
            return partial(value, "B", self.scope, method, reason)
        return complete(value, "B", self.scope, method)

    def tensor_memory_peak(self) -> MetricResult:
        """The peak as a metric (unit ``B``, baseline included)."""
        peak = self.peak_bytes
        if self.uses_allocator:
            method = "torch.cuda.max_memory_allocated after reset_peak_memory_stats (synchronized)"
            if peak is None:
                why = f"the allocator statistics could not be read: {self._failed}"
                return unavailable("B", CUDA_ALLOCATED_SCOPE, method, why)
            return complete(peak, "B", CUDA_ALLOCATED_SCOPE, method)
        assert peak is not None  # the storage tracker always has a peak once it ran
        reason = self._partial_reason(baseline_only=False)
        if reason is not None:
            return partial(peak, "B", self.scope, _TRACKER_PEAK_METHOD, reason)
        return complete(peak, "B", self.scope, _TRACKER_PEAK_METHOD)

    def allocator_reserved_peak(self) -> MetricResult:
        """CUDA: the caching allocator's peak reserved bytes; ``unavailable`` elsewhere."""
        if not self.uses_allocator:
            return unavailable("B", CUDA_RESERVED_SCOPE, _RESERVED_METHOD, _UNSUPPORTED)
        if self._reserved_peak_bytes is None:
            reason = f"the allocator statistics could not be read: {self._failed}"
            return unavailable("B", CUDA_RESERVED_SCOPE, _RESERVED_METHOD, reason)
        return complete(self._reserved_peak_bytes, "B", CUDA_RESERVED_SCOPE, _RESERVED_METHOD)

    def diagnostics(self) -> list[Diagnostic]:
        """What a reader of the numbers should know: unsupported metrics, partial counts."""
        found: list[Diagnostic] = []
        if not self.uses_allocator:
            why = (
                "torch.mps has no peak allocator statistics"
                if self._device.type == "mps"
                else "cpu has no caching allocator"
            )
            found.append(
                {
                    "code": "unsupported_on_device",
                    "severity": "info",
                    "metric": "allocator_reserved_peak",
                    "message": f"allocator reserved memory is measured on CUDA devices only; {why}",
                }
            )
        # Operators on other threads have a diagnostic of their own (below).
        reason = (
            self._partial_reason(baseline_only=False, foreign=False)
            if not self.uses_allocator
            else None
        )
        if reason is not None:
            found.append(
                {
                    "code": "note",
                    "severity": "warning",
                    "metric": "tensor_memory_peak",
                    "message": f"tensor memory is a lower bound: {reason}",
                }
            )
        found.extend(
            watch_diagnostics(  # type: ignore[arg-type]
                self._other_threads,
                self._compiled,
                "tensor_memory_peak",
                "the storages it allocated are",
            )
        )
        return found


# -- the report -------------------------------------------------------------------------------


def measure_peak_memory(fn: Callable[[], Any], *, device: Any = "cpu") -> PeakMemoryReport:
    """Run ``fn()`` once under a :class:`TensorMemoryTracker` and return a ``peak_memory`` report.

    Args:
        fn: a zero-argument callable (``lambda: model(x)``, a training step, anything).
        device: ``"cpu"`` (default), ``"cuda"``, ``"cuda:N"`` or ``"mps"``. An unknown or
            unavailable device raises :class:`~torchscan.errors.InvalidArgumentError`.

    On CPU the baseline is the tensor storage *reachable from* ``fn`` when it starts (its
    closure, the globals it names, its defaults, a bound method's ``self``, and the attributes,
    parameters, buffers and gradients of what those hold), not every tensor in the process, so
    the number describes the workload: for ``torch.nn.Linear(128, 128)`` on a ``(32, 128)``
    float32 input under ``inference_mode``, the baseline is 82,432 B (parameters 66,048 B +
    input 16,384 B) and ``tensor_memory_peak`` is 98,816 B (+ the 16,384 B output). Tensors the
    workload creates are counted whether or not they are reachable. Both have the scope
    ``PyTorch tracked CPU tensors``; ``allocator_reserved_peak`` is ``unavailable``
    (``unsupported on device``). On CUDA the numbers are the caching allocator's (every tensor of
    the process on the device).

    The value ``fn`` returns is alive when the peak is read, so it counts; it is dropped before
    this function returns. ``context`` records the flags as they were when ``fn`` started and the
    floating dtypes seen. ``fn``'s own exception propagates unchanged (the same object), and no
    mode or hook is left behind on any path, ``KeyboardInterrupt`` included.

    """
    from .context import capture_context, current_flags
    from .reports.validation import validate_report

    if not callable(fn):
        raise InvalidArgumentError(
            f"fn must be a zero-argument callable (e.g. lambda: model(x)); got {type(fn).__name__}"
        )
    tracker = TensorMemoryTracker(device, roots=(fn,))
    flags = current_flags()
    with tracker:
        result = fn()
    dtypes = set(tracker.dtypes)
    # The result's dtypes too: on CUDA no mode saw it, and it may be an input returned as is.
    returned, _ = _reachable_tensors((result,), limit=10_000)
    del result
    dtypes.update(
        t.dtype
        for t in returned
        if t.dtype.is_floating_point and t.device.type == tracker.device.type
    )
    del returned
    qualname = getattr(fn, "__qualname__", None)
    report: PeakMemoryReport = {
        "schema_version": 1,
        "kind": "peak_memory",
        "context": capture_context(tracker.device, dtypes, flags=flags),
        "diagnostics": tracker.diagnostics(),
        "callable": qualname if isinstance(qualname, str) else None,
        "baseline": tracker.baseline(),
        "tensor_memory_peak": tracker.tensor_memory_peak(),
        "allocator_reserved_peak": tracker.allocator_reserved_peak(),
    }
    # Our own report must be valid; a problem here is a torchscan bug and is raised as such.
    validate_report(report)
    return report
