//! The comparison of two benchmarks (or two merged jobs, by their job views) as named steps: the
//! inputs checked, the output check summarized, the context compared, every delta with its
//! interval and verdict, the diagnostics that explain them.

use crate::distributed::job_view;
use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{Context, Diagnostic, DiagnosticCode, SchemaVersionV1, Severity};
use crate::schema::comparison::{
    BenchmarkComparisonKind, BenchmarkComparisonReport, CheckStatus, CheckSummary, ComparedSide,
    ComparisonSettings, MetricDelta, Verdict,
};
use crate::schema::distributed::DistributedBenchmarkReport;
use crate::schema::output_check::OutputCheckReport;

use super::context::{context_differences, precision_change};
use super::interval::median_of_ratios;
use super::verdicts::{Timing, compared_deltas};
use super::{BenchCompareError, CompareOptions, MAX_BOOTSTRAP_RESAMPLES, Pairing};

/// Whether both reports' blocks pair up round by round; the reason when they do not.
fn check_paired(baseline: &BenchmarkReport, candidate: &BenchmarkReport) -> Result<(), String> {
    match (&baseline.timing, &candidate.timing) {
        (Some(base), Some(cand)) => {
            let (left, right) = (base.block_durations_s.len(), cand.block_durations_s.len());
            if left != right {
                Err(format!(
                    "the baseline has {left} timed blocks and the candidate {right}"
                ))
            } else if left < 2 {
                Err("a paired interval needs at least two rounds".to_owned())
            } else {
                Ok(())
            }
        }
        _ => Err("a report has no timing evidence".to_owned()),
    }
}

/// Work units per call as people write them: `32`, `0.5`, and `1e-300` rather than three
/// hundred zeros.
fn work_text(work_units: f64) -> String {
    if work_units != 0.0 && !(1e-4..1e16).contains(&work_units.abs()) {
        format!("{work_units:e}")
    } else {
        format!("{work_units}")
    }
}

pub(super) fn check_options(options: &CompareOptions) -> Result<(), BenchCompareError> {
    if !(options.confidence_level > 0.0 && options.confidence_level < 1.0) {
        return Err(BenchCompareError::InvalidOption(format!(
            "confidence level must be in (0, 1), got {}",
            options.confidence_level
        )));
    }
    if !(1..=MAX_BOOTSTRAP_RESAMPLES).contains(&options.bootstrap_resamples) {
        return Err(BenchCompareError::InvalidOption(format!(
            "bootstrap resamples must be from 1 to {MAX_BOOTSTRAP_RESAMPLES}, got {}",
            options.bootstrap_resamples
        )));
    }
    if !(options.min_effect.is_finite() && options.min_effect >= 0.0) {
        return Err(BenchCompareError::InvalidOption(format!(
            "minimum effect must be finite and >= 0, got {}",
            options.min_effect
        )));
    }
    Ok(())
}

/// Compares a candidate benchmark with a baseline measured apart, resting on an optional output
/// check ([`Pairing::Independent`]).
pub fn compare_benchmarks(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
    check: Option<&OutputCheckReport>,
    options: &CompareOptions,
) -> Result<BenchmarkComparisonReport, BenchCompareError> {
    compare_benchmarks_with(baseline, candidate, check, options, Pairing::Independent)
}

/// Compares a candidate benchmark with a baseline, resting on an optional output check, with the
/// timed blocks paired as `pairing` says. [`Pairing::Rounds`] needs the same number of blocks
/// (at least two) on both sides, and records its method in a `note` diagnostic.
pub fn compare_benchmarks_with(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
    check: Option<&OutputCheckReport>,
    options: &CompareOptions,
    pairing: Pairing,
) -> Result<BenchmarkComparisonReport, BenchCompareError> {
    check_options(options)?;
    if pairing == Pairing::Rounds {
        check_paired(baseline, candidate).map_err(BenchCompareError::NotPaired)?;
    }
    check_same_work(baseline, candidate)?;
    let mut diagnostics = Vec::new();
    let check_summary = summarize_check(check, &mut diagnostics);
    compare_contexts(baseline, candidate, &mut diagnostics);
    let failed = check_summary.status == CheckStatus::Failed;
    let timing = Timing::of(baseline, candidate, options, pairing);
    let (deltas, latency_verdict) = compared_deltas(baseline, candidate, failed, &timing);
    let overall = if failed {
        Verdict::Withheld
    } else {
        noise_diagnostics(&timing, &mut diagnostics);
        latency_verdict
    };
    if failed {
        diagnostics.push(failed_check_diagnostic(&check_summary, check));
    } else if let Some(note) = paired_rounds_note(&timing) {
        diagnostics.push(note);
    }
    Ok(comparison_report(
        baseline,
        candidate,
        options,
        diagnostics,
        check_summary,
        overall,
        deltas,
    ))
}

