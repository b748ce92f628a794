//! Invariants of benchmark and peak-memory reports: timing evidence, passes and memory scopes.

use super::model::check_operator_flops;
use super::{Checker, check_block_durations, check_metric, check_value_metas};
use super::{RECOMPUTE_RELATIVE_TOLERANCE, approx_equal};
use crate::schema::benchmark::{
    BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, ProfilerTrace, TimingEvidence,
    TimingSettings, TraceFormat,
};
use crate::schema::common::{MetricResult, MetricStatus, is_valid_work_unit, throughput_unit};
use crate::schema::peak_memory::PeakMemoryReport;
use crate::stats;
use std::collections::BTreeSet;

fn check_settings(c: &mut Checker, settings: &TimingSettings) {
    c.at("settings", |c| {
        c.positive("min_time_s", settings.min_time_s);
        if settings.max_time_s < settings.min_time_s {
            c.problem_at(
                "max_time_s",
                format!("must be at least min_time_s ({})", settings.min_time_s),
            );
        }
        c.at_least_one("min_blocks", settings.min_blocks);
        c.non_negative("warmup_time_s", settings.warmup_time_s);
        if !(settings.max_timer_overhead_ratio > 0.0 && settings.max_timer_overhead_ratio < 1.0) {
            c.problem_at(
                "max_timer_overhead_ratio",
                format!(
                    "must be in (0, 1), found {}",
                    settings.max_timer_overhead_ratio
                ),
            );
        }
        let unique: BTreeSet<_> = settings.passes.iter().collect();
        if unique.len() != settings.passes.len() {
            c.problem_at("passes", "lists a pass more than once");
        }
    });
}

fn check_timing(c: &mut Checker, timing: &TimingEvidence) {
    c.at("timing", |c| {
        c.positive("first_call_s", timing.first_call_s);
        c.at_least_one("calls_per_block", timing.calls_per_block);
        c.non_negative("timer_overhead_s", timing.timer_overhead_s);
        c.at("block_durations_s", |c| {
            check_block_durations(c, &timing.block_durations_s)
        });
        if let Some(starts) = &timing.block_starts_s {
            c.at("block_starts_s", |c| {
                check_block_starts(c, starts, &timing.block_durations_s)
            });
        }
    });
}

/// Whether `later` is at least `earlier`, to a relative tolerance of 1e-9 of the larger number.
fn at_or_after(later: f64, earlier: f64) -> bool {
    let scale = later.abs().max(earlier.abs());
    later >= earlier - RECOMPUTE_RELATIVE_TOLERANCE * scale
}

/// Checks block starts against the block durations they belong to: one start per block, finite,
/// the first at 0, and each block starting no earlier than the previous one ended (starts and
/// durations are read from one clock, and blocks run one after another).
fn check_block_starts(c: &mut Checker, starts: &[f64], durations: &[f64]) {
    if starts.len() != durations.len() {
        c.problem(format!(
            "has {} starts for {} block durations; every timed block has one start",
            starts.len(),
            durations.len()
        ));
    }
    for (index, start) in starts.iter().enumerate() {
        if !start.is_finite() {
            c.at_index(index, |c| {
                c.problem(format!("must be finite, found {start}"))
            });
        }
    }
    if let Some(first) = starts.first()
        && *first != 0.0
    {
        c.at_index(0, |c| {
            c.problem(format!(
                "the first block starts at 0 (starts are measured from it), found {first}"
            ))
        });
    }
    for (index, (pair, previous_duration)) in starts.windows(2).zip(durations).enumerate() {
        let (previous_start, start) = (pair[0], pair[1]);
        let previous_end = previous_start + previous_duration;
        if start.is_finite() && previous_end.is_finite() && !at_or_after(start, previous_end) {
            if c.is_full() {
                c.omitted += 1;
                continue;
            }
            c.at_index(index + 1, |c| {
                c.problem(format!(
                    "starts at {start} s, before block {index} ended at {previous_end} s \
                     (its start {previous_start} s + its duration {previous_duration} s); \
                     blocks run one after another on one clock"
                ))
            });
        }
    }
}

