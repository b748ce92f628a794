//! The `peak_memory` report of `measure_peak_memory`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, MetricResult, SchemaVersionV1};

kind_tag!(PeakMemoryKind, "peak_memory");

/// The report of `measure_peak_memory`: tensor memory of one call, scopes kept apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeakMemoryReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `peak_memory`.
    pub kind: PeakMemoryKind,
    /// Where and with what the report was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// The callable's qualified name, when it has one.
    pub callable: Option<String>,
    /// Tensor memory live when the call started (unit `B`), the baseline of the peak.
    pub baseline: MetricResult,
    /// Peak PyTorch tensor memory during the call (unit `B`), baseline included.
    pub tensor_memory_peak: MetricResult,
    /// Peak accelerator allocator reserved bytes (unit `B`); unavailable on CPU.
    pub allocator_reserved_peak: MetricResult,
}
