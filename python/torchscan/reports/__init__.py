"""Reports: their types (here), and what is done with a finished report.

The TypedDicts below mirror the Rust types of report schema version 1 and are checked against
the schema. Reports are plain JSON-serializable dicts; these types only describe them for type
checkers. Every number is in SI base units (``s``, ``B``, ``FLOPs``, ...); renderers scale.

The submodules work on finished reports through the compiled core, never on torch: ``metrics``
(building ``MetricResult`` values), ``validation`` (reading, checking and the text summary),
``render`` (the HTML page), ``comparison`` (diffs of analyses, comparisons of benchmarks),
``merge`` (rank reports into a job's report), ``frames`` (pandas tables) and ``notebook`` (the
notebook view). Their public names are exported by ``torchscan`` itself.
"""

from __future__ import annotations

import sys
from typing import Literal, TypedDict, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - exercised on Python 3.10 only
    from typing_extensions import NotRequired

__all__ = [
    "AnalysisReport",
    "AnalysisTotals",
    "BenchmarkComparison",
    "BenchmarkComparisonReport",
    "BenchmarkMetrics",
    "BenchmarkReport",
    "CallArguments",
    "CheckSummary",
    "ComparedSide",
    "ComparisonSettings",
    "Context",
    "CountedOperator",
    "DeclaredPeak",
    "Diagnostic",
    "DiffSide",
    "DistributedBenchmarkReport",
    "DistributedContext",
    "DistributedJob",
    "DistributedMetrics",
    "ExcludedOperator",
    "ExclusionClass",
    "FieldChange",
    "Flags",
    "FlopReport",
    "HardwarePeak",
    "IgnoredOperator",
    "JobBlock",
    "Layer",
    "LayerBuffers",
    "LayerChange",
    "LayerChanges",
    "LayerMetricDelta",
    "LayerMetrics",
    "LayerParameters",
    "LayerRef",
    "LayerReport",
    "LeafCheck",
    "MeasuredPeak",
    "MetricDelta",
    "MetricResult",
    "ModelInputs",
    "ModuleOperatorFlops",
    "NamedValueMeta",
    "OperatorFlops",
    "OtherThreadCalls",
    "OutputCheck",
    "OutputCheckReport",
    "ParameterTotal",
    "PeakMemoryReport",
    "PeakOrigin",
    "PeakTiming",
    "ProcessGroupOrigin",
    "ProfiledOperator",
    "ProfilerPass",
    "ProfilerTrace",
    "RankSummary",
    "ReceptiveField",
    "Report",
    "ReportDiff",
    "ReportDiffReport",
    "Straggler",
    "StructureDifference",
    "TensorMeta",
    "TimingEvidence",
    "TimingSettings",
    "TotalDelta",
    "UncountedOperator",
    "ValueMeta",
    "Workload",
]

MetricStatus = Literal["complete", "partial", "unavailable"]
InputSource = Literal["generated", "provided"]
Severity = Literal["info", "warning", "error"]
DiagnosticCode = Literal[
    "uncounted_operator",
    "module_without_formula",
    "receptive_field_unknown",
    "shared_tensors",
    "unsupported_on_device",
    "timing_noise",
    "high_timing_noise",
    "noisy_machine",
    "noisy_peak",
    "few_blocks",
    "compiled_callable",
    "workload_not_importable",
    "child_process_failed",
    "child_process_timeout",
    "profiler_failed",
    "context_mismatch",
    "output_check_failed",
    "unchecked",
    "output_metadata_mismatch",
    "output_values_mismatch",
    "structure_changed",
    "other_threads",
    "precision_changed",
    "note",
]


class MetricResult(TypedDict):
    """One number with its status, unit, scope and method."""

    status: MetricStatus
    value: float | None
    known_value: float | None
    unit: str
    scope: str
    method: str
    reason: str | None


class Diagnostic(TypedDict):
    """A finding: ``code`` for programs, ``message`` for people."""

    code: DiagnosticCode
    severity: Severity
    metric: str | None
    message: str
    path: NotRequired[str | None]
    operator: NotRequired[str | None]


