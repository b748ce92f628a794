//! Text of benchmark and peak-memory reports, in the README's line format.

use super::{push_diagnostics, push_line};

use crate::format::{
    display_number, float_count_text, format_metric, noise_label, plural, process_group_words,
    threads_text,
};
use crate::schema::benchmark::{BenchmarkMetrics, BenchmarkReport, ProfilerPass, ProfilerTrace};
use crate::schema::common::MetricStatus;
use crate::schema::peak_memory::PeakMemoryReport;

fn summarize_profiler(out: &mut String, profiler: &ProfilerPass) {
    match profiler.status {
        MetricStatus::Complete => {
            push_line(
                out,
                2,
                &format!(
                    "Profiler: {} calls{} (separate instrumented pass; times include \
                     instrumentation)",
                    float_count_text(profiler.calls.unwrap_or(0)),
                    match (profiler.calls, profiler.requested_calls) {
                        (Some(calls), Some(requested)) if calls < requested => format!(
                            " of {} requested, within the time budget",
                            float_count_text(requested)
                        ),
                        _ => String::new(),
                    }
                ),
            );
            for op in profiler.top_operators.iter().take(5) {
                push_line(
                    out,
                    4,
                    &format!(
                        "{}: {} calls, {} self",
                        op.operator,
                        float_count_text(op.calls),
                        display_number(op.self_time_s, "s")
                    ),
                );
            }
            if let Some(trace) = &profiler.trace {
                summarize_trace(out, trace);
            }
        }
        _ => push_line(
            out,
            2,
            &format!(
                "Profiler: {} (separate instrumented pass)",
                profiler.reason.as_deref().unwrap_or("unavailable")
            ),
        ),
    }
}

/// Where the profiler's trace was kept, what it holds and that its times are instrumented.
fn summarize_trace(out: &mut String, trace: &ProfilerTrace) {
    push_line(
        out,
        2,
        &format!(
            "Profiler trace: {} ({}, {}; open it in Perfetto or chrome://tracing)",
            trace.path,
            trace.format.describe(),
            display_number(trace.bytes as f64, "B")
        ),
    );
    push_line(
        out,
        4,
        &format!(
            "Scope: {}; instrumented, so its times are slower than the timed blocks'",
            trace.scope
        ),
    );
}

/// The noise metrics under one heading; nothing for a report written before they were recorded.
fn summarize_noise(out: &mut String, metrics: &BenchmarkMetrics) {
    let noise = metrics.noise_metrics();
    if noise.is_empty() {
        return;
    }
    push_line(out, 2, "Machine noise during timing:");
    for (key, metric) in noise {
        push_line(
            out,
            4,
            &format!("{}: {}", noise_label(key), format_metric(metric)),
        );
    }
}

pub(super) fn summarize_benchmark(out: &mut String, report: &BenchmarkReport) {
    let context = &report.context;
    push_line(
        out,
        0,
        &format!(
            "Workload on {} ({} PyTorch threads)",
            context.device.as_deref().unwrap_or("unknown device"),
            threads_text(context.torch_threads)
        ),
    );
    if let Some(line) = distributed_line(report) {
        push_line(out, 2, &line);
    }
    let m = &report.metrics;
    for (label, metric) in [
        ("First call", &m.first_call),
        ("Latency (block median)", &m.latency),
        ("Latency IQR", &m.latency_iqr),
        ("Throughput", &m.throughput),
    ] {
        push_line(out, 2, &format!("{label}: {}", format_metric(metric)));
    }
    summarize_noise(out, m);
    for (label, metric) in [
        ("Operator FLOPs", &m.operator_flops),
        ("PyTorch peak memory", &m.tensor_memory_peak),
    ] {
        push_line(out, 2, &format!("{label}: {}", format_metric(metric)));
    }
    if m.tensor_memory_peak.status != MetricStatus::Unavailable {
        push_line(out, 4, &format!("Scope: {}", m.tensor_memory_peak.scope));
    }
    if m.allocator_reserved_peak.status != MetricStatus::Unavailable {
        push_line(
            out,
            2,
            &format!(
                "Allocator reserved peak: {}",
                format_metric(&m.allocator_reserved_peak)
            ),
        );
        push_line(
            out,
            4,
            &format!("Scope: {}", m.allocator_reserved_peak.scope),
        );
    }
    push_line(
        out,
        2,
        &format!("Process peak RSS: {}", format_metric(&m.process_rss_peak)),
    );
    if m.process_rss_peak.status != MetricStatus::Unavailable {
        push_line(out, 4, &format!("Scope: {}", m.process_rss_peak.scope));
        for (label, metric) in [
            ("Workload peak", &m.process_rss_workload_peak),
            ("Baseline after set-up", &m.process_rss_baseline),
        ] {
            push_line(out, 4, &format!("{label}: {}", format_metric(metric)));
        }
    }
    if let Some(rank_rss) = &m.rank_process_rss_peak {
        push_line(
            out,
            2,
            &format!("Rank process peak RSS: {}", format_metric(rank_rss)),
        );
        if rank_rss.status != MetricStatus::Unavailable {
            push_line(out, 4, &format!("Scope: {}", rank_rss.scope));
        }
    }
    summarize_profiler(out, &report.profiler);
    push_diagnostics(out, &report.diagnostics);
}

/// In a distributed job: `Distributed: rank 1 of 2 (local rank 1), backend gloo, host a, the
/// caller's process group; barrier waits 3.000 ms over 4 blocks; 2 collectives per call`.
fn distributed_line(report: &BenchmarkReport) -> Option<String> {
    let d = report.context.distributed.as_ref()?;
    let mut line = format!(
        "Distributed: rank {} of {} (local rank {}), backend {}, host {}, {}",
        d.rank,
        d.world_size,
        d.local_rank,
        d.backend,
        d.host,
        process_group_words(d.process_group)
    );
    let timing = report.timing.as_ref();
    match timing.and_then(|t| t.barrier_waits_s.as_deref()) {
        Some(waits) => line.push_str(&format!(
            "; barrier waits {} over {}",
            display_number(waits.iter().sum(), "s"),
            plural(waits.len(), "block")
        )),
        None => line.push_str("; barrier waits not recorded"),
    }
    if let Some(collectives) = timing.and_then(|t| t.collectives_per_call) {
        line.push_str(&format!(
            "; {} collectives per call",
            float_count_text(collectives)
        ));
    }
    Some(line)
}

pub(super) fn summarize_peak_memory(out: &mut String, report: &PeakMemoryReport) {
    push_line(
        out,
        0,
        &format!(
            "Peak memory of {} on {}",
            report.callable.as_deref().unwrap_or("a callable"),
            report.context.device.as_deref().unwrap_or("unknown device")
        ),
    );
    for (label, metric) in [
        ("PyTorch peak memory", &report.tensor_memory_peak),
        ("Baseline at start", &report.baseline),
        ("Allocator reserved peak", &report.allocator_reserved_peak),
    ] {
        push_line(out, 2, &format!("{label}: {}", format_metric(metric)));
        if metric.status != MetricStatus::Unavailable {
            push_line(out, 4, &format!("Scope: {}", metric.scope));
        }
    }
    push_diagnostics(out, &report.diagnostics);
}
