//! Text of numbers, units, paths and words: the one home of every formatting rule that the text
//! summary ([`crate::summary`]), the HTML page ([`crate::render`]) and the comparisons
//! ([`crate::diff`], [`crate::benchmark_comparison`]) share.
//!
//! Units are scaled here (seconds as ms, bytes as MiB) and nowhere else. Where two callers show
//! one concept differently (a count exact or through `f64`, a metric in display units or in its
//! own unit), both forms live here under their own names, each saying why it differs.

mod escape;
mod metrics;
mod numbers;
#[cfg(test)]
mod tests;
mod values;
mod words;

pub(crate) use escape::needs_escaping;
pub use escape::{display_text, is_escaped_for_display};
pub use metrics::{
    format_metric, known_text, metric_text_in_unit, noise_label, nonblank_reason_suffix,
    page_metric_cell, readable_metric, readable_metric_text, reason_suffix, status_metric_cell,
    table_metric_cell,
};
pub use numbers::{
    SCIENTIFIC_FROM, coordinate, count_text, display_number, exact_number, float_count_text,
    group_thousands, grown_decimals, human_bytes, number_text, readable_change, readable_number,
    readable_pair, readable_with_exact,
};
pub use values::{
    display_output_path, display_path, dtypes_or, or_unknown, recorded_json_text, recorded_text,
    shape_text, threads_text, value_text,
};
pub use words::{
    mode_word, percent_text, plural, process_group_words, ranks_text, serde_name, verdict_words,
};

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// What a side shows for a setting its report does not record.
pub const NOT_RECORDED: &str = "not recorded";

/// What a missing value of the context (device, torch version, thread count) shows.
pub const UNKNOWN: &str = "unknown";
