//! Why rank reports cannot be merged ([`MergeError`]) and why a JSON merge produced no report
//! ([`MergeFailure`]), with the sentences that name each input or rank.

use std::fmt;

use crate::problem::Problem;
use crate::stats;

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

/// A statistic that cannot be computed from the rank reports' timing, as a merge error.
pub(super) fn stats_error(error: stats::StatsError) -> MergeError {
    MergeError::Timing(error.to_string())
}
