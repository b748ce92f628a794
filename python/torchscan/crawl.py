"""``crawl_module`` and ``summary``: one evaluation forward of a model, layer by layer."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from . import _metrics
from ._values import describe, dtype_name, iter_tensors
from .context import capture_context, current_flags
from .errors import IncompleteAnalysisError, InvalidArgumentError
from .reports import (
    AnalysisReport,
    AnalysisTotals,
    Diagnostic,
    Layer,
    MetricResult,
    NamedValueMeta,
    OperatorFlops,
    ReceptiveField,
)

__all__ = ["crawl_module", "summary"]

MODES = ("full", "structure")
NOT_REQUESTED = "not requested"
_STORAGE_SCOPE = "storage of unique {what} (storage, not peak memory)"
_STORAGE_METHOD = "sum of numel x element size over unique tensors, shared tensors counted once"
_MODULE_SCOPE = "module estimates of one evaluation forward (batch as given)"
_MODULE_METHOD = (
    "per-module formulas of leaf modules; modules with children add their children and the "
    "operators they run themselves"
)
_UNITS = {"flops": "FLOPs", "macs": "MACs", "dmas": "DMAs"}
_WRAP_MODES = ("top", "mid", "bottom")


@dataclass
class _Call:
    """One module call, filled in by the pre- and post-forward hooks."""

    path: str
    call_index: int
    depth: int
    module: Any
    inputs: tuple[Any, ...]
    output: Any = None
    finished: bool = False
    # Metadata of inputs and output, taken when the call finishes; the tensors are then dropped.
    input_metas: list[Any] = field(default_factory=list)
    output_meta: Any = None
    children: list[_Call] = field(default_factory=list)
    estimates: dict[str, MetricResult] = field(default_factory=dict)
    receptive_field: ReceptiveField | None = None
    # Operators this call ran itself (not inside a child module), from the operator pass.
    own_flops: float = 0.0
    own_dmas: float = 0.0
    own_uncounted: set[str] = field(default_factory=set)


def _check_model(model: Any) -> None:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise InvalidArgumentError(
            f"model must be a torch.nn.Module, got {type(model).__name__}; "
            "to count the operators of any callable, use measure_flops(fn)"
        )


def _resolve_device(model: Any, device: Any) -> Any:
    import torch

    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    if device is None:
        return tensor.device if tensor is not None else torch.device("cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise InvalidArgumentError(
            f"device {device!r} is not a torch device; pass 'cpu', 'cuda', 'cuda:0', ..."
        ) from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgumentError(
            f"device {device!r} was requested but no CUDA device is available; use device='cpu'"
        )
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidArgumentError(
            f"device {device!r} was requested but MPS is not available; use device='cpu'"
        )
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
            raise InvalidArgumentError(f"input_shape sizes must be positive, got {shape}")
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


def _unique_tensors(named: Iterable[tuple[str, Any]]) -> tuple[list[Any], int]:
    """Distinct tensors and how many of them are reachable under more than one name.

    Tensors are the same when they are the same object or view the same storage the same way.
    """
    seen: dict[tuple[Any, ...], list[str]] = {}
    first: dict[tuple[Any, ...], Any] = {}
    by_identity: dict[int, tuple[Any, ...]] = {}
    for name, tensor in named:
        key = by_identity.get(id(tensor))
        if key is None:
            pointer = 0
            # Meta and other storage-less tensors have no pointer: identity is all there is.
            with contextlib.suppress(RuntimeError, NotImplementedError):
                pointer = tensor.data_ptr()
            key = (
                ("id", id(tensor))
                if pointer == 0
                else (tensor.device, pointer, tuple(tensor.shape), tensor.stride(), tensor.dtype)
            )
            by_identity[id(tensor)] = key
        seen.setdefault(key, []).append(name)
        first.setdefault(key, tensor)
    shared = sum(1 for names in seen.values() if len(names) > 1)
    return list(first.values()), shared


def _named_tensors(model: Any) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """Every (name, parameter) and (name, buffer) of ``model``, duplicates included, in one walk."""
    parameters: list[tuple[str, Any]] = []
    buffers: list[tuple[str, Any]] = []
    for prefix, module in model.named_modules(remove_duplicate=False):
        dot = f"{prefix}." if prefix else ""
        parameters.extend(
            (dot + name, tensor)
            for name, tensor in module._parameters.items()
            if tensor is not None
        )
        buffers.extend(
            (dot + name, tensor) for name, tensor in module._buffers.items() if tensor is not None
        )
    return parameters, buffers


def _totals_storage(model: Any) -> tuple[dict[str, int], MetricResult, MetricResult, list[str]]:
    named_parameters, named_buffers = _named_tensors(model)
    params, shared_params = _unique_tensors(named_parameters)
    buffers, shared_buffers = _unique_tensors(named_buffers)
    counts = {
        "parameters": sum(int(p.numel()) for p in params),
        "trainable_parameters": sum(int(p.numel()) for p in params if p.requires_grad),
        "buffers": sum(int(b.numel()) for b in buffers),
        "shared_tensors": shared_params + shared_buffers,
    }
    counts["frozen_parameters"] = counts["parameters"] - counts["trainable_parameters"]
    parameter_bytes = _metrics.complete(
        sum(int(p.numel()) * p.element_size() for p in params),
        "B",
        _STORAGE_SCOPE.format(what="parameters"),
        _STORAGE_METHOD,
    )
    buffer_bytes = _metrics.complete(
        sum(int(b.numel()) * b.element_size() for b in buffers),
        "B",
        _STORAGE_SCOPE.format(what="buffers"),
        _STORAGE_METHOD,
    )
    by_id: dict[int, list[str]] = {}
    for name, tensor in (*named_parameters, *named_buffers):
        by_id.setdefault(id(tensor), []).append(name)
    shared_names = [
        " = ".join(dict.fromkeys(names)) for names in by_id.values() if len(set(names)) > 1
    ]
    return counts, parameter_bytes, buffer_bytes, shared_names


def _own_counts(module: Any) -> tuple[int, int, int]:
    params = [p for p in module._parameters.values() if p is not None]
    return (
        sum(int(p.numel()) for p in params),
        sum(int(p.numel()) for p in params if p.requires_grad),
        sum(int(b.numel()) for b in module._buffers.values() if b is not None),
    )


class _Recorder:
    """Forward hooks on every module: the call tree, with inputs and outputs of each call."""

    def __init__(self, model: Any, on_finish: Callable[[_Call], None]) -> None:
        self.on_finish = on_finish
        self.paths: dict[int, str] = {}
        self.modules: list[Any] = []
        for path, module in model.named_modules(remove_duplicate=True):
            self.paths[id(module)] = path
            self.modules.append(module)
        self.calls: list[_Call] = []
        self.stack: list[_Call] = []
        self.call_counts: dict[str, int] = {}
        self.handles: list[Any] = []

    def __enter__(self) -> _Recorder:
        try:
            for module in self.modules:
                self.handles.append(module.register_forward_pre_hook(self._pre))
                self.handles.append(module.register_forward_hook(self._post, always_call=True))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    def _pre(self, module: Any, inputs: tuple[Any, ...]) -> None:
        path = self.paths.get(id(module), "")
        index = self.call_counts.get(path, 0)
        self.call_counts[path] = index + 1
        depth = 0 if path == "" else path.count(".") + 1
        call = _Call(path=path, call_index=index, depth=depth, module=module, inputs=inputs)
        if self.stack:
            self.stack[-1].children.append(call)
        self.calls.append(call)
        self.stack.append(call)

    def _post(self, module: Any, inputs: tuple[Any, ...], output: Any) -> None:
        # With always_call, this also runs when forward raised; the stack stays consistent.
        while self.stack:
            call = self.stack.pop()
            if call.module is module:
                call.output = output
                call.finished = True
                self.on_finish(call)
                return

    def current_paths(self) -> list[str]:
        """Paths of the modules whose forward is running, outermost first."""
        return [call.path for call in self.stack]


def _metric_for(kind: str, value: float, method: str) -> MetricResult:
    return _metrics.complete(value, _UNITS[kind], _MODULE_SCOPE, method)


def _estimate_call(call: _Call, diagnostics: dict[tuple[str, str], Diagnostic]) -> None:
    """Fill ``call.estimates``: the module's formula, or its children plus its own operators.

    Runs when the call finishes, after all its children.
    """
    from . import formulas

    module = call.module
    type_name = type(module).__name__
    estimate = formulas.module_estimate(module, call.inputs, call.output) if call.finished else None
    if estimate is not None:
        method = f"formula for {type_name}"
        call.estimates = {
            "flops": _metric_for("flops", estimate.flops, method),
            "macs": _metric_for("macs", estimate.macs, method),
            "dmas": _metric_for("dmas", estimate.dmas, method),
        }
        return
    # Children finished first, so their estimates are already there.
    is_leaf = next(iter(module.children()), None) is None
    missing: list[str] = []
    if not call.finished:
        missing.append(f"{type_name} did not finish its forward")
    elif is_leaf:
        missing.append(f"no formula for {type_name}")
        diagnostics.setdefault(
            ("module_without_formula", call.path),
            {
                "code": "module_without_formula",
                "severity": "warning",
                "metric": "module_flops",
                "message": (
                    f"{type_name} has no module estimate formula; module FLOPs, MACs and DMAs "
                    "are partial (lower bounds). Operator FLOPs count its operators."
                ),
                "path": call.path,
            },
        )
    if call.own_uncounted:
        names = ", ".join(sorted(call.own_uncounted))
        missing.append(f"operators without a FLOP formula ran in {type_name}: {names}")
    own = {"flops": call.own_flops, "macs": call.own_flops / 2, "dmas": call.own_dmas}
    method = (
        "sum of its children's estimates and of the operators it runs itself"
        if call.children
        else "operators it runs itself"
    )
    for kind in ("flops", "macs", "dmas"):
        child_metrics = [child.estimates[kind] for child in call.children]
        known = own[kind] + sum(m["known_value"] or 0.0 for m in child_metrics)
        statuses = [m["status"] for m in child_metrics]
        incomplete = [s for s in statuses if s != "complete"]
        if missing or incomplete:
            reasons = list(missing)
            if incomplete:
                reasons.append("a child module's estimate is incomplete")
            call.estimates[kind] = _metrics.partial(
                known, _UNITS[kind], _MODULE_SCOPE, method, "; ".join(reasons)
            )
        else:
            call.estimates[kind] = _metric_for(kind, known, method)


def _not_requested(kind: str) -> MetricResult:
    return _metrics.unavailable(_UNITS[kind], _MODULE_SCOPE, _MODULE_METHOD, NOT_REQUESTED)


def _unavailable_field(reason: str) -> ReceptiveField:
    return {
        "status": "unavailable",
        "size": None,
        "stride": None,
        "padding": None,
        "reason": reason,
    }


def _layer(call: _Call, counted_modules: set[int], mode: str) -> Layer:
    first_call = id(call.module) not in counted_modules
    counted_modules.add(id(call.module))
    own_params, own_trainable, own_buffers = _own_counts(call.module) if first_call else (0, 0, 0)
    if mode == "structure":
        estimates = {kind: _not_requested(kind) for kind in ("flops", "macs", "dmas")}
        field_info = _unavailable_field(NOT_REQUESTED)
    else:
        estimates = call.estimates
        field_info = call.receptive_field or _unavailable_field("not computed for this call")
    return {
        "path": call.path,
        "call_index": call.call_index,
        "depth": call.depth,
        "type_name": type(call.module).__name__,
        "inputs": call.input_metas,
        "output": call.output_meta,
        "parameters": own_params,
        "trainable_parameters": own_trainable,
        "buffers": own_buffers,
        "flops": estimates["flops"],
        "macs": estimates["macs"],
        "dmas": estimates["dmas"],
        "receptive_field": field_info,
    }


def _sum_metric(kind: str, roots: list[_Call]) -> MetricResult:
    metrics = [root.estimates[kind] for root in roots]
    known = sum(m["known_value"] or 0.0 for m in metrics)
    reasons = sorted({m["reason"] for m in metrics if m["reason"]})
    if any(m["status"] != "complete" for m in metrics):
        return _metrics.partial(
            known, _UNITS[kind], _MODULE_SCOPE, _MODULE_METHOD, "; ".join(reasons)
        )
    return _metrics.complete(known, _UNITS[kind], _MODULE_SCOPE, _MODULE_METHOD)


_FieldState = tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]


class _FieldTracker:
    """Receptive field, effective stride and padding carried by tensors along the forward."""

    def __init__(self) -> None:
        import weakref

        self._ref = weakref.ref
        self._states: dict[int, tuple[Any, _FieldState]] = {}

    def set(self, tensor: Any, state: _FieldState) -> None:
        self._states[id(tensor)] = (self._ref(tensor), state)

    def get(self, tensor: Any) -> _FieldState | None:
        entry = self._states.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1]

    def seed(self, inputs: Iterable[Any]) -> None:
        for tensor in inputs:
            spatial = tensor.dim() - 2
            if spatial >= 1:
                ones = (1.0,) * spatial
                self.set(tensor, (ones, ones, (0.0,) * spatial))

    def combine(self, inputs: list[Any], outputs: list[Any]) -> None:
        """Propagate through an elementwise operator: the union of its inputs' fields."""
        states = [state for state in map(self.get, inputs) if state is not None]
        if not states or len({(len(s[0]), s[1]) for s in states}) != 1:
            return
        size = tuple(max(values) for values in zip(*(s[0] for s in states), strict=True))
        padding = tuple(max(values) for values in zip(*(s[2] for s in states), strict=True))
        for tensor in outputs:
            if tensor.dim() - 2 == len(size):
                self.set(tensor, (size, states[0][1], padding))

    def on_call(self, call: _Call) -> ReceptiveField:
        import torch

        from . import formulas

        outputs = iter_tensors(call.output)
        if call.children and not formulas.has_formula(call.module):
            state = self.get(outputs[0]) if outputs else None
            if state is None:
                return _unavailable_field(
                    "the output is not produced by a chain of tracked layers "
                    "(branches merged by an untracked operation, or no spatial dimensions)"
                )
            return _field(state)
        inputs = iter_tensors(call.inputs)
        state = self.get(inputs[0]) if inputs else None
        type_name = type(call.module).__name__
        if state is None:
            return _unavailable_field(
                "the input does not come from the model input through tracked layers"
            )
        if isinstance(call.module, torch.nn.modules.conv._ConvTransposeNd):
            return _unavailable_field("transposed convolutions are not tracked")
        step = formulas.field_step(call.module, call.inputs, call.output)
        if step is None:
            return _unavailable_field(f"{type_name} does not keep spatial positions aligned")
        size, stride, padding = state
        if len(step.kernel) != len(size):
            return _unavailable_field(
                f"{type_name} works on {len(step.kernel)} spatial dimensions, "
                f"its input has {len(size)}"
            )
        new_state: _FieldState = (
            tuple(
                r + (k - 1) * d * j
                for r, k, d, j in zip(size, step.kernel, step.dilation, stride, strict=True)
            ),
            tuple(j * s for j, s in zip(stride, step.stride, strict=True)),
            tuple(p + q * j for p, q, j in zip(padding, step.padding, stride, strict=True)),
        )
        for tensor in outputs:
            if tensor.dim() - 2 == len(size):
                self.set(tensor, new_state)
        return _field(new_state)


