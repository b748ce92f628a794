//! The comparison of two benchmarks (or two merged jobs, by their job views) as named steps: the
//! inputs checked, the output check summarized, the context compared, every delta with its
//! interval and verdict, the diagnostics that explain them.

use crate::distributed::job_view;
use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{
    Context, Diagnostic, DiagnosticCode, MetricResult, SchemaVersionV1, Severity,
};
use crate::schema::comparison::{
    BenchmarkComparisonKind, BenchmarkComparisonReport, CheckStatus, CheckSummary, ComparedSide,
    ComparisonSettings, DeltaStatus, MetricDelta, Verdict,
};
use crate::schema::distributed::DistributedBenchmarkReport;
use crate::schema::output_check::OutputCheckReport;

use super::context::{context_differences, precision_change};
use super::deltas::{add_reason, not_given, plain_delta, rate_pairs};
use super::interval::{
    SplitMix64, apart_interval, block_means, median_of_ratios, paired_interval, throughput_ratio,
    timed_span_s, verdict,
};
use super::noise::{SideNoise, noisy_verdict, side_noise};
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

/// The metrics compared, in the report's order, with each side's result.
fn compared_metrics<'a>(
    baseline: &'a BenchmarkReport,
    candidate: &'a BenchmarkReport,
) -> Vec<(&'static str, &'a MetricResult, &'a MetricResult)> {
    let mut names: Vec<(&str, &MetricResult, &MetricResult)> = vec![
        (
            "latency",
            &baseline.metrics.latency,
            &candidate.metrics.latency,
        ),
        (
            "throughput",
            &baseline.metrics.throughput,
            &candidate.metrics.throughput,
        ),
        (
            "first_call",
            &baseline.metrics.first_call,
            &candidate.metrics.first_call,
        ),
        (
            "operator_flops",
            &baseline.metrics.operator_flops,
            &candidate.metrics.operator_flops,
        ),
        (
            "tensor_memory_peak",
            &baseline.metrics.tensor_memory_peak,
            &candidate.metrics.tensor_memory_peak,
        ),
        (
            "process_rss_peak",
            &baseline.metrics.process_rss_peak,
            &candidate.metrics.process_rss_peak,
        ),
    ];
    // Beside latency and throughput: the achieved FLOP rate and its share of the peak, when both
    // reports carry them and one has a number; a change without a verdict of its own.
    names.splice(2..2, rate_pairs(baseline, candidate));
    names
}

/// What the intervals of latency and throughput rest on: the options, the pairing, each side's
/// per-call block means and timed span, and the noise of either side's machine.
struct Timing<'a> {
    options: &'a CompareOptions,
    pairing: Pairing,
    samples: (Option<Vec<f64>>, Option<Vec<f64>>),
    spans: (Option<f64>, Option<f64>),
    /// The sides timed on a noisy machine, with their noise.
    noise: Vec<(&'static str, SideNoise)>,
    /// The slowdown the noise of either side can explain, as a factor (1 when neither is noisy).
    allowance: f64,
    /// The noise metrics past their thresholds, per side, as text.
    noise_text: String,
}

impl<'a> Timing<'a> {
    fn of(
        baseline: &BenchmarkReport,
        candidate: &BenchmarkReport,
        options: &'a CompareOptions,
        pairing: Pairing,
    ) -> Self {
        let samples = (block_means(baseline), block_means(candidate));
        let spans = (timed_span_s(baseline), timed_span_s(candidate));
        let noise: Vec<(&str, SideNoise)> = [("baseline", baseline), ("candidate", candidate)]
            .into_iter()
            .filter_map(|(side, report)| side_noise(report).map(|noise| (side, noise)))
            .collect();
        let allowance = noise
            .iter()
            .map(|(_, noise)| noise.allowance)
            .fold(1.0_f64, f64::max);
        let noise_text = noise
            .iter()
            .map(|(side, noise)| format!("the {side}: {}", noise.passed.join(", ")))
            .collect::<Vec<_>>()
            .join("; ");
        Timing {
            options,
            pairing,
            samples,
            spans,
            noise,
            allowance,
            noise_text,
        }
    }
}