/// Checks that a complete metric states `expected`, recomputed from the raw evidence.
fn check_recomputed(c: &mut Checker, key: &str, metric: &MetricResult, expected: f64, how: &str) {
    if let Some(value) = metric.value
        && !approx_equal(value, expected)
    {
        c.at(key, |c| {
            c.problem_at("value", format!("{value} disagrees with {expected}, {how}"))
        });
    }
}

fn check_profiler(c: &mut Checker, profiler: &ProfilerPass) {
    c.at("profiler", |c| {
        c.non_empty("method", &profiler.method);
        c.non_empty("scope", &profiler.scope);
        match profiler.status {
            MetricStatus::Complete => {
                match profiler.calls {
                    Some(calls) => c.at_least_one("calls", calls),
                    None => c.problem_at("calls", "a completed profiler pass states its calls"),
                }
                if profiler.reason.is_some() {
                    c.problem_at("reason", "a completed profiler pass has a null reason");
                }
                if let (Some(calls), Some(requested)) = (profiler.calls, profiler.requested_calls)
                    && calls > requested
                {
                    c.problem_at(
                        "calls",
                        format!("{calls} calls profiled, more than the {requested} requested"),
                    );
                }
            }
            MetricStatus::Partial => c.problem_at(
                "status",
                "the profiler pass is complete or unavailable, never partial",
            ),
            MetricStatus::Unavailable => {
                if profiler
                    .reason
                    .as_deref()
                    .is_none_or(|r| r.trim().is_empty())
                {
                    c.problem_at("reason", "an unavailable profiler pass says why in reason");
                }
                if profiler.calls.is_some() {
                    c.problem_at("calls", "an unavailable profiler pass has null calls");
                }
                if !profiler.top_operators.is_empty() {
                    c.problem_at(
                        "top_operators",
                        "an unavailable profiler pass lists no operators",
                    );
                }
            }
        }
        if let Some(requested) = profiler.requested_calls {
            c.at_least_one("requested_calls", requested);
        }
        if let Some(trace) = &profiler.trace {
            c.at("trace", |c| check_trace(c, trace, profiler));
        }
        c.at("top_operators", |c| {
            let self_times: Vec<f64> = profiler
                .top_operators
                .iter()
                .map(|op| op.self_time_s)
                .collect();
            if let Some(index) = self_times.windows(2).position(|pair| pair[0] < pair[1]) {
                c.at_index(index + 1, |c| {
                    c.problem_at(
                        "self_time_s",
                        "top operators are sorted by self time, largest first",
                    )
                });
            }
            for (index, op) in profiler.top_operators.iter().enumerate() {
                c.at_index(index, |c| {
                    c.non_empty("operator", &op.operator);
                    c.at_least_one("calls", op.calls);
                    c.non_negative("self_time_s", op.self_time_s);
                    c.non_negative("total_time_s", op.total_time_s);
                });
            }
        });
    });
}

/// A kept trace: only of a pass that ran, covering at most its calls, named, instrumented, not
/// empty, and gzip-compressed exactly when its path ends in `.gz`.
fn check_trace(c: &mut Checker, trace: &ProfilerTrace, profiler: &ProfilerPass) {
    if profiler.status != MetricStatus::Complete {
        c.problem("an unavailable profiler pass wrote no trace");
    }
    c.non_empty("path", &trace.path);
    c.non_empty("scope", &trace.scope);
    c.at_least_one("calls", trace.calls);
    if let Some(calls) = profiler.calls
        && trace.calls > calls
    {
        c.problem_at(
            "calls",
            format!(
                "the trace covers {} calls, more than the {calls} the pass profiled",
                trace.calls
            ),
        );
    }
    if !trace.instrumented {
        c.problem_at(
            "instrumented",
            "a profiler trace is always instrumented: its times include the profiler's overhead",
        );
    }
    if trace.bytes == 0 {
        c.problem_at(
            "bytes",
            "a written trace is not empty (a Chrome trace holds at least its JSON object)",
        );
    }
    let gzip_name = trace.path.ends_with(".gz");
    if gzip_name != (trace.format == TraceFormat::ChromeTraceGzip) {
        c.problem_at(
            "format",
            if gzip_name {
                "a trace whose path ends in `.gz` is `chrome_trace_gzip`"
            } else {
                "only a trace whose path ends in `.gz` is `chrome_trace_gzip`"
            },
        );
    }
}

