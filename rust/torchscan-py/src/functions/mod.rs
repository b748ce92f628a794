//! The functions of `torchscan._core`, one submodule per report family: `report` (any report:
//! validation, summary, HTML page), `analysis`, `benchmark`, `diff`, `benchmark_comparison` and
//! `distributed` (merging rank reports); the command line is here.

mod analysis;
mod benchmark;
mod benchmark_comparison;
mod diff;
mod distributed;
mod report;

use pyo3::prelude::*;

/// Runs the `torchscan-report` command line with `argv` (program name first); returns the exit code.
/// Ctrl-C acts as on the binary (see `files::with_default_sigint`).
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    crate::files::with_default_sigint(py, || torchscan_report::main_with_args(argv))
}

/// Adds the functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(report::validate_report_json, module)?)?;
    module.add_function(wrap_pyfunction!(report::format_summary_json, module)?)?;
    module.add_function(wrap_pyfunction!(report::check_summary_columns, module)?)?;
    module.add_function(wrap_pyfunction!(diff::compare_reports_json, module)?)?;
    module.add_function(wrap_pyfunction!(
        benchmark_comparison::compare_benchmarks_json,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(
        distributed::merge_rank_reports_json,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(report::render_report_json, module)?)?;
    module.add_function(wrap_pyfunction!(analysis::exclusion_reasons, module)?)?;
    module.add_function(wrap_pyfunction!(
        benchmark::median_absolute_deviation,
        module
    )?)?;
    module.add_class::<benchmark::BlockTiming>()?;
    module.add_class::<benchmark::Throughput>()?;
    module.add_function(wrap_pyfunction!(benchmark::block_timing, module)?)?;
    module.add_function(wrap_pyfunction!(benchmark::throughput, module)?)?;
    module.add_function(wrap_pyfunction!(benchmark::is_valid_work_unit, module)?)?;
    module.add_function(wrap_pyfunction!(cli_main, module)?)?;
    Ok(())
}