def _field(state: _FieldState) -> ReceptiveField:
    return {
        "status": "complete",
        "size": list(state[0]),
        "stride": list(state[1]),
        "padding": list(state[2]),
        "reason": None,
    }


def _model_dtypes(model: Any, inputs: Iterable[Any]) -> list[Any]:
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    dtypes |= {t.dtype for t in inputs if t.is_floating_point()}
    return sorted(dtypes, key=dtype_name)


def _structure_operator_flops() -> OperatorFlops:
    return {
        "total": _metrics.unavailable(
            "FLOPs", "operators of one evaluation forward", "operator dispatch count", NOT_REQUESTED
        ),
        "counted": [],
        "excluded": [],
        "uncounted": [],
        "by_module": [],
    }


def _analyse(
    model: Any,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    mode: str,
) -> AnalysisReport:
    import torch

    _check_model(model)
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be 'full' or 'structure', got {mode!r}")
    positional, keywords, resolved_device = _make_inputs(
        model, input_shape, dtype, args, kwargs, device
    )
    flags_before = current_flags()
    recorder_modules = list(model.modules())
    training = {id(module): module.training for module in recorder_modules}
    full = mode == "full"
    diagnostics: dict[tuple[str, str], Diagnostic] = {}
    tracker = _FieldTracker()
    all_inputs = iter_tensors((positional, keywords))
    tracker.seed(iter_tensors(positional))

    def on_finish(call: _Call) -> None:
        call.input_metas = [describe(value) for value in call.inputs]
        call.output_meta = describe(call.output)
        if full:
            _estimate_call(call, diagnostics)
            call.receptive_field = tracker.on_call(call)
        # Nothing holds on to activations once the call is described.
        call.inputs = ()
        call.output = None

    recorder = _Recorder(model, on_finish)
    operator_pass = _operator_pass(recorder, tracker) if full else None
    try:
        model.eval()
        with torch.no_grad(), recorder:
            if operator_pass is None:
                model(*positional, **keywords)
            else:
                with operator_pass:
                    model(*positional, **keywords)
    finally:
        for module in recorder_modules:
            module.training = training[id(module)]
    return _build_report(
        model,
        mode,
        recorder.calls,
        positional,
        keywords,
        resolved_device,
        _model_dtypes(model, all_inputs),
        training[id(model)],
        flags_before,
        diagnostics,
        operator_pass.report() if operator_pass is not None else _structure_operator_flops(),
        operator_pass.diagnostics() if operator_pass is not None else [],
    )


