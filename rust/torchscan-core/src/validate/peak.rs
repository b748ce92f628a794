//! Invariants of a benchmark's rates against the hardware: the achieved FLOP rate, operator bytes,
//! arithmetic intensity, the utilization metrics and the `hardware_peak` section they divide by.
//!
//! Every derived number is recomputed from the metrics it comes from, to the validator's relative
//! tolerance, and its status follows theirs: complete only when every input is complete, partial
//! (a lower bound) when the numerator is a lower bound and the divisor is complete, unavailable
//! otherwise.

use super::{Checker, approx_equal, check_block_durations, check_metric};
use crate::schema::benchmark::{
    BenchmarkReport, DeclaredPeak, HardwarePeak, MeasuredPeak, PassName, PeakOrigin, PeakTiming,
};
use crate::schema::common::{MetricResult, MetricStatus};

/// A number with the status it is known at: the value of a complete metric, the lower bound of
/// a partial one, nothing for an unavailable one.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Known {
    status: MetricStatus,
    number: Option<f64>,
}

impl Known {
    const UNAVAILABLE: Known = Known {
        status: MetricStatus::Unavailable,
        number: None,
    };

    fn of(metric: Option<&MetricResult>) -> Known {
        match metric {
            Some(metric) => match metric.status {
                MetricStatus::Complete => Known {
                    status: MetricStatus::Complete,
                    number: metric.value,
                },
                MetricStatus::Partial => Known {
                    status: MetricStatus::Partial,
                    number: metric.known_value,
                },
                MetricStatus::Unavailable => Known::UNAVAILABLE,
            },
            None => Known::UNAVAILABLE,
        }
    }

    /// `self / divisor`: a number only when the divisor is complete and positive and the
    /// quotient stays in the float range (neither an infinity nor zero for a nonzero
    /// numerator); then with the numerator's status (a lower bound stays a lower bound).
    fn over(self, divisor: Known) -> Known {
        match (self.number, divisor.status, divisor.number) {
            (Some(number), MetricStatus::Complete, Some(by))
                if by > 0.0 && self.status != MetricStatus::Unavailable =>
            {
                let quotient = number / by;
                if !quotient.is_finite() || (quotient == 0.0 && number != 0.0) {
                    return Known::UNAVAILABLE;
                }
                Known {
                    status: self.status,
                    number: Some(quotient),
                }
            }
            _ => Known::UNAVAILABLE,
        }
    }
}

/// Checks that `metric` has the status and the number that `expected` recomputes, `how` naming
/// the recomputation in the message.
fn check_derived(c: &mut Checker, key: &str, metric: &MetricResult, expected: Known, how: &str) {
    c.at(key, |c| {
        if metric.status != expected.status {
            c.problem_at(
                "status",
                format!(
                    "must be {} ({how}): complete only when every input is, partial (a lower \
                     bound) when the numerator is partial and the divisor complete, unavailable \
                     otherwise",
                    expected.status.as_str()
                ),
            );
            return;
        }
        let (field, found) = match metric.status {
            MetricStatus::Complete => ("value", metric.value),
            MetricStatus::Partial => ("known_value", metric.known_value),
            MetricStatus::Unavailable => return,
        };
        if let (Some(found), Some(wanted)) = (found, expected.number)
            && !approx_equal(found, wanted)
        {
            c.problem_at(field, format!("{found} disagrees with {wanted}, {how}"));
        }
    });
}

/// The derived metrics of `metrics`, their units and their recomputation from the others.
pub(super) fn check_rates(c: &mut Checker, report: &BenchmarkReport) {
    let m = &report.metrics;
    let peak = report.hardware_peak.as_ref();
    let flops = Known::of(Some(&m.operator_flops));
    let latency = Known::of(Some(&m.latency));
    let bytes = Known::of(m.operator_bytes.as_ref());
    let achieved = Known::of(m.achieved_flop_rate.as_ref());
    let peak_flop_rate = Known::of(peak.map(|peak| &peak.flop_rate));
    let peak_bandwidth = Known::of(peak.map(|peak| &peak.bandwidth));
    c.at("metrics", |c| {
        if let Some(metric) = &m.operator_bytes {
            check_metric(c, "operator_bytes", metric, Some("B"));
            if !report.settings.passes.contains(&PassName::OperatorFlops)
                && metric.status != MetricStatus::Unavailable
            {
                c.at("operator_bytes", |c| {
                    c.problem_at(
                        "status",
                        "the `operator_flops` pass, which counts operator bytes, was not \
                         requested (settings.passes), so this metric is unavailable",
                    )
                });
            }
        }
        if let Some(metric) = &m.achieved_flop_rate {
            check_metric(c, "achieved_flop_rate", metric, Some("FLOP/s"));
            check_derived(
                c,
                "achieved_flop_rate",
                metric,
                flops.over(latency),
                "metrics.operator_flops / metrics.latency",
            );
        }
        if let Some(metric) = &m.arithmetic_intensity {
            check_metric(c, "arithmetic_intensity", metric, Some("FLOP/B"));
            check_derived(
                c,
                "arithmetic_intensity",
                metric,
                flops.over(bytes),
                "metrics.operator_flops / metrics.operator_bytes",
            );
        }
        if let Some(metric) = &m.flop_utilization {
            check_metric(c, "flop_utilization", metric, Some("ratio"));
            check_derived(
                c,
                "flop_utilization",
                metric,
                achieved.over(peak_flop_rate),
                "metrics.achieved_flop_rate / hardware_peak.flop_rate",
            );
        }
        if let Some(metric) = &m.bandwidth_utilization {
            check_metric(c, "bandwidth_utilization", metric, Some("ratio"));
            check_derived(
                c,
                "bandwidth_utilization",
                metric,
                bytes.over(latency).over(peak_bandwidth),
                "metrics.operator_bytes / metrics.latency / hardware_peak.bandwidth",
            );
        }
    });
    let requested = report.settings.passes.contains(&PassName::HardwarePeak);
    match peak {
        Some(peak) => c.at("hardware_peak", |c| check_hardware_peak(c, peak, requested)),
        None if requested => c.problem_at(
            "hardware_peak",
            "the `hardware_peak` pass was requested (settings.passes), so this section records \
             what it measured",
        ),
        None => {}
    }
}

