//! The `benchmark` report of `measure_workload`: timing evidence and every requested pass.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, MetricResult, MetricStatus, SchemaVersionV1, ValueMeta};
use super::flops::OperatorFlops;

kind_tag!(BenchmarkKind, "benchmark");

/// A pass `measure_workload` can run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PassName {
    /// First call, warmed latency and throughput.
    Latency,
    /// Operator FLOPs under a dispatch mode.
    OperatorFlops,
    /// PyTorch-tracked tensor memory (CPU storage tracker, or accelerator allocator peaks).
    TensorMemory,
    /// Peak resident set size of a fresh child process.
    ProcessRss,
    /// A separate profiler pass.
    Profiler,
    /// The attainable dense matmul rate and large-copy bandwidth of the device, measured after
    /// the other passes (after 0.3.0).
    HardwarePeak,
}

/// The workload that was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// The callable's qualified name, when it has one.
    pub name: Option<String>,
    /// Work units completed by one call (positive).
    pub work_units: f64,
    /// The name of a work unit, for example `samples`.
    pub work_unit: String,
    /// Metadata of the declared inputs; never their values.
    pub inputs: Vec<ValueMeta>,
}

/// The timing budget, as used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimingSettings {
    /// Passes that were requested.
    pub passes: Vec<PassName>,
    /// Blocks continue at least this long, in seconds.
    pub min_time_s: f64,
    /// Blocks stop after this long, in seconds, even below `min_blocks`.
    pub max_time_s: f64,
    /// Blocks continue until at least this many were timed.
    pub min_blocks: u64,
    /// Warm-up time before the first block, in seconds.
    pub warmup_time_s: f64,
    /// Calls per block are calibrated so timer overhead stays below this fraction of a block.
    pub max_timer_overhead_ratio: f64,
}

/// Raw timing evidence: every statistic of the report can be recomputed from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimingEvidence {
    /// Duration of the first call, timed alone, in seconds.
    pub first_call_s: f64,
    /// Calls made during warm-up.
    pub warmup_calls: u64,
    /// Calls in each timed block (at least 1).
    pub calls_per_block: u64,
    /// Duration of each timed block, in seconds, in the order they ran (each positive).
    pub block_durations_s: Vec<f64>,
    /// Start of each timed block, in seconds since the start of the first (so the first is 0),
    /// read from the clock that times the blocks; one per entry of `block_durations_s`, in the
    /// same order. A block starts no earlier than the previous one ended. Absent in reports
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_starts_s: Option<Vec<f64>>,
    /// Measured overhead of one timer read, in seconds.
    pub timer_overhead_s: f64,
    /// In a distributed job (`context.distributed`): the time this rank waited at the barrier
    /// before each block, in seconds, one per entry of `block_durations_s`; outside the timed
    /// intervals. The rank that arrived last waits least. Absent outside a distributed job
    /// (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier_waits_s: Option<Vec<f64>>,
    /// In a distributed job: the collectives that one call of the workload issued on every
    /// process group this rank belongs to (counted by the groups' sequence numbers over the
    /// warm-up calls, rounded up). Absent outside a distributed job, and where a backend does
    /// not count them (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives_per_call: Option<u64>,
}

