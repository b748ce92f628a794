//! The uncertainty of a comparison of two benchmark reports measured apart, drift included.
//!
//! Blocks of one report are not independent: a machine's load, frequency and caches drift, so
//! neighbouring blocks are alike and a resampling of single blocks sees only the block-to-block
//! spread. Two reports measured apart differ by the drift between them as well. The method here
//! is **batch means** (Schmeiser 1982; Kalibera and Jones 2013 for benchmarks): each report's
//! per-call block means, in time order, are cut into up to [`MAX_SEGMENTS`] consecutive segments
//! of equal block counts; each segment gives one value (the log of its median, or of its mean for
//! throughput); the spread of those values between segments, inflated by their lag-1
//! autocorrelation, is the variance of the report's level at the time scale of the report; the
//! two sides combine in Welch's t interval of the difference of logs. Everything is closed form:
//! the same reports always give the same interval.
//!
//! Assumption, stated in every comparison that uses it: the drift of the machine during each
//! report is like the drift between the two reports. Drift slower than a report (another job that
//! ran for the whole of one report and none of the other, a different machine) is not in the
//! interval; the reports' noise metrics and context are what show it.

use crate::stats;

/// Segments a report is cut into when it has enough blocks.
pub const MAX_SEGMENTS: usize = 10;
/// Fewest segments that estimate a report's drift; fewer make the report too short.
pub const MIN_SEGMENTS: usize = 8;
/// Fewest blocks in a segment, so that its median is not one block.
pub const MIN_BLOCKS_PER_SEGMENT: usize = 3;
/// Fewest blocks a report needs: [`MIN_SEGMENTS`] segments of [`MIN_BLOCKS_PER_SEGMENT`].
pub const MIN_BLOCKS: usize = MIN_SEGMENTS * MIN_BLOCKS_PER_SEGMENT;
/// Shortest timed span, in seconds, from the first block's start to the last block's end: a
/// segment must last many scheduler time slices (a few milliseconds each) to see drift.
/// `measure_workload`'s default `min_time_s=1.0` gives a little more.
pub const MIN_SPAN_S: f64 = 0.9;
/// Largest lag-1 autocorrelation used to inflate the variance: beyond it the inflation
/// `(1 + r) / (1 - r)` would rest on ten values alone.
pub const MAX_AUTOCORRELATION: f64 = 0.8;

/// Which statistic a segment gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    /// The median of per-call block means (latency).
    Median,
    /// The mean of per-call block means (throughput is proportional to its inverse).
    Mean,
}

/// One report cut into segments.
#[derive(Debug, Clone, PartialEq)]
pub struct Segments {
    /// The log of each segment's statistic, in time order.
    pub values: Vec<f64>,
    /// The mean of `values`.
    pub mean: f64,
    /// The variance of `values` (denominator `n - 1`), times `(1 + r) / (1 - r)`.
    pub variance: f64,
    /// The lag-1 autocorrelation `r` of `values`, clipped to `[0, MAX_AUTOCORRELATION]`.
    pub autocorrelation: f64,
}

/// Why a report is too short to estimate its drift.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TooShort {
    /// Its timed blocks.
    pub blocks: usize,
    /// Its timed span in seconds.
    pub span_s: f64,
}

impl TooShort {
    /// What is missing and how to measure instead, for a verdict's reason.
    pub fn advice(&self) -> String {
        let mut missing = Vec::new();
        if self.blocks < MIN_BLOCKS {
            missing.push(format!(
                "{} timed blocks, fewer than {MIN_BLOCKS}",
                self.blocks
            ));
        }
        if self.span_s < MIN_SPAN_S {
            missing.push(format!(
                "{:.3} s of timed blocks, less than {MIN_SPAN_S} s",
                self.span_s
            ));
        }
        format!(
            "{}; measure for at least 1 s and {MIN_BLOCKS} blocks, for example \
             measure_workload(..., min_time_s=1.0, min_blocks={MIN_BLOCKS}), longer when the \
             machine's load changes slowly",
            missing.join(" and ")
        )
    }
}

fn log_statistic(values: &[f64], statistic: Statistic) -> Option<f64> {
    let value = match statistic {
        Statistic::Median => stats::median(values).ok()?,
        Statistic::Mean => stats::mean(values).ok()?,
    };
    (value > 0.0 && value.is_finite()).then(|| value.ln())
}

