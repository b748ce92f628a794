//! The text summary and the HTML page of `distributed_benchmark` reports, and the distributed
//! members of a single rank's `benchmark` report.
//!
//! The reports are built here, in Rust, from two ranks with known numbers; every derived member
//! follows the recipes of `docs/report-schema.md`. Snapshots live under `tests/snapshots/`
//! (`INSTA_UPDATE=always cargo test -p torchscan-core --test distributed_pages` rewrites them).

use torchscan_core::schema::benchmark::{
    BenchmarkKind, BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, TimingEvidence,
    TimingSettings, Workload,
};
use torchscan_core::schema::common::{
    Context, Diagnostic, DiagnosticCode, DistributedContext, MetricResult, MetricStatus,
    ProcessGroupOrigin, SchemaVersionV1, Severity,
};
use torchscan_core::schema::distributed::{
    DistributedBenchmarkKind, DistributedBenchmarkReport, DistributedJob, DistributedMetrics,
    JobBlock, RankSummary, Straggler,
};
use torchscan_core::{Report, format_summary, read_report, render_html, stats, to_json_text};

/// Calls in every aligned block.
const CALLS: u64 = 4;
/// Work units of one call on each rank.
const WORK_UNITS: f64 = 8.0;
const STRAGGLER_METHOD: &str = "the slowest rank in more than half of the aligned blocks; its cost \
                                is the median over blocks of its duration minus the median of \
                                the other ranks', per call, at least 0";

/// What one rank measured.
struct RankSpec {
    host: &'static str,
    device: &'static str,
    first_call_s: f64,
    durations_s: [f64; 4],
    waits_s: [f64; 4],
    threads: u64,
    /// `rank_process_rss_peak`: its value, or `None` for unavailable.
    rss_peak: Option<f64>,
}

/// The two ranks: rank 1 is the slowest in blocks 0, 2 and 3.
fn two_ranks() -> [RankSpec; 2] {
    [
        RankSpec {
            host: "node-a",
            device: "cpu",
            first_call_s: 1.5,
            durations_s: [0.5, 0.625, 0.5, 0.5],
            waits_s: [0.0078125, 0.25, 0.0, 0.125],
            threads: 4,
            rss_peak: Some(536_870_912.0),
        },
        RankSpec {
            host: "node-b",
            device: "cpu",
            first_call_s: 2.25,
            durations_s: [0.75, 0.5, 0.625, 0.6875],
            waits_s: [0.0, 0.0, 0.125, 0.0],
            threads: 8,
            rss_peak: None,
        },
    ]
}

fn per_call(durations: &[f64]) -> Vec<f64> {
    durations.iter().map(|d| d / CALLS as f64).collect()
}

fn seconds(value: f64, scope: &str, method: &str) -> MetricResult {
    MetricResult::complete(value, "s", scope, method)
}

fn not_requested(unit: &str, scope: &str) -> MetricResult {
    MetricResult::unavailable(unit, scope, "not run", "not requested")
}

