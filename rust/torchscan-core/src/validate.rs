//! Semantic invariants of parsed reports, checked after the typed parse; every problem is listed.

use std::collections::BTreeSet;

use crate::problem::{JsonPath, Problem};
use crate::schema::analysis::{AnalysisMode, AnalysisReport, Layer, ReceptiveField};
use crate::schema::benchmark::{
    BenchmarkMetrics, BenchmarkReport, PassName, ProfilerPass, TimingEvidence, TimingSettings,
};
use crate::schema::common::{
    Context, Diagnostic, DiagnosticCode, MetricResult, MetricStatus, ValueMeta, is_known_unit,
    is_valid_work_unit,
};
use crate::schema::comparison::{BenchmarkComparisonReport, CheckStatus, DeltaStatus, Verdict};
use crate::schema::diff::{LayerRef, ReportDiffReport};
use crate::schema::flops::{FlopReport, OperatorFlops};
use crate::schema::output_check::OutputCheckReport;
use crate::schema::peak_memory::PeakMemoryReport;
use crate::schema::{Report, ReportKind};
use crate::stats;

/// Relative tolerance for numbers a reader can recompute from other fields of the same report.
const RECOMPUTE_RELATIVE_TOLERANCE: f64 = 1e-9;

/// Whether two numbers agree to [`RECOMPUTE_RELATIVE_TOLERANCE`].
pub fn approx_equal(left: f64, right: f64) -> bool {
    let scale = left.abs().max(right.abs()).max(f64::MIN_POSITIVE);
    (left - right).abs() <= RECOMPUTE_RELATIVE_TOLERANCE * scale
}

/// Collects problems while walking a report, keeping the current JSON path.
struct Checker {
    path: JsonPath,
    problems: Vec<Problem>,
}

