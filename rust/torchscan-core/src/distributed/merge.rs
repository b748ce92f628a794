//! The merge itself: one `distributed_benchmark` report derived from the checked rank reports,
//! its job blocks, step time, rank summaries, metrics and diagnostics.

use crate::format::readable_number;
use crate::schema::benchmark::{BenchmarkMetrics, BenchmarkReport, TimingEvidence};
use crate::schema::common::{
    Diagnostic, DiagnosticCode, MetricResult, MetricStatus, SchemaVersionV1, Severity,
    throughput_unit,
};
use crate::schema::distributed::{
    DistributedBenchmarkKind, DistributedBenchmarkReport, DistributedJob, DistributedMetrics,
    JobBlock, RankSummary, Straggler,
};
use crate::stats;

use super::error::{MergeError, stats_error};
use super::ranks::{Rank, job_ranks};
use super::straggler::find_straggler;
use super::{HIGH_TIMING_NOISE_RATIO, STRAGGLER_NOTE_RATIO, TIMING_NOISE_RATIO};

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
pub(super) fn across_ranks<'a>(
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
pub(super) fn worst_noise(
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
