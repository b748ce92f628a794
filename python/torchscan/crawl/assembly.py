"""One analysis, end to end: the forward, then the report.

The report is assembled from what the forward recorded (``_core.Assembler``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from .. import _claims, _core
from .._input_errors import explain_forward_error, explain_shape_error
from .._values import DEVICE_NAMES, DTYPE_NAMES, describe, dtype_name, iter_tensors
from ..context import capture_context, class_name, current_flags, qualified_type_name
from ..errors import IncompleteAnalysisError, InvalidArgumentError
from ..flops import FLOPS_METHOD, MODULE_PATH_SCOPE
from ..reports import (
    AnalysisReport,
    AnalysisTotals,
    Diagnostic,
    InputSource,
    Layer,
    MetricResult,
    ModelInputs,
    OperatorFlops,
)
from ..reports import metrics as _metrics
from .call_recorder import ModuleCallRecorder, all_named_modules
from .dispatch_recorder import crawl_counter, shape_elements
from .inputs import check_model, make_inputs
from .module_kinds import module_kind
from .storage import totals_storage

MODES = ("full", "structure")


NOT_REQUESTED = "not requested"


_MODULE_SCOPE = "module estimates of one evaluation forward (batch as given)"


_MODULE_METHOD = (
    "per-module formulas of leaf modules; modules with children add their children and the "
    "operators they run themselves"
)


@functools.cache
def _assembler() -> _core.Assembler:
    """Assembles every analysis's report from its records (made once per process)."""
    import torch

    from ..opflops.mode import COUNTED, DEFERRED, UNCOUNTED

    return _core.Assembler(
        kind_of=module_kind,
        iter_tensors=iter_tensors,
        describe=describe,
        dtype_names=DTYPE_NAMES,
        device_names=DEVICE_NAMES,
        module_scope=_MODULE_SCOPE,
        module_method=_MODULE_METHOD,
        path_scope=MODULE_PATH_SCOPE,
        path_method=FLOPS_METHOD,
        counted=COUNTED,
        deferred=DEFERRED,
        uncounted=UNCOUNTED,
        size_type=torch.Size,
        shape_elements=shape_elements,
    )


def _tensor_memory_pass(
    model: Any, positional: tuple[Any, ...], keywords: dict[str, Any], device: Any
) -> tuple[MetricResult, list[Diagnostic]]:
    """The measured tensor peak of a second evaluation forward (torchinfo estimates one instead).

    Runs under a :class:`~torchscan.memory.TensorMemoryTracker` whose baseline is what the
    forward reaches (the model's parameters and buffers, the inputs), with gradients off and the
    model in evaluation mode, as the analysed forward ran.
    """
    import torch

    from ..memory import TensorMemoryTracker

    def forward() -> Any:
        return model(*positional, **keywords)

    tracker = TensorMemoryTracker(device, roots=(forward,))
    with torch.no_grad(), tracker:
        result = forward()
        del result
    # On CPU the allocator's reserved bytes are unavailable by nature: not worth a diagnostic.
    diagnostics = [
        diagnostic
        for diagnostic in tracker.diagnostics()
        if not (tracker.device.type == "cpu" and diagnostic["code"] == "unsupported_on_device")
    ]
    return tracker.tensor_memory_peak(), diagnostics


def _device_names(model_devices: Iterable[Any], inputs: Iterable[Any]) -> list[str]:
    """The devices of the model's tensors and of the input tensors, by name, sorted."""
    return sorted({str(device) for device in (*model_devices, *(t.device for t in inputs))})


def _model_dtypes(
    computed: list[tuple[str, int]], parameter_dtypes: set[Any], inputs: Iterable[Any]
) -> list[str]:
    """The report's ``context.dtypes``: the dtypes the forward computed in first, then the others.

    ``computed`` holds the floating dtypes the module calls returned with the FLOPs of the
    operators those calls ran themselves (``Assembly.output_dtypes``): they come first, the
    largest FLOP share first, then by name, as ``measure_flops`` ranks the dtypes of the same
    forward. The parameters' and floating inputs' dtypes not among them follow, by name (under
    ``torch.autocast``, float32 weights computed in bfloat16).
    """
    ranked = [name for name, _ in sorted(computed, key=lambda found: (-found[1], found[0]))]
    others = {dtype_name(dtype) for dtype in parameter_dtypes}
    others.update(dtype_name(t.dtype) for t in inputs if t.is_floating_point())
    return ranked + sorted(others.difference(ranked))


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