pub(super) fn check_benchmark(c: &mut Checker, report: &BenchmarkReport) {
    let workload = &report.workload;
    c.at("workload", |c| {
        c.positive("work_units", workload.work_units);
        if !is_valid_work_unit(&workload.work_unit) {
            c.problem_at(
                "work_unit",
                format!(
                    "`{}` is not a valid work unit (a letter, then letters, digits, `_` or `-`)",
                    workload.work_unit
                ),
            );
        }
        check_value_metas(c, "inputs", &workload.inputs);
    });
    check_settings(c, &report.settings);
    if let Some(timing) = &report.timing {
        check_timing(c, timing);
    }
    let metrics = &report.metrics;
    let throughput_unit = throughput_unit(&workload.work_unit);
    c.at("metrics", |c| {
        for (key, metric, unit) in [
            ("first_call", &metrics.first_call, "s"),
            ("latency", &metrics.latency, "s"),
            ("latency_iqr", &metrics.latency_iqr, "s"),
            ("throughput", &metrics.throughput, throughput_unit.as_str()),
            ("operator_flops", &metrics.operator_flops, "FLOPs"),
            ("tensor_memory_peak", &metrics.tensor_memory_peak, "B"),
            ("allocator_reserved_peak", &metrics.allocator_reserved_peak, "B"),
            ("process_rss_peak", &metrics.process_rss_peak, "B"),
            ("process_rss_workload_peak", &metrics.process_rss_workload_peak, "B"),
            ("process_rss_baseline", &metrics.process_rss_baseline, "B"),
        ] {
            check_metric(c, key, metric, Some(unit));
        }
        let timed = [
            ("first_call", &metrics.first_call),
            ("latency", &metrics.latency),
            ("latency_iqr", &metrics.latency_iqr),
            ("throughput", &metrics.throughput),
        ];
        match &report.timing {
            None => {
                for (key, metric) in timed {
                    if metric.status != MetricStatus::Unavailable {
                        c.at(key, |c| c.problem_at("status", "without timing evidence (timing is null) this metric is unavailable"));
                    }
                }
            }
            Some(timing) => {
                for (key, metric) in timed {
                    if metric.status == MetricStatus::Partial {
                        c.at(key, |c| c.problem_at("status", "timing metrics are complete or unavailable, never partial"));
                    }
                }
                check_recomputed(c, "first_call", &metrics.first_call, timing.first_call_s, "timing.first_call_s");
                if let Ok(recomputed) = stats::block_timing(&timing.block_durations_s, timing.calls_per_block)
                    && recomputed.timed_s > 0.0
                {
                    check_recomputed(c, "latency", &metrics.latency, recomputed.latency_s, "the median of per-call block means");
                    check_recomputed(c, "latency_iqr", &metrics.latency_iqr, recomputed.latency_iqr_s, "the IQR of per-call block means");
                    let throughput = recomputed.throughput(workload.work_units);
                    check_recomputed(c, "throughput", &metrics.throughput, throughput, "work_units x calls / timed seconds");
                }
            }
        }
    });
    match &report.operator_flops {
        Some(flops) => {
            check_operator_flops(
                c,
                "operator_flops",
                flops,
                &report.diagnostics,
                report.context.model_type.as_deref(),
            );
            if metrics.operator_flops.status != flops.total.status
                || metrics.operator_flops.known_value != flops.total.known_value
            {
                c.at("metrics", |c| {
                    c.at("operator_flops", |c| {
                        c.problem(
                            "must state the same status and known_value as operator_flops.total",
                        )
                    })
                });
            }
        }
        None => {
            if metrics.operator_flops.status != MetricStatus::Unavailable {
                c.at("metrics", |c| c.at("operator_flops", |c| c.problem_at("status", "without the operator_flops breakdown (null) this metric is unavailable")));
            }
        }
    }
    check_profiler(c, &report.profiler);
    check_passes(c, report);
    check_memory_order(c, metrics);
    check_noise(c, report);
    check_distributed_members(c, report);
    super::peak::check_rates(c, report);
}

