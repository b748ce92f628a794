//! Robust statistics over per-call block durations: the only implementation of them in torchscan.
//!
//! Every function returns an error, never panics, on empty input or a non-finite value.

use std::fmt;

/// Why a statistic could not be computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatsError {
    /// The sample has no values.
    Empty,
    /// The value at `index` is NaN or infinite.
    NonFinite {
        /// Position of the offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A quantile outside `[0, 1]` (or NaN) was asked for.
    QuantileOutOfRange(f64),
    /// A block has zero calls.
    ZeroCalls,
    /// The result does not fit in a finite `f64`.
    Overflow,
}

impl fmt::Display for StatsError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::Empty => formatter.write_str("no values: a statistic needs at least one"),
            StatsError::NonFinite { index, value } => {
                write!(
                    formatter,
                    "value {index} is {value}; every value must be finite"
                )
            }
            StatsError::QuantileOutOfRange(q) => {
                write!(formatter, "quantile {q} is outside [0, 1]")
            }
            StatsError::ZeroCalls => formatter.write_str("calls per block must be at least 1"),
            StatsError::Overflow => formatter.write_str("the result overflows a finite float"),
        }
    }
}

impl std::error::Error for StatsError {}

fn check(values: &[f64]) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    match values.iter().position(|value| !value.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

fn finite(result: f64) -> Result<f64, StatsError> {
    if result.is_finite() {
        Ok(result)
    } else {
        Err(StatsError::Overflow)
    }
}

fn sorted(values: &[f64]) -> Result<Vec<f64>, StatsError> {
    check(values)?;
    let mut copy = values.to_vec();
    copy.sort_by(f64::total_cmp);
    Ok(copy)
}

/// Linear interpolation between two order statistics, written so that it stays within
/// `[low, high]` and never overflows when `high - low` would.
fn interpolate(low: f64, high: f64, fraction: f64) -> f64 {
    if fraction == 0.0 || low == high {
        return low;
    }
    let result = low * (1.0 - fraction) + high * fraction;
    result.clamp(low.min(high), low.max(high))
}

fn quantile_of_sorted(sorted_values: &[f64], q: f64) -> f64 {
    let last = sorted_values.len() - 1;
    let position = q * last as f64;
    let below = position.floor();
    // `below` is in [0, last] because q is in [0, 1].
    let below_index = below as usize;
    let above_index = (below_index + 1).min(last);
    interpolate(
        sorted_values[below_index],
        sorted_values[above_index],
        position - below,
    )
}

/// The `q`-quantile, `q` in `[0, 1]`, by linear interpolation between order statistics.
///
/// This is numpy's default (`method="linear"`) and Python's `statistics.quantiles(...,
/// method="inclusive")`: with the values sorted as `x[0] <= ... <= x[n-1]`, the position is
/// `h = (n - 1) * q` and the result is `x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])`.
pub fn quantile(values: &[f64], q: f64) -> Result<f64, StatsError> {
    if !(0.0..=1.0).contains(&q) {
        return Err(StatsError::QuantileOutOfRange(q));
    }
    let sorted_values = sorted(values)?;
    Ok(quantile_of_sorted(&sorted_values, q))
}

/// The median (the 0.5 quantile; the mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> Result<f64, StatsError> {
    quantile(values, 0.5)
}

/// The first quartile, median and third quartile (0.25, 0.5 and 0.75 quantiles, linear
/// interpolation as in [`quantile`]).
pub fn quartiles(values: &[f64]) -> Result<[f64; 3], StatsError> {
    let sorted_values = sorted(values)?;
    Ok([0.25, 0.5, 0.75].map(|q| quantile_of_sorted(&sorted_values, q)))
}

/// The interquartile range, third quartile minus first (linear interpolation as in [`quantile`]).
pub fn iqr(values: &[f64]) -> Result<f64, StatsError> {
    let [first, _, third] = quartiles(values)?;
    finite(third - first)
}

/// The arithmetic mean, summed with compensation (Neumaier) over `value / n` so that it neither
/// loses small terms nor overflows for large ones.
pub fn mean(values: &[f64]) -> Result<f64, StatsError> {
    check(values)?;
    let count = values.len() as f64;
    let mut sum = 0.0_f64;
    let mut compensation = 0.0_f64;
    for value in values {
        let term = value / count;
        let total = sum + term;
        if sum.abs() >= term.abs() {
            compensation += (sum - total) + term;
        } else {
            compensation += (term - total) + sum;
        }
        sum = total;
    }
    finite(sum + compensation)
}

