//! The bodies of the fuzz targets in `fuzz/`, shared with the test that replays the kept corpus.
//!
//! Each target takes arbitrary bytes, never panics on them, and panics only when the core breaks
//! one of its own promises (a valid report that does not render, a diff or comparison that fails
//! validation, a report the core writes that it then rejects). Inputs of the two-report targets
//! hold several JSON documents separated by a NUL byte, which valid JSON text never contains.

pub mod mutate;

use crate::benchmark_comparison::{BenchCompareFailure, CompareOptions, compare_benchmarks_json};
use crate::diff::{CompareFailure, compare_report_texts};
use crate::{Report, format_summary, read_report, render_html, to_json_text};

/// The byte that separates the documents of one input of the `diff` and `bench` targets.
pub const DOCUMENT_SEPARATOR: u8 = 0;

/// The names of the targets, as the fuzz binaries and `fuzz/corpus/<name>` are named.
pub const TARGET_NAMES: [&str; 5] = ["read", "summary", "render", "diff", "bench"];

/// Runs the target called `name` on `data`; `false` when no target has that name.
pub fn run_target(name: &str, data: &[u8]) -> bool {
    match name {
        "read" => read(data),
        "summary" => summary(data),
        "render" => render(data),
        "diff" => diff(data),
        "bench" => bench(data),
        _ => return false,
    }
    true
}

/// The documents of one input: split at every [`DOCUMENT_SEPARATOR`], `None` where a part is not
/// UTF-8.
pub fn split_documents(data: &[u8]) -> Vec<Option<&str>> {
    data.split(|byte| *byte == DOCUMENT_SEPARATOR)
        .map(|part| std::str::from_utf8(part).ok())
        .collect()
}

fn valid_report(data: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(data).ok()?;
    read_report(text).ok()
}

/// Parse and validate: `read_report` on the bytes as UTF-8 text. A report it accepts must be
/// accepted again once written by [`to_json_text`], and written to the same bytes.
pub fn read(data: &[u8]) {
    let Some(report) = valid_report(data) else {
        return;
    };
    let written = to_json_text(&report);
    match read_report(&written) {
        Ok(again) => assert_eq!(
            to_json_text(&again),
            written,
            "a report written by to_json_text is not written again to the same bytes"
        ),
        Err(problems) => {
            panic!("a report written by to_json_text is rejected: {problems:?}\n{written}")
        }
    }
}

/// The text summary of every valid report.
pub fn summary(data: &[u8]) {
    if let Some(report) = valid_report(data) {
        let text = format_summary(&report);
        assert!(!text.is_empty(), "the summary of a valid report is empty");
    }
}

/// The HTML page of every valid report: it must render.
pub fn render(data: &[u8]) {
    if let Some(report) = valid_report(data)
        && let Err(error) = render_html(&report)
    {
        panic!("a valid report does not render: {error}");
    }
}

/// The diff of two reports (before, NUL, after; without a NUL the input is compared with itself).
/// A diff that fails its own validation is a bug; a diff that is made gets its text summary.
pub fn diff(data: &[u8]) {
    let documents = split_documents(data);
    let (Some(Some(before)), after) = (documents.first(), documents.get(1)) else {
        return;
    };
    let after = match after {
        None => before,
        Some(Some(after)) => after,
        Some(None) => return,
    };
    match compare_report_texts(before, after) {
        Ok(diff) => {
            let text = format_summary(&Report::ReportDiff(Box::new(diff)));
            assert!(!text.is_empty(), "the summary of a diff is empty");
        }
        Err(CompareFailure::Internal(problems)) => {
            panic!("the diff of two valid reports fails validation: {problems:?}")
        }
        Err(CompareFailure::Invalid { .. } | CompareFailure::Refused(_)) => {}
    }
}

/// The benchmark comparison with its default options: baseline, NUL, candidate, and optionally
/// NUL and an output check (without a NUL the input is compared with itself). A comparison that
/// fails its own validation is a bug.
pub fn bench(data: &[u8]) {
    let documents = split_documents(data);
    let Some(Some(baseline)) = documents.first() else {
        return;
    };
    let candidate = match documents.get(1) {
        None => baseline,
        Some(Some(candidate)) => candidate,
        Some(None) => return,
    };
    let check = match documents.get(2) {
        None => None,
        Some(Some(check)) => Some(*check),
        Some(None) => return,
    };
    match compare_benchmarks_json(baseline, candidate, check, &CompareOptions::default()) {
        Ok(text) => {
            if let Err(problems) = read_report(&text) {
                panic!("a benchmark comparison written by the core is rejected: {problems:?}");
            }
        }
        Err(BenchCompareFailure::Internal(problems)) => {
            panic!("the comparison of two valid benchmarks fails validation: {problems:?}")
        }
        Err(BenchCompareFailure::Invalid(_) | BenchCompareFailure::Refused(_)) => {}
    }
}
