//! The `benchmark_comparison` of two benchmark reports.

use pyo3::prelude::*;

use crate::errors::bench_compare_error;

/// Compares two benchmark reports (JSON text), resting on an optional output check (JSON text);
/// returns the `benchmark_comparison` report as JSON text. `paired` compares the timed blocks
/// round by round, for the two reports of one interleaved run.
#[pyfunction]
#[pyo3(signature = (baseline, candidate, check=None, confidence_level=0.95, bootstrap_resamples=2000, seed=0, min_effect=0.02, paired=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn compare_benchmarks_json(
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