/// The smallest value.
pub fn min(values: &[f64]) -> Result<f64, StatsError> {
    check(values)?;
    Ok(values.iter().copied().fold(f64::INFINITY, f64::min))
}

/// The largest value.
pub fn max(values: &[f64]) -> Result<f64, StatsError> {
    check(values)?;
    Ok(values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// The median absolute deviation from the median, unscaled (no 1.4826 normal-consistency factor).
pub fn median_absolute_deviation(values: &[f64]) -> Result<f64, StatsError> {
    let center = median(values)?;
    let deviations: Vec<f64> = values.iter().map(|value| (value - center).abs()).collect();
    let result = median(&deviations).map_err(|error| match error {
        StatsError::NonFinite { .. } => StatsError::Overflow,
        other => other,
    })?;
    finite(result)
}

/// Per-call means of timed blocks: each block's duration divided by the calls it ran.
pub fn per_call_means(
    block_durations_s: &[f64],
    calls_per_block: u64,
) -> Result<Vec<f64>, StatsError> {
    if calls_per_block == 0 {
        return Err(StatsError::ZeroCalls);
    }
    check(block_durations_s)?;
    let calls = calls_per_block as f64;
    Ok(block_durations_s
        .iter()
        .map(|duration| duration / calls)
        .collect())
}

/// Every statistic of a sample at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest value.
    pub max: f64,
    /// Interquartile range.
    pub iqr: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
}

/// Computes a [`Summary`] of `values`.
pub fn summarize(values: &[f64]) -> Result<Summary, StatsError> {
    let [q1, median_value, q3] = quartiles(values)?;
    Ok(Summary {
        count: values.len(),
        mean: mean(values)?,
        min: min(values)?,
        q1,
        median: median_value,
        q3,
        max: max(values)?,
        iqr: finite(q3 - q1)?,
        mad: median_absolute_deviation(values)?,
    })
}

/// Latency statistics of timed blocks, as a benchmark report states them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockTiming {
    /// Median of per-call block means, in seconds.
    pub latency_s: f64,
    /// Interquartile range of per-call block means, in seconds.
    pub latency_iqr_s: f64,
    /// Total calls over all blocks.
    pub calls: u64,
    /// Total timed seconds over all blocks.
    pub timed_s: f64,
}

/// Latency median and IQR of per-call block means, and the totals throughput is computed from.
pub fn block_timing(
    block_durations_s: &[f64],
    calls_per_block: u64,
) -> Result<BlockTiming, StatsError> {
    // Sorted in place: a report of millions of blocks holds one working copy, not two.
    let mut means = per_call_means(block_durations_s, calls_per_block)?;
    check(&means)?;
    means.sort_by(f64::total_cmp);
    let [q1, median_value, q3] = [0.25, 0.5, 0.75].map(|q| quantile_of_sorted(&means, q));
    let timed_s = finite(block_durations_s.iter().sum())?;
    Ok(BlockTiming {
        latency_s: median_value,
        latency_iqr_s: finite(q3 - q1)?,
        calls: calls_per_block.saturating_mul(block_durations_s.len() as u64),
        timed_s,
    })
}

impl BlockTiming {
    /// Sustained throughput of `work_units` per call over every timed block: work units per
    /// second (`work_units x calls / timed seconds`); 0 when nothing was timed.
    pub fn throughput(&self, work_units: f64) -> f64 {
        if self.timed_s > 0.0 {
            work_units * self.calls as f64 / self.timed_s
        } else {
            0.0
        }
    }
}