class Flags(TypedDict):
    """PyTorch and backend settings that change numbers."""

    grad_enabled: bool | None
    inference_mode: bool | None
    tf32_matmul: bool | None
    tf32_cudnn: bool | None
    cudnn_benchmark: bool | None
    cudnn_deterministic: bool | None
    float32_matmul_precision: str | None
    deterministic_algorithms: bool | None
    autocast: NotRequired[dict[str, str] | None]


class Context(TypedDict):
    """Where and with what a report was made."""

    torchscan_version: str
    torch_version: str | None
    python_version: str | None
    platform: str | None
    cpu_model: str | None
    device: str | None
    device_name: str | None
    torch_threads: int | None
    torch_interop_threads: int | None
    thread_env: dict[str, str]
    flags: Flags
    dtypes: list[str]
    model_type: str | None
    training_before: bool | None
    execution_mode: str | None
    devices: list[str]
    distributed: NotRequired[DistributedContext | None]


ProcessGroupOrigin = Literal["existing", "created"]


class DistributedContext(TypedDict):
    """A rank's place in a ``torch.distributed`` job (``context.distributed``).

    ``process_group`` is ``existing`` when the caller had initialised ``torch.distributed``, and
    ``created`` when torchscan initialised a group from ``RANK``/``WORLD_SIZE`` for its own
    barriers and destroyed it afterwards.
    """

    rank: int
    local_rank: int
    world_size: int
    backend: str
    host: str
    process_group: ProcessGroupOrigin
    measurement_id: str


class TensorMeta(TypedDict):
    """Tensor metadata, never values."""

    shape: list[int]
    dtype: str
    device: str
    requires_grad: bool


class TensorValueMeta(TensorMeta):
    """A tensor in a value tree."""

    kind: Literal["tensor"]


class TupleValueMeta(TypedDict):
    """A tuple in a value tree."""

    kind: Literal["tuple"]
    items: list[ValueMeta]


class ListValueMeta(TypedDict):
    """A list in a value tree."""

    kind: Literal["list"]
    items: list[ValueMeta]


class NamedValueMeta(TypedDict):
    """A field name with its value's metadata."""

    name: str
    value: ValueMeta


class MappingItemMeta(TypedDict):
    """One item of a mapping: its key (only an integer or an identifier) and its value."""

    key: NotRequired[int | str | None]
    key_type: str
    value: ValueMeta


class MappingValueMeta(TypedDict):
    """A mapping in a value tree (torchscan 0.2's layout)."""

    kind: Literal["mapping"]
    type: str
    items: list[MappingItemMeta]


class DataclassValueMeta(TypedDict):
    """A dataclass instance in a value tree."""

    kind: Literal["dataclass"]
    type: str
    fields: list[NamedValueMeta]


class NamedTupleValueMeta(TypedDict):
    """A named tuple in a value tree."""

    kind: Literal["named_tuple"]
    type: str
    fields: list[NamedValueMeta]


class NoneValueMeta(TypedDict):
    """``None`` in a value tree."""

    kind: Literal["none"]


class ScalarValueMeta(TypedDict):
    """A Python scalar in a value tree: its type only."""

    kind: Literal["scalar"]
    type: str


class ObjectValueMeta(TypedDict):
    """Any other object in a value tree: its type name only."""

    kind: Literal["object"]
    type: str


ValueMeta = Union[
    TensorValueMeta,
    TupleValueMeta,
    ListValueMeta,
    MappingValueMeta,
    DataclassValueMeta,
    NamedTupleValueMeta,
    NoneValueMeta,
    ScalarValueMeta,
    ObjectValueMeta,
]


class CountedOperator(TypedDict):
    """An operator with a FLOP formula."""

    operator: str
    calls: int
    flops: float


#: The classes of operators excluded by convention (see ``opflops.classify``).
ExclusionClass = Literal[
    "elementwise",
    "normalization",
    "pooling",
    "reduction",
    "data_movement",
    "allocation",
    "no_arithmetic",
]


# An operator excluded by convention. The JSON field is named ``class``, a Python keyword, so this
# TypedDict uses the functional syntax.
ExcludedOperator = TypedDict(
    "ExcludedOperator",
    {
        "operator": str,
        "calls": int,
        "class": ExclusionClass,
    },
)


class UncountedOperator(TypedDict):
    """An operator without a formula."""

    operator: str
    calls: int


class ModuleOperatorFlops(TypedDict):
    """Operator FLOPs attributed to one module."""

    path: str
    flops: MetricResult


