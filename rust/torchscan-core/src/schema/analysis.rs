//! The `analysis` report: one evaluation forward of a model, layer by layer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::common::{Context, Diagnostic, MetricResult, MetricStatus, SchemaVersionV1, ValueMeta};
use super::flops::OperatorFlops;

kind_tag!(AnalysisKind, "analysis");

/// What an analysis computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisMode {
    /// Shapes, parameters, storage, module estimates and operator FLOPs.
    Full,
    /// Shapes, parameters and storage only; estimates are unavailable (`not requested`).
    Structure,
}

/// Model-wide totals. Storage is the size of parameters and buffers, not peak memory.
///
/// The names and the layout are those of torchscan 0.2's `totals`, so its callers keep working:
/// every total is a [`MetricResult`] except `shared_tensors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisTotals {
    /// Parameter elements, each storage element counted once: a shared tensor or views that
    /// overlap in one storage count what they cover together (unit `count`, always complete).
    pub parameters: MetricResult,
    /// Elements of parameters that require grad (unit `count`, always complete).
    pub trainable_parameters: MetricResult,
    /// Elements of parameters that do not require grad (unit `count`, always complete).
    pub frozen_parameters: MetricResult,
    /// Bytes of parameter storage, each storage byte counted once (unit `B`).
    pub parameter_bytes: MetricResult,
    /// Buffer elements, each storage element counted once (unit `count`, always complete).
    pub buffer_elements: MetricResult,
    /// Bytes of buffer storage, each storage byte counted once (unit `B`).
    pub buffer_bytes: MetricResult,
    /// Groups of parameters or buffers counted once: a tensor reachable under more than one
    /// name, or tensors that overlap in one storage (a transposed tie).
    pub shared_tensors: u64,
    /// Sum of module FLOP estimates (unit `FLOPs`); never added to operator FLOPs.
    pub module_flops: MetricResult,
    /// Operator FLOPs of the forward (unit `FLOPs`): a copy of `operator_flops.total`.
    pub operator_flops: MetricResult,
    /// Sum of module multiply-accumulate estimates (unit `MACs`).
    pub macs: MetricResult,
    /// Sum of module memory-access estimates (unit `DMAs`).
    pub dmas: MetricResult,
    /// Bytes of the tensors among the forward's inputs, positional and keyword, nested ones
    /// included: elements times element size of each (unit `B`; torchinfo's "Input size").
    /// Absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<MetricResult>,
    /// PyTorch's tensor memory peak of a second evaluation forward, measured when asked for
    /// (`tensor_memory=True`; unit `B`), where torchinfo estimates one. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_memory_peak: Option<MetricResult>,
}

/// Receptive field, effective stride and padding per spatial dimension along convolution chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceptiveField {
    /// `complete`, `partial` (lower bounds) or `unavailable`.
    pub status: MetricStatus,
    /// Receptive field size per spatial dimension, in input elements.
    pub size: Option<Vec<f64>>,
    /// Effective stride per spatial dimension.
    pub stride: Option<Vec<f64>>,
    /// Effective padding per spatial dimension.
    pub padding: Option<Vec<f64>>,
    /// Why it is partial or unavailable.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The arguments of a call: positional and keyword, as metadata.
///
/// The layout is torchscan 0.2's (`input["args"]`, `input["kwargs"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallArguments {
    /// Positional arguments' metadata, in order.
    pub args: Vec<ValueMeta>,
    /// Keyword arguments' metadata, by name.
    #[serde(default)]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub kwargs: BTreeMap<String, ValueMeta>,
}

/// Where the model's inputs came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// Random tensors of the shapes given as `input_shape`, with a batch of one.
    Generated,
    /// The caller's `args` and `kwargs`.
    Provided,
}

/// The model's inputs: where they came from and their metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelInputs {
    /// `generated` (from `input_shape`) or `provided` (`args` and `kwargs`).
    pub source: InputSource,
    /// Positional inputs' metadata, in order.
    pub args: Vec<ValueMeta>,
    /// Keyword inputs' metadata, by name.
    #[serde(default)]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub kwargs: BTreeMap<String, ValueMeta>,
}

