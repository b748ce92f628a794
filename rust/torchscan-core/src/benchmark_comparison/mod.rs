//! Comparing two benchmark reports: ratios with seeded bootstrap intervals and verdicts that use
//! both significance and a minimum effect size; deltas withheld when the output check failed.
//! Two merged distributed jobs (`distributed_benchmark`) are compared the same way, by their job
//! views ([`job_view`](crate::distributed::job_view)).

use std::fmt;

mod compare;
mod context;
mod deltas;
mod interval;
mod json;
mod noise;
mod verdicts;

pub use compare::{compare_benchmarks, compare_benchmarks_with, compare_distributed_with};
pub use json::{BenchCompareFailure, compare_benchmarks_json, compare_benchmarks_json_with};
pub use noise::{
    MAX_NOISE_SHARE, NOISY_CONTEXT_SWITCHES_PER_S, NOISY_OTHER_CPU_RATIO, NOISY_STEAL_RATIO,
};

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
