//! The text summary of every report kind: the lines `summary`, `measure_workload` and
//! `torchscan-report summary` print. Units are scaled here (ms, MiB) and nowhere else.

use std::fmt::Write as _;

use crate::schema::Report;
use crate::schema::analysis::AnalysisReport;
use crate::schema::benchmark::{BenchmarkReport, ProfilerPass};
use crate::schema::common::{Diagnostic, MetricResult, MetricStatus, ValueMeta};
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus, Verdict};
use crate::schema::diff::ReportDiffReport;
use crate::schema::flops::{FlopReport, OperatorFlops};
use crate::schema::output_check::OutputCheckReport;
use crate::schema::peak_memory::PeakMemoryReport;

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// Formats `value` with `decimals` decimals and thousands separators: `4,191,866.300`.
pub fn group_thousands(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (integer, fraction) = match text.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (text.as_str(), None),
    };
    let mut grouped = String::with_capacity(text.len() + integer.len() / 3 + 1);
    // Rounding can make a tiny negative number print as zero; keep "-0.000" out.
    if value < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        grouped.push('-');
    }
    for (index, digit) in integer.chars().enumerate() {
        if index > 0 && (integer.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if let Some(fraction) = fraction {
        grouped.push('.');
        grouped.push_str(fraction);
    }
    grouped
}

/// A metric's number in display units: seconds as ms, bytes as MiB, others as they are.
fn display_number(value: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{} ms", group_thousands(value * 1e3, 3)),
        "B" => format!("{} MiB", group_thousands(value / BYTES_PER_MIB, 3)),
        "count" => group_thousands(value, 0),
        "ratio" => group_thousands(value, 3),
        other => format!("{} {other}", group_thousands(value, 3)),
    }
}

/// A metric as text: its number, `at least` its lower bound, or `unavailable (reason)`.
pub fn format_metric(metric: &MetricResult) -> String {
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => display_number(value, &metric.unit),
        (MetricStatus::Partial, _, Some(known)) => format!(
            "partial, at least {}{}",
            display_number(known, &metric.unit),
            reason_suffix(metric.reason.as_deref())
        ),
        (status, _, _) => format!(
            "{}{}",
            status.as_str(),
            reason_suffix(metric.reason.as_deref())
        ),
    }
}