/// The natural logarithm of the gamma function for `x > 0` (Lanczos approximation, g = 7,
/// 9 terms; relative error below 1e-13 over the arguments used here).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (index, coefficient) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += coefficient / (x + index as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the regularized incomplete beta function (modified Lentz), valid
/// for `x < (a + 1) / (a + b + 2)`.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        for coefficient in [
            even,
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + coefficient * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + coefficient / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0` and `x` in `[0, 1]`.
fn regularized_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// The cumulative distribution function of Student's t with `df` degrees of freedom at `t`.
fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom (any real
/// `df > 0`, as Welch's approximation gives), for `p` in `(0, 1)`. Deterministic: bisection on
/// the distribution function to a relative precision of about 1e-12.
pub fn student_t_quantile(p: f64, df: f64) -> Result<f64, StatsError> {
    if !(p > 0.0 && p < 1.0) {
        return Err(StatsError::QuantileOutOfRange(p));
    }
    if !(df.is_finite() && df > 0.0) {
        return Err(StatsError::NonFinite {
            index: 0,
            value: df,
        });
    }
    if p == 0.5 {
        return Ok(0.0);
    }
    if p < 0.5 {
        return student_t_quantile(1.0 - p, df).map(|q| -q);
    }
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    while student_t_cdf(high, df) < p {
        high *= 2.0;
        if high > 1e300 {
            return Err(StatsError::Overflow);
        }
    }
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if student_t_cdf(middle, df) < p {
            low = middle;
        } else {
            high = middle;
        }
        if high - low <= 1e-12 * high {
            break;
        }
    }
    finite(0.5 * (low + high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn student_t_quantiles_match_tables() {
        // Critical values from tables, and for fractional df computed with mpmath at 30 digits.
        for (p, df, expected) in [
            (0.975, 1.0, 12.706_204_736),
            (0.975, 10.0, 2.228_138_852),
            (0.995, 9.0, 3.249_835_542),
            (0.995, 18.0, 2.878_440_473),
            (0.95, 30.0, 1.697_260_887),
            (0.975, 1e6, 1.959_966_357),
            (0.995, 2.5, 7.163_728_139),
        ] {
            let found = student_t_quantile(p, df).expect("in range");
            assert!(
                (found - expected).abs() < 1e-6 * expected.max(1.0),
                "t({p}, {df}) = {found}, expected {expected}"
            );
            let lower = student_t_quantile(1.0 - p, df).expect("in range");
            assert!((lower + found).abs() < 1e-9 * found);
        }
        assert!(student_t_quantile(1.0, 5.0).is_err());
        assert!(student_t_quantile(0.5, 0.0).is_err());
        assert!(student_t_quantile(0.5, f64::NAN).is_err());
        assert_eq!(student_t_quantile(0.5, 7.0), Ok(0.0));
    }

    #[test]
    fn known_values() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        assert_eq!(median(&values), Ok(3.5));
        assert_eq!(quartiles(&values), Ok([1.75, 3.5, 5.25]));
        assert_eq!(iqr(&values), Ok(3.5));
        assert_eq!(mean(&values), Ok(3.875));
        assert_eq!(min(&values), Ok(1.0));
        assert_eq!(max(&values), Ok(9.0));
        // |x - 3.5| = 0.5 2.5 0.5 2.5 1.5 5.5 1.5 2.5 -> sorted 0.5 0.5 1.5 1.5 2.5 2.5 2.5 5.5
        assert_eq!(median_absolute_deviation(&values), Ok(2.0));
        assert_eq!(quantile(&[10.0, 20.0], 0.1), Ok(11.0));
        assert_eq!(quantile(&[7.0], 0.9), Ok(7.0));
    }

    #[test]
    fn errors_instead_of_panics() {
        assert_eq!(median(&[]), Err(StatsError::Empty));
        assert_eq!(
            mean(&[1.0, f64::NAN]).map_err(|e| matches!(e, StatsError::NonFinite { index: 1, .. })),
            Err(true)
        );
        assert_eq!(
            quantile(&[1.0], 1.5),
            Err(StatsError::QuantileOutOfRange(1.5))
        );
        assert!(matches!(
            quantile(&[1.0], f64::NAN),
            Err(StatsError::QuantileOutOfRange(_))
        ));
        assert_eq!(per_call_means(&[1.0], 0), Err(StatsError::ZeroCalls));
        assert_eq!(
            iqr(&[-f64::MAX, f64::MAX, f64::MAX, -f64::MAX]),
            Err(StatsError::Overflow)
        );
        assert_eq!(mean(&[f64::MAX, f64::MAX]), Ok(f64::MAX));
    }

    #[test]
    fn block_timing_of_known_blocks() {
        let timing = block_timing(&[0.4, 0.2, 0.3], 100).expect("valid blocks");
        assert!((timing.latency_s - 0.003).abs() < 1e-15);
        assert!((timing.latency_iqr_s - 0.001).abs() < 1e-15);
        assert_eq!(timing.calls, 300);
        assert!((timing.timed_s - 0.9).abs() < 1e-15);
    }

    fn sample() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(-1.0e9..1.0e9_f64, 1..200)
    }

    /// Python's `statistics.quantiles(data, n=n, method="inclusive")`, written independently:
    /// the `n - 1` cut points, each interpolated between two order statistics.
    fn inclusive_cut_points(values: &[f64], n: usize) -> Vec<f64> {
        let mut data = values.to_vec();
        data.sort_by(f64::total_cmp);
        let m = data.len() - 1;
        (1..n)
            .map(|i| {
                let (j, delta) = (i * m / n, i * m % n);
                let next = data.get(j + 1).copied().unwrap_or(data[j]);
                (data[j] * (n - delta) as f64 + next * delta as f64) / n as f64
            })
            .collect()
    }

    fn close(left: f64, right: f64) -> bool {
        (left - right).abs() <= 1e-9 * left.abs().max(right.abs()).max(1.0)
    }

    proptest! {
        #[test]
        fn quantiles_match_the_inclusive_cut_points(
            values in prop::collection::vec(-1.0e6..1.0e6_f64, 2..300),
            n in 2usize..21,
        ) {
            for (i, expected) in inclusive_cut_points(&values, n).into_iter().enumerate() {
                let q = (i + 1) as f64 / n as f64;
                let ours = quantile(&values, q)?;
                prop_assert!(close(ours, expected), "q={} ours={} expected={}", q, ours, expected);
            }
            let [q1, q2, q3] = quartiles(&values)?;
            let expected = inclusive_cut_points(&values, 4);
            prop_assert!(close(q1, expected[0]) && close(q2, expected[1]) && close(q3, expected[2]));
            prop_assert!(close(iqr(&values)?, expected[2] - expected[0]));
        }

        #[test]
        fn median_mean_min_max_match_their_definitions(values in sample()) {
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let middle = sorted.len() / 2;
            let expected = if sorted.len() % 2 == 1 {
                sorted[middle]
            } else {
                (sorted[middle - 1] + sorted[middle]) / 2.0
            };
            prop_assert!(close(median(&values)?, expected));
            // Sums of values of either sign cancel: the error is relative to the largest value.
            let sum: f64 = values.iter().sum();
            let scale = values.iter().fold(1.0_f64, |acc, value| acc.max(value.abs()));
            prop_assert!((mean(&values)? - sum / values.len() as f64).abs() <= 1e-9 * scale);
            prop_assert_eq!(min(&values)?, sorted[0]);
            prop_assert_eq!(max(&values)?, sorted[sorted.len() - 1]);
        }
        #[test]
        fn order_holds(values in sample()) {
            let s = summarize(&values).expect("finite sample");
            prop_assert!(s.min <= s.q1 && s.q1 <= s.median && s.median <= s.q3 && s.q3 <= s.max);
            prop_assert!(s.min <= s.mean && s.mean <= s.max);
            prop_assert!(s.iqr >= 0.0 && s.mad >= 0.0);
            prop_assert!(s.mad <= s.max - s.min);
        }

        #[test]
        fn quantile_is_monotone(values in sample(), a in 0.0..=1.0_f64, b in 0.0..=1.0_f64) {
            let (low, high) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(quantile(&values, low)? <= quantile(&values, high)?);
        }

        #[test]
        fn order_of_values_does_not_matter(mut values in sample()) {
            let before = summarize(&values).expect("finite sample");
            values.reverse();
            let after = summarize(&values).expect("finite sample");
            prop_assert_eq!(before.median, after.median);
            prop_assert_eq!(before.iqr, after.iqr);
            prop_assert_eq!(before.mad, after.mad);
        }

        #[test]
        fn shift_moves_location_not_spread(values in prop::collection::vec(0.0..1000.0_f64, 1..100), shift in -1000.0..1000.0_f64) {
            let base = summarize(&values).expect("finite sample");
            let shifted: Vec<f64> = values.iter().map(|v| v + shift).collect();
            let moved = summarize(&shifted).expect("finite sample");
            prop_assert!((moved.median - base.median - shift).abs() < 1e-9);
            prop_assert!((moved.iqr - base.iqr).abs() < 1e-9);
            prop_assert!((moved.mad - base.mad).abs() < 1e-9);
        }

        #[test]
        fn constant_sample(value in -1.0e12..1.0e12_f64, count in 1usize..50) {
            let values = vec![value; count];
            let s = summarize(&values).expect("finite sample");
            prop_assert_eq!(s.median, value);
            prop_assert_eq!(s.iqr, 0.0);
            prop_assert_eq!(s.mad, 0.0);
            prop_assert!((s.mean - value).abs() <= value.abs() * 1e-15);
        }

        #[test]
        fn non_finite_is_an_error(mut values in sample(), index in 0usize..200, which in 0usize..3) {
            let index = index % values.len();
            values[index] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][which];
            let is_non_finite_at_index = matches!(median(&values), Err(StatsError::NonFinite { index: i, .. }) if i == index);
            prop_assert!(is_non_finite_at_index);
            prop_assert!(mean(&values).is_err());
            prop_assert!(median_absolute_deviation(&values).is_err());
        }
    }
}
