//! The `distributed_benchmark` of the rank reports of one `torch.distributed` job.

use pyo3::prelude::*;

use crate::errors::merge_error;

/// Merges the `benchmark` reports of every rank of one distributed job, given as JSON texts in
/// any order; returns the `distributed_benchmark` report as JSON text.
///
/// Raises `ReportValidationError` when an input is invalid (paths prefixed `input N:`, inputs
/// counted from 0) and `ReportMergeError` when the reports cannot be merged.
#[pyfunction]
pub(super) fn merge_rank_reports_json(py: Python<'_>, texts: Vec<String>) -> PyResult<String> {
    let outcome = py.detach(|| {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        torchscan_core::merge_json::merge_rank_reports_json(&texts)
    });
    outcome.map_err(|failure| merge_error(py, failure))
}
