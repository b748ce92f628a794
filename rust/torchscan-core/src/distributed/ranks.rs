//! The rank reports of one job: every rank of one world and backend once, one workload, one
//! timing budget, the same calls in the same blocks, each with its place in the job.

use crate::schema::benchmark::{BenchmarkReport, TimingEvidence, Workload};
use crate::schema::common::DistributedContext;

use super::error::MergeError;

/// At most this many missing ranks are named in a [`MergeError::MissingRanks`].
const MISSING_RANKS_NAMED: usize = 8;

/// One rank's report with its place in the job.
pub(super) struct Rank<'a> {
    pub(super) place: &'a DistributedContext,
    pub(super) report: &'a BenchmarkReport,
    pub(super) timing: &'a TimingEvidence,
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
pub(super) fn job_ranks(reports: &[BenchmarkReport]) -> Result<Vec<Rank<'_>>, MergeError> {
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
