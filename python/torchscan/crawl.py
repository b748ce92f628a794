"""``crawl_module`` and ``summary``: one evaluation forward of a model, layer by layer."""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from math import prod
from typing import IO, Any

from . import _claims, _core, _metrics
from ._arguments import check_integer
from ._devices import resolve_device
from ._input_errors import explain_forward_error
from ._values import _DEVICE_NAMES, _DTYPE_NAMES, describe, dtype_name, freeze, iter_tensors
from .context import capture_context, class_name, current_flags, qualified_type_name
from .errors import IncompleteAnalysisError, InvalidArgumentError
from .flops import _MODULE_SCOPE as _PATH_SCOPE
from .flops import FLOPS_METHOD, add_legacy_views
from .reports import (
    AnalysisReport,
    AnalysisTotals,
    Diagnostic,
    InputSource,
    Layer,
    MetricResult,
    ModelInputs,
    ModuleOperatorFlops,
    OperatorFlops,
)

__all__ = ["crawl_module", "summary"]

MODES = ("full", "structure")
NOT_REQUESTED = "not requested"
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
_MODULE_SCOPE = "module estimates of one evaluation forward (batch as given)"
_MODULE_METHOD = (
    "per-module formulas of leaf modules; modules with children add their children and the "
    "operators they run themselves"
)
# The scopes and methods ``_core.assemble`` gives module estimates and module paths' FLOPs.
_TEXTS = {
    "module_scope": _MODULE_SCOPE,
    "module_method": _MODULE_METHOD,
    "path_scope": _PATH_SCOPE,
    "path_method": FLOPS_METHOD,
}
# torchscan 0.2's wrap modes; None turns wrapping off.
_WRAP_MODES = ("mid", "end")


def _check_model(model: Any) -> None:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise InvalidArgumentError(
            f"model must be a torch.nn.Module, got {type(model).__name__}; "
            "to count the operators of any callable, use measure_flops(fn)"
        )


def _resolve_device(model: Any, device: Any) -> Any:
    """The device of the analysis: ``device`` (any type torch knows), or the model's."""
    import torch

    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    if device is None:
        return tensor.device if tensor is not None else torch.device("cpu")
    resolved = resolve_device(device, supported=None)
    if tensor is not None and tensor.device.type != "meta" and tensor.device.type != resolved.type:
        raise InvalidArgumentError(
            f"the model is on {tensor.device} but device={device!r}; move the model first "
            f"(model.to({str(resolved)!r})): the analysis never moves your model"
        )
    return resolved


def _resolve_dtypes(model: Any, dtype: Any, count: int) -> list[Any]:
    import torch

    if dtype is None:
        floating = [p.dtype for p in model.parameters() if p.is_floating_point()]
        return [floating[0] if floating else torch.float32] * count
    if isinstance(dtype, torch.dtype):
        return [dtype] * count
    if isinstance(dtype, Iterable) and not isinstance(dtype, (str, bytes)):
        dtypes = list(dtype)
        if len(dtypes) != count or not all(isinstance(d, torch.dtype) for d in dtypes):
            raise InvalidArgumentError(
                f"dtype must be a torch.dtype or one torch.dtype per input ({count}), got {dtype!r}"
            )
        return dtypes
    raise InvalidArgumentError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")


#: The most elements ``input_shape`` may give one generated input.
_MAX_INPUT_ELEMENTS = 2**48


