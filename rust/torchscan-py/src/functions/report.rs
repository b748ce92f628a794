//! Functions over one report of any kind: validation, the text summary and the HTML page.

use pyo3::prelude::*;

use crate::errors::{column_error, render_error, validation_error};

/// Validates report JSON text; returns the report's kind or raises `torchscan.errors.ReportValidationError`.
#[pyfunction]
pub(super) fn validate_report_json(py: Python<'_>, text: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::read_report(text));
    outcome
        .map(|report| report.kind().as_str().to_owned())
        .map_err(|problems| validation_error(py, problems))
}

/// The text summary of report JSON text; raises `ReportValidationError` when invalid.
/// `max_depth` hides analysis layers nested deeper than that; `receptive_field` and
/// `effective_rf_stats` add the layers' receptive field, and effective stride and padding;
/// `columns` chooses the analysis table's columns by name (`ValueError` for an unknown one).
#[pyfunction]
#[pyo3(signature = (text, max_depth=None, receptive_field=false, effective_rf_stats=false, columns=None))]
pub(super) fn format_summary_json(
    py: Python<'_>,
    text: &str,
    max_depth: Option<u64>,
    receptive_field: bool,
    effective_rf_stats: bool,
    columns: Option<Vec<String>>,
) -> PyResult<String> {
    let columns = columns
        .map(|names| torchscan_core::summary::Column::from_names(&names))
        .transpose()
        .map_err(|unknown| pyo3::exceptions::PyValueError::new_err(unknown.to_string()))?;
    let options = torchscan_core::SummaryOptions {
        max_depth,
        receptive_field,
        effective_rf_stats,
        columns,
    };
    let outcome = py.detach(|| torchscan_core::read_report(text));
    outcome
        .map(|report| torchscan_core::format_summary_with(&report, &options))
        .map_err(|problems| validation_error(py, problems))
}

/// Checks the analysis table's column names (`col_names`): `InvalidArgumentError` naming an
/// unknown name, or one that chooses a column an earlier name chose.
#[pyfunction]
pub(super) fn check_summary_columns(py: Python<'_>, names: Vec<String>) -> PyResult<()> {
    torchscan_core::summary::Column::from_names(&names)
        .map(|_| ())
        .map_err(|error| column_error(py, error))
}

/// The self-contained HTML page of report JSON text; raises `ReportValidationError` when invalid.
#[pyfunction]
pub(super) fn render_report_json(py: Python<'_>, text: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::render_report_json(text));
    outcome.map_err(|failure| render_error(py, failure))
}
