//! Invariants of comparisons: output checks, benchmark comparisons and report diffs.

use super::{Checker, has_diagnostic};
use super::{approx_equal, check_context, check_metric};
use crate::schema::common::{DiagnosticCode, MetricStatus, is_known_unit, is_valid_work_unit};
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus, Verdict};
use crate::schema::diff::{LayerMetricDelta, LayerRef, ReportDiffReport};
use crate::schema::output_check::OutputCheckReport;
use std::collections::BTreeSet;

pub(super) fn check_output_check(c: &mut Checker, report: &OutputCheckReport) {
    c.non_empty("method", &report.method);
    c.non_negative("rtol", report.rtol);
    c.non_negative("atol", report.atol);
    if report.structure_matches != report.structure_differences.is_empty() {
        c.problem_at(
            "structure_matches",
            "must be true exactly when structure_differences is empty",
        );
    }
    let mut all_leaves_pass = true;
    c.at("leaves", |c| {
        for (index, leaf) in report.leaves.iter().enumerate() {
            c.at_index(index, |c| {
                all_leaves_pass &= leaf.passed;
                if leaf.mismatched_elements > leaf.elements {
                    c.problem_at(
                        "mismatched_elements",
                        format!("cannot exceed elements ({})", leaf.elements),
                    );
                }
                c.optional_non_negative("max_abs_error", leaf.max_abs_error);
                c.optional_non_negative("max_rel_error", leaf.max_rel_error);
                let dtype_matches = leaf.baseline.dtype == leaf.candidate.dtype
                    || report.check_dtype == Some(false);
                let metadata_matches = leaf.baseline.shape == leaf.candidate.shape && dtype_matches;
                if leaf.passed && (leaf.mismatched_elements > 0 || !metadata_matches) {
                    c.problem_at(
                        "passed",
                        "a passing leaf has matching shape, matching dtype (unless check_dtype \
                         is false) and no mismatched elements",
                    );
                }
                for (key, meta) in [("baseline", &leaf.baseline), ("candidate", &leaf.candidate)] {
                    c.at(key, |c| {
                        c.non_empty("dtype", &meta.dtype);
                        c.non_empty("device", &meta.device);
                    });
                }
            });
        }
    });
    let expected = report.structure_matches && all_leaves_pass;
    if report.passed != expected {
        c.problem_at(
            "passed",
            format!(
                "must be {expected}: true exactly when the structures match and every leaf passed"
            ),
        );
    }
}

