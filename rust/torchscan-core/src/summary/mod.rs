//! The text summary of every report kind: the lines `summary`, `measure_workload` and
//! `torchscan-report summary` print. Numbers, units and words come from [`crate::format`].
//!
//! One submodule per report family, as in [`crate::render`]: `analysis` (analysis and FLOP
//! reports), `benchmark` (benchmark and peak-memory reports), `output_check`, `comparison`
//! (benchmark comparisons), `diff` (report diffs) and `distributed` (the merged benchmarks of a
//! distributed job); `context` and `escape` serve them all.

use std::fmt::Write as _;

use crate::schema::Report;

mod analysis;
mod benchmark;
mod columns;
mod comparison;
mod context;
mod diff;
mod distributed;
mod escape;
mod output_check;

pub use crate::format::{display_text, is_escaped_for_display};
/// Kept at this path for callers of `summary::format_metric` and `summary::group_thousands`;
/// their home is [`crate::format`].
pub use crate::format::{format_metric, group_thousands};
pub use columns::{COLUMN_NAMES, Column, DEFAULT_COLUMNS, UnknownColumn};
pub(crate) use context::{ContextRow, context_rows};
pub(crate) use distributed::{
    context_differences, first_call_rank, rank_diagnostics, rank_metric_notes,
};
pub use escape::escaped_report;

use crate::format::{display_path, serde_name};
use crate::schema::common::Diagnostic;
use analysis::{summarize_analysis, summarize_flops};
use benchmark::{summarize_benchmark, summarize_peak_memory};
use comparison::summarize_comparison;
use diff::summarize_diff;
use distributed::summarize_distributed;
use output_check::summarize_output_check;

fn push_line(out: &mut String, indent: usize, text: &str) {
    out.extend(std::iter::repeat_n(' ', indent));
    out.push_str(text);
    out.push('\n');
}

fn push_diagnostics(out: &mut String, diagnostics: &[Diagnostic]) {
    if diagnostics.is_empty() {
        return;
    }
    push_line(out, 2, "Diagnostics:");
    for diagnostic in diagnostics {
        push_line(out, 4, &diagnostic_text(diagnostic));
    }
}

/// One diagnostic as a line of the summary: `warning code: message [module path] [operator op]`.
fn diagnostic_text(diagnostic: &Diagnostic) -> String {
    let mut line = format!(
        "{} {}: {}",
        diagnostic.severity.as_str(),
        serde_name(&diagnostic.code),
        diagnostic.message
    );
    if let Some(path) = &diagnostic.path {
        let _ = write!(line, " [module {}]", display_path(path));
    }
    if let Some(operator) = &diagnostic.operator {
        let _ = write!(line, " [operator {operator}]");
    }
    line
}

/// Display options of the text summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryOptions {
    /// Hide analysis layers nested deeper than this (the root's children are depth 1).
    pub max_depth: Option<u64>,
    /// Add each layer's receptive field to the analysis table (torchscan 0.2's
    /// `receptive_field=True`).
    pub receptive_field: bool,
    /// Add each layer's effective stride and padding to the analysis table (torchscan 0.2's
    /// `effective_rf_stats=True`).
    pub effective_rf_stats: bool,
    /// The analysis table's columns after the layer name, in order (torchinfo's `col_names`);
    /// [`DEFAULT_COLUMNS`] when `None`. The receptive-field options add their columns when
    /// these leave them out.
    pub columns: Option<Vec<Column>>,
}

/// The text summary of a report: deterministic, one trailing newline.
pub fn format_summary(report: &Report) -> String {
    format_summary_with(report, &SummaryOptions::default())
}

/// The text summary of a report with display options.
///
/// Every string taken from the report shows control, bidirectional formatting and line
/// separator characters escaped (`\u202e`, see [`display_text`]): the summary is rendered from
/// an escaped copy of the report when any string needs it.
pub fn format_summary_with(report: &Report, options: &SummaryOptions) -> String {
    let shown = escaped_report(report);
    let report = shown.as_ref().unwrap_or(report);
    let mut out = String::new();
    match report {
        Report::Analysis(r) => summarize_analysis(&mut out, r, options),
        Report::Flops(r) => summarize_flops(&mut out, r),
        Report::Benchmark(r) => summarize_benchmark(&mut out, r),
        Report::PeakMemory(r) => summarize_peak_memory(&mut out, r),
        Report::OutputCheck(r) => summarize_output_check(&mut out, r),
        Report::BenchmarkComparison(r) => summarize_comparison(&mut out, r),
        Report::ReportDiff(r) => summarize_diff(&mut out, r),
        Report::DistributedBenchmark(r) => summarize_distributed(&mut out, r),
    }
    out
}
