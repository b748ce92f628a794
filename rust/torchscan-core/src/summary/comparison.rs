//! Text of benchmark comparisons: the verdict, the output check, differing contexts and every
//! metric's delta.

use super::{push_diagnostics, push_line};

use std::fmt::Write as _;

use crate::format::{group_thousands, readable_pair, reason_suffix, verdict_words};
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus};

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
                    "{}: {}",
                    delta.metric,
                    readable_pair(baseline, candidate, &delta.unit)
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
