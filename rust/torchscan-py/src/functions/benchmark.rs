//! The statistics and units of benchmark reports, computed as the validator recomputes them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use torchscan_core::schema::common::throughput_unit;
use torchscan_core::stats;

use crate::errors::stats_error;

/// Median absolute deviation from the median (unscaled).
#[pyfunction]
pub(super) fn median_absolute_deviation(values: Vec<f64>) -> PyResult<f64> {
    stats::median_absolute_deviation(&values).map_err(stats_error)
}

/// Latency median and IQR of per-call block means, total calls and timed seconds.
#[pyfunction]
pub(super) fn block_timing(
    block_durations_s: Vec<f64>,
    calls_per_block: u64,
) -> PyResult<(f64, f64, u64, f64)> {
    stats::block_timing(&block_durations_s, calls_per_block)
        .map(|t| (t.latency_s, t.latency_iqr_s, t.calls, t.timed_s))
        .map_err(stats_error)
}

/// The throughput of timed blocks and its unit, as the validator recomputes them:
/// `(work_units x calls / timed seconds, "<work_unit>/s")`. `ValueError` for a `work_unit` that
/// is not a valid name (see [`is_valid_work_unit`]).
#[pyfunction]
pub(super) fn throughput(
    block_durations_s: Vec<f64>,
    calls_per_block: u64,
    work_units: f64,
    work_unit: &str,
) -> PyResult<(f64, String)> {
    if !is_valid_work_unit(work_unit) {
        return Err(PyValueError::new_err(format!(
            "work unit {work_unit:?} is not a name (a letter, then letters, digits, '_' or '-')"
        )));
    }
    let timing = stats::block_timing(&block_durations_s, calls_per_block).map_err(stats_error)?;
    Ok((timing.throughput(work_units), throughput_unit(work_unit)))
}

/// Whether `name` may be used as a work unit (`samples`, `tokens`, ...): the rule reports are
/// validated with.
#[pyfunction]
pub(super) fn is_valid_work_unit(name: &str) -> bool {
    torchscan_core::schema::common::is_valid_work_unit(name)
}
