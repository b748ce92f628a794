//! Text of analysis and FLOP reports: the layer table and the operator breakdown.

use std::collections::{BTreeMap, HashSet};

use super::columns::{Column, DEFAULT_COLUMNS};
use super::{SummaryOptions, push_diagnostics, push_line};

use crate::format::{
    exact_number, float_count_text, group_thousands, mode_word, readable_metric,
    readable_metric_text, shape_text, table_metric_cell, threads_text,
};
use crate::schema::analysis::{AnalysisReport, Layer, LayerParameters};
use crate::schema::common::{MetricResult, MetricStatus};
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

/// The line under the layer table that says what parentheses in Params and Trainable mean.
const PARAMETER_TOTAL_LEGEND: &str =
    "(n) = all parameters under the module, submodules included (each storage element once)";

/// The Params and Trainable cells of a layer: the total under a module with children in
/// parentheses, else its own count. With parentheses in the table (`marked`), a space after a
/// plain count keeps its digits under theirs.
fn parameter_cells(parameters: &LayerParameters, marked: bool) -> [String; 2] {
    if let Some(total) = &parameters.total {
        return [
            format!(
                "({})",
                float_count_text(total.trainable.saturating_add(total.frozen))
            ),
            format!("({})", float_count_text(total.trainable)),
        ];
    }
    let space = if marked { " " } else { "" };
    [
        format!(
            "{}{space}",
            float_count_text(parameters.trainable.saturating_add(parameters.frozen))
        ),
        format!("{}{space}", float_count_text(parameters.trainable)),
    ]
}

/// The line under the layer table that says what the operator FLOPs column holds.
const OPERATOR_FLOPS_LEGEND: &str = "Op FLOPs: operators run inside the module over all its calls, children included, shown at its first call";

/// The shapes of a call's arguments: `[1, 3, 32, 32]`, `[2, 4], mask=[2, 4]`; `-` for none.
fn input_shapes(layer: &Layer) -> String {
    let shapes: Vec<String> = layer
        .input
        .args
        .iter()
        .map(shape_text)
        .chain(
            layer
                .input
                .kwargs
                .iter()
                .map(|(name, meta)| format!("{name}={}", shape_text(meta))),
        )
        .collect();
    if shapes.is_empty() {
        "-".to_owned()
    } else {
        shapes.join(", ")
    }
}

/// A layer's parameters as a share of the model's, in percent with one decimal (`12.5%`; `<0.1%`
/// and `>99.9%` where rounding would show 0 or all); in parentheses where the total under a
/// module is shown; `-` when the model has none.
fn share_cell(parameters: &LayerParameters, model: Option<f64>, marked: bool) -> String {
    let Some(model) = model.filter(|model| *model > 0.0) else {
        return "-".to_owned();
    };
    let (count, in_parentheses) = match &parameters.total {
        Some(total) => (total.trainable.saturating_add(total.frozen), true),
        None => (
            parameters.trainable.saturating_add(parameters.frozen),
            false,
        ),
    };
    let share = count as f64 / model * 100.0;
    // A nonzero share never prints as 0.0%.
    let text = if share > 0.0 && share < 0.05 {
        "<0.1%".to_owned()
    } else if (99.95..100.0).contains(&share) {
        ">99.9%".to_owned()
    } else {
        format!("{share:.1}%")
    };
    if in_parentheses {
        format!("({text})")
    } else if marked {
        format!("{text} ")
    } else {
        text
    }
}

/// A kernel size: `3x3`, one number when the module holds one (`2`); `-` for none.
fn kernel_cell(kernel: Option<&[u64]>) -> String {
    match kernel {
        Some(sizes) if !sizes.is_empty() => sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("x"),
        _ => "-".to_owned(),
    }
}