fn reason_suffix(reason: Option<&str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

fn push_line(out: &mut String, indent: usize, text: &str) {
    out.extend(std::iter::repeat_n(' ', indent));
    out.push_str(text);
    out.push('\n');
}

fn push_diagnostics(out: &mut String, diagnostics: &[Diagnostic]) {
    if diagnostics.is_empty() {
        return;
    }
    push_line(out, 2, "Diagnostics:");
    for diagnostic in diagnostics {
        let mut line = format!(
            "{} {}: {}",
            diagnostic.severity.as_str(),
            serde_json::to_value(diagnostic.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            diagnostic.message
        );
        if let Some(path) = &diagnostic.path {
            let _ = write!(line, " [module {}]", display_path(path));
        }
        if let Some(operator) = &diagnostic.operator {
            let _ = write!(line, " [operator {operator}]");
        }
        push_line(out, 4, &line);
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

fn threads_text(threads: Option<u64>) -> String {
    threads.map_or_else(|| "unknown".to_owned(), |t| t.to_string())
}

fn summarize_profiler(out: &mut String, profiler: &ProfilerPass) {
    match profiler.status {
        MetricStatus::Complete => {
            push_line(
                out,
                2,
                &format!(
                    "Profiler: {} calls (separate instrumented pass; times include instrumentation)",
                    group_thousands(profiler.calls.unwrap_or(0) as f64, 0)
                ),
            );
            for op in profiler.top_operators.iter().take(5) {
                push_line(
                    out,
                    4,
                    &format!(
                        "{}: {} calls, {} self",
                        op.operator,
                        group_thousands(op.calls as f64, 0),
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

fn summarize_benchmark(out: &mut String, report: &BenchmarkReport) {
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
    push_diagnostics(out, &report.diagnostics);
}

fn shape_text(meta: &ValueMeta) -> String {
    match meta {
        ValueMeta::Tensor(tensor) => format!(
            "[{}]",
            tensor
                .shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValueMeta::Tuple(seq) | ValueMeta::List(seq) => {
            let open_close = if matches!(meta, ValueMeta::Tuple(_)) {
                ("(", ")")
            } else {
                ("[", "]")
            };
            format!(
                "{}{}{}",
                open_close.0,
                seq.items
                    .iter()
                    .map(shape_text)
                    .collect::<Vec<_>>()
                    .join(", "),
                open_close.1
            )
        }
        ValueMeta::Dict(mapping) => format!(
            "{{{}}}",
            mapping
                .entries
                .iter()
                .map(|e| format!("{}: {}", e.name, shape_text(&e.value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValueMeta::Dataclass(record) | ValueMeta::NamedTuple(record) => format!(
            "{}({})",
            record.type_name,
            record
                .fields
                .iter()
                .map(|f| format!("{}={}", f.name, shape_text(&f.value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValueMeta::None(_) => "None".to_owned(),
        ValueMeta::Scalar(t) | ValueMeta::Other(t) => t.type_name.clone(),
    }
}

/// A metric as a table cell: the number, `>=` a lower bound, or `-` when unavailable.
fn metric_cell(metric: &MetricResult) -> String {
    match (metric.status, metric.known_value) {
        (MetricStatus::Complete, Some(v)) => group_thousands(v, 0),
        (MetricStatus::Partial, Some(v)) => format!(">={}", group_thousands(v, 0)),
        _ => "-".to_owned(),
    }
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(width.saturating_sub(3)).collect();
        format!("{kept}...")
    }
}

fn summarize_analysis(out: &mut String, report: &AnalysisReport) {
    let context = &report.context;
    let mode = match report.mode {
        crate::schema::analysis::AnalysisMode::Full => "full",
        crate::schema::analysis::AnalysisMode::Structure => "structure",
    };
    push_line(
        out,
        0,
        &format!(
            "Analysis of {} ({mode} mode, {}, {} PyTorch threads)",
            context.model_type.as_deref().unwrap_or("a model"),
            context.device.as_deref().unwrap_or("unknown device"),
            threads_text(context.torch_threads)
        ),
    );
    let headers = [
        "Layer (type)",
        "Output shape",
        "Params",
        "Trainable",
        "FLOPs",
        "MACs",
    ];
    let rows: Vec<[String; 6]> = report
        .layers
        .iter()
        .filter(|layer| !layer.path.is_empty())
        .map(|layer| {
            let name = layer.path.rsplit('.').next().unwrap_or(&layer.path);
            let call = if layer.call_index > 0 {
                format!(" #{}", layer.call_index + 1)
            } else {
                String::new()
            };
            let indent = "  ".repeat(layer.depth.saturating_sub(1) as usize);
            [
                truncate(&format!("{indent}{name}{call} ({})", layer.type_name), 48),
                truncate(&shape_text(&layer.output), 28),
                group_thousands(layer.parameters as f64, 0),
                group_thousands(layer.trainable_parameters as f64, 0),
                metric_cell(&layer.flops),
                metric_cell(&layer.macs),
            ]
        })
        .collect();
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let format_row = |cells: [&str; 6]| {
        let mut line = String::new();
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if index > 0 {
                line.push_str("  ");
            }
            let pad = width.saturating_sub(cell.chars().count());
            if index < 2 {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            }
        }
        line.trim_end().to_owned()
    };
    let header_line = format_row(headers);
    let rule = "-".repeat(header_line.chars().count());
    push_line(out, 0, &rule);
    push_line(out, 0, &header_line);
    push_line(out, 0, &rule);
    for row in &rows {
        push_line(
            out,
            0,
            &format_row([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]),
        );
    }
    push_line(out, 0, &rule);
    let totals = &report.totals;
    push_line(
        out,
        2,
        &format!(
            "Parameters: {} (trainable {}, frozen {})",
            group_thousands(totals.parameters as f64, 0),
            group_thousands(totals.trainable_parameters as f64, 0),
            group_thousands(totals.frozen_parameters as f64, 0)
        ),
    );
    if totals.shared_tensors > 0 {
        push_line(
            out,
            4,
            &format!("Shared tensors counted once: {}", totals.shared_tensors),
        );
    }
    push_line(
        out,
        2,
        &format!("Buffers: {}", group_thousands(totals.buffers as f64, 0)),
    );
    push_line(
        out,
        2,
        &format!(
            "Parameter storage: {} (storage, not peak memory)",
            format_metric(&totals.parameter_bytes)
        ),
    );
    push_line(
        out,
        2,
        &format!(
            "Buffer storage: {} (storage, not peak memory)",
            format_metric(&totals.buffer_bytes)
        ),
    );
    for (label, metric) in [
        ("Module FLOPs (estimate)", &totals.module_flops),
        ("Module MACs (estimate)", &totals.module_macs),
        ("Module DMAs (estimate)", &totals.module_dmas),
    ] {
        push_line(out, 2, &format!("{label}: {}", format_metric(metric)));
    }
    push_line(
        out,
        2,
        &format!(
            "Operator FLOPs (separate view, never add to module FLOPs): {}",
            format_metric(&report.operator_flops.total)
        ),
    );
    push_diagnostics(out, &report.diagnostics);
}

fn summarize_operator_flops(out: &mut String, flops: &OperatorFlops) {
    push_line(
        out,
        2,
        &format!("Operator FLOPs: {}", format_metric(&flops.total)),
    );
    let mut counted: Vec<_> = flops.counted.iter().collect();
    counted.sort_by(|a, b| {
        b.flops
            .total_cmp(&a.flops)
            .then_with(|| a.operator.cmp(&b.operator))
    });
    for op in counted {
        push_line(
            out,
            4,
            &format!(
                "{}: {} FLOPs over {} calls",
                op.operator,
                group_thousands(op.flops, 0),
                group_thousands(op.calls as f64, 0)
            ),
        );
    }
    for op in &flops.uncounted {
        push_line(
            out,
            4,
            &format!(
                "{}: uncounted, {} calls",
                op.operator,
                group_thousands(op.calls as f64, 0)
            ),
        );
    }
    if !flops.excluded.is_empty() {
        let excluded_calls: u64 = flops.excluded.iter().map(|op| op.calls).sum();
        push_line(
            out,
            4,
            &format!(
                "Excluded by convention: {} operators, {} calls",
                flops.excluded.len(),
                group_thousands(excluded_calls as f64, 0)
            ),
        );
    }
}

fn summarize_flops(out: &mut String, report: &FlopReport) {
    push_line(
        out,
        0,
        &format!(
            "Operator FLOPs of {} on {}",
            report.callable.as_deref().unwrap_or("a callable"),
            report.context.device.as_deref().unwrap_or("unknown device")
        ),
    );
    summarize_operator_flops(out, &report.operator_flops);
    push_diagnostics(out, &report.diagnostics);
}

fn summarize_peak_memory(out: &mut String, report: &PeakMemoryReport) {
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

fn summarize_output_check(out: &mut String, report: &OutputCheckReport) {
    push_line(
        out,
        0,
        &format!(
            "Output check: {} (rtol {}, atol {}, {})",
            if report.passed { "passed" } else { "failed" },
            report.rtol,
            report.atol,
            report.method
        ),
    );
    if !report.structure_matches {
        push_line(out, 2, "Structure differs:");
        for difference in &report.structure_differences {
            push_line(
                out,
                4,
                &format!(
                    "{}: baseline {}, candidate {}",
                    if difference.path.is_empty() {
                        "(output)"
                    } else {
                        &difference.path
                    },
                    difference.baseline,
                    difference.candidate
                ),
            );
        }
    }
    let failed = report.leaves.iter().filter(|leaf| !leaf.passed).count();
    push_line(
        out,
        2,
        &format!("Leaves: {} compared, {failed} failed", report.leaves.len()),
    );
    for leaf in report.leaves.iter().filter(|leaf| !leaf.passed) {
        let errors = match leaf.max_abs_error {
            Some(abs) => format!(", max abs error {abs:e}"),
            None => String::new(),
        };
        push_line(
            out,
            4,
            &format!(
                "{}: {} of {} elements mismatched{errors}",
                if leaf.path.is_empty() {
                    "(output)"
                } else {
                    &leaf.path
                },
                group_thousands(leaf.mismatched_elements as f64, 0),
                group_thousands(leaf.elements as f64, 0)
            ),
        );
    }
    push_diagnostics(out, &report.diagnostics);
}

fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoDetectableChange => "no detectable change",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Withheld => "withheld",
    }
}

fn summarize_comparison(out: &mut String, report: &BenchmarkComparisonReport) {
    push_line(
        out,
        0,
        &format!("Comparison: {}", verdict_text(report.verdict)),
    );
    let check = match report.check.status {
        CheckStatus::Passed => "passed (it does not establish task accuracy)",
        CheckStatus::Failed => "failed: every delta is withheld",
        CheckStatus::Unchecked => "none given (unchecked)",
    };
    push_line(out, 2, &format!("Output check: {check}"));
    for delta in &report.deltas {
        let line = match (delta.status, delta.baseline, delta.candidate) {
            (DeltaStatus::Complete, Some(baseline), Some(candidate)) => {
                let mut line = format!(
                    "{}: {} -> {}",
                    delta.metric,
                    display_number(baseline, &delta.unit),
                    display_number(candidate, &delta.unit)
                );
                if let Some(ratio) = delta.ratio {
                    let _ = write!(line, ", ratio {}", group_thousands(ratio, 3));
                }
                if let (Some(low), Some(high)) = (delta.ratio_ci_low, delta.ratio_ci_high) {
                    let _ = write!(
                        line,
                        " [{}, {}] at {}% confidence",
                        group_thousands(low, 3),
                        group_thousands(high, 3),
                        report.settings.confidence_level * 100.0
                    );
                }
                if let Some(verdict) = delta.verdict {
                    let _ = write!(line, ": {}", verdict_text(verdict));
                }
                line
            }
            (status, _, _) => format!(
                "{}: {}{}",
                delta.metric,
                match status {
                    DeltaStatus::Withheld => "withheld",
                    DeltaStatus::Partial => "partial, no delta",
                    _ => "unavailable",
                },
                reason_suffix(delta.reason.as_deref())
            ),
        };
        push_line(out, 2, &line);
    }
    push_diagnostics(out, &report.diagnostics);
}

fn summarize_diff(out: &mut String, report: &ReportDiffReport) {
    push_line(
        out,
        0,
        &format!(
            "Report diff: {} -> {}",
            report.before.model_type.as_deref().unwrap_or("before"),
            report.after.model_type.as_deref().unwrap_or("after")
        ),
    );
    for total in &report.totals {
        let line = match (total.status, total.before, total.after, total.delta) {
            (MetricStatus::Complete, Some(before), Some(after), Some(delta)) => format!(
                "{}: {} -> {} ({}{})",
                total.metric,
                display_number(before, &total.unit),
                display_number(after, &total.unit),
                if delta >= 0.0 { "+" } else { "" },
                display_number(delta, &total.unit)
            ),
            (status, _, _, _) => format!(
                "{}: no delta, {}{}",
                total.metric,
                status.as_str(),
                reason_suffix(total.reason.as_deref())
            ),
        };
        push_line(out, 2, &line);
    }
    for (label, layers) in [
        ("added", &report.layers_added),
        ("removed", &report.layers_removed),
    ] {
        push_line(out, 2, &format!("Layers {label}: {}", layers.len()));
        for layer in layers {
            push_line(
                out,
                4,
                &format!(
                    "{} #{} ({})",
                    display_path(&layer.path),
                    layer.call_index,
                    layer.type_name
                ),
            );
        }
    }
    push_line(
        out,
        2,
        &format!("Layers changed: {}", report.layers_changed.len()),
    );
    for layer in &report.layers_changed {
        let fields: Vec<_> = layer.changes.iter().map(|c| c.field.as_str()).collect();
        push_line(
            out,
            4,
            &format!(
                "{} #{} ({}): {}",
                display_path(&layer.path),
                layer.call_index,
                layer.type_name,
                fields.join(", ")
            ),
        );
    }
    push_diagnostics(out, &report.diagnostics);
}

/// The text summary of a report: deterministic, one trailing newline.
pub fn format_summary(report: &Report) -> String {
    let mut out = String::new();
    match report {
        Report::Analysis(r) => summarize_analysis(&mut out, r),
        Report::Flops(r) => summarize_flops(&mut out, r),
        Report::Benchmark(r) => summarize_benchmark(&mut out, r),
        Report::PeakMemory(r) => summarize_peak_memory(&mut out, r),
        Report::OutputCheck(r) => summarize_output_check(&mut out, r),
        Report::BenchmarkComparison(r) => summarize_comparison(&mut out, r),
        Report::ReportDiff(r) => summarize_diff(&mut out, r),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_decimals() {
        assert_eq!(group_thousands(4_191_866.3, 3), "4,191,866.300");
        assert_eq!(group_thousands(1_048_576.0, 3), "1,048,576.000");
        assert_eq!(group_thousands(0.094, 3), "0.094");
        assert_eq!(group_thousands(999.0, 0), "999");
        assert_eq!(group_thousands(-1234.5, 1), "-1,234.5");
        assert_eq!(group_thousands(-0.0001, 3), "0.000");
    }

    #[test]
    fn metric_text_by_status() {
        let complete = MetricResult::complete(98_816.0, "B", "PyTorch tracked CPU tensors", "m");
        assert_eq!(format_metric(&complete), "0.094 MiB");
        let unavailable = MetricResult::unavailable("B", "s", "m", "not requested");
        assert_eq!(format_metric(&unavailable), "unavailable (not requested)");
        let partial = MetricResult {
            status: MetricStatus::Partial,
            value: None,
            known_value: Some(1000.0),
            unit: "FLOPs".into(),
            scope: "s".into(),
            method: "m".into(),
            reason: Some("1 uncounted operator".into()),
        };
        assert_eq!(
            format_metric(&partial),
            "partial, at least 1,000.000 FLOPs (1 uncounted operator)"
        );
    }
}