/// Refuses reports that count different work per call.
fn check_same_work(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
) -> Result<(), BenchCompareError> {
    let (base_work, cand_work) = (&baseline.workload, &candidate.workload);
    if base_work.work_unit != cand_work.work_unit || base_work.work_units != cand_work.work_units {
        return Err(BenchCompareError::DifferentWork {
            baseline: format!(
                "{} {}",
                work_text(base_work.work_units),
                base_work.work_unit
            ),
            candidate: format!(
                "{} {}",
                work_text(cand_work.work_units),
                cand_work.work_unit
            ),
        });
    }
    Ok(())
}

/// The output check as the comparison records it; without one, an `unchecked` warning.
fn summarize_check(
    check: Option<&OutputCheckReport>,
    diagnostics: &mut Vec<Diagnostic>,
) -> CheckSummary {
    match check {
        None => {
            diagnostics.push(Diagnostic {
                code: DiagnosticCode::Unchecked,
                severity: Severity::Warning,
                metric: None,
                message: "no output check was given: the candidate may compute something else; \
                          pass check=check_outputs(...)"
                    .to_owned(),
                path: None,
                operator: None,
            });
            CheckSummary {
                status: CheckStatus::Unchecked,
                method: None,
                rtol: None,
                atol: None,
                failed_leaves: 0,
            }
        }
        Some(report) => CheckSummary {
            status: if report.passed {
                CheckStatus::Passed
            } else {
                CheckStatus::Failed
            },
            method: Some(report.method.clone()),
            rtol: Some(report.rtol),
            atol: Some(report.atol),
            failed_leaves: report.leaves.iter().filter(|leaf| !leaf.passed).count() as u64,
        },
    }
}

/// A `context_mismatch` warning when the settings of the two sides differ, and a
/// `precision_changed` note when their precision does.
fn compare_contexts(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let differences = context_differences(&baseline.context, &candidate.context);
    if !differences.is_empty() {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::ContextMismatch,
            severity: Severity::Warning,
            metric: None,
            message: format!(
                "the reports differ in {}: deltas may reflect the setting, not the change",
                differences.join(", ")
            ),
            path: None,
            operator: None,
        });
    }
    if let Some(message) = precision_change(&baseline.context, &candidate.context) {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::PrecisionChanged,
            severity: Severity::Info,
            metric: None,
            message,
            path: None,
            operator: None,
        });
    }
}

/// A `noisy_machine` warning for each side timed on a noisy machine.
fn noise_diagnostics(timing: &Timing<'_>, diagnostics: &mut Vec<Diagnostic>) {
    for (side, side_noise) in &timing.noise {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::NoisyMachine,
            severity: Severity::Warning,
            metric: Some("latency".to_owned()),
            message: format!(
                "the {side} was timed on a noisy machine: {}; {}",
                side_noise.passed.join(", "),
                if timing.pairing == Pairing::Rounds {
                    "the sides were interleaved, so the load weighs on both alike"
                } else {
                    "measured apart, a verdict of change needs an effect beyond the noise, \
                     and no change is never concluded"
                }
            ),
            path: None,
            operator: None,
        });
    }
}

