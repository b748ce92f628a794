//! The `benchmark_comparison` report of `compare_benchmarks`: a baseline against one controlled change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, SchemaVersionV1};

kind_tag!(BenchmarkComparisonKind, "benchmark_comparison");

/// Whether the candidate's outputs were checked against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The output check passed; deltas are given.
    Passed,
    /// The output check failed; every delta is withheld.
    Failed,
    /// No output check was given; deltas are given with an `unchecked` diagnostic.
    Unchecked,
}

/// The output check a comparison rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckSummary {
    /// `passed`, `failed` or `unchecked`.
    pub status: CheckStatus,
    /// How outputs were compared; null when unchecked.
    pub method: Option<String>,
    /// Relative tolerance; null when unchecked.
    pub rtol: Option<f64>,
    /// Absolute tolerance; null when unchecked.
    pub atol: Option<f64>,
    /// Leaves that failed (0 when passed or unchecked).
    pub failed_leaves: u64,
}

/// What a comparison concludes about one metric, or about the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly faster, by at least the minimum effect.
    Faster,
    /// Significantly slower, by at least the minimum effect.
    Slower,
    /// The interval lies within the minimum effect either way.
    NoDetectableChange,
    /// The interval is too wide to tell.
    Inconclusive,
    /// The output check failed; nothing is concluded.
    Withheld,
}

impl Verdict {
    /// The verdict's name as reports write it, for example `no_detectable_change`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDetectableChange => "no_detectable_change",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Withheld => "withheld",
        }
    }
}

/// The status of a delta: a metric status, or `withheld` when the output check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeltaStatus {
    /// Both sides complete: the delta is given.
    Complete,
    /// A side is partial: the delta is null.
    Partial,
    /// A side is unavailable: the delta is null.
    Unavailable,
    /// The output check failed: the delta is null.
    Withheld,
}

/// The change of one metric from baseline to candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricDelta {
    /// The metric's name, for example `latency`.
    pub metric: String,
    /// The unit of `baseline`, `candidate` and `delta`.
    pub unit: String,
    /// Whether the delta is given.
    pub status: DeltaStatus,
    /// The baseline's value; null unless complete.
    pub baseline: Option<f64>,
    /// The candidate's value; null unless complete.
    pub candidate: Option<f64>,
    /// `candidate - baseline`; null unless complete.
    pub delta: Option<f64>,
    /// `candidate / baseline`; null unless complete with a non-zero baseline.
    pub ratio: Option<f64>,
    /// Lower end of the ratio's confidence interval (timing metrics only).
    pub ratio_ci_low: Option<f64>,
    /// Upper end of the ratio's confidence interval (timing metrics only).
    pub ratio_ci_high: Option<f64>,
    /// The verdict for this metric (timing metrics only).
    pub verdict: Option<Verdict>,
    /// Why the delta is null; for a timing delta that is given, why its verdict is weaker than
    /// its interval alone would make it (a report too short to estimate its drift, a noisy
    /// machine), or what limits it.
    #[serde(default)]
    pub reason: Option<String>,
    /// How the interval and the verdict were computed, with the method's assumptions (timing
    /// metrics only). Absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// How the comparison was computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComparisonSettings {
    /// Confidence level of the intervals, in (0, 1).
    pub confidence_level: f64,
    /// Bootstrap resamples over rounds, for the intervals of one interleaved run (reports measured
    /// apart use a closed-form interval).
    pub bootstrap_resamples: u64,
    /// Seed of the bootstrap of one interleaved run, so the result is deterministic.
    pub seed: u64,
    /// Smallest relative change that counts, for example 0.02.
    pub min_effect: f64,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComparedSide {
    /// The workload's qualified name, when it has one.
    pub workload: Option<String>,
    /// The side's context.
    pub context: Context,
}

/// The report of `compare_benchmarks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkComparisonReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `benchmark_comparison`.
    pub kind: BenchmarkComparisonKind,
    /// Where and with what the comparison was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// The output check the comparison rests on.
    pub check: CheckSummary,
    /// The baseline side.
    pub baseline: ComparedSide,
    /// The candidate side.
    pub candidate: ComparedSide,
    /// The work unit both sides share.
    pub work_unit: String,
    /// How intervals and verdicts were computed.
    pub settings: ComparisonSettings,
    /// The overall verdict (from latency).
    pub verdict: Verdict,
    /// One delta per compared metric.
    pub deltas: Vec<MetricDelta>,
}
