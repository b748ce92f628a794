//! What analyses and FLOP reports name: the operator exclusion classes.

use pyo3::prelude::*;

/// Each operator exclusion class's name with the reason reports give it, for example
/// `("allocation", "excluded by convention: allocation")`.
#[pyfunction]
pub(super) fn exclusion_reasons() -> Vec<(&'static str, &'static str)> {
    torchscan_core::schema::flops::ExclusionClass::ALL
        .iter()
        .map(|class| (class.as_str(), class.reason()))
        .collect()
}