impl Checker {
    fn new() -> Self {
        Checker {
            path: JsonPath::root(),
            problems: Vec::new(),
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

    /// Records a problem at the current path.
    fn problem(&mut self, message: impl Into<String>) {
        self.problems
            .push(Problem::new(self.path.to_string(), message.into()));
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
    c.at("dtypes", |c| {
        for (index, dtype) in context.dtypes.iter().enumerate() {
            if dtype.trim().is_empty() {
                c.at_index(index, |c| c.problem("must not be empty"));
            }
        }
    });
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
                    "unknown unit `{}`; expected s, B, FLOPs, MACs, DMAs, count, ratio or <work_unit>/s",
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
        ValueMeta::Dict(mapping) => c.at("entries", |c| {
            for (index, entry) in mapping.entries.iter().enumerate() {
                c.at_index(index, |c| {
                    c.at("value", |c| check_value_meta(c, &entry.value))
                });
            }
        }),
        ValueMeta::Dataclass(record) | ValueMeta::NamedTuple(record) => {
            c.non_empty("type_name", &record.type_name);
            c.at("fields", |c| {
                for (index, field) in record.fields.iter().enumerate() {
                    c.at_index(index, |c| {
                        c.non_empty("name", &field.name);
                        c.at("value", |c| check_value_meta(c, &field.value));
                    });
                }
            });
        }
        ValueMeta::Scalar(type_only) | ValueMeta::Other(type_only) => {
            c.non_empty("type_name", &type_only.type_name);
        }
        ValueMeta::None(_) => {}
    }
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

fn check_operator_flops(
    c: &mut Checker,
    key: &str,
    flops: &OperatorFlops,
    diagnostics: &[Diagnostic],
) {
    c.at(key, |c| {
        check_metric(c, "total", &flops.total, Some("FLOPs"));
        let mut seen = BTreeSet::new();
        let mut note_operator = |c: &mut Checker, name: &str, calls: u64| {
            c.non_empty("operator", name);
            c.at_least_one("calls", calls);
            if !seen.insert(name.to_owned()) {
                c.problem_at(
                    "operator",
                    format!("`{name}` is listed more than once; each operator is in exactly one class, once"),
                );
            }
        };
        let mut counted_sum = 0.0;
        c.at("counted", |c| {
            for (index, op) in flops.counted.iter().enumerate() {
                c.at_index(index, |c| {
                    note_operator(c, &op.operator, op.calls);
                    c.non_negative("flops", op.flops);
                    counted_sum += op.flops;
                });
            }
        });
        c.at("excluded", |c| {
            for (index, op) in flops.excluded.iter().enumerate() {
                c.at_index(index, |c| note_operator(c, &op.operator, op.calls));
            }
        });
        c.at("uncounted", |c| {
            for (index, op) in flops.uncounted.iter().enumerate() {
                c.at_index(index, |c| {
                    note_operator(c, &op.operator, op.calls);
                    let named = diagnostics.iter().any(|d| {
                        d.code == DiagnosticCode::UncountedOperator
                            && d.operator.as_deref() == Some(op.operator.as_str())
                    });
                    if !named {
                        c.problem(format!(
                            "no `uncounted_operator` diagnostic names `{}`",
                            op.operator
                        ));
                    }
                });
            }
        });
        for (key, names) in [
            ("counted", flops.counted.iter().map(|op| op.operator.as_str()).collect::<Vec<_>>()),
            ("excluded", flops.excluded.iter().map(|op| op.operator.as_str()).collect()),
            ("uncounted", flops.uncounted.iter().map(|op| op.operator.as_str()).collect()),
        ] {
            if let Some(index) = names.windows(2).position(|pair| pair[0] > pair[1]) {
                c.at(key, |c| {
                    c.at_index(index + 1, |c| {
                        c.problem_at("operator", format!("operators are sorted by name; `{}` comes after `{}`", names[index + 1], names[index]))
                    })
                });
            }
        }
        match flops.total.status {
            MetricStatus::Complete if !flops.uncounted.is_empty() => c.at("total", |c| {
                c.problem_at(
                    "status",
                    "cannot be complete while an operator is uncounted; use partial",
                )
            }),
            MetricStatus::Partial if flops.uncounted.is_empty() => c.at("total", |c| {
                c.problem_at(
                    "status",
                    "partial operator FLOPs list the uncounted operators that make them partial",
                )
            }),
            _ => {}
        }
        if let Some(known) = flops.total.known_value
            && !approx_equal(known, counted_sum)
        {
            c.at("total", |c| {
                c.problem_at(
                    "known_value",
                    format!("must equal the sum of counted operators' flops, {counted_sum}"),
                )
            });
        }
        c.at("by_module", |c| {
            let mut paths = BTreeSet::new();
            for (index, module) in flops.by_module.iter().enumerate() {
                c.at_index(index, |c| {
                    if !paths.insert(module.path.as_str()) {
                        c.problem_at(
                            "path",
                            format!("module `{}` is listed more than once", module.path),
                        );
                    }
                    check_metric(c, "flops", &module.flops, Some("FLOPs"));
                });
            }
        });
    });
}

fn check_receptive_field(c: &mut Checker, field: &ReceptiveField) {
    c.at("receptive_field", |c| {
        let lists = [
            ("size", &field.size),
            ("stride", &field.stride),
            ("padding", &field.padding),
        ];
        match field.status {
            MetricStatus::Complete => {
                let mut lengths = BTreeSet::new();
                for (key, list) in lists {
                    match list {
                        Some(values) => {
                            lengths.insert(values.len());
                        }
                        None => c.problem_at(
                            key,
                            "a complete receptive field sets size, stride and padding",
                        ),
                    }
                }
                if lengths.len() > 1 {
                    c.problem(
                        "size, stride and padding must have one entry per spatial dimension each",
                    );
                }
                if field.reason.is_some() {
                    c.problem_at("reason", "a complete receptive field has a null reason");
                }
            }
            MetricStatus::Partial => {
                if field.size.is_none() {
                    c.problem_at(
                        "size",
                        "a partial receptive field gives lower bounds in size",
                    );
                }
                if field.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    c.problem_at("reason", "a partial receptive field says why in reason");
                }
            }
            MetricStatus::Unavailable => {
                for (key, list) in lists {
                    if list.is_some() {
                        c.problem_at(
                            key,
                            "an unavailable receptive field has null size, stride and padding",
                        );
                    }
                }
                if field.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    c.problem_at(
                        "reason",
                        "an unavailable receptive field says why in reason",
                    );
                }
            }
        }
        for (key, list) in lists {
            if let Some(values) = list {
                c.at(key, |c| {
                    for (index, value) in values.iter().enumerate() {
                        if *value < 0.0 {
                            c.at_index(index, |c| {
                                c.problem(format!("must be non-negative, found {value}"))
                            });
                        }
                    }
                });
            }
        }
    });
}

fn check_layer(c: &mut Checker, layer: &Layer, mode: AnalysisMode) {
    c.non_empty("type_name", &layer.type_name);
    let expected_depth = if layer.path.is_empty() {
        0
    } else {
        layer.path.split('.').count() as u64
    };
    if layer.path.split('.').any(str::is_empty) && !layer.path.is_empty() {
        c.problem_at("path", format!("`{}` has an empty component", layer.path));
    } else if layer.depth != expected_depth {
        c.problem_at(
            "depth",
            format!(
                "must be {expected_depth} for path `{}` (0 for the root, else the number of path components)",
                layer.path
            ),
        );
    }
    if layer.trainable_parameters > layer.parameters {
        c.problem_at("trainable_parameters", "cannot exceed parameters");
    }
    check_value_metas(c, "inputs", &layer.inputs);
    c.at("output", |c| check_value_meta(c, &layer.output));
    for (key, metric, unit) in [
        ("flops", &layer.flops, "FLOPs"),
        ("macs", &layer.macs, "MACs"),
        ("dmas", &layer.dmas, "DMAs"),
    ] {
        check_metric(c, key, metric, Some(unit));
        if mode == AnalysisMode::Structure && metric.status != MetricStatus::Unavailable {
            c.at(key, |c| {
                c.problem_at(
                    "status",
                    "structure mode computes no estimates: unavailable (not requested)",
                )
            });
        }
    }
    check_receptive_field(c, &layer.receptive_field);
}

fn check_analysis(c: &mut Checker, report: &AnalysisReport) {
    check_value_metas(c, "inputs", &report.inputs);
    c.at("input_kwargs", |c| {
        for (index, entry) in report.input_kwargs.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("name", &entry.name);
                c.at("value", |c| check_value_meta(c, &entry.value));
            });
        }
    });
    let totals = &report.totals;
    c.at("totals", |c| {
        if totals
            .trainable_parameters
            .checked_add(totals.frozen_parameters)
            != Some(totals.parameters)
        {
            c.problem_at(
                "parameters",
                format!(
                    "must equal trainable_parameters + frozen_parameters ({} + {})",
                    totals.trainable_parameters, totals.frozen_parameters
                ),
            );
        }
        check_metric(c, "parameter_bytes", &totals.parameter_bytes, Some("B"));
        check_metric(c, "buffer_bytes", &totals.buffer_bytes, Some("B"));
        for (key, metric, unit) in [
            ("module_flops", &totals.module_flops, "FLOPs"),
            ("module_macs", &totals.module_macs, "MACs"),
            ("module_dmas", &totals.module_dmas, "DMAs"),
        ] {
            check_metric(c, key, metric, Some(unit));
            if report.mode == AnalysisMode::Structure && metric.status != MetricStatus::Unavailable
            {
                c.at(key, |c| {
                    c.problem_at(
                        "status",
                        "structure mode computes no estimates: unavailable (not requested)",
                    )
                });
            }
        }
        if totals.shared_tensors > 0
            && !has_diagnostic(&report.diagnostics, DiagnosticCode::SharedTensors)
        {
            c.problem_at(
                "shared_tensors",
                "shared tensors are reported with a `shared_tensors` diagnostic",
            );
        }
    });
    c.at("layers", |c| {
        let mut identities = BTreeSet::new();
        for (index, layer) in report.layers.iter().enumerate() {
            c.at_index(index, |c| {
                if !identities.insert((layer.path.as_str(), layer.call_index)) {
                    c.problem(format!(
                        "layer `{}` call {} appears more than once; identity is path plus call index",
                        layer.path, layer.call_index
                    ));
                }
                check_layer(c, layer, report.mode);
            });
        }
    });
    check_operator_flops(
        c,
        "operator_flops",
        &report.operator_flops,
        &report.diagnostics,
    );
    if report.mode == AnalysisMode::Structure
        && report.operator_flops.total.status != MetricStatus::Unavailable
    {
        c.at("operator_flops", |c| {
            c.at("total", |c| {
                c.problem_at(
                    "status",
                    "structure mode computes no estimates: unavailable (not requested)",
                )
            })
        });
    }
}

