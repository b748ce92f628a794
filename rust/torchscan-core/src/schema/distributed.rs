//! The `distributed_benchmark` report of `merge_rank_reports`: one job's step across its ranks.
//!
//! Made from the `benchmark` report of every rank of a `torch.distributed` job, measured with
//! aligned blocks: block *i* covers the same calls on every rank, so the job's step time in that
//! block is the slowest rank's. The rank reports are kept whole in `rank_reports`; every other
//! member is derived from them and the validator recomputes it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::benchmark::{BenchmarkReport, TimingEvidence, TimingSettings, Workload};
use super::common::{Context, Diagnostic, MetricResult, SchemaVersionV1};

kind_tag!(DistributedBenchmarkKind, "distributed_benchmark");

/// The job the ranks formed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributedJob {
    /// The number of ranks (every rank's report is in `rank_reports`).
    pub world_size: u64,
    /// The process group's backend, for example `gloo` or `nccl`.
    pub backend: String,
    /// The hosts the ranks ran on, sorted, each once.
    pub hosts: Vec<String>,
    /// Work units the whole job completes per call: the sum of every rank's `work_units`.
    pub work_units_per_call: f64,
    /// The most collectives per call any rank counted (`timing.collectives_per_call`); absent
    /// when a rank could not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives_per_call: Option<u64>,
}

/// One aligned block across the ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobBlock {
    /// The slowest rank's duration of this block, in seconds: the job's time for these calls.
    pub step_time_s: f64,
    /// The rank whose block was slowest (the lowest rank among equals).
    pub slowest_rank: u64,
    /// The slowest rank's duration minus the fastest rank's, in seconds.
    pub spread_s: f64,
}

/// The job's headline metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributedMetrics {
    /// Median over blocks of the slowest rank's time per call (unit `s`).
    pub step_time: MetricResult,
    /// Interquartile range of the same per-call step times (unit `s`).
    pub step_time_iqr: MetricResult,
    /// The job's work units per second over all blocks (unit `<work_unit>/s`): every rank's
    /// work of every timed call over the summed step times.
    pub throughput: MetricResult,
    /// The slowest rank's first call (unit `s`).
    pub first_call: MetricResult,
    /// Time per call the straggler costs the job (unit `s`): `straggler.cost_s`; unavailable,
    /// with the straggler's reason, when no rank was the slowest in more than half of the blocks
    /// or the job has one rank.
    pub straggler_cost: MetricResult,
}

/// The rank the others waited for, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Straggler {
    /// The rank that was the slowest in more than half of the blocks; null when none was, and
    /// when the job has one rank.
    pub rank: Option<u64>,
    /// Blocks in which each rank was the slowest, indexed by rank.
    pub slowest_blocks: Vec<u64>,
    /// Median over blocks of the straggler's time per call beyond the median of the other
    /// ranks' in the same block (seconds, at least 0); null when `rank` is null.
    pub cost_s: Option<f64>,
    /// `cost_s` over the median step time per call; null when `rank` is null.
    pub cost_ratio: Option<f64>,
    /// How the straggler was found and what its cost covers.
    pub method: String,
    /// Why no rank is named; null when one is.
    pub reason: Option<String>,
}

/// One rank's row: its own latency, its waits and its memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankSummary {
    /// The global rank.
    pub rank: u64,
    /// The rank on its host.
    pub local_rank: u64,
    /// The host it ran on.
    pub host: String,
    /// The device it measured, for example `cpu` or `cuda:1`.
    pub device: Option<String>,
    /// The rank's own median latency per call (unit `s`), from its report.
    pub latency: MetricResult,
    /// Time the rank waited at the barriers before the blocks, summed over blocks, in seconds
    /// (0 in a job of one rank, which records no waits).
    pub barrier_wait_s: f64,
    /// Peak PyTorch tensor memory of the rank (unit `B`), from its report.
    pub tensor_memory_peak: MetricResult,
    /// Peak accelerator allocator reserved bytes of the rank (unit `B`), from its report.
    pub allocator_reserved_peak: MetricResult,
    /// Peak RSS of the rank's own process (unit `B`), from its report's
    /// `rank_process_rss_peak`; unavailable when the report does not record it.
    pub process_rss_peak: MetricResult,
}

/// The report of `merge_rank_reports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributedBenchmarkReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `distributed_benchmark`.
    pub kind: DistributedBenchmarkKind,
    /// Rank 0's context (its `distributed` member describes rank 0).
    pub context: Context,
    /// The merge's findings for programs and people (each rank's own stay in its report).
    pub diagnostics: Vec<Diagnostic>,
    /// What was measured, as every rank declared it (`work_units` per rank and call).
    pub workload: Workload,
    /// The timing budget every rank used.
    pub settings: TimingSettings,
    /// The job.
    pub job: DistributedJob,
    /// The job's timing evidence: per block, the slowest rank's duration; first call, the
    /// slowest rank's; block starts, rank 0's; timer overhead, the largest; warm-up calls and
    /// calls per block, every rank's; no barrier waits and no collectives (see `ranks` and
    /// `job`).
    pub timing: TimingEvidence,
    /// Every aligned block, in the order they ran.
    pub blocks: Vec<JobBlock>,
    /// The job's headline metrics.
    pub metrics: DistributedMetrics,
    /// The straggler.
    pub straggler: Straggler,
    /// One row per rank, by rank.
    pub ranks: Vec<RankSummary>,
    /// Every rank's `benchmark` report, whole, by rank.
    pub rank_reports: Vec<BenchmarkReport>,
}
