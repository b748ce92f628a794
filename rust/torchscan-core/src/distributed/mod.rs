//! Merging the `benchmark` reports of every rank of a `torch.distributed` job into one
//! `distributed_benchmark` report, and the job view by which two merged reports are compared.
//!
//! Every rank timed aligned blocks: a barrier before block *i* on every rank, so that block *i*
//! covers the same calls everywhere and the job's time for those calls is the slowest rank's.
//! [`merge_rank_reports`] checks that the reports belong to one job (one world, one backend,
//! every rank once, one workload, one timing budget, the same calls in the same blocks) and
//! derives every other member of the merged report from them, deterministically; the validator
//! merges the embedded rank reports again and compares. [`job_view`] reads a merged report as
//! one `benchmark` of the whole job (latency = step time), which is how
//! [`benchmark_comparison`](crate::benchmark_comparison) compares two of them.

use std::fmt;

use crate::format::readable_number;
use crate::problem::Problem;
use crate::schema::benchmark::{
    BenchmarkKind, BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, TimingEvidence,
    TimingSettings, Workload,
};
use crate::schema::common::{
    Diagnostic, DiagnosticCode, DistributedContext, MetricResult, MetricStatus, SchemaVersionV1,
    Severity, throughput_unit,
};
use crate::schema::distributed::{
    DistributedBenchmarkKind, DistributedBenchmarkReport, DistributedJob, DistributedMetrics,
    JobBlock, RankSummary, Straggler,
};
use crate::stats;

/// A step-time IQR of at least this share of the median step time gives a `timing_noise`
/// warning, as the latency of a `benchmark` report does.
pub const TIMING_NOISE_RATIO: f64 = 0.10;
/// A step-time IQR of at least this share of the median step time gives a `high_timing_noise`
/// warning instead, as the latency of a `benchmark` report does.
pub const HIGH_TIMING_NOISE_RATIO: f64 = 0.25;
/// A named straggler whose cost is at least this share of the step time gets a `note` warning.
pub const STRAGGLER_NOTE_RATIO: f64 = 0.05;

/// At most this many missing ranks are named in a [`MergeError::MissingRanks`].
const MISSING_RANKS_NAMED: usize = 8;

/// Why rank reports cannot be merged into one `distributed_benchmark` report.
///
/// Inputs are counted from 0 in the order given; ranks are the reports' own
/// `context.distributed.rank`.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeError {
    /// No report was given.
    NoReports,
    /// An input is a report of another kind than `benchmark`.
    NotBenchmark {
        /// The input, counted from 0.
        input: usize,
        /// Its `kind`.
        kind: String,
    },
    /// An input has no `context.distributed`: it was measured outside a distributed job.
    NotDistributed {
        /// The input, counted from 0.
        input: usize,
    },
    /// Two ranks state different world sizes.
    DifferentWorldSize {
        /// The lowest rank given.
        rank: u64,
        /// Its world size.
        world_size: u64,
        /// The rank that disagrees.
        other_rank: u64,
        /// Its world size.
        other_world_size: u64,
    },
    /// Two ranks state different backends.
    DifferentBackend {
        /// The lowest rank given.
        rank: u64,
        /// Its backend.
        backend: String,
        /// The rank that disagrees.
        other_rank: u64,
        /// Its backend.
        other_backend: String,
    },
    /// Two ranks come from different measurements (different `measurement_id`s).
    DifferentMeasurement {
        /// The lowest rank given.
        rank: u64,
        /// Its measurement id.
        id: String,
        /// The rank that differs.
        other_rank: u64,
        /// Its measurement id.
        other_id: String,
    },
    /// A rank is not below its world size.
    RankOutOfRange {
        /// The rank.
        rank: u64,
        /// The world size it states.
        world_size: u64,
    },
    /// A rank is given more than once.
    DuplicateRank {
        /// The rank.
        rank: u64,
        /// The first input that has it.
        first_input: usize,
        /// The next input that has it.
        second_input: usize,
    },
    /// Ranks of the world have no report.
    MissingRanks {
        /// The first missing ranks, in order (at most 8 are named).
        missing: Vec<u64>,
        /// How many ranks are missing.
        count: u64,
        /// The world size.
        world_size: u64,
    },
    /// Two ranks measured different workloads (name, work unit or work units per call).
    DifferentWorkload {
        /// The member of `workload` that differs.
        field: &'static str,
        /// The lowest rank given.
        rank: u64,
        /// Its value, as text.
        value: String,
        /// The rank that differs.
        other_rank: u64,
        /// Its value, as text.
        other_value: String,
    },
    /// Two ranks used different timing settings.
    DifferentSettings {
        /// The member of `settings` that differs.
        field: &'static str,
        /// The lowest rank given.
        rank: u64,
        /// Its value, as text.
        value: String,
        /// The rank that differs.
        other_rank: u64,
        /// Its value, as text.
        other_value: String,
    },
    /// A rank has no timing evidence (its latency pass did not run).
    NoTiming {
        /// The rank.
        rank: u64,
    },
    /// Two ranks' blocks do not cover the same calls: different calls per block, warm-up calls
    /// or block counts.
    NotAligned {
        /// What differs, in words (`calls per block`, `warm-up calls`, `timed blocks`).
        what: &'static str,
        /// The lowest rank given.
        rank: u64,
        /// Its number.
        value: u64,
        /// The rank that differs.
        other_rank: u64,
        /// Its number.
        other_value: u64,
    },
    /// A rank of a world of several ranks recorded no barrier waits.
    MissingBarrierWaits {
        /// The rank.
        rank: u64,
        /// The world size.
        world_size: u64,
    },
    /// A rank recorded another number of barrier waits than blocks.
    BarrierWaitsLength {
        /// The rank.
        rank: u64,
        /// The barrier waits it recorded.
        waits: usize,
        /// Its timed blocks.
        blocks: usize,
    },
    /// The job's step times cannot be summarised (a duration that is not finite).
    Timing(String),
    /// A number the merged report states is past the largest finite float: a sum of the ranks'
    /// numbers (their barrier waits, their work units per call) or the job's throughput. Each
    /// rank report is valid, but the merged report could not be.
    Overflow {
        /// What overflows, for people: `the sum of rank 1's barrier waits`.
        what: String,
        /// The numbers it is made of, for people.
        from: String,
    },
}