fn check_flops(c: &mut Checker, report: &FlopReport) {
    check_operator_flops(
        c,
        "operator_flops",
        &report.operator_flops,
        &report.diagnostics,
    );
}

fn check_settings(c: &mut Checker, settings: &TimingSettings) {
    c.at("settings", |c| {
        c.positive("min_time_s", settings.min_time_s);
        if settings.max_time_s < settings.min_time_s {
            c.problem_at(
                "max_time_s",
                format!("must be at least min_time_s ({})", settings.min_time_s),
            );
        }
        c.at_least_one("min_blocks", settings.min_blocks);
        c.non_negative("warmup_time_s", settings.warmup_time_s);
        if !(settings.max_timer_overhead_ratio > 0.0 && settings.max_timer_overhead_ratio < 1.0) {
            c.problem_at(
                "max_timer_overhead_ratio",
                format!(
                    "must be in (0, 1), found {}",
                    settings.max_timer_overhead_ratio
                ),
            );
        }
        let unique: BTreeSet<_> = settings.passes.iter().collect();
        if unique.len() != settings.passes.len() {
            c.problem_at("passes", "lists a pass more than once");
        }
    });
}

fn check_timing(c: &mut Checker, timing: &TimingEvidence) {
    c.at("timing", |c| {
        c.positive("first_call_s", timing.first_call_s);
        c.at_least_one("calls_per_block", timing.calls_per_block);
        c.non_negative("timer_overhead_s", timing.timer_overhead_s);
        c.at("block_durations_s", |c| {
            if timing.block_durations_s.is_empty() {
                c.problem("at least one timed block is required");
            }
            for (index, duration) in timing.block_durations_s.iter().enumerate() {
                if *duration <= 0.0 {
                    c.at_index(index, |c| {
                        c.problem(format!(
                            "block durations must be positive, found {duration}"
                        ))
                    });
                }
            }
        });
    });
}