/// A layer's own parameters: counted at the first layer that holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerParameters {
    /// Elements of the module's own parameters that require grad, not counted at an earlier layer.
    pub trainable: u64,
    /// Elements of the module's own parameters that do not require grad, not counted earlier.
    pub frozen: u64,
    /// Bytes of those parameters.
    pub bytes: u64,
    /// Whether some of the module's own parameters were counted at an earlier layer (another
    /// module holding the same tensor or a view overlapping its storage, or an earlier call of
    /// this module).
    pub shared: bool,
    /// The parameters under the module: its own and those of every module under it by module
    /// path, called in the forward or not, each storage element once. Present on layers of
    /// modules with child modules (a leaf's total is its own count); absent in reports written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<ParameterTotal>,
}

/// The parameters under a module with children: the distinct storage covered by the parameters
/// of the module and of every module under it, each element once (as the model's totals count
/// them; the root's total is the model's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParameterTotal {
    /// Elements of those parameters that require grad.
    pub trainable: u64,
    /// Elements of those parameters that do not require grad.
    pub frozen: u64,
    /// Bytes of their storage, each byte once.
    pub bytes: u64,
}

/// A layer's own buffers: counted at the first layer that holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerBuffers {
    /// Elements of the module's own buffers not counted at an earlier layer.
    pub elements: u64,
    /// Bytes of those buffers.
    pub bytes: u64,
    /// Whether some of the module's own buffers were counted at an earlier layer.
    pub shared: bool,
}

/// A layer's module estimates, and its receptive field as single numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerMetrics {
    /// This record's calls (unit `count`): always complete with value 1, one record per call
    /// (torchscan 0.2's `calls`).
    pub calls: MetricResult,
    /// Module FLOP estimate for this call (unit `FLOPs`).
    pub module_flops: MetricResult,
    /// Module multiply-accumulate estimate for this call (unit `MACs`).
    pub macs: MetricResult,
    /// Module memory-access estimate for this call (unit `DMAs`).
    pub dmas: MetricResult,
    /// The receptive field size (unit `count`): complete when every spatial dimension has the
    /// same, else unavailable (the layer's `receptive_field` has one per dimension).
    pub receptive_field: MetricResult,
    /// The effective stride (unit `count`), as `receptive_field`.
    pub effective_stride: MetricResult,
    /// The effective padding (unit `count`), as `receptive_field`.
    pub effective_padding: MetricResult,
}

/// One call of one module.
///
/// The layout is torchscan 0.2's, so its callers keep reading `layer["type"]`,
/// `layer["parameters"]["trainable"]` or `layer["metrics"]["macs"]["value"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Full module path; the empty string is the root module.
    pub path: String,
    /// 0 for the module's first call, 1 for its second, ...
    pub call_index: u64,
    /// The last component of `path`; for the root, its class name in lower case.
    pub name: String,
    /// Nesting depth: 0 for the root, otherwise the number of components of `path`.
    pub depth: u64,
    /// The module's class name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// What the call received.
    pub input: CallArguments,
    /// Output metadata.
    pub output: ValueMeta,
    /// The module's own parameters (not its children's), counted once, and for a module with
    /// children the total under it.
    pub parameters: LayerParameters,
    /// The module's own buffers (not its children's), counted once.
    pub buffers: LayerBuffers,
    /// Module estimates for this call.
    pub metrics: LayerMetrics,
    /// Receptive field at this layer's output.
    pub receptive_field: ReceptiveField,
    /// The kernel size of a convolution or pooling module, as the module holds it (one number
    /// per spatial dimension, or one for all); absent for other modules and in reports written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_size: Option<Vec<u64>>,
}

/// The report of `crawl_module` and `summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisReport {
    /// Always 1 for this schema.
    pub schema_version: SchemaVersionV1,
    /// Always `analysis`.
    pub kind: AnalysisKind,
    /// Where and with what the report was made, including the model type and its training flag.
    pub context: Context,
    /// Findings for programs and people.
    pub diagnostics: Vec<Diagnostic>,
    /// `full` or `structure`.
    pub mode: AnalysisMode,
    /// The model's inputs.
    pub inputs: ModelInputs,
    /// Model-wide totals.
    pub totals: AnalysisTotals,
    /// Every module call, in call order.
    pub layers: Vec<Layer>,
    /// Operator FLOPs of the same forward; a separate view, never added to module estimates.
    pub operator_flops: OperatorFlops,
}
