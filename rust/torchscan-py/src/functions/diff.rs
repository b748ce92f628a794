//! The `report_diff` of two analysis reports.

use pyo3::prelude::*;

use crate::errors::compare_error;

/// Compares two analysis reports given as JSON text; returns the `report_diff` report as JSON text.
///
/// Raises `ReportValidationError` when either input is invalid (paths prefixed `before:` or `after:`)
/// and `ReportComparisonError` when the reports cannot be compared.
#[pyfunction]
pub(super) fn compare_reports_json(py: Python<'_>, before: &str, after: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::compare_reports_json(before, after));
    outcome.map_err(|failure| compare_error(py, failure))
}
