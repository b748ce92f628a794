"""torchscan: inspect a PyTorch model's cost, measure a real workload, check a change.

Every function returns a plain, JSON-serializable report whose numbers carry their status,
method and scope. Reports follow schema version 1 (``docs/report-schema.md``).
"""

from __future__ import annotations

from . import _core
from . import process as process  # torchscan 0.2's submodule: torchscan.process.measure_peak_memory
from .crawl import crawl_module, summary
from .errors import (
    ConcurrentAnalysisError,
    DistributedMeasurementError,
    IncompleteAnalysisError,
    IncompleteMeasurementError,
    InvalidArgumentError,
    ModelInputError,
    ReportComparisonError,
    ReportMergeError,
    ReportValidationError,
    TorchscanError,
)
from .flops import OperatorFlopCounter, measure_flops
from .measure.experiment import Experiment, compare_workloads
from .measure.output_check import check_outputs
from .measure.workload import measure_workload
from .memory import TensorMemoryTracker, measure_peak_memory
from .reports import (
    AnalysisReport,
    BenchmarkComparison,
    BenchmarkReport,
    Context,
    Diagnostic,
    DistributedBenchmarkReport,
    FlopReport,
    Layer,
    LayerReport,
    MetricResult,
    OutputCheck,
    PeakMemoryReport,
    Report,
    ReportDiff,
)
from .reports.comparison import compare_benchmarks, compare_reports
from .reports.frames import to_frame
from .reports.merge import merge_rank_reports
from .reports.metrics import metric_result
from .reports.notebook import ReportView, show
from .reports.render import render_report
from .reports.validation import format_summary, validate_report

__version__: str = _core.__version__
#: The report schema version this build writes.
SCHEMA_VERSION: int = _core.SCHEMA_VERSION
#: Every report schema version this build reads.
READABLE_SCHEMA_VERSIONS: tuple[int, ...] = tuple(_core.READABLE_SCHEMA_VERSIONS)

__all__ = [
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "AnalysisReport",
    "BenchmarkComparison",
    "BenchmarkReport",
    "ConcurrentAnalysisError",
    "Context",
    "Diagnostic",
    "DistributedBenchmarkReport",
    "DistributedMeasurementError",
    "Experiment",
    "FlopReport",
    "IncompleteAnalysisError",
    "IncompleteMeasurementError",
    "InvalidArgumentError",
    "Layer",
    "LayerReport",
    "MetricResult",
    "ModelInputError",
    "OperatorFlopCounter",
    "OutputCheck",
    "PeakMemoryReport",
    "Report",
    "ReportComparisonError",
    "ReportDiff",
    "ReportMergeError",
    "ReportValidationError",
    "ReportView",
    "TensorMemoryTracker",
    "TorchscanError",
    "__version__",
    "check_outputs",
    "compare_benchmarks",
    "compare_reports",
    "compare_workloads",
    "crawl_module",
    "format_summary",
    "measure_flops",
    "measure_peak_memory",
    "measure_workload",
    "merge_rank_reports",
    "metric_result",
    "render_report",
    "show",
    "summary",
    "to_frame",
    "validate_report",
]
