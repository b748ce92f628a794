//! Diagnostics: their severity, their code and the message a report carries with them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How much a diagnostic matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Context a reader should know; the numbers stand.
    Info,
    /// The numbers stand but need care (noise, partial coverage, mismatched settings).
    Warning,
    /// Something requested could not be measured or a check failed.
    Error,
}

impl Severity {
    /// The lowercase name used in JSON and in the text renderer.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The closed set of diagnostic codes. Codes are for programs; messages are for people.
///
/// `docs/report-schema.md` documents every code; adding one is a schema change.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCode {
    /// An executed operator has no FLOP formula; the operator FLOPs total is partial.
    UncountedOperator,
    /// A module has no estimate formula; module estimates are partial.
    ModuleWithoutFormula,
    /// Receptive field, stride or padding cannot be known along this path (branches, unknown layers).
    ReceptiveFieldUnknown,
    /// Parameters or buffers are shared (one tensor under several names, or views that overlap
    /// in one storage) and each storage element was counted once.
    SharedTensors,
    /// A requested metric is unavailable on the measured device.
    UnsupportedOnDevice,
    /// Timing IQR/median reached 0.10.
    TimingNoise,
    /// Timing IQR/median reached 0.25: latency differences below that are not meaningful.
    HighTimingNoise,
    /// Other processes, the hypervisor or preemption competed with the timed phase beyond a
    /// documented threshold; the message names the noise metrics that passed it.
    NoisyMachine,
    /// The `hardware_peak` pass's matmul rate or copy bandwidth may read below what the device
    /// attains: other processes, steal or preemption past the `noisy_machine` thresholds while
    /// it was timed, blocks that spread, or a matmul slower than its size search found; the
    /// message says which. A utilization divided by it then reads high.
    NoisyPeak,
    /// Fewer timed blocks than requested could be run within the time budget.
    FewBlocks,
    /// The callable was compiled with `torch.compile`; dispatch-mode passes ran last.
    CompiledCallable,
    /// The workload could not be imported by the child process.
    WorkloadNotImportable,
    /// The child process for process RSS crashed or exited with an error.
    ChildProcessFailed,
    /// The child process for process RSS exceeded its time limit.
    ChildProcessTimeout,
    /// The profiler pass failed or was cut short, or its trace was not written whole.
    ProfilerFailed,
    /// Compared reports differ in device, threads, dtypes, versions or flags.
    ContextMismatch,
    /// The output check failed, so comparison deltas are withheld.
    OutputCheckFailed,
    /// No output check was given, so the comparison is unchecked.
    Unchecked,
    /// An output leaf differs in shape, dtype or device.
    OutputMetadataMismatch,
    /// An output leaf's values differ beyond the tolerances; the message names the leaf and the
    /// likely way out.
    OutputValuesMismatch,
    /// The model's structure differs between the compared reports.
    StructureChanged,
    /// Operators ran on other threads while a dispatch-mode pass watched its own thread: they
    /// are not counted, and the pass's value is partial.
    OtherThreads,
    /// Compared benchmarks computed in different floating-point dtypes (`float32 -> bfloat16`):
    /// often the change under test, named so that it is never mistaken for another.
    PrecisionChanged,
    /// Anything else worth a reader's attention, explained in the message.
    Note,
}

/// A finding about a report, for programs (`code`) and for people (`message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diagnostic {
    /// One of the documented codes.
    pub code: DiagnosticCode,
    /// `info`, `warning` or `error`.
    pub severity: Severity,
    /// The metric the diagnostic concerns, when it concerns one.
    #[serde(default)]
    pub metric: Option<String>,
    /// A sentence for people.
    pub message: String,
    /// The module path concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The operator concerned, when there is one (for example `aten::my_op`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
}
