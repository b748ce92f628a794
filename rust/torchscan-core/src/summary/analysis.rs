//! Text of analysis and FLOP reports: the layer table and the operator breakdown.

use super::{SummaryOptions, push_diagnostics, push_line};

use crate::format::{
    float_count_text, format_metric, group_thousands, mode_word, shape_text, table_metric_cell,
    threads_text,
};
use crate::schema::analysis::AnalysisReport;
use crate::schema::common::MetricStatus;
use crate::schema::flops::{FlopReport, OperatorFlops, class_name};

/// A receptive-field quantity as a table cell: one number when every spatial dimension has the
/// same, else one per dimension (`7x3`); `>=` before lower bounds; `-` when unavailable.
fn field_cell(status: MetricStatus, values: Option<&[f64]>) -> String {
    let Some(values) = values.filter(|values| !values.is_empty()) else {
        return "-".to_owned();
    };
    let text = if values.iter().all(|value| *value == values[0]) {
        group_thousands(values[0], 0)
    } else {
        values
            .iter()
            .map(|value| group_thousands(*value, 0))
            .collect::<Vec<_>>()
            .join("x")
    };
    match status {
        MetricStatus::Complete => text,
        MetricStatus::Partial => format!(">={text}"),
        MetricStatus::Unavailable => "-".to_owned(),
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

pub(super) fn summarize_analysis(
    out: &mut String,
    report: &AnalysisReport,
    options: &SummaryOptions,
) {
    let context = &report.context;
    let mode = mode_word(report.mode);
    push_line(
        out,
        0,
        &format!(
            "Analysis of {} ({mode} mode, {}, {} PyTorch threads)",
            context.model_type.as_deref().map_or("a model", class_name),
            context.device.as_deref().unwrap_or("unknown device"),
            threads_text(context.torch_threads)
        ),
    );
    let mut headers = vec![
        "Layer (type)",
        "Output shape",
        "Params",
        "Trainable",
        "FLOPs",
        "MACs",
    ];
    if options.receptive_field {
        headers.push("Receptive field");
    }
    if options.effective_rf_stats {
        headers.extend(["Eff. stride", "Eff. padding"]);
    }
    // The root's row is the whole model, which the totals already give; a model that is a single
    // module (no children) is shown as its own row, so the table is never empty.
    let root_only = report.layers.iter().all(|layer| layer.path.is_empty());
    let rows: Vec<Vec<String>> = report
        .layers
        .iter()
        .filter(|layer| root_only || !layer.path.is_empty())
        .filter(|layer| {
            options
                .max_depth
                .is_none_or(|max_depth| layer.depth <= max_depth)
        })
        .map(|layer| {
            let name = &layer.name;
            let call = if layer.call_index > 0 {
                format!(" #{}", layer.call_index + 1)
            } else {
                String::new()
            };
            let indent = "  ".repeat(layer.depth.saturating_sub(1) as usize);
            let mut row = vec![
                truncate(&format!("{indent}{name}{call} ({})", layer.type_name), 48),
                truncate(&shape_text(&layer.output), 28),
                float_count_text(layer.parameters.trainable + layer.parameters.frozen),
                float_count_text(layer.parameters.trainable),
                table_metric_cell(&layer.metrics.module_flops),
                table_metric_cell(&layer.metrics.macs),
            ];
            let field = &layer.receptive_field;
            if options.receptive_field {
                row.push(field_cell(field.status, field.size.as_deref()));
            }
            if options.effective_rf_stats {
                row.push(field_cell(field.status, field.stride.as_deref()));
                row.push(field_cell(field.status, field.padding.as_deref()));
            }
            row
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|header| header.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let format_row = |cells: &[&str]| {
        let mut line = String::new();
        for (index, (cell, width)) in cells.iter().zip(&widths).enumerate() {
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
    let header_line = format_row(&headers);
    let rule = "-".repeat(header_line.chars().count());
    push_line(out, 0, &rule);
    push_line(out, 0, &header_line);
    push_line(out, 0, &rule);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        push_line(out, 0, &format_row(&cells));
    }
    push_line(out, 0, &rule);
    let totals = &report.totals;
    push_line(
        out,
        2,
        &format!(
            "Parameters: {} (trainable {}, frozen {})",
            format_metric(&totals.parameters),
            format_metric(&totals.trainable_parameters),
            format_metric(&totals.frozen_parameters)
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
        &format!("Buffers: {}", format_metric(&totals.buffer_elements)),
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
        ("Module MACs (estimate)", &totals.macs),
        ("Module DMAs (estimate)", &totals.dmas),
    ] {
        push_line(out, 2, &format!("{label}: {}", format_metric(metric)));
    }
    push_line(
        out,
        2,
        &format!(
            "Operator FLOPs (separate view, never add to module FLOPs): {}",
            format_metric(&totals.operator_flops)
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
                float_count_text(op.calls)
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
                float_count_text(op.calls)
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
                float_count_text(excluded_calls)
            ),
        );
    }
}

pub(super) fn summarize_flops(out: &mut String, report: &FlopReport) {
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
