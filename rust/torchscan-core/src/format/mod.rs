//! Text of numbers, units, paths and words: the one home of every formatting rule that the text
//! summary ([`crate::summary`]), the HTML page ([`crate::render`]) and the comparisons
//! ([`crate::diff`], [`crate::benchmark_comparison`]) share.
//!
//! Units are scaled here (seconds as ms, bytes as MiB) and nowhere else. Where two callers show
//! one concept differently (a count exact or through `f64`, a metric in display units or in its
//! own unit), both forms live here under their own names, each saying why it differs.

use std::fmt::Display;

use serde::Serialize;

use crate::schema::analysis::AnalysisMode;
use crate::schema::common::{
    MetricResult, MetricStatus, ProcessGroupOrigin, TensorMeta, ValueMeta,
};
use crate::schema::comparison::Verdict;

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// What a side shows for a setting its report does not record.
pub const NOT_RECORDED: &str = "not recorded";

/// What a missing value of the context (device, torch version, thread count) shows.
pub const UNKNOWN: &str = "unknown";

// ---------------------------------------------------------------------------------------------
// Numbers

/// Magnitudes from which numbers print in scientific notation (`1e308`) rather than as digits:
/// an `f64` that large prints its whole binary expansion otherwise, up to 309 digits.
pub const SCIENTIFIC_FROM: f64 = 1e21;

/// Formats `value` with `decimals` decimals and thousands separators: `4,191,866.300`.
///
/// A negative number that rounds to zero prints without its sign (`0.000`, never `-0.000`). A
/// magnitude of [`SCIENTIFIC_FROM`] or more prints as the shortest scientific notation that
/// reads back as the same `f64` (`1e308`, `-1.5e300`).
pub fn group_thousands(value: f64, decimals: usize) -> String {
    if value.is_finite() && value.abs() >= SCIENTIFIC_FROM {
        return format!("{value:e}");
    }
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

/// An integer with thousands separators, exact for every `u64`: `1,234,567`.
///
/// The text a `report_diff` records for changed layer fields. It differs from
/// [`float_count_text`] above 2^53, where that one rounds through `f64`.
pub fn count_text(count: u64) -> String {
    let digits = count.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// A count with thousands separators, converted to `f64` first: `1,234,567`.
///
/// What the text summary and the HTML page show for counts. It equals [`count_text`] up to 2^53
/// and rounds to the nearest `f64` above it (`9,007,199,254,740,992` for 2^53 + 1); kept apart
/// from [`count_text`] so that neither output changes.
pub fn float_count_text(count: u64) -> String {
    group_thousands(count as f64, 0)
}

/// A number with thousands separators, without decimals when it is an integer below 10^15, else
/// with three: `388,800`, `0.500`.
pub fn number_text(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        group_thousands(value, 0)
    } else {
        group_thousands(value, 3)
    }
}

/// Formats `value` as [`group_thousands`] does with `decimals` decimals, with more decimals when a
/// nonzero value would otherwise print as zero: two significant digits then (`0.00041`), in
/// scientific notation below 10^-15 (`1.2e-20`). Zero prints as zero.
pub fn grown_decimals(value: f64, decimals: usize) -> String {
    let text = group_thousands(value, decimals);
    if value == 0.0 || !value.is_finite() || text.bytes().any(|b| matches!(b, b'1'..=b'9')) {
        return text;
    }
    if value.abs() < 1e-15 {
        return format!("{value:.1e}");
    }
    // The position of the first significant decimal, then one more digit.
    let first = (-value.abs().log10()).ceil().max(1.0) as usize;
    let grown = group_thousands(value, first + 1);
    // log10 can land one short on exact powers of ten; never print zero.
    if grown.bytes().any(|b| matches!(b, b'1'..=b'9')) {
        grown
    } else {
        group_thousands(value, first + 2)
    }
}

/// A metric's number in display units: seconds as ms, bytes as MiB, hertz as MHz, counts without
/// decimals, other units as they are with three decimals; more decimals where a nonzero value
/// would print as zero ([`grown_decimals`]).
///
/// The text summaries' form (their lines are kept exactly, `Latency (block median): 0.006 ms`);
/// what people read elsewhere is [`readable_number`].
pub fn display_number(value: f64, unit: &str) -> String {
    match unit {
        "s" => format!("{} ms", grown_decimals(value * 1e3, 3)),
        "B" => format!("{} MiB", grown_decimals(value / BYTES_PER_MIB, 3)),
        "count" if value.fract() == 0.0 => group_thousands(value, 0),
        "count" | "ratio" => grown_decimals(value, 3),
        "Hz" if value.abs() >= 1e6 || value == 0.0 => {
            format!("{} MHz", group_thousands(value / 1e6, 0))
        }
        "Hz" => format!("{} MHz", grown_decimals(value / 1e6, 3)),
        other => format!("{} {other}", grown_decimals(value, 3)),
    }
}

/// Decimal prefixes of counts and rates, largest first.
const DECIMAL_PREFIXES: [(&str, f64); 6] = [
    ("E", 1e18),
    ("P", 1e15),
    ("T", 1e12),
    ("G", 1e9),
    ("M", 1e6),
    ("k", 1e3),
];

/// Binary prefixes of bytes, largest first.
const BINARY_PREFIXES: [(&str, f64); 6] = [
    ("EiB", 1_152_921_504_606_846_976.0),
    ("PiB", 1_125_899_906_842_624.0),
    ("TiB", 1_099_511_627_776.0),
    ("GiB", 1_073_741_824.0),
    ("MiB", 1_048_576.0),
    ("KiB", 1024.0),
];

/// Time units up to the second, largest first.
const TIME_UNITS: [(&str, f64); 4] = [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)];

