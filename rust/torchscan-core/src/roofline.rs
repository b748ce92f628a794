//! The roofline of a benchmark: the peak compute rate and the peak bandwidth it is compared with,
//! where the workload sits between them and which roof binds it. The text summary and the HTML
//! page both read it from here, so they always tell the same story.
//!
//! Only numbers the report holds are used: the peak rates utilization divides by
//! (`hardware_peak.flop_rate` and `hardware_peak.bandwidth`), `metrics.arithmetic_intensity`
//! and `metrics.achieved_flop_rate`. Nothing is extrapolated: a lower bound of the intensity
//! below the ridge point leaves the binding roof unknown.

use crate::schema::benchmark::{BenchmarkReport, HardwarePeak, PeakOrigin};
use crate::schema::common::{MetricResult, MetricStatus};

/// A number as the report knows it: whole, or a lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownNumber {
    /// The value, or the lower bound.
    pub value: f64,
    /// Whether `value` is only a lower bound (the metric is partial).
    pub lower_bound: bool,
}

impl KnownNumber {
    /// The number of a complete or partial metric; `None` for an unavailable one.
    pub fn of(metric: &MetricResult) -> Option<KnownNumber> {
        match (metric.status, metric.value, metric.known_value) {
            (MetricStatus::Complete, Some(value), _) => Some(KnownNumber {
                value,
                lower_bound: false,
            }),
            (MetricStatus::Partial, _, Some(value)) => Some(KnownNumber {
                value,
                lower_bound: true,
            }),
            _ => None,
        }
    }
}

/// Which roof limits the workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// The arithmetic intensity is at or above the ridge point: the compute ceiling binds.
    Compute,
    /// The arithmetic intensity is below the ridge point: the bandwidth slope binds.
    Memory,
    /// Not known, and why.
    Unknown(String),
}

impl Bound {
    /// The bound in words: `compute-bound`, `memory-bound` or `unknown (why)`.
    pub fn words(&self) -> String {
        match self {
            Bound::Compute => "compute-bound".to_owned(),
            Bound::Memory => "memory-bound".to_owned(),
            Bound::Unknown(why) => format!("unknown ({why})"),
        }
    }
}

/// The roofline of a benchmark whose peak compute rate and peak bandwidth are both known.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    /// The compute ceiling, in FLOP/s (`hardware_peak.flop_rate`).
    pub peak_flop_rate: f64,
    /// Where the ceiling comes from.
    pub flop_rate_origin: Option<PeakOrigin>,
    /// The bandwidth slope, in B/s (`hardware_peak.bandwidth`).
    pub peak_bandwidth: f64,
    /// Where the slope comes from.
    pub bandwidth_origin: Option<PeakOrigin>,
    /// Where the two roofs meet, in FLOP/B: `peak_flop_rate / peak_bandwidth`.
    pub ridge_point: f64,
    /// The workload's arithmetic intensity, in FLOP/B; `None` when unknown.
    pub intensity: Option<KnownNumber>,
    /// Why the intensity is unknown, when it is.
    pub intensity_missing: Option<String>,
    /// The workload's achieved FLOP rate, in FLOP/s; `None` when unknown.
    pub achieved: Option<KnownNumber>,
    /// Which roof binds the workload.
    pub bound: Bound,
}

impl Roofline {
    /// The attainable rate at `intensity`: the lower of the two roofs.
    pub fn attainable(&self, intensity: f64) -> f64 {
        (intensity * self.peak_bandwidth).min(self.peak_flop_rate)
    }
}

/// The complete, positive value of a peak rate, or why there is none.
fn peak_rate(metric: &MetricResult, key: &str) -> Result<f64, String> {
    match (metric.status, metric.value) {
        (MetricStatus::Complete, Some(value)) if value > 0.0 => Ok(value),
        _ => Err(format!(
            "hardware_peak.{key} is {}{}",
            metric.status.as_str(),
            metric
                .reason
                .as_deref()
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default()
        )),
    }
}

/// Which roof binds a workload of arithmetic intensity `intensity` under a ridge point.
pub fn bound(intensity: Option<KnownNumber>, ridge_point: f64, missing: Option<&str>) -> Bound {
    match intensity {
        Some(known) if known.value >= ridge_point => Bound::Compute,
        Some(known) if known.lower_bound => Bound::Unknown(
            "the arithmetic intensity is a lower bound below the ridge point".to_owned(),
        ),
        Some(_) => Bound::Memory,
        None => Bound::Unknown(format!(
            "the arithmetic intensity is {}",
            missing.unwrap_or("not recorded")
        )),
    }
}

/// The roofline of `report`: `Ok` when it records a peak compute rate and a peak bandwidth that
/// are both known and whose ratio (the ridge point) is a positive float, else `Err` with why
/// there is none (`None` without a `hardware_peak`).
pub fn roofline(report: &BenchmarkReport) -> Option<Result<Roofline, String>> {
    let peak: &HardwarePeak = report.hardware_peak.as_ref()?;
    let rates = peak_rate(&peak.flop_rate, "flop_rate")
        .and_then(|flops| peak_rate(&peak.bandwidth, "bandwidth").map(|bytes| (flops, bytes)));
    let (peak_flop_rate, peak_bandwidth) = match rates {
        Ok(rates) => rates,
        Err(why) => return Some(Err(why)),
    };
    let metrics = &report.metrics;
    let intensity = metrics
        .arithmetic_intensity
        .as_ref()
        .and_then(KnownNumber::of);
    let intensity_missing = match (&metrics.arithmetic_intensity, intensity) {
        (_, Some(_)) => None,
        (None, None) => Some("not recorded: operator bytes were not counted".to_owned()),
        (Some(metric), None) => Some(format!(
            "unavailable{}",
            metric
                .reason
                .as_deref()
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default()
        )),
    };
    let ridge_point = peak_flop_rate / peak_bandwidth;
    if !ridge_point.is_finite() || ridge_point <= 0.0 {
        return Some(Err(format!(
            "the ridge point hardware_peak.flop_rate / hardware_peak.bandwidth \
             ({peak_flop_rate:e} / {peak_bandwidth:e}) is beyond the range of a float"
        )));
    }
    Some(Ok(Roofline {
        peak_flop_rate,
        flop_rate_origin: peak.flop_rate_origin,
        peak_bandwidth,
        bandwidth_origin: peak.bandwidth_origin,
        ridge_point,
        bound: bound(intensity, ridge_point, intensity_missing.as_deref()),
        intensity,
        intensity_missing,
        achieved: metrics
            .achieved_flop_rate
            .as_ref()
            .and_then(KnownNumber::of),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(value: f64) -> Option<KnownNumber> {
        Some(KnownNumber {
            value,
            lower_bound: false,
        })
    }

    fn at_least(value: f64) -> Option<KnownNumber> {
        Some(KnownNumber {
            value,
            lower_bound: true,
        })
    }

    #[test]
    fn the_ridge_point_divides_compute_from_memory() {
        assert_eq!(bound(whole(10.0), 10.0, None), Bound::Compute);
        assert_eq!(bound(whole(9.99), 10.0, None), Bound::Memory);
        // A lower bound at or above the ridge point settles it; below it, nothing is known.
        assert_eq!(bound(at_least(12.0), 10.0, None), Bound::Compute);
        assert_eq!(
            bound(at_least(2.0), 10.0, None),
            Bound::Unknown(
                "the arithmetic intensity is a lower bound below the ridge point".to_owned()
            )
        );
        assert_eq!(
            bound(None, 10.0, Some("unavailable: no bytes")).words(),
            "unknown (the arithmetic intensity is unavailable: no bytes)"
        );
    }
}
