//! `compare_reports`: two `analysis` reports of a model, compared total by total and layer by layer
//! into a `report_diff` report.
//!
//! - **Totals.** Each model-wide total becomes a [`TotalDelta`] whose status is the weaker of the
//!   two sides' statuses. `before` (`after`) is set when that side is complete; `delta` is set only
//!   when both are, and otherwise `reason` says which side is not complete and why, for example
//!   `before is partial: FusedGELU has no estimate formula`. Element counts (`parameters`,
//!   `trainable_parameters`, `frozen_parameters`, `buffer_elements`, `shared_tensors`) are always
//!   complete.
//! - **Layers** are matched by identity, module path plus call index: `layers.added` are only in
//!   the report after, `layers.removed` only in the report before, and `layers.changed` are in both
//!   with at least one differing field among `type`, `input`, `output`, `parameters.trainable`,
//!   `parameters.frozen`, `parameters.bytes`, `buffers.elements`, `buffers.bytes`,
//!   `metrics.calls`, `metrics.module_flops`, `metrics.macs`, `metrics.dmas`, `metrics.receptive_field`,
//!   `metrics.effective_stride` and `metrics.effective_padding` (listed in that order). A
//!   changed layer's `metrics` gives each changed metric's two sides and, when both are
//!   complete, its delta; added and removed layers carry their metrics (torchscan 0.2's layout).
//!   Added and changed layers follow the order of the report after; removed layers the order of
//!   the report before.
//! - **Refusals** ([`CompareError`]): both reports must be `analysis` reports of one schema version,
//!   made in the same analysis mode and with the same `module_flops` and `operator_flops` methods;
//!   otherwise their numbers do not measure the same thing and no diff is made.
//!
//! [`compare_reports`] compares typed reports; [`compare_report_texts`] and
//! [`compare_reports_json`] read and validate report JSON first and validate the diff they return.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::format::{
    UNKNOWN, count_text, dtypes_or, metric_text_in_unit, mode_word, or_unknown, plural, value_text,
};
use crate::problem::Problem;
use crate::schema::analysis::{AnalysisMode, AnalysisReport, CallArguments, Layer, LayerMetrics};
use crate::schema::common::{
    Context, Diagnostic, DiagnosticCode, MetricResult, MetricStatus, Severity,
};
use crate::schema::diff::{
    DiffSide, FieldChange, LayerChange, LayerChanges, LayerMetricDelta, LayerRef, ReportDiffKind,
    ReportDiffReport, TotalDelta,
};
/// Kept at this path for callers of `diff::ordered_totals`; the order belongs to the
/// `report_diff` schema.
pub use crate::schema::diff::{TOTAL_ORDER, ordered_totals};
use crate::schema::{Report, ReportKind};

/// Which of the two compared reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// The report before the change (the first argument).
    Before,
    /// The report after the change (the second argument).
    After,
}

impl Side {
    /// `before` or `after`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Before => "before",
            Side::After => "after",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Why two reports cannot be compared: their numbers would not measure the same thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareError {
    /// One report is not an `analysis` report.
    NotAnalysis {
        /// The side that is not an analysis.
        side: Side,
        /// Its kind.
        kind: ReportKind,
    },
    /// The reports were written with different schema versions (checked on the raw JSON).
    SchemaVersionMismatch {
        /// `schema_version` of the report before.
        before: u64,
        /// `schema_version` of the report after.
        after: u64,
    },
    /// One analysis is `full` and the other `structure`.
    ModeMismatch {
        /// The mode of the report before.
        before: AnalysisMode,
        /// The mode of the report after.
        after: AnalysisMode,
    },
    /// The `method` of a compared total differs (`module_flops` or `operator_flops`).
    MethodMismatch {
        /// The total whose method differs.
        metric: &'static str,
        /// Its method in the report before.
        before: String,
        /// Its method in the report after.
        after: String,
    },
}

impl fmt::Display for CompareError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::NotAnalysis { side, kind } => write!(
                formatter,
                "the report {side} is a `{}` report, but only two `analysis` reports can be \
                 compared; pass the analyses (from crawl_module or summary) of both models",
                kind.as_str()
            ),
            CompareError::SchemaVersionMismatch { before, after } => write!(
                formatter,
                "the reports have different schema versions: before is schema_version {before}, \
                 after is schema_version {after}; make both reports with the same torchscan \
                 version so that they share one schema version"
            ),
            CompareError::ModeMismatch { before, after } => write!(
                formatter,
                "the analysis modes differ: before is `{}`, after is `{}`; analyse both models \
                 in the same mode (both `full` or both `structure`)",
                mode_word(*before),
                mode_word(*after)
            ),
            CompareError::MethodMismatch {
                metric,
                before,
                after,
            } => write!(
                formatter,
                "the `{metric}` method differs: before `{before}`, after `{after}`; the numbers \
                 are not comparable, so analyse both models with the same torchscan version"
            ),
        }
    }
}