/// A peak rate: its unit, never partial (a peak is measured or declared whole), and positive
/// when it has a value.
fn check_peak_rate(c: &mut Checker, key: &str, metric: &MetricResult, unit: &str) {
    check_metric(c, key, metric, Some(unit));
    c.at(key, |c| {
        if metric.status == MetricStatus::Partial {
            c.problem_at(
                "status",
                "a peak rate is complete or unavailable, never partial",
            );
        }
        if metric.value == Some(0.0) {
            c.problem_at("value", "a peak rate is positive, found 0");
        }
    });
}

fn check_hardware_peak(c: &mut Checker, peak: &HardwarePeak, requested: bool) {
    check_peak_rate(c, "flop_rate", &peak.flop_rate, "FLOP/s");
    check_peak_rate(c, "bandwidth", &peak.bandwidth, "B/s");
    if peak.declared.is_none() && peak.measured.is_none() {
        c.problem("records a declared peak, a measured peak or both");
    }
    if let Some(declared) = &peak.declared {
        c.at("declared", |c| check_declared(c, declared));
    }
    match &peak.measured {
        Some(measured) => {
            if !requested {
                c.problem_at(
                    "measured",
                    "the `hardware_peak` pass was not requested (settings.passes), so nothing \
                     was measured and this is null",
                );
            }
            c.at("measured", |c| check_measured(c, measured));
        }
        None if requested => c.problem_at(
            "measured",
            "the `hardware_peak` pass was requested (settings.passes), so it records what it \
             measured",
        ),
        None => {}
    }
    let declared = peak.declared.as_ref();
    let measured = peak.measured.as_ref();
    for (key, used, origin, from_declared, from_measured) in [
        (
            "flop_rate",
            &peak.flop_rate,
            peak.flop_rate_origin,
            declared.map(|d| &d.flop_rate),
            measured.map(|m| &m.flop_rate),
        ),
        (
            "bandwidth",
            &peak.bandwidth,
            peak.bandwidth_origin,
            declared.map(|d| &d.bandwidth),
            measured.map(|m| &m.bandwidth),
        ),
    ] {
        check_used_rate(c, key, used, origin, from_declared, from_measured);
    }
}

/// The rate utilization uses: the declared one when the caller declared it, else the measured
/// one, copied whole; unavailable with a null origin when there is neither.
fn check_used_rate(
    c: &mut Checker,
    key: &str,
    used: &MetricResult,
    origin: Option<PeakOrigin>,
    declared: Option<&MetricResult>,
    measured: Option<&MetricResult>,
) {
    let declared = declared.filter(|metric| metric.status == MetricStatus::Complete);
    let measured = measured.filter(|metric| metric.status == MetricStatus::Complete);
    let (expected, source) = match (declared, measured) {
        (Some(metric), _) => (Some(PeakOrigin::Declared), Some(metric)),
        (None, Some(metric)) => (Some(PeakOrigin::Measured), Some(metric)),
        (None, None) => (None, None),
    };
    let origin_key = format!("{key}_origin");
    if origin != expected {
        c.problem_at(
            &origin_key,
            match expected {
                Some(PeakOrigin::Declared) => format!(
                    "must be `declared`: the caller declared {key}, and a declared peak is the \
                     one utilization uses"
                ),
                Some(PeakOrigin::Measured) => {
                    format!("must be `measured`: {key} was measured and not declared")
                }
                None => format!(
                    "must be null: {key} was neither declared nor measured, so it is unavailable"
                ),
            },
        );
        return;
    }
    match source {
        Some(source) => {
            if used.status != source.status
                || used.value != source.value
                || used.unit != source.unit
            {
                c.problem_at(
                    key,
                    format!(
                        "must state the status, value and unit of hardware_peak.{}.{key}, the \
                         rate it is taken from",
                        origin.map_or("", PeakOrigin::as_str)
                    ),
                );
            }
        }
        None => {
            if used.status != MetricStatus::Unavailable {
                c.at(key, |c| {
                    c.problem_at(
                        "status",
                        "neither declared nor measured, so this rate is unavailable",
                    )
                });
            }
        }
    }
}