def _shapes(input_shape: Any) -> list[tuple[int, ...]]:
    def is_shape(value: Any) -> bool:
        return isinstance(value, Sequence) and all(
            isinstance(size, int) and not isinstance(size, bool) for size in value
        )

    if is_shape(input_shape) and len(input_shape) > 0:
        shapes = [tuple(input_shape)]
    elif isinstance(input_shape, Sequence) and input_shape and all(map(is_shape, input_shape)):
        shapes = [tuple(shape) for shape in input_shape]
    else:
        raise InvalidArgumentError(
            "input_shape must be the shape of one input without its batch dimension, for example "
            f"(3, 224, 224), or a list of such shapes; got {input_shape!r}"
        )
    for shape in shapes:
        if any(size <= 0 for size in shape):
            shown = shape if all(abs(size) < 2**64 for size in shape) else "a size below zero"
            raise InvalidArgumentError(f"input_shape sizes must be positive, got {shown}")
        elements = prod(shape)
        if elements > _MAX_INPUT_ELEMENTS:
            raise InvalidArgumentError(
                "input_shape must describe at most 2**48 elements per input (its bytes must fit "
                f"torch's 64-bit sizes); got about 2**{elements.bit_length() - 1}"
            )
    return shapes


def _make_inputs(
    model: Any, input_shape: Any, dtype: Any, args: Any, kwargs: Any, device: Any
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """The positional and keyword inputs of the forward, and the device recorded."""
    import torch

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise InvalidArgumentError(f"kwargs must be a mapping, got {type(kwargs).__name__}")
    if input_shape is None and args is None and kwargs is None:
        raise InvalidArgumentError(
            "give the inputs: input_shape=(3, 224, 224) (batch of one generated) or "
            "args=(tensor, ...) and/or kwargs={...} (forwarded unchanged)"
        )
    if input_shape is not None and args is not None:
        raise InvalidArgumentError("give input_shape or args, not both")
    resolved_device = _resolve_device(model, device)
    if input_shape is not None:
        shapes = _shapes(input_shape)
        dtypes = _resolve_dtypes(model, dtype, len(shapes))
        generator = torch.Generator(device="cpu").manual_seed(0)
        positional: tuple[Any, ...] = tuple(
            _random_input((1, *shape), kind, generator).to(resolved_device)
            for shape, kind in zip(shapes, dtypes, strict=True)
        )
    else:
        if dtype is not None:
            raise InvalidArgumentError(
                "dtype applies to generated inputs (input_shape); args are forwarded unchanged"
            )
        positional = () if args is None else args if isinstance(args, tuple) else (args,)
    return positional, dict(kwargs) if kwargs is not None else {}, resolved_device


def _random_input(shape: tuple[int, ...], dtype: Any, generator: Any) -> Any:
    import torch

    if dtype.is_floating_point or dtype.is_complex:
        return torch.rand(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=torch.bool)
    # Integer inputs are usually indices (token ids): zeros are valid for any embedding.
    return torch.zeros(shape, dtype=dtype)


def _all_named_modules(model: Any) -> list[tuple[str, Any]]:
    """``list(model.named_modules(remove_duplicate=False))``, walked without a generator per module.

    A module reachable under several paths is listed under each. A class that defines its own
    ``named_modules`` is asked for what lies under it, as PyTorch's walk would.
    """
    from torch import nn

    walk = nn.Module.named_modules
    found: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", model)]
    while stack:
        prefix, module = stack.pop()
        if type(module).named_modules is not walk:
            found.extend(module.named_modules(prefix=prefix, remove_duplicate=False))
            continue
        found.append((prefix, module))
        children = module._modules
        if children:
            dot = f"{prefix}." if prefix else ""
            stack.extend(
                [
                    (dot + name, child)
                    for name, child in reversed(children.items())
                    if child is not None
                ]
            )
    return found


def _count(value: int, what: str) -> MetricResult:
    """An element count among the totals: always complete, unit ``count``."""
    return _metrics.complete(int(value), "count", _COUNT_SCOPE.format(what=what), _COUNT_METHOD)


def _totals_storage(
    walked: Any,
) -> tuple[dict[str, MetricResult], int, list[str], set[Any], list[Any]]:
    """Storage totals, shared names, the parameters' float dtypes and the tensors' devices.

    ``walked`` holds the totals and ties ``_core.walk_storage`` found: every storage element
    is counted once, so a tensor under two names, or views that overlap in one storage (a
    transposed tie), count what they cover together, and disjoint views of one flat buffer
    count in full.
    """
    totals, ties = walked
    parameters, trainable, parameter_bytes, buffer_count, buffer_bytes, found, devices = totals
    dtypes: set[Any] = set(found)
    storage = {
        "parameters": _count(parameters, "parameters"),
        "trainable_parameters": _count(trainable, "parameters that require grad"),
        "frozen_parameters": _count(parameters - trainable, "parameters that do not require grad"),
        "parameter_bytes": _metrics.complete(
            int(parameter_bytes),
            "B",
            _STORAGE_SCOPE.format(what="parameters"),
            _STORAGE_METHOD,
        ),
        "buffer_elements": _count(buffer_count, "buffers"),
        "buffer_bytes": _metrics.complete(
            int(buffer_bytes), "B", _STORAGE_SCOPE.format(what="buffers"), _STORAGE_METHOD
        ),
    }
    return storage, len(ties), [_describe_tie(*tie) for tie in ties], dtypes, devices


def _describe_tie(names: list[str], tensors: int, elements: int, counted: int) -> str:
    """One group of tensors counted once, for the ``shared_tensors`` diagnostic."""
    if tensors == 1:
        return " = ".join(names)
    return (
        f"{', '.join(names)} ({tensors} tensors overlapping in one storage: "
        f"{elements:,} elements, {counted:,} counted)"
    )


# Module classes whose ``forward`` cannot be wrapped per instance: scripted modules (their
# attributes live in C++), wrappers that copy a module's ``__dict__`` into replicas, and compiled
# modules (their guards watch the attributes). Any of them in a model makes the recorder use
# forward hooks instead.
_HOOKED_TYPE_NAMES = frozenset(
    {
        "ScriptModule",
        "RecursiveScriptModule",
        "TopLevelTracedModule",
        "TracedModule",
        "DataParallel",
        "DistributedDataParallel",
        "FullyShardedDataParallel",
        "OptimizedModule",
    }
)
_NO_FORWARD = object()


_HOOKED_BY_TYPE: dict[type, bool] = {}


def _needs_hooks(modules: Iterable[Any]) -> bool:
    for module in modules:
        kind = type(module)
        hooked = _HOOKED_BY_TYPE.get(kind)
        if hooked is None:
            hooked = _HOOKED_BY_TYPE[kind] = any(
                klass.__name__ in _HOOKED_TYPE_NAMES for klass in kind.__mro__
            )
        if hooked:
            return True
    return False


class _Recorder:
    """Records every module call of one forward: the call tree, with frozen inputs and outputs.

    The recording itself is compiled (``_core.CallRecorder``): it runs between the forward's
    kernels, where little of it is still in the processor's caches. Each module's ``forward`` is
    replaced for the duration by a ``_core.ModuleForward`` (the instance attribute is set and
    then restored): it costs a fraction of PyTorch's hook machinery and, like the absence of
    hooks, leaves PyTorch's fused inference paths on. Models holding modules that cannot be
    wrapped (scripted, replicated or compiled) get two process-wide forward hooks instead,
    filtered to the model's modules. Either way the call records the positional and keyword
    arguments its ``forward`` received and what it returned, also when it raised. Once the
    forward is over, ``_core.assemble`` builds the report's layers from the records. Only calls
    on the thread that built the recorder are recorded: a stand-in or a hook called from any
    other thread passes straight through to the real forward.
    """

    def __init__(self, named_modules: list[tuple[str, Any]], log: list[Any] | None) -> None:
        import torch

        # A module reachable under several paths is recorded under the first.
        self.positions: dict[int, int] = {}
        self.modules: list[Any] = []
        known: list[tuple[Any, str, int]] = []
        for path, module in named_modules:
            if id(module) not in self.positions:
                self.positions[id(module)] = len(self.modules)
                self.modules.append(module)
                known.append((module, path, 0 if path == "" else path.count(".") + 1))
        # The forward's events in order (full mode only): the positions of the calls as they
        # close and the operators they ran (see the crawl counter's ``_after``).
        self.log = log
        self.core = _core.CallRecorder(known, log, torch.Tensor, freeze)
        self.handles: list[Any] = []
        self.wrapped: list[Any] = []
        self.thread = threading.get_ident()

    @property
    def top(self) -> int | None:
        """Position of the innermost open call (``None`` outside every call)."""
        return self.core.top

    def __enter__(self) -> _Recorder:
        try:
            if _needs_hooks(self.modules):
                from torch.nn.modules import module as torch_module

                self.handles.append(torch_module.register_module_forward_pre_hook(self._pre))
                self.handles.append(
                    torch_module.register_module_forward_hook(
                        self._post_hook, with_kwargs=True, always_call=True
                    )
                )
            else:
                for position, module in enumerate(self.modules):
                    self._wrap(position, module)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.handles:
            from torch.nn.modules import module as torch_module

            for handle in self.handles:
                handle.remove()
                # ``RemovableHandle.remove`` leaves the hook's ``with_kwargs`` mark behind.
                torch_module._global_forward_hooks_with_kwargs.pop(handle.id, None)
            self.handles.clear()
        for wrapper in reversed(self.wrapped):
            module, previous = wrapper.module, wrapper.previous
            if previous is _NO_FORWARD:
                module.__dict__.pop("forward", None)
            else:
                module.__dict__["forward"] = previous
        self.wrapped.clear()

    def _wrap(self, position: int, module: Any) -> None:
        previous = module.__dict__.get("forward", _NO_FORWARD)
        inner = module.forward  # the bound method, or a forward already set on the instance
        # A plain method is called as its function with the module: nothing bound is kept.
        method = type(inner) is types.MethodType and inner.__self__ is module
        forward = _core.ModuleForward(
            self.core, position, module, inner.__func__ if method else inner, method, previous
        )
        self.wrapped.append(forward)
        module.__dict__["forward"] = forward

    def _pre(self, module: Any, inputs: tuple[Any, ...]) -> None:
        if threading.get_ident() != self.thread:
            return  # the model run by another thread: not part of the analysed forward
        position = self.positions.get(id(module))
        if position is not None:  # else a module of another model, or not reachable from this one
            self.core.enter(position)

    def _post_hook(
        self, module: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        if id(module) in self.positions and threading.get_ident() == self.thread:
            _core.CallRecorder.leave(self.core, module, inputs, output, kwargs)


_KIND_BY_TYPE: dict[type, tuple[bool, bool, Any, bool, Any]] = {}


def _module_kind(module: Any) -> tuple[bool, bool, Any, bool, Any]:
    """What the report's assembly needs of a module's type (see ``_core.assemble``).

    Whether it has a formula, whether it is a transposed convolution, its field step, whether
    that step is ``passthrough_batched`` (which the receptive-field replay works out itself),
    and its estimate. All of it depends on the type alone.
    """
    kind = _KIND_BY_TYPE.get(type(module))
    if kind is not None:
        return kind
    from .formulas._common import passthrough_batched

    rule = _formulas()._rule(module)
    transposed = isinstance(module, _conv_transpose_type())
    if rule is None:
        kind = (False, transposed, None, False, None)
    else:
        kind = (True, transposed, rule.field, rule.field is passthrough_batched, rule.estimate)
    _KIND_BY_TYPE[type(module)] = kind
    return kind


@functools.cache
def _operator_pass() -> dict[str, Any]:
    """How ``_core.assemble`` reads the forward's operator records (see ``_OP_*``)."""
    import torch

    from .opflops.mode import COUNTED, DEFERRED, UNCOUNTED

    return {
        "counted": COUNTED,
        "deferred": DEFERRED,
        "uncounted": UNCOUNTED,
        "size_type": torch.Size,
        "shape_elements": _shape_elements,
    }


@functools.cache
def _conv_transpose_type() -> type:
    from torch.nn.modules.conv import _ConvTransposeNd

    return _ConvTransposeNd


@functools.cache
def _formulas() -> Any:
    """The module formulas (imported on first use: they import torch)."""
    from . import formulas

    return formulas


def _device_names(model_devices: Iterable[Any], inputs: Iterable[Any]) -> list[str]:
    """The devices of the model's tensors and of the input tensors, by name, sorted."""
    return sorted({str(device) for device in (*model_devices, *(t.device for t in inputs))})


def _model_dtypes(parameter_dtypes: set[Any], inputs: Iterable[Any]) -> list[Any]:
    dtypes = parameter_dtypes | {t.dtype for t in inputs if t.is_floating_point()}
    return sorted(dtypes, key=dtype_name)


def _structure_operator_flops() -> OperatorFlops:
    return {
        "total": _metrics.unavailable(
            "FLOPs", "operators of one evaluation forward", "operator dispatch count", NOT_REQUESTED
        ),
        "counted": [],
        "excluded": [],
        "uncounted": [],
        "modules": [],
        "by_operator": {},
        "by_module": {},
        "ignored_operators": {},
    }


def _analyse(
    model: Any,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    mode: str,
    caller: str,
) -> AnalysisReport:
    import torch

    _check_model(model)
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be 'full' or 'structure', got {mode!r}")
    positional, keywords, resolved_device = _make_inputs(
        model, input_shape, dtype, args, kwargs, device
    )
    flags_before = current_flags()
    # One walk of the module tree serves the hooks, the training flags and the storage totals.
    named_modules = _all_named_modules(model)
    recorder_modules = list({id(module): module for _, module in named_modules}.values())
    training = [module.training for module in recorder_modules]
    full = mode == "full"
    all_inputs = iter_tensors((positional, keywords))
    recorder = _Recorder(named_modules, [] if full else None)
    counter = _crawl_counter(recorder) if full else None
    # The modules are this analysis's until their state is restored; another analysis of any of
    # them (another thread, or one started inside this forward) is refused before it changes a
    # thing, and so is this one while another holds them.
    with _claims.claimed(named_modules, caller):
        try:
            if any(training):
                model.eval()
            with torch.no_grad(), recorder, warnings.catch_warnings():
                # With compiled modules the recorder falls back to process-wide hooks, about
                # which torch.compile warns; they are the analysis's, not the user's.
                warnings.filterwarnings(
                    "ignore",
                    message=r"Using `torch\.compile\(module\)` when there are global hooks",
                )
                if counter is None:
                    model(*positional, **keywords)
                else:
                    with counter:
                        model(*positional, **keywords)
        except Exception as error:
            # Only a generated float input reaching an index operation and an argument the
            # forward needs are explained; any other exception propagates as it is.
            explained = explain_forward_error(
                error, model, positional, keywords, input_shape, caller
            )
            if explained is None:
                raise
            raise explained from error
        finally:
            for module, flag in zip(recorder_modules, training, strict=True):
                if module.training is not flag:
                    module.training = flag
    # The forward is over: everything below works on what the hooks and the counter kept.
    core = recorder.core
    # Each module's own parameters and buffers and the storage totals, in one walk.
    own, *walked = _core.walk_storage(named_modules)
    layers, module_totals, by_module, module_diagnostics, tallies = _core.assemble(
        core,
        full,
        recorder.log,
        [(id(tensor), tensor.dim()) for tensor in iter_tensors(positional)],
        _operator_pass(),
        own,
        (_module_kind, iter_tensors),
        {"describe": describe, "dtype_names": _DTYPE_NAMES, "device_names": _DEVICE_NAMES},
        _TEXTS,
    )
    if counter is not None:
        counter.apply(tallies)
        operator_flops = counter.report(by_module, class_name(model))
        operator_diagnostics = counter.diagnostics()
    else:
        operator_flops, operator_diagnostics = _structure_operator_flops(), []
    return _build_report(
        model,
        full,
        named_modules,
        walked,
        layers,
        module_totals,
        "generated" if input_shape is not None else "provided",
        positional,
        keywords,
        resolved_device,
        all_inputs,
        training[0] if training else False,
        flags_before,
        module_diagnostics,
        operator_flops,
        operator_diagnostics,
    )


def _build_report(
    model: Any,
    full: bool,
    named_modules: list[tuple[str, Any]],
    walked: Any,
    layers: list[Layer],
    module_totals: dict[str, MetricResult],
    source: InputSource,
    positional: tuple[Any, ...],
    keywords: dict[str, Any],
    device: Any,
    inputs: list[Any],
    training: bool,
    flags: Any,
    module_diagnostics: list[Diagnostic],
    operator_flops: OperatorFlops,
    operator_diagnostics: list[Diagnostic],
) -> AnalysisReport:
    storage, shared_tensors, shared_names, parameter_dtypes, model_devices = _totals_storage(walked)
    dtypes = _model_dtypes(parameter_dtypes, inputs)
    diagnostics: list[Diagnostic] = []
    if shared_names:
        diagnostics.append(
            {
                "code": "shared_tensors",
                "severity": "info",
                "metric": "parameters",
                "message": (
                    f"{len(shared_names)} shared tensor(s) (a tensor under more than one name, "
                    "or tensors that overlap in one storage) were counted once, each storage "
                    "element once: " + "; ".join(shared_names)
                ),
            }
        )
    diagnostics.extend(module_diagnostics)
    diagnostics.extend(operator_diagnostics)
    totals: AnalysisTotals = {
        "parameters": storage["parameters"],
        "trainable_parameters": storage["trainable_parameters"],
        "frozen_parameters": storage["frozen_parameters"],
        "parameter_bytes": storage["parameter_bytes"],
        "buffer_elements": storage["buffer_elements"],
        "buffer_bytes": storage["buffer_bytes"],
        "shared_tensors": shared_tensors,
        "module_flops": module_totals["module_flops"],
        "operator_flops": operator_flops["total"].copy(),
        "macs": module_totals["macs"],
        "dmas": module_totals["dmas"],
    }
    model_inputs: ModelInputs = {
        "source": source,
        "args": [describe(value) for value in positional],
        "kwargs": {name: describe(value) for name, value in keywords.items()},
    }
    report: AnalysisReport = {
        "schema_version": 1,
        "kind": "analysis",
        "context": capture_context(
            device,
            dtypes,
            model_type=qualified_type_name(model),
            training_before=training,
            flags=flags,
            execution_mode="evaluation_no_grad",
            devices=_device_names(model_devices, inputs),
        ),
        "diagnostics": diagnostics,
        "mode": "full" if full else "structure",
        "inputs": model_inputs,
        "totals": totals,
        "layers": layers,
        "operator_flops": operator_flops,
    }
    return report


def _strict_check(report: AnalysisReport) -> None:
    if report["mode"] != "full":
        return
    totals = report["totals"]
    requested = {
        "module_flops": totals["module_flops"],
        "macs": totals["macs"],
        "dmas": totals["dmas"],
        "operator_flops": totals["operator_flops"],
    }
    incomplete: list[tuple[str, str]] = [
        (name, str(m["status"])) for name, m in requested.items() if m["status"] != "complete"
    ]
    if incomplete:
        raise IncompleteAnalysisError(report, incomplete)


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause automatic garbage collection while an analysis runs, and resume it afterwards.

    An analysis allocates a few container objects per module call and per operator, which keep
    triggering collections; past the youngest generation each of them walks every object of the
    process (PyTorch alone has hundreds of thousands). The analysis's objects are freed by
    reference counting (the call tree is unlinked once the report is built), so nothing is left
    for a collection to find. A collector the caller turned off stays off. ``gc.freeze`` would
    do too, but telling whether the caller froze objects of their own (``gc.get_freeze_count``)
    walks every frozen object.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def crawl_module(
    model: Any,
    input_shape: Any = None,
    dtype: Any = None,
    *,
    args: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    device: Any = None,
    mode: str = "full",
    strict: bool = False,
) -> AnalysisReport:
    """Analyse one evaluation forward of ``model`` and return its ``AnalysisReport`` quietly.

    ``input_shape`` excludes the batch dimension (a batch of one is generated, in ``dtype`` or the
    model's parameter dtype; its sizes are positive integers, at most 2**48 elements per input,
    or :class:`~torchscan.InvalidArgumentError`); or give ``args`` / ``kwargs``, forwarded
    unchanged (the very same objects). The forward runs once, in evaluation mode with gradients
    disabled; every module's training flag and the grad mode are restored afterwards, exceptions
    included.
    ``mode="structure"`` records shapes, parameters and storage only. ``strict=True`` raises
    :class:`~torchscan.IncompleteAnalysisError` (carrying the report) when a requested metric is
    partial or unavailable. Parameters and buffers are counted by the storage they cover: a
    tied tensor, or views that overlap in one storage, count each element once (the
    ``shared_tensors`` diagnostic names them); disjoint views of one flat buffer count in full.

    A generated (floating-point) input that reaches an index operation (``nn.Embedding``, ...)
    and an argument the forward needs but was not given raise
    :class:`~torchscan.ModelInputError`, which says what to pass (``dtype=torch.long``,
    ``args``, ``kwargs``) and is also of the kind of the model's exception, its ``__cause__``.
    Any other exception of the forward propagates unchanged.

    The model's modules are held by this call alone while it runs: another analysis of any of
    them (in another thread, or started inside this forward) raises
    :class:`~torchscan.ConcurrentAnalysisError` before it changes anything, as this call does
    while another holds them. Calls of the model from other threads meanwhile are not recorded.
    """
    with _collection_paused():
        report = _analyse(model, input_shape, dtype, args, kwargs, device, mode, "crawl_module")
    if strict:
        _strict_check(report)
    return report


def summary(
    model: Any,
    input_shape: Any = None,
    wrap_mode: str | None = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    *,
    dtype: Any = None,
    args: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    device: Any = None,
    mode: str = "full",
    strict: bool = False,
    file: IO[str] | None = None,
) -> AnalysisReport:
    """Print the layer table of ``model`` and return the same report as :func:`crawl_module`.

    Takes the arguments of :func:`crawl_module` (``dtype`` by keyword) plus display options:
    ``max_depth`` (an integer from 0 to ``sys.maxsize``) hides layers nested deeper than that;
    ``file`` is where the table goes (standard output by default). The positional order is
    torchscan 0.2's, so its callers keep working: ``wrap_mode`` (``"mid"``, ``"end"`` or
    ``None``), ``receptive_field`` (adds each layer's receptive field to the table) and
    ``effective_rf_stats`` (adds its effective stride and padding). The table names each layer
    by its own name, indented, so there is no dotted path for ``wrap_mode`` to shorten; the
    receptive field is always in the report, whatever the table shows. With ``strict=True`` the
    table is printed before :class:`~torchscan.IncompleteAnalysisError` is raised. Threads and
    nested analyses follow :func:`crawl_module`'s rules
    (:class:`~torchscan.ConcurrentAnalysisError`), and so do storage counts and
    :class:`~torchscan.ModelInputError`.
    """
    if wrap_mode is not None and wrap_mode not in _WRAP_MODES:
        raise InvalidArgumentError(
            f"wrap_mode must be 'mid', 'end' or None (torchscan 0.2's values), got {wrap_mode!r}"
        )
    if max_depth is not None:
        check_integer("max_depth", max_depth, minimum=0, maximum=sys.maxsize)
    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
    ):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name} must be True or False, got {flag!r}")
    with _collection_paused():
        report = _analyse(model, input_shape, dtype, args, kwargs, device, mode, "summary")
    from .validation import format_summary

    text = format_summary(
        report,
        max_depth=max_depth,
        receptive_field=receptive_field,
        effective_rf_stats=effective_rf_stats,
    )
    print(text, end="", file=file if file is not None else sys.stdout)
    if strict:
        _strict_check(report)
    return report


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

    from .flops import OperatorFlopCounter
    from .opflops.formulas import shapes_of
    from .opflops.mode import COUNTED, DEFERRED, UNCOUNTED, Entry, OperatorFlopMode

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
