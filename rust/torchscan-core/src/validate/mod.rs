//! Semantic invariants of parsed reports, checked after the typed parse; every problem is listed.

use crate::problem::{JsonPath, Problem};
use crate::schema::common::{
    Context, Diagnostic, DiagnosticCode, MappingKey, MetricResult, MetricStatus, ValueMeta,
    is_known_unit,
};
use crate::schema::{Report, ReportKind};

mod benchmark;
mod comparison;
mod distributed;
mod model;
mod peak;

use benchmark::{check_benchmark, check_peak_memory};
use comparison::{check_comparison, check_diff, check_output_check};
use distributed::check_distributed;
use model::{check_analysis, check_flops};

/// Relative tolerance for numbers a reader can recompute from other fields of the same report.
pub const RECOMPUTE_RELATIVE_TOLERANCE: f64 = 1e-9;

/// Whether two numbers agree to a relative tolerance of 1e-9.
pub fn approx_equal(left: f64, right: f64) -> bool {
    let scale = left.abs().max(right.abs()).max(f64::MIN_POSITIVE);
    (left - right).abs() <= RECOMPUTE_RELATIVE_TOLERANCE * scale
}

/// The most problems a validation lists; past it they are counted, and one last problem says how
/// many more there are. A report of millions of bad numbers (a timing array of zeros) would
/// otherwise cost far more memory as problems than as text.
pub const MAX_PROBLEMS: usize = 1000;

/// Collects problems while walking a report, keeping the current JSON path.
struct Checker {
    path: JsonPath,
    problems: Vec<Problem>,
    /// Problems found past [`MAX_PROBLEMS`], counted only.
    omitted: usize,
}

impl Checker {
    fn new() -> Self {
        Checker {
            path: JsonPath::root(),
            problems: Vec::new(),
            omitted: 0,
        }
    }

    /// Runs `check` with the path one member deeper.
    fn at(&mut self, key: &str, check: impl FnOnce(&mut Self)) {
        self.path.push_key(key);
        check(self);
        self.path.pop();
    }

    /// Runs `check` with the path one item deeper.
    fn at_index(&mut self, index: usize, check: impl FnOnce(&mut Self)) {
        self.path.push_index(index);
        check(self);
        self.path.pop();
    }

    /// Records a problem at the current path (counts it, past [`MAX_PROBLEMS`]).
    fn problem(&mut self, message: impl Into<String>) {
        if self.is_full() {
            self.omitted += 1;
            return;
        }
        self.problems
            .push(Problem::new(self.path.to_string(), message.into()));
    }

    /// How many problems were found so far, listed or counted.
    fn found(&self) -> usize {
        self.problems.len() + self.omitted
    }

    /// Whether [`MAX_PROBLEMS`] are listed: a check of many items can then count its problems
    /// without writing their messages.
    fn is_full(&self) -> bool {
        self.problems.len() >= MAX_PROBLEMS
    }

    /// The problems, with one more that counts those past [`MAX_PROBLEMS`].
    fn finish(mut self) -> Vec<Problem> {
        if self.omitted > 0 {
            self.problems.push(Problem::new(
                "$",
                format!(
                    "{} more problems are not listed (at most {MAX_PROBLEMS} are); fix the ones \
                     above first",
                    self.omitted
                ),
            ));
        }
        self.problems
    }

    /// Records a problem at a member of the current path.
    fn problem_at(&mut self, key: &str, message: impl Into<String>) {
        let message = message.into();
        self.at(key, |c| c.problem(message));
    }

    fn non_empty(&mut self, key: &str, text: &str) {
        if text.trim().is_empty() {
            self.problem_at(key, "must not be empty");
        }
    }

    fn non_negative(&mut self, key: &str, number: f64) {
        if number < 0.0 {
            self.problem_at(key, format!("must be non-negative, found {number}"));
        }
    }

    fn positive(&mut self, key: &str, number: f64) {
        if number <= 0.0 {
            self.problem_at(key, format!("must be positive, found {number}"));
        }
    }

    fn at_least_one(&mut self, key: &str, count: u64) {
        if count < 1 {
            self.problem_at(key, "must be at least 1");
        }
    }