class OtherThreadCalls(TypedDict):
    """Operator calls that ran on other threads while a pass counted its own thread's."""

    calls: int
    threads: int


class OperatorFlops(TypedDict):
    """Every executed operator, each in one class, and the total."""

    total: MetricResult
    counted: list[CountedOperator]
    excluded: list[ExcludedOperator]
    uncounted: list[UncountedOperator]
    modules: list[ModuleOperatorFlops]
    by_operator: dict[str, float]
    by_module: dict[str, float]
    ignored_operators: dict[str, IgnoredOperator]
    other_threads: NotRequired[OtherThreadCalls | None]


class AnalysisTotals(TypedDict):
    """Model-wide totals; storage is not peak memory.

    The names and layout of torchscan 0.2's totals: every total is a ``MetricResult`` except
    ``shared_tensors``; ``operator_flops`` repeats ``operator_flops["total"]`` of the report.
    """

    parameters: MetricResult
    trainable_parameters: MetricResult
    frozen_parameters: MetricResult
    parameter_bytes: MetricResult
    buffer_elements: MetricResult
    buffer_bytes: MetricResult
    shared_tensors: int
    module_flops: MetricResult
    operator_flops: MetricResult
    macs: MetricResult
    dmas: MetricResult
    #: Bytes of the tensors among the forward's inputs, each distinct tensor once (torchinfo's
    #: "Input size"); absent in reports written before it was recorded.
    input_bytes: NotRequired[MetricResult | None]
    #: PyTorch's tensor memory peak of a second evaluation forward, measured when asked for
    #: (``tensor_memory=True``); absent otherwise.
    tensor_memory_peak: NotRequired[MetricResult | None]


class ReceptiveField(TypedDict):
    """Receptive field, effective stride and padding per spatial dimension."""

    status: MetricStatus
    size: list[float] | None
    stride: list[float] | None
    padding: list[float] | None
    reason: str | None


class CallArguments(TypedDict):
    """What a module call received: positional and keyword arguments' metadata."""

    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


class ModelInputs(TypedDict):
    """The model's inputs: where they came from and their metadata."""

    source: InputSource
    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


class ParameterTotal(TypedDict):
    """The parameters under a module with children, each storage element once.

    Its own and every submodule's, called in the forward or not; the root's are the model's
    totals.
    """

    trainable: int
    frozen: int
    bytes: int


class LayerParameters(TypedDict):
    """A layer's own parameters, each counted at the first layer that holds it.

    ``total`` (a module with children only) gives the parameters under the module.
    """

    trainable: int
    frozen: int
    bytes: int
    shared: bool
    total: NotRequired[ParameterTotal | None]


class LayerBuffers(TypedDict):
    """A layer's own buffers, each counted at the first layer that holds it."""

    elements: int
    bytes: int
    shared: bool


class LayerMetrics(TypedDict):
    """A layer's calls (always 1), module estimates, and receptive field as single numbers."""

    calls: MetricResult
    module_flops: MetricResult
    macs: MetricResult
    dmas: MetricResult
    receptive_field: MetricResult
    effective_stride: MetricResult
    effective_padding: MetricResult


class Layer(TypedDict):
    """One call of one module, in torchscan 0.2's layout."""

    path: str
    call_index: int
    name: str
    depth: int
    type: str
    input: CallArguments
    output: ValueMeta
    parameters: LayerParameters
    buffers: LayerBuffers
    metrics: LayerMetrics
    receptive_field: ReceptiveField
    #: The kernel size of a convolution or pooling module, as the module holds it; absent for
    #: other modules and in reports written before it was recorded.
    kernel_size: NotRequired[list[int] | None]


#: torchscan 0.2's name of :class:`Layer`.
LayerReport = Layer


class AnalysisReport(TypedDict):
    """The report of ``crawl_module`` and ``summary``."""

    schema_version: Literal[1]
    kind: Literal["analysis"]
    context: Context
    diagnostics: list[Diagnostic]
    mode: Literal["full", "structure"]
    inputs: ModelInputs
    totals: AnalysisTotals
    layers: list[Layer]
    operator_flops: OperatorFlops


class IgnoredOperator(TypedDict):
    """An operator excluded by convention, in torchscan 0.2's ``ignored_operators`` layout."""

    calls: int
    reason: str


