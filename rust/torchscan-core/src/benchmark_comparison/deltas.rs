//! One metric's delta between the two sides: the plain ratio of two metric results, or why none
//! is given, and the rate metrics compared beside latency and throughput.

use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{MetricResult, MetricStatus};
use crate::schema::comparison::{DeltaStatus, MetricDelta, Verdict};

pub(super) fn not_given(
    metric: &str,
    unit: &str,
    status: DeltaStatus,
    reason: String,
) -> MetricDelta {
    MetricDelta {
        metric: metric.to_owned(),
        unit: unit.to_owned(),
        status,
        baseline: None,
        candidate: None,
        delta: None,
        ratio: None,
        ratio_ci_low: None,
        ratio_ci_high: None,
        verdict: if status == DeltaStatus::Withheld {
            Some(Verdict::Withheld)
        } else {
            None
        },
        reason: Some(reason),
        method: None,
    }
}

/// `candidate / baseline` where it is a float that says it: `None` for a baseline of 0, and
/// `None` with the reason when the quotient of two valid numbers is past the float range (a
/// subnormal baseline latency, `5e-324` s) or below it (a nonzero candidate whose ratio rounds to
/// 0). The delta (`candidate - baseline`) of two non-negative floats is always finite.
fn ratio_of(candidate: f64, baseline: f64) -> (Option<f64>, Option<String>) {
    if baseline == 0.0 {
        return (None, None);
    }
    let ratio = candidate / baseline;
    if ratio.is_finite() && (ratio > 0.0 || candidate == 0.0) {
        return (Some(ratio), None);
    }
    let side = if ratio.is_finite() { "below" } else { "past" };
    (
        None,
        Some(format!(
            "the ratio candidate / baseline ({candidate:e} / {baseline:e}) is {side} the range \
             of a float, so it is not stated"
        )),
    )
}

/// Adds `reason` to the delta's reason, after what it already says.
pub(super) fn add_reason(delta: &mut MetricDelta, reason: String) {
    delta.reason = Some(match delta.reason.take() {
        Some(before) => format!("{before}; {reason}"),
        None => reason,
    });
}

pub(super) fn plain_delta(
    metric: &str,
    baseline: &MetricResult,
    candidate: &MetricResult,
) -> MetricDelta {
    match (
        baseline.status,
        candidate.status,
        baseline.value,
        candidate.value,
    ) {
        (MetricStatus::Complete, MetricStatus::Complete, Some(base), Some(cand)) => {
            let (ratio, reason) = ratio_of(cand, base);
            MetricDelta {
                metric: metric.to_owned(),
                unit: baseline.unit.clone(),
                status: DeltaStatus::Complete,
                baseline: Some(base),
                candidate: Some(cand),
                delta: Some(cand - base),
                ratio,
                ratio_ci_low: None,
                ratio_ci_high: None,
                verdict: None,
                reason,
                method: None,
            }
        }
        _ => {
            let weaker = baseline.status.weaker(candidate.status);
            let status = if weaker == MetricStatus::Partial {
                DeltaStatus::Partial
            } else {
                DeltaStatus::Unavailable
            };
            let side = if baseline.status != MetricStatus::Complete {
                ("baseline", baseline)
            } else {
                ("candidate", candidate)
            };
            let why = side.1.reason.as_deref().unwrap_or("no value");
            not_given(
                metric,
                &baseline.unit,
                status,
                format!("the {} is {}: {why}", side.0, side.1.status.as_str()),
            )
        }
    }
}

/// The rate metrics both reports carry, with a number on at least one side: `achieved_flop_rate`
/// and `flop_utilization`. Reports written before they were recorded, or without a peak on
/// either side, add nothing, so their comparisons keep their rows.
pub(super) fn rate_pairs<'a>(
    baseline: &'a BenchmarkReport,
    candidate: &'a BenchmarkReport,
) -> Vec<(&'static str, &'a MetricResult, &'a MetricResult)> {
    [
        (
            "achieved_flop_rate",
            baseline.metrics.achieved_flop_rate.as_ref(),
            candidate.metrics.achieved_flop_rate.as_ref(),
        ),
        (
            "flop_utilization",
            baseline.metrics.flop_utilization.as_ref(),
            candidate.metrics.flop_utilization.as_ref(),
        ),
    ]
    .into_iter()
    .filter_map(|(name, base, cand)| match (base, cand) {
        (Some(base), Some(cand))
            if base.status != MetricStatus::Unavailable
                || cand.status != MetricStatus::Unavailable =>
        {
            Some((name, base, cand))
        }
        _ => None,
    })
    .collect()
}
