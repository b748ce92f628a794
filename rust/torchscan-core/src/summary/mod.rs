//! The text summary of every report kind: the lines `summary`, `measure_workload` and
//! `torchscan-report summary` print. Units are scaled here (ms, MiB) and nowhere else.

use std::fmt::Write as _;

use crate::schema::Report;

mod analysis;
pub(crate) use analysis::shape_text;
pub(crate) use benchmark::noise_label;
mod benchmark;
mod compare;
mod context;
pub(crate) use context::{ContextRow, context_rows};
mod escape;
pub use escape::{display_text, escaped_report, is_escaped_for_display};

use crate::schema::common::{Diagnostic, MetricResult, MetricStatus};
use analysis::{summarize_analysis, summarize_flops};
use benchmark::{summarize_benchmark, summarize_peak_memory};
use compare::{summarize_comparison, summarize_diff, summarize_output_check};

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// Formats `value` with `decimals` decimals and thousands separators: `4,191,866.300`.
pub fn group_thousands(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (integer, fraction) = match text.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (text.as_str(), None),
    };
    let mut grouped = String::with_capacity(text.len() + integer.len() / 3 + 1);
    // Rounding can make a tiny negative number print as zero; keep "-0.000" out.
    if value < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        grouped.push('-');
    }
    for (index, digit) in integer.chars().enumerate() {
        if index > 0 && (integer.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if let Some(fraction) = fraction {
        grouped.push('.');
        grouped.push_str(fraction);
    }
    grouped
}

/// A metric's number in display units: seconds as ms, bytes as MiB, others as they are.
fn display_number(value: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{} ms", group_thousands(value * 1e3, 3)),
        "B" => format!("{} MiB", group_thousands(value / BYTES_PER_MIB, 3)),
        "count" => group_thousands(value, 0),
        "ratio" => group_thousands(value, 3),
        "Hz" => format!("{} MHz", group_thousands(value / 1e6, 0)),
        other => format!("{} {other}", group_thousands(value, 3)),
    }
}

/// A metric as text: its number, `at least` its lower bound, or `unavailable (reason)`.
pub fn format_metric(metric: &MetricResult) -> String {
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => display_number(value, &metric.unit),
        (MetricStatus::Partial, _, Some(known)) => format!(
            "partial, at least {}{}",
            display_number(known, &metric.unit),
            reason_suffix(metric.reason.as_deref())
        ),
        (status, _, _) => format!(
            "{}{}",
            status.as_str(),
            reason_suffix(metric.reason.as_deref())
        ),
    }
}

fn reason_suffix(reason: Option<&str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

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
        let mut line = format!(
            "{} {}: {}",
            diagnostic.severity.as_str(),
            serde_json::to_value(diagnostic.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            diagnostic.message
        );
        if let Some(path) = &diagnostic.path {
            let _ = write!(line, " [module {}]", display_path(path));
        }
        if let Some(operator) = &diagnostic.operator {
            let _ = write!(line, " [operator {operator}]");
        }
        push_line(out, 4, &line);
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

fn threads_text(threads: Option<u64>) -> String {
    threads.map_or_else(|| "unknown".to_owned(), |t| t.to_string())
}

/// Display options of the text summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummaryOptions {
    /// Hide analysis layers nested deeper than this (the root's children are depth 1).
    pub max_depth: Option<u64>,
    /// Add each layer's receptive field to the analysis table (torchscan 0.2's
    /// `receptive_field=True`).
    pub receptive_field: bool,
    /// Add each layer's effective stride and padding to the analysis table (torchscan 0.2's
    /// `effective_rf_stats=True`).
    pub effective_rf_stats: bool,
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
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_decimals() {
        assert_eq!(group_thousands(4_191_866.3, 3), "4,191,866.300");
        assert_eq!(group_thousands(1_048_576.0, 3), "1,048,576.000");
        assert_eq!(group_thousands(0.094, 3), "0.094");
        assert_eq!(group_thousands(999.0, 0), "999");
        assert_eq!(group_thousands(-1234.5, 1), "-1,234.5");
        assert_eq!(group_thousands(-0.0001, 3), "0.000");
    }

    #[test]
    fn metric_text_by_status() {
        let complete = MetricResult::complete(98_816.0, "B", "PyTorch tracked CPU tensors", "m");
        assert_eq!(format_metric(&complete), "0.094 MiB");
        let unavailable = MetricResult::unavailable("B", "s", "m", "not requested");
        assert_eq!(format_metric(&unavailable), "unavailable (not requested)");
        let partial = MetricResult {
            status: MetricStatus::Partial,
            value: None,
            known_value: Some(1000.0),
            unit: "FLOPs".into(),
            scope: "s".into(),
            method: "m".into(),
            reason: Some("1 uncounted operator".into()),
        };
        assert_eq!(
            format_metric(&partial),
            "partial, at least 1,000.000 FLOPs (1 uncounted operator)"
        );
    }
}
