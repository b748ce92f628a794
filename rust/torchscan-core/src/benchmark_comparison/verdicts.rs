//! Every delta of a comparison, in the report's order, with the interval of latency and
//! throughput and its verdict, weighed against the noise of the machine each side ran on.

use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::MetricResult;
use crate::schema::comparison::{DeltaStatus, MetricDelta, Verdict};

use super::deltas::{add_reason, not_given, plain_delta, rate_pairs};
use super::interval::{
    SplitMix64, apart_interval, block_means, median_of_ratios, paired_interval, throughput_ratio,
    timed_span_s, verdict,
};
use super::noise::{SideNoise, noisy_verdict, side_noise};
use super::{CompareOptions, Pairing};

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
pub(super) struct Timing<'a> {
    options: &'a CompareOptions,
    pub(super) pairing: Pairing,
    pub(super) samples: (Option<Vec<f64>>, Option<Vec<f64>>),
    spans: (Option<f64>, Option<f64>),
    /// The sides timed on a noisy machine, with their noise.
    pub(super) noise: Vec<(&'static str, SideNoise)>,
    /// The slowdown the noise of either side can explain, as a factor (1 when neither is noisy).
    allowance: f64,
    /// The noise metrics past their thresholds, per side, as text.
    noise_text: String,
}

impl<'a> Timing<'a> {
    pub(super) fn of(
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
pub(super) fn compared_deltas(
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