/// A number below 1 in magnitude with three significant digits: `0.498`, `0.000412`; zero as `0`.
fn small_digits(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    if value.abs() < 1e-15 {
        return format!("{value:.2e}");
    }
    let first = (-value.abs().log10()).ceil().max(1.0) as usize;
    group_thousands(value, first + 2)
}

/// Four significant digits of a magnitude below 1,000: `0.9766`, `1.234`, `12.34`, `123.4`; a
/// value that rounds up to the next power of ten keeps four (`99.996` is `100.0`).
fn four_digits(scaled: f64) -> String {
    let decimals_for = |magnitude: f64| {
        if magnitude >= 100.0 {
            1
        } else if magnitude >= 10.0 {
            2
        } else if magnitude >= 1.0 {
            3
        } else {
            4
        }
    };
    let decimals = decimals_for(scaled.abs());
    let text = group_thousands(scaled, decimals);
    let rounded: f64 = text
        .replace(',', "")
        .trim_start_matches('-')
        .parse()
        .unwrap_or(0.0);
    let fewer = decimals_for(rounded);
    if fewer < decimals {
        group_thousands(scaled, fewer)
    } else {
        text
    }
}

/// `value / factor` with four significant digits, or `None` when it rounds up to 1,000 (the next
/// prefix then applies: `999.96 k` is `1.000 M`).
fn scaled_digits(value: f64, factor: f64) -> Option<String> {
    let text = four_digits(value / factor);
    let rounded: f64 = text.replace(',', "").trim_start_matches('-').parse().ok()?;
    (rounded < 1000.0).then_some(text)
}

