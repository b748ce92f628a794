//! Merging rank reports into a `distributed_benchmark` report: every derived member against a
//! hand-computed oracle, every refusal, validation of merged reports (tampering included) and of
//! the distributed members of `benchmark` reports, comparisons of two merged jobs, and the
//! checked-in fixtures of `tests/fixtures/distributed/`.
//!
//! Block durations are whole multiples of 1/1024 s (`T`), so every sum, difference, halving and
//! median below is exact in binary floating point and the oracles are exact.
//!
//! `TORCHSCAN_UPDATE_FIXTURES=1 cargo test -p torchscan-core --test distributed` rewrites the
//! fixtures after an intended change; review the diff.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use torchscan_core::benchmark_comparison::{
    BenchCompareError, BenchCompareFailure, CompareOptions, compare_benchmarks,
    compare_benchmarks_json,
};
use torchscan_core::distributed::{MergeError, MergeFailure, job_view, merge_rank_reports};
use torchscan_core::merge_json::merge_rank_reports_json;
use torchscan_core::schema::benchmark::{
    BenchmarkKind, BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, TimingEvidence,
    TimingSettings, Workload,
};
use torchscan_core::schema::common::{
    Context, Diagnostic, DiagnosticCode, DistributedContext, MetricResult, MetricStatus,
    ProcessGroupOrigin, SchemaVersionV1, Severity, TensorMeta, ValueMeta,
};
use torchscan_core::schema::distributed::{DistributedBenchmarkReport, JobBlock};
use torchscan_core::stats::block_timing;
use torchscan_core::{Problem, Report, read_report, to_json_text};

/// One tick of the test clock: 1/1024 s, so that the arithmetic of the oracles is exact.
const T: f64 = 1.0 / 1024.0;
/// Calls per block of every rank report built here.
const CALLS: u64 = 2;

fn ticks(values: &[f64]) -> Vec<f64> {
    values.iter().map(|value| value * T).collect()
}

fn unavailable(unit: &str, (scope, method): (&str, &str), reason: &str) -> MetricResult {
    MetricResult::unavailable(unit, scope, method, reason)
}

const NOT_REQUESTED: &str = "not requested";
const CPU_ALLOCATOR: &str =
    "allocator reserved memory is measured on CUDA devices only; cpu has no caching allocator";

/// The host of a rank: two ranks per host.
fn host(rank: u64) -> String {
    format!("node-{}", (b'a' + (rank / 2) as u8) as char)
}

/// The `benchmark` report of `rank` in a world of `world_size`, with these block durations (in
/// ticks) and barrier waits (in ticks); everything else is derived so that the report is valid.
fn rank_report(rank: u64, world_size: u64, durations: &[f64], waits: &[f64]) -> BenchmarkReport {
    let blocks = ticks(durations);
    let timing = block_timing(&blocks, CALLS).expect("block timing");
    let first_call_s = (32.0 + 8.0 * rank as f64) * T;
    let mut starts = Vec::with_capacity(blocks.len());
    let mut clock = 0.0;
    for (index, duration) in blocks.iter().enumerate() {
        if index > 0 {
            clock += waits[index] * T;
        }
        starts.push(clock);
        clock += duration;
    }
    BenchmarkReport {
        schema_version: SchemaVersionV1,
        kind: BenchmarkKind::Tag,
        context: Context {
            torchscan_version: "0.3.0".to_owned(),
            torch_version: Some("2.15.0".to_owned()),
            python_version: Some("3.11.7".to_owned()),
            platform: Some("Linux-6.1.0-x86_64-with-glibc2.36".to_owned()),
            cpu_model: Some("AMD EPYC 7763 64-Core Processor".to_owned()),
            device: Some("cpu".to_owned()),
            torch_threads: Some(1),
            torch_interop_threads: Some(1),
            dtypes: vec!["torch.float32".to_owned()],
            distributed: Some(DistributedContext {
                rank,
                local_rank: rank % 2,
                world_size,
                backend: "gloo".to_owned(),
                host: host(rank),
                process_group: ProcessGroupOrigin::Created,
                measurement_id: "5f0c1d2e3a4b4c6d8e9f00112233aabb".to_owned(),
            }),
            ..Context::default()
        },
        diagnostics: vec![Diagnostic {
            code: DiagnosticCode::UnsupportedOnDevice,
            severity: Severity::Info,
            metric: Some("allocator_reserved_peak".to_owned()),
            message: "allocator reserved memory is measured on CUDA devices only; cpu has no \
                      caching allocator"
                .to_owned(),
            path: None,
            operator: None,
        }],
        workload: Workload {
            name: Some("train_step".to_owned()),
            work_units: 32.0,
            work_unit: "samples".to_owned(),
            inputs: vec![ValueMeta::Tensor(TensorMeta {
                shape: vec![32, 128],
                dtype: "torch.float32".to_owned(),
                device: "cpu".to_owned(),
                requires_grad: false,
            })],
        },
        settings: TimingSettings {
            passes: vec![PassName::Latency, PassName::TensorMemory],
            min_time_s: 0.02,
            max_time_s: 2.0,
            min_blocks: 4,
            warmup_time_s: 0.01,
            max_timer_overhead_ratio: 0.001,
        },
        timing: Some(TimingEvidence {
            first_call_s,
            warmup_calls: 16,
            calls_per_block: CALLS,
            block_durations_s: blocks.clone(),
            block_starts_s: Some(starts),
            timer_overhead_s: 4.1e-8 + rank as f64 * 1e-9,
            barrier_waits_s: (world_size > 1).then(|| ticks(waits)),
            collectives_per_call: (world_size > 1).then_some(2),
        }),
        metrics: BenchmarkMetrics {
            first_call: MetricResult::complete(
                first_call_s,
                "s",
                "one call, timed alone, including lazy initialisation",
                "wall clock around the first call, timed alone",
            ),
            latency: MetricResult::complete(
                timing.latency_s,
                "s",
                "one warmed call: per-call mean within a timed block",
                "median of per-call means of timed blocks",
            ),
            latency_iqr: MetricResult::complete(
                timing.latency_iqr_s,
                "s",
                "spread of per-call block means",
                "interquartile range of per-call block means (linear interpolation)",
            ),
            throughput: MetricResult::complete(
                timing.throughput(32.0),
                "samples/s",
                "all timed blocks",
                "work_units x calls / timed seconds",
            ),
            operator_flops: unavailable(
                "FLOPs",
                (
                    "one call: every dispatched operator",
                    "operator FLOP formulas under a dispatch mode",
                ),
                NOT_REQUESTED,
            ),
            tensor_memory_peak: MetricResult::complete(
                1_048_576.0 + rank as f64 * 4096.0,
                "B",
                "PyTorch tracked CPU tensors",
                "storage tracker",
            ),
            allocator_reserved_peak: unavailable(
                "B",
                (
                    "accelerator allocator reserved bytes",
                    "allocator peak statistics",
                ),
                CPU_ALLOCATOR,
            ),
            process_rss_peak: unavailable(
                "B",
                (
                    "a fresh child process over its lifetime",
                    "peak RSS of a child process",
                ),
                NOT_REQUESTED,
            ),
            process_rss_workload_peak: unavailable(
                "B",
                (
                    "a fresh child process while it ran the workload",
                    "peak RSS after a reset",
                ),
                NOT_REQUESTED,
            ),
            process_rss_baseline: unavailable(
                "B",
                (
                    "a fresh child process after set-up",
                    "RSS before the workload",
                ),
                NOT_REQUESTED,
            ),
            machine_other_cpu_ratio: Some(MetricResult::complete(
                0.0078125 * (rank + 1) as f64,
                "ratio",
                "other processes",
                "/proc/stat",
            )),
            cpu_steal_ratio: Some(MetricResult::complete(
                0.0,
                "ratio",
                "hypervisor",
                "/proc/stat",
            )),
            involuntary_context_switches: Some(MetricResult::complete(
                rank as f64,
                "count",
                "the timing thread",
                "/proc/thread-self/status",
            )),
            cpu_frequency: Some(MetricResult::complete(
                2.5e9 - rank as f64 * 1e8,
                "Hz",
                "the CPUs the process may run on",
                "sysfs scaling_cur_freq",
            )),
            rank_process_rss_peak: (world_size > 1).then(|| {
                MetricResult::complete(
                    200_000_000.0 + rank as f64 * 1_000_000.0,
                    "B",
                    "peak RSS of this rank's process",
                    "getrusage ru_maxrss",
                )
            }),
            achieved_flop_rate: None,
            operator_bytes: None,
            arithmetic_intensity: None,
            flop_utilization: None,
            bandwidth_utilization: None,
        },
        operator_flops: None,
        profiler: ProfilerPass {
            status: MetricStatus::Unavailable,
            reason: Some("not requested".to_owned()),
            method: "torch.profiler".to_owned(),
            scope: "separate instrumented calls".to_owned(),
            calls: None,
            requested_calls: None,
            top_operators: Vec::new(),
            trace: None,
        },
        hardware_peak: None,
    }
}