def run_analysis(
    model: Any,
    input_shape: Any,
    dtype: Any,
    args: Any,
    kwargs: Any,
    device: Any,
    mode: str,
    caller: str,
    input_size: Any = None,
    tensor_memory: bool = False,
) -> AnalysisReport:
    """One analysis of ``model`` for ``caller`` (``crawl_module`` or ``summary``), its report.

    The arguments are those of :func:`~torchscan.crawl_module`, the inputs as given (see
    ``torchinfo_inputs``); the training flags are restored on the way out, exceptions included.
    """
    import torch

    check_model(model)
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be 'full' or 'structure', got {mode!r}")
    positional, keywords, resolved_device = make_inputs(
        model, input_shape, dtype, args, kwargs, device, input_size
    )
    generated = input_shape is not None or input_size is not None
    flags_before = current_flags()
    # One walk of the module tree serves the hooks, the training flags and the storage totals.
    named_modules = all_named_modules(model)
    full = mode == "full"
    recorder = ModuleCallRecorder(named_modules, [] if full else None)
    # Each module once, as the recorder keeps them (a module under several paths once).
    recorder_modules = recorder.modules
    training = [module.training for module in recorder_modules]
    all_inputs = iter_tensors((positional, keywords))
    counter = crawl_counter(recorder) if full else None
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
            memory = (
                _tensor_memory_pass(model, positional, keywords, resolved_device)
                if tensor_memory
                else None
            )
        except Exception as error:
            # Only a generated float input reaching an index operation, an argument the
            # forward needs and a generated shape the model refused are explained; any other
            # exception propagates as it is.
            explained: Exception | None = (
                explain_forward_error(error, model, positional, keywords, input_shape, caller)
                if input_size is None
                else explain_forward_error(
                    error, model, positional, keywords, input_size, caller, "input_size"
                )
            )
            if explained is None and generated:
                explained = explain_shape_error(
                    error, model, named_modules, positional, input_shape, input_size, caller
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
    walked = _core.walk_storage(named_modules)
    assembly = _assembler().assemble(
        core,
        walked.own,
        log=recorder.log,
        seeds=[(id(tensor), tensor.dim()) for tensor in iter_tensors(positional)],
    )
    if counter is not None:
        counter._apply_formulas(assembly.tallies)
        operator_flops = counter.report(assembly.by_module, class_name(model))
        operator_diagnostics = counter.diagnostics()
    else:
        operator_flops, operator_diagnostics = _structure_operator_flops(), []
    if memory is not None:
        operator_diagnostics.extend(memory[1])
    report = _build_report(
        model,
        full,
        named_modules,
        walked,
        assembly.layers,
        assembly.module_totals,
        "generated" if generated else "provided",
        positional,
        keywords,
        resolved_device,
        all_inputs,
        training[0] if training else False,
        flags_before,
        assembly.diagnostics,
        operator_flops,
        operator_diagnostics,
        assembly.output_dtypes,
    )
    if memory is not None:
        report["totals"]["tensor_memory_peak"] = memory[0]
    return report


def _build_report(
    model: Any,
    full: bool,
    named_modules: list[tuple[str, Any]],
    walked: _core.StorageWalk,
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
    computed_dtypes: list[tuple[str, int]],
) -> AnalysisReport:
    storage, shared_names = totals_storage(walked)
    dtypes = _model_dtypes(computed_dtypes, set(walked.dtypes), inputs)
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
        "shared_tensors": len(walked.ties),
        "module_flops": module_totals["module_flops"],
        "operator_flops": operator_flops["total"].copy(),
        "macs": module_totals["macs"],
        "dmas": module_totals["dmas"],
        "input_bytes": _input_bytes(inputs),
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
            devices=_device_names(walked.devices, inputs),
            ranked=True,
        ),
        "diagnostics": diagnostics,
        "mode": "full" if full else "structure",
        "inputs": model_inputs,
        "totals": totals,
        "layers": layers,
        "operator_flops": operator_flops,
    }
    return report


_INPUT_SCOPE = (
    "tensors among the forward's inputs, positional and keyword, each distinct tensor once"
)


def _input_bytes(inputs: list[Any]) -> MetricResult:
    """Bytes of the distinct input tensors: elements times element size (torchinfo's Input size)."""
    distinct = {id(tensor): tensor for tensor in inputs}.values()
    total = sum(tensor.numel() * tensor.element_size() for tensor in distinct)
    return _metrics.complete(total, "B", _INPUT_SCOPE, "elements x element size of each tensor")


def strict_check(report: AnalysisReport) -> None:
    """Raise :class:`~torchscan.IncompleteAnalysisError` for ``strict=True``.

    Raised when a requested metric of a full analysis is partial or unavailable.
    """
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
def collection_paused() -> Iterator[None]:
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