/// A prefixed number: the largest prefix whose scaled value is at least 1 (and stays below 1,000
/// once rounded); `None` below the smallest prefix.
fn prefixed(value: f64, prefixes: &[(&'static str, f64)]) -> Option<(String, &'static str)> {
    let magnitude = value.abs();
    let index = prefixes
        .iter()
        .position(|(_, factor)| magnitude >= *factor)?;
    let (prefix, factor) = prefixes[index];
    match scaled_digits(value, factor) {
        Some(text) => Some((text, prefix)),
        // Rounded up to 1,000: the next larger prefix, or grouped digits past the largest, and
        // past a thousand trillion of it four significant digits in scientific notation, with
        // no prefix.
        None if index > 0 => {
            let (larger, factor) = prefixes[index - 1];
            Some((four_digits(value / factor), larger))
        }
        None if magnitude / factor >= 1e15 => Some((format!("{value:.3e}"), "")),
        None => Some((group_thousands(value / factor, 0), prefix)),
    }
}

/// Whether a unit takes its decimal prefix glued to it (`MFLOPs`, `GFLOP/s`, `GB/s`: bandwidth
/// in decimal bytes per second, as datasheets give it) rather than before it with a space
/// (`4.192 M samples/s`).
fn glued_prefix(unit: &str) -> bool {
    matches!(
        unit,
        "FLOPs" | "MACs" | "DMAs" | "FLOP/s" | "Hz" | "B/s" | "FLOP/B"
    )
}

/// A number people read at a glance, in its unit family: times in ns, us, ms or s; bytes in B,
/// KiB, MiB, GiB...; counts and rates with k, M, G, T...; four significant digits
/// (`11.98 MFLOPs`, `412.3 ns`, `11.60 KiB`, `4.192 M samples/s`), integers below 1,000 without
/// decimals (`32 samples`, `132 B`), ratios with three decimals (three significant digits below
/// 0.001). A nonzero value never prints
/// as zero, and zero prints as `0` with its unit. Non-finite values print as they are.
///
/// The exact value goes beside it ([`exact_number`]): in parentheses in the text summary, as the
/// `title` of the HTML element.
pub fn readable_number(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return format!("{value} {unit}");
    }
    let plain = |text: String, unit: &str| match unit {
        "count" | "ratio" | "" => text,
        unit => format!("{text} {unit}"),
    };
    match unit {
        "ratio" if value.abs() < 1e-3 && value != 0.0 => small_digits(value),
        "ratio" => group_thousands(value, 3),
        "s" => {
            let magnitude = value.abs();
            if magnitude == 0.0 {
                return "0 s".to_owned();
            }
            if magnitude >= 1000.0 {
                return format!("{} s", group_thousands(value, 0));
            }
            for (index, (name, factor)) in TIME_UNITS.iter().enumerate() {
                if magnitude >= *factor {
                    return match scaled_digits(value, *factor) {
                        Some(text) => format!("{text} {name}"),
                        // Rounded up to 1,000 of this unit: the next larger one.
                        None if index > 0 => {
                            let (larger, factor) = TIME_UNITS[index - 1];
                            format!("{} {larger}", four_digits(value / factor))
                        }
                        None => format!("{} s", group_thousands(value, 0)),
                    };
                }
            }
            // Below a nanosecond: nanoseconds with three significant digits.
            format!("{} ns", small_digits(value / 1e-9))
        }
        "B" => {
            if value.fract() == 0.0 && value.abs() < 1024.0 {
                return format!("{} B", group_thousands(value, 0));
            }
            match prefixed(value, &BINARY_PREFIXES) {
                Some((text, "")) => format!("{text} B"),
                Some((text, prefix)) => format!("{text} {prefix}"),
                None if value.abs() < 1.0 => format!("{} B", small_digits(value)),
                None => format!("{} B", four_digits(value)),
            }
        }
        unit => {
            if value.abs() < 1000.0 {
                let text = if value.fract() == 0.0 {
                    group_thousands(value, 0)
                } else if value.abs() >= 1.0 {
                    four_digits(value)
                } else {
                    small_digits(value)
                };
                return plain(text, unit);
            }
            match prefixed(value, &DECIMAL_PREFIXES) {
                Some((text, "")) => plain(text, unit),
                Some((text, prefix)) if glued_prefix(unit) => format!("{text} {prefix}{unit}"),
                Some((text, prefix)) => match unit {
                    "count" | "" => format!("{text} {prefix}"),
                    unit => format!("{text} {prefix} {unit}"),
                },
                None => plain(group_thousands(value, 0), unit),
            }
        }
    }
}

/// The exact value of a number with its unit, unscaled: integers with thousands separators
/// (`11,981,440 FLOPs`), other numbers as the shortest decimal that reads back as the same
/// `f64` (`0.000412345 s`). Counts and ratios carry no unit word.
pub fn exact_number(value: f64, unit: &str) -> String {
    let text = if value.fract() == 0.0 && value.abs() < 1e15 {
        group_thousands(value, 0)
    } else if !value.is_finite() {
        format!("{value}")
    } else if value.abs() >= SCIENTIFIC_FROM {
        format!("{value:e}")
    } else {
        // The shortest decimal that reads back as the same f64, its integer part grouped.
        let shortest = format!("{}", value.abs());
        let (integer, fraction) = shortest.split_once('.').unwrap_or((&shortest, ""));
        let sign = if value < 0.0 { "-" } else { "" };
        let integer = integer
            .parse::<u64>()
            .map_or_else(|_| integer.to_owned(), count_text);
        if fraction.is_empty() {
            format!("{sign}{integer}")
        } else {
            format!("{sign}{integer}.{fraction}")
        }
    };
    match unit {
        "count" | "ratio" | "" => text,
        unit => format!("{text} {unit}"),
    }
}

/// A change from `before` to `after` as people read it: `1.227 KiB -> 2.414 KiB (+1.188 KiB)`,
/// with the exact values beside when any differs from its readable form:
/// `1.227 KiB -> 2.414 KiB (+1.188 KiB; exact 1,256 B -> 2,472 B, +1,216 B)`.
pub fn readable_change(before: f64, after: f64, delta: f64, unit: &str) -> String {
    let sign = if delta >= 0.0 { "+" } else { "" };
    let readable = [before, after, delta].map(|value| readable_number(value, unit));
    let exact = [before, after, delta].map(|value| exact_number(value, unit));
    let mut text = format!("{} -> {} ({sign}{}", readable[0], readable[1], readable[2]);
    if readable != exact {
        text.push_str(&format!(
            "; exact {} -> {}, {sign}{}",
            exact[0], exact[1], exact[2]
        ));
    }
    text.push(')');
    text
}

/// Two values as people read them, `6.140 us -> 6.067 us`, with the exact values beside when
/// either differs from its readable form: `6.140 us -> 6.067 us (exact 0.000006140171 s ->
/// 0.0000060672 s)`.
pub fn readable_pair(before: f64, after: f64, unit: &str) -> String {
    let readable = [before, after].map(|value| readable_number(value, unit));
    let exact = [before, after].map(|value| exact_number(value, unit));
    if readable == exact {
        format!("{} -> {}", readable[0], readable[1])
    } else {
        format!(
            "{} -> {} (exact {} -> {})",
            readable[0], readable[1], exact[0], exact[1]
        )
    }
}

/// [`readable_number`] with the exact value in parentheses when the two differ:
/// `11.98 MFLOPs (11,981,440 FLOPs)`, `448`, `132 B`.
pub fn readable_with_exact(value: f64, unit: &str) -> String {
    let readable = readable_number(value, unit);
    let exact = exact_number(value, unit);
    if readable == exact {
        readable
    } else {
        format!("{readable} ({exact})")
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics

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

// ---------------------------------------------------------------------------------------------
// Paths, values and context

/// A module path for display: `(root)` for the root module's empty path.
pub fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

/// A path inside an output structure for display: `(output)` for the whole output's empty path.
pub fn display_output_path(path: &str) -> &str {
    if path.is_empty() { "(output)" } else { path }
}

/// The shapes of a value as text: `[1, 8, 30, 30]`, `([2], None)`, `{x: [3]}`, ...
pub fn shape_text(meta: &ValueMeta) -> String {
    meta_text(meta, &|tensor| format!("[{}]", shape_list(tensor)))
}

/// A value's metadata as text: `tensor [1, 8, 30, 30] float32`; `detailed` adds the device and
/// the grad flag of tensors (`tensor [2] float32 on cpu, requires grad`).
///
/// The text a `report_diff` records for a changed input or output; [`shape_text`] is the same
/// walk with tensors shown by their shape alone.
pub fn value_text(meta: &ValueMeta, detailed: bool) -> String {
    meta_text(meta, &|tensor| {
        let mut text = format!("tensor [{}] {}", shape_list(tensor), tensor.dtype_text());
        if detailed {
            text.push_str(" on ");
            text.push_str(&tensor.device);
            if tensor.requires_grad {
                text.push_str(", requires grad");
            }
        }
        text
    })
}

fn shape_list(tensor: &TensorMeta) -> String {
    tensor
        .shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value's structure as text, each tensor written by `tensor`.
fn meta_text(meta: &ValueMeta, tensor: &dyn Fn(&TensorMeta) -> String) -> String {
    let join = |items: Vec<String>| items.join(", ");
    match meta {
        ValueMeta::Tensor(t) => tensor(t),
        ValueMeta::Tuple(sequence) => format!(
            "({})",
            join(
                sequence
                    .items
                    .iter()
                    .map(|item| meta_text(item, tensor))
                    .collect()
            )
        ),
        ValueMeta::List(sequence) => format!(
            "[{}]",
            join(
                sequence
                    .items
                    .iter()
                    .map(|item| meta_text(item, tensor))
                    .collect()
            )
        ),
        ValueMeta::Mapping(mapping) => format!(
            "{{{}}}",
            join(
                mapping
                    .items
                    .iter()
                    .map(|item| format!("{}: {}", item.key_text(), meta_text(&item.value, tensor)))
                    .collect()
            )
        ),
        ValueMeta::Dataclass(record) | ValueMeta::NamedTuple(record) => format!(
            "{}({})",
            record.type_name,
            join(
                record
                    .fields
                    .iter()
                    .map(|field| format!("{}={}", field.name, meta_text(&field.value, tensor)))
                    .collect()
            )
        ),
        ValueMeta::None(_) => "None".to_owned(),
        ValueMeta::Scalar(type_only) | ValueMeta::Object(type_only) => type_only.type_name.clone(),
    }
}

/// A context value that may be missing: the value, or [`UNKNOWN`].
pub fn or_unknown(value: Option<&str>) -> &str {
    value.unwrap_or(UNKNOWN)
}

/// A thread count that may be missing: the count, or [`UNKNOWN`].
pub fn threads_text(threads: Option<u64>) -> String {
    threads.map_or_else(|| UNKNOWN.to_owned(), |t| t.to_string())
}

/// A recorded setting as a reader wants it: the value, or [`NOT_RECORDED`].
pub fn recorded_text<T: Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| NOT_RECORDED.to_owned(), ToString::to_string)
}

/// A recorded JSON setting (a flag of the context): a string as it is, null as [`NOT_RECORDED`],
/// anything else as JSON.
pub fn recorded_json_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => NOT_RECORDED.to_owned(),
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A context's dtypes joined by `separator` ([`crate::schema::common::dtypes_text`]), or `empty`
/// when there is none. A `report_diff`'s context warning writes `none` with `", "`; a benchmark
/// comparison's writes [`NOT_RECORDED`] with `","`, as their diagnostics always did.
pub fn dtypes_or(dtypes: &[String], separator: &str, empty: &str) -> String {
    if dtypes.is_empty() {
        empty.to_owned()
    } else {
        crate::schema::common::dtypes_text(dtypes, separator)
    }
}

// ---------------------------------------------------------------------------------------------
// Words

/// `<count> <noun>`, with an `s` unless the count is 1: `1 layer`, `3 layers`.
pub fn plural(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// A verdict in words: `faster`, `no detectable change`, ... (the report's name has `_` where
/// this has spaces, see [`Verdict::as_str`]).
pub fn verdict_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoDetectableChange => "no detectable change",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Withheld => "withheld",
    }
}

/// A share as a percentage with one decimal: `23.8%`; `<0.1%` for a positive share that would
/// show as `0.0%`, `>99.9%` for one below 1 that would show as `100.0%`.
pub fn percent_text(ratio: f64) -> String {
    let percent = ratio * 100.0;
    if percent > 0.0 && percent < 0.05 {
        "<0.1%".to_owned()
    } else if (99.95..100.0).contains(&percent) {
        ">99.9%".to_owned()
    } else {
        format!("{}%", group_thousands(percent, 1))
    }
}

/// Ranks as people read them, consecutive ones as a range: `rank 1`, `ranks 0, 2`,
/// `ranks 0-3, 6`; `no rank` for none. The ranks are sorted and each counted once.
pub fn ranks_text(ranks: &[u64]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for rank in sorted.iter().copied() {
        match runs.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(rank) => *end = rank,
            _ => runs.push((rank, rank)),
        }
    }
    let text = runs
        .iter()
        .map(|&(start, end)| match end - start {
            0 => start.to_string(),
            1 => format!("{start}, {end}"),
            _ => format!("{start}-{end}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    match sorted.len() {
        0 => "no rank".to_owned(),
        1 => format!("rank {text}"),
        _ => format!("ranks {text}"),
    }
}

/// Whose process group aligned the ranks of a distributed job, in words.
pub fn process_group_words(origin: ProcessGroupOrigin) -> &'static str {
    match origin {
        ProcessGroupOrigin::Existing => "the caller's process group",
        ProcessGroupOrigin::Created => "a process group torchscan created (env://)",
    }
}

/// An analysis mode's name: `full` or `structure`.
pub fn mode_word(mode: AnalysisMode) -> &'static str {
    match mode {
        AnalysisMode::Full => "full",
        AnalysisMode::Structure => "structure",
    }
}