/// Cuts a report's per-call block means (in time order) into segments of equal block counts.
/// `span_s` is the report's timed span in seconds. `None` when a segment's statistic is not
/// positive and finite (validated reports have positive, finite blocks).
pub fn segments(
    means: &[f64],
    span_s: f64,
    statistic: Statistic,
) -> Option<Result<Segments, TooShort>> {
    let blocks = means.len();
    if blocks < MIN_BLOCKS || span_s.is_nan() || span_s < MIN_SPAN_S {
        return Some(Err(TooShort { blocks, span_s }));
    }
    let count = MAX_SEGMENTS.min(blocks / MIN_BLOCKS_PER_SEGMENT);
    let mut values = Vec::with_capacity(count);
    for segment in 0..count {
        let (start, end) = (segment * blocks / count, (segment + 1) * blocks / count);
        values.push(log_statistic(&means[start..end], statistic)?);
    }
    let mean = stats::mean(&values).ok()?;
    let squares: f64 = values.iter().map(|value| (value - mean).powi(2)).sum();
    let products: f64 = values
        .windows(2)
        .map(|pair| (pair[0] - mean) * (pair[1] - mean))
        .sum();
    // The plain lag-1 estimate is biased low by about (1 + 3r) / n in n values (Marriott and
    // Pope 1954), a large bias for ten segments: it is corrected before clipping.
    let autocorrelation = if squares > 0.0 {
        let plain = products / squares;
        let n = count as f64;
        ((plain * n + 1.0) / (n - 3.0)).clamp(0.0, MAX_AUTOCORRELATION)
    } else {
        0.0
    };
    let variance = squares / (count - 1) as f64 * (1.0 + autocorrelation) / (1.0 - autocorrelation);
    variance.is_finite().then_some(Ok(Segments {
        values,
        mean,
        variance,
        autocorrelation,
    }))
}

/// The interval of the candidate's statistic over the baseline's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriftInterval {
    /// `exp(mean log candidate - mean log baseline)`: the centre of the interval.
    pub ratio: f64,
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Welch's degrees of freedom.
    pub degrees_of_freedom: f64,
    /// The standard error of the difference of logs.
    pub standard_error: f64,
}