class FlopReport(TypedDict):
    """The report of ``measure_flops``; ``total`` repeats ``operator_flops["total"]``."""

    schema_version: Literal[1]
    kind: Literal["flops"]
    context: Context
    diagnostics: list[Diagnostic]
    callable: str | None
    total: MetricResult
    operator_flops: OperatorFlops
    by_operator: dict[str, float]
    by_module: dict[str, float]
    ignored_operators: dict[str, IgnoredOperator]


PassName = Literal[
    "latency", "operator_flops", "tensor_memory", "process_rss", "profiler", "hardware_peak"
]


class Workload(TypedDict):
    """What was measured."""

    name: str | None
    work_units: float
    work_unit: str
    inputs: list[ValueMeta]


class TimingSettings(TypedDict):
    """The timing budget, as used."""

    passes: list[PassName]
    min_time_s: float
    max_time_s: float
    min_blocks: int
    warmup_time_s: float
    max_timer_overhead_ratio: float


class TimingEvidence(TypedDict):
    """Raw timing evidence.

    ``block_starts_s`` (each block's start in seconds since the first block's start, one per
    block duration) is written by this version; reports written before it lack it, and
    ``None`` reads as absent.
    """

    first_call_s: float
    warmup_calls: int
    calls_per_block: int
    block_durations_s: list[float]
    block_starts_s: NotRequired[list[float] | None]
    timer_overhead_s: float
    barrier_waits_s: NotRequired[list[float] | None]
    collectives_per_call: NotRequired[int | None]


class BenchmarkMetrics(TypedDict):
    """The headline metrics; memory scopes are never summed."""

    first_call: MetricResult
    latency: MetricResult
    latency_iqr: MetricResult
    throughput: MetricResult
    operator_flops: MetricResult
    tensor_memory_peak: MetricResult
    allocator_reserved_peak: MetricResult
    process_rss_peak: MetricResult
    process_rss_workload_peak: MetricResult
    process_rss_baseline: MetricResult
    machine_other_cpu_ratio: NotRequired[MetricResult | None]
    cpu_steal_ratio: NotRequired[MetricResult | None]
    involuntary_context_switches: NotRequired[MetricResult | None]
    cpu_frequency: NotRequired[MetricResult | None]
    rank_process_rss_peak: NotRequired[MetricResult | None]
    achieved_flop_rate: NotRequired[MetricResult | None]
    operator_bytes: NotRequired[MetricResult | None]
    arithmetic_intensity: NotRequired[MetricResult | None]
    flop_utilization: NotRequired[MetricResult | None]
    bandwidth_utilization: NotRequired[MetricResult | None]


PeakOrigin = Literal["declared", "measured"]


class PeakTiming(TypedDict):
    """The timed blocks of one measurement of the ``hardware_peak`` pass."""

    calls_per_block: int
    block_durations_s: list[float]


class DeclaredPeak(TypedDict):
    """A peak declared by the caller (``peak=``), with its source."""

    source: str
    flop_rate: MetricResult
    bandwidth: MetricResult


class MeasuredPeak(TypedDict):
    """What the ``hardware_peak`` pass measured: a square matmul and a large copy."""

    dtype: str
    matmul_size: int
    matmul_timing: PeakTiming | None
    copy_bytes: int
    copy_timing: PeakTiming | None
    flop_rate: MetricResult
    bandwidth: MetricResult
    theoretical_flop_rate: MetricResult
    theoretical_bandwidth: MetricResult


class HardwarePeak(TypedDict):
    """The peak rates utilization divides by, each with its origin, and both peaks recorded."""

    flop_rate: MetricResult
    flop_rate_origin: PeakOrigin | None
    bandwidth: MetricResult
    bandwidth_origin: PeakOrigin | None
    declared: DeclaredPeak | None
    measured: MeasuredPeak | None


class ProfiledOperator(TypedDict):
    """One operator of the profiler pass."""

    operator: str
    calls: int
    self_time_s: float
    total_time_s: float


