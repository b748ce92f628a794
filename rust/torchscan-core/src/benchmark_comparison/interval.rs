//! The intervals of the ratios of latency and throughput and their verdicts: a seeded bootstrap
//! over whole rounds for paired sides, batch means over time-ordered segments for sides measured
//! apart.

use crate::schema::benchmark::BenchmarkReport;
use crate::schema::comparison::Verdict;
use crate::{drift, stats};

use super::CompareOptions;

/// A small, seeded generator (SplitMix64): deterministic bootstrap resampling without a crate.
pub(super) struct SplitMix64(pub(super) u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..len` (`len` > 0); the modulo bias is negligible for block counts.
    fn index(&mut self, len: usize) -> usize {
        (self.next_u64() % len as u64) as usize
    }
}

/// Per-call block means of a report's timing evidence, if it has any.
pub(super) fn block_means(report: &BenchmarkReport) -> Option<Vec<f64>> {
    let timing = report.timing.as_ref()?;
    stats::per_call_means(&timing.block_durations_s, timing.calls_per_block).ok()
}

/// The percentile bootstrap interval of `statistic(baseline, candidate)` over whole rounds: the
/// same resampled indices on both sides, so each round keeps its pair of blocks together.
pub(super) fn paired_interval(
    baseline: &[f64],
    candidate: &[f64],
    statistic: impl Fn(&[f64], &[f64]) -> Option<f64>,
    options: &CompareOptions,
    rng: &mut SplitMix64,
) -> Option<(f64, f64)> {
    let rounds = baseline.len().min(candidate.len());
    let mut values = Vec::with_capacity(options.bootstrap_resamples as usize);
    let (mut left, mut right) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..options.bootstrap_resamples {
        left.clear();
        right.clear();
        for _ in 0..rounds {
            let index = rng.index(rounds);
            left.push(baseline[index]);
            right.push(candidate[index]);
        }
        // A resample whose statistic is not a finite number (a ratio past the float range)
        // leaves no interval: one over the other resamples only would be biased.
        values.push(statistic(&left, &right).filter(|value| value.is_finite())?);
    }
    let tail = (1.0 - options.confidence_level) / 2.0;
    let low = stats::quantile(&values, tail).ok()?;
    let high = stats::quantile(&values, 1.0 - tail).ok()?;
    Some((low, high))
}

/// The median of per-round ratios `candidate[i] / baseline[i]` (latency, paired rounds).
pub(super) fn median_of_ratios(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    let ratios: Vec<f64> = baseline
        .iter()
        .zip(candidate)
        .filter(|(base, _)| **base > 0.0)
        .map(|(base, cand)| cand / base)
        .collect();
    stats::median(&ratios).ok()
}

/// The ratio of throughputs over the same rounds: the baseline's mean time per call over the
/// candidate's (throughput is proportional to calls / time).
pub(super) fn throughput_ratio(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    let base = stats::mean(baseline).ok()?;
    let cand = stats::mean(candidate).ok().filter(|m| *m > 0.0)?;
    Some(base / cand).filter(|ratio| ratio.is_finite())
}

/// The verdict of a ratio interval; `lower_is_better` for latency, not for throughput.
pub(super) fn verdict(low: f64, high: f64, min_effect: f64, lower_is_better: bool) -> Verdict {
    let (better, worse) = if lower_is_better {
        (Verdict::Faster, Verdict::Slower)
    } else {
        (Verdict::Slower, Verdict::Faster)
    };
    if high < 1.0 - min_effect {
        better
    } else if low > 1.0 + min_effect {
        worse
    } else if low >= 1.0 - min_effect && high <= 1.0 + min_effect {
        Verdict::NoDetectableChange
    } else {
        Verdict::Inconclusive
    }
}

/// The timed span of a report in seconds: from its first block's start to its last block's end
/// (the sum of block durations when the report predates `block_starts_s`).
pub(super) fn timed_span_s(report: &BenchmarkReport) -> Option<f64> {
    let timing = report.timing.as_ref()?;
    match &timing.block_starts_s {
        Some(starts) => {
            let last = starts.len().checked_sub(1)?;
            Some(starts[last] + timing.block_durations_s.get(last)?)
        }
        None => Some(timing.block_durations_s.iter().sum()),
    }
}

/// The interval of reports measured apart (see [`crate::drift`]), or why there is none.
pub(super) fn apart_interval(
    baseline: (&[f64], Option<f64>),
    candidate: (&[f64], Option<f64>),
    latency: bool,
    confidence_level: f64,
) -> Result<(f64, f64, String), String> {
    let statistic = if latency {
        drift::Statistic::Median
    } else {
        drift::Statistic::Mean
    };
    let cut = |side: &str, (means, span): (&[f64], Option<f64>)| match drift::segments(
        means,
        span.unwrap_or(0.0),
        statistic,
    ) {
        Some(Ok(segments)) => Ok(segments),
        Some(Err(short)) => Err(format!(
            "the {side} report is too short to estimate the drift of the machine: {}",
            short.advice()
        )),
        None => Err(format!(
            "the {side} report has a block mean that is not positive"
        )),
    };
    let (base, cand) = match (cut("baseline", baseline), cut("candidate", candidate)) {
        (Ok(base), Ok(cand)) => (base, cand),
        (Err(why), Ok(_)) | (Ok(_), Err(why)) => return Err(why),
        (Err(base), Err(cand)) => return Err(format!("{base}; {cand}")),
    };
    let found = drift::interval(&base, &cand, confidence_level)
        .ok_or_else(|| "the interval does not fit in a finite float".to_owned())?;
    let (low, high) = if latency {
        (found.low, found.high)
    } else {
        // Throughput is proportional to the inverse of the mean time per call.
        (1.0 / found.high, 1.0 / found.low)
    };
    if !(low.is_finite() && high.is_finite()) {
        // An end that underflowed to 0 (or a subnormal one) has no finite inverse.
        return Err("the interval does not fit in a finite float".to_owned());
    }
    let method = format!(
        "measured apart: Welch's t interval at {}% of the ratio of {} per call, from batch means \
         over {} and {} time-ordered segments of consecutive blocks (one value per segment, the \
         log of its {}; variance between segments inflated by their lag-1 autocorrelation, {:.2} \
         and {:.2}; {:.1} degrees of freedom); assumes the machine drifted between the two \
         reports as it did within each, so drift slower than a report is not in the interval",
        confidence_level * 100.0,
        if latency {
            "median times"
        } else {
            "throughputs (inverse mean times)"
        },
        base.values.len(),
        cand.values.len(),
        if latency { "median" } else { "mean" },
        base.autocorrelation,
        cand.autocorrelation,
        found.degrees_of_freedom,
    );
    Ok((low, high, method))
}

#[cfg(test)]
mod tests {
    use super::super::compare::check_options;
    use super::super::{BenchCompareError, CompareOptions, MAX_BOOTSTRAP_RESAMPLES};
    use super::*;
    use crate::schema::comparison::Verdict;

    #[test]
    fn verdicts_use_significance_and_effect_size() {
        assert_eq!(verdict(0.80, 0.90, 0.02, true), Verdict::Faster);
        assert_eq!(verdict(1.05, 1.10, 0.02, true), Verdict::Slower);
        assert_eq!(verdict(0.99, 1.01, 0.02, true), Verdict::NoDetectableChange);
        assert_eq!(verdict(0.95, 1.05, 0.02, true), Verdict::Inconclusive);
        // A significant change smaller than the minimum effect is no detectable change.
        assert_eq!(
            verdict(1.005, 1.01, 0.02, true),
            Verdict::NoDetectableChange
        );
        assert_eq!(verdict(1.05, 1.10, 0.02, false), Verdict::Faster);
    }

    #[test]
    fn options_out_of_range_are_refused_before_any_work() {
        let valid = CompareOptions::default();
        let refused = |options: CompareOptions| match check_options(&options) {
            Err(BenchCompareError::InvalidOption(message)) => message,
            other => panic!("expected an invalid option, got {other:?}"),
        };
        for level in [
            0.0,
            1.0,
            -0.5,
            1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let message = refused(CompareOptions {
                confidence_level: level,
                ..valid
            });
            assert!(
                message.starts_with("confidence level must be in (0, 1)"),
                "{message}"
            );
        }
        for resamples in [0, MAX_BOOTSTRAP_RESAMPLES + 1, u64::MAX] {
            let message = refused(CompareOptions {
                bootstrap_resamples: resamples,
                ..valid
            });
            assert_eq!(
                message,
                format!("bootstrap resamples must be from 1 to 1000000, got {resamples}")
            );
        }
        for effect in [-0.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let message = refused(CompareOptions {
                min_effect: effect,
                ..valid
            });
            assert!(
                message.starts_with("minimum effect must be finite"),
                "{message}"
            );
        }
        for accepted in [
            CompareOptions {
                confidence_level: f64::MIN_POSITIVE,
                bootstrap_resamples: 1,
                seed: u64::MAX,
                min_effect: 0.0,
            },
            CompareOptions {
                confidence_level: 1.0 - f64::EPSILON / 2.0,
                bootstrap_resamples: MAX_BOOTSTRAP_RESAMPLES,
                seed: 0,
                min_effect: f64::MAX,
            },
        ] {
            assert_eq!(check_options(&accepted), Ok(()));
        }
    }

    #[test]
    fn the_generator_is_deterministic() {
        let mut first = SplitMix64(7);
        let mut second = SplitMix64(7);
        let a: Vec<u64> = (0..5).map(|_| first.next_u64()).collect();
        let b: Vec<u64> = (0..5).map(|_| second.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(SplitMix64(8).next_u64(), a[0]);
    }
}