/// The name serde writes for a unit enum variant (`context_mismatch`, `failed`); empty when the
/// value does not serialize to a string.
pub fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::common::{EmptyMeta, SequenceMeta, TypeOnlyMeta};

    #[test]
    fn thousands_and_decimals() {
        assert_eq!(group_thousands(4_191_866.3, 3), "4,191,866.300");
        assert_eq!(group_thousands(1_048_576.0, 3), "1,048,576.000");
        assert_eq!(group_thousands(0.094, 3), "0.094");
        assert_eq!(group_thousands(999.0, 0), "999");
        assert_eq!(group_thousands(1000.0, 0), "1,000");
        assert_eq!(group_thousands(0.0, 0), "0");
        assert_eq!(group_thousands(0.0, 3), "0.000");
        assert_eq!(group_thousands(-0.0, 3), "0.000");
        assert_eq!(group_thousands(-1234.5, 1), "-1,234.5");
        assert_eq!(group_thousands(-999_999.0, 0), "-999,999");
        assert_eq!(group_thousands(-0.0001, 3), "0.000");
        // From 1e21 the shortest scientific notation: never the 309 digits of f64::MAX.
        assert_eq!(group_thousands(9.99e20, 0), "999,000,000,000,000,000,000");
        assert_eq!(group_thousands(1e21, 3), "1e21");
        assert_eq!(group_thousands(1e308, 0), "1e308");
        assert_eq!(group_thousands(-f64::MAX, 1), "-1.7976931348623157e308");
        assert_eq!(group_thousands(f64::INFINITY, 1), "inf");
        assert_eq!(percent_text(1e300), "1e302%");
        assert_eq!(group_thousands(f64::NAN, 3), "NaN");
        assert_eq!(group_thousands(f64::INFINITY, 3), "inf");
        // The sign is kept only before a nonzero digit, so negative infinity shows as `inf`.
        // Valid reports hold finite numbers; the rule is kept as it always was.
        assert_eq!(group_thousands(f64::NEG_INFINITY, 0), "inf");
    }

    #[test]
    fn counts_exact_and_through_floats() {
        assert_eq!(count_text(0), "0");
        assert_eq!(count_text(999), "999");
        assert_eq!(count_text(1000), "1,000");
        assert_eq!(count_text(1_234_567), "1,234,567");
        assert_eq!(count_text(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(float_count_text(1_234_567), "1,234,567");
        // The two differ above 2^53 only.
        let past = (1u64 << 53) + 1;
        assert_eq!(count_text(past), "9,007,199,254,740,993");
        assert_eq!(float_count_text(past), "9,007,199,254,740,992");
    }

    #[test]
    fn numbers_and_units() {
        assert_eq!(number_text(388_800.0), "388,800");
        assert_eq!(number_text(0.5), "0.500");
        assert_eq!(number_text(-2.0), "-2");
        assert_eq!(number_text(0.0), "0");
        assert_eq!(number_text(1e15), "1,000,000,000,000,000.000");
        assert_eq!(number_text(f64::NAN), "NaN");
        assert_eq!(display_number(0.001_234_5, "s"), "1.234 ms");
        assert_eq!(display_number(-0.5, "s"), "-500.000 ms");
        assert_eq!(display_number(98_816.0, "B"), "0.094 MiB");
        assert_eq!(display_number(1_048_576.0, "B"), "1.000 MiB");
        assert_eq!(display_number(1234.0, "count"), "1,234");
        assert_eq!(display_number(0.25, "ratio"), "0.250");
        assert_eq!(display_number(2_400_000_000.0, "Hz"), "2,400 MHz");
        assert_eq!(display_number(1000.0, "FLOPs"), "1,000.000 FLOPs");
        assert_eq!(display_number(0.0, "samples/s"), "0.000 samples/s");
        assert_eq!(display_number(f64::INFINITY, "s"), "inf ms");
        // A nonzero value never prints as zero; zero stays as it was.
        assert_eq!(display_number(4.123e-7, "s"), "0.00041 ms");
        assert_eq!(display_number(1e-6, "s"), "0.001 ms");
        assert_eq!(display_number(-4.123e-7, "s"), "-0.00041 ms");
        assert_eq!(display_number(132.0, "B"), "0.00013 MiB");
        assert_eq!(display_number(0.0004, "ratio"), "0.00040");
        assert_eq!(display_number(0.4, "count"), "0.400");
        assert_eq!(display_number(1e-20, "ratio"), "1.0e-20");
        assert_eq!(display_number(0.0, "s"), "0.000 ms");
        assert_eq!(display_number(0.006_1, "s"), "6.100 ms");
        assert_eq!(display_number(1500.0, "Hz"), "0.002 MHz");
        assert_eq!(display_number(400.0, "Hz"), "0.00040 MHz");
    }

    #[test]
    fn readable_numbers() {
        let r = readable_number;
        assert_eq!(r(11_981_440.0, "FLOPs"), "11.98 MFLOPs");
        assert_eq!(r(1_048_576.0, "FLOPs"), "1.049 MFLOPs");
        assert_eq!(r(999.0, "FLOPs"), "999 FLOPs");
        assert_eq!(r(999_960.0, "FLOPs"), "1.000 MFLOPs");
        assert_eq!(r(99_995.0, "count"), "100.0 k");
        assert_eq!(r(9_999.6, "FLOPs"), "10.00 kFLOPs");
        assert_eq!(r(102_395.0, "B"), "100.0 KiB");
        assert_eq!(r(1_024_000.0, "B"), "0.9766 MiB");
        assert_eq!(r(99.996e-6, "s"), "100.0 us");
        assert_eq!(r(1e30, "FLOPs"), "1,000,000,000,000 EFLOPs");
        // Past a thousand trillion of the largest prefix: scientific notation, never 309 digits.
        assert_eq!(r(1e33, "FLOPs"), "1.000e33 FLOPs");
        assert_eq!(r(1e308, "FLOP/s"), "1.000e308 FLOP/s");
        assert_eq!(r(-f64::MAX, "count"), "-1.798e308");
        assert_eq!(r(1e300, "samples/s"), "1.000e300 samples/s");
        assert_eq!(r(1e300, "B"), "1.000e300 B");
        assert_eq!(r(0.0, "FLOPs"), "0 FLOPs");
        assert_eq!(r(32.0, "samples"), "32 samples");
        assert_eq!(r(4_191_866.3, "samples/s"), "4.192 M samples/s");
        assert_eq!(r(12.345, "samples/s"), "12.35 samples/s");
        assert_eq!(r(0.000_5, "samples/s"), "0.000500 samples/s");
        assert_eq!(r(2970.0, "count"), "2.970 k");
        assert_eq!(r(11_689_512.0, "count"), "11.69 M");
        assert_eq!(r(2970.6, "count"), "2.971 k");
        assert_eq!(r(448.0, "count"), "448");
        assert_eq!(r(0.498, "ratio"), "0.498");
        assert_eq!(r(0.03, "ratio"), "0.030");
        assert_eq!(r(0.0, "ratio"), "0.000");
        assert_eq!(r(0.000_4, "ratio"), "0.000400");
        assert_eq!(r(1.5, "ratio"), "1.500");
        // Times: ns, us, ms, s.
        assert_eq!(r(4.123e-7, "s"), "412.3 ns");
        assert_eq!(r(1.9e-5, "s"), "19.00 us");
        assert_eq!(r(0.006_1, "s"), "6.100 ms");
        assert_eq!(r(0.999_96, "s"), "1.000 s");
        assert_eq!(r(9.999_6e-7, "s"), "1.000 us");
        assert_eq!(r(2.5, "s"), "2.500 s");
        assert_eq!(r(12_345.6, "s"), "12,346 s");
        assert_eq!(r(5e-12, "s"), "0.00500 ns");
        assert_eq!(r(0.0, "s"), "0 s");
        assert_eq!(r(-0.002, "s"), "-2.000 ms");
        // Bytes: B, KiB, MiB, GiB.
        assert_eq!(r(132.0, "B"), "132 B");
        assert_eq!(r(11_880.0, "B"), "11.60 KiB");
        assert_eq!(r(98_816.0, "B"), "96.50 KiB");
        assert_eq!(r(1_048_576.0, "B"), "1.000 MiB");
        assert_eq!(r(1_048_575.0, "B"), "1.000 MiB");
        assert_eq!(r(3.5 * 1_073_741_824.0, "B"), "3.500 GiB");
        assert_eq!(r(0.5, "B"), "0.500 B");
        assert_eq!(r(100.25, "B"), "100.2 B");
        assert_eq!(r(2_400_000_000.0, "Hz"), "2.400 GHz");
        assert_eq!(r(f64::NAN, "s"), "NaN s");
    }

    #[test]
    fn exact_numbers_beside_readable_ones() {
        assert_eq!(exact_number(11_981_440.0, "FLOPs"), "11,981,440 FLOPs");
        assert_eq!(exact_number(4.123_45e-7, "s"), "0.000000412345 s");
        assert_eq!(exact_number(2970.0, "count"), "2,970");
        assert_eq!(exact_number(0.5, "ratio"), "0.5");
        assert_eq!(
            exact_number(5_217_020.699_982_093, "samples/s"),
            "5,217,020.699982093 samples/s"
        );
        assert_eq!(exact_number(-1.5, "s"), "-1.5 s");
        assert_eq!(exact_number(f64::INFINITY, "s"), "inf s");
        assert_eq!(exact_number(1e20, "FLOPs"), "100000000000000000000 FLOPs");
        assert_eq!(exact_number(1e30, "FLOP/s"), "1e30 FLOP/s");
        assert_eq!(exact_number(1.5e300, "ratio"), "1.5e300");
        assert_eq!(exact_number(-f64::MAX, "B"), "-1.7976931348623157e308 B");
        assert_eq!(
            readable_with_exact(11_981_440.0, "FLOPs"),
            "11.98 MFLOPs (11,981,440 FLOPs)"
        );
        assert_eq!(readable_with_exact(448.0, "count"), "448");
        assert_eq!(readable_with_exact(132.0, "B"), "132 B");
        assert_eq!(readable_with_exact(0.0, "FLOPs"), "0 FLOPs");
        assert_eq!(
            readable_change(1256.0, 2472.0, 1216.0, "B"),
            "1.227 KiB -> 2.414 KiB (+1.188 KiB; exact 1,256 B -> 2,472 B, +1,216 B)"
        );
        assert_eq!(
            readable_change(314.0, 618.0, 304.0, "count"),
            "314 -> 618 (+304)"
        );
        assert_eq!(readable_change(0.0, 0.0, 0.0, "B"), "0 B -> 0 B (+0 B)");
        assert_eq!(
            readable_change(2.0e-6, 1.0e-6, -1.0e-6, "s"),
            "2.000 us -> 1.000 us (-1.000 us; exact 0.000002 s -> 0.000001 s, -0.000001 s)"
        );
        assert_eq!(
            readable_pair(32.0, 64.0, "samples"),
            "32 samples -> 64 samples"
        );
        assert_eq!(
            readable_pair(1.5e-3, 2.0e-3, "s"),
            "1.500 ms -> 2.000 ms (exact 0.0015 s -> 0.002 s)"
        );
    }

    proptest::proptest! {
        /// No nonzero number prints as zero, in either form, in any unit.
        #[test]
        fn nonzero_never_prints_as_zero(
            value in proptest::prop_oneof![
                1e-300f64..1e-3,
                1e-3f64..1e3,
                1e3f64..1e300,
            ],
            negative: bool,
            unit in proptest::sample::select(
                vec!["s", "B", "count", "ratio", "Hz", "FLOPs", "samples/s", "tokens"],
            ),
        ) {
            let value = if negative { -value } else { value };
            for text in [readable_number(value, unit), display_number(value, unit)] {
                let digits = text.split(['e', ' ']).next().unwrap_or_default();
                proptest::prop_assert!(
                    digits.bytes().any(|b| matches!(b, b'1'..=b'9')),
                    "{} {} printed as {}", value, unit, text
                );
            }
        }
    }

    fn partial(known: f64, reason: Option<&str>) -> MetricResult {
        MetricResult {
            status: MetricStatus::Partial,
            value: None,
            known_value: Some(known),
            unit: "FLOPs".into(),
            scope: "s".into(),
            method: "m".into(),
            reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn metric_text_by_status() {
        let complete = MetricResult::complete(98_816.0, "B", "PyTorch tracked CPU tensors", "m");
        assert_eq!(format_metric(&complete), "0.094 MiB");
        assert_eq!(metric_text_in_unit(&complete), "98,816 B");
        let unavailable = MetricResult::unavailable("B", "s", "m", "not requested");
        assert_eq!(format_metric(&unavailable), "unavailable (not requested)");
        assert_eq!(
            metric_text_in_unit(&unavailable),
            "unavailable (not requested)"
        );
        let partial_one = partial(1000.0, Some("1 uncounted operator"));
        assert_eq!(
            format_metric(&partial_one),
            "partial, at least 1,000.000 FLOPs (1 uncounted operator)"
        );
        assert_eq!(
            metric_text_in_unit(&partial_one),
            "partial, at least 1,000 FLOPs (1 uncounted operator)"
        );
        // A blank reason: shown by format_metric, left out by metric_text_in_unit.
        let blank = partial(0.5, Some(" "));
        assert_eq!(format_metric(&blank), "partial, at least 0.500 FLOPs ( )");
        assert_eq!(metric_text_in_unit(&blank), "partial, at least 0.500 FLOPs");
        assert_eq!(reason_suffix(None), "");
        assert_eq!(nonblank_reason_suffix(Some("")), "");
        assert_eq!(nonblank_reason_suffix(Some("why")), " (why)");
    }

    #[test]
    fn status_metric_cells_name_the_status() {
        let complete = MetricResult::complete(536_870_912.0, "B", "s", "m");
        assert_eq!(
            status_metric_cell(&complete),
            ("512.0 MiB".to_owned(), Some("536,870,912 B".to_owned()))
        );
        assert_eq!(
            status_metric_cell(&partial(2_000.0, Some("why"))),
            (">= 2.000 kFLOPs".to_owned(), Some("2,000 FLOPs".to_owned()))
        );
        let unavailable = MetricResult::unavailable("B", "s", "m", "no getrusage");
        assert_eq!(
            status_metric_cell(&unavailable),
            ("unavailable".to_owned(), Some("no getrusage".to_owned()))
        );
    }

    #[test]
    fn metric_cells() {
        let complete = MetricResult::complete(-1_500.0, "FLOPs", "s", "m");
        assert_eq!(table_metric_cell(&complete), "-1,500");
        assert_eq!(
            page_metric_cell(&complete),
            ("-1.500 kFLOPs".to_owned(), Some("-1,500 FLOPs".to_owned()))
        );
        let partial_one = partial(2_000.0, None);
        assert_eq!(table_metric_cell(&partial_one), ">=2,000");
        assert_eq!(
            page_metric_cell(&partial_one),
            (">= 2.000 kFLOPs".to_owned(), Some("2,000 FLOPs".to_owned()))
        );
        let small = MetricResult::complete(448.0, "FLOPs", "s", "m");
        assert_eq!(page_metric_cell(&small), ("448 FLOPs".to_owned(), None));
        assert_eq!(
            readable_metric_text(&partial(1_048_576.0, Some("no formula for aten::foo"))),
            "partial, at least 1.049 MFLOPs (1,048,576 FLOPs) (no formula for aten::foo)"
        );
        assert_eq!(readable_metric(&small), ("448 FLOPs".to_owned(), None));
        let unavailable = MetricResult::unavailable("FLOPs", "s", "m", "no formula");
        assert_eq!(table_metric_cell(&unavailable), "-");
        assert_eq!(page_metric_cell(&unavailable), ("-".to_owned(), None));
        assert_eq!(
            readable_metric(&unavailable),
            ("unavailable (no formula)".to_owned(), None)
        );
    }

    #[test]
    fn paths_values_and_context() {
        assert_eq!(display_path(""), "(root)");
        assert_eq!(display_path("features.0"), "features.0");
        assert_eq!(display_output_path(""), "(output)");
        assert_eq!(display_output_path("0.logits"), "0.logits");
        let tensor = ValueMeta::Tensor(TensorMeta {
            shape: vec![1, 8],
            dtype: "torch.float32".into(),
            device: "cpu".into(),
            requires_grad: true,
        });
        let pair = ValueMeta::Tuple(SequenceMeta {
            items: vec![tensor.clone(), ValueMeta::None(EmptyMeta {})],
        });
        assert_eq!(shape_text(&pair), "([1, 8], None)");
        assert_eq!(value_text(&pair, false), "(tensor [1, 8] float32, None)");
        assert_eq!(
            value_text(&tensor, true),
            "tensor [1, 8] float32 on cpu, requires grad"
        );
        let list = ValueMeta::List(SequenceMeta {
            items: vec![ValueMeta::Scalar(TypeOnlyMeta {
                type_name: "int".into(),
            })],
        });
        assert_eq!(shape_text(&list), "[int]");
        assert_eq!(value_text(&list, true), "[int]");
        assert_eq!(or_unknown(None), "unknown");
        assert_eq!(or_unknown(Some("cuda:0")), "cuda:0");
        assert_eq!(threads_text(None), "unknown");
        assert_eq!(threads_text(Some(8)), "8");
        assert_eq!(recorded_text::<u64>(&None), "not recorded");
        assert_eq!(recorded_text(&Some(4)), "4");
        assert_eq!(recorded_json_text(&serde_json::Value::Null), "not recorded");
        assert_eq!(recorded_json_text(&serde_json::json!("on")), "on");
        assert_eq!(recorded_json_text(&serde_json::json!(true)), "true");
        assert_eq!(dtypes_or(&[], ", ", "none"), "none");
        let dtypes = ["float32".to_owned(), "float64".to_owned()];
        assert_eq!(dtypes_or(&dtypes, ",", NOT_RECORDED), "float32,float64");
    }

    #[test]
    fn words() {
        assert_eq!(plural(0, "layer"), "0 layers");
        assert_eq!(plural(1, "layer"), "1 layer");
        assert_eq!(plural(2, "problem"), "2 problems");
        assert_eq!(
            verdict_words(Verdict::NoDetectableChange),
            "no detectable change"
        );
        assert_eq!(verdict_words(Verdict::Faster), "faster");
        assert_eq!(verdict_words(Verdict::Withheld), "withheld");
        assert_eq!(mode_word(AnalysisMode::Structure), "structure");
        assert_eq!(
            serde_name(&Verdict::NoDetectableChange),
            "no_detectable_change"
        );
        assert_eq!(
            serde_name(&AnalysisMode::Full),
            mode_word(AnalysisMode::Full)
        );
        assert_eq!(serde_name(&1.5), "");
        assert_eq!(noise_label("cpu_steal_ratio"), "CPU steal");
        assert_eq!(noise_label("cpu_frequency"), "CPU frequency");
        assert_eq!(percent_text(0.238_095), "23.8%");
        assert_eq!(percent_text(0.0), "0.0%");
        assert_eq!(percent_text(0.000_1), "<0.1%");
        assert_eq!(percent_text(0.999_9), ">99.9%");
        assert_eq!(percent_text(1.0), "100.0%");
        assert_eq!(percent_text(12.5), "1,250.0%");
        assert_eq!(
            process_group_words(ProcessGroupOrigin::Existing),
            "the caller's process group"
        );
        assert_eq!(ranks_text(&[]), "no rank");
        assert_eq!(ranks_text(&[1]), "rank 1");
        assert_eq!(ranks_text(&[1, 0]), "ranks 0, 1");
        assert_eq!(ranks_text(&[6, 0, 1, 2, 3, 3]), "ranks 0-3, 6");
        assert_eq!(ranks_text(&[0, 2, 4, 5]), "ranks 0, 2, 4, 5");
        assert_eq!(
            ranks_text(&[u64::MAX - 1, u64::MAX]),
            format!("ranks {}, {}", u64::MAX - 1, u64::MAX)
        );
    }
}
