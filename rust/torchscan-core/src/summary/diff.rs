//! Text of report diffs: the totals' deltas and the layers added, removed and changed.

use super::{push_diagnostics, push_line};

use crate::format::{display_path, readable_change, reason_suffix};
use crate::schema::common::MetricStatus;
use crate::schema::diff::{ReportDiffReport, ordered_totals};
use crate::schema::flops::class_name;

pub(super) fn summarize_diff(out: &mut String, report: &ReportDiffReport) {
    push_line(
        out,
        0,
        &format!(
            "Report diff: {} -> {}",
            report
                .before
                .model_type
                .as_deref()
                .map_or("before", class_name),
            report
                .after
                .model_type
                .as_deref()
                .map_or("after", class_name)
        ),
    );
    for (name, total) in ordered_totals(&report.totals) {
        let line = match (
            total.status,
            total.before.value,
            total.after.value,
            total.delta,
        ) {
            (MetricStatus::Complete, Some(before), Some(after), Some(delta)) => format!(
                "{name}: {}",
                readable_change(before, after, delta, &total.unit)
            ),
            (status, _, _, _) => format!(
                "{}: no delta, {}{}",
                name,
                status.as_str(),
                reason_suffix(total.reason.as_deref())
            ),
        };
        push_line(out, 2, &line);
    }
    for (label, layers) in [
        ("added", &report.layers.added),
        ("removed", &report.layers.removed),
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
        &format!("Layers changed: {}", report.layers.changed.len()),
    );
    for layer in &report.layers.changed {
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
