//! Text of output checks: the verdict, structure differences and the failed leaves.

use super::{push_diagnostics, push_line};

use crate::format::{display_output_path, float_count_text};
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