/// The members only a rank of a distributed job records: barrier waits (one per block, finite,
/// at least 0, required with several ranks), collectives per call and the rank's own RSS peak
/// (bytes, a whole number), each only with `context.distributed`.
fn check_distributed_members(c: &mut Checker, report: &BenchmarkReport) {
    let place = report.context.distributed.as_ref();
    const ONLY: &str =
        "is recorded only by a rank of a distributed job (context.distributed is absent)";
    if let Some(timing) = &report.timing {
        c.at("timing", |c| {
            match &timing.barrier_waits_s {
                Some(waits) => c.at("barrier_waits_s", |c| {
                    if place.is_none() {
                        c.problem(ONLY);
                    }
                    let blocks = timing.block_durations_s.len();
                    if waits.len() != blocks {
                        c.problem(format!(
                            "has {} waits for {blocks} block durations; every timed block has \
                             the wait before it",
                            waits.len()
                        ));
                    }
                    for (index, wait) in waits.iter().enumerate() {
                        if !(wait.is_finite() && *wait >= 0.0) {
                            c.at_index(index, |c| {
                                c.problem(format!("must be finite and at least 0, found {wait}"))
                            });
                        }
                    }
                }),
                None => {
                    if let Some(place) = place.filter(|place| place.world_size > 1) {
                        c.problem_at(
                            "barrier_waits_s",
                            format!(
                                "is required in a distributed job of {} ranks: every timed \
                                 block is aligned by a barrier whose wait is recorded",
                                place.world_size
                            ),
                        );
                    }
                }
            }
            if timing.collectives_per_call.is_some() && place.is_none() {
                c.problem_at("collectives_per_call", ONLY);
            }
        });
    }
    if let Some(metric) = &report.metrics.rank_process_rss_peak {
        c.at("metrics", |c| {
            check_metric(c, "rank_process_rss_peak", metric, Some("B"));
            c.at("rank_process_rss_peak", |c| {
                if place.is_none() {
                    c.problem(ONLY);
                }
                for (field, number) in
                    [("value", metric.value), ("known_value", metric.known_value)]
                {
                    if let Some(number) = number.filter(|number| number.fract() != 0.0) {
                        c.problem_at(field, format!("bytes are a whole number, found {number}"));
                    }
                }
            });
        });
    }
}

/// Ratios may exceed 1 or fall below 0 by this much (clock-tick rounding of `/proc/stat`)
/// before the validator objects.
const RATIO_TOLERANCE: f64 = 1e-9;

/// The noise metrics: their units, ratios in [0, 1], whole counts, and unavailable without
/// timing evidence (the timed phase is what they describe).
fn check_noise(c: &mut Checker, report: &BenchmarkReport) {
    let m = &report.metrics;
    c.at("metrics", |c| {
        for (key, metric) in m.noise_metrics() {
            let unit = match key {
                "machine_other_cpu_ratio" | "cpu_steal_ratio" => "ratio",
                "involuntary_context_switches" => "count",
                _ => "Hz",
            };
            check_metric(c, key, metric, Some(unit));
            c.at(key, |c| {
                if metric.status == MetricStatus::Partial {
                    c.problem_at(
                        "status",
                        "noise metrics are complete or unavailable, never partial",
                    );
                }
                if report.timing.is_none() && metric.status != MetricStatus::Unavailable {
                    c.problem_at(
                        "status",
                        "without timing evidence (timing is null) this metric is unavailable",
                    );
                }
                for (field, number) in
                    [("value", metric.value), ("known_value", metric.known_value)]
                {
                    let Some(number) = number else { continue };
                    match unit {
                        "ratio" if number > 1.0 + RATIO_TOLERANCE => c.problem_at(
                            field,
                            format!(
                                "a share of the available CPU time is at most 1, found {number}"
                            ),
                        ),
                        "count" if number.fract() != 0.0 => c.problem_at(
                            field,
                            format!("context switches are a whole number, found {number}"),
                        ),
                        "Hz" if number == 0.0 => {
                            c.problem_at(field, "a running CPU's frequency is positive, found 0")
                        }
                        _ => {}
                    }
                }
            });
        }
    });
}