/// The rank reports of one job with these block durations per rank (in ticks): each rank waits
/// at the barrier before a block for the slowest rank of the block before (and, before the
/// first block, 1 tick, except the last rank, which arrives last).
fn job(durations: &[&[f64]]) -> Vec<BenchmarkReport> {
    let world_size = durations.len() as u64;
    let blocks = durations[0].len();
    let steps: Vec<f64> = (0..blocks)
        .map(|block| {
            durations
                .iter()
                .map(|rank| rank[block])
                .fold(f64::MIN, f64::max)
        })
        .collect();
    durations
        .iter()
        .enumerate()
        .map(|(rank, own)| {
            let waits: Vec<f64> = (0..blocks)
                .map(|block| match block {
                    0 if rank as u64 + 1 == world_size => 0.0,
                    0 => 1.0,
                    _ => steps[block - 1] - own[block - 1],
                })
                .collect();
            rank_report(rank as u64, world_size, own, &waits)
        })
        .collect()
}

/// The job of the checked-in fixture: rank 1 is the slowest in every block (8 blocks: more than
/// chance allows, a sign test p of 1/256).
fn two_ranks() -> Vec<BenchmarkReport> {
    job(&[
        &[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0],
        &[12.0, 12.0, 11.0, 12.0, 12.0, 12.0, 11.0, 12.0],
    ])
}

fn merged(reports: &[BenchmarkReport]) -> DistributedBenchmarkReport {
    merge_rank_reports(reports).expect("the reports merge")
}

fn refusal(reports: &[BenchmarkReport]) -> String {
    match merge_rank_reports(reports) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("the merge must be refused"),
    }
}

fn json(report: &BenchmarkReport) -> String {
    to_json_text(&Report::Benchmark(Box::new(report.clone())))
}

fn merged_json(report: &DistributedBenchmarkReport) -> String {
    to_json_text(&Report::DistributedBenchmark(Box::new(report.clone())))
}