impl std::error::Error for CompareError {}

/// Why [`compare_report_texts`] or [`compare_reports_json`] gave no diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareFailure {
    /// One or both inputs are not valid reports: every problem of each side, with its JSON path.
    Invalid {
        /// Problems of the report before (empty when it is valid).
        before: Vec<Problem>,
        /// Problems of the report after (empty when it is valid).
        after: Vec<Problem>,
    },
    /// Both inputs are valid, but they cannot be compared.
    Refused(CompareError),
    /// The diff made from two valid reports fails validation: a bug in torchscan, never the
    /// input's fault.
    Internal(Vec<Problem>),
}

impl CompareFailure {
    /// The problems of an [`CompareFailure::Invalid`] failure, each path prefixed with its side:
    /// `before:$.totals.parameters`. Empty for the other variants.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            CompareFailure::Invalid { before, after } => {
                [(Side::Before, before), (Side::After, after)]
                    .into_iter()
                    .flat_map(|(side, problems)| {
                        problems.iter().map(move |problem| problem.on_side(side))
                    })
                    .collect()
            }
            CompareFailure::Refused(_) | CompareFailure::Internal(_) => Vec::new(),
        }
    }
}

impl fmt::Display for CompareFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareFailure::Invalid { .. } => {
                let problems = self.problems();
                let count = problems.len();
                write!(formatter, "invalid input ({}):", plural(count, "problem"))?;
                for problem in problems {
                    write!(formatter, "\n  {problem}")?;
                }
                Ok(())
            }
            CompareFailure::Refused(error) => write!(formatter, "cannot compare: {error}"),
            CompareFailure::Internal(problems) => {
                write!(
                    formatter,
                    "internal error: the diff fails validation (please report this bug):"
                )?;
                for problem in problems {
                    write!(formatter, "\n  {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CompareFailure {}

impl From<CompareError> for CompareFailure {
    fn from(error: CompareError) -> Self {
        CompareFailure::Refused(error)
    }
}

/// Checks that the two analyses measure the same things: same mode, same estimate methods.
fn check_comparable(before: &AnalysisReport, after: &AnalysisReport) -> Result<(), CompareError> {
    if before.mode != after.mode {
        return Err(CompareError::ModeMismatch {
            before: before.mode,
            after: after.mode,
        });
    }
    for (metric, before_method, after_method) in [
        (
            "module_flops",
            &before.totals.module_flops.method,
            &after.totals.module_flops.method,
        ),
        (
            "operator_flops",
            &before.operator_flops.total.method,
            &after.operator_flops.total.method,
        ),
    ] {
        if before_method != after_method {
            return Err(CompareError::MethodMismatch {
                metric,
                before: before_method.clone(),
                after: after_method.clone(),
            });
        }
    }
    Ok(())
}

/// Scope of the `shared_tensors` count on each side of a diff.
const SHARED_SCOPE: &str = "tensors reached under more than one name or module, each counted once";
/// Method of the `shared_tensors` count.
const SHARED_METHOD: &str = "tensor identity across the model's parameters and buffers";

/// A total of element counts: always complete.
fn count_delta(before: u64, after: u64) -> TotalDelta {
    let (b, a) = (before as f64, after as f64);
    TotalDelta {
        unit: "count".to_owned(),
        status: MetricStatus::Complete,
        before: MetricResult::complete(b, "count", SHARED_SCOPE, SHARED_METHOD),
        after: MetricResult::complete(a, "count", SHARED_SCOPE, SHARED_METHOD),
        delta: Some(a - b),
        reason: None,
    }
}

/// The value of a side when it is complete.
fn complete_value(metric: &MetricResult) -> Option<f64> {
    match metric.status {
        MetricStatus::Complete => metric.value,
        MetricStatus::Partial | MetricStatus::Unavailable => None,
    }
}

/// Why a side is not complete, for the `reason` of a total: `before is partial: <reason>`.
fn side_reason(side: Side, metric: &MetricResult) -> Option<String> {
    match metric.status {
        MetricStatus::Complete if metric.value.is_some() => None,
        MetricStatus::Complete => Some(format!("{side} states no value")),
        status => Some(match metric.reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => {
                format!("{side} is {}: {reason}", status.as_str())
            }
            _ => format!("{side} is {}", status.as_str()),
        }),
    }
}

/// A total of metrics: the weaker status, a side's value only when it is complete, the delta only
/// when both are.
fn metric_delta(unit: &str, before: &MetricResult, after: &MetricResult) -> TotalDelta {
    let before_value = complete_value(before);
    let after_value = complete_value(after);
    let mut status = before.status.weaker(after.status);
    let delta = match (before_value, after_value) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };
    if delta.is_none() && status == MetricStatus::Complete {
        // A complete metric without a value (invalid input through the typed API): no delta.
        status = MetricStatus::Unavailable;
    }
    let reason = if delta.is_some() {
        None
    } else {
        let reasons: Vec<String> = [
            side_reason(Side::Before, before),
            side_reason(Side::After, after),
        ]
        .into_iter()
        .flatten()
        .collect();
        Some(if reasons.is_empty() {
            "a side is not complete".to_owned()
        } else {
            reasons.join("; ")
        })
    };
    TotalDelta {
        unit: unit.to_owned(),
        status,
        before: before.clone(),
        after: after.clone(),
        delta,
        reason,
    }
}

fn totals(before: &AnalysisReport, after: &AnalysisReport) -> BTreeMap<String, TotalDelta> {
    let (b, a) = (&before.totals, &after.totals);
    let metrics: [(&str, &str, &MetricResult, &MetricResult); 10] = [
        ("parameters", "count", &b.parameters, &a.parameters),
        (
            "trainable_parameters",
            "count",
            &b.trainable_parameters,
            &a.trainable_parameters,
        ),
        (
            "frozen_parameters",
            "count",
            &b.frozen_parameters,
            &a.frozen_parameters,
        ),
        (
            "parameter_bytes",
            "B",
            &b.parameter_bytes,
            &a.parameter_bytes,
        ),
        (
            "buffer_elements",
            "count",
            &b.buffer_elements,
            &a.buffer_elements,
        ),
        ("buffer_bytes", "B", &b.buffer_bytes, &a.buffer_bytes),
        ("module_flops", "FLOPs", &b.module_flops, &a.module_flops),
        (
            "operator_flops",
            "FLOPs",
            &before.operator_flops.total,
            &after.operator_flops.total,
        ),
        ("macs", "MACs", &b.macs, &a.macs),
        ("dmas", "DMAs", &b.dmas, &a.dmas),
    ];
    let mut totals: BTreeMap<String, TotalDelta> = metrics
        .into_iter()
        .map(|(name, unit, b, a)| (name.to_owned(), metric_delta(unit, b, a)))
        .collect();
    totals.insert(
        "shared_tensors".to_owned(),
        count_delta(b.shared_tensors, a.shared_tensors),
    );
    totals
}

/// The parts of a metric that make it change: its status and numbers.
fn metric_key(metric: &MetricResult) -> (MetricStatus, Option<f64>, Option<f64>) {
    (metric.status, metric.value, metric.known_value)
}

/// A call's arguments as text: the positional ones, then `name=...` for each keyword; `(none)`
/// when there is none.
fn arguments_text(arguments: &CallArguments, detailed: bool) -> String {
    let parts: Vec<String> = arguments
        .args
        .iter()
        .map(|meta| value_text(meta, detailed))
        .chain(
            arguments
                .kwargs
                .iter()
                .map(|(name, meta)| format!("{name}={}", value_text(meta, detailed))),
        )
        .collect();
    if parts.is_empty() {
        "(none)".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The texts of two differing values: the shape text, or the detailed text when the shape texts
/// are equal (a device or grad flag changed).
fn differing_texts<T: ?Sized>(
    before: &T,
    after: &T,
    text: impl Fn(&T, bool) -> String,
) -> (String, String) {
    let (b, a) = (text(before, false), text(after, false));
    if b == a {
        (text(before, true), text(after, true))
    } else {
        (b, a)
    }
}

/// The fields of a layer that differ between the two sides, in the layer's field order.
fn layer_changes(before: &Layer, after: &Layer) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    let mut push = |field: &str, (before, after): (String, String)| {
        changes.push(FieldChange {
            field: field.to_owned(),
            before,
            after,
        });
    };
    if before.type_name != after.type_name {
        push("type", (before.type_name.clone(), after.type_name.clone()));
    }
    if before.input != after.input {
        push(
            "input",
            differing_texts(&before.input, &after.input, arguments_text),
        );
    }
    if before.output != after.output {
        push(
            "output",
            differing_texts(&before.output, &after.output, value_text),
        );
    }
    for (field, b, a) in [
        (
            "parameters.trainable",
            before.parameters.trainable,
            after.parameters.trainable,
        ),
        (
            "parameters.frozen",
            before.parameters.frozen,
            after.parameters.frozen,
        ),
        (
            "parameters.bytes",
            before.parameters.bytes,
            after.parameters.bytes,
        ),
        (
            "buffers.elements",
            before.buffers.elements,
            after.buffers.elements,
        ),
        ("buffers.bytes", before.buffers.bytes, after.buffers.bytes),
    ] {
        if b != a {
            push(field, (count_text(b), count_text(a)));
        }
    }
    for (name, b, a) in layer_metrics(&before.metrics, &after.metrics) {
        if metric_key(b) != metric_key(a) {
            push(
                &format!("metrics.{name}"),
                (metric_text_in_unit(b), metric_text_in_unit(a)),
            );
        }
    }
    changes
}

/// The metrics of a layer on both sides, by name, in the layer's order.
fn layer_metrics<'a>(
    before: &'a LayerMetrics,
    after: &'a LayerMetrics,
) -> [(&'static str, &'a MetricResult, &'a MetricResult); 7] {
    [
        ("calls", &before.calls, &after.calls),
        ("module_flops", &before.module_flops, &after.module_flops),
        ("macs", &before.macs, &after.macs),
        ("dmas", &before.dmas, &after.dmas),
        (
            "receptive_field",
            &before.receptive_field,
            &after.receptive_field,
        ),
        (
            "effective_stride",
            &before.effective_stride,
            &after.effective_stride,
        ),
        (
            "effective_padding",
            &before.effective_padding,
            &after.effective_padding,
        ),
    ]
}

/// The layer metrics whose status or numbers changed, each with both sides and, when both are
/// complete, the delta (torchscan 0.2's `metrics` of a changed layer).
fn metric_deltas(before: &Layer, after: &Layer) -> BTreeMap<String, LayerMetricDelta> {
    layer_metrics(&before.metrics, &after.metrics)
        .into_iter()
        .filter(|(_, b, a)| metric_key(b) != metric_key(a))
        .map(|(name, b, a)| {
            let delta = match (complete_value(b), complete_value(a)) {
                (Some(b), Some(a)) => Some(a - b),
                _ => None,
            };
            let status = match (delta, b.status.weaker(a.status)) {
                // A complete side without a value (invalid input through the typed API).
                (None, MetricStatus::Complete) => MetricStatus::Unavailable,
                (_, status) => status,
            };
            let delta_entry = LayerMetricDelta {
                status,
                delta,
                before: b.clone(),
                after: a.clone(),
            };
            (name.to_owned(), delta_entry)
        })
        .collect()
}

fn layer_ref(layer: &Layer) -> LayerRef {
    LayerRef {
        path: layer.path.clone(),
        call_index: layer.call_index,
        type_name: layer.type_name.clone(),
        metrics: Some(layer.metrics.clone()),
    }
}

/// Added, removed and changed layers, matched by (path, call index).
fn layers(
    before: &AnalysisReport,
    after: &AnalysisReport,
) -> (Vec<LayerRef>, Vec<LayerRef>, Vec<LayerChange>) {
    // The first layer of each identity; a valid report has no repeated identity.
    let mut before_layers: BTreeMap<(&str, u64), &Layer> = BTreeMap::new();
    for layer in &before.layers {
        before_layers
            .entry((layer.path.as_str(), layer.call_index))
            .or_insert(layer);
    }
    let mut after_identities = BTreeSet::new();
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for layer in &after.layers {
        let identity = (layer.path.as_str(), layer.call_index);
        if !after_identities.insert(identity) {
            continue;
        }
        match before_layers.get(&identity) {
            None => added.push(layer_ref(layer)),
            Some(previous) => {
                let changes = layer_changes(previous, layer);
                if !changes.is_empty() {
                    changed.push(LayerChange {
                        path: layer.path.clone(),
                        call_index: layer.call_index,
                        type_name: layer.type_name.clone(),
                        changes,
                        metrics: metric_deltas(previous, layer),
                    });
                }
            }
        }
    }
    let mut removed_identities = BTreeSet::new();
    let removed = before
        .layers
        .iter()
        .filter(|layer| {
            let identity = (layer.path.as_str(), layer.call_index);
            !after_identities.contains(&identity) && removed_identities.insert(identity)
        })
        .map(layer_ref)
        .collect();
    (added, removed, changed)
}

/// The differences of context that change numbers: device, dtypes, torch version, training mode.
fn context_differences(before: &Context, after: &Context) -> Vec<String> {
    let mut differences = Vec::new();
    for (field, b, a) in [
        ("device", &before.device, &after.device),
        ("torch_version", &before.torch_version, &after.torch_version),
    ] {
        if b != a {
            differences.push(format!(
                "{field} ({} before, {} after)",
                or_unknown(b.as_deref()),
                or_unknown(a.as_deref())
            ));
        }
    }
    if before.dtypes != after.dtypes {
        differences.push(format!(
            "dtypes ({} before, {} after)",
            dtypes_or(&before.dtypes, ", ", "none"),
            dtypes_or(&after.dtypes, ", ", "none")
        ));
    }
    if before.training_before != after.training_before {
        let mode = |training: Option<bool>| match training {
            Some(true) => "train",
            Some(false) => "eval",
            None => UNKNOWN,
        };
        differences.push(format!(
            "model mode ({} before, {} after)",
            mode(before.training_before),
            mode(after.training_before)
        ));
    }
    differences
}

fn diagnostics(
    before: &AnalysisReport,
    after: &AnalysisReport,
    added: usize,
    removed: usize,
    changed: usize,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let differences = context_differences(&before.context, &after.context);
    if !differences.is_empty() {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::ContextMismatch,
            severity: Severity::Warning,
            metric: None,
            message: format!(
                "the reports differ in {}; differences may come from the setting, not the model",
                differences.join(", ")
            ),
            path: None,
            operator: None,
        });
    }
    if added > 0 || removed > 0 {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::StructureChanged,
            severity: Severity::Info,
            metric: None,
            message: format!(
                "{} added, {} removed, {} changed (layers are matched by module path and call index)",
                plural(added, "layer"),
                plural(removed, "layer"),
                plural(changed, "layer")
            ),
            path: None,
            operator: None,
        });
    }
    diagnostics
}