fn check_declared(c: &mut Checker, declared: &DeclaredPeak) {
    c.non_empty("source", &declared.source);
    check_peak_rate(c, "flop_rate", &declared.flop_rate, "FLOP/s");
    check_peak_rate(c, "bandwidth", &declared.bandwidth, "B/s");
    if declared.flop_rate.status != MetricStatus::Complete
        && declared.bandwidth.status != MetricStatus::Complete
    {
        c.problem("a declared peak declares a flop_rate, a bandwidth or both");
    }
}

fn check_measured(c: &mut Checker, measured: &MeasuredPeak) {
    c.non_empty("dtype", &measured.dtype);
    c.at_least_one("matmul_size", measured.matmul_size);
    c.at_least_one("copy_bytes", measured.copy_bytes);
    check_peak_rate(c, "flop_rate", &measured.flop_rate, "FLOP/s");
    check_peak_rate(c, "bandwidth", &measured.bandwidth, "B/s");
    check_peak_rate(
        c,
        "theoretical_flop_rate",
        &measured.theoretical_flop_rate,
        "FLOP/s",
    );
    check_peak_rate(
        c,
        "theoretical_bandwidth",
        &measured.theoretical_bandwidth,
        "B/s",
    );
    let n = measured.matmul_size as f64;
    for (key, timing_key, timing, rate, work, how) in [
        (
            "flop_rate",
            "matmul_timing",
            &measured.matmul_timing,
            &measured.flop_rate,
            2.0 * n * n * n,
            "2 x matmul_size^3 FLOPs over the fastest block's per-call time of matmul_timing",
        ),
        (
            "bandwidth",
            "copy_timing",
            &measured.copy_timing,
            &measured.bandwidth,
            2.0 * measured.copy_bytes as f64,
            "2 x copy_bytes over the fastest block's per-call time of copy_timing",
        ),
    ] {
        match timing {
            Some(timing) => {
                c.at(timing_key, |c| check_peak_timing(c, timing));
                // The fastest block: noise only slows a block down, a peak is what is attained.
                let per_call = (timing.calls_per_block > 0)
                    .then(|| {
                        timing
                            .block_durations_s
                            .iter()
                            .copied()
                            .fold(f64::INFINITY, f64::min)
                            / timing.calls_per_block as f64
                    })
                    .filter(|per_call| per_call.is_finite() && *per_call > 0.0);
                if let (Some(value), Some(per_call)) = (rate.value, per_call) {
                    let expected = work / per_call;
                    if !approx_equal(value, expected) {
                        c.at(key, |c| {
                            c.problem_at(
                                "value",
                                format!("{value} disagrees with {expected}, {how}"),
                            )
                        });
                    }
                }
            }
            None => {
                if rate.status == MetricStatus::Complete {
                    c.problem_at(
                        timing_key,
                        format!("a measured {key} keeps the timed blocks it comes from"),
                    );
                }
            }
        }
    }
}

fn check_peak_timing(c: &mut Checker, timing: &PeakTiming) {
    c.at_least_one("calls_per_block", timing.calls_per_block);
    c.at("block_durations_s", |c| {
        check_block_durations(c, &timing.block_durations_s)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(status: MetricStatus, number: Option<f64>) -> Known {
        Known { status, number }
    }

    #[test]
    fn a_quotient_keeps_the_numerators_bound_and_needs_a_whole_divisor() {
        let complete = |n| known(MetricStatus::Complete, Some(n));
        let partial = |n| known(MetricStatus::Partial, Some(n));
        assert_eq!(complete(6.0).over(complete(2.0)), complete(3.0));
        assert_eq!(partial(6.0).over(complete(2.0)), partial(3.0));
        // A lower bound in the divisor bounds the quotient from above: no number.
        assert_eq!(complete(6.0).over(partial(2.0)), Known::UNAVAILABLE);
        assert_eq!(complete(6.0).over(complete(0.0)), Known::UNAVAILABLE);
        assert_eq!(Known::UNAVAILABLE.over(complete(2.0)), Known::UNAVAILABLE);
        assert_eq!(complete(0.0).over(complete(2.0)), complete(0.0));
        // A quotient beyond the float range is no number, never an infinity or a false zero.
        assert_eq!(complete(1e300).over(complete(1e-300)), Known::UNAVAILABLE);
        assert_eq!(partial(1e-300).over(complete(1e300)), Known::UNAVAILABLE);
        assert_eq!(complete(f64::MAX).over(complete(0.5)), Known::UNAVAILABLE);
    }
}
