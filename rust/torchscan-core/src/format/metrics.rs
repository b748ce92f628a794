//! Metric results as text: a value in its unit or in display units, with its status and reason,
//! for the summary's tables and the page's cells.

use crate::roofline::KnownNumber;
use crate::schema::common::{MetricResult, MetricStatus};

use super::numbers::{
    display_number, exact_number, group_thousands, number_text, readable_number,
    readable_with_exact,
};

/// ` (reason)`, or nothing without a reason.
pub fn reason_suffix(reason: Option<&str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

/// ` (reason)`, or nothing without a reason or with a blank one: the suffix of
/// [`metric_text_in_unit`], which a `report_diff` records, where a blank reason shows nothing.
pub fn nonblank_reason_suffix(reason: Option<&str>) -> String {
    match reason {
        Some(reason) if !reason.trim().is_empty() => format!(" ({reason})"),
        _ => String::new(),
    }
}

/// A metric as text in display units ([`display_number`]): its number,
/// `partial, at least <number> (reason)`, or `unavailable (reason)`.
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

/// A metric as text in its own unit, unscaled ([`number_text`]): `388,800 FLOPs`,
/// `partial, at least 1,000 FLOPs (reason)` or `unavailable (reason)`.
///
/// The text a `report_diff` records for a changed layer metric. It differs from
/// [`format_metric`] (no ms or MiB scaling, integers without decimals, blank reasons left out)
/// because diffs written before keep their exact text.
pub fn metric_text_in_unit(metric: &MetricResult) -> String {
    let reason = nonblank_reason_suffix(metric.reason.as_deref());
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => {
            format!("{} {}", number_text(value), metric.unit)
        }
        (MetricStatus::Partial, _, Some(known)) => format!(
            "partial, at least {} {}{reason}",
            number_text(known),
            metric.unit
        ),
        (status, _, _) => format!("{}{reason}", status.as_str()),
    }
}

/// A metric as people read it ([`readable_number`]), with its exact text when that differs
/// ([`exact_number`]): `11.98 MFLOPs` and `11,981,440 FLOPs`; `partial, at least 1.049 MFLOPs
/// (reason)` and the known value's exact text; `unavailable (reason)` and none.
pub fn readable_metric(metric: &MetricResult) -> (String, Option<String>) {
    let exact = |value: f64| {
        let exact = exact_number(value, &metric.unit);
        (exact != readable_number(value, &metric.unit)).then_some(exact)
    };
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => {
            (readable_number(value, &metric.unit), exact(value))
        }
        (MetricStatus::Partial, _, Some(known)) => (
            format!(
                "partial, at least {}{}",
                readable_number(known, &metric.unit),
                reason_suffix(metric.reason.as_deref())
            ),
            exact(known),
        ),
        (status, _, _) => (
            format!(
                "{}{}",
                status.as_str(),
                reason_suffix(metric.reason.as_deref())
            ),
            None,
        ),
    }
}

/// [`readable_metric`] as one line of text, the exact value in parentheses beside the readable
/// one: `11.98 MFLOPs (11,981,440 FLOPs)`, `partial, at least 1.049 MFLOPs (1,048,576 FLOPs)
/// (reason)`.
pub fn readable_metric_text(metric: &MetricResult) -> String {
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(value), _) => readable_with_exact(value, &metric.unit),
        (MetricStatus::Partial, _, Some(known)) => format!(
            "partial, at least {}{}",
            readable_with_exact(known, &metric.unit),
            reason_suffix(metric.reason.as_deref())
        ),
        _ => readable_metric(metric).0,
    }
}

/// A metric as a cell of the text summary's layer table: the known value as a whole number
/// without unit, `>=` and the known value when partial, `-` otherwise.
///
/// Narrower than [`page_metric_cell`] (no unit, no space after `>=`) to keep the text table's
/// columns short.
pub fn table_metric_cell(metric: &MetricResult) -> String {
    match (metric.status, metric.known_value) {
        (MetricStatus::Complete, Some(v)) => group_thousands(v, 0),
        (MetricStatus::Partial, Some(v)) => format!(">={}", group_thousands(v, 0)),
        _ => "-".to_owned(),
    }
}

/// A metric as a cell of an HTML table: the number as people read it ([`readable_number`]),
/// `>= ` and the known value when partial, `-` otherwise; with the exact value for the cell's
/// `title` when it differs.
///
/// Unlike [`table_metric_cell`] it shows the unit, as the page's cards do.
pub fn page_metric_cell(metric: &MetricResult) -> (String, Option<String>) {
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(_), _) => readable_metric(metric),
        (MetricStatus::Partial, _, Some(k)) => {
            let (_, exact) = readable_metric(metric);
            (format!(">= {}", readable_number(k, &metric.unit)), exact)
        }
        _ => ("-".to_owned(), None),
    }
}

/// A metric as a cell of a table whose rows each come from their own report (the ranks of a
/// `distributed_benchmark`): the number as people read it ([`readable_number`]), `>= ` and the
/// known value when partial, the status word (`unavailable`) otherwise, never a `-` a reader
/// could take for zero; with the cell's `title` for the HTML page: the exact value when it
/// differs, the reason of a metric without a value.
pub fn status_metric_cell(metric: &MetricResult) -> (String, Option<String>) {
    match (metric.status, metric.value, metric.known_value) {
        (MetricStatus::Complete, Some(_), _) => readable_metric(metric),
        (MetricStatus::Partial, _, Some(known)) => {
            let exact = exact_number(known, &metric.unit);
            let readable = readable_number(known, &metric.unit);
            let title = (exact != readable).then_some(exact);
            (format!(">= {readable}"), title)
        }
        (status, _, _) => (status.as_str().to_owned(), metric.reason.clone()),
    }
}

/// The label of a benchmark's noise metric (by its key in `metrics`), for text and HTML.
pub fn noise_label(key: &str) -> &'static str {
    match key {
        "machine_other_cpu_ratio" => "Other CPU use",
        "cpu_steal_ratio" => "CPU steal",
        "involuntary_context_switches" => "Involuntary context switches",
        _ => "CPU frequency",
    }
}

/// A number as the report knows it: `58.42 GFLOP/s`, or `at least 58.42 GFLOP/s` for a lower
/// bound.
pub fn known_text(known: KnownNumber, unit: &str) -> String {
    let text = readable_number(known.value, unit);
    if known.lower_bound {
        format!("at least {text}")
    } else {
        text
    }
}