/// Checks that a complete metric states `expected`, recomputed from the raw evidence.
fn check_recomputed(c: &mut Checker, key: &str, metric: &MetricResult, expected: f64, how: &str) {
    if let Some(value) = metric.value
        && !approx_equal(value, expected)
    {
        c.at(key, |c| {
            c.problem_at("value", format!("{value} disagrees with {expected}, {how}"))
        });
    }
}

fn check_profiler(c: &mut Checker, profiler: &ProfilerPass) {
    c.at("profiler", |c| {
        c.non_empty("method", &profiler.method);
        c.non_empty("scope", &profiler.scope);
        match profiler.status {
            MetricStatus::Complete => {
                match profiler.calls {
                    Some(calls) => c.at_least_one("calls", calls),
                    None => c.problem_at("calls", "a completed profiler pass states its calls"),
                }
                if profiler.reason.is_some() {
                    c.problem_at("reason", "a completed profiler pass has a null reason");
                }
            }
            MetricStatus::Partial => c.problem_at(
                "status",
                "the profiler pass is complete or unavailable, never partial",
            ),
            MetricStatus::Unavailable => {
                if profiler
                    .reason
                    .as_deref()
                    .is_none_or(|r| r.trim().is_empty())
                {
                    c.problem_at("reason", "an unavailable profiler pass says why in reason");
                }
                if profiler.calls.is_some() {
                    c.problem_at("calls", "an unavailable profiler pass has null calls");
                }
                if !profiler.top_operators.is_empty() {
                    c.problem_at(
                        "top_operators",
                        "an unavailable profiler pass lists no operators",
                    );
                }
            }
        }
        c.at("top_operators", |c| {
            let self_times: Vec<f64> = profiler
                .top_operators
                .iter()
                .map(|op| op.self_time_s)
                .collect();
            if let Some(index) = self_times.windows(2).position(|pair| pair[0] < pair[1]) {
                c.at_index(index + 1, |c| {
                    c.problem_at(
                        "self_time_s",
                        "top operators are sorted by self time, largest first",
                    )
                });
            }
            for (index, op) in profiler.top_operators.iter().enumerate() {
                c.at_index(index, |c| {
                    c.non_empty("operator", &op.operator);
                    c.at_least_one("calls", op.calls);
                    c.non_negative("self_time_s", op.self_time_s);
                    c.non_negative("total_time_s", op.total_time_s);
                });
            }
        });
    });
}

