//! What analyses and FLOP reports name: the operator exclusion classes.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Each operator exclusion class's name with the reason reports give it, in the schema's
/// order, for example `{"allocation": "excluded by convention: allocation", ...}`.
#[pyfunction]
pub(super) fn exclusion_reasons(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let reasons = PyDict::new(py);
    for class in torchscan_core::schema::flops::ExclusionClass::ALL {
        reasons.set_item(class.as_str(), class.reason())?;
    }
    Ok(reasons)
}