/// Compares two analyses of a model into a `report_diff` report.
///
/// Pure and deterministic. Refuses reports made in different analysis modes, or whose
/// `module_flops` or `operator_flops` methods differ ([`CompareError`]). The diff's context records
/// only this crate's version; each side keeps its model type and context. Diagnostics:
/// `context_mismatch` (warning) when the device, dtypes, torch version or the model's training
/// mode differ, `structure_changed` (info) when layers were added or removed. See the
/// [module documentation](self) for the rules of totals and layers.
pub fn compare_reports(
    before: &AnalysisReport,
    after: &AnalysisReport,
) -> Result<ReportDiffReport, CompareError> {
    check_comparable(before, after)?;
    let (layers_added, layers_removed, layers_changed) = layers(before, after);
    let diagnostics = diagnostics(
        before,
        after,
        layers_added.len(),
        layers_removed.len(),
        layers_changed.len(),
    );
    let side = |report: &AnalysisReport| DiffSide {
        model_type: report.context.model_type.clone(),
        context: report.context.clone(),
    };
    Ok(ReportDiffReport {
        schema_version: Default::default(),
        kind: ReportDiffKind::Tag,
        context: Context {
            torchscan_version: crate::VERSION.to_owned(),
            ..Context::default()
        },
        diagnostics,
        before: side(before),
        after: side(after),
        totals: totals(before, after),
        layers: LayerChanges {
            added: layers_added,
            removed: layers_removed,
            changed: layers_changed,
        },
    })
}