fn check_benchmark(c: &mut Checker, report: &BenchmarkReport) {
    let workload = &report.workload;
    c.at("workload", |c| {
        c.positive("work_units", workload.work_units);
        if !is_valid_work_unit(&workload.work_unit) {
            c.problem_at(
                "work_unit",
                format!(
                    "`{}` is not a valid work unit (a letter, then letters, digits, `_` or `-`)",
                    workload.work_unit
                ),
            );
        }
        check_value_metas(c, "inputs", &workload.inputs);
    });
    check_settings(c, &report.settings);
    if let Some(timing) = &report.timing {
        check_timing(c, timing);
    }
    let metrics = &report.metrics;
    let throughput_unit = format!("{}/s", workload.work_unit);
    c.at("metrics", |c| {
        for (key, metric, unit) in [
            ("first_call", &metrics.first_call, "s"),
            ("latency", &metrics.latency, "s"),
            ("latency_iqr", &metrics.latency_iqr, "s"),
            ("throughput", &metrics.throughput, throughput_unit.as_str()),
            ("operator_flops", &metrics.operator_flops, "FLOPs"),
            ("tensor_memory_peak", &metrics.tensor_memory_peak, "B"),
            ("allocator_reserved_peak", &metrics.allocator_reserved_peak, "B"),
            ("process_rss_peak", &metrics.process_rss_peak, "B"),
            ("process_rss_workload_peak", &metrics.process_rss_workload_peak, "B"),
            ("process_rss_baseline", &metrics.process_rss_baseline, "B"),
        ] {
            check_metric(c, key, metric, Some(unit));
        }
        let timed = [
            ("first_call", &metrics.first_call),
            ("latency", &metrics.latency),
            ("latency_iqr", &metrics.latency_iqr),
            ("throughput", &metrics.throughput),
        ];
        match &report.timing {
            None => {
                for (key, metric) in timed {
                    if metric.status != MetricStatus::Unavailable {
                        c.at(key, |c| c.problem_at("status", "without timing evidence (timing is null) this metric is unavailable"));
                    }
                }
            }
            Some(timing) => {
                for (key, metric) in timed {
                    if metric.status == MetricStatus::Partial {
                        c.at(key, |c| c.problem_at("status", "timing metrics are complete or unavailable, never partial"));
                    }
                }
                check_recomputed(c, "first_call", &metrics.first_call, timing.first_call_s, "timing.first_call_s");
                if let Ok(recomputed) = stats::block_timing(&timing.block_durations_s, timing.calls_per_block)
                    && recomputed.timed_s > 0.0
                {
                    check_recomputed(c, "latency", &metrics.latency, recomputed.latency_s, "the median of per-call block means");
                    check_recomputed(c, "latency_iqr", &metrics.latency_iqr, recomputed.latency_iqr_s, "the IQR of per-call block means");
                    let throughput = workload.work_units * recomputed.calls as f64 / recomputed.timed_s;
                    check_recomputed(c, "throughput", &metrics.throughput, throughput, "work_units x calls / timed seconds");
                }
            }
        }
    });
    match &report.operator_flops {
        Some(flops) => {
            check_operator_flops(c, "operator_flops", flops, &report.diagnostics);
            if metrics.operator_flops.status != flops.total.status
                || metrics.operator_flops.known_value != flops.total.known_value
            {
                c.at("metrics", |c| {
                    c.at("operator_flops", |c| {
                        c.problem(
                            "must state the same status and known_value as operator_flops.total",
                        )
                    })
                });
            }
        }
        None => {
            if metrics.operator_flops.status != MetricStatus::Unavailable {
                c.at("metrics", |c| c.at("operator_flops", |c| c.problem_at("status", "without the operator_flops breakdown (null) this metric is unavailable")));
            }
        }
    }
    check_profiler(c, &report.profiler);
    check_passes(c, report);
    check_memory_order(c, metrics);
}