    fn optional_non_negative(&mut self, key: &str, number: Option<f64>) {
        if let Some(number) = number {
            self.non_negative(key, number);
        }
    }
}

fn check_context(c: &mut Checker, context: &Context) {
    c.non_empty("torchscan_version", &context.torchscan_version);
    for (key, threads) in [
        ("torch_threads", context.torch_threads),
        ("torch_interop_threads", context.torch_interop_threads),
    ] {
        if threads == Some(0) {
            c.problem_at(key, "must be at least 1 when recorded");
        }
    }
    for (key, names) in [("dtypes", &context.dtypes), ("devices", &context.devices)] {
        c.at(key, |c| {
            for (index, name) in names.iter().enumerate() {
                if name.trim().is_empty() {
                    c.at_index(index, |c| c.problem("must not be empty"));
                }
            }
        });
    }
    if let Some(mode) = &context.execution_mode {
        c.non_empty("execution_mode", mode);
    }
    if let Some(place) = &context.distributed {
        c.at("distributed", |c| {
            if place.world_size < 1 {
                c.problem_at("world_size", "must be at least 1");
            } else {
                for (key, rank) in [("rank", place.rank), ("local_rank", place.local_rank)] {
                    if rank >= place.world_size {
                        c.problem_at(
                            key,
                            format!(
                                "must be below world_size ({}), found {rank}",
                                place.world_size
                            ),
                        );
                    }
                }
            }
            c.non_empty("backend", &place.backend);
            c.non_empty("host", &place.host);
        });
    }
}

fn check_diagnostics(c: &mut Checker, diagnostics: &[Diagnostic]) {
    c.at("diagnostics", |c| {
        for (index, diagnostic) in diagnostics.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("message", &diagnostic.message);
                if let Some(metric) = &diagnostic.metric {
                    c.non_empty("metric", metric);
                }
                if let Some(operator) = &diagnostic.operator {
                    c.non_empty("operator", operator);
                }
            });
        }
    });
}

/// Checks the status rules of a metric, its numbers and its unit (`expected_unit` when given).
fn check_metric(c: &mut Checker, key: &str, metric: &MetricResult, expected_unit: Option<&str>) {
    c.at(key, |c| {
        match metric.status {
            MetricStatus::Complete => match (metric.value, metric.known_value) {
                (Some(value), Some(known)) => {
                    if value != known {
                        c.problem_at(
                            "known_value",
                            format!("a complete metric has value == known_value, found value {value} and known_value {known}"),
                        );
                    }
                }
                (None, _) => c.problem_at("value", "a complete metric has a value"),
                (_, None) => c.problem_at("known_value", "a complete metric has a known_value equal to its value"),
            },
            MetricStatus::Partial => {
                if metric.value.is_some() {
                    c.problem_at("value", "a partial metric has a null value; its lower bound goes in known_value");
                }
                if metric.known_value.is_none() {
                    c.problem_at("known_value", "a partial metric has a known_value (a lower bound)");
                }
                if metric.reason.as_deref().is_none_or(|reason| reason.trim().is_empty()) {
                    c.problem_at("reason", "a partial metric says what is missing in reason");
                }
            }
            MetricStatus::Unavailable => {
                if metric.value.is_some() {
                    c.problem_at("value", "an unavailable metric has a null value");
                }
                if metric.known_value.is_some() {
                    c.problem_at("known_value", "an unavailable metric has a null known_value");
                }
                if metric.reason.as_deref().is_none_or(|reason| reason.trim().is_empty()) {
                    c.problem_at("reason", "an unavailable metric says why in reason");
                }
            }
        }
        if metric.status == MetricStatus::Complete && metric.reason.is_some() {
            c.problem_at("reason", "a complete metric has a null reason");
        }
        c.optional_non_negative("value", metric.value);
        c.optional_non_negative("known_value", metric.known_value);
        if !is_known_unit(&metric.unit) {
            c.problem_at(
                "unit",
                format!(
                    "unknown unit `{}`; expected s, B, FLOPs, MACs, DMAs, count, ratio, Hz, FLOP/s, B/s, FLOP/B or <work_unit>/s",
                    metric.unit
                ),
            );
        } else if let Some(expected) = expected_unit
            && metric.unit != expected
        {
            c.problem_at(
                "unit",
                format!("must be `{expected}`, found `{}`", metric.unit),
            );
        }
        c.non_empty("scope", &metric.scope);
        c.non_empty("method", &metric.method);
    });
}