/// `Parameters: 11.69 M (11,689,512; trainable 11,689,512, frozen 0)`: the total as people read
/// it, the exact counts beside; `Parameters: 448 (trainable 448, frozen 0)` when the total reads
/// exactly.
fn parameters_line(
    total: &MetricResult,
    trainable: &MetricResult,
    frozen: &MetricResult,
) -> String {
    let exact = |metric: &MetricResult| match (metric.status, metric.value) {
        (MetricStatus::Complete, Some(value)) => exact_number(value, &metric.unit),
        _ => readable_metric(metric).0,
    };
    let (readable, _) = readable_metric(total);
    let split = format!("trainable {}, frozen {}", exact(trainable), exact(frozen));
    if readable == exact(total) {
        format!("Parameters: {readable} ({split})")
    } else {
        format!("Parameters: {readable} ({}; {split})", exact(total))
    }
}

/// How the table names a layer, and how deep it indents it.
struct RowName<'a> {
    name: &'a str,
    depth: u64,
}

/// A layer's name in the table: its own name under the nearest module with a row of its own,
/// so a module whose parent never ran (it has no layer) is named by its path from the nearest
/// ancestor that did (`part.0`, `layers.0`) and indented under that one, never under a row it
/// does not belong to.
fn row_name<'a>(path: &'a str, name: &'a str, recorded: &HashSet<&str>) -> RowName<'a> {
    if path.is_empty() {
        return RowName { name, depth: 0 };
    }
    let mut cut = path.rfind('.');
    while let Some(index) = cut {
        if recorded.contains(&path[..index]) {
            break;
        }
        cut = path[..index].rfind('.');
    }
    match cut {
        Some(index) => RowName {
            name: &path[index + 1..],
            depth: path[..index].split('.').count() as u64 + 1,
        },
        None => RowName {
            name: path,
            depth: 1,
        },
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
    // The columns after the layer name: chosen, or the default; the receptive-field options add
    // theirs when the choice leaves them out.
    let mut columns: Vec<Column> = options
        .columns
        .clone()
        .unwrap_or_else(|| DEFAULT_COLUMNS.to_vec());
    let mut wanted = Vec::new();
    if options.receptive_field {
        wanted.push(Column::ReceptiveField);
    }
    if options.effective_rf_stats {
        wanted.extend([Column::EffectiveStride, Column::EffectivePadding]);
    }
    for column in wanted {
        if !columns.contains(&column) {
            columns.push(column);
        }
    }
    let mut headers = vec!["Layer (type)"];
    headers.extend(columns.iter().map(|column| column.header()));
    // The root's row is the whole model, which the totals already give; a model that is a single
    // module (no children) is shown as its own row, so the table is never empty.
    let root_only = report.layers.iter().all(|layer| layer.path.is_empty());
    let recorded: HashSet<&str> = report
        .layers
        .iter()
        .map(|layer| layer.path.as_str())
        .collect();
    let shown: Vec<(&Layer, RowName<'_>)> = report
        .layers
        .iter()
        .filter(|layer| root_only || !layer.path.is_empty())
        .map(|layer| (layer, row_name(&layer.path, &layer.name, &recorded)))
        .filter(|(_, name)| {
            options
                .max_depth
                .is_none_or(|max_depth| name.depth <= max_depth)
        })
        .collect();
    // A module with children shows the total under it, in parentheses (reports written before
    // totals were recorded show its own count).
    let marked = columns.iter().any(|c| {
        matches!(
            c,
            Column::Parameters | Column::Trainable | Column::ParameterShare
        )
    }) && shown
        .iter()
        .any(|(layer, _)| layer.parameters.total.is_some());
    let operator_flops: BTreeMap<&str, &MetricResult> = report
        .operator_flops
        .modules
        .iter()
        .map(|module| (module.path.as_str(), &module.flops))
        .collect();
    let model_parameters = report.totals.parameters.value;
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(layer, row)| {
            let name = row.name;
            let call = if layer.call_index > 0 {
                format!(" #{}", layer.call_index + 1)
            } else {
                String::new()
            };
            let indent = "  ".repeat(row.depth.saturating_sub(1) as usize);
            let [params, trainable] = parameter_cells(&layer.parameters, marked);
            let field = &layer.receptive_field;
            let mut row = vec![truncate(
                &format!("{indent}{name}{call} ({})", layer.type_name),
                48,
            )];
            for column in &columns {
                row.push(match column {
                    Column::InputSize => truncate(&input_shapes(layer), 28),
                    Column::OutputSize => truncate(&shape_text(&layer.output), 28),
                    Column::Parameters => params.clone(),
                    Column::Trainable => trainable.clone(),
                    Column::ParameterShare => {
                        share_cell(&layer.parameters, model_parameters, marked)
                    }
                    Column::KernelSize => kernel_cell(layer.kernel_size.as_deref()),
                    Column::ModuleFlops => table_metric_cell(&layer.metrics.module_flops),
                    Column::Macs => table_metric_cell(&layer.metrics.macs),
                    Column::OperatorFlops => match operator_flops.get(layer.path.as_str()) {
                        Some(flops) if layer.call_index == 0 => table_metric_cell(flops),
                        _ => "-".to_owned(),
                    },
                    Column::ReceptiveField => field_cell(field.status, field.size.as_deref()),
                    Column::EffectiveStride => field_cell(field.status, field.stride.as_deref()),
                    Column::EffectivePadding => field_cell(field.status, field.padding.as_deref()),
                });
            }
            row
        })
        .collect();
    let text_columns: Vec<bool> = std::iter::once(true)
        .chain(columns.iter().map(|column| column.is_text()))
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
            if text_columns[index] {
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
    if marked {
        push_line(out, 0, PARAMETER_TOTAL_LEGEND);
    }
    if columns.contains(&Column::OperatorFlops) {
        push_line(out, 0, OPERATOR_FLOPS_LEGEND);
    }
    let totals = &report.totals;
    push_line(
        out,
        2,
        &parameters_line(
            &totals.parameters,
            &totals.trainable_parameters,
            &totals.frozen_parameters,
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
        &format!("Buffers: {}", readable_metric_text(&totals.buffer_elements)),
    );
    push_line(
        out,
        2,
        &format!(
            "Parameter storage: {} (storage, not peak memory)",
            readable_metric_text(&totals.parameter_bytes)
        ),
    );
    push_line(
        out,
        2,
        &format!(
            "Buffer storage: {} (storage, not peak memory)",
            readable_metric_text(&totals.buffer_bytes)
        ),
    );
    if let Some(input_bytes) = &totals.input_bytes {
        push_line(
            out,
            2,
            &format!("Input size: {}", readable_metric_text(input_bytes)),
        );
    }
    if let Some(peak) = &totals.tensor_memory_peak {
        push_line(
            out,
            2,
            &format!(
                "Tensor memory peak: {} (measured, a second forward)",
                readable_metric_text(peak)
            ),
        );
    }
    for (label, metric) in [
        ("Module FLOPs (estimate)", &totals.module_flops),
        ("Module MACs (estimate)", &totals.macs),
        ("Module DMAs (estimate)", &totals.dmas),
    ] {
        push_line(
            out,
            2,
            &format!("{label}: {}", readable_metric_text(metric)),
        );
    }
    push_line(
        out,
        2,
        &format!(
            "Operator FLOPs (separate view, never add to module FLOPs): {}",
            readable_metric_text(&totals.operator_flops)
        ),
    );
    push_diagnostics(out, &report.diagnostics);
}

fn summarize_operator_flops(out: &mut String, flops: &OperatorFlops) {
    push_line(
        out,
        2,
        &format!("Operator FLOPs: {}", readable_metric_text(&flops.total)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_named_under_the_nearest_module_with_a_row() {
        let recorded: HashSet<&str> = ["", "enc", "enc.0", "dec", "dec.0", "part.0", "a.b.c.d"]
            .into_iter()
            .collect();
        let named = |path| {
            let row = row_name(path, path.rsplit('.').next().unwrap_or(path), &recorded);
            (row.name, row.depth)
        };
        assert_eq!(named("enc"), ("enc", 1));
        assert_eq!(named("enc.0"), ("0", 2));
        // `part` never ran: its child is named by its path, at the top level.
        assert_eq!(named("part.0"), ("part.0", 1));
        assert_eq!(named("a.b.c.d"), ("a.b.c.d", 1));
        assert_eq!(named("enc.x.y"), ("x.y", 2));
        assert_eq!(named(""), ("", 0));
    }
}