/// A pass that was not requested leaves its metrics unavailable and its evidence null.
fn check_passes(c: &mut Checker, report: &BenchmarkReport) {
    let requested = |pass: PassName| report.settings.passes.contains(&pass);
    let m = &report.metrics;
    let by_pass: [(PassName, &[(&str, &MetricResult)]); 4] = [
        (
            PassName::Latency,
            &[
                ("first_call", &m.first_call),
                ("latency", &m.latency),
                ("latency_iqr", &m.latency_iqr),
                ("throughput", &m.throughput),
            ],
        ),
        (
            PassName::OperatorFlops,
            &[("operator_flops", &m.operator_flops)],
        ),
        (
            PassName::TensorMemory,
            &[
                ("tensor_memory_peak", &m.tensor_memory_peak),
                ("allocator_reserved_peak", &m.allocator_reserved_peak),
            ],
        ),
        (
            PassName::ProcessRss,
            &[
                ("process_rss_peak", &m.process_rss_peak),
                ("process_rss_workload_peak", &m.process_rss_workload_peak),
                ("process_rss_baseline", &m.process_rss_baseline),
            ],
        ),
    ];
    for (pass, metrics) in by_pass {
        if requested(pass) {
            continue;
        }
        for (key, metric) in metrics {
            if metric.status != MetricStatus::Unavailable {
                c.at("metrics", |c| {
                    c.at(key, |c| {
                        c.problem_at("status", format!("the `{}` pass was not requested (settings.passes), so this metric is unavailable", pass_name(pass)))
                    })
                });
            }
        }
    }
    if !requested(PassName::Latency) && report.timing.is_some() {
        c.problem_at(
            "timing",
            "the `latency` pass was not requested (settings.passes), so timing is null",
        );
    }
    if !requested(PassName::OperatorFlops) && report.operator_flops.is_some() {
        c.problem_at("operator_flops", "the `operator_flops` pass was not requested (settings.passes), so this breakdown is null");
    }
    if !requested(PassName::Profiler) && report.profiler.status != MetricStatus::Unavailable {
        c.at("profiler", |c| {
            c.problem_at(
                "status",
                "the `profiler` pass was not requested (settings.passes), so it is unavailable",
            )
        });
    }
}

fn pass_name(pass: PassName) -> &'static str {
    match pass {
        PassName::Latency => "latency",
        PassName::OperatorFlops => "operator_flops",
        PassName::TensorMemory => "tensor_memory",
        PassName::ProcessRss => "process_rss",
        PassName::Profiler => "profiler",
    }
}