/// The `output_check_failed` error: every delta is withheld.
fn failed_check_diagnostic(
    check_summary: &CheckSummary,
    check: Option<&OutputCheckReport>,
) -> Diagnostic {
    Diagnostic {
        code: DiagnosticCode::OutputCheckFailed,
        severity: Severity::Error,
        metric: None,
        message: format!(
            "the output check failed ({} leaf/leaves): every delta is withheld{}",
            check_summary.failed_leaves,
            // The check's own first finding names where and the likely way out.
            check
                .and_then(|report| report.diagnostics.first())
                .map(|first| format!("; the check says: {}", first.message))
                .unwrap_or_default()
        ),
        path: None,
        operator: None,
    }
}

/// The `note` of a paired comparison that says how its intervals were computed.
fn paired_rounds_note(timing: &Timing<'_>) -> Option<Diagnostic> {
    if timing.pairing != Pairing::Rounds {
        return None;
    }
    let (Some(base_means), Some(cand_means)) = (&timing.samples.0, &timing.samples.1) else {
        return None;
    };
    let estimate = median_of_ratios(base_means, cand_means)
        .map(|ratio| format!(" (here {ratio:.3})"))
        .unwrap_or_default();
    Some(Diagnostic {
        code: DiagnosticCode::Note,
        severity: Severity::Info,
        metric: Some("latency".to_owned()),
        message: format!(
            "paired rounds: the two sides were timed interleaved, so the {} rounds were \
             resampled whole; the latency interval and verdict are those of the median of \
             per-round ratios{estimate}, which drift of the machine does not move, and the \
             throughput interval that of the ratio of mean times per call over the same \
             rounds; `ratio` stays the ratio of the two sides' medians",
            base_means.len()
        ),
        path: None,
        operator: None,
    })
}

/// The `benchmark_comparison` report of the two sides.
fn comparison_report(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
    options: &CompareOptions,
    diagnostics: Vec<Diagnostic>,
    check: CheckSummary,
    verdict: Verdict,
    deltas: Vec<MetricDelta>,
) -> BenchmarkComparisonReport {
    BenchmarkComparisonReport {
        schema_version: SchemaVersionV1,
        kind: BenchmarkComparisonKind::Tag,
        context: Context {
            torchscan_version: crate::VERSION.to_owned(),
            ..Context::default()
        },
        diagnostics,
        check,
        baseline: ComparedSide {
            workload: baseline.workload.name.clone(),
            context: baseline.context.clone(),
        },
        candidate: ComparedSide {
            workload: candidate.workload.name.clone(),
            context: candidate.context.clone(),
        },
        work_unit: baseline.workload.work_unit.clone(),
        settings: ComparisonSettings {
            confidence_level: options.confidence_level,
            bootstrap_resamples: options.bootstrap_resamples,
            seed: options.seed,
            min_effect: options.min_effect,
        },
        verdict,
        deltas,
    }
}

/// Compares two merged distributed jobs (made by
/// [`merge_rank_reports`](crate::distributed::merge_rank_reports)) by their job views
/// ([`job_view`]): latency is the step time (per block, the slowest rank's
/// time per call) and throughput the job's, with the statistics and verdict rules of
/// [`compare_benchmarks_with`]. An `info` `note` diagnostic says so.
pub fn compare_distributed_with(
    baseline: &DistributedBenchmarkReport,
    candidate: &DistributedBenchmarkReport,
    check: Option<&OutputCheckReport>,
    options: &CompareOptions,
    pairing: Pairing,
) -> Result<BenchmarkComparisonReport, BenchCompareError> {
    let mut report = compare_benchmarks_with(
        &job_view(baseline),
        &job_view(candidate),
        check,
        options,
        pairing,
    )?;
    let job = |report: &DistributedBenchmarkReport| {
        format!(
            "{} {} on {}",
            report.job.world_size,
            if report.job.world_size == 1 {
                "rank"
            } else {
                "ranks"
            },
            report.job.backend
        )
    };
    report.diagnostics.push(Diagnostic {
        code: DiagnosticCode::Note,
        severity: Severity::Info,
        metric: None,
        message: format!(
            "both sides are distributed jobs ({} -> {}), compared by their step time (per \
             aligned block, the slowest rank's time per call) as latency and by the job's \
             throughput (every rank's work over the summed step times); memory is the largest \
             rank's peak and operator FLOPs the sum over the ranks",
            job(baseline),
            job(candidate)
        ),
        path: None,
        operator: None,
    });
    Ok(report)
}