class ProfilerPass(TypedDict):
    """The separate, instrumented profiler pass.

    ``calls`` is the number of calls profiled: ``requested_calls`` (``profiler_calls``), or fewer
    when the next call would have passed the time budget (at least one call always runs).
    Reports written before ``requested_calls`` was recorded lack it. ``trace`` is present only
    when the pass's trace was written to a file (``profiler_trace``).
    """

    status: MetricStatus
    reason: str | None
    method: str
    scope: str
    calls: int | None
    requested_calls: NotRequired[int | None]
    top_operators: list[ProfiledOperator]
    trace: NotRequired[ProfilerTrace | None]


TraceFormat = Literal["chrome_trace", "chrome_trace_gzip"]


class ProfilerTrace(TypedDict):
    """The profiler pass's trace, kept in the file ``profiler_trace`` named.

    ``path`` is the file as the caller named it (a relative path is relative to the working
    directory of the measuring process); ``format`` is ``chrome_trace`` (Chrome trace event
    JSON, which Perfetto and ``chrome://tracing`` open) or ``chrome_trace_gzip`` (the same,
    gzip-compressed, for a path ending in ``.gz``); ``scope`` says which calls it covers and
    ``calls`` how many (the pass's ``calls``, or fewer when a profiler session could not be
    exported); ``instrumented`` is always ``True`` (its times include the profiler's overhead);
    ``bytes`` is the size written.
    """

    path: str
    format: TraceFormat
    scope: str
    calls: int
    instrumented: bool
    bytes: int


class BenchmarkReport(TypedDict):
    """The report of ``measure_workload``."""

    schema_version: Literal[1]
    kind: Literal["benchmark"]
    context: Context
    diagnostics: list[Diagnostic]
    workload: Workload
    settings: TimingSettings
    timing: TimingEvidence | None
    metrics: BenchmarkMetrics
    operator_flops: OperatorFlops | None
    profiler: ProfilerPass
    hardware_peak: NotRequired[HardwarePeak | None]


class PeakMemoryReport(TypedDict):
    """The report of ``measure_peak_memory``."""

    schema_version: Literal[1]
    kind: Literal["peak_memory"]
    context: Context
    diagnostics: list[Diagnostic]
    callable: str | None
    baseline: MetricResult
    tensor_memory_peak: MetricResult
    allocator_reserved_peak: MetricResult


class StructureDifference(TypedDict):
    """Where two outputs' structures differ."""

    path: str
    baseline: str
    candidate: str


class LeafCheck(TypedDict):
    """The comparison of one tensor leaf."""

    path: str
    passed: bool
    baseline: TensorMeta
    candidate: TensorMeta
    elements: int
    mismatched_elements: int
    max_abs_error: float | None
    max_rel_error: float | None


class OutputCheckReport(TypedDict):
    """The report of ``check_outputs``.

    ``check_dtype`` is absent (or null) in reports written before it was recorded, which checked
    dtypes.
    """

    schema_version: Literal[1]
    kind: Literal["output_check"]
    context: Context
    diagnostics: list[Diagnostic]
    passed: bool
    method: str
    rtol: float
    atol: float
    equal_nan: bool
    check_dtype: NotRequired[bool | None]
    structure_matches: bool
    structure_differences: list[StructureDifference]
    leaves: list[LeafCheck]


Verdict = Literal["faster", "slower", "no_detectable_change", "inconclusive", "withheld"]


class CheckSummary(TypedDict):
    """The output check a comparison rests on."""

    status: Literal["passed", "failed", "unchecked"]
    method: str | None
    rtol: float | None
    atol: float | None
    failed_leaves: int


class MetricDelta(TypedDict):
    """The change of one metric from baseline to candidate.

    ``reason`` says why the delta is null, or, for a latency or throughput delta that is given,
    why its verdict is weaker than its interval alone would make it. ``method`` (latency and
    throughput only) names how the interval was computed and what it assumes; reports written
    before it was recorded lack it.
    """

    metric: str
    unit: str
    status: Literal["complete", "partial", "unavailable", "withheld"]
    baseline: float | None
    candidate: float | None
    delta: float | None
    ratio: float | None
    ratio_ci_low: float | None
    ratio_ci_high: float | None
    verdict: Verdict | None
    reason: str | None
    method: NotRequired[str | None]


class ComparisonSettings(TypedDict):
    """How intervals and verdicts were computed."""

    confidence_level: float
    bootstrap_resamples: int
    seed: int
    min_effect: float


class ComparedSide(TypedDict):
    """One side of a comparison."""

    workload: str | None
    context: Context


