//! Text of benchmark and peak-memory reports, in the README's line format.

use super::{push_diagnostics, push_line};

use crate::format::{
    display_number, float_count_text, format_metric, known_text, noise_label, percent_text, plural,
    process_group_words, readable_number, reason_suffix, threads_text,
};
use crate::roofline::{Bound, KnownNumber, roofline};
use crate::schema::benchmark::{
    BenchmarkMetrics, BenchmarkReport, HardwarePeak, PeakOrigin, ProfilerPass, ProfilerTrace,
};
use crate::schema::common::{MetricResult, MetricStatus, dtype_text};
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

/// The text of a benchmark report. The README's lines come first, in their order and with
/// nothing between them: the workload line, first call, latency, IQR, throughput, operator
/// FLOPs, the tensor, allocator and process peaks and the profiler. What later versions record
/// follows them, so scripts written against those lines keep reading them: the profiler's trace,
/// the distributed job, the rank's own RSS, the machine noise during timing and the rates
/// against a hardware peak; the diagnostics end every summary.
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
    // Everything below came after the README's lines.
    if report.profiler.status == MetricStatus::Complete
        && let Some(trace) = &report.profiler.trace
    {
        summarize_trace(out, trace);
    }
    if let Some(line) = distributed_line(report) {
        push_line(out, 2, &line);
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
    summarize_noise(out, m);
    if let Some(peak) = &report.hardware_peak {
        summarize_rates(out, report, peak);
    }
    push_diagnostics(out, &report.diagnostics);
}

/// The words of where a peak rate comes from, after a share of it: `measured matmul peak`.
fn origin_words(origin: Option<PeakOrigin>, measured: &str) -> String {
    match origin {
        Some(PeakOrigin::Declared) => "declared peak".to_owned(),
        Some(PeakOrigin::Measured) => measured.to_owned(),
        None => "no peak".to_owned(),
    }
}

/// A share of a peak after a rate: ` (12.3% of 474.2 GFLOP/s, measured matmul peak)`, or why
/// there is none.
fn share_text(utilization: Option<&MetricResult>, peak: &MetricResult, origin: String) -> String {
    match utilization {
        Some(metric) => match (KnownNumber::of(metric), peak.value) {
            (Some(share), Some(_)) if !(share.value * 100.0).is_finite() => {
                " (no share of a peak: the percentage is beyond the range of a float)".to_owned()
            }
            (Some(share), Some(peak_value)) => format!(
                " ({}{} of {}, {origin})",
                if share.lower_bound { "at least " } else { "" },
                percent_text(share.value),
                readable_number(peak_value, &peak.unit)
            ),
            _ => format!(
                " (no share of a peak: {})",
                metric.reason.as_deref().unwrap_or("unavailable")
            ),
        },
        None => String::new(),
    }
}

/// A peak rate as text: its number, or `<what> <status> (reason)`.
fn peak_rate_text(metric: &MetricResult, what: &str) -> String {
    match metric.value {
        Some(value) if metric.status == MetricStatus::Complete => {
            readable_number(value, &metric.unit)
        }
        _ => format!(
            "{what} {}{}",
            metric.status.as_str(),
            reason_suffix(metric.reason.as_deref())
        ),
    }
}

/// A declared rate as text: its number, or `<what> not declared`.
fn declared_text(metric: &MetricResult, what: &str) -> String {
    match metric.value {
        Some(value) if metric.status == MetricStatus::Complete => {
            readable_number(value, &metric.unit)
        }
        _ => format!("{what} not declared"),
    }
}

