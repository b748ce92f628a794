//! The `report_diff` report of `compare_reports`: two analyses of a model, layer by layer.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analysis::LayerMetrics;
use super::common::{Context, Diagnostic, MetricResult, MetricStatus, SchemaVersionV1, whole};

kind_tag!(ReportDiffKind, "report_diff");

/// The change of one model-wide total; the total's name is its key in `totals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TotalDelta {
    /// Its unit.
    pub unit: String,
    /// The weaker status of the two sides; the delta is given only when `complete`.
    pub status: MetricStatus,
    /// The total before, as its report states it (torchscan 0.2's layout).
    pub before: MetricResult,
    /// The total after, as its report states it.
    pub after: MetricResult,
    /// `after.value - before.value`; null unless both sides are complete. Every total and layer
    /// metric of an analysis counts whole things, so a whole delta is a JSON integer.
    #[serde(serialize_with = "whole::option")]
    pub delta: Option<f64>,
    /// Why the delta is null.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A layer named by its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerRef {
    /// Full module path.
    pub path: String,
    /// Call index.
    pub call_index: u64,
    /// Class name.
    pub type_name: String,
    /// The layer's metrics, as its report has them (torchscan 0.2's snapshot); absent in diffs
    /// written without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<LayerMetrics>,
}

/// The change of one layer metric, in torchscan 0.2's layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerMetricDelta {
    /// The weaker status of the two sides; the delta is given only when `complete`.
    pub status: MetricStatus,
    /// `after.value - before.value`; null unless both sides are complete. Every total and layer
    /// metric of an analysis counts whole things, so a whole delta is a JSON integer.
    #[serde(serialize_with = "whole::option")]
    pub delta: Option<f64>,
    /// The metric before.
    pub before: MetricResult,
    /// The metric after.
    pub after: MetricResult,
}

/// One field of a layer that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldChange {
    /// The field, for example `output` or `parameters`.
    pub field: String,
    /// The value before, as text.
    pub before: String,
    /// The value after, as text.
    pub after: String,
}

/// A layer present on both sides whose fields changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerChange {
    /// Full module path.
    pub path: String,
    /// Call index.
    pub call_index: u64,
    /// Class name after the change.
    pub type_name: String,
    /// The changed fields (at least one).
    pub changes: Vec<FieldChange>,
    /// The layer metrics that changed, by name (torchscan 0.2's `metrics`).
    #[serde(default)]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub metrics: BTreeMap<String, LayerMetricDelta>,
}

/// The layers of a diff, matched by identity (module path plus call index).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerChanges {
    /// Layers only in the report after.
    pub added: Vec<LayerRef>,
    /// Layers only in the report before.
    pub removed: Vec<LayerRef>,
    /// Layers in both whose fields changed.
    pub changed: Vec<LayerChange>,
}

/// One side of a diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffSide {
    /// The analysed model's class name.
    pub model_type: Option<String>,
    /// The side's context.
    pub context: Context,
}

/// The report of `compare_reports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportDiffReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `report_diff`.
    pub kind: ReportDiffKind,
    /// Where and with what the diff was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// The report before the change.
    pub before: DiffSide,
    /// The report after the change.
    pub after: DiffSide,
    /// Model-wide totals, before and after, by the analysis report's total names (sorted).
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub totals: BTreeMap<String, TotalDelta>,
    /// Layers added, removed and changed.
    pub layers: LayerChanges,
}

/// The names of the totals, in the order of the analysis report's `totals` (the order renderers
/// show them in; the diff's `totals` map is sorted by name).
pub const TOTAL_ORDER: [&str; 11] = [
    "parameters",
    "trainable_parameters",
    "frozen_parameters",
    "parameter_bytes",
    "buffer_elements",
    "buffer_bytes",
    "shared_tensors",
    "module_flops",
    "operator_flops",
    "macs",
    "dmas",
];

/// The diff's totals in [`TOTAL_ORDER`], then any other name in sorted order.
pub fn ordered_totals(totals: &BTreeMap<String, TotalDelta>) -> Vec<(&str, &TotalDelta)> {
    let known = TOTAL_ORDER
        .iter()
        .filter_map(|name| totals.get_key_value(*name));
    let others = totals
        .iter()
        .filter(|(name, _)| !TOTAL_ORDER.contains(&name.as_str()));
    known
        .chain(others)
        .map(|(name, delta)| (name.as_str(), delta))
        .collect()
}
