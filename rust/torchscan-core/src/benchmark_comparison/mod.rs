//! Comparing two benchmark reports: ratios with seeded bootstrap intervals and verdicts that use
//! both significance and a minimum effect size; deltas withheld when the output check failed.
//! Two merged distributed jobs (`distributed_benchmark`) are compared the same way, by their job
//! views ([`job_view`]).

use std::fmt;

use crate::distributed::job_view;
use crate::format::{NOT_RECORDED, dtypes_or, recorded_json_text, recorded_text};
use crate::schema::benchmark::BenchmarkReport;
use crate::schema::common::{
    Context, Diagnostic, DiagnosticCode, MetricResult, MetricStatus, SchemaVersionV1, Severity,
};
use crate::schema::comparison::{
    BenchmarkComparisonKind, BenchmarkComparisonReport, CheckStatus, CheckSummary, ComparedSide,
    ComparisonSettings, DeltaStatus, MetricDelta, Verdict,
};
use crate::schema::distributed::DistributedBenchmarkReport;
use crate::schema::output_check::OutputCheckReport;
use crate::{drift, stats};

/// The most bootstrap resamples a comparison accepts: more would only cost time and memory.
pub const MAX_BOOTSTRAP_RESAMPLES: u64 = 1_000_000;

/// How a comparison is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Confidence level of the intervals, in (0, 1).
    pub confidence_level: f64,
    /// Bootstrap resamples, from 1 to [`MAX_BOOTSTRAP_RESAMPLES`].
    pub bootstrap_resamples: u64,
    /// Seed of the bootstrap, so the same inputs give the same report.
    pub seed: u64,
    /// Smallest relative change that counts (for example 0.02 for 2%): finite and at least 0.
    pub min_effect: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            confidence_level: 0.95,
            bootstrap_resamples: 2000,
            seed: 0,
            min_effect: 0.02,
        }
    }
}

/// How the timed blocks of the two reports relate, which decides how intervals are resampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pairing {
    /// Measured apart: each side's blocks are resampled on their own, and the interval is that
    /// of the ratio of the two medians (latency) or of the two throughputs.
    #[default]
    Independent,
    /// Measured in one interleaved run: block `i` of each side ran in the same round (A B, B A,
    /// ...), so rounds are resampled whole and the latency interval is that of the median of
    /// per-round ratios, in which drift of the machine between rounds cancels.
    Rounds,
}

/// Why two benchmark reports cannot be compared.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchCompareError {
    /// The two reports count different work.
    DifferentWork {
        /// The baseline's work units and unit.
        baseline: String,
        /// The candidate's work units and unit.
        candidate: String,
    },
    /// An option is out of range.
    InvalidOption(String),
    /// A paired comparison was asked for reports whose blocks do not pair up.
    NotPaired(String),
    /// One side is a single-process `benchmark` and the other a merged `distributed_benchmark`.
    DifferentKinds {
        /// The baseline's kind.
        baseline: String,
        /// The candidate's kind.
        candidate: String,
    },
}

impl fmt::Display for BenchCompareError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchCompareError::DifferentWork {
                baseline,
                candidate,
            } => write!(
                formatter,
                "the reports count different work ({baseline} vs {candidate} per call); measure \
                 both with the same work_units and work_unit"
            ),
            BenchCompareError::InvalidOption(message) => formatter.write_str(message),
            BenchCompareError::NotPaired(why) => write!(
                formatter,
                "the reports cannot be compared round by round: {why}; compare reports of one \
                 interleaved run (torchscan.compare_workloads), or compare them as independent"
            ),
            BenchCompareError::DifferentKinds {
                baseline,
                candidate,
            } => write!(
                formatter,
                "the baseline is a `{baseline}` report and the candidate a `{candidate}` report: \
                 a single-process benchmark is compared with another, and a merged distributed \
                 job (merge_rank_reports) with another"
            ),
        }
    }
}

impl std::error::Error for BenchCompareError {}

/// A small, seeded generator (SplitMix64): deterministic bootstrap resampling without a crate.
struct SplitMix64(u64);

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
fn block_means(report: &BenchmarkReport) -> Option<Vec<f64>> {
    let timing = report.timing.as_ref()?;
    stats::per_call_means(&timing.block_durations_s, timing.calls_per_block).ok()
}

