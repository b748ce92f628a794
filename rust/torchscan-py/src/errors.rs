//! The one place where core errors become Python exceptions.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use torchscan_core::Problem;
use torchscan_core::stats::StatsError;

pyo3::create_exception!(
    _core,
    CoreValidationError,
    PyException,
    "A report failed validation; args[0] is a list of (path, message) pairs."
);

/// Adds the exception types to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add(
        "CoreValidationError",
        module.py().get_type::<CoreValidationError>(),
    )
}

/// Problems found in a report, as `CoreValidationError([(path, message), ...])`.
pub fn validation_error(py: Python<'_>, problems: Vec<Problem>) -> PyErr {
    let pairs: Vec<(String, String)> = problems
        .into_iter()
        .map(|problem| (problem.path, problem.message))
        .collect();
    match PyList::new(py, pairs) {
        Ok(list) => CoreValidationError::new_err((list.unbind(),)),
        Err(error) => error,
    }
}

/// A statistic that cannot be computed, as `ValueError`.
pub fn stats_error(error: StatsError) -> PyErr {
    PyValueError::new_err(error.to_string())
}