/// The lines a recorded peak adds: the achieved rate and its share of the peak, the operator
/// bandwidth and its share, which roof binds, and every peak recorded with its provenance.
fn summarize_rates(out: &mut String, report: &BenchmarkReport, peak: &HardwarePeak) {
    let m = &report.metrics;
    let achieved = match &m.achieved_flop_rate {
        Some(metric) => match KnownNumber::of(metric) {
            Some(known) => format!(
                "{}{}",
                known_text(known, "FLOP/s"),
                share_text(
                    m.flop_utilization.as_ref(),
                    &peak.flop_rate,
                    origin_words(peak.flop_rate_origin, "measured matmul peak"),
                )
            ),
            None => format_metric(metric),
        },
        None => "not recorded".to_owned(),
    };
    push_line(out, 2, &format!("Achieved: {achieved}"));
    if let Some(bytes) = &m.operator_bytes {
        let per_second = match (KnownNumber::of(bytes), KnownNumber::of(&m.latency)) {
            (Some(bytes), Some(latency)) if latency.value > 0.0 && !latency.lower_bound => {
                let value = bytes.value / latency.value;
                if value.is_finite() {
                    Ok(KnownNumber {
                        value,
                        lower_bound: bytes.lower_bound,
                    })
                } else {
                    Err(Some(
                        "metrics.operator_bytes / metrics.latency is beyond the range of a float",
                    ))
                }
            }
            _ => Err(m
                .bandwidth_utilization
                .as_ref()
                .and_then(|metric| metric.reason.as_deref())
                .or(bytes.reason.as_deref())),
        };
        let text = match per_second {
            Ok(rate) => format!(
                "{}{}",
                known_text(rate, "B/s"),
                share_text(
                    m.bandwidth_utilization.as_ref(),
                    &peak.bandwidth,
                    origin_words(peak.bandwidth_origin, "measured copy bandwidth"),
                )
            ),
            Err(reason) => format!("unavailable{}", reason_suffix(reason)),
        };
        push_line(out, 2, &format!("Operator bandwidth: {text}"));
        push_line(
            out,
            4,
            "Scope: operator bytes per second, a model with no cache reuse between operators, \
             not DRAM traffic",
        );
    }
    let bound = match roofline(report) {
        Some(Ok(roof)) => {
            let ridge = format!(
                "ridge point {} ({} over {})",
                readable_number(roof.ridge_point, "FLOP/B"),
                readable_number(roof.peak_flop_rate, "FLOP/s"),
                readable_number(roof.peak_bandwidth, "B/s"),
            );
            match (&roof.bound, roof.intensity) {
                (Bound::Compute, Some(intensity)) => format!(
                    "compute-bound: arithmetic intensity {} is at or above the {ridge}",
                    known_text(intensity, "FLOP/B")
                ),
                (Bound::Memory, Some(intensity)) => format!(
                    "memory-bound: arithmetic intensity {} is below the {ridge}",
                    known_text(intensity, "FLOP/B")
                ),
                (bound, _) => format!("{}; {ridge}", bound.words()),
            }
        }
        Some(Err(why)) => format!("unknown ({why})"),
        None => "unknown (no peak)".to_owned(),
    };
    push_line(out, 2, &format!("Bound: {bound}"));
    push_line(
        out,
        2,
        "Hardware peak (utilization uses a declared peak where there is one):",
    );
    if let Some(declared) = &peak.declared {
        push_line(
            out,
            4,
            &format!(
                "Declared: {}, {}; source: {}",
                declared_text(&declared.flop_rate, "compute rate"),
                declared_text(&declared.bandwidth, "bandwidth"),
                declared.source
            ),
        );
    }
    if let Some(measured) = &peak.measured {
        let matmul = match measured.flop_rate.status {
            MetricStatus::Complete => format!(
                "{} ({} matmul of {} x {})",
                peak_rate_text(&measured.flop_rate, "matmul"),
                dtype_text(&measured.dtype),
                float_count_text(measured.matmul_size),
                float_count_text(measured.matmul_size),
            ),
            _ => peak_rate_text(&measured.flop_rate, "matmul"),
        };
        let copy = match measured.bandwidth.status {
            MetricStatus::Complete => format!(
                "{} (copy of {})",
                peak_rate_text(&measured.bandwidth, "copy"),
                readable_number(measured.copy_bytes as f64, "B")
            ),
            _ => peak_rate_text(&measured.bandwidth, "copy"),
        };
        push_line(out, 4, &format!("Measured: {matmul}, {copy}"));
        let (compute, memory) = (
            &measured.theoretical_flop_rate,
            &measured.theoretical_bandwidth,
        );
        let theoretical = if compute.status == MetricStatus::Unavailable
            && memory.status == MetricStatus::Unavailable
            && compute.reason == memory.reason
        {
            format!("unavailable{}", reason_suffix(compute.reason.as_deref()))
        } else {
            format!(
                "{}, {} (from the device properties; never attained)",
                peak_rate_text(compute, "compute rate"),
                peak_rate_text(memory, "bandwidth"),
            )
        };
        push_line(out, 4, &format!("Theoretical: {theoretical}"));
    }
}

/// The sum of `values` as a readable number, or words that say it is beyond the range of a
/// float (each value is finite in a valid report, their sum need not be).
fn total_text(values: &[f64], unit: &str) -> String {
    let total: f64 = values.iter().sum();
    if total.is_finite() {
        display_number(total, unit)
    } else {
        "a total beyond the range of a float".to_owned()
    }
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
            total_text(waits, "s"),
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

#[cfg(test)]
mod tests {
    use super::total_text;

    #[test]
    fn a_sum_past_the_float_range_is_words_not_inf() {
        assert_eq!(total_text(&[0.125, 0.5], "s"), "625.000 ms");
        assert_eq!(
            total_text(&[f64::MAX, f64::MAX], "s"),
            "a total beyond the range of a float"
        );
    }
}