class BenchmarkComparisonReport(TypedDict):
    """The report of ``compare_benchmarks``."""

    schema_version: Literal[1]
    kind: Literal["benchmark_comparison"]
    context: Context
    diagnostics: list[Diagnostic]
    check: CheckSummary
    baseline: ComparedSide
    candidate: ComparedSide
    work_unit: str
    settings: ComparisonSettings
    verdict: Verdict
    deltas: list[MetricDelta]


class TotalDelta(TypedDict):
    """The change of one model-wide total; its name is its key in ``totals``."""

    unit: str
    status: MetricStatus
    before: MetricResult
    after: MetricResult
    delta: float | None
    reason: str | None


class LayerRef(TypedDict):
    """A layer named by its identity, with its metrics."""

    path: str
    call_index: int
    type_name: str
    metrics: NotRequired[LayerMetrics | None]


class LayerMetricDelta(TypedDict):
    """The change of one layer metric: both sides and, when both are complete, the delta."""

    status: MetricStatus
    delta: float | None
    before: MetricResult
    after: MetricResult


class FieldChange(TypedDict):
    """One changed field of a layer."""

    field: str
    before: str
    after: str


class LayerChange(TypedDict):
    """A layer whose fields changed."""

    path: str
    call_index: int
    type_name: str
    changes: list[FieldChange]
    metrics: dict[str, LayerMetricDelta]


class LayerChanges(TypedDict):
    """The layers of a diff, matched by module path and call index."""

    added: list[LayerRef]
    removed: list[LayerRef]
    changed: list[LayerChange]


class DiffSide(TypedDict):
    """One side of a diff."""

    model_type: str | None
    context: Context


class ReportDiffReport(TypedDict):
    """The report of ``compare_reports``."""

    schema_version: Literal[1]
    kind: Literal["report_diff"]
    context: Context
    diagnostics: list[Diagnostic]
    before: DiffSide
    after: DiffSide
    totals: dict[str, TotalDelta]
    layers: LayerChanges


class DistributedJob(TypedDict):
    """The job the ranks of a ``distributed_benchmark`` formed."""

    world_size: int
    backend: str
    hosts: list[str]
    work_units_per_call: float
    collectives_per_call: NotRequired[int | None]


class JobBlock(TypedDict):
    """One aligned block across the ranks: the slowest rank's time and who it was."""

    step_time_s: float
    slowest_rank: int
    spread_s: float


class DistributedMetrics(TypedDict):
    """The headline metrics of a distributed job."""

    step_time: MetricResult
    step_time_iqr: MetricResult
    throughput: MetricResult
    first_call: MetricResult
    straggler_cost: MetricResult


class Straggler(TypedDict):
    """The rank the others waited for (``None`` when no rank was the slowest in most blocks)."""

    rank: int | None
    slowest_blocks: list[int]
    cost_s: float | None
    cost_ratio: float | None
    method: str
    reason: str | None


class RankSummary(TypedDict):
    """One rank's row of a ``distributed_benchmark``."""

    rank: int
    local_rank: int
    host: str
    device: str | None
    latency: MetricResult
    barrier_wait_s: float
    tensor_memory_peak: MetricResult
    allocator_reserved_peak: MetricResult
    process_rss_peak: MetricResult


class DistributedBenchmarkReport(TypedDict):
    """The report of ``merge_rank_reports`` (and of ``measure_workload(gather=True)`` on rank 0)."""

    schema_version: Literal[1]
    kind: Literal["distributed_benchmark"]
    context: Context
    diagnostics: list[Diagnostic]
    workload: Workload
    settings: TimingSettings
    job: DistributedJob
    timing: TimingEvidence
    blocks: list[JobBlock]
    metrics: DistributedMetrics
    straggler: Straggler
    ranks: list[RankSummary]
    rank_reports: list[BenchmarkReport]


#: The names the product documentation uses for three report kinds.
OutputCheck = OutputCheckReport
BenchmarkComparison = BenchmarkComparisonReport
ReportDiff = ReportDiffReport

Report = Union[
    AnalysisReport,
    FlopReport,
    BenchmarkReport,
    PeakMemoryReport,
    OutputCheckReport,
    BenchmarkComparisonReport,
    ReportDiffReport,
    DistributedBenchmarkReport,
]