/// The `schema_version` of report JSON when it is a non-negative integer; `None` when the text is
/// not a JSON object with one (validation then says what is wrong).
fn raw_schema_version(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("schema_version")?
        .as_u64()
}

/// Reads, validates and compares two reports given as JSON text; the diff is validated too.
///
/// In order: the raw `schema_version`s must be equal ([`CompareError::SchemaVersionMismatch`]),
/// both texts must be valid reports ([`CompareFailure::Invalid`], with the problems of each side),
/// both must be `analysis` reports ([`CompareError::NotAnalysis`]) and comparable
/// ([`compare_reports`]). A diff that fails validation is [`CompareFailure::Internal`].
pub fn compare_report_texts(before: &str, after: &str) -> Result<ReportDiffReport, CompareFailure> {
    if let (Some(before_version), Some(after_version)) =
        (raw_schema_version(before), raw_schema_version(after))
        && before_version != after_version
    {
        return Err(CompareError::SchemaVersionMismatch {
            before: before_version,
            after: after_version,
        }
        .into());
    }
    let (before, after) = match (crate::read_report(before), crate::read_report(after)) {
        (Ok(before), Ok(after)) => (before, after),
        (before, after) => {
            return Err(CompareFailure::Invalid {
                before: before.err().unwrap_or_default(),
                after: after.err().unwrap_or_default(),
            });
        }
    };
    let (before, after) = match (before, after) {
        (Report::Analysis(before), Report::Analysis(after)) => (before, after),
        (Report::Analysis(_), other) => {
            return Err(CompareError::NotAnalysis {
                side: Side::After,
                kind: other.kind(),
            }
            .into());
        }
        (other, _) => {
            return Err(CompareError::NotAnalysis {
                side: Side::Before,
                kind: other.kind(),
            }
            .into());
        }
    };
    let diff = Report::ReportDiff(Box::new(compare_reports(&before, &after)?));
    let problems = crate::validate::check_report(&diff);
    match diff {
        Report::ReportDiff(diff) if problems.is_empty() => Ok(*diff),
        _ => Err(CompareFailure::Internal(problems)),
    }
}

/// [`compare_report_texts`], returning the diff as pretty JSON with a trailing newline
/// ([`crate::to_json_text`]).
pub fn compare_reports_json(before: &str, after: &str) -> Result<String, CompareFailure> {
    let diff = compare_report_texts(before, after)?;
    Ok(crate::to_json_text(&Report::ReportDiff(Box::new(diff))))
}
