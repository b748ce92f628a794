//! torchscan-core: the report contract of torchscan.
//!
//! The serde types of every report kind ([`schema`]), the generated JSON Schema, reading with
//! JSON paths and validation of every invariant ([`read`], [`validate`]), robust statistics
//! ([`stats`]), the text summary ([`summary`]) and the HTML page ([`render`]), both formatted
//! by one set of rules ([`format`](mod@format)). Two modules make the reports that compare
//! others, each named after the report kind it makes: [`diff`] compares two analyses into a
//! `report_diff` report, [`benchmark_comparison`] two benchmarks (or two merged distributed jobs)
//! into a `benchmark_comparison` report. [`distributed`] merges the `benchmark` reports of every
//! rank of a `torch.distributed` job into one `distributed_benchmark` report; [`merge_json`] reads,
//! validates and merges rank reports given as JSON text. [`roofline`] places a benchmark between
//! the peaks it records, for the summary and the page alike.
//! Pure functions; no Python and no torch here.

pub mod benchmark_comparison;
pub mod call_tree;
pub mod coverage;
pub mod diff;
pub mod distributed;
pub mod drift;
pub mod files;
pub mod format;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_targets;
pub mod merge_json;
pub mod parameter_totals;
pub mod problem;
pub mod read;
pub mod receptive_field;
pub mod render;
pub mod roofline;
pub mod schema;
pub mod stats;
pub mod summary;
pub mod validate;

pub use diff::{
    CompareError, CompareFailure, compare_report_texts, compare_reports, compare_reports_json,
};
pub use files::{read_input, write_output};
pub use problem::Problem;
pub use read::{parse_report, read_report};
pub use render::{RenderError, RenderFailure, render_html, render_report_json};
pub use schema::{Report, ReportKind, json_schema_text};
pub use summary::{SummaryOptions, format_summary, format_summary_with};

/// The version of this crate, written into reports as `context.torchscan_version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Serializes a report to pretty JSON with a trailing newline: the same report always gives the
/// same bytes.
pub fn to_json_text(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
    text.push('\n');
    text
}