/// Rank `rank`'s `benchmark` report, as `measure_workload` writes it in the job.
fn rank_report(rank: u64, spec: &RankSpec, world_size: u64, name: &str) -> BenchmarkReport {
    let per_call = per_call(&spec.durations_s);
    let [q1, median, q3] = stats::quartiles(&per_call).expect("blocks");
    let total: f64 = spec.durations_s.iter().sum();
    let mut starts = Vec::new();
    let mut clock = 0.0;
    for (duration, wait) in spec.durations_s.iter().zip(&spec.waits_s) {
        if !starts.is_empty() {
            clock += wait;
        }
        starts.push(clock);
        clock += duration;
    }
    let rss_scope = "the rank's own process since it started";
    let rss_method = "getrusage ru_maxrss";
    BenchmarkReport {
        schema_version: SchemaVersionV1,
        kind: BenchmarkKind::Tag,
        context: Context {
            torchscan_version: "0.3.0".to_owned(),
            torch_version: Some("2.5.1".to_owned()),
            python_version: Some("3.12.3".to_owned()),
            device: Some(spec.device.to_owned()),
            torch_threads: Some(spec.threads),
            dtypes: vec!["torch.float32".to_owned()],
            distributed: Some(DistributedContext {
                rank,
                local_rank: 0,
                world_size,
                backend: "gloo".to_owned(),
                host: spec.host.to_owned(),
                process_group: ProcessGroupOrigin::Existing,
                measurement_id: "0a1b2c3d4e5f40718293a4b5c6d7e8f9".to_owned(),
            }),
            ..Context::default()
        },
        diagnostics: vec![Diagnostic {
            code: DiagnosticCode::Note,
            severity: Severity::Info,
            metric: None,
            message: "process RSS is the rank's own process: a fresh child cannot join the job"
                .to_owned(),
            path: None,
            operator: None,
        }],
        workload: Workload {
            name: Some(name.to_owned()),
            work_units: WORK_UNITS,
            work_unit: "samples".to_owned(),
            inputs: vec![],
        },
        settings: TimingSettings {
            passes: vec![PassName::Latency, PassName::TensorMemory],
            min_time_s: 0.5,
            max_time_s: 10.0,
            min_blocks: 4,
            warmup_time_s: 0.25,
            max_timer_overhead_ratio: 0.001,
        },
        timing: Some(TimingEvidence {
            first_call_s: spec.first_call_s,
            warmup_calls: 12,
            calls_per_block: CALLS,
            block_durations_s: spec.durations_s.to_vec(),
            block_starts_s: Some(starts),
            timer_overhead_s: 0.000_000_05,
            barrier_waits_s: Some(spec.waits_s.to_vec()),
            collectives_per_call: Some(2),
        }),
        metrics: BenchmarkMetrics {
            first_call: seconds(spec.first_call_s, "first call", "timed alone"),
            latency: seconds(median, "one warmed call", "median of per-call block means"),
            latency_iqr: seconds(q3 - q1, "spread", "IQR of per-call block means"),
            throughput: MetricResult::complete(
                WORK_UNITS * (CALLS * 4) as f64 / total,
                "samples/s",
                "all timed blocks",
                "work_units x calls / total timed seconds",
            ),
            operator_flops: not_requested("FLOPs", "operators executed by one call"),
            tensor_memory_peak: MetricResult::complete(
                98_816.0,
                "B",
                "PyTorch tracked CPU tensors",
                "peak of live tracked tensor storage during one call",
            ),
            allocator_reserved_peak: MetricResult::unavailable(
                "B",
                "CUDA caching allocator reserved bytes",
                "torch.cuda.max_memory_reserved",
                "unsupported on device",
            ),
            process_rss_peak: not_requested("B", "fresh child process, whole lifetime"),
            process_rss_workload_peak: not_requested("B", "fresh child process, workload"),
            process_rss_baseline: not_requested("B", "fresh child process after set-up"),
            machine_other_cpu_ratio: None,
            cpu_steal_ratio: None,
            involuntary_context_switches: None,
            cpu_frequency: None,
            rank_process_rss_peak: Some(match spec.rss_peak {
                Some(bytes) => MetricResult::complete(bytes, "B", rss_scope, rss_method),
                None => MetricResult::unavailable(
                    "B",
                    rss_scope,
                    rss_method,
                    "getrusage is not available on this platform",
                ),
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
            scope: "operators of the profiled calls".to_owned(),
            calls: None,
            requested_calls: None,
            top_operators: vec![],
            trace: None,
        },
        hardware_peak: None,
    }
}

/// The job's report of `ranks`, every derived member by the documented recipe.
fn job_report(ranks: &[RankSpec], name: &str) -> DistributedBenchmarkReport {
    let world_size = ranks.len() as u64;
    let rank_reports: Vec<BenchmarkReport> = ranks
        .iter()
        .enumerate()
        .map(|(rank, spec)| rank_report(rank as u64, spec, world_size, name))
        .collect();
    let block_count = ranks[0].durations_s.len();
    let blocks: Vec<JobBlock> = (0..block_count)
        .map(|block| {
            let durations: Vec<f64> = ranks.iter().map(|r| r.durations_s[block]).collect();
            let step = stats::max(&durations).expect("ranks");
            let fastest = stats::min(&durations).expect("ranks");
            JobBlock {
                step_time_s: step,
                slowest_rank: durations.iter().position(|d| *d == step).expect("a max") as u64,
                spread_s: step - fastest,
            }
        })
        .collect();
    let steps: Vec<f64> = blocks.iter().map(|b| b.step_time_s).collect();
    let [q1, step_time, q3] = stats::quartiles(&per_call(&steps)).expect("blocks");
    let mut slowest_blocks = vec![0u64; ranks.len()];
    for block in &blocks {
        slowest_blocks[block.slowest_rank as usize] += 1;
    }
    let straggler_rank = slowest_blocks
        .iter()
        .position(|count| (*count as usize) * 2 > block_count);
    let cost_scope = "time per call the straggler adds to the job";
    let straggler = match straggler_rank {
        Some(s) => {
            let excess: Vec<f64> = (0..block_count)
                .map(|block| {
                    let others: Vec<f64> = ranks
                        .iter()
                        .enumerate()
                        .filter(|(rank, _)| *rank != s)
                        .map(|(_, r)| r.durations_s[block])
                        .collect();
                    (ranks[s].durations_s[block] - stats::median(&others).expect("others"))
                        / CALLS as f64
                })
                .collect();
            let cost = stats::median(&excess).expect("blocks").max(0.0);
            Straggler {
                rank: Some(s as u64),
                slowest_blocks,
                cost_s: Some(cost),
                cost_ratio: Some(cost / step_time),
                method: STRAGGLER_METHOD.to_owned(),
                reason: None,
            }
        }
        None => Straggler {
            rank: None,
            slowest_blocks,
            cost_s: None,
            cost_ratio: None,
            method: STRAGGLER_METHOD.to_owned(),
            reason: Some(format!(
                "no rank was the slowest in more than half of the {block_count} blocks"
            )),
        },
    };
    let straggler_cost = match (straggler.cost_s, &straggler.reason) {
        (Some(cost), _) => seconds(cost, cost_scope, "median excess per call"),
        (None, reason) => MetricResult::unavailable(
            "s",
            cost_scope,
            "median excess per call",
            reason.as_deref().unwrap_or("no straggler"),
        ),
    };
    let work_units_per_call = WORK_UNITS * world_size as f64;
    let mut hosts: Vec<String> = ranks.iter().map(|r| r.host.to_owned()).collect();
    hosts.sort();
    hosts.dedup();
    let first = rank_reports[0].timing.clone().expect("timing");
    let first_call_s = ranks
        .iter()
        .map(|r| r.first_call_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let summaries: Vec<RankSummary> = rank_reports
        .iter()
        .enumerate()
        .map(|(rank, report)| RankSummary {
            rank: rank as u64,
            local_rank: 0,
            host: ranks[rank].host.to_owned(),
            device: report.context.device.clone(),
            latency: report.metrics.latency.clone(),
            barrier_wait_s: ranks[rank].waits_s.iter().sum(),
            tensor_memory_peak: report.metrics.tensor_memory_peak.clone(),
            allocator_reserved_peak: report.metrics.allocator_reserved_peak.clone(),
            process_rss_peak: report
                .metrics
                .rank_process_rss_peak
                .clone()
                .expect("recorded"),
        })
        .collect();
    DistributedBenchmarkReport {
        schema_version: SchemaVersionV1,
        kind: DistributedBenchmarkKind::Tag,
        context: rank_reports[0].context.clone(),
        diagnostics: vec![],
        workload: rank_reports[0].workload.clone(),
        settings: rank_reports[0].settings.clone(),
        job: DistributedJob {
            world_size,
            backend: "gloo".to_owned(),
            hosts,
            work_units_per_call,
            collectives_per_call: Some(2),
        },
        timing: TimingEvidence {
            first_call_s,
            block_durations_s: steps.clone(),
            barrier_waits_s: None,
            collectives_per_call: None,
            ..first
        },
        blocks,
        metrics: DistributedMetrics {
            step_time: seconds(
                step_time,
                "one call of the job",
                "median step time per call",
            ),
            step_time_iqr: seconds(q3 - q1, "spread of step times", "IQR of step times"),
            throughput: MetricResult::complete(
                work_units_per_call * (CALLS * block_count as u64) as f64
                    / steps.iter().sum::<f64>(),
                "samples/s",
                "every rank's work over all aligned blocks",
                "job work per call x calls / summed step times",
            ),
            first_call: seconds(first_call_s, "the slowest rank's first call", "largest"),
            straggler_cost,
        },
        straggler,
        ranks: summaries,
        rank_reports,
    }
}

fn summary_of(report: &DistributedBenchmarkReport) -> String {
    format_summary(&Report::DistributedBenchmark(Box::new(report.clone())))
}

fn page_of(report: &DistributedBenchmarkReport) -> String {
    render_html(&Report::DistributedBenchmark(Box::new(report.clone()))).expect("a page")
}

/// The `<section>` of the page titled `title`, whole.
fn section<'a>(html: &'a str, title: &str) -> &'a str {
    let heading = format!("<h2>{title}</h2>");
    let start = html.find(&heading).expect("the section");
    let start = html[..start].rfind("<section>").expect("its start");
    let end = start + html[start..].find("</section>").expect("its end") + "</section>".len();
    &html[start..end]
}

/// The hand-computed numbers of the two ranks: the builder's recipes give exactly these.
#[test]
fn the_builder_follows_the_recipes() {
    let report = job_report(&two_ranks(), "train_step");
    let steps: Vec<f64> = report.blocks.iter().map(|b| b.step_time_s).collect();
    assert_eq!(steps, [0.75, 0.625, 0.625, 0.6875]);
    let slowest: Vec<u64> = report.blocks.iter().map(|b| b.slowest_rank).collect();
    assert_eq!(slowest, [1, 0, 1, 1]);
    let spreads: Vec<f64> = report.blocks.iter().map(|b| b.spread_s).collect();
    assert_eq!(spreads, [0.25, 0.125, 0.125, 0.1875]);
    assert_eq!(report.metrics.step_time.value, Some(0.164_062_5));
    assert_eq!(report.metrics.step_time_iqr.value, Some(0.019_531_25));
    assert_eq!(report.straggler.rank, Some(1));
    assert_eq!(report.straggler.slowest_blocks, [1, 3]);
    // Per call, rank 1 minus rank 0: 0.0625, -0.03125, 0.03125, 0.046875; their median.
    assert_eq!(report.straggler.cost_s, Some(0.039_062_5));
    assert_eq!(report.straggler.cost_ratio, Some(0.039_062_5 / 0.164_062_5));
    assert_eq!(report.metrics.throughput.value, Some(256.0 / 2.6875));
    assert_eq!(report.metrics.first_call.value, Some(2.25));
    assert_eq!(report.ranks[0].barrier_wait_s, 0.382_812_5);
    // Every rank report is a valid `benchmark` report.
    for rank in &report.rank_reports {
        let text = to_json_text(&Report::Benchmark(Box::new(rank.clone())));
        if let Err(problems) = read_report(&text) {
            panic!("a rank report is invalid: {problems:#?}");
        }
    }
}

#[test]
fn the_summary_names_the_straggler_and_every_rank() {
    let report = job_report(&two_ranks(), "train_step");
    let summary = summary_of(&report);
    for line in [
        "Distributed workload train_step: world size 2, backend gloo, hosts node-a, node-b\n",
        "  Step time (slowest rank, median per call): 164.1 ms (0.1640625 s); IQR 19.53 ms \
         (0.01953125 s); 4 blocks of 4 calls\n",
        "  First call (slowest rank): 2.250 s (2.25 s) on rank 1\n",
        "  Straggler: rank 1, slowest in 3 of 4 blocks; costs 39.06 ms (0.0390625 s) per call, \
         23.8% of the step time\n",
        "  Collectives per call: 2 (the most any rank counted, every process group)\n",
        "    RSS peak: unavailable on rank 1 (getrusage is not available on this platform)\n",
        "    Reserved peak: unavailable on ranks 0, 1 (unsupported on device)\n",
        "    rank 1: Threads 4 -> 8\n",
    ] {
        assert!(
            summary.contains(line),
            "{line:?} is missing from\n{summary}"
        );
    }
    insta::assert_snapshot!("summary_named_straggler", summary);
}

#[test]
fn without_a_straggler_the_summary_says_why() {
    let mut ranks = two_ranks();
    ranks[0].durations_s = [0.5, 0.625, 0.5, 0.625];
    ranks[1].durations_s = [0.625, 0.5, 0.625, 0.5];
    let report = job_report(&ranks, "train_step");
    assert_eq!(report.straggler.rank, None);
    let summary = summary_of(&report);
    assert!(
        summary.contains(
            "  Straggler: none named (no rank was the slowest in more than half of the 4 \
             blocks)\n"
        ),
        "{summary}"
    );
    // Nothing stands in for the missing cost.
    assert!(!summary.contains("costs"), "{summary}");
    insta::assert_snapshot!("summary_no_straggler", summary);
    let html = page_of(&report);
    let straggler = section(&html, "Straggler");
    assert!(straggler.contains("<dt>Straggler</dt><dd>none named</dd>"));
    assert!(straggler.contains(
        "<dt>Reason</dt><dd>no rank was the slowest in more than half of the 4 blocks</dd>"
    ));
    assert!(!straggler.contains("Cost per call"));
    let job = section(&html, "Job");
    assert!(job.contains(
        "<h3>Straggler cost per call<span class=\"badge unavailable\">unavailable</span></h3>\
         <div class=\"value\">unavailable</div><div class=\"small\">Reason: no rank was the \
         slowest in more than half of the 4 blocks</div>"
    ));
}

#[test]
fn the_page_shows_the_job_the_straggler_the_blocks_and_the_ranks() {
    let report = job_report(&two_ranks(), "train_step");
    let html = page_of(&report);
    assert!(html.contains("<code>distributed_benchmark</code>"));
    assert!(!html.contains("<script"));
    let job = section(&html, "Job");
    assert!(job.contains(
        "<h3>Step time (slowest rank, median per call)<span class=\"badge complete\">complete\
         </span></h3><div class=\"value\" title=\"0.1640625 s\">164.1 ms</div>"
    ));
    assert!(job.contains("<h3>First call (rank 1, the slowest)"));
    assert!(job.contains("<svg "));
    assert!(job.contains(
        "4 aligned blocks of 4 calls: the slowest rank&#x27;s per-call time of each block"
    ));
    let straggler = section(&html, "Straggler");
    assert!(straggler.contains("<dt>Straggler</dt><dd>rank 1</dd>"));
    assert!(straggler.contains("<dt>Slowest in</dt><dd>3 of 4 blocks</dd>"));
    assert!(straggler.contains("<dt>Share of the step time</dt><dd>23.8%</dd>"));
    let ranks = section(&html, "Ranks");
    // An unavailable RSS peak shows its status, its reason as the cell's title, never a zero.
    assert!(ranks.contains(
        "<td class=\"n\" title=\"getrusage is not available on this platform\">unavailable</td>"
    ));
    assert!(ranks.contains("<td class=\"n\" title=\"536,870,912 B\">512.0 MiB</td>"));
    assert!(ranks.contains(
        "<dt>RSS peak</dt><dd>unavailable on rank 1 (getrusage is not available on this \
         platform)</dd>"
    ));
    for title in [
        "Job",
        "Straggler",
        "Blocks",
        "Ranks",
        "Contexts that differ from rank 0&#x27;s",
    ] {
        insta::assert_snapshot!(
            format!(
                "html_{}",
                title.split(' ').next().unwrap_or(title).to_lowercase()
            ),
            section(&html, title)
        );
    }
    insta::assert_snapshot!(
        "html_rank_diagnostics",
        section(&html, "Diagnostics of the ranks")
    );
}

#[test]
fn hostile_hosts_and_names_are_escaped_in_text_and_html() {
    const NAME: &str = "<script>alert(1)</script>\u{202e}step";
    let mut ranks = two_ranks();
    ranks[0].host = "node\u{1b}[31m-a";
    ranks[1].host = "<script>\u{202e}b";
    let report = job_report(&ranks, NAME);
    let summary = summary_of(&report);
    for raw in ['\u{1b}', '\u{202e}'] {
        assert!(!summary.contains(raw), "{raw:?} in\n{summary}");
    }
    assert!(summary.starts_with(
        "Distributed workload <script>alert(1)</script>\\u202estep: world size 2, backend gloo, \
         hosts <script>\\u202eb, node\\u001b[31m-a\n"
    ));
    assert!(summary.contains("<script>\\u202eb"));
    let html = page_of(&report);
    assert!(!html.contains("<script"), "an unescaped <script> tag");
    for raw in ['\u{1b}', '\u{202e}'] {
        assert!(!html.contains(raw), "{raw:?} in the page");
    }
    assert!(html.contains(
        "<dt>Workload</dt><dd>&lt;script&gt;alert(1)&lt;&#x2f;script&gt;\\u202estep</dd>"
    ));
    assert!(html.contains("<td>node\\u001b[31m-a</td>"));
    assert!(html.contains("<td>&lt;script&gt;\\u202eb</td>"));
}

/// One rank's own report, in a distributed job, says where it stood, what it waited and its
/// own process's RSS; the same report without those members reads as before.
#[test]
fn a_rank_report_shows_its_place_in_the_job() {
    let ranks = two_ranks();
    let report = rank_report(1, &ranks[1], 2, "train_step");
    let summary = format_summary(&Report::Benchmark(Box::new(report.clone())));
    assert!(summary.contains(
        "  Distributed: rank 1 of 2 (local rank 0), backend gloo, host node-b, the caller's \
         process group; barrier waits 125.000 ms over 4 blocks; 2 collectives per call\n"
    ));
    assert!(summary.contains(
        "  Rank process peak RSS: unavailable (getrusage is not available on this platform)\n"
    ));
    insta::assert_snapshot!("rank_summary", summary);
    let html = render_html(&Report::Benchmark(Box::new(report.clone()))).expect("a page");
    let distributed = section(&html, "Distributed job");
    assert!(distributed.contains("<dt>Rank</dt><dd>1 of 2</dd>"));
    assert!(
        distributed
            .contains("<dt>Barrier waits</dt><dd title=\"0.125 s\">125.0 ms over 4 blocks</dd>")
    );
    assert!(distributed.contains("<dt>Collectives per call</dt><dd>2</dd>"));
    insta::assert_snapshot!("rank_html_distributed", distributed);
    let memory = section(&html, "Memory");
    assert!(memory.contains(
        "<h3>Rank process peak RSS<span class=\"badge unavailable\">unavailable</span></h3>"
    ));
    let rank0 = rank_report(0, &ranks[0], 2, "train_step");
    let summary0 = format_summary(&Report::Benchmark(Box::new(rank0)));
    assert!(summary0.contains(
        "  Rank process peak RSS: 512.000 MiB\n    Scope: the rank's own process since it \
         started\n"
    ));

    // Without the distributed members: no line, no section, no card.
    let mut plain = report;
    plain.context.distributed = None;
    plain.metrics.rank_process_rss_peak = None;
    if let Some(timing) = plain.timing.as_mut() {
        timing.barrier_waits_s = None;
        timing.collectives_per_call = None;
    }
    let summary = format_summary(&Report::Benchmark(Box::new(plain.clone())));
    assert!(!summary.contains("Distributed"));
    assert!(!summary.contains("Rank process"));
    let html = render_html(&Report::Benchmark(Box::new(plain))).expect("a page");
    assert!(!html.contains("Distributed job"));
    assert!(!html.contains("Rank process"));
}

/// The merge's own output summarises and renders.
#[test]
fn the_merged_report_of_the_rank_reports_summarises() {
    let ranks = two_ranks();
    let reports: Vec<BenchmarkReport> = ranks
        .iter()
        .enumerate()
        .map(|(rank, spec)| rank_report(rank as u64, spec, 2, "train_step"))
        .collect();
    let merged = torchscan_core::distributed::merge_rank_reports(&reports).expect("one job");
    let built = job_report(&ranks, "train_step");
    assert_eq!(merged.blocks, built.blocks);
    // Three of four blocks is what chance gives two equal ranks often: the merge names no one,
    // where the built page above shows how a named straggler reads.
    assert_eq!(built.straggler.rank, Some(1));
    assert_eq!(merged.straggler.rank, None);
    assert_eq!(
        merged.straggler.slowest_blocks,
        built.straggler.slowest_blocks
    );
    assert_eq!(
        merged.metrics.step_time.value,
        built.metrics.step_time.value
    );
    assert_eq!(
        merged.metrics.throughput.value,
        built.metrics.throughput.value
    );
    let summary = summary_of(&merged);
    assert!(summary.contains(
        "  Straggler: none named (rank 1 was the slowest in 3 of the 4 blocks, which chance \
         explains (sign test p = 0.312, not below 0.01): no rank stands out)\n"
    ));
    insta::assert_snapshot!("summary_merged", summary);
    assert!(page_of(&merged).contains("<dt>Straggler</dt><dd>none named</dd>"));
}