/// Every delta, in the report's order, and the latency's verdict (inconclusive when it has
/// none); every delta is withheld when the output check failed.
fn compared_deltas(
    baseline: &BenchmarkReport,
    candidate: &BenchmarkReport,
    failed: bool,
    timing: &Timing<'_>,
) -> (Vec<MetricDelta>, Verdict) {
    let throughput_unit = crate::schema::common::throughput_unit(&baseline.workload.work_unit);
    let mut deltas = Vec::new();
    let mut overall = Verdict::Inconclusive;
    let mut rng = SplitMix64(timing.options.seed);
    for (metric, base, cand) in compared_metrics(baseline, candidate) {
        if failed {
            deltas.push(not_given(
                metric,
                &base.unit,
                DeltaStatus::Withheld,
                "the output check failed: the candidate does not compute the same outputs"
                    .to_owned(),
            ));
            continue;
        }
        let mut delta = plain_delta(metric, base, cand);
        let latency = metric == "latency";
        if delta.status == DeltaStatus::Complete
            && (latency || metric == "throughput")
            && let (Some(base_means), Some(cand_means)) = (&timing.samples.0, &timing.samples.1)
        {
            let interval = ratio_interval(base_means, cand_means, latency, timing, &mut rng);
            let found = judge(&mut delta, interval, latency, timing);
            delta.verdict = Some(found);
            if latency {
                overall = found;
            }
        }
        if metric == "throughput" {
            delta.unit = throughput_unit.clone();
        }
        deltas.push(delta);
    }
    (deltas, overall)
}

/// The interval of the ratio of latency (or throughput) with the method that computed it, as
/// the pairing says; why none could be computed otherwise.
fn ratio_interval(
    base_means: &[f64],
    cand_means: &[f64],
    latency: bool,
    timing: &Timing<'_>,
    rng: &mut SplitMix64,
) -> Result<(f64, f64, String), String> {
    let options = timing.options;
    match timing.pairing {
        Pairing::Independent => apart_interval(
            (base_means, timing.spans.0),
            (cand_means, timing.spans.1),
            latency,
            options.confidence_level,
        ),
        Pairing::Rounds => {
            let found = if latency {
                paired_interval(base_means, cand_means, median_of_ratios, options, rng)
            } else {
                paired_interval(base_means, cand_means, throughput_ratio, options, rng)
            };
            let method = format!(
                "one interleaved run: percentile bootstrap interval at {}% of {} over \
                 the {} rounds resampled whole ({} resamples, seed {}); the machine's \
                 drift and load fall on both blocks of a round alike",
                options.confidence_level * 100.0,
                if latency {
                    "the median of per-round ratios of time per call"
                } else {
                    "the ratio of throughputs (inverse mean times per call)"
                },
                base_means.len().min(cand_means.len()),
                options.bootstrap_resamples,
                options.seed,
            );
            found.map(|(low, high)| (low, high, method)).ok_or_else(|| {
                "the interval does not fit in a finite float: a resampled ratio is \
                     past the range of a float"
                    .to_owned()
            })
        }
    }
}

/// The verdict of one delta from its interval, weighed against the noise of the machine, with
/// the interval, its method and the reasons recorded on the delta.
fn judge(
    delta: &mut MetricDelta,
    interval: Result<(f64, f64, String), String>,
    latency: bool,
    timing: &Timing<'_>,
) -> Verdict {
    let options = timing.options;
    let pairing = timing.pairing;
    let (noise_text, allowance) = (&timing.noise_text, timing.allowance);
    match interval {
        Ok((low, high, method)) => {
            delta.ratio_ci_low = Some(low);
            delta.ratio_ci_high = Some(high);
            delta.method = Some(method);
            let plain = verdict(low, high, options.min_effect, latency);
            if timing.noise.is_empty() {
                plain
            } else if pairing == Pairing::Rounds {
                add_reason(
                    delta,
                    format!(
                        "timed on a noisy machine ({noise_text}); the two sides were \
                     interleaved, so the load fell on both blocks of each round alike \
                     and the interval of per-round ratios includes its effect"
                    ),
                );
                plain
            } else {
                let weighed = noisy_verdict(low, high, options.min_effect, allowance, latency);
                add_reason(
                    delta,
                    format!(
                        "measured apart on a noisy machine ({noise_text}), the two \
                     reports can differ by the noise alone, up to {:.2} times; a change \
                     is called only when the whole interval lies beyond that and the \
                     {}% minimum effect together, and no change is never concluded{}; \
                     compare in one run (compare_workloads) or measure on a quiet \
                     machine",
                        allowance,
                        options.min_effect * 100.0,
                        if weighed == plain {
                            String::new()
                        } else {
                            format!(" (the interval alone says {})", plain.as_str())
                        },
                    ),
                );
                weighed
            }
        }
        Err(why) => {
            delta.method = Some(
                match pairing {
                    Pairing::Independent => {
                        "measured apart: batch means over time-ordered segments of \
                         blocks (not computed)"
                    }
                    Pairing::Rounds => {
                        "one interleaved run: percentile bootstrap interval over the \
                         rounds resampled whole (not computed)"
                    }
                }
                .to_owned(),
            );
            add_reason(delta, why);
            Verdict::Inconclusive
        }
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