/// Welch's t interval, at `confidence_level`, of `candidate / baseline` from their segments.
pub fn interval(
    baseline: &Segments,
    candidate: &Segments,
    confidence_level: f64,
) -> Option<DriftInterval> {
    let (k_base, k_cand) = (baseline.values.len() as f64, candidate.values.len() as f64);
    let (v_base, v_cand) = (baseline.variance / k_base, candidate.variance / k_cand);
    let variance = v_base + v_cand;
    let difference = candidate.mean - baseline.mean;
    let degrees_of_freedom = if variance > 0.0 {
        variance * variance / (v_base * v_base / (k_base - 1.0) + v_cand * v_cand / (k_cand - 1.0))
    } else {
        k_base + k_cand - 2.0
    };
    let t = stats::student_t_quantile(0.5 + confidence_level / 2.0, degrees_of_freedom).ok()?;
    let standard_error = variance.sqrt();
    let found = DriftInterval {
        ratio: difference.exp(),
        low: (difference - t * standard_error).exp(),
        high: (difference + t * standard_error).exp(),
        degrees_of_freedom,
        standard_error,
    };
    [found.ratio, found.low, found.high]
        .iter()
        .all(|value| value.is_finite())
        .then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments_of(means: &[f64]) -> Segments {
        segments(means, 2.0, Statistic::Median)
            .expect("positive values")
            .expect("long enough")
    }

    #[test]
    fn too_short_reports_say_what_is_missing() {
        let few = segments(&[1.0; 23], 5.0, Statistic::Median).expect("positive");
        let advice = few.expect_err("too few blocks").advice();
        assert!(
            advice.starts_with("23 timed blocks, fewer than 24; measure"),
            "{advice}"
        );
        let brief = segments(&[1.0; 40], 0.5, Statistic::Median).expect("positive");
        let advice = brief.expect_err("too brief").advice();
        assert!(
            advice
                .starts_with("0.500 s of timed blocks, less than 0.9 s; measure for at least 1 s"),
            "{advice}"
        );
        assert!(
            segments(&[1.0; 40], f64::NAN, Statistic::Median)
                .expect("positive")
                .is_err()
        );
        assert_eq!(segments(&[0.0; 40], 2.0, Statistic::Median), None);
    }

    #[test]
    fn segments_are_consecutive_and_of_equal_counts() {
        // 30 blocks: 10 segments of 3, each constant, so each value is exact.
        let means: Vec<f64> = (0..30).map(|i| f64::from(1 + i / 3)).collect();
        let found = segments_of(&means);
        let expected: Vec<f64> = (1..=10).map(|k| f64::from(k).ln()).collect();
        assert_eq!(found.values, expected);
        // 25 blocks: 8 segments of 3 or 4.
        assert_eq!(segments_of(&[2.0; 25]).values.len(), 8);
        assert_eq!(segments_of(&[2.0; 1000]).values.len(), MAX_SEGMENTS);
    }

    #[test]
    fn identical_reports_give_a_point_at_one() {
        let side = segments_of(&[1e-3; 40]);
        let found = interval(&side, &side, 0.95).expect("finite");
        assert_eq!((found.low, found.ratio, found.high), (1.0, 1.0, 1.0));
        assert_eq!(found.standard_error, 0.0);
    }

    #[test]
    fn the_interval_is_welch_on_segment_logs() {
        // Segment values alternate, so the lag-1 autocorrelation is negative and clipped to 0.
        let base: Vec<f64> = (0..30)
            .map(|i| if (i / 3) % 2 == 0 { 1.0 } else { 1.1 })
            .collect();
        let cand: Vec<f64> = base.iter().map(|value| value * 1.5).collect();
        let (b, c) = (segments_of(&base), segments_of(&cand));
        assert_eq!(b.autocorrelation, 0.0);
        let found = interval(&b, &c, 0.95).expect("finite");
        // Each side: ten values, five at 0 and five at ln 1.1 (plus ln 1.5 for the candidate).
        let step = 1.1_f64.ln();
        let variance = 10.0 * (step / 2.0).powi(2) / 9.0;
        let standard_error = (2.0 * variance / 10.0).sqrt();
        assert!((found.standard_error - standard_error).abs() < 1e-15);
        assert!((found.degrees_of_freedom - 18.0).abs() < 1e-9);
        let t = stats::student_t_quantile(0.975, 18.0).expect("t");
        assert!((found.ratio - 1.5).abs() < 1e-12);
        assert!((found.low - (1.5_f64.ln() - t * standard_error).exp()).abs() < 1e-12);
        assert!((found.high - (1.5_f64.ln() + t * standard_error).exp()).abs() < 1e-12);
    }

    #[test]
    fn slow_drift_inflates_the_variance() {
        // A steady climb, linear in logs: for ten equally spaced values the plain lag-1
        // autocorrelation is 57.75 / 82.5 = 0.7, corrected to (10 x 0.7 + 1) / 7 > 0.8, so it is
        // clipped to 0.8 and the variance is inflated 1.8 / 0.2 = 9 times.
        let means: Vec<f64> = (0..40).map(|i| (0.01 * f64::from(i)).exp()).collect();
        let found = segments_of(&means);
        assert_eq!(found.autocorrelation, MAX_AUTOCORRELATION);
        let plain = found
            .values
            .iter()
            .map(|v| (v - found.mean).powi(2))
            .sum::<f64>()
            / 9.0;
        assert!((found.variance - plain * 9.0).abs() < 1e-12 * plain);
        // Segments of 1, 1, 2, 2, 1, 1, 2, 2, 1, 1: the plain estimate is 0 (products 2 - 2 +
        // ...), corrected to 1 / 7.
        let pattern = [1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0, 1.0, 1.0];
        let means: Vec<f64> = pattern.iter().flat_map(|v| [*v; 3]).collect();
        let found = segments_of(&means);
        let values: Vec<f64> = pattern.iter().map(|v: &f64| v.ln()).collect();
        let mean = values.iter().sum::<f64>() / 10.0;
        let plain_r = values
            .windows(2)
            .map(|pair| (pair[0] - mean) * (pair[1] - mean))
            .sum::<f64>()
            / values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
        let corrected = (10.0 * plain_r + 1.0) / 7.0;
        assert!(
            (found.autocorrelation - corrected).abs() < 1e-12,
            "{plain_r}"
        );
        assert!(found.autocorrelation > 0.0 && found.autocorrelation < MAX_AUTOCORRELATION);
    }
}