/// Peaks that contain each other are ordered: reserved >= allocated, lifetime >= workload >= baseline.
fn check_memory_order(c: &mut Checker, m: &BenchmarkMetrics) {
    let pairs = [
        (
            "allocator_reserved_peak",
            &m.allocator_reserved_peak,
            "tensor_memory_peak",
            &m.tensor_memory_peak,
            "allocator reserved bytes include the allocated bytes",
        ),
        (
            "process_rss_peak",
            &m.process_rss_peak,
            "process_rss_workload_peak",
            &m.process_rss_workload_peak,
            "the lifetime peak includes the workload peak",
        ),
        (
            "process_rss_workload_peak",
            &m.process_rss_workload_peak,
            "process_rss_baseline",
            &m.process_rss_baseline,
            "the workload peak is measured from the baseline's high-water mark",
        ),
    ];
    for (larger_key, larger, smaller_key, smaller, why) in pairs {
        if let (Some(high), Some(low)) = (larger.value, smaller.value)
            && high < low
        {
            c.at("metrics", |c| {
                c.at(larger_key, |c| {
                    c.problem_at(
                        "value",
                        format!("{high} is below {smaller_key} ({low}); {why}"),
                    )
                })
            });
        }
    }
}

fn check_peak_memory(c: &mut Checker, report: &PeakMemoryReport) {
    check_metric(c, "baseline", &report.baseline, Some("B"));
    check_metric(
        c,
        "tensor_memory_peak",
        &report.tensor_memory_peak,
        Some("B"),
    );
    check_metric(
        c,
        "allocator_reserved_peak",
        &report.allocator_reserved_peak,
        Some("B"),
    );
    if let (Some(baseline), Some(peak)) = (report.baseline.value, report.tensor_memory_peak.value)
        && peak < baseline
    {
        c.at("tensor_memory_peak", |c| {
            c.problem_at(
                "value",
                format!("the peak ({peak}) cannot be below the baseline ({baseline}) it includes"),
            )
        });
    }
}

fn check_output_check(c: &mut Checker, report: &OutputCheckReport) {
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
                let metadata_matches = leaf.baseline.shape == leaf.candidate.shape
                    && leaf.baseline.dtype == leaf.candidate.dtype;
                if leaf.passed && (leaf.mismatched_elements > 0 || !metadata_matches) {
                    c.problem_at(
                        "passed",
                        "a passing leaf has matching shape and dtype and no mismatched elements",
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

fn check_comparison(c: &mut Checker, report: &BenchmarkComparisonReport) {
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

fn check_layer_refs(c: &mut Checker, key: &str, layers: &[LayerRef]) {
    c.at(key, |c| {
        let mut identities = BTreeSet::new();
        for (index, layer) in layers.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("type_name", &layer.type_name);
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

fn check_diff(c: &mut Checker, report: &ReportDiffReport) {
    for (key, side) in [("before", &report.before), ("after", &report.after)] {
        c.at(key, |c| {
            c.at("context", |c| check_context(c, &side.context))
        });
    }
    c.at("totals", |c| {
        let mut metrics = BTreeSet::new();
        for (index, total) in report.totals.iter().enumerate() {
            c.at_index(index, |c| {
                c.non_empty("metric", &total.metric);
                if !metrics.insert(total.metric.as_str()) {
                    c.problem_at("metric", format!("`{}` is listed more than once", total.metric));
                }
                if !is_known_unit(&total.unit) {
                    c.problem_at("unit", format!("unknown unit `{}`", total.unit));
                }
                c.optional_non_negative("before", total.before);
                c.optional_non_negative("after", total.after);
                if total.status == MetricStatus::Complete {
                    match (total.before, total.after, total.delta) {
                        (Some(before), Some(after), Some(delta)) => {
                            if !approx_equal(delta, after - before) {
                                c.problem_at("delta", format!("must equal after - before ({})", after - before));
                            }
                        }
                        _ => c.problem("a complete total states before, after and delta"),
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
    check_layer_refs(c, "layers_added", &report.layers_added);
    check_layer_refs(c, "layers_removed", &report.layers_removed);
    c.at("layers_changed", |c| {
        let mut identities = BTreeSet::new();
        for (index, layer) in report.layers_changed.iter().enumerate() {
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
            });
        }
    });
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
    }
    debug_assert!(ReportKind::ALL.contains(&report.kind()));
    checker.problems
}