/// The headline metrics. Memory scopes are separate and never summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkMetrics {
    /// First call, timed alone (unit `s`); includes all lazy work.
    pub first_call: MetricResult,
    /// Median of per-call block means (unit `s`).
    pub latency: MetricResult,
    /// Interquartile range of per-call block means (unit `s`).
    pub latency_iqr: MetricResult,
    /// Work units per second over all timed blocks (unit `<work_unit>/s`).
    pub throughput: MetricResult,
    /// Operator FLOPs of one call (unit `FLOPs`).
    pub operator_flops: MetricResult,
    /// Peak PyTorch tensor memory (unit `B`): tracked CPU tensors, or accelerator allocated bytes.
    pub tensor_memory_peak: MetricResult,
    /// Peak accelerator allocator reserved bytes (unit `B`); unavailable on CPU.
    pub allocator_reserved_peak: MetricResult,
    /// Peak RSS over a fresh child's lifetime (unit `B`).
    pub process_rss_peak: MetricResult,
    /// Peak RSS of the child while it ran the workload, high-water mark reset after set-up (unit `B`).
    pub process_rss_workload_peak: MetricResult,
    /// RSS of the child after imports and set-up, before the workload (unit `B`).
    pub process_rss_baseline: MetricResult,
    /// CPU time used by everything other than this process over the CPU time of all CPUs
    /// during the timed phase (unit `ratio`, in [0, 1]), from `/proc/stat` and
    /// `/proc/self/stat`. Absent in reports written before noise was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_other_cpu_ratio: Option<MetricResult>,
    /// CPU time stolen by the hypervisor over the CPU time of all CPUs during the timed phase
    /// (unit `ratio`, in [0, 1]), from the `steal` column of `/proc/stat`. Absent in reports
    /// written before noise was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_ratio: Option<MetricResult>,
    /// Involuntary context switches of the thread that ran the timing loop during the timed
    /// phase (unit `count`, a whole number). Absent in reports written before noise was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_context_switches: Option<MetricResult>,
    /// Mean current frequency of the CPUs the process may run on, read at the start and the end
    /// of the timed phase (unit `Hz`). Absent in reports written before noise was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_frequency: Option<MetricResult>,
    /// In a distributed job: the peak RSS of this rank's own process since it started (unit `B`,
    /// `getrusage` `ru_maxrss`; imports and set-up included), since a fresh child process cannot
    /// join the job's process group. Absent outside a distributed job (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_process_rss_peak: Option<MetricResult>,
    /// Operator FLOPs of one call over the warmed latency (unit `FLOP/s`): complete when both
    /// are complete, partial (a lower bound) when the FLOPs are partial, unavailable otherwise.
    /// Absent in reports written before it was recorded (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_flop_rate: Option<MetricResult>,
    /// Bytes of every counted operator's distinct tensor inputs and outputs in one call (unit
    /// `B`): a model of memory traffic with no cache reuse between operators, not DRAM traffic.
    /// Absent where it was not counted (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_bytes: Option<MetricResult>,
    /// Operator FLOPs over operator bytes (unit `FLOP/B`). Absent where operator bytes were not
    /// counted (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arithmetic_intensity: Option<MetricResult>,
    /// `achieved_flop_rate` over `hardware_peak.flop_rate` (unit `ratio`; may exceed 1);
    /// unavailable without a peak. Absent in reports written before it was recorded (after
    /// 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flop_utilization: Option<MetricResult>,
    /// Operator bytes over the warmed latency, over `hardware_peak.bandwidth` (unit `ratio`; may
    /// exceed 1); unavailable without operator bytes or a peak. Absent in reports written before
    /// it was recorded (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_utilization: Option<MetricResult>,
}

impl BenchmarkMetrics {
    /// The noise metrics that the report carries, with their keys, in a fixed order.
    pub fn noise_metrics(&self) -> Vec<(&'static str, &MetricResult)> {
        [
            ("machine_other_cpu_ratio", &self.machine_other_cpu_ratio),
            ("cpu_steal_ratio", &self.cpu_steal_ratio),
            (
                "involuntary_context_switches",
                &self.involuntary_context_switches,
            ),
            ("cpu_frequency", &self.cpu_frequency),
        ]
        .into_iter()
        .filter_map(|(key, metric)| metric.as_ref().map(|metric| (key, metric)))
        .collect()
    }
}

/// One operator in the profiler pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfiledOperator {
    /// Operator name.
    pub operator: String,
    /// Calls over the whole pass.
    pub calls: u64,
    /// Self time over the whole pass, in seconds, including instrumentation.
    pub self_time_s: f64,
    /// Total time over the whole pass, in seconds, including instrumentation.
    pub total_time_s: f64,
}

/// The separate, instrumented profiler pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilerPass {
    /// `complete` when it ran, `unavailable` otherwise (never `partial`).
    pub status: MetricStatus,
    /// Why it did not run, for example `not requested`.
    #[serde(default)]
    pub reason: Option<String>,
    /// How it was run.
    pub method: String,
    /// What its times cover.
    pub scope: String,
    /// Calls profiled (capped): the requested calls, or fewer when the next call would have
    /// passed the time budget (`settings.max_time_s`; at least one call always runs).
    pub calls: Option<u64>,
    /// The calls requested (`profiler_calls`); `calls` is lower when the time budget stopped
    /// the pass. Absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_calls: Option<u64>,
    /// Top operators by self time, descending.
    pub top_operators: Vec<ProfiledOperator>,
    /// The pass's trace, kept in a file (`profiler_trace`); absent when none was asked for or
    /// none was written, and in reports written before traces were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<ProfilerTrace>,
}

/// The file format of a kept profiler trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Chrome trace event JSON, as `torch.profiler`'s `export_chrome_trace` writes it; Perfetto
    /// (ui.perfetto.dev) and `chrome://tracing` open it.
    ChromeTrace,
    /// The same JSON, gzip-compressed (a path ending in `.gz`); Perfetto opens it as it is.
    ChromeTraceGzip,
}

impl TraceFormat {
    /// The format in words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            TraceFormat::ChromeTrace => "Chrome trace event JSON",
            TraceFormat::ChromeTraceGzip => "gzip-compressed Chrome trace event JSON",
        }
    }
}

/// The profiler pass's trace, written to a file the caller named (`profiler_trace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilerTrace {
    /// The file, as the caller named it; a relative path is relative to the working directory
    /// of the process that measured.
    pub path: String,
    /// The file format: `chrome_trace`, or `chrome_trace_gzip` exactly when `path` ends in `.gz`.
    pub format: TraceFormat,
    /// Which calls the trace covers.
    pub scope: String,
    /// Calls the trace covers: the pass's `calls`, or fewer when a profiler session could not
    /// be exported (a `profiler_failed` warning says so).
    pub calls: u64,
    /// Always true: the trace was recorded under the profiler's instrumentation, so its times are
    /// slower than the timed blocks' and are not the benchmark's latency.
    pub instrumented: bool,
    /// Size of the file written, in bytes.
    pub bytes: u64,
}