/// The percentile bootstrap interval of `statistic(baseline, candidate)` over whole rounds: the
/// same resampled indices on both sides, so each round keeps its pair of blocks together.
fn paired_interval(
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
fn median_of_ratios(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
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
fn throughput_ratio(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    let base = stats::mean(baseline).ok()?;
    let cand = stats::mean(candidate).ok().filter(|m| *m > 0.0)?;
    Some(base / cand).filter(|ratio| ratio.is_finite())
}

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

/// The verdict of a ratio interval; `lower_is_better` for latency, not for throughput.
fn verdict(low: f64, high: f64, min_effect: f64, lower_is_better: bool) -> Verdict {
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

fn not_given(metric: &str, unit: &str, status: DeltaStatus, reason: String) -> MetricDelta {
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
fn add_reason(delta: &mut MetricDelta, reason: String) {
    delta.reason = Some(match delta.reason.take() {
        Some(before) => format!("{before}; {reason}"),
        None => reason,
    });
}

fn plain_delta(metric: &str, baseline: &MetricResult, candidate: &MetricResult) -> MetricDelta {
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

fn context_differences(baseline: &Context, candidate: &Context) -> Vec<String> {
    let mut differences = Vec::new();
    let mut note = |name: &str, left: String, right: String| {
        if left != right {
            differences.push(format!("{name} ({left} vs {right})"));
        }
    };
    note(
        "device",
        recorded_text(&baseline.device),
        recorded_text(&candidate.device),
    );
    note(
        "threads",
        recorded_text(&baseline.torch_threads),
        recorded_text(&candidate.torch_threads),
    );
    // A change of dtypes between two recorded lists is a change of precision, named apart.
    if baseline.dtypes.is_empty() || candidate.dtypes.is_empty() {
        note(
            "dtypes",
            dtypes_or(&baseline.dtypes, ",", NOT_RECORDED),
            dtypes_or(&candidate.dtypes, ",", NOT_RECORDED),
        );
    }
    note(
        "torch version",
        recorded_text(&baseline.torch_version),
        recorded_text(&candidate.torch_version),
    );
    // Each flag that differs, by its report name: the whole set would bury the one that matters.
    let left = serde_json::to_value(&baseline.flags).unwrap_or_default();
    let right = serde_json::to_value(&candidate.flags).unwrap_or_default();
    if let (Some(left), Some(right)) = (left.as_object(), right.as_object()) {
        for (name, value) in left {
            if name == "autocast" {
                continue; // part of the precision, named apart
            }
            let other = right.get(name).unwrap_or(&serde_json::Value::Null);
            note(
                &format!("flag {name}"),
                recorded_json_text(value),
                recorded_json_text(other),
            );
        }
    }
    differences
}

/// The change of precision between two benchmarks, when both recorded their dtypes or their
/// autocast regions and these differ: `float32 -> bfloat16` (the dtypes computed in, largest
/// FLOP share first). Never a refusal: the precision is often the change under test.
fn precision_change(baseline: &Context, candidate: &Context) -> Option<String> {
    let mut parts = Vec::new();
    // The main precision is the first dtype of a context (the largest FLOP share, or the
    // output's without an operator FLOPs pass): a change of it changes what the deltas mean;
    // a change of the others only (one float64 scalar beside float32 work) is said as such.
    let mut main_changed = false;
    if !baseline.dtypes.is_empty()
        && !candidate.dtypes.is_empty()
        && baseline.dtypes != candidate.dtypes
    {
        let (before, after) = (
            crate::schema::common::dtypes_text(&baseline.dtypes, ", "),
            crate::schema::common::dtypes_text(&candidate.dtypes, ", "),
        );
        main_changed = baseline.dtypes.first() != candidate.dtypes.first();
        if main_changed {
            parts.push(format!(
                "precision changed: {before} -> {after} (context dtypes, main precision first)"
            ));
        } else {
            parts.push(format!(
                "dtypes changed: {before} -> {after}; the main precision stays {}",
                crate::schema::common::dtypes_text(&baseline.dtypes[..1], ", ")
            ));
        }
    }
    if baseline.flags.autocast.is_some()
        && candidate.flags.autocast.is_some()
        && baseline.flags.autocast != candidate.flags.autocast
    {
        main_changed = true;
        parts.push(format!(
            "autocast changed: {} -> {}",
            baseline.flags.autocast_text().unwrap_or_default(),
            candidate.flags.autocast_text().unwrap_or_default()
        ));
    }
    if parts.is_empty() {
        return None;
    }
    if !main_changed {
        return Some(parts.join("; "));
    }
    Some(format!(
        "{}; the deltas include this change of precision (compare outputs with check_outputs \
         and tolerances for the lower precision)",
        parts.join("; ")
    ))
}

/// The rate metrics both reports carry, with a number on at least one side: `achieved_flop_rate`
/// and `flop_utilization`. Reports written before they were recorded, or without a peak on
/// either side, add nothing, so their comparisons keep their rows.
fn rate_pairs<'a>(
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

/// A report is noisy when other processes used more than this share of all CPU time while it
/// was timed (the threshold of its `noisy_machine` diagnostic).
pub const NOISY_OTHER_CPU_RATIO: f64 = 0.10;
/// A report is noisy when the hypervisor stole more than this share of all CPU time.
pub const NOISY_STEAL_RATIO: f64 = 0.02;
/// A report is noisy when its timing thread was preempted more often than this per second.
pub const NOISY_CONTEXT_SWITCHES_PER_S: f64 = 50.0;

/// The largest share of the machine that the noise allowance counts as taken by others: past
/// it, the allowance (a factor of 20) would forbid every verdict of change anyway.
pub const MAX_NOISE_SHARE: f64 = 0.95;

/// The timed span of a report in seconds: from its first block's start to its last block's end
/// (the sum of block durations when the report predates `block_starts_s`).
fn timed_span_s(report: &BenchmarkReport) -> Option<f64> {
    let timing = report.timing.as_ref()?;
    match &timing.block_starts_s {
        Some(starts) => {
            let last = starts.len().checked_sub(1)?;
            Some(starts[last] + timing.block_durations_s.get(last)?)
        }
        None => Some(timing.block_durations_s.iter().sum()),
    }
}

/// What competed with one side while it was timed, as a comparison weighs it.
struct SideNoise {
    /// The noise metrics past their thresholds, as text.
    passed: Vec<String>,
    /// The slowdown the noise can explain, as a factor: `1 / (1 - a)`, where `a` is other
    /// processes' share of all CPU time plus steal (at least [`NOISY_OTHER_CPU_RATIO`], at most
    /// [`MAX_NOISE_SHARE`]): the workload got at least `1 - a` of the machine it would have had.
    allowance: f64,
}

fn complete_value(metric: Option<&MetricResult>) -> Option<f64> {
    metric
        .filter(|metric| metric.status == MetricStatus::Complete)
        .and_then(|metric| metric.value)
}

/// The side's noise when it passed a threshold or the report carries `noisy_machine`.
fn side_noise(report: &BenchmarkReport) -> Option<SideNoise> {
    let metrics = &report.metrics;
    let other = complete_value(metrics.machine_other_cpu_ratio.as_ref());
    let steal = complete_value(metrics.cpu_steal_ratio.as_ref());
    let switches = complete_value(metrics.involuntary_context_switches.as_ref());
    let mut passed = Vec::new();
    if let Some(other) = other.filter(|other| *other > NOISY_OTHER_CPU_RATIO) {
        passed.push(format!(
            "machine_other_cpu_ratio {other:.3} > {NOISY_OTHER_CPU_RATIO:.2}"
        ));
    }
    if let Some(steal) = steal.filter(|steal| *steal > NOISY_STEAL_RATIO) {
        passed.push(format!(
            "cpu_steal_ratio {steal:.3} > {NOISY_STEAL_RATIO:.2}"
        ));
    }
    if let (Some(switches), Some(span)) = (switches, timed_span_s(report))
        && span > 0.0
        && switches / span > NOISY_CONTEXT_SWITCHES_PER_S
    {
        passed.push(format!(
            "involuntary_context_switches {switches:.0} in {span:.2} s ({:.0} per second > \
             {NOISY_CONTEXT_SWITCHES_PER_S:.0})",
            switches / span
        ));
    }
    let recorded = report
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.code == DiagnosticCode::NoisyMachine);
    if passed.is_empty() {
        if !recorded {
            return None;
        }
        passed.push("its noisy_machine diagnostic".to_owned());
    }
    let share =
        (other.unwrap_or(0.0) + steal.unwrap_or(0.0)).clamp(NOISY_OTHER_CPU_RATIO, MAX_NOISE_SHARE);
    let allowance = 1.0 / (1.0 - share);
    Some(SideNoise { passed, allowance })
}

/// The verdict of reports measured apart when a side was noisy: a change only where the whole
/// interval lies beyond what the noise can explain on top of the minimum effect, and never
/// `no_detectable_change`, since the noise can hide a change as well as fake one.
fn noisy_verdict(
    low: f64,
    high: f64,
    min_effect: f64,
    allowance: f64,
    lower_is_better: bool,
) -> Verdict {
    let (better, worse) = if lower_is_better {
        (Verdict::Faster, Verdict::Slower)
    } else {
        (Verdict::Slower, Verdict::Faster)
    };
    if high < (1.0 - min_effect) / allowance {
        better
    } else if low > (1.0 + min_effect) * allowance {
        worse
    } else {
        Verdict::Inconclusive
    }
}

/// The interval of reports measured apart (see [`crate::drift`]), or why there is none.
fn apart_interval(
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

/// Work units per call as people write them: `32`, `0.5`, and `1e-300` rather than three
/// hundred zeros.
fn work_text(work_units: f64) -> String {
    if work_units != 0.0 && !(1e-4..1e16).contains(&work_units.abs()) {
        format!("{work_units:e}")
    } else {
        format!("{work_units}")
    }
}

fn check_options(options: &CompareOptions) -> Result<(), BenchCompareError> {
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
    let mut diagnostics = Vec::new();
    let check_summary = match check {
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
    };
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
    let throughput_unit = crate::schema::common::throughput_unit(&base_work.work_unit);
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
    let failed = check_summary.status == CheckStatus::Failed;
    let mut deltas = Vec::new();
    let mut overall = Verdict::Inconclusive;
    let mut rng = SplitMix64(options.seed);
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
    for (metric, base, cand) in names {
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
            && let (Some(base_means), Some(cand_means)) = (&samples.0, &samples.1)
        {
            let interval = match pairing {
                Pairing::Independent => apart_interval(
                    (base_means, spans.0),
                    (cand_means, spans.1),
                    latency,
                    options.confidence_level,
                ),
                Pairing::Rounds => {
                    let found = if latency {
                        paired_interval(base_means, cand_means, median_of_ratios, options, &mut rng)
                    } else {
                        paired_interval(base_means, cand_means, throughput_ratio, options, &mut rng)
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
            };
            let found = match interval {
                Ok((low, high, method)) => {
                    delta.ratio_ci_low = Some(low);
                    delta.ratio_ci_high = Some(high);
                    delta.method = Some(method);
                    let plain = verdict(low, high, options.min_effect, latency);
                    if noise.is_empty() {
                        plain
                    } else if pairing == Pairing::Rounds {
                        add_reason(
                            &mut delta,
                            format!(
                                "timed on a noisy machine ({noise_text}); the two sides were \
                             interleaved, so the load fell on both blocks of each round alike \
                             and the interval of per-round ratios includes its effect"
                            ),
                        );
                        plain
                    } else {
                        let weighed =
                            noisy_verdict(low, high, options.min_effect, allowance, latency);
                        add_reason(
                            &mut delta,
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
                    add_reason(&mut delta, why);
                    Verdict::Inconclusive
                }
            };
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
    if !failed {
        for (side, side_noise) in &noise {
            diagnostics.push(Diagnostic {
                code: DiagnosticCode::NoisyMachine,
                severity: Severity::Warning,
                metric: Some("latency".to_owned()),
                message: format!(
                    "the {side} was timed on a noisy machine: {}; {}",
                    side_noise.passed.join(", "),
                    if pairing == Pairing::Rounds {
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
    if failed {
        overall = Verdict::Withheld;
        diagnostics.push(Diagnostic {
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
        });
    }
    if pairing == Pairing::Rounds
        && !failed
        && let (Some(base_means), Some(cand_means)) = (&samples.0, &samples.1)
    {
        let estimate = median_of_ratios(base_means, cand_means)
            .map(|ratio| format!(" (here {ratio:.3})"))
            .unwrap_or_default();
        diagnostics.push(Diagnostic {
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
        });
    }
    Ok(BenchmarkComparisonReport {
        schema_version: SchemaVersionV1,
        kind: BenchmarkComparisonKind::Tag,
        context: Context {
            torchscan_version: crate::VERSION.to_owned(),
            ..Context::default()
        },
        diagnostics,
        check: check_summary,
        baseline: ComparedSide {
            workload: baseline.workload.name.clone(),
            context: baseline.context.clone(),
        },
        candidate: ComparedSide {
            workload: candidate.workload.name.clone(),
            context: candidate.context.clone(),
        },
        work_unit: base_work.work_unit.clone(),
        settings: ComparisonSettings {
            confidence_level: options.confidence_level,
            bootstrap_resamples: options.bootstrap_resamples,
            seed: options.seed,
            min_effect: options.min_effect,
        },
        verdict: overall,
        deltas,
    })
}

/// A side of a JSON comparison: one process's benchmark, or a merged distributed job.
enum Timed {
    Single(Box<BenchmarkReport>),
    Job(Box<DistributedBenchmarkReport>),
}

impl Timed {
    fn kind(&self) -> &'static str {
        match self {
            Timed::Single(_) => crate::ReportKind::Benchmark.as_str(),
            Timed::Job(_) => crate::ReportKind::DistributedBenchmark.as_str(),
        }
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

/// Why a JSON comparison produced no report.
#[derive(Debug, Clone, PartialEq)]
pub enum BenchCompareFailure {
    /// An input is not a valid report of the expected kind; paths are prefixed by the side.
    Invalid(Vec<crate::Problem>),
    /// The reports cannot be compared.
    Refused(BenchCompareError),
    /// The comparison produced an invalid report: a bug, reported rather than returned.
    Internal(Vec<crate::Problem>),
}

fn read_side<T>(
    side: &str,
    text: &str,
    pick: impl Fn(crate::Report) -> Option<T>,
    kind: &str,
) -> Result<T, BenchCompareFailure> {
    let prefix = |problems: Vec<crate::Problem>| {
        problems
            .iter()
            .map(|problem| problem.on_side(side))
            .collect::<Vec<_>>()
    };
    let report = crate::read_report(text)
        .map_err(|problems| BenchCompareFailure::Invalid(prefix(problems)))?;
    let found = report.kind().as_str();
    pick(report).ok_or_else(|| {
        BenchCompareFailure::Invalid(vec![crate::Problem::new(
            format!("{side}:$.kind"),
            format!("expected a `{kind}` report, found `{found}`"),
        )])
    })
}

/// Reads, validates and compares benchmark reports given as JSON text; returns pretty JSON.
/// Both sides are `benchmark` reports, or both `distributed_benchmark` reports (compared by
/// [`compare_distributed_with`]); a mix is refused ([`BenchCompareError::DifferentKinds`]).
pub fn compare_benchmarks_json(
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    options: &CompareOptions,
) -> Result<String, BenchCompareFailure> {
    compare_benchmarks_json_with(baseline, candidate, check, options, Pairing::Independent)
}

/// [`compare_benchmarks_json`] with the timed blocks paired as `pairing` says.
pub fn compare_benchmarks_json_with(
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    options: &CompareOptions,
    pairing: Pairing,
) -> Result<String, BenchCompareFailure> {
    let benchmark = |report: crate::Report| match report {
        crate::Report::Benchmark(inner) => Some(Timed::Single(inner)),
        crate::Report::DistributedBenchmark(inner) => Some(Timed::Job(inner)),
        _ => None,
    };
    let baseline = read_side("baseline", baseline, benchmark, "benchmark")?;
    let candidate = read_side("candidate", candidate, benchmark, "benchmark")?;
    let check = match check {
        None => None,
        Some(text) => Some(read_side(
            "check",
            text,
            |report| match report {
                crate::Report::OutputCheck(inner) => Some(*inner),
                _ => None,
            },
            "output_check",
        )?),
    };
    let report = match (&baseline, &candidate) {
        (Timed::Single(baseline), Timed::Single(candidate)) => {
            compare_benchmarks_with(baseline, candidate, check.as_ref(), options, pairing)
        }
        (Timed::Job(baseline), Timed::Job(candidate)) => {
            compare_distributed_with(baseline, candidate, check.as_ref(), options, pairing)
        }
        _ => Err(BenchCompareError::DifferentKinds {
            baseline: baseline.kind().to_owned(),
            candidate: candidate.kind().to_owned(),
        }),
    }
    .map_err(BenchCompareFailure::Refused)?;
    let wrapped = crate::Report::BenchmarkComparison(Box::new(report));
    let problems = crate::validate::check_report(&wrapped);
    if !problems.is_empty() {
        return Err(BenchCompareFailure::Internal(problems));
    }
    Ok(crate::to_json_text(&wrapped))
}

#[cfg(test)]
mod tests {
    use super::*;

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
