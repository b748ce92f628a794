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

/// The timing statistics of a benchmark's blocks, as the validator recomputes them.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct BlockTiming {
    /// The median of the per-call block means, in seconds.
    pub latency_s: f64,
    /// The interquartile range of the per-call block means, in seconds.
    pub latency_iqr_s: f64,
    /// The calls timed in all.
    pub calls: u64,
    /// The seconds timed in all.
    pub timed_s: f64,
}

/// A throughput and its unit, as the validator recomputes them.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct Throughput {
    /// Work units per second: `work_units x calls / timed seconds`.
    pub value: f64,
    /// `"<work_unit>/s"`.
    pub unit: String,
}

/// Latency median and IQR of per-call block means, total calls and timed seconds.
#[pyfunction]
pub(super) fn block_timing(
    block_durations_s: Vec<f64>,
    calls_per_block: u64,
) -> PyResult<BlockTiming> {
    stats::block_timing(&block_durations_s, calls_per_block)
        .map(|t| BlockTiming {
            latency_s: t.latency_s,
            latency_iqr_s: t.latency_iqr_s,
            calls: t.calls,
            timed_s: t.timed_s,
        })
        .map_err(stats_error)
}

/// The throughput of timed blocks and its unit, as the validator recomputes them.
/// `ValueError` for a `work_unit` that is not a valid name (see [`is_valid_work_unit`]).
#[pyfunction]
pub(super) fn throughput(
    block_durations_s: Vec<f64>,
    calls_per_block: u64,
    work_units: f64,
    work_unit: &str,
) -> PyResult<Throughput> {
    if !is_valid_work_unit(work_unit) {
        return Err(PyValueError::new_err(format!(
            "work unit {work_unit:?} is not a name (a letter, then letters, digits, '_' or '-')"
        )));
    }
    let timing = stats::block_timing(&block_durations_s, calls_per_block).map_err(stats_error)?;
    Ok(Throughput {
        value: timing.throughput(work_units),
        unit: throughput_unit(work_unit),
    })
}

/// Whether `name` may be used as a work unit (`samples`, `tokens`, ...): the rule reports are
/// validated with.
#[pyfunction]
pub(super) fn is_valid_work_unit(name: &str) -> bool {
    torchscan_core::schema::common::is_valid_work_unit(name)
}
