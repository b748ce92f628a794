//! Text of benchmark and peak-memory reports, in the README's line format.

use super::{push_diagnostics, push_line};

use crate::format::{display_number, float_count_text, format_metric, noise_label, threads_text};
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
    summarize_profiler(out, &report.profiler);
    push_diagnostics(out, &report.diagnostics);
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
