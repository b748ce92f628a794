//! Merging rank reports given as JSON text: every input read and validated, the reports merged
//! by [`merge_rank_reports`], the merged report validated before it is returned. It sits above
//! [`validate`](crate::validate), which merges the embedded rank reports again with the pure merge
//! of [`distributed`](crate::distributed).

use crate::distributed::{MergeError, MergeFailure, merge_rank_reports};
use crate::read::read_report;
use crate::schema::Report;
use crate::validate::check_report;

/// The prefix of the problems of input `index` in [`MergeFailure::Invalid`]: `input 1`.
pub fn input_label(index: usize) -> String {
    format!("input {index}")
}

/// Reads, validates and merges rank reports given as JSON text, in any order; returns the
/// `distributed_benchmark` report as pretty JSON.
pub fn merge_rank_reports_json(texts: &[&str]) -> Result<String, MergeFailure> {
    let mut reports = Vec::with_capacity(texts.len());
    let mut problems = Vec::new();
    let mut other_kind = None;
    for (index, text) in texts.iter().enumerate() {
        match read_report(text) {
            Ok(Report::Benchmark(report)) => reports.push(*report),
            Ok(report) => {
                if other_kind.is_none() {
                    other_kind = Some(MergeError::NotBenchmark {
                        input: index,
                        kind: report.kind().as_str().to_owned(),
                    });
                }
            }
            Err(found) => problems.extend(
                found
                    .iter()
                    .map(|problem| problem.on_side(input_label(index))),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(MergeFailure::Invalid(problems));
    }
    if let Some(error) = other_kind {
        return Err(MergeFailure::Refused(error));
    }
    let merged = merge_rank_reports(&reports).map_err(MergeFailure::Refused)?;
    let wrapped = Report::DistributedBenchmark(Box::new(merged));
    let problems = check_report(&wrapped);
    if !problems.is_empty() {
        return Err(MergeFailure::Internal(problems));
    }
    Ok(crate::to_json_text(&wrapped))
}