fn problems_of(text: &str) -> Vec<Problem> {
    match read_report(text) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

fn paths(problems: &[Problem]) -> Vec<String> {
    problems
        .iter()
        .map(|problem| problem.path.clone())
        .collect()
}

#[test]
fn two_ranks_merge_into_the_hand_computed_job() {
    let reports = two_ranks();
    let report = merged(&reports);
    assert_eq!(report.job.world_size, 2);
    assert_eq!(report.job.backend, "gloo");
    assert_eq!(report.job.hosts, vec!["node-a".to_owned()]);
    assert_eq!(report.job.work_units_per_call, 64.0);
    assert_eq!(report.job.collectives_per_call, Some(2));
    let block = |step: f64, slowest_rank: u64, spread: f64| JobBlock {
        step_time_s: step * T,
        slowest_rank,
        spread_s: spread * T,
    };
    let half = [
        block(12.0, 1, 2.0),
        block(12.0, 1, 2.0),
        block(11.0, 1, 1.0),
        block(12.0, 1, 2.0),
    ];
    assert_eq!(report.blocks, [half.clone(), half].concat());
    // The job's timing evidence.
    assert_eq!(report.timing.first_call_s, 40.0 * T);
    assert_eq!(report.timing.warmup_calls, 16);
    assert_eq!(report.timing.calls_per_block, 2);
    assert_eq!(
        report.timing.block_durations_s,
        ticks(&[12.0, 12.0, 11.0, 12.0, 12.0, 12.0, 11.0, 12.0])
    );
    assert_eq!(
        report.timing.block_starts_s,
        Some(ticks(&[0.0, 12.0, 24.0, 35.0, 47.0, 59.0, 71.0, 82.0]))
    );
    assert_eq!(report.timing.timer_overhead_s, 4.1e-8 + 1e-9);
    assert_eq!(report.timing.barrier_waits_s, None);
    assert_eq!(report.timing.collectives_per_call, None);
    // Per call: [6, 6, 5.5, 6] ticks twice; median 6, quartiles 5.875 and 6.
    let metrics = &report.metrics;
    assert_eq!(metrics.step_time.value, Some(6.0 * T));
    assert_eq!(metrics.step_time_iqr.value, Some(0.125 * T));
    // 64 samples x 2 calls x 8 blocks over 94 ticks.
    assert_eq!(metrics.throughput.value, Some(1024.0 / (94.0 * T)));
    assert_eq!(metrics.throughput.unit, "samples/s");
    assert_eq!(metrics.first_call.value, Some(40.0 * T));
    assert_eq!(
        metrics.step_time.method,
        "median over 8 aligned blocks of the slowest rank's block duration per call; barriers \
         before each block keep the ranks' blocks on the same calls and are outside the timed \
         intervals"
    );
    // Rank 1 is 2, 2, 1 and 2 ticks slower per block, twice: median 2 ticks, 1 tick per call.
    assert_eq!(report.straggler.rank, Some(1));
    assert_eq!(report.straggler.slowest_blocks, vec![0, 8]);
    assert_eq!(report.straggler.cost_s, Some(T));
    assert_eq!(report.straggler.cost_ratio, Some(1.0 / 6.0));
    assert_eq!(report.straggler.reason, None);
    assert!(
        report
            .straggler
            .method
            .contains("a rank slowed before a collective in the call delays every rank"),
        "{}",
        report.straggler.method
    );
    assert_eq!(metrics.straggler_cost.status, MetricStatus::Complete);
    assert_eq!(metrics.straggler_cost.value, Some(T));
    // Ranks: rank 0 waited 1 tick before the first block and 2 + 2 + 1 + 2 + 2 + 2 + 1 after.
    assert_eq!(report.ranks.len(), 2);
    assert_eq!(report.ranks[0].barrier_wait_s, 13.0 * T);
    assert_eq!(report.ranks[1].barrier_wait_s, 0.0);
    assert_eq!(report.ranks[1].local_rank, 1);
    assert_eq!(report.ranks[1].host, "node-a");
    assert_eq!(report.ranks[1].device.as_deref(), Some("cpu"));
    assert_eq!(report.ranks[1].latency, reports[1].metrics.latency);
    assert_eq!(
        report.ranks[1].tensor_memory_peak.value,
        Some(1_048_576.0 + 4096.0)
    );
    assert_eq!(report.ranks[1].process_rss_peak.value, Some(201_000_000.0));
    // Rank 0's context, workload and settings; the rank reports whole, by rank.
    assert_eq!(report.context, reports[0].context);
    assert_eq!(report.workload, reports[0].workload);
    assert_eq!(report.settings, reports[0].settings);
    assert_eq!(report.rank_reports, reports);
    let diagnostics: Vec<(DiagnosticCode, Severity, Option<&str>, &str)> = report
        .diagnostics
        .iter()
        .map(|d| (d.code, d.severity, d.metric.as_deref(), d.message.as_str()))
        .collect();
    assert_eq!(
        diagnostics,
        vec![
            (
                DiagnosticCode::Note,
                Severity::Warning,
                Some("straggler_cost"),
                "rank 1 was the slowest in 8 of 8 blocks and costs 976.6 us per call (16.7% of \
                 the step time)"
            ),
            (
                DiagnosticCode::Note,
                Severity::Info,
                Some("step_time"),
                "one call issues 2 collectives: the ranks wait for \
                 each other inside every call, so a rank slowed before its last collective shows \
                 in every rank's step time, not as a straggler"
            ),
        ]
    );
}

#[test]
fn the_order_of_the_inputs_does_not_matter() {
    let reports = job(&[
        &[10.0, 10.0, 10.0, 10.0],
        &[11.0, 12.0, 10.0, 11.0],
        &[14.0, 14.0, 14.0, 9.0],
    ]);
    let sorted = merged(&reports);
    let shuffled = [reports[2].clone(), reports[0].clone(), reports[1].clone()];
    assert_eq!(merged(&shuffled), sorted);
    assert_eq!(
        merge_rank_reports_json(&[&json(&reports[1]), &json(&reports[2]), &json(&reports[0])]),
        Ok(merged_json(&sorted))
    );
}

#[test]
fn three_ranks_name_the_straggler_by_the_median_of_the_others() {
    // The same four blocks four times: 12 of 16 for rank 2 is more than chance allows.
    let four = |blocks: [f64; 4]| [blocks, blocks, blocks, blocks].concat();
    let report = merged(&job(&[
        &four([10.0, 10.0, 10.0, 10.0]),
        &four([11.0, 12.0, 10.0, 11.0]),
        &four([14.0, 14.0, 14.0, 9.0]),
    ]));
    assert_eq!(
        report.job.hosts,
        vec!["node-a".to_owned(), "node-b".to_owned()]
    );
    assert_eq!(report.job.work_units_per_call, 96.0);
    assert_eq!(report.ranks[2].local_rank, 0);
    assert_eq!(
        report
            .blocks
            .iter()
            .map(|b| b.slowest_rank)
            .collect::<Vec<_>>(),
        four([2.0, 2.0, 2.0, 1.0])
            .into_iter()
            .map(|rank| rank as u64)
            .collect::<Vec<_>>()
    );
    assert_eq!(report.blocks[3].spread_s, 2.0 * T);
    assert_eq!(report.straggler.rank, Some(2));
    assert_eq!(report.straggler.slowest_blocks, vec![0, 4, 12]);
    // Beyond the median of the others: 3.5, 3, 4 and -1.5 ticks; per call 1.75, 1.5, 2, -0.75
    // (four times each); median 1.625 ticks.
    assert_eq!(report.straggler.cost_s, Some(1.625 * T));
    // Step times per call 7, 7, 7, 5.5 ticks: median 7.
    assert_eq!(report.metrics.step_time.value, Some(7.0 * T));
    assert_eq!(report.straggler.cost_ratio, Some(1.625 / 7.0));
}

#[test]
fn no_straggler_without_a_majority_of_blocks_and_ties_go_to_the_lowest_rank() {
    let report = merged(&job(&[
        &[10.0, 10.0, 10.0, 10.0],
        &[10.0, 13.0, 10.0, 10.0],
        &[12.0, 12.0, 12.0, 9.0],
    ]));
    assert_eq!(
        report
            .blocks
            .iter()
            .map(|b| b.slowest_rank)
            .collect::<Vec<_>>(),
        vec![2, 1, 2, 0]
    );
    assert_eq!(report.straggler.slowest_blocks, vec![1, 1, 2]);
    assert_eq!(report.straggler.rank, None);
    assert_eq!(report.straggler.cost_s, None);
    assert_eq!(report.straggler.cost_ratio, None);
    let reason = "no rank was the slowest in more than half of the 4 blocks (most: rank 2, in 2)";
    assert_eq!(report.straggler.reason.as_deref(), Some(reason));
    assert_eq!(
        report.metrics.straggler_cost.status,
        MetricStatus::Unavailable
    );
    assert_eq!(
        report.metrics.straggler_cost.reason.as_deref(),
        Some(reason)
    );
    assert!(
        report
            .diagnostics
            .iter()
            .all(|d| d.metric.as_deref() != Some("straggler_cost"))
    );
}

#[test]
fn one_rank_has_no_straggler_and_needs_no_barrier_waits() {
    let reports = job(&[&[10.0, 10.0, 11.0, 10.0]]);
    assert_eq!(
        reports[0].timing.as_ref().expect("timing").barrier_waits_s,
        None
    );
    let report = merged(&reports);
    assert_eq!(report.straggler.rank, None);
    assert_eq!(report.straggler.slowest_blocks, vec![4]);
    assert_eq!(
        report.straggler.reason.as_deref(),
        Some("only one rank: no rank waited for another")
    );
    assert_eq!(report.ranks[0].barrier_wait_s, 0.0);
    assert_eq!(
        report.ranks[0].process_rss_peak.status,
        MetricStatus::Unavailable
    );
    assert_eq!(
        report.ranks[0].process_rss_peak.reason.as_deref(),
        Some("the rank's report does not record rank_process_rss_peak")
    );
    assert_eq!(report.ranks[0].process_rss_peak.unit, "B");
    assert_eq!(report.job.collectives_per_call, None);
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    assert_eq!(problems_of(&merged_json(&report)), Vec::new());
}

#[test]
fn step_time_noise_gives_the_benchmark_noise_diagnostics() {
    // Per call 5, 5, 7, 10 ticks: quartiles 5 and 7.75 around a median of 6 (IQR 46%).
    let noisy = merged(&job(&[
        &[10.0, 10.0, 10.0, 10.0],
        &[10.0, 10.0, 14.0, 20.0],
    ]));
    let last = noisy.diagnostics.last().expect("a diagnostic");
    assert_eq!(last.code, DiagnosticCode::HighTimingNoise);
    assert_eq!(last.severity, Severity::Warning);
    assert_eq!(last.metric.as_deref(), Some("step_time"));
    assert_eq!(
        last.message,
        "step time IQR is 46% of the median: differences below that are not meaningful on this \
         job; close other work or time longer"
    );
    // Per call 5, 5, 5.5, 6 ticks: quartiles 5 and 5.625 around a median of 5.25 (IQR 12%).
    let some = merged(&job(&[
        &[10.0, 10.0, 10.0, 10.0],
        &[10.0, 10.0, 11.0, 12.0],
    ]));
    let last = some.diagnostics.last().expect("a diagnostic");
    assert_eq!(last.code, DiagnosticCode::TimingNoise);
    assert_eq!(
        last.message,
        "step time IQR is 12% of the median: timings are noisy"
    );
    // The fixture's job: IQR 2% of the median, no noise diagnostic.
    let quiet = merged(&two_ranks());
    assert!(quiet.diagnostics.iter().all(|d| !matches!(
        d.code,
        DiagnosticCode::TimingNoise | DiagnosticCode::HighTimingNoise
    )));
}

#[test]
fn noisy_ranks_are_named_first() {
    let mut reports = two_ranks();
    reports[1].diagnostics.push(Diagnostic {
        code: DiagnosticCode::NoisyMachine,
        severity: Severity::Warning,
        metric: Some("latency".to_owned()),
        message: "other processes used 31% of the CPU time".to_owned(),
        path: None,
        operator: None,
    });
    let report = merged(&reports);
    let first = &report.diagnostics[0];
    assert_eq!(first.code, DiagnosticCode::NoisyMachine);
    assert_eq!(first.severity, Severity::Warning);
    assert_eq!(
        first.message,
        "rank 1: other processes used 31% of the CPU time"
    );
    assert_eq!(report.diagnostics.len(), 3);
    assert_eq!(problems_of(&merged_json(&report)), Vec::new());
}

#[test]
fn every_refusal_names_the_ranks_and_values() {
    let reports = two_ranks();
    assert_eq!(
        refusal(&[]),
        "no rank reports were given: merging needs the `benchmark` report of every rank of the job"
    );

    let mut outside = reports.clone();
    outside[1].context.distributed = None;
    assert_eq!(
        refusal(&outside),
        "input 1 was not measured in a distributed job (its context has no `distributed` \
         member): merging needs the `benchmark` report of every rank of one job"
    );

    let three = job(&[&[10.0; 4], &[10.0; 4], &[10.0; 4]]);
    assert_eq!(
        refusal(&[reports[0].clone(), three[1].clone()]),
        "rank 0 was measured in a world of 2 ranks and rank 1 in a world of 3: the reports are \
         not of one job"
    );

    let mut nccl = reports.clone();
    if let Some(place) = nccl[1].context.distributed.as_mut() {
        place.backend = "nccl".to_owned();
    }
    assert_eq!(
        refusal(&nccl),
        "rank 0 used the `gloo` backend and rank 1 the `nccl` backend: the reports are not of \
         one job"
    );

    let mut beyond = reports.clone();
    if let Some(place) = beyond[1].context.distributed.as_mut() {
        place.rank = 2;
    }
    assert_eq!(
        refusal(&beyond),
        "rank 2 is outside its world of 2 ranks (ranks 0 to 1)"
    );

    assert_eq!(
        refusal(&[reports[0].clone(), reports[1].clone(), reports[1].clone()]),
        "rank 1 is given twice (input 1 and input 2): merging needs each rank's report once"
    );

    assert_eq!(
        refusal(&three[..1]),
        "ranks 1, 2 of a world of 3 are missing: merging needs the report of every rank"
    );
    assert_eq!(
        refusal(&[three[0].clone(), three[2].clone()]),
        "rank 1 of a world of 3 is missing: merging needs the report of every rank"
    );
    let mut huge = reports[0].clone();
    if let Some(place) = huge.context.distributed.as_mut() {
        place.world_size = 1 << 40;
    }
    assert_eq!(
        merge_rank_reports(std::slice::from_ref(&huge)),
        Err(MergeError::MissingRanks {
            missing: (1..=8).collect(),
            count: (1 << 40) - 1,
            world_size: 1 << 40,
        })
    );
    assert_eq!(
        refusal(&[huge]),
        "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 1099511627767 more of a world of 1099511627776 are \
         missing: merging needs the report of every rank"
    );

    let mut renamed = reports.clone();
    renamed[1].workload.name = Some("eval_step".to_owned());
    assert_eq!(
        refusal(&renamed),
        "rank 0 and rank 1 measured different workloads (name `train_step` vs `eval_step`): \
         every rank measures the same workload"
    );
    let mut tokens = reports.clone();
    tokens[1].workload.work_unit = "tokens".to_owned();
    assert_eq!(
        refusal(&tokens),
        "rank 0 and rank 1 measured different workloads (work_unit `samples` vs `tokens`): \
         every rank measures the same workload"
    );
    let mut half = reports.clone();
    half[1].workload.work_units = 16.0;
    assert_eq!(
        refusal(&half),
        "rank 0 and rank 1 measured different workloads (work_units 32 vs 16): every rank \
         measures the same workload"
    );

    let mut longer = reports.clone();
    longer[1].settings.min_time_s = 0.5;
    assert_eq!(
        refusal(&longer),
        "rank 0 and rank 1 used different settings (min_time_s 0.02 vs 0.5): every rank uses \
         the same timing budget"
    );
    let mut passes = reports.clone();
    passes[1].settings.passes = vec![PassName::Latency];
    assert_eq!(
        refusal(&passes),
        "rank 0 and rank 1 used different settings (passes latency, tensor_memory vs latency): \
         every rank uses the same timing budget"
    );

    let mut untimed = reports.clone();
    untimed[1].timing = None;
    assert_eq!(
        refusal(&untimed),
        "rank 1 has no timing evidence: merging needs the latency pass on every rank"
    );

    fn timing(reports: &mut [BenchmarkReport], rank: usize) -> &mut TimingEvidence {
        reports[rank].timing.as_mut().expect("timing")
    }
    let mut calls = reports.clone();
    timing(&mut calls, 1).calls_per_block = 3;
    assert_eq!(
        refusal(&calls),
        "the blocks were not aligned: rank 0 ran 2 calls per block and rank 1 3; measure every \
         rank in one distributed run, so that block i covers the same calls on each"
    );
    let mut warm = reports.clone();
    timing(&mut warm, 1).warmup_calls = 15;
    assert_eq!(
        refusal(&warm),
        "the blocks were not aligned: rank 0 ran 16 warm-up calls and rank 1 15; measure every \
         rank in one distributed run, so that block i covers the same calls on each"
    );
    let mut fewer = reports.clone();
    timing(&mut fewer, 1).block_durations_s.pop();
    assert_eq!(
        refusal(&fewer),
        "the blocks were not aligned: rank 0 ran 8 timed blocks and rank 1 7; measure every \
         rank in one distributed run, so that block i covers the same calls on each"
    );

    let mut unaligned = reports.clone();
    timing(&mut unaligned, 0).barrier_waits_s = None;
    assert_eq!(
        refusal(&unaligned),
        "rank 0 recorded no barrier_waits_s in a world of 2 ranks: its blocks were not aligned \
         by barriers"
    );
    let mut short = reports.clone();
    if let Some(waits) = timing(&mut short, 1).barrier_waits_s.as_mut() {
        waits.pop();
    }
    assert_eq!(
        refusal(&short),
        "rank 1 recorded 7 barrier waits for 8 timed blocks: every block has the wait before it"
    );

    let mut broken = reports;
    timing(&mut broken, 1).block_durations_s[2] = f64::NAN;
    assert_eq!(
        refusal(&broken),
        "the job's step times cannot be summarised: value 2 is NaN; every value must be finite"
    );
}

#[test]
fn errors_name_inputs_as_the_caller_does() {
    let reports = two_ranks();
    let error =
        merge_rank_reports(&[reports[0].clone(), reports[0].clone()]).expect_err("a repeated rank");
    assert_eq!(error.input(), Some(1));
    assert_eq!(
        error.describe(&|input| format!("rank{input}.json")),
        "rank 0 is given twice (rank0.json and rank1.json): merging needs each rank's report once"
    );
    assert_eq!(MergeError::NoReports.input(), None);
}

#[test]
fn json_merges_read_every_input_and_validate_the_result() {
    let reports = two_ranks();
    let texts = [json(&reports[0]), json(&reports[1])];
    let merged_text = merge_rank_reports_json(&[&texts[1], &texts[0]]).expect("merged");
    assert_eq!(merged_text, merged_json(&merged(&reports)));
    // Invalid inputs: every problem, prefixed by its input.
    let mut bad: Value = serde_json::from_str(&texts[1]).expect("JSON");
    bad["timing"]["block_durations_s"][3] = serde_json::json!(-1.0);
    let bad = bad.to_string();
    match merge_rank_reports_json(&[&texts[0], &bad, "{"]) {
        Err(MergeFailure::Invalid(problems)) => {
            let found = paths(&problems);
            assert!(
                found.contains(&"input 1:$.timing.block_durations_s[3]".to_owned()),
                "{found:?}"
            );
            assert!(
                found.iter().any(|path| path.starts_with("input 2:$")),
                "{found:?}"
            );
            assert!(
                found.iter().all(|path| !path.starts_with("input 0:")),
                "{found:?}"
            );
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
    // Another kind of report is refused by its input.
    let flops =
        fs::read_to_string(repo_root().join("tests/fixtures/reports/flops_square_matmul.json"))
            .expect("fixture");
    assert_eq!(
        merge_rank_reports_json(&[&texts[0], &flops]),
        Err(MergeFailure::Refused(MergeError::NotBenchmark {
            input: 1,
            kind: "flops".to_owned()
        }))
    );
    assert_eq!(
        MergeError::NotBenchmark {
            input: 1,
            kind: "flops".to_owned()
        }
        .to_string(),
        "input 1 is a `flops` report: merging needs the `benchmark` report of every rank"
    );
    assert_eq!(
        merge_rank_reports_json(&[]),
        Err(MergeFailure::Refused(MergeError::NoReports))
    );
}

fn tampered(report: &DistributedBenchmarkReport, change: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut value: Value = serde_json::from_str(&merged_json(report)).expect("JSON");
    change(&mut value);
    paths(&problems_of(&value.to_string()))
}

#[test]
fn validation_recomputes_every_derived_member() {
    let report = merged(&two_ranks());
    assert_eq!(problems_of(&merged_json(&report)), Vec::new());
    assert_eq!(
        tampered(&report, |v| v["blocks"][0]["step_time_s"] =
            serde_json::json!(0.5)),
        vec!["$.blocks[0].step_time_s"]
    );
    let problems = {
        let mut value: Value = serde_json::from_str(&merged_json(&report)).expect("JSON");
        value["blocks"][0]["step_time_s"] = serde_json::json!(0.5);
        problems_of(&value.to_string())
    };
    assert_eq!(
        problems[0].message,
        format!(
            "0.5 disagrees with {}, which merging rank_reports gives",
            12.0 * T
        )
    );
    assert_eq!(
        tampered(&report, |v| v["blocks"][2]["slowest_rank"] =
            serde_json::json!(0)),
        vec!["$.blocks[2].slowest_rank"]
    );
    assert_eq!(
        tampered(&report, |v| v["metrics"]["step_time"]["value"] =
            serde_json::json!(1.0)),
        vec![
            "$.metrics.step_time.known_value",
            "$.metrics.step_time.value"
        ]
    );
    assert_eq!(
        tampered(&report, |v| v["straggler"]["rank"] = serde_json::json!(0)),
        vec!["$.straggler.rank"]
    );
    assert_eq!(
        tampered(&report, |v| v["job"]["hosts"] =
            serde_json::json!(["node-a", "node-b"])),
        vec!["$.job.hosts"]
    );
    assert_eq!(
        tampered(&report, |v| v["ranks"][0]["barrier_wait_s"] =
            serde_json::json!(0.0)),
        vec!["$.ranks[0].barrier_wait_s"]
    );
    assert_eq!(
        tampered(&report, |v| {
            v["timing"]["barrier_waits_s"] = serde_json::json!([0.0, 0.0, 0.0, 0.0]);
        }),
        vec!["$.timing.barrier_waits_s"]
    );
    assert_eq!(
        tampered(&report, |v| {
            v["diagnostics"].as_array_mut().expect("diagnostics").pop();
        }),
        vec!["$.diagnostics"]
    );
    assert_eq!(
        tampered(&report, |v| v["context"]["device"] =
            serde_json::json!("cuda:0")),
        vec!["$.context.device"]
    );
    // The rank reports are sorted by rank.
    assert_eq!(
        tampered(&report, |v| {
            v["rank_reports"].as_array_mut().expect("ranks").swap(0, 1);
        }),
        vec![
            "$.rank_reports[0].context.distributed.rank",
            "$.rank_reports[1].context.distributed.rank"
        ]
    );
    // A rank report is checked as a benchmark; the merge is compared only once they are valid.
    assert_eq!(
        tampered(&report, |v| {
            v["rank_reports"][1]["timing"]["block_durations_s"][0] = serde_json::json!(-1.0);
        }),
        vec!["$.rank_reports[1].timing.block_durations_s[0]"]
    );
    // A rank report that no longer merges.
    let found = {
        let mut value: Value = serde_json::from_str(&merged_json(&report)).expect("JSON");
        value["rank_reports"][1]["timing"]["warmup_calls"] = serde_json::json!(15);
        problems_of(&value.to_string())
    };
    assert_eq!(paths(&found), vec!["$.rank_reports"]);
    assert_eq!(
        found[0].message,
        "the rank reports do not merge: the blocks were not aligned: rank 0 ran 16 warm-up calls \
         and rank 1 15; measure every rank in one distributed run, so that block i covers the \
         same calls on each"
    );
}

fn benchmark_problems(report: &BenchmarkReport) -> Vec<Problem> {
    problems_of(&json(report))
}

#[test]
fn benchmark_reports_check_their_distributed_members() {
    let reports = two_ranks();
    assert_eq!(benchmark_problems(&reports[0]), Vec::new());
    let check = |change: &dyn Fn(&mut BenchmarkReport)| {
        let mut report = reports[0].clone();
        change(&mut report);
        let problems = benchmark_problems(&report);
        (paths(&problems), problems)
    };
    let waits = |report: &mut BenchmarkReport| -> Vec<f64> {
        report
            .timing
            .as_ref()
            .and_then(|t| t.barrier_waits_s.clone())
            .expect("waits")
    };
    let set_waits = |report: &mut BenchmarkReport, waits: Option<Vec<f64>>| {
        report.timing.as_mut().expect("timing").barrier_waits_s = waits;
    };

    let (found, problems) = check(&|report| {
        let mut short = waits(report);
        short.pop();
        set_waits(report, Some(short));
    });
    assert_eq!(found, vec!["$.timing.barrier_waits_s"]);
    assert_eq!(
        problems[0].message,
        "has 7 waits for 8 block durations; every timed block has the wait before it"
    );
    let (found, _) = check(&|report| {
        let mut negative = waits(report);
        negative[2] = -T;
        set_waits(report, Some(negative));
    });
    assert_eq!(found, vec!["$.timing.barrier_waits_s[2]"]);
    let (found, problems) = check(&|report| set_waits(report, None));
    assert_eq!(found, vec!["$.timing.barrier_waits_s"]);
    assert_eq!(
        problems[0].message,
        "is required in a distributed job of 2 ranks: every timed block is aligned by a barrier \
         whose wait is recorded"
    );
    let (found, _) = check(&|report| report.context.distributed = None);
    assert_eq!(
        found,
        vec![
            "$.timing.barrier_waits_s",
            "$.timing.collectives_per_call",
            "$.metrics.rank_process_rss_peak"
        ]
    );
    let (found, _) = check(&|report| {
        if let Some(rss) = report.metrics.rank_process_rss_peak.as_mut() {
            rss.value = Some(1.5);
            rss.known_value = Some(1.5);
        }
    });
    assert_eq!(
        found,
        vec![
            "$.metrics.rank_process_rss_peak.value",
            "$.metrics.rank_process_rss_peak.known_value"
        ]
    );
    let (found, _) = check(&|report| {
        if let Some(rss) = report.metrics.rank_process_rss_peak.as_mut() {
            rss.unit = "s".to_owned();
        }
    });
    assert_eq!(found, vec!["$.metrics.rank_process_rss_peak.unit"]);
    let (found, problems) = check(&|report| {
        if let Some(place) = report.context.distributed.as_mut() {
            place.rank = 2;
            place.local_rank = 5;
            place.backend = " ".to_owned();
            place.host = String::new();
        }
    });
    assert_eq!(
        found,
        vec![
            "$.context.distributed.rank",
            "$.context.distributed.local_rank",
            "$.context.distributed.backend",
            "$.context.distributed.host"
        ]
    );
    assert_eq!(problems[0].message, "must be below world_size (2), found 2");
    let (found, _) = check(&|report| {
        if let Some(place) = report.context.distributed.as_mut() {
            place.world_size = 0;
        }
    });
    assert_eq!(found, vec!["$.context.distributed.world_size"]);
}

#[test]
fn job_views_read_a_merged_report_as_one_benchmark_of_the_job() {
    let report = merged(&two_ranks());
    let view = job_view(&report);
    assert_eq!(view.workload.work_units, 64.0);
    assert_eq!(view.timing.as_ref(), Some(&report.timing));
    assert_eq!(view.metrics.latency, report.metrics.step_time);
    assert_eq!(view.metrics.latency_iqr, report.metrics.step_time_iqr);
    assert_eq!(view.metrics.throughput, report.metrics.throughput);
    assert_eq!(view.metrics.first_call, report.metrics.first_call);
    assert_eq!(
        view.metrics.tensor_memory_peak.value,
        Some(1_048_576.0 + 4096.0)
    );
    assert_eq!(view.metrics.process_rss_peak.value, Some(201_000_000.0));
    assert_eq!(
        view.metrics.operator_flops.reason.as_deref(),
        Some("rank 0's operator_flops is unavailable: not requested")
    );
    assert_eq!(
        view.metrics.allocator_reserved_peak.reason.as_deref(),
        Some(format!("rank 0's allocator_reserved_peak is unavailable: {CPU_ALLOCATOR}").as_str())
    );
    let value = |metric: &Option<MetricResult>| metric.as_ref().and_then(|m| m.value);
    assert_eq!(value(&view.metrics.machine_other_cpu_ratio), Some(0.015625));
    assert_eq!(value(&view.metrics.involuntary_context_switches), Some(1.0));
    assert_eq!(value(&view.metrics.cpu_frequency), Some(2.4e9));
    assert_eq!(
        view.profiler.reason.as_deref(),
        Some("not merged across ranks")
    );
    assert_eq!(view.diagnostics, report.diagnostics);
}

fn comparison(baseline: &str, candidate: &str) -> Value {
    let text = compare_benchmarks_json(baseline, candidate, None, &CompareOptions::default())
        .expect("compared");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn two_merged_jobs_compare_by_step_time_and_job_throughput() {
    let before = merged_json(&merged(&two_ranks()));
    // Every block of every rank twice as long.
    let slower = merged_json(&merged(&job(&[
        &[20.0, 20.0, 20.0, 20.0],
        &[24.0, 24.0, 22.0, 24.0],
    ])));
    let found = comparison(&before, &slower);
    let latency = &found["deltas"][0];
    assert_eq!(latency["metric"], "latency");
    assert_eq!(latency["baseline"], 6.0 * T);
    assert_eq!(latency["candidate"], 12.0 * T);
    assert_eq!(latency["ratio"], 2.0);
    let throughput = &found["deltas"][1];
    assert_eq!(throughput["metric"], "throughput");
    assert_eq!(throughput["ratio"], 0.5);
    let note = found["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .last()
        .expect("a note")
        .clone();
    assert_eq!(note["code"], "note");
    assert_eq!(note["severity"], "info");
    assert_eq!(
        note["message"],
        "both sides are distributed jobs (2 ranks on gloo -> 2 ranks on gloo), compared by their \
         step time (per aligned block, the slowest rank's time per call) as latency and by the \
         job's throughput (every rank's work over the summed step times); memory is the largest \
         rank's peak and operator FLOPs the sum over the ranks"
    );
    // The same comparison as that of the job views.
    let view = |text: &str| {
        let Ok(Report::DistributedBenchmark(report)) = read_report(text) else {
            panic!("a merged report")
        };
        job_view(&report)
    };
    let of_views = compare_benchmarks(
        &view(&before),
        &view(&slower),
        None,
        &CompareOptions::default(),
    )
    .expect("compared");
    assert_eq!(
        found["deltas"],
        serde_json::to_value(&of_views.deltas).expect("JSON")
    );
    assert_eq!(found["verdict"], of_views.verdict.as_str());
}

#[test]
fn a_benchmark_and_a_merged_job_are_not_compared() {
    let reports = two_ranks();
    let single = json(&reports[0]);
    let job = merged_json(&merged(&reports));
    let refused = |baseline: &str, candidate: &str| match compare_benchmarks_json(
        baseline,
        candidate,
        None,
        &CompareOptions::default(),
    ) {
        Err(BenchCompareFailure::Refused(error)) => error,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let error = refused(&single, &job);
    assert_eq!(
        error,
        BenchCompareError::DifferentKinds {
            baseline: "benchmark".to_owned(),
            candidate: "distributed_benchmark".to_owned()
        }
    );
    assert_eq!(
        error.to_string(),
        "the baseline is a `benchmark` report and the candidate a `distributed_benchmark` \
         report: a single-process benchmark is compared with another, and a merged distributed \
         job (merge_rank_reports) with another"
    );
    assert!(matches!(
        refused(&job, &single),
        BenchCompareError::DifferentKinds { .. }
    ));
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_checked_in_fixtures_are_the_merge_of_the_checked_in_ranks() {
    let dir = repo_root().join("tests/fixtures/distributed");
    let reports = two_ranks();
    let expected = [
        ("rank0.json", json(&reports[0])),
        ("rank1.json", json(&reports[1])),
        ("merged.json", merged_json(&merged(&reports))),
    ];
    if std::env::var_os("TORCHSCAN_UPDATE_FIXTURES").is_some() {
        fs::create_dir_all(&dir).expect("fixture directory");
        for (name, text) in &expected {
            fs::write(dir.join(name), text).expect("fixture written");
        }
    }
    for (name, text) in &expected {
        let found = fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            &found == text,
            "tests/fixtures/distributed/{name} is not what the builders give; run \
             TORCHSCAN_UPDATE_FIXTURES=1 cargo test -p torchscan-core --test distributed and \
             review the diff"
        );
        assert_eq!(problems_of(&found), Vec::new(), "{name}");
    }
    let rank0 = fs::read_to_string(dir.join("rank0.json")).expect("rank0.json");
    let rank1 = fs::read_to_string(dir.join("rank1.json")).expect("rank1.json");
    assert_eq!(
        merge_rank_reports_json(&[&rank1, &rank0]),
        Ok(expected[2].1.clone())
    );
}

#[test]
fn a_straggler_is_named_only_beyond_chance_and_a_share_of_the_step() {
    // 4 of 4 blocks: a sign test p of 1/16, which chance explains.
    let few = merged(&job(&[&[10.0; 4], &[12.0, 12.0, 11.0, 12.0]]));
    assert_eq!(few.straggler.rank, None);
    assert_eq!(few.straggler.cost_s, None);
    assert_eq!(few.straggler.slowest_blocks, vec![0, 4]);
    assert_eq!(
        few.straggler.reason.as_deref(),
        Some(
            "rank 1 was the slowest in 4 of the 4 blocks, which chance explains (sign test p = \
             0.062, not below 0.01): no rank stands out"
        )
    );
    assert_eq!(few.metrics.straggler_cost.status, MetricStatus::Unavailable);
    // 8 of 8 blocks, but half a tick in 1,000: 0.05% of the step time is too little to name.
    let tiny = merged(&job(&[&[1000.0; 8], &[1000.5; 8]]));
    assert_eq!(tiny.straggler.rank, None);
    let reason = tiny.straggler.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("rank 1 was the slowest in 8 of the 8 blocks, but by only ")
            && reason.ends_with(
                " per call (0.05% of the step time, below the 1% a straggler must cost to be \
                 named)"
            ),
        "{reason}"
    );
    assert!(
        tiny.diagnostics
            .iter()
            .all(|diagnostic| diagnostic.metric.as_deref() != Some("straggler_cost"))
    );
}

#[test]
fn reports_of_two_measurements_are_refused() {
    let mut reports = two_ranks();
    if let Some(place) = reports[1].context.distributed.as_mut() {
        place.measurement_id = "ffffffffffffffffffffffffffffffff".to_owned();
    }
    assert_eq!(
        refusal(&reports),
        "rank 0 comes from measurement 5f0c1d2e3a4b4c6d8e9f00112233aabb and rank 1 from \
         measurement ffffffffffffffffffffffffffffffff: the reports are not of one measurement \
         (each call of measure_workload in a job draws its own id; merge the reports of one call)"
    );
}

#[test]
fn the_job_counts_the_most_collectives_any_rank_counted() {
    let mut reports = two_ranks();
    if let Some(timing) = reports[0].timing.as_mut() {
        timing.collectives_per_call = Some(0);
    }
    assert_eq!(merged(&reports).job.collectives_per_call, Some(2));
    if let Some(timing) = reports[1].timing.as_mut() {
        timing.collectives_per_call = None;
    }
    assert_eq!(merged(&reports).job.collectives_per_call, None);
}

/// `report` with `work_units` per call, its throughput recomputed so that it stays valid.
fn with_work_units(mut report: BenchmarkReport, work_units: f64) -> BenchmarkReport {
    let timing = report.timing.as_ref().expect("timing");
    let stats = block_timing(&timing.block_durations_s, timing.calls_per_block).expect("timing");
    report.workload.work_units = work_units;
    report.metrics.throughput = MetricResult::complete(
        stats.throughput(work_units),
        "samples/s",
        "all timed blocks",
        "work_units x calls / timed seconds",
    );
    assert_eq!(
        problems_of(&json(&report)),
        Vec::new(),
        "a valid rank report"
    );
    report
}

/// The merge of valid rank reports is refused with `expected` by the typed merge and by the JSON
/// merge alike, and no report is written.
fn assert_overflow_refused(reports: &[BenchmarkReport], expected: &str) {
    for report in reports {
        assert_eq!(
            problems_of(&json(report)),
            Vec::new(),
            "a valid rank report"
        );
    }
    match merge_rank_reports(reports) {
        Err(error @ MergeError::Overflow { .. }) => assert_eq!(error.to_string(), expected),
        other => panic!("expected an overflow refusal, got {other:?}"),
    }
    let texts: Vec<String> = reports.iter().map(json).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    match merge_rank_reports_json(&refs) {
        Err(MergeFailure::Refused(error)) => assert_eq!(error.to_string(), expected),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn barrier_waits_summing_past_the_float_range_refuse_the_merge() {
    let mut reports = two_ranks();
    // Each wait is finite, so the rank report is valid; their sum is not.
    reports[1].timing.as_mut().expect("timing").barrier_waits_s = Some(vec![1e308; 8]);
    assert_overflow_refused(
        &reports,
        "the sum of rank 1's barrier waits is past the largest float (1.7976931348623157e308), \
         so the merged report cannot state it (8 waits, the largest 1e308 s); the rank reports \
         hold numbers too large to merge",
    );
    // One wait that large is stated as it is.
    reports[1].timing.as_mut().expect("timing").barrier_waits_s =
        Some([vec![1e308], vec![0.0; 7]].concat());
    let report = merged(&reports);
    assert_eq!(report.ranks[1].barrier_wait_s, 1e308);
    assert_eq!(problems_of(&merged_json(&report)), Vec::new());
}

#[test]
fn work_units_or_a_job_throughput_past_the_float_range_refuse_the_merge() {
    // Twenty ranks of 1e307 work units per call each: every rank's throughput is finite, the
    // job's work units per call are not.
    let durations = [1024.0; 4];
    let rows: Vec<&[f64]> = (0..20).map(|_| &durations[..]).collect();
    let reports: Vec<BenchmarkReport> = job(&rows)
        .into_iter()
        .map(|report| with_work_units(report, 1e307))
        .collect();
    assert_overflow_refused(
        &reports,
        "the job's work units per call, the sum of the ranks' is past the largest float \
         (1.7976931348623157e308), so the merged report cannot state it (20 ranks, the largest \
         1e307); the rank reports hold numbers too large to merge",
    );
    // Two ranks of 1e307 work units in 8 calls over 0.5 s: 1.6e308 per second each, which is
    // finite, and 3.2e308 for the job, which is not.
    let reports: Vec<BenchmarkReport> = job(&[&[128.0; 4], &[128.0; 4]])
        .into_iter()
        .map(|report| with_work_units(report, 1e307))
        .collect();
    assert_overflow_refused(
        &reports,
        "the job's throughput is past the largest float (1.7976931348623157e308), so the \
         merged report cannot state it (2e307 work units per call x 8 calls / 5e-1 s of step \
         times); the rank reports hold numbers too large to merge",
    );
}

#[test]
fn operator_flops_summing_past_the_float_range_are_unavailable_in_the_job_view() {
    let mut report = merged(&two_ranks());
    for rank in &mut report.rank_reports {
        rank.metrics.operator_flops = MetricResult::complete(
            1e308,
            "FLOPs",
            "one call: every dispatched operator",
            "operator FLOP formulas under a dispatch mode",
        );
    }
    let view = job_view(&report);
    assert_eq!(
        view.metrics.operator_flops.status,
        MetricStatus::Unavailable
    );
    assert_eq!(view.metrics.operator_flops.value, None);
    assert_eq!(
        view.metrics.operator_flops.reason.as_deref(),
        Some(
            "the ranks' operator_flops together are past the largest float (1.7976931348623157e308)"
        )
    );
}