impl MergeError {
    /// The input the error is about, counted from 0, when it names one (a report whose kind or
    /// context is wrong, or the second input of a repeated rank).
    pub fn input(&self) -> Option<usize> {
        match self {
            MergeError::NotBenchmark { input, .. } | MergeError::NotDistributed { input } => {
                Some(*input)
            }
            MergeError::DuplicateRank { second_input, .. } => Some(*second_input),
            _ => None,
        }
    }

    /// The sentence of the error, with each input named by `name` (for example by its file
    /// name); [`Display`](fmt::Display) names them `input N`.
    pub fn describe(&self, name: &dyn Fn(usize) -> String) -> String {
        match self {
            MergeError::NoReports => "no rank reports were given: merging needs the `benchmark` \
                                      report of every rank of the job"
                .to_owned(),
            MergeError::NotBenchmark { input, kind } => format!(
                "{} is a `{kind}` report: merging needs the `benchmark` report of every rank",
                name(*input)
            ),
            MergeError::NotDistributed { input } => format!(
                "{} was not measured in a distributed job (its context has no `distributed` \
                 member): merging needs the `benchmark` report of every rank of one job",
                name(*input)
            ),
            MergeError::DifferentWorldSize {
                rank,
                world_size,
                other_rank,
                other_world_size,
            } => format!(
                "rank {rank} was measured in a world of {world_size} ranks and rank \
                 {other_rank} in a world of {other_world_size}: the reports are not of one job"
            ),
            MergeError::DifferentBackend {
                rank,
                backend,
                other_rank,
                other_backend,
            } => format!(
                "rank {rank} used the `{backend}` backend and rank {other_rank} the \
                 `{other_backend}` backend: the reports are not of one job"
            ),
            MergeError::DifferentMeasurement {
                rank,
                id,
                other_rank,
                other_id,
            } => format!(
                "rank {rank} comes from measurement {id} and rank {other_rank} from measurement \
                 {other_id}: the reports are not of one measurement (each call of \
                 measure_workload in a job draws its own id; merge the reports of one call)"
            ),
            MergeError::RankOutOfRange { rank, world_size } => format!(
                "rank {rank} is outside its world of {world_size} ranks (ranks 0 to {})",
                world_size.saturating_sub(1)
            ),
            MergeError::DuplicateRank {
                rank,
                first_input,
                second_input,
            } => format!(
                "rank {rank} is given twice ({} and {}): merging needs each rank's report once",
                name(*first_input),
                name(*second_input)
            ),
            MergeError::MissingRanks {
                missing,
                count,
                world_size,
            } => {
                let mut named = missing
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                let unnamed = count.saturating_sub(missing.len() as u64);
                if unnamed > 0 {
                    named.push_str(&format!(" and {unnamed} more"));
                }
                let (noun, verb) = if *count == 1 {
                    ("rank", "is")
                } else {
                    ("ranks", "are")
                };
                format!(
                    "{noun} {named} of a world of {world_size} {verb} missing: merging needs the \
                     report of every rank"
                )
            }
            MergeError::DifferentWorkload {
                field,
                rank,
                value,
                other_rank,
                other_value,
            } => format!(
                "rank {rank} and rank {other_rank} measured different workloads ({field} \
                 {value} vs {other_value}): every rank measures the same workload"
            ),
            MergeError::DifferentSettings {
                field,
                rank,
                value,
                other_rank,
                other_value,
            } => format!(
                "rank {rank} and rank {other_rank} used different settings ({field} {value} vs \
                 {other_value}): every rank uses the same timing budget"
            ),
            MergeError::NoTiming { rank } => format!(
                "rank {rank} has no timing evidence: merging needs the latency pass on every rank"
            ),
            MergeError::NotAligned {
                what,
                rank,
                value,
                other_rank,
                other_value,
            } => format!(
                "the blocks were not aligned: rank {rank} ran {value} {what} and rank \
                 {other_rank} {other_value}; measure every rank in one distributed run, so that \
                 block i covers the same calls on each"
            ),
            MergeError::MissingBarrierWaits { rank, world_size } => format!(
                "rank {rank} recorded no barrier_waits_s in a world of {world_size} ranks: its \
                 blocks were not aligned by barriers"
            ),
            MergeError::BarrierWaitsLength {
                rank,
                waits,
                blocks,
            } => format!(
                "rank {rank} recorded {waits} barrier waits for {blocks} timed blocks: every \
                 block has the wait before it"
            ),
            MergeError::Timing(why) => {
                format!("the job's step times cannot be summarised: {why}")
            }
            MergeError::Overflow { what, from } => format!(
                "{what} is past the largest float ({:e}), so the merged report cannot state it \
                 ({from}); the rank reports hold numbers too large to merge",
                f64::MAX
            ),
        }
    }
}

