//! Merging the `benchmark` reports of every rank of a `torch.distributed` job into one
//! `distributed_benchmark` report, and the job view by which two merged reports are compared.
//!
//! Every rank timed aligned blocks: a barrier before block *i* on every rank, so that block *i*
//! covers the same calls everywhere and the job's time for those calls is the slowest rank's.
//! [`merge_rank_reports`] checks that the reports belong to one job (one world, one backend,
//! every rank once, one workload, one timing budget, the same calls in the same blocks) and
//! derives every other member of the merged report from them, deterministically; the validator
//! merges the embedded rank reports again and compares. [`job_view`](fn@job_view) reads a merged
//! report as one `benchmark` of the whole job (latency = step time), which is how
//! [`benchmark_comparison`](crate::benchmark_comparison) compares two of them.

mod error;
mod job_view;
mod merge;
mod ranks;
mod straggler;

pub use error::{MergeError, MergeFailure};
pub use job_view::job_view;
pub use merge::merge_rank_reports;
pub use straggler::{STRAGGLER_MIN_SHARE, STRAGGLER_SIGNIFICANCE, sign_test_p_value};

/// A step-time IQR of at least this share of the median step time gives a `timing_noise`
/// warning, as the latency of a `benchmark` report does.
pub const TIMING_NOISE_RATIO: f64 = 0.10;
/// A step-time IQR of at least this share of the median step time gives a `high_timing_noise`
/// warning instead, as the latency of a `benchmark` report does.
pub const HIGH_TIMING_NOISE_RATIO: f64 = 0.25;
/// A named straggler whose cost is at least this share of the step time gets a `note` warning.
pub const STRAGGLER_NOTE_RATIO: f64 = 0.05;