/// The report of `measure_workload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `benchmark`.
    pub kind: BenchmarkKind,
    /// Where and with what the report was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// What was measured.
    pub workload: Workload,
    /// The timing budget, as used.
    pub settings: TimingSettings,
    /// Raw timing evidence; null when latency was not requested.
    pub timing: Option<TimingEvidence>,
    /// The headline metrics.
    pub metrics: BenchmarkMetrics,
    /// The operator FLOPs breakdown; null when not requested.
    pub operator_flops: Option<OperatorFlops>,
    /// The profiler pass.
    pub profiler: ProfilerPass,
    /// The peak rates utilization is measured against, with their provenance: from the
    /// `hardware_peak` pass, declared by the caller (`peak=`), or both. Absent when neither was
    /// asked for (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_peak: Option<HardwarePeak>,
}

/// Where a peak rate that the utilization metrics use comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeakOrigin {
    /// Declared by the caller (`peak=`, `hardware_peak.declared`).
    Declared,
    /// Measured by the `hardware_peak` pass (`hardware_peak.measured`).
    Measured,
}

impl PeakOrigin {
    /// The origin's name as reports write it: `declared` or `measured`.
    pub fn as_str(self) -> &'static str {
        match self {
            PeakOrigin::Declared => "declared",
            PeakOrigin::Measured => "measured",
        }
    }
}

/// The peak rates utilization is measured against, with where each comes from.
///
/// `flop_rate` and `bandwidth` are the rates the utilization metrics divide by: each is a copy
/// of the declared rate when the caller declared it, else of the measured one, and its origin
/// says which; both peaks, when present, are kept below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardwarePeak {
    /// The peak compute rate used (unit `FLOP/s`); unavailable when none was declared or measured.
    pub flop_rate: MetricResult,
    /// Where `flop_rate` comes from; null when it is unavailable.
    pub flop_rate_origin: Option<PeakOrigin>,
    /// The peak memory bandwidth used (unit `B/s`); unavailable when none was declared or measured.
    pub bandwidth: MetricResult,
    /// Where `bandwidth` comes from; null when it is unavailable.
    pub bandwidth_origin: Option<PeakOrigin>,
    /// The peak the caller declared (`peak=`); null when none was.
    pub declared: Option<DeclaredPeak>,
    /// The peak the `hardware_peak` pass measured; null when it was not requested.
    pub measured: Option<MeasuredPeak>,
}

/// A peak declared by the caller, recorded as given with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredPeak {
    /// Where the caller's numbers come from, as they wrote it (a datasheet, their own
    /// measurement).
    pub source: String,
    /// The declared compute rate (unit `FLOP/s`); unavailable when left out.
    pub flop_rate: MetricResult,
    /// The declared memory bandwidth (unit `B/s`); unavailable when left out.
    pub bandwidth: MetricResult,
}

/// The evidence of one measurement of the `hardware_peak` pass: its timed blocks, timed as the
/// latency pass times the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeakTiming {
    /// Calls in each timed block (at least 1).
    pub calls_per_block: u64,
    /// Duration of each timed block, in seconds, in the order they ran (each positive).
    pub block_durations_s: Vec<f64>,
}

/// What the `hardware_peak` pass measured on the workload's device, with the workload's thread
/// setting: a dense square matmul and a large copy, each timed in blocks whose per-call median
/// gives the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasuredPeak {
    /// The dtype of the matmul and the copy, as PyTorch names it (`torch.float32`): the first
    /// floating dtype of `context.dtypes`, else `torch.float32`.
    pub dtype: String,
    /// `n` of the `n x n` by `n x n` matmul; one call is `2 n^3` FLOPs.
    pub matmul_size: u64,
    /// The matmul's timed blocks; null when it could not run.
    pub matmul_timing: Option<PeakTiming>,
    /// Bytes of the copied tensor; one call reads and writes it, `2 x copy_bytes` in all.
    pub copy_bytes: u64,
    /// The copy's timed blocks; null when it could not run.
    pub copy_timing: Option<PeakTiming>,
    /// Attainable dense matmul rate (unit `FLOP/s`): `2 n^3` over the fastest block's per-call time.
    pub flop_rate: MetricResult,
    /// Large-copy bandwidth (unit `B/s`): `2 x copy_bytes` over the fastest block's per-call time.
    pub bandwidth: MetricResult,
    /// The device's theoretical compute rate in `dtype` from its properties (unit `FLOP/s`),
    /// where torch knows the architecture; never attained in practice. Unavailable elsewhere.
    pub theoretical_flop_rate: MetricResult,
    /// The device's theoretical memory bandwidth from its properties (unit `B/s`); unavailable
    /// where torch does not describe it.
    pub theoretical_bandwidth: MetricResult,
}