pub(super) fn check_comparison(c: &mut Checker, report: &BenchmarkComparisonReport) {
    let check = &report.check;
    c.at("check", |c| match check.status {
        CheckStatus::Unchecked => {
            if check.method.is_some()
                || check.rtol.is_some()
                || check.atol.is_some()
                || check.failed_leaves != 0
            {
                c.problem(
                    "an unchecked comparison has null method, rtol and atol and 0 failed_leaves",
                );
            }
        }
        CheckStatus::Passed | CheckStatus::Failed => {
            if check.method.is_none() || check.rtol.is_none() || check.atol.is_none() {
                c.problem("a checked comparison states method, rtol and atol");
            }
            c.optional_non_negative("rtol", check.rtol);
            c.optional_non_negative("atol", check.atol);
            if check.status == CheckStatus::Passed && check.failed_leaves != 0 {
                c.problem_at("failed_leaves", "a passed check has 0 failed leaves");
            }
        }
    });
    if check.status == CheckStatus::Unchecked
        && !has_diagnostic(&report.diagnostics, DiagnosticCode::Unchecked)
    {
        c.problem_at(
            "diagnostics",
            "an unchecked comparison carries an `unchecked` diagnostic",
        );
    }
    for (key, side) in [
        ("baseline", &report.baseline),
        ("candidate", &report.candidate),
    ] {
        c.at(key, |c| {
            c.at("context", |c| check_context(c, &side.context))
        });
    }
    if !is_valid_work_unit(&report.work_unit) {
        c.problem_at(
            "work_unit",
            format!("`{}` is not a valid work unit", report.work_unit),
        );
    }
    let settings = &report.settings;
    c.at("settings", |c| {
        if !(settings.confidence_level > 0.0 && settings.confidence_level < 1.0) {
            c.problem_at(
                "confidence_level",
                format!("must be in (0, 1), found {}", settings.confidence_level),
            );
        }
        c.at_least_one("bootstrap_resamples", settings.bootstrap_resamples);
        c.non_negative("min_effect", settings.min_effect);
    });
    let failed = check.status == CheckStatus::Failed;
    if failed != (report.verdict == Verdict::Withheld) {
        c.problem_at(
            "verdict",
            "is `withheld` exactly when the output check failed",
        );
    }
    c.at("deltas", |c| {
        let mut metrics = BTreeSet::new();
        for (index, delta) in report.deltas.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("metric", &delta.metric);
                if !metrics.insert(delta.metric.as_str()) {
                    c.problem_at("metric", format!("`{}` is compared more than once", delta.metric));
                }
                if !is_known_unit(&delta.unit) {
                    c.problem_at("unit", format!("unknown unit `{}`", delta.unit));
                }
                if failed != (delta.status == DeltaStatus::Withheld) {
                    c.problem_at("status", "is `withheld` exactly when the output check failed");
                }
                let numbers = [
                    ("baseline", delta.baseline),
                    ("candidate", delta.candidate),
                    ("delta", delta.delta),
                    ("ratio", delta.ratio),
                    ("ratio_ci_low", delta.ratio_ci_low),
                    ("ratio_ci_high", delta.ratio_ci_high),
                ];
                // Read from JSON every number is finite; a comparison made in memory is checked
                // here before it is written, where a number past the float range would become
                // `null`.
                for (key, number) in numbers {
                    if let Some(number) = number
                        && !number.is_finite()
                    {
                        c.problem_at(key, format!("must be a finite number, found {number}"));
                    }
                }
                if delta.status == DeltaStatus::Complete {
                    match (delta.baseline, delta.candidate, delta.delta) {
                        (Some(baseline), Some(candidate), Some(change)) => {
                            if !approx_equal(change, candidate - baseline) {
                                c.problem_at("delta", format!("must equal candidate - baseline ({})", candidate - baseline));
                            }
                            if let Some(ratio) = delta.ratio
                                && (baseline == 0.0 || !approx_equal(ratio, candidate / baseline))
                            {
                                c.problem_at("ratio", "must equal candidate / baseline (null when the baseline is 0)");
                            }
                        }
                        _ => c.problem("a complete delta states baseline, candidate and delta"),
                    }
                    c.optional_non_negative("baseline", delta.baseline);
                    c.optional_non_negative("candidate", delta.candidate);
                    match (delta.ratio_ci_low, delta.ratio_ci_high) {
                        (Some(low), Some(high)) => {
                            if low > high {
                                c.problem_at("ratio_ci_low", format!("the interval is reversed: {low} > {high}"));
                            }
                            c.non_negative("ratio_ci_low", low);
                        }
                        (None, None) => {}
                        _ => c.problem_at("ratio_ci_high", "an interval states both ends or neither"),
                    }
                    if delta.verdict == Some(Verdict::Withheld) {
                        c.problem_at("verdict", "only a withheld delta has the verdict `withheld`");
                    }
                } else {
                    for (key, number) in numbers {
                        if number.is_some() {
                            c.problem_at(key, format!("{} delta leaves {key} null", with_article(status_name(delta.status))));
                        }
                    }
                    if delta.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                        c.problem_at("reason", "a delta that is not given says why in reason");
                    }
                    let verdict_allowed = match delta.status {
                        DeltaStatus::Withheld => matches!(delta.verdict, None | Some(Verdict::Withheld)),
                        _ => delta.verdict.is_none(),
                    };
                    if !verdict_allowed {
                        c.problem_at("verdict", "a delta that is not given has a null verdict (`withheld` when withheld)");
                    }
                }
            });
        }
    });
}

fn with_article(word: &str) -> String {
    let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {word}")
}

fn status_name(status: DeltaStatus) -> &'static str {
    match status {
        DeltaStatus::Complete => "complete",
        DeltaStatus::Partial => "partial",
        DeltaStatus::Unavailable => "unavailable",
        DeltaStatus::Withheld => "withheld",
    }
}

/// A changed layer metric: valid sides, the weaker status of the two, and a delta exactly when
/// both are complete.
fn check_layer_metric_delta(c: &mut Checker, delta: &LayerMetricDelta) {
    check_metric(c, "before", &delta.before, None);
    check_metric(c, "after", &delta.after, None);
    if delta.before.unit != delta.after.unit {
        c.problem_at("after", "both sides of a layer metric have one unit");
    }
    let status = delta.before.status.weaker(delta.after.status);
    if delta.status != status {
        c.problem_at(
            "status",
            format!("must be {}, the weaker of the two sides", status.as_str()),
        );
    }
    match (delta.before.value, delta.after.value, delta.delta) {
        (Some(before), Some(after), Some(value)) if status == MetricStatus::Complete => {
            if !approx_equal(value, after - before) {
                c.problem_at(
                    "delta",
                    format!("must equal after.value - before.value ({})", after - before),
                );
            }
        }
        (_, _, None) if status != MetricStatus::Complete => {}
        _ => c.problem_at(
            "delta",
            "a delta is given exactly when both sides are complete",
        ),
    }
}