def _build_report(
    model: Any,
    mode: str,
    calls: list[_Call],
    positional: tuple[Any, ...],
    keywords: dict[str, Any],
    device: Any,
    dtypes: list[Any],
    training: bool,
    flags: Any,
    module_diagnostics: dict[tuple[str, str], Diagnostic],
    operator_flops: OperatorFlops,
    operator_diagnostics: list[Diagnostic],
) -> AnalysisReport:
    counts, parameter_bytes, buffer_bytes, shared_names = _totals_storage(model)
    diagnostics: list[Diagnostic] = []
    if shared_names:
        diagnostics.append(
            {
                "code": "shared_tensors",
                "severity": "info",
                "metric": "parameters",
                "message": (
                    f"{len(shared_names)} tensor(s) are reachable under more than one name and "
                    "were counted once: " + "; ".join(shared_names)
                ),
            }
        )
    diagnostics.extend(module_diagnostics.values())
    diagnostics.extend(operator_diagnostics)
    roots = [call for call in calls if call.path == ""]
    if mode == "full" and roots:
        module_totals = {kind: _sum_metric(kind, roots) for kind in ("flops", "macs", "dmas")}
    else:
        module_totals = {kind: _not_requested(kind) for kind in ("flops", "macs", "dmas")}
    totals: AnalysisTotals = {
        "parameters": counts["parameters"],
        "trainable_parameters": counts["trainable_parameters"],
        "frozen_parameters": counts["frozen_parameters"],
        "buffers": counts["buffers"],
        "shared_tensors": counts["shared_tensors"],
        "parameter_bytes": parameter_bytes,
        "buffer_bytes": buffer_bytes,
        "module_flops": module_totals["flops"],
        "module_macs": module_totals["macs"],
        "module_dmas": module_totals["dmas"],
    }
    counted_modules: set[int] = set()
    layers = [_layer(call, counted_modules, mode) for call in calls]
    input_kwargs: list[NamedValueMeta] = [
        {"name": name, "value": describe(value)} for name, value in keywords.items()
    ]
    report: AnalysisReport = {
        "schema_version": 1,
        "kind": "analysis",
        "context": capture_context(
            device,
            dtypes,
            model_type=type(model).__name__,
            model_training=training,
            flags=flags,
        ),
        "diagnostics": diagnostics,
        "mode": "full" if mode == "full" else "structure",
        "inputs": [describe(value) for value in positional],
        "input_kwargs": input_kwargs,
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
        "module_macs": totals["module_macs"],
        "module_dmas": totals["module_dmas"],
        "operator_flops": report["operator_flops"]["total"],
    }
    incomplete: list[tuple[str, str]] = [
        (name, str(m["status"])) for name, m in requested.items() if m["status"] != "complete"
    ]
    if incomplete:
        raise IncompleteAnalysisError(report, incomplete)


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
    model's parameter dtype); or give ``args`` / ``kwargs``, forwarded unchanged (the very same
    objects). The forward runs once, in evaluation mode with gradients disabled; every module's
    training flag and the grad mode are restored afterwards, exceptions included.
    ``mode="structure"`` records shapes, parameters and storage only. ``strict=True`` raises
    :class:`~torchscan.IncompleteAnalysisError` (carrying the report) when a requested metric is
    partial or unavailable.
    """
    report = _analyse(model, input_shape, dtype, args, kwargs, device, mode)
    if strict:
        _strict_check(report)
    return report


def summary(
    model: Any,
    input_shape: Any = None,
    wrap_mode: str = "mid",
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
    ``max_depth`` hides layers nested deeper than that; ``file`` is where the table goes
    (standard output by default). The positional order is torchscan 0.2's, so its callers keep
    working: ``wrap_mode``, ``receptive_field`` and ``effective_rf_stats`` are accepted; the
    receptive field is always in the report. With ``strict=True`` the table is printed before
    :class:`~torchscan.IncompleteAnalysisError` is raised.
    """
    if wrap_mode not in _WRAP_MODES:
        raise InvalidArgumentError(f"wrap_mode must be one of {_WRAP_MODES}, got {wrap_mode!r}")
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0
    ):
        raise InvalidArgumentError(f"max_depth must be a non-negative integer, got {max_depth!r}")
    del receptive_field, effective_rf_stats
    report = _analyse(model, input_shape, dtype, args, kwargs, device, mode)
    from .validation import format_summary

    text = format_summary(report, max_depth=max_depth)
    print(text, end="", file=file if file is not None else sys.stdout)
    if strict:
        _strict_check(report)
    return report


