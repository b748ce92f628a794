//! Schema version 1: the serde types of every report kind, the single source of truth of the contract.

/// Declares the one-value `kind` tag of a report type.
macro_rules! kind_tag {
    ($name:ident, $literal:literal) => {
        #[doc = concat!("The `kind` tag `", $literal, "`.")]
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Default,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
        )]
        pub enum $name {
            #[doc = concat!("`", $literal, "`")]
            #[default]
            #[serde(rename = $literal)]
            Tag,
        }
    };
}

pub mod analysis;
pub mod benchmark;
pub mod common;
pub mod comparison;
pub mod diff;
pub mod distributed;
pub mod flops;
pub mod output_check;
pub mod peak_memory;
mod unique_keys;

pub(crate) use unique_keys::{unique_keys, unique_keys_optional};

use schemars::JsonSchema;
use serde::Serialize;

pub use analysis::AnalysisReport;
pub use benchmark::BenchmarkReport;
pub use common::{Context, Diagnostic, MetricResult, MetricStatus};
pub use comparison::BenchmarkComparisonReport;
pub use diff::ReportDiffReport;
pub use distributed::DistributedBenchmarkReport;
pub use flops::FlopReport;
pub use output_check::OutputCheckReport;
pub use peak_memory::PeakMemoryReport;

/// Every report kind, by its `kind` tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReportKind {
    /// `analysis`
    Analysis,
    /// `flops`
    Flops,
    /// `benchmark`
    Benchmark,
    /// `peak_memory`
    PeakMemory,
    /// `output_check`
    OutputCheck,
    /// `benchmark_comparison`
    BenchmarkComparison,
    /// `report_diff`
    ReportDiff,
    /// `distributed_benchmark`
    DistributedBenchmark,
}

impl ReportKind {
    /// Every kind, in documentation order.
    pub const ALL: [ReportKind; 8] = [
        ReportKind::Analysis,
        ReportKind::Flops,
        ReportKind::Benchmark,
        ReportKind::PeakMemory,
        ReportKind::OutputCheck,
        ReportKind::BenchmarkComparison,
        ReportKind::ReportDiff,
        ReportKind::DistributedBenchmark,
    ];

    /// The `kind` tag as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Analysis => "analysis",
            ReportKind::Flops => "flops",
            ReportKind::Benchmark => "benchmark",
            ReportKind::PeakMemory => "peak_memory",
            ReportKind::OutputCheck => "output_check",
            ReportKind::BenchmarkComparison => "benchmark_comparison",
            ReportKind::ReportDiff => "report_diff",
            ReportKind::DistributedBenchmark => "distributed_benchmark",
        }
    }

    /// The kind with this tag, if any.
    pub fn from_tag(tag: &str) -> Option<ReportKind> {
        ReportKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == tag)
    }
}

/// A report of any kind (schema version 1).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "torchscan report, schema version 1")]
pub enum Report {
    /// `crawl_module` / `summary`.
    Analysis(Box<AnalysisReport>),
    /// `measure_flops`.
    Flops(Box<FlopReport>),
    /// `measure_workload`.
    Benchmark(Box<BenchmarkReport>),
    /// `measure_peak_memory`.
    PeakMemory(Box<PeakMemoryReport>),
    /// `check_outputs`.
    OutputCheck(Box<OutputCheckReport>),
    /// `compare_benchmarks`.
    BenchmarkComparison(Box<BenchmarkComparisonReport>),
    /// `compare_reports`.
    ReportDiff(Box<ReportDiffReport>),
    /// `merge_rank_reports`.
    DistributedBenchmark(Box<DistributedBenchmarkReport>),
}

impl Report {
    /// The report's kind.
    pub fn kind(&self) -> ReportKind {
        match self {
            Report::Analysis(_) => ReportKind::Analysis,
            Report::Flops(_) => ReportKind::Flops,
            Report::Benchmark(_) => ReportKind::Benchmark,
            Report::PeakMemory(_) => ReportKind::PeakMemory,
            Report::OutputCheck(_) => ReportKind::OutputCheck,
            Report::BenchmarkComparison(_) => ReportKind::BenchmarkComparison,
            Report::ReportDiff(_) => ReportKind::ReportDiff,
            Report::DistributedBenchmark(_) => ReportKind::DistributedBenchmark,
        }
    }

    /// The report's context.
    pub fn context(&self) -> &Context {
        match self {
            Report::Analysis(r) => &r.context,
            Report::Flops(r) => &r.context,
            Report::Benchmark(r) => &r.context,
            Report::PeakMemory(r) => &r.context,
            Report::OutputCheck(r) => &r.context,
            Report::BenchmarkComparison(r) => &r.context,
            Report::ReportDiff(r) => &r.context,
            Report::DistributedBenchmark(r) => &r.context,
        }
    }

    /// The report's diagnostics.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Report::Analysis(r) => &r.diagnostics,
            Report::Flops(r) => &r.diagnostics,
            Report::Benchmark(r) => &r.diagnostics,
            Report::PeakMemory(r) => &r.diagnostics,
            Report::OutputCheck(r) => &r.diagnostics,
            Report::BenchmarkComparison(r) => &r.diagnostics,
            Report::ReportDiff(r) => &r.diagnostics,
            Report::DistributedBenchmark(r) => &r.diagnostics,
        }
    }
}

/// The JSON Schema of [`Report`], pretty-printed with a trailing newline, as checked in at
/// `docs/schema/report.v1.schema.json`.
pub fn json_schema_text() -> String {
    let schema = schemars::schema_for!(Report);
    let mut text = serde_json::to_string_pretty(&schema)
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
    text.push('\n');
    text
}
