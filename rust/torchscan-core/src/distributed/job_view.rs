//! A merged report read as one `benchmark` of the whole job (latency = step time): how two
//! merged jobs are compared.

use crate::schema::benchmark::{
    BenchmarkKind, BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, TimingSettings,
    Workload,
};
use crate::schema::common::{MetricResult, MetricStatus, SchemaVersionV1};
use crate::schema::distributed::{DistributedBenchmarkReport, RankSummary};

use super::merge::{across_ranks, worst_noise};

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
