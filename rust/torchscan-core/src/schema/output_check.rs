//! The `output_check` report of `check_outputs`: does a candidate's output match the baseline's?

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, SchemaVersionV1, TensorMeta};

kind_tag!(OutputCheckKind, "output_check");

/// A place where the two outputs' structures differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StructureDifference {
    /// Where, for example `[1].logits`; the empty string is the output itself.
    pub path: String,
    /// What the baseline has there, for example `tuple of 2`.
    pub baseline: String,
    /// What the candidate has there.
    pub candidate: String,
}

/// The comparison of one tensor leaf. Never its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeafCheck {
    /// Where, for example `[0]`; the empty string is the output itself.
    pub path: String,
    /// Whether this leaf is within tolerance with matching shape, and matching dtype unless the
    /// report's `check_dtype` is false.
    pub passed: bool,
    /// The baseline leaf's metadata.
    pub baseline: TensorMeta,
    /// The candidate leaf's metadata.
    pub candidate: TensorMeta,
    /// Elements compared (0 when shapes differ).
    pub elements: u64,
    /// Elements outside `atol + rtol * |baseline|`.
    pub mismatched_elements: u64,
    /// Largest absolute difference; null when shapes differ or nothing was compared.
    pub max_abs_error: Option<f64>,
    /// Largest relative difference where the baseline is non-zero; null when undefined.
    pub max_rel_error: Option<f64>,
}

/// The report of `check_outputs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputCheckReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `output_check`.
    pub kind: OutputCheckKind,
    /// Where and with what the report was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// True when the structures match and every leaf passed.
    pub passed: bool,
    /// How leaves were compared.
    pub method: String,
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Whether NaNs in the same places count as equal.
    pub equal_nan: bool,
    /// Whether a leaf whose dtype differs fails (`check_outputs(check_dtype=...)`); when false,
    /// leaves of different dtypes are compared by value. Absent in reports written before it was
    /// recorded, which checked dtypes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_dtype: Option<bool>,
    /// Whether both outputs have the same nesting, keys and leaf kinds.
    pub structure_matches: bool,
    /// Where the structures differ.
    pub structure_differences: Vec<StructureDifference>,
    /// Every tensor leaf found at the same place on both sides.
    pub leaves: Vec<LeafCheck>,
}