/// Timed blocks: at least one, each duration positive (the benchmark's and the peak pass's), here
/// where both of their validators reach it without importing each other.
fn check_block_durations(c: &mut Checker, durations: &[f64]) {
    if durations.is_empty() {
        c.problem("at least one timed block is required");
    }
    for (index, duration) in durations.iter().enumerate() {
        if *duration <= 0.0 {
            if c.is_full() {
                c.omitted += 1;
                continue;
            }
            c.at_index(index, |c| {
                c.problem(format!(
                    "block durations must be positive, found {duration}"
                ))
            });
        }
    }
}

fn check_value_meta(c: &mut Checker, meta: &ValueMeta) {
    match meta {
        ValueMeta::Tensor(tensor) => {
            c.non_empty("dtype", &tensor.dtype);
            c.non_empty("device", &tensor.device);
        }
        ValueMeta::Tuple(sequence) | ValueMeta::List(sequence) => c.at("items", |c| {
            for (index, item) in sequence.items.iter().enumerate() {
                c.at_index(index, |c| check_value_meta(c, item));
            }
        }),
        ValueMeta::Mapping(mapping) => {
            c.non_empty("type", &mapping.type_name);
            c.at("items", |c| {
                for (index, item) in mapping.items.iter().enumerate() {
                    c.at_index(index, |c| {
                        c.non_empty("key_type", &item.key_type);
                        if let Some(MappingKey::Name(key)) = &item.key
                            && !is_identifier(key)
                        {
                            c.problem_at(
                                "key",
                                "a recorded string key is an identifier; any other key is left out",
                            );
                        }
                        c.at("value", |c| check_value_meta(c, &item.value))
                    });
                }
            });
        }
        ValueMeta::Dataclass(record) | ValueMeta::NamedTuple(record) => {
            c.non_empty("type", &record.type_name);
            c.at("fields", |c| {
                for (index, field) in record.fields.iter().enumerate() {
                    c.at_index(index, |c| {
                        c.non_empty("name", &field.name);
                        c.at("value", |c| check_value_meta(c, &field.value));
                    });
                }
            });
        }
        ValueMeta::Scalar(type_only) | ValueMeta::Object(type_only) => {
            c.non_empty("type", &type_only.type_name);
        }
        ValueMeta::None(_) => {}
    }
}

/// Whether `text` is a Python identifier: a letter or `_`, then letters, digits or `_`
/// (Unicode letters and digits included, as Python's `str.isidentifier` allows).
fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

fn check_value_metas(c: &mut Checker, key: &str, metas: &[ValueMeta]) {
    c.at(key, |c| {
        for (index, meta) in metas.iter().enumerate() {
            c.at_index(index, |c| check_value_meta(c, meta));
        }
    });
}

fn has_diagnostic(diagnostics: &[Diagnostic], code: DiagnosticCode) -> bool {
    diagnostics.iter().any(|diagnostic| diagnostic.code == code)
}

/// Checks every semantic invariant of a parsed report; an empty list means the report is valid.
pub fn check_report(report: &Report) -> Vec<Problem> {
    let mut checker = Checker::new();
    let c = &mut checker;
    c.at("context", |c| check_context(c, report.context()));
    check_diagnostics(c, report.diagnostics());
    match report {
        Report::Analysis(r) => check_analysis(c, r),
        Report::Flops(r) => check_flops(c, r),
        Report::Benchmark(r) => check_benchmark(c, r),
        Report::PeakMemory(r) => check_peak_memory(c, r),
        Report::OutputCheck(r) => check_output_check(c, r),
        Report::BenchmarkComparison(r) => check_comparison(c, r),
        Report::ReportDiff(r) => check_diff(c, r),
        Report::DistributedBenchmark(r) => check_distributed(c, r),
    }
    debug_assert!(ReportKind::ALL.contains(&report.kind()));
    checker.finish()
}
