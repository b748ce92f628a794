//! Text of output checks, benchmark comparisons and report diffs.

use super::{push_diagnostics, push_line};

use std::fmt::Write as _;

use crate::format::{
    display_number, display_output_path, display_path, float_count_text, group_thousands,
    reason_suffix, verdict_words,
};
use crate::schema::common::MetricStatus;
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus};
use crate::schema::diff::{ReportDiffReport, ordered_totals};
use crate::schema::flops::class_name;
use crate::schema::output_check::OutputCheckReport;

pub(super) fn summarize_output_check(out: &mut String, report: &OutputCheckReport) {
    push_line(
        out,
        0,
        &format!(
            "Output check: {} (rtol {}, atol {}{}, {})",
            if report.passed { "passed" } else { "failed" },
            report.rtol,
            report.atol,
            if report.check_dtype == Some(false) {
                ", dtypes not checked"
            } else {
                ""
            },
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
                    display_output_path(&difference.path),
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
                display_output_path(&leaf.path),
                float_count_text(leaf.mismatched_elements),
                float_count_text(leaf.elements)
            ),
        );
    }
    push_diagnostics(out, &report.diagnostics);
}

pub(super) fn summarize_comparison(out: &mut String, report: &BenchmarkComparisonReport) {
    push_line(
        out,
        0,
        &format!("Comparison: {}", verdict_words(report.verdict)),
    );
    let check = match report.check.status {
        CheckStatus::Passed => "passed (it does not establish task accuracy)",
        CheckStatus::Failed => "failed: every delta is withheld",
        CheckStatus::Unchecked => "none given (unchecked)",
    };
    push_line(out, 2, &format!("Output check: {check}"));
    let differing: Vec<String> =
        super::context_rows(&report.baseline.context, &report.candidate.context)
            .into_iter()
            .filter(|row| row.differs)
            .map(|row| format!("{} {} -> {}", row.label, row.left, row.right))
            .collect();
    if !differing.is_empty() {
        push_line(
            out,
            2,
            &format!("Contexts differ: {}", differing.join("; ")),
        );
    }
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
                    let _ = write!(line, ": {}", verdict_words(verdict));
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
        if delta.status == DeltaStatus::Complete
            && let Some(reason) = &delta.reason
        {
            push_line(out, 4, &format!("why: {reason}"));
        }
    }
    push_diagnostics(out, &report.diagnostics);
}

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
                "{}: {} -> {} ({}{})",
                name,
                display_number(before, &total.unit),
                display_number(after, &total.unit),
                if delta >= 0.0 { "+" } else { "" },
                display_number(delta, &total.unit)
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