impl fmt::Display for MergeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.describe(&|input| format!("input {input}")))
    }
}

impl std::error::Error for MergeError {}

/// Why a JSON merge produced no report.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeFailure {
    /// An input is not a valid report; each path is prefixed by its input, counted from 0:
    /// `input 1:$.timing.block_durations_s[3]`.
    Invalid(Vec<Problem>),
    /// The reports are valid but cannot be merged.
    Refused(MergeError),
    /// The merge produced an invalid report: a bug, reported rather than returned.
    Internal(Vec<Problem>),
}

impl fmt::Display for MergeFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeFailure::Invalid(problems) => {
                write!(formatter, "invalid input:")?;
                for problem in problems {
                    write!(formatter, "\n  {problem}")?;
                }
                Ok(())
            }
            MergeFailure::Refused(error) => write!(formatter, "cannot merge: {error}"),
            MergeFailure::Internal(problems) => {
                write!(
                    formatter,
                    "the merged report is invalid (a bug of torchscan):"
                )?;
                for problem in problems {
                    write!(formatter, "\n  {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for MergeFailure {}

/// One rank's report with its place in the job.
struct Rank<'a> {
    place: &'a DistributedContext,
    report: &'a BenchmarkReport,
    timing: &'a TimingEvidence,
}

/// The reports by rank, checked to be every rank of one world and backend, once.
fn ranked(reports: &[BenchmarkReport]) -> Result<Vec<(usize, &DistributedContext)>, MergeError> {
    if reports.is_empty() {
        return Err(MergeError::NoReports);
    }
    let mut places = Vec::with_capacity(reports.len());
    for (input, report) in reports.iter().enumerate() {
        match &report.context.distributed {
            Some(place) => places.push((input, place)),
            None => return Err(MergeError::NotDistributed { input }),
        }
    }
    // Stable: among equal ranks, the earlier input comes first.
    places.sort_by_key(|(_, place)| place.rank);
    let first = places[0].1;
    for (_, place) in &places[1..] {
        if place.world_size != first.world_size {
            return Err(MergeError::DifferentWorldSize {
                rank: first.rank,
                world_size: first.world_size,
                other_rank: place.rank,
                other_world_size: place.world_size,
            });
        }
        if place.backend != first.backend {
            return Err(MergeError::DifferentBackend {
                rank: first.rank,
                backend: first.backend.clone(),
                other_rank: place.rank,
                other_backend: place.backend.clone(),
            });
        }
        if place.measurement_id != first.measurement_id {
            return Err(MergeError::DifferentMeasurement {
                rank: first.rank,
                id: first.measurement_id.clone(),
                other_rank: place.rank,
                other_id: place.measurement_id.clone(),
            });
        }
    }
    if let Some((_, place)) = places
        .iter()
        .find(|(_, place)| place.rank >= place.world_size)
    {
        return Err(MergeError::RankOutOfRange {
            rank: place.rank,
            world_size: place.world_size,
        });
    }
    for pair in places.windows(2) {
        if pair[0].1.rank == pair[1].1.rank {
            return Err(MergeError::DuplicateRank {
                rank: pair[0].1.rank,
                first_input: pair[0].0,
                second_input: pair[1].0,
            });
        }
    }
    let world_size = first.world_size;
    let count = world_size - places.len() as u64;
    if count > 0 {
        // The ranks are distinct and below the world size: the gaps are the missing ranks.
        let mut missing = Vec::new();
        let mut next = 0u64;
        for rank in places
            .iter()
            .map(|(_, place)| place.rank)
            .chain(std::iter::once(world_size))
        {
            while next < rank && missing.len() < MISSING_RANKS_NAMED {
                missing.push(next);
                next += 1;
            }
            if missing.len() == MISSING_RANKS_NAMED {
                break;
            }
            next = rank + 1;
        }
        return Err(MergeError::MissingRanks {
            missing,
            count,
            world_size,
        });
    }
    Ok(places)
}

/// A workload's name as text: `` `name` `` or `no name`.
fn name_text(name: &Option<String>) -> String {
    name.as_ref()
        .map_or_else(|| "no name".to_owned(), |name| format!("`{name}`"))
}

/// The first member of `workload` where `other` differs from `first`.
fn workload_difference(
    first: &Workload,
    other: &Workload,
) -> Option<(&'static str, String, String)> {
    if first.name != other.name {
        return Some(("name", name_text(&first.name), name_text(&other.name)));
    }
    if first.work_unit != other.work_unit {
        return Some((
            "work_unit",
            format!("`{}`", first.work_unit),
            format!("`{}`", other.work_unit),
        ));
    }
    if first.work_units != other.work_units {
        return Some((
            "work_units",
            first.work_units.to_string(),
            other.work_units.to_string(),
        ));
    }
    None
}

/// The first member of `settings` where the two reports differ.
fn settings_difference(
    first: &BenchmarkReport,
    other: &BenchmarkReport,
) -> Option<(&'static str, String, String)> {
    let (a, b) = (&first.settings, &other.settings);
    let passes = |report: &BenchmarkReport| {
        report
            .settings
            .passes
            .iter()
            .map(crate::format::serde_name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if a.passes != b.passes {
        return Some(("passes", passes(first), passes(other)));
    }
    let numbers = [
        ("min_time_s", a.min_time_s, b.min_time_s),
        ("max_time_s", a.max_time_s, b.max_time_s),
        ("min_blocks", a.min_blocks as f64, b.min_blocks as f64),
        ("warmup_time_s", a.warmup_time_s, b.warmup_time_s),
        (
            "max_timer_overhead_ratio",
            a.max_timer_overhead_ratio,
            b.max_timer_overhead_ratio,
        ),
    ];
    numbers
        .into_iter()
        .find(|(_, left, right)| left != right)
        .map(|(field, left, right)| (field, left.to_string(), right.to_string()))
}

/// Checks that every rank measured the same workload with the same settings in aligned blocks.
fn check_alignment(ranks: &[Rank<'_>]) -> Result<(), MergeError> {
    let first = &ranks[0];
    let world_size = first.place.world_size;
    for rank in &ranks[1..] {
        if let Some((field, value, other_value)) =
            workload_difference(&first.report.workload, &rank.report.workload)
        {
            return Err(MergeError::DifferentWorkload {
                field,
                rank: first.place.rank,
                value,
                other_rank: rank.place.rank,
                other_value,
            });
        }
        if let Some((field, value, other_value)) = settings_difference(first.report, rank.report) {
            return Err(MergeError::DifferentSettings {
                field,
                rank: first.place.rank,
                value,
                other_rank: rank.place.rank,
                other_value,
            });
        }
    }
    for rank in &ranks[1..] {
        let counts = [
            (
                "calls per block",
                first.timing.calls_per_block,
                rank.timing.calls_per_block,
            ),
            (
                "warm-up calls",
                first.timing.warmup_calls,
                rank.timing.warmup_calls,
            ),
            (
                "timed blocks",
                first.timing.block_durations_s.len() as u64,
                rank.timing.block_durations_s.len() as u64,
            ),
        ];
        if let Some((what, value, other_value)) =
            counts.into_iter().find(|(_, left, right)| left != right)
        {
            return Err(MergeError::NotAligned {
                what,
                rank: first.place.rank,
                value,
                other_rank: rank.place.rank,
                other_value,
            });
        }
    }
    for rank in ranks {
        match &rank.timing.barrier_waits_s {
            None if world_size > 1 => {
                return Err(MergeError::MissingBarrierWaits {
                    rank: rank.place.rank,
                    world_size,
                });
            }
            Some(waits) if waits.len() != rank.timing.block_durations_s.len() => {
                return Err(MergeError::BarrierWaitsLength {
                    rank: rank.place.rank,
                    waits: waits.len(),
                    blocks: rank.timing.block_durations_s.len(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The reports by rank with their timing, checked to form one job.
fn job_ranks(reports: &[BenchmarkReport]) -> Result<Vec<Rank<'_>>, MergeError> {
    let places = ranked(reports)?;
    let mut ranks = Vec::with_capacity(places.len());
    for (input, place) in places {
        let report = &reports[input];
        let timing = report
            .timing
            .as_ref()
            .ok_or(MergeError::NoTiming { rank: place.rank })?;
        ranks.push(Rank {
            place,
            report,
            timing,
        });
    }
    check_alignment(&ranks)?;
    Ok(ranks)
}

/// The index of the largest value, the first among equals.
fn first_max(values: impl IntoIterator<Item = f64>) -> (usize, f64) {
    let mut best = (0, f64::NEG_INFINITY);
    for (index, value) in values.into_iter().enumerate() {
        if value > best.1 {
            best = (index, value);
        }
    }
    best
}

fn stats_error(error: stats::StatsError) -> MergeError {
    MergeError::Timing(error.to_string())
}

/// The straggler of the aligned blocks `durations[rank][block]`.
/// The sign test's level: a rank is the straggler only when chance would make it the slowest
/// that often with a probability below this.
pub const STRAGGLER_SIGNIFICANCE: f64 = 0.01;

/// The smallest cost, as a share of the step time, for which a straggler is named: below it the
/// ranks keep the same pace for every practical purpose.
pub const STRAGGLER_MIN_SHARE: f64 = 0.01;

/// [`STRAGGLER_MIN_SHARE`] in percent, for sentences.
const STRAGGLER_MIN_SHARE_PERCENT: f64 = 1.0;

/// The probability that a binomial count with `trials` trials and success probability `p`
/// reaches `successes` or more: the one-sided sign test of a rank being the slowest in
/// `successes` of `trials` blocks when every rank is equally likely to be. Summed in log space,
/// so that thousands of blocks neither underflow nor overflow.
pub fn sign_test_p_value(trials: u64, successes: u64, p: f64) -> f64 {
    if successes == 0 {
        return 1.0;
    }
    if successes > trials || !(p > 0.0 && p < 1.0) {
        return 0.0;
    }
    let n = trials as f64;
    let (log_p, log_q) = (p.ln(), (1.0 - p).ln());
    // log C(n, k) by the recurrence C(n, k + 1) = C(n, k) (n - k) / (k + 1).
    let mut log_choose = 0.0;
    let mut terms = Vec::with_capacity((trials - successes + 1) as usize);
    for k in 0..=trials {
        if k >= successes {
            terms.push(log_choose + k as f64 * log_p + (n - k as f64) * log_q);
        }
        if k < trials {
            log_choose += (n - k as f64).ln() - (k as f64 + 1.0).ln();
        }
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|term| (term - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

fn find_straggler(
    durations: &[&[f64]],
    blocks: &[JobBlock],
    calls_per_block: u64,
    step_time_s: f64,
) -> Result<Straggler, MergeError> {
    let world_size = durations.len();
    let count = blocks.len();
    let mut slowest_blocks = vec![0u64; world_size];
    for block in blocks {
        if let Some(slot) = slowest_blocks.get_mut(block.slowest_rank as usize) {
            *slot += 1;
        }
    }
    let (most_rank, most) =
        slowest_blocks
            .iter()
            .enumerate()
            .fold((0usize, 0u64), |best, (rank, blocks)| {
                if *blocks > best.1 {
                    (rank, *blocks)
                } else {
                    best
                }
            });
    let method = format!(
        "the straggler is the rank whose block ended last (the slowest) in more than half of \
         the aligned blocks, more often than chance allows (a one-sided sign test against \
         1 / world size, p below {STRAGGLER_SIGNIFICANCE}), and whose cost is at least \
         {STRAGGLER_MIN_SHARE_PERCENT}% of the step time; its cost is what the job would save \
         per call if it kept the other ranks' median pace: the median over blocks of its block \
         duration minus the median of the other ranks' durations of that block, per call, and \
         at least 0. Waits inside the workload's own collectives are not seen: a rank slowed \
         before a collective in the call delays every rank to that point and shows as every \
         rank's step time"
    );
    let unnamed = |reason: String| Straggler {
        rank: None,
        slowest_blocks: slowest_blocks.clone(),
        cost_s: None,
        cost_ratio: None,
        method: method.clone(),
        reason: Some(reason),
    };
    if world_size < 2 {
        return Ok(unnamed(
            "only one rank: no rank waited for another".to_owned(),
        ));
    }
    if most.saturating_mul(2) <= count as u64 {
        return Ok(unnamed(format!(
            "no rank was the slowest in more than half of the {count} blocks (most: rank \
             {most_rank}, in {most})"
        )));
    }
    let calls = calls_per_block as f64;
    let mut excess = Vec::with_capacity(count);
    for block in 0..count {
        let others: Vec<f64> = durations
            .iter()
            .enumerate()
            .filter(|(rank, _)| *rank != most_rank)
            .map(|(_, ranks)| ranks[block])
            .collect();
        let pace = stats::median(&others).map_err(stats_error)?;
        excess.push((durations[most_rank][block] - pace) / calls);
    }
    let cost_s = stats::median(&excess).map_err(stats_error)?.max(0.0);
    let share = if step_time_s > 0.0 {
        cost_s / step_time_s
    } else {
        0.0
    };
    let chance = sign_test_p_value(count as u64, most, 1.0 / world_size as f64);
    if chance >= STRAGGLER_SIGNIFICANCE {
        return Ok(unnamed(format!(
            "rank {most_rank} was the slowest in {most} of the {count} blocks, which chance \
             explains (sign test p = {chance:.3}, not below {STRAGGLER_SIGNIFICANCE}): no rank \
             stands out"
        )));
    }
    if share < STRAGGLER_MIN_SHARE {
        return Ok(unnamed(format!(
            "rank {most_rank} was the slowest in {most} of the {count} blocks, but by only {} \
             per call ({:.2}% of the step time, below the {STRAGGLER_MIN_SHARE_PERCENT}% a \
             straggler must cost to be named)",
            crate::format::readable_number(cost_s, "s"),
            share * 100.0
        )));
    }
    Ok(Straggler {
        rank: Some(most_rank as u64),
        slowest_blocks: slowest_blocks.clone(),
        cost_s: Some(cost_s),
        cost_ratio: Some(share),
        method,
        reason: None,
    })
}

/// The sum of a rank's barrier waits (0 without any), refused when it is past the largest float.
fn barrier_wait_sum(rank: &Rank<'_>) -> Result<f64, MergeError> {
    let waits = rank.timing.barrier_waits_s.as_deref().unwrap_or_default();
    let sum: f64 = waits.iter().sum();
    if sum.is_finite() {
        Ok(sum)
    } else {
        Err(MergeError::Overflow {
            what: format!("the sum of rank {}'s barrier waits", rank.place.rank),
            from: format!(
                "{} waits, the largest {:e} s",
                waits.len(),
                waits.iter().copied().fold(0.0, f64::max)
            ),
        })
    }
}

/// A rank's row, with the sum of its barrier waits.
fn rank_summary(rank: &Rank<'_>, barrier_wait_s: f64) -> RankSummary {
    let metrics = &rank.report.metrics;
    let process_rss_peak = metrics.rank_process_rss_peak.clone().unwrap_or_else(|| {
        MetricResult::unavailable(
            "B",
            "peak RSS of the rank's own process",
            "getrusage ru_maxrss of the rank's process (rank_process_rss_peak)",
            "the rank's report does not record rank_process_rss_peak",
        )
    });
    RankSummary {
        rank: rank.place.rank,
        local_rank: rank.place.local_rank,
        host: rank.place.host.clone(),
        device: rank.report.context.device.clone(),
        latency: metrics.latency.clone(),
        barrier_wait_s,
        tensor_memory_peak: metrics.tensor_memory_peak.clone(),
        allocator_reserved_peak: metrics.allocator_reserved_peak.clone(),
        process_rss_peak,
    }
}

/// The merge's own diagnostics, in their documented order.
fn merge_diagnostics(
    ranks: &[Rank<'_>],
    straggler: &Straggler,
    blocks: usize,
    collectives_per_call: Option<u64>,
    step: &stats::BlockTiming,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for rank in ranks {
        for noisy in rank
            .report
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.code == DiagnosticCode::NoisyMachine)
        {
            diagnostics.push(Diagnostic {
                code: DiagnosticCode::NoisyMachine,
                severity: Severity::Warning,
                metric: Some("step_time".to_owned()),
                message: format!("rank {}: {}", rank.place.rank, noisy.message),
                path: None,
                operator: None,
            });
        }
    }
    if let (Some(rank), Some(cost_s), Some(ratio)) =
        (straggler.rank, straggler.cost_s, straggler.cost_ratio)
        && ratio >= STRAGGLER_NOTE_RATIO
    {
        let slowest = straggler
            .slowest_blocks
            .get(rank as usize)
            .copied()
            .unwrap_or(0);
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::Note,
            severity: Severity::Warning,
            metric: Some("straggler_cost".to_owned()),
            message: format!(
                "rank {rank} was the slowest in {slowest} of {blocks} blocks and costs {} per \
                 call ({:.1}% of the step time)",
                readable_number(cost_s, "s"),
                ratio * 100.0
            ),
            path: None,
            operator: None,
        });
    }
    if let Some(collectives) = collectives_per_call.filter(|count| *count > 0) {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::Note,
            severity: Severity::Info,
            metric: Some("step_time".to_owned()),
            message: format!(
                "one call issues {collectives} {}: the ranks wait \
                 for each other inside every call, so a rank slowed before its last collective \
                 shows in every rank's step time, not as a straggler",
                if collectives == 1 {
                    "collective"
                } else {
                    "collectives"
                }
            ),
            path: None,
            operator: None,
        });
    }
    let ratio = if step.latency_s > 0.0 {
        step.latency_iqr_s / step.latency_s
    } else {
        0.0
    };
    if ratio >= HIGH_TIMING_NOISE_RATIO {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::HighTimingNoise,
            severity: Severity::Warning,
            metric: Some("step_time".to_owned()),
            message: format!(
                "step time IQR is {:.0}% of the median: differences below that are not \
                 meaningful on this job; close other work or time longer",
                ratio * 100.0
            ),
            path: None,
            operator: None,
        });
    } else if ratio >= TIMING_NOISE_RATIO {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::TimingNoise,
            severity: Severity::Warning,
            metric: Some("step_time".to_owned()),
            message: format!(
                "step time IQR is {:.0}% of the median: timings are noisy",
                ratio * 100.0
            ),
            path: None,
            operator: None,
        });
    }
    diagnostics
}

/// Merges the `benchmark` reports of every rank of one distributed job, given in any order,
/// into its `distributed_benchmark` report (ranks sorted by rank).
///
/// Refused ([`MergeError`]) unless every report was measured in the job (`context.distributed`)
/// with one world size and backend, every rank appears once, all measured the same workload
/// with the same settings, and every rank timed the same calls in the same blocks (same calls
/// per block, warm-up calls and block count, with a barrier wait per block when the world has
/// several ranks).
pub fn merge_rank_reports(
    reports: &[BenchmarkReport],
) -> Result<DistributedBenchmarkReport, MergeError> {
    let ranks = job_ranks(reports)?;
    let first = &ranks[0];
    let calls_per_block = first.timing.calls_per_block;
    let count = first.timing.block_durations_s.len();
    let durations: Vec<&[f64]> = ranks
        .iter()
        .map(|rank| rank.timing.block_durations_s.as_slice())
        .collect();
    let blocks: Vec<JobBlock> = (0..count)
        .map(|block| {
            let (slowest, step) = first_max(durations.iter().map(|ranks| ranks[block]));
            let fastest = durations
                .iter()
                .map(|ranks| ranks[block])
                .fold(f64::INFINITY, f64::min);
            JobBlock {
                step_time_s: step,
                slowest_rank: ranks[slowest].place.rank,
                spread_s: step - fastest,
            }
        })
        .collect();
    let step_times: Vec<f64> = blocks.iter().map(|block| block.step_time_s).collect();
    let step = stats::block_timing(&step_times, calls_per_block).map_err(stats_error)?;
    let barrier_waits = ranks
        .iter()
        .map(barrier_wait_sum)
        .collect::<Result<Vec<f64>, MergeError>>()?;
    let work_units_per_call: f64 = ranks
        .iter()
        .map(|rank| rank.report.workload.work_units)
        .sum();
    if !work_units_per_call.is_finite() {
        return Err(MergeError::Overflow {
            what: "the job's work units per call, the sum of the ranks'".to_owned(),
            from: format!(
                "{} ranks, the largest {:e}",
                ranks.len(),
                ranks
                    .iter()
                    .map(|rank| rank.report.workload.work_units)
                    .fold(0.0, f64::max)
            ),
        });
    }
    let job_throughput = step.throughput(work_units_per_call);
    if !job_throughput.is_finite() {
        return Err(MergeError::Overflow {
            what: "the job's throughput".to_owned(),
            from: format!(
                "{work_units_per_call:e} work units per call x {} calls / {:e} s of step times",
                step.calls, step.timed_s
            ),
        });
    }
    // The most any rank counted (a group of some ranks only adds to theirs); absent when a rank
    // could not count them.
    let collectives_per_call = ranks
        .iter()
        .map(|rank| rank.timing.collectives_per_call)
        .try_fold(0u64, |most, count| count.map(|count| most.max(count)));
    let mut hosts: Vec<String> = ranks.iter().map(|rank| rank.place.host.clone()).collect();
    hosts.sort();
    hosts.dedup();
    let timing = TimingEvidence {
        first_call_s: ranks
            .iter()
            .map(|rank| rank.timing.first_call_s)
            .fold(f64::NEG_INFINITY, f64::max),
        warmup_calls: first.timing.warmup_calls,
        calls_per_block,
        block_durations_s: step_times.clone(),
        block_starts_s: first.timing.block_starts_s.clone(),
        timer_overhead_s: ranks
            .iter()
            .map(|rank| rank.timing.timer_overhead_s)
            .fold(f64::NEG_INFINITY, f64::max),
        barrier_waits_s: None,
        collectives_per_call: None,
    };
    let straggler = find_straggler(&durations, &blocks, calls_per_block, step.latency_s)?;
    let work_unit = &first.report.workload.work_unit;
    let step_scope = "one call of the whole job: the slowest rank's time per call in an aligned \
                      block";
    let metrics = DistributedMetrics {
        step_time: MetricResult::complete(
            step.latency_s,
            "s",
            step_scope,
            &format!(
                "median over {count} aligned blocks of the slowest rank's block duration per \
                 call; barriers before each block keep the ranks' blocks on the same calls and \
                 are outside the timed intervals"
            ),
        ),
        step_time_iqr: MetricResult::complete(
            step.latency_iqr_s,
            "s",
            "spread of the job's per-call step times",
            &format!(
                "interquartile range (linear interpolation) over {count} aligned blocks of the \
                 slowest rank's block duration per call"
            ),
        ),
        throughput: MetricResult::complete(
            job_throughput,
            &throughput_unit(work_unit),
            "every rank's work over all aligned blocks",
            "the sum of every rank's work_units x calls per block x blocks / the sum of the \
             blocks' step times",
        ),
        first_call: MetricResult::complete(
            timing.first_call_s,
            "s",
            "the job's first call: the slowest rank's first call, timed alone",
            "the largest first_call_s of the ranks",
        ),
        straggler_cost: match (straggler.cost_s, &straggler.reason) {
            (Some(cost_s), _) => MetricResult::complete(
                cost_s,
                "s",
                "time per call the straggler adds to the job",
                "median over aligned blocks of the straggler's block duration minus the median \
                 of the other ranks', per call, at least 0",
            ),
            (None, reason) => MetricResult::unavailable(
                "s",
                "time per call the straggler adds to the job",
                "median over aligned blocks of the straggler's block duration minus the median \
                 of the other ranks', per call, at least 0",
                reason.as_deref().unwrap_or("no straggler"),
            ),
        },
    };
    let diagnostics = merge_diagnostics(&ranks, &straggler, count, collectives_per_call, &step);
    Ok(DistributedBenchmarkReport {
        schema_version: SchemaVersionV1,
        kind: DistributedBenchmarkKind::Tag,
        context: first.report.context.clone(),
        diagnostics,
        workload: first.report.workload.clone(),
        settings: first.report.settings.clone(),
        job: DistributedJob {
            world_size: first.place.world_size,
            backend: first.place.backend.clone(),
            hosts,
            work_units_per_call,
            collectives_per_call,
        },
        timing,
        blocks,
        metrics,
        straggler,
        ranks: ranks
            .iter()
            .zip(barrier_waits)
            .map(|(rank, waits)| rank_summary(rank, waits))
            .collect(),
        rank_reports: ranks.iter().map(|rank| rank.report.clone()).collect(),
    })
}

/// One metric over every rank: `combine`d when complete on all of them, else unavailable,
/// naming the first rank where it is not.
fn across_ranks<'a>(
    key: &str,
    metrics: impl IntoIterator<Item = (u64, &'a MetricResult)>,
    unit: &str,
    combine: fn(f64, f64) -> f64,
    (scope, method): (&str, &str),
) -> MetricResult {
    let mut combined: Option<f64> = None;
    for (rank, metric) in metrics {
        match (metric.status, metric.value) {
            (MetricStatus::Complete, Some(value)) => {
                combined = Some(combined.map_or(value, |sofar| combine(sofar, value)));
            }
            (status, _) => {
                let why = metric
                    .reason
                    .as_deref()
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default();
                return MetricResult::unavailable(
                    unit,
                    scope,
                    method,
                    &format!("rank {rank}'s {key} is {}{why}", status.as_str()),
                );
            }
        }
    }
    match combined {
        Some(value) if value.is_finite() => MetricResult::complete(value, unit, scope, method),
        Some(_) => MetricResult::unavailable(
            unit,
            scope,
            method,
            &format!(
                "the ranks' {key} together are past the largest float ({:e})",
                f64::MAX
            ),
        ),
        None => MetricResult::unavailable(unit, scope, method, "no rank reports"),
    }
}

/// A noise metric of the job: the worst rank's, where every rank's is complete.
fn worst_noise(
    report: &DistributedBenchmarkReport,
    pick: fn(&BenchmarkMetrics) -> Option<&MetricResult>,
    combine: fn(f64, f64) -> f64,
    method: &str,
) -> Option<MetricResult> {
    let mut combined: Option<(f64, &MetricResult)> = None;
    for rank in &report.rank_reports {
        let metric = pick(&rank.metrics)?;
        let value = metric
            .value
            .filter(|_| metric.status == MetricStatus::Complete)?;
        combined = Some(match combined {
            None => (value, metric),
            Some((sofar, first)) => (combine(sofar, value), first),
        });
    }
    combined.map(|(value, first)| {
        MetricResult::complete(
            value,
            &first.unit,
            &format!("the worst rank: {}", first.scope),
            method,
        )
    })
}

/// A merged report read as one `benchmark` of the whole job, as comparisons read it: latency is
/// the step time (per block, the slowest rank's time per call), throughput the job's, work units
/// per call every rank's; memory is the largest rank's peak and operator FLOPs the sum over the
/// ranks (unavailable unless complete on every rank, and when the sum is past the largest float);
/// noise is the worst rank's.
pub fn job_view(report: &DistributedBenchmarkReport) -> BenchmarkReport {
    let by_rank = |pick: fn(&RankSummary) -> &MetricResult| {
        report
            .ranks
            .iter()
            .map(move |rank| (rank.rank, pick(rank)))
            .collect::<Vec<_>>()
    };
    let operator_flops = across_ranks(
        "operator_flops",
        report
            .rank_reports
            .iter()
            .zip(&report.ranks)
            .map(|(rank_report, rank)| (rank.rank, &rank_report.metrics.operator_flops)),
        "FLOPs",
        |a, b| a + b,
        (
            "one call of the whole job: every rank's operators",
            "the sum over the ranks of their operator FLOPs per call",
        ),
    );
    let largest = |key: &str, pick: fn(&RankSummary) -> &MetricResult, scope: &str| {
        across_ranks(
            key,
            by_rank(pick),
            "B",
            f64::max,
            (scope, &format!("the largest {key} of the ranks")),
        )
    };
    let not_merged = |scope: &str| {
        MetricResult::unavailable(
            "B",
            scope,
            "not measured for a distributed job",
            "a fresh child process cannot join the job's process group; see process_rss_peak \
             (the largest rank's own process)",
        )
    };
    let metrics = BenchmarkMetrics {
        first_call: report.metrics.first_call.clone(),
        latency: report.metrics.step_time.clone(),
        latency_iqr: report.metrics.step_time_iqr.clone(),
        throughput: report.metrics.throughput.clone(),
        operator_flops,
        tensor_memory_peak: largest(
            "tensor_memory_peak",
            |rank| &rank.tensor_memory_peak,
            "the rank with the largest peak PyTorch tensor memory",
        ),
        allocator_reserved_peak: largest(
            "allocator_reserved_peak",
            |rank| &rank.allocator_reserved_peak,
            "the rank with the largest peak allocator reserved bytes",
        ),
        process_rss_peak: largest(
            "process_rss_peak",
            |rank| &rank.process_rss_peak,
            "the rank whose own process had the largest peak RSS",
        ),
        process_rss_workload_peak: not_merged(
            "peak RSS of a fresh child while it ran the workload",
        ),
        process_rss_baseline: not_merged("RSS of a fresh child after set-up"),
        machine_other_cpu_ratio: worst_noise(
            report,
            |metrics| metrics.machine_other_cpu_ratio.as_ref(),
            f64::max,
            "the largest machine_other_cpu_ratio of the ranks",
        ),
        cpu_steal_ratio: worst_noise(
            report,
            |metrics| metrics.cpu_steal_ratio.as_ref(),
            f64::max,
            "the largest cpu_steal_ratio of the ranks",
        ),
        involuntary_context_switches: worst_noise(
            report,
            |metrics| metrics.involuntary_context_switches.as_ref(),
            f64::max,
            "the largest involuntary_context_switches of the ranks",
        ),
        cpu_frequency: worst_noise(
            report,
            |metrics| metrics.cpu_frequency.as_ref(),
            f64::min,
            "the lowest cpu_frequency of the ranks",
        ),
        rank_process_rss_peak: None,
        achieved_flop_rate: None,
        operator_bytes: None,
        arithmetic_intensity: None,
        flop_utilization: None,
        bandwidth_utilization: None,
    };
    BenchmarkReport {
        schema_version: SchemaVersionV1,
        kind: BenchmarkKind::Tag,
        context: report.context.clone(),
        diagnostics: report.diagnostics.clone(),
        workload: Workload {
            work_units: report.job.work_units_per_call,
            ..report.workload.clone()
        },
        // Each rank measured its own hardware peak; the job's view has none.
        settings: TimingSettings {
            passes: (report.settings.passes.iter().copied())
                .filter(|pass| *pass != PassName::HardwarePeak)
                .collect(),
            ..report.settings.clone()
        },
        timing: Some(report.timing.clone()),
        metrics,
        operator_flops: None,
        profiler: ProfilerPass {
            status: MetricStatus::Unavailable,
            reason: Some("not merged across ranks".to_owned()),
            method: "torch.profiler, on each rank".to_owned(),
            scope: "each rank's own calls".to_owned(),
            calls: None,
            requested_calls: None,
            top_operators: Vec::new(),
            trace: None,
        },
        hardware_peak: None,
    }
}

#[cfg(test)]
mod sign_test {
    use super::sign_test_p_value;

    #[test]
    fn small_cases_match_the_binomial_sums() {
        // P(X >= 2 | n = 2, p = 1/2) = 1/4; P(X >= 3 | n = 4, p = 1/2) = 5/16.
        assert!((sign_test_p_value(2, 2, 0.5) - 0.25).abs() < 1e-12);
        assert!((sign_test_p_value(4, 3, 0.5) - 5.0 / 16.0).abs() < 1e-12);
        // Three ranks: P(X >= 2 | n = 2, p = 1/3) = 1/9.
        assert!((sign_test_p_value(2, 2, 1.0 / 3.0) - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(sign_test_p_value(10, 0, 0.5), 1.0);
    }

    #[test]
    fn many_blocks_neither_underflow_nor_overflow() {
        // 5,000 of 10,000 blocks is chance; all 10,000 is not (0.5^10000 underflows as a
        // plain product, and is 0 here).
        let even = sign_test_p_value(10_000, 5_000, 0.5);
        assert!(even > 0.49 && even < 0.51, "{even}");
        assert_eq!(sign_test_p_value(10_000, 10_000, 0.5), 0.0);
        // 68 of 104 blocks for two ranks: a one-sided p of about 0.001.
        let skewed = sign_test_p_value(104, 68, 0.5);
        assert!(skewed > 0.0005 && skewed < 0.002, "{skewed}");
    }
}