_OPERATOR_SCOPE = "operators of one evaluation forward"


def _operator_pass(recorder: _Recorder, tracker: _FieldTracker) -> Any:
    """The operator FLOPs counter of the forward.

    It also gives each module call the operators it runs itself, and carries receptive fields
    through elementwise operators.
    """
    from .flops import OperatorFlopCounter

    class CrawlCounter(OperatorFlopCounter):
        def _record(
            self,
            name: str,
            kind: Any,
            flops: int,
            exclusion: Any,
            failure: str | None,
        ) -> None:
            super()._record(name, kind, flops, exclusion, failure)
            if recorder.stack:
                call = recorder.stack[-1]
                if kind == "counted":
                    call.own_flops += flops
                elif kind == "uncounted":
                    call.own_uncounted.add(name)

        def _after_operator(
            self, kind: Any, exclusion: Any, args: Any, kwargs: Any, out: Any
        ) -> None:
            if kind == "counted" and recorder.stack:
                tensors = iter_tensors((args, kwargs, out))
                recorder.stack[-1].own_dmas += sum(int(t.numel()) for t in tensors)
            elif exclusion == "elementwise":
                tracker.combine(iter_tensors((args, kwargs)), iter_tensors(out))

        def report(self) -> OperatorFlops:
            return self.operator_flops(scope=_OPERATOR_SCOPE)

    return CrawlCounter(module_paths=recorder.current_paths)
