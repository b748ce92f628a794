//! The operator FLOPs view: counted, excluded-by-convention and uncounted operators.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, MetricResult, SchemaVersionV1};

kind_tag!(FlopsKind, "flops");

/// Why an executed operator is not counted by the method's convention.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionClass {
    /// Elementwise arithmetic and activations (`add`, `relu`, ...).
    Elementwise,
    /// Normalisation (`native_batch_norm`, `native_layer_norm`, ...).
    Normalization,
    /// Pooling (`max_pool2d`, `avg_pool2d`, ...).
    Pooling,
    /// Reductions (`sum`, `mean`, `softmax`, ...).
    Reduction,
    /// Data movement and views (`view`, `cat`, `copy_`, `transpose`, ...).
    DataMovement,
    /// Allocation (`empty`, `zeros`, ...).
    Allocation,
}

/// An operator with a FLOP formula, and what it counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountedOperator {
    /// Operator name, for example `aten::addmm`.
    pub operator: String,
    /// How many times it ran.
    pub calls: u64,
    /// FLOPs counted over all its calls.
    pub flops: f64,
}

/// An operator excluded by the method's convention; listed, and it does not make the total partial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExcludedOperator {
    /// Operator name, for example `aten::relu`.
    pub operator: String,
    /// How many times it ran.
    pub calls: u64,
    /// The convention that excludes it.
    pub class: ExclusionClass,
}

impl ExclusionClass {
    /// Every class, in declaration order.
    pub const ALL: [ExclusionClass; 6] = [
        Self::Elementwise,
        Self::Normalization,
        Self::Pooling,
        Self::Reduction,
        Self::DataMovement,
        Self::Allocation,
    ];

    /// The class's name in reports, for example `data_movement`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Elementwise => "elementwise",
            Self::Normalization => "normalization",
            Self::Pooling => "pooling",
            Self::Reduction => "reduction",
            Self::DataMovement => "data_movement",
            Self::Allocation => "allocation",
        }
    }

    /// Why an operator of this class is not counted, as text.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Elementwise => "excluded by convention: elementwise arithmetic and activations",
            Self::Normalization => "excluded by convention: normalisation",
            Self::Pooling => "excluded by convention: pooling",
            Self::Reduction => "excluded by convention: reductions",
            Self::DataMovement => "excluded by convention: data movement and views",
            Self::Allocation => "excluded by convention: allocation",
        }
    }
}

/// An operator excluded by convention, in torchscan 0.2's `ignored_operators` layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IgnoredOperator {
    /// How many times it ran.
    pub calls: u64,
    /// The convention that excludes it, as text (see [`ExclusionClass::reason`]).
    pub reason: String,
}

/// An operator without a formula: the total is partial and a diagnostic names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UncountedOperator {
    /// Operator name, for example `mylib::fused_op`.
    pub operator: String,
    /// How many times it ran.
    pub calls: u64,
}

/// Operator FLOPs attributed to one module (including its children).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModuleOperatorFlops {
    /// Module path; the empty string is the root module.
    pub path: String,
    /// The module's operator FLOPs, partial when an uncounted operator ran inside it.
    pub flops: MetricResult,
}

/// Every executed operator, each in exactly one class, and the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperatorFlops {
    /// Total FLOPs (unit `FLOPs`): complete when no operator is uncounted.
    pub total: MetricResult,
    /// Operators with a formula, sorted by name.
    pub counted: Vec<CountedOperator>,
    /// Operators excluded by convention, sorted by name.
    pub excluded: Vec<ExcludedOperator>,
    /// Operators without a formula, sorted by name.
    pub uncounted: Vec<UncountedOperator>,
    /// Breakdown by module, in execution order of first call.
    pub by_module: Vec<ModuleOperatorFlops>,
}

/// Operator FLOPs of any zero-argument callable (`measure_flops`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlopReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `flops`.
    pub kind: FlopsKind,
    /// Where and with what the report was made.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// The callable's qualified name, when it has one.
    pub callable: Option<String>,
    /// The operator FLOPs total (unit `FLOPs`), repeated from `operator_flops.total`: where
    /// torchscan 0.2's callers read it.
    pub total: MetricResult,
    /// The operator FLOPs view.
    pub operator_flops: OperatorFlops,
    /// FLOPs of each counted operator, by name: `operator_flops.counted` in torchscan 0.2's
    /// `by_operator` layout.
    pub by_operator: BTreeMap<String, f64>,
    /// Operator FLOPs known for each module path (`known_value`, a lower bound where the
    /// module's entry is partial): `operator_flops.by_module` in torchscan 0.2's layout.
    pub by_module: BTreeMap<String, f64>,
    /// The operators excluded by convention, by name: `operator_flops.excluded` in torchscan
    /// 0.2's `ignored_operators` layout.
    pub ignored_operators: BTreeMap<String, IgnoredOperator>,
}

#[cfg(test)]
mod tests {
    use super::ExclusionClass;

    #[test]
    fn every_class_is_named_as_reports_name_it() {
        for class in ExclusionClass::ALL {
            let json = serde_json::to_string(&class).expect("a class serializes");
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert!(class.reason().starts_with("excluded by convention: "));
        }
    }
}