/// A pass that was not requested leaves its metrics unavailable and its evidence null.
fn check_passes(c: &mut Checker, report: &BenchmarkReport) {
    let requested = |pass: PassName| report.settings.passes.contains(&pass);
    let m = &report.metrics;
    let by_pass: [(PassName, &[(&str, &MetricResult)]); 4] = [
        (
            PassName::Latency,
            &[
                ("first_call", &m.first_call),
                ("latency", &m.latency),
                ("latency_iqr", &m.latency_iqr),
                ("throughput", &m.throughput),
            ],
        ),
        (
            PassName::OperatorFlops,
            &[("operator_flops", &m.operator_flops)],
        ),
        (
            PassName::TensorMemory,
            &[
                ("tensor_memory_peak", &m.tensor_memory_peak),
                ("allocator_reserved_peak", &m.allocator_reserved_peak),
            ],
        ),
        (
            PassName::ProcessRss,
            &[
                ("process_rss_peak", &m.process_rss_peak),
                ("process_rss_workload_peak", &m.process_rss_workload_peak),
                ("process_rss_baseline", &m.process_rss_baseline),
            ],
        ),
    ];
    for (pass, metrics) in by_pass {
        if requested(pass) {
            continue;
        }
        for (key, metric) in metrics {
            if metric.status != MetricStatus::Unavailable {
                c.at("metrics", |c| {
                    c.at(key, |c| {
                        c.problem_at("status", format!("the `{}` pass was not requested (settings.passes), so this metric is unavailable", pass_name(pass)))
                    })
                });
            }
        }
    }
    if !requested(PassName::Latency) && report.timing.is_some() {
        c.problem_at(
            "timing",
            "the `latency` pass was not requested (settings.passes), so timing is null",
        );
    }
    if !requested(PassName::OperatorFlops) && report.operator_flops.is_some() {
        c.problem_at("operator_flops", "the `operator_flops` pass was not requested (settings.passes), so this breakdown is null");
    }
    if !requested(PassName::Profiler) && report.profiler.status != MetricStatus::Unavailable {
        c.at("profiler", |c| {
            c.problem_at(
                "status",
                "the `profiler` pass was not requested (settings.passes), so it is unavailable",
            )
        });
    }
}

fn pass_name(pass: PassName) -> &'static str {
    match pass {
        PassName::Latency => "latency",
        PassName::OperatorFlops => "operator_flops",
        PassName::TensorMemory => "tensor_memory",
        PassName::ProcessRss => "process_rss",
        PassName::Profiler => "profiler",
        PassName::HardwarePeak => "hardware_peak",
    }
}

/// Peaks that contain each other are ordered: reserved >= allocated, lifetime >= workload >= baseline.
fn check_memory_order(c: &mut Checker, m: &BenchmarkMetrics) {
    let pairs = [
        (
            "allocator_reserved_peak",
            &m.allocator_reserved_peak,
            "tensor_memory_peak",
            &m.tensor_memory_peak,
            "allocator reserved bytes include the allocated bytes",
        ),
        (
            "process_rss_peak",
            &m.process_rss_peak,
            "process_rss_workload_peak",
            &m.process_rss_workload_peak,
            "the lifetime peak includes the workload peak",
        ),
        (
            "process_rss_workload_peak",
            &m.process_rss_workload_peak,
            "process_rss_baseline",
            &m.process_rss_baseline,
            "the workload peak is measured from the baseline's high-water mark",
        ),
    ];
    for (larger_key, larger, smaller_key, smaller, why) in pairs {
        if let (Some(high), Some(low)) = (larger.value, smaller.value)
            && high < low
        {
            c.at("metrics", |c| {
                c.at(larger_key, |c| {
                    c.problem_at(
                        "value",
                        format!("{high} is below {smaller_key} ({low}); {why}"),
                    )
                })
            });
        }
    }
}

pub(super) fn check_peak_memory(c: &mut Checker, report: &PeakMemoryReport) {
    check_metric(c, "baseline", &report.baseline, Some("B"));
    check_metric(
        c,
        "tensor_memory_peak",
        &report.tensor_memory_peak,
        Some("B"),
    );
    check_metric(
        c,
        "allocator_reserved_peak",
        &report.allocator_reserved_peak,
        Some("B"),
    );
    if let (Some(baseline), Some(peak)) = (report.baseline.value, report.tensor_memory_peak.value)
        && peak < baseline
    {
        c.at("tensor_memory_peak", |c| {
            c.problem_at(
                "value",
                format!("the peak ({peak}) cannot be below the baseline ({baseline}) it includes"),
            )
        });
    }
}
