//! The functions of `torchscan._core`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use torchscan_core::schema::common::throughput_unit;
use torchscan_core::stats;

use crate::errors::{
    bench_compare_error, compare_error, render_error, stats_error, validation_error,
};

/// Validates report JSON text; returns the report's kind or raises `torchscan.errors.ReportValidationError`.
#[pyfunction]
fn validate_report_json(py: Python<'_>, text: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::read_report(text));
    outcome
        .map(|report| report.kind().as_str().to_owned())
        .map_err(|problems| validation_error(py, problems))
}

/// The text summary of report JSON text; raises `ReportValidationError` when invalid.
/// `max_depth` hides analysis layers nested deeper than that; `receptive_field` and
/// `effective_rf_stats` add the layers' receptive field, and effective stride and padding.
#[pyfunction]
#[pyo3(signature = (text, max_depth=None, receptive_field=false, effective_rf_stats=false))]
fn format_summary_json(
    py: Python<'_>,
    text: &str,
    max_depth: Option<u64>,
    receptive_field: bool,
    effective_rf_stats: bool,
) -> PyResult<String> {
    let options = torchscan_core::SummaryOptions {
        max_depth,
        receptive_field,
        effective_rf_stats,
    };
    let outcome = py.detach(|| torchscan_core::read_report(text));
    outcome
        .map(|report| torchscan_core::format_summary_with(&report, &options))
        .map_err(|problems| validation_error(py, problems))
}

/// Compares two analysis reports given as JSON text; returns the `report_diff` report as JSON text.
///
/// Raises `ReportValidationError` when either input is invalid (paths prefixed `before:` or `after:`)
/// and `ReportComparisonError` when the reports cannot be compared.
#[pyfunction]
fn compare_reports_json(py: Python<'_>, before: &str, after: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::compare_reports_json(before, after));
    outcome.map_err(|failure| compare_error(py, failure))
}

/// The self-contained HTML page of report JSON text; raises `ReportValidationError` when invalid.
#[pyfunction]
fn render_report_json(py: Python<'_>, text: &str) -> PyResult<String> {
    let outcome = py.detach(|| torchscan_core::render_report_json(text));
    outcome.map_err(|failure| render_error(py, failure))
}

/// Compares two benchmark reports (JSON text), resting on an optional output check (JSON text);
/// returns the `benchmark_comparison` report as JSON text. `paired` compares the timed blocks
/// round by round, for the two reports of one interleaved run.
#[pyfunction]
#[pyo3(signature = (baseline, candidate, check=None, confidence_level=0.95, bootstrap_resamples=2000, seed=0, min_effect=0.02, paired=false))]
#[allow(clippy::too_many_arguments)]
fn compare_benchmarks_json(
    py: Python<'_>,
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    confidence_level: f64,
    bootstrap_resamples: u64,
    seed: u64,
    min_effect: f64,
    paired: bool,
) -> PyResult<String> {
    use torchscan_core::benchmark_comparison::{
        CompareOptions, Pairing, compare_benchmarks_json_with,
    };
    let options = CompareOptions {
        confidence_level,
        bootstrap_resamples,
        seed,
        min_effect,
    };
    let pairing = if paired {
        Pairing::Rounds
    } else {
        Pairing::Independent
    };
    let outcome =
        py.detach(|| compare_benchmarks_json_with(baseline, candidate, check, &options, pairing));
    outcome.map_err(|failure| bench_compare_error(py, failure))
}

/// Each operator exclusion class's name with the reason reports give it, for example
/// `("allocation", "excluded by convention: allocation")`.
#[pyfunction]
fn exclusion_reasons() -> Vec<(&'static str, &'static str)> {
    torchscan_core::schema::flops::ExclusionClass::ALL
        .iter()
        .map(|class| (class.as_str(), class.reason()))
        .collect()
}

/// Median absolute deviation from the median (unscaled).
#[pyfunction]
fn median_absolute_deviation(values: Vec<f64>) -> PyResult<f64> {
    stats::median_absolute_deviation(&values).map_err(stats_error)
}

/// Latency median and IQR of per-call block means, total calls and timed seconds.
#[pyfunction]
fn block_timing(
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
fn throughput(
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
fn is_valid_work_unit(name: &str) -> bool {
    torchscan_core::schema::common::is_valid_work_unit(name)
}

/// Runs the `torchscan-report` command line with `argv` (program name first); returns the exit code.
/// Ctrl-C acts as on the binary (see `files::with_default_sigint`).
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    crate::files::with_default_sigint(py, || torchscan_report::main_with_args(argv))
}

/// Adds the functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(validate_report_json, module)?)?;
    module.add_function(wrap_pyfunction!(format_summary_json, module)?)?;
    module.add_function(wrap_pyfunction!(compare_reports_json, module)?)?;
    module.add_function(wrap_pyfunction!(compare_benchmarks_json, module)?)?;
    module.add_function(wrap_pyfunction!(render_report_json, module)?)?;
    module.add_function(wrap_pyfunction!(exclusion_reasons, module)?)?;
    module.add_function(wrap_pyfunction!(median_absolute_deviation, module)?)?;
    module.add_function(wrap_pyfunction!(block_timing, module)?)?;
    module.add_function(wrap_pyfunction!(throughput, module)?)?;
    module.add_function(wrap_pyfunction!(is_valid_work_unit, module)?)?;
    module.add_function(wrap_pyfunction!(cli_main, module)?)?;
    Ok(())
}
