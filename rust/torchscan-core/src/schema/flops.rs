//! The operator FLOPs view: counted, excluded-by-convention and uncounted operators.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Context, Diagnostic, MetricResult, SchemaVersionV1, whole};

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
    /// No floating-point arithmetic: comparisons, masks, tests of values and checks (`eq`,
    /// `isin`, `logical_and`, `isnan`, `_linalg_check_errors`, ...).
    NoArithmetic,
}

/// An operator with a FLOP formula, and what it counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountedOperator {
    /// Operator name, for example `aten::addmm`.
    pub operator: String,
    /// How many times it ran.
    pub calls: u64,
    /// FLOPs counted over all its calls (a JSON integer when whole).
    #[serde(serialize_with = "whole::serialize")]
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
    pub const ALL: [ExclusionClass; 7] = [
        Self::Elementwise,
        Self::Normalization,
        Self::Pooling,
        Self::Reduction,
        Self::DataMovement,
        Self::Allocation,
        Self::NoArithmetic,
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
            Self::NoArithmetic => "no_arithmetic",
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
            Self::NoArithmetic => {
                "excluded by convention: no floating-point arithmetic (comparisons, masks, checks)"
            }
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
    /// Module path; the empty string is the root module. In a `flops` report made without
    /// `modules=`, every module that ran on the calling thread is named as PyTorch's
    /// `FlopCounterMode` names it: its class name when met outside a named parent, then the
    /// child names (`Sequential.0`).
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
    pub modules: Vec<ModuleOperatorFlops>,
    /// FLOPs of each counted operator, by torchscan 0.2's operator name (`aten.addmm`): the
    /// `counted` list in 0.2's `by_operator` layout.
    #[serde(serialize_with = "whole::map")]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub by_operator: BTreeMap<String, f64>,
    /// Operator FLOPs known for each module (`known_value`, a lower bound where the module's
    /// entry is partial), by torchscan 0.2's module name (`ResNet.layer1.0`): the `modules`
    /// list in 0.2's `by_module` layout.
    #[serde(serialize_with = "whole::map")]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub by_module: BTreeMap<String, f64>,
    /// The operators excluded by convention, by torchscan 0.2's operator name, with their calls
    /// and the reason: the `excluded` list in 0.2's `ignored_operators` layout.
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub ignored_operators: BTreeMap<String, IgnoredOperator>,
    /// Operator calls that ran on other threads while the workload ran (a thread pool, a
    /// `threading.Thread`), found by watching every thread: never counted in, since another
    /// thread may have run them, so a count above zero makes `total` partial. Absent where other
    /// threads were not watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_threads: Option<OtherThreadCalls>,
}

/// What ran on other threads while a dispatch-mode pass counted its own thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtherThreadCalls {
    /// Operator calls on other threads, outermost calls only (a call made inside another, as
    /// `aten::addmm` inside `aten::linear`, is part of it).
    pub calls: u64,
    /// Distinct threads those calls ran on.
    pub threads: u64,
}

/// An operator's name as torchscan 0.2 (and PyTorch's `OpOverloadPacket`) wrote it:
/// `aten::addmm` -> `aten.addmm`.
pub fn legacy_operator_name(operator: &str) -> String {
    operator.replacen("::", ".", 1)
}

/// The class name in a `model_type` (`torchvision.models.resnet.ResNet` -> `ResNet`): its last
/// dotted component, as `type(model).__name__` gives it (`f.<locals>.M` -> `M`).
pub fn class_name(model_type: &str) -> &str {
    model_type.rsplit('.').next().unwrap_or(model_type)
}

/// A module's name as torchscan 0.2 (PyTorch's `FlopCounterMode`) wrote it: the root module's
/// class name, then the path (`ResNet`, `ResNet.layer1.0`). Without a root class (several
/// modules given), the path alone.
pub fn legacy_module_name(root: Option<&str>, path: &str) -> String {
    match root {
        Some(root) if path.is_empty() => root.to_owned(),
        Some(root) => format!("{root}.{path}"),
        None => path.to_owned(),
    }
}

/// torchscan 0.2's three views of an [`OperatorFlops`]: `by_operator`, `by_module` and
/// `ignored_operators`.
pub type LegacyViews = (
    BTreeMap<String, f64>,
    BTreeMap<String, f64>,
    BTreeMap<String, IgnoredOperator>,
);

impl OperatorFlops {
    /// What `by_operator`, `by_module` and `ignored_operators` must be, from `counted`,
    /// `modules` and `excluded`; `root` names the module the paths start from: the
    /// [`class_name`] of the context's `model_type`.
    pub fn legacy_views(&self, root: Option<&str>) -> LegacyViews {
        let by_operator = self
            .counted
            .iter()
            .map(|op| (legacy_operator_name(&op.operator), op.flops))
            .collect();
        let by_module = self
            .modules
            .iter()
            .filter_map(|entry| {
                let known = entry.flops.known_value?;
                Some((legacy_module_name(root, &entry.path), known))
            })
            .collect();
        let ignored = self
            .excluded
            .iter()
            .map(|op| {
                let entry = IgnoredOperator {
                    calls: op.calls,
                    reason: op.class.reason().to_owned(),
                };
                (legacy_operator_name(&op.operator), entry)
            })
            .collect();
        (by_operator, by_module, ignored)
    }
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
    /// `operator_flops.by_operator`, repeated at the top where torchscan 0.2's callers read it.
    #[serde(serialize_with = "whole::map")]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub by_operator: BTreeMap<String, f64>,
    /// `operator_flops.by_module`, repeated at the top.
    #[serde(serialize_with = "whole::map")]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub by_module: BTreeMap<String, f64>,
    /// `operator_flops.ignored_operators`, repeated at the top.
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub ignored_operators: BTreeMap<String, IgnoredOperator>,
}

#[cfg(test)]
mod tests {
    use super::{ExclusionClass, class_name};

    #[test]
    fn a_model_type_names_its_class_by_the_last_component() {
        assert_eq!(class_name("torchvision.models.resnet.ResNet"), "ResNet");
        assert_eq!(class_name("tests.test_flops.f.<locals>.M"), "M");
        assert_eq!(class_name("ResNet"), "ResNet");
        assert_eq!(class_name(""), "");
    }

    #[test]
    fn every_class_is_named_as_reports_name_it() {
        for class in ExclusionClass::ALL {
            let json = serde_json::to_string(&class).expect("a class serializes");
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert!(class.reason().starts_with("excluded by convention: "));
        }
    }
}