fn check_layer_refs(c: &mut Checker, key: &str, layers: &[LayerRef]) {
    c.at(key, |c| {
        let mut identities = BTreeSet::new();
        for (index, layer) in layers.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("type_name", &layer.type_name);
                if let Some(metrics) = &layer.metrics {
                    c.at("metrics", |c| {
                        for (name, metric, unit) in [
                            ("module_flops", &metrics.module_flops, "FLOPs"),
                            ("macs", &metrics.macs, "MACs"),
                            ("dmas", &metrics.dmas, "DMAs"),
                            ("receptive_field", &metrics.receptive_field, "count"),
                            ("effective_stride", &metrics.effective_stride, "count"),
                            ("effective_padding", &metrics.effective_padding, "count"),
                        ] {
                            check_metric(c, name, metric, Some(unit));
                        }
                    });
                }
                if !identities.insert((layer.path.as_str(), layer.call_index)) {
                    c.problem(format!(
                        "layer `{}` call {} is listed more than once",
                        layer.path, layer.call_index
                    ));
                }
            });
        }
    });
}

pub(super) fn check_diff(c: &mut Checker, report: &ReportDiffReport) {
    for (key, side) in [("before", &report.before), ("after", &report.after)] {
        c.at(key, |c| {
            c.at("context", |c| check_context(c, &side.context))
        });
    }
    c.at("totals", |c| {
        for (name, total) in &report.totals {
            if name.trim().is_empty() {
                c.problem("every total has a non-empty name");
            }
            c.at(name, |c| {
                if !is_known_unit(&total.unit) {
                    c.problem_at("unit", format!("unknown unit `{}`", total.unit));
                }
                check_metric(c, "before", &total.before, None);
                check_metric(c, "after", &total.after, None);
                for (key, side) in [("before", &total.before), ("after", &total.after)] {
                    if side.unit != total.unit {
                        c.problem_at(key, format!("unit `{}` differs from the total's `{}`", side.unit, total.unit));
                    }
                }
                let weaker = total.before.status.weaker(total.after.status);
                if total.status != weaker {
                    c.problem_at("status", format!("must be the weaker of the two sides' statuses ({})", weaker.as_str()));
                }
                if total.status == MetricStatus::Complete {
                    match (total.before.value, total.after.value, total.delta) {
                        (Some(before), Some(after), Some(delta)) => {
                            if !approx_equal(delta, after - before) {
                                c.problem_at("delta", format!("must equal after.value - before.value ({})", after - before));
                            }
                        }
                        _ => c.problem("a complete total states before.value, after.value and delta"),
                    }
                    if total.reason.is_some() {
                        c.problem_at("reason", "a complete total has a null reason");
                    }
                } else {
                    if total.delta.is_some() {
                        c.problem_at("delta", format!("a delta is given only when both sides are complete; this total is {}", total.status.as_str()));
                    }
                    if total.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                        c.problem_at("reason", "a total without a delta says why in reason");
                    }
                }
            });
        }
    });
    c.at("layers", |c| {
        check_layer_refs(c, "added", &report.layers.added);
        check_layer_refs(c, "removed", &report.layers.removed);
        c.at("changed", |c| {
            let mut identities = BTreeSet::new();
            for (index, layer) in report.layers.changed.iter().enumerate() {
                c.at_index(index, |c| {
                    if !identities.insert((layer.path.as_str(), layer.call_index)) {
                        c.problem(format!(
                            "layer `{}` call {} is listed more than once",
                            layer.path, layer.call_index
                        ));
                    }
                    if layer.changes.is_empty() {
                        c.problem_at("changes", "a changed layer lists at least one change");
                    }
                    c.at("changes", |c| {
                        for (index, change) in layer.changes.iter().enumerate() {
                            c.at_index(index, |c| c.non_empty("field", &change.field));
                        }
                    });
                    c.at("metrics", |c| {
                        for (name, delta) in &layer.metrics {
                            c.at(name, |c| check_layer_metric_delta(c, delta));
                        }
                    });
                });
            }
        })
    });
}
