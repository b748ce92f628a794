//! Invariants of `distributed_benchmark` reports: every rank report is a valid `benchmark` of its
//! rank, and every other member is what merging those rank reports again gives.

use serde::Serialize;
use serde_json::Value;

use super::benchmark::check_benchmark;
use super::{Checker, approx_equal, check_context, check_diagnostics, check_metric};
use crate::distributed::merge_rank_reports;
use crate::schema::common::throughput_unit;
use crate::schema::distributed::DistributedBenchmarkReport;

pub(super) fn check_distributed(c: &mut Checker, report: &DistributedBenchmarkReport) {
    let before = c.found();
    c.at("rank_reports", |c| {
        if report.rank_reports.is_empty() {
            c.problem("at least one rank report is required: the report of every rank");
        }
        for (index, rank_report) in report.rank_reports.iter().enumerate() {
            c.at_index(index, |c| {
                c.at("context", |c| check_context(c, &rank_report.context));
                check_diagnostics(c, &rank_report.diagnostics);
                check_benchmark(c, rank_report);
                c.at("context", |c| match &rank_report.context.distributed {
                    None => c.problem_at(
                        "distributed",
                        "a rank report records its place in the job (context.distributed)",
                    ),
                    Some(place) if place.rank != index as u64 => c.at("distributed", |c| {
                        c.problem_at(
                            "rank",
                            format!(
                                "rank_reports are sorted by rank, so item {index} is rank \
                                 {index}; found rank {}",
                                place.rank
                            ),
                        )
                    }),
                    Some(_) => {}
                });
            });
        }
    });
    // Derived members are compared only with a merge of valid rank reports.
    let rank_reports_valid = c.found() == before;
    let unit = throughput_unit(&report.workload.work_unit);
    let metrics = &report.metrics;
    c.at("metrics", |c| {
        for (key, metric, unit) in [
            ("step_time", &metrics.step_time, "s"),
            ("step_time_iqr", &metrics.step_time_iqr, "s"),
            ("throughput", &metrics.throughput, unit.as_str()),
            ("first_call", &metrics.first_call, "s"),
            ("straggler_cost", &metrics.straggler_cost, "s"),
        ] {
            check_metric(c, key, metric, Some(unit));
        }
    });
    if !rank_reports_valid {
        return;
    }
    match merge_rank_reports(&report.rank_reports) {
        Err(error) => c.problem_at(
            "rank_reports",
            format!("the rank reports do not merge: {error}"),
        ),
        Ok(expected) => {
            let members: [(&str, Value, Value); 10] = [
                member(&report.context, &expected.context, "context"),
                member(&report.diagnostics, &expected.diagnostics, "diagnostics"),
                member(&report.workload, &expected.workload, "workload"),
                member(&report.settings, &expected.settings, "settings"),
                member(&report.job, &expected.job, "job"),
                member(&report.timing, &expected.timing, "timing"),
                member(&report.blocks, &expected.blocks, "blocks"),
                member(&report.metrics, &expected.metrics, "metrics"),
                member(&report.straggler, &expected.straggler, "straggler"),
                member(&report.ranks, &expected.ranks, "ranks"),
            ];
            for (key, stored, recomputed) in members {
                c.at(key, |c| compare_derived(c, &stored, &recomputed));
            }
        }
    }
}

/// A member of the report and the same member of the merge, as JSON values.
fn member<'a, T: Serialize>(stored: &T, expected: &T, key: &'a str) -> (&'a str, Value, Value) {
    let value = |member: &T| serde_json::to_value(member).unwrap_or(Value::Null);
    (key, value(stored), value(expected))
}

/// A value in a problem message: scalars as JSON, arrays and objects by their size.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".to_owned(),
        scalar => scalar.to_string(),
    }
}

/// Reports every place where `stored` differs from `expected`, the value merging the rank
/// reports gives; numbers agree to a relative 1e-9.
fn compare_derived(c: &mut Checker, stored: &Value, expected: &Value) {
    const FROM: &str = "merging rank_reports gives";
    match (stored, expected) {
        (Value::Number(left), Value::Number(right)) => {
            if let (Some(left_value), Some(right_value)) = (left.as_f64(), right.as_f64())
                && !approx_equal(left_value, right_value)
            {
                c.problem(format!("{left} disagrees with {right}, which {FROM}"));
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            if left.len() != right.len() {
                c.problem(format!(
                    "has {} items where {FROM} {}",
                    left.len(),
                    right.len()
                ));
                return;
            }
            for (index, (left, right)) in left.iter().zip(right).enumerate() {
                c.at_index(index, |c| compare_derived(c, left, right));
            }
        }
        (Value::Object(left), Value::Object(right)) => {
            for (key, left_value) in left {
                match right.get(key) {
                    Some(right_value) => c.at(key, |c| compare_derived(c, left_value, right_value)),
                    None => c.problem_at(
                        key,
                        format!("is {} where {FROM} nothing", shown(left_value)),
                    ),
                }
            }
            for (key, right_value) in right {
                if !left.contains_key(key) {
                    c.problem_at(
                        key,
                        format!("is missing where {FROM} {}", shown(right_value)),
                    );
                }
            }
        }
        (left, right) => {
            if left != right {
                c.problem(format!(
                    "{} disagrees with {}, which {FROM}",
                    shown(left),
                    shown(right)
                ));
            }
        }
    }
}
