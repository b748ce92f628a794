//! Types shared by every report kind: the schema version, metrics, diagnostics, context and value metadata.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The schema version this build writes. Readers dispatch on it before anything else.
pub const SCHEMA_VERSION: u64 = 1;

/// Every `schema_version` this build can read.
pub const READABLE_SCHEMA_VERSIONS: &[u64] = &[1];

/// The `schema_version` field of a version 1 report: always the integer `1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchemaVersionV1;

impl Serialize for SchemaVersionV1 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(SCHEMA_VERSION)
    }
}

impl<'de> Deserialize<'de> for SchemaVersionV1 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = u64::deserialize(deserializer)?;
        if version == SCHEMA_VERSION {
            Ok(SchemaVersionV1)
        } else {
            Err(serde::de::Error::custom(format!(
                "schema_version {version} where 1 was expected"
            )))
        }
    }
}

impl JsonSchema for SchemaVersionV1 {
    fn schema_name() -> Cow<'static, str> {
        "SchemaVersionV1".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The report schema version; this schema describes version 1.",
            "type": "integer",
            "const": 1
        })
    }
}

/// Whether a metric's number is the whole answer, a lower bound, or missing.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MetricStatus {
    /// Everything in scope was measured or counted: `value == known_value`.
    Complete,
    /// Some work in scope could not be counted: `value` is null and `known_value` is a lower bound.
    Partial,
    /// No number: `value` and `known_value` are null and `reason` says why.
    Unavailable,
}

impl MetricStatus {
    /// The lowercase name used in JSON and in the text renderer.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricStatus::Complete => "complete",
            MetricStatus::Partial => "partial",
            MetricStatus::Unavailable => "unavailable",
        }
    }

    /// The weaker of two statuses (`unavailable` < `partial` < `complete`).
    pub fn weaker(self, other: MetricStatus) -> MetricStatus {
        // The enum order is complete < partial < unavailable, so the weaker is the larger.
        self.max(other)
    }
}

/// One number with its status, unit, scope and method.
///
/// Invariants (checked by the validator): `complete` has `value == known_value`, both set;
/// `partial` has `value` null, `known_value` set and a `reason`; `unavailable` has both null and a
/// `reason`.
/// Numbers are finite and non-negative; zero is a value, never a stand-in for a missing one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricResult {
    /// `complete`, `partial` or `unavailable`.
    pub status: MetricStatus,
    /// The whole value; set only when `status` is `complete`.
    pub value: Option<f64>,
    /// The value known so far: equal to `value` when complete, a lower bound when partial.
    pub known_value: Option<f64>,
    /// SI base unit: `s`, `B`, `FLOPs`, `MACs`, `DMAs`, `count`, `ratio` or `<work_unit>/s`.
    pub unit: String,
    /// What the number covers, for example `PyTorch tracked CPU tensors`.
    pub scope: String,
    /// How the number was obtained.
    pub method: String,
    /// Why the metric is partial or unavailable (required for both); null when complete.
    #[serde(default)]
    pub reason: Option<String>,
}

impl MetricResult {
    /// A complete metric.
    pub fn complete(value: f64, unit: &str, scope: &str, method: &str) -> Self {
        MetricResult {
            status: MetricStatus::Complete,
            value: Some(value),
            known_value: Some(value),
            unit: unit.to_owned(),
            scope: scope.to_owned(),
            method: method.to_owned(),
            reason: None,
        }
    }

    /// An unavailable metric with its reason.
    pub fn unavailable(unit: &str, scope: &str, method: &str, reason: &str) -> Self {
        MetricResult {
            status: MetricStatus::Unavailable,
            value: None,
            known_value: None,
            unit: unit.to_owned(),
            scope: scope.to_owned(),
            method: method.to_owned(),
            reason: Some(reason.to_owned()),
        }
    }
}

/// The fixed units a metric may carry, besides throughput units of the form `<work_unit>/s`.
pub const FIXED_UNITS: &[&str] = &["s", "B", "FLOPs", "MACs", "DMAs", "count", "ratio"];

/// Whether `name` may be used as a work unit (`samples`, `tokens`, `images`, ...).
pub fn is_valid_work_unit(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(first) if first.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= 64
}

/// Whether `unit` is one of [`FIXED_UNITS`] or a throughput unit `<work_unit>/s`.
pub fn is_known_unit(unit: &str) -> bool {
    FIXED_UNITS.contains(&unit) || unit.strip_suffix("/s").is_some_and(is_valid_work_unit)
}

/// How much a diagnostic matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Context a reader should know; the numbers stand.
    Info,
    /// The numbers stand but need care (noise, partial coverage, mismatched settings).
    Warning,
    /// Something requested could not be measured or a check failed.
    Error,
}

impl Severity {
    /// The lowercase name used in JSON and in the text renderer.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The closed set of diagnostic codes. Codes are for programs; messages are for people.
///
/// `docs/report-schema.md` documents every code; adding one is a schema change.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCode {
    /// An executed operator has no FLOP formula; the operator FLOPs total is partial.
    UncountedOperator,
    /// A module has no estimate formula; module estimates are partial.
    ModuleWithoutFormula,
    /// Receptive field, stride or padding cannot be known along this path (branches, unknown layers).
    ReceptiveFieldUnknown,
    /// Parameters or buffers are shared between modules and were counted once.
    SharedTensors,
    /// A requested metric is unavailable on the measured device.
    UnsupportedOnDevice,
    /// Timing IQR/median reached 0.10.
    TimingNoise,
    /// Timing IQR/median reached 0.25: latency differences below that are not meaningful.
    HighTimingNoise,
    /// Fewer timed blocks than requested could be run within the time budget.
    FewBlocks,
    /// The callable was compiled with `torch.compile`; dispatch-mode passes ran last.
    CompiledCallable,
    /// The workload could not be imported by the child process.
    WorkloadNotImportable,
    /// The child process for process RSS crashed or exited with an error.
    ChildProcessFailed,
    /// The child process for process RSS exceeded its time limit.
    ChildProcessTimeout,
    /// The profiler pass failed or was cut short.
    ProfilerFailed,
    /// Compared reports differ in device, threads, dtypes, versions or flags.
    ContextMismatch,
    /// The output check failed, so comparison deltas are withheld.
    OutputCheckFailed,
    /// No output check was given, so the comparison is unchecked.
    Unchecked,
    /// An output leaf differs in shape, dtype or device.
    OutputMetadataMismatch,
    /// The model's structure differs between the compared reports.
    StructureChanged,
    /// Anything else worth a reader's attention, explained in the message.
    Note,
}

/// A finding about a report, for programs (`code`) and for people (`message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diagnostic {
    /// One of the documented codes.
    pub code: DiagnosticCode,
    /// `info`, `warning` or `error`.
    pub severity: Severity,
    /// The metric the diagnostic concerns, when it concerns one.
    #[serde(default)]
    pub metric: Option<String>,
    /// A sentence for people.
    pub message: String,
    /// The module path concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The operator concerned, when there is one (for example `aten::my_op`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
}

/// PyTorch and backend settings that change numbers, recorded as they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flags {
    /// `torch.is_grad_enabled()` when the report was made.
    #[serde(default)]
    pub grad_enabled: Option<bool>,
    /// `torch.is_inference_mode_enabled()` when the report was made.
    #[serde(default)]
    pub inference_mode: Option<bool>,
    /// `torch.backends.cuda.matmul.allow_tf32`.
    #[serde(default)]
    pub tf32_matmul: Option<bool>,
    /// `torch.backends.cudnn.allow_tf32`.
    #[serde(default)]
    pub tf32_cudnn: Option<bool>,
    /// `torch.backends.cudnn.benchmark`.
    #[serde(default)]
    pub cudnn_benchmark: Option<bool>,
    /// `torch.backends.cudnn.deterministic`.
    #[serde(default)]
    pub cudnn_deterministic: Option<bool>,
    /// `torch.get_float32_matmul_precision()`.
    #[serde(default)]
    pub float32_matmul_precision: Option<String>,
    /// `torch.are_deterministic_algorithms_enabled()`.
    #[serde(default)]
    pub deterministic_algorithms: Option<bool>,
}

/// Where and with what a report was made. Never tensor values, file paths or reprs of user objects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The torchscan version that wrote the report.
    pub torchscan_version: String,
    /// `torch.__version__`, when torch was involved.
    #[serde(default)]
    pub torch_version: Option<String>,
    /// The Python version, when Python was involved.
    #[serde(default)]
    pub python_version: Option<String>,
    /// Operating system and architecture, for example `Linux-6.1-x86_64`.
    #[serde(default)]
    pub platform: Option<String>,
    /// The CPU model name.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// The device measured or analysed, for example `cpu` or `cuda:0`.
    #[serde(default)]
    pub device: Option<String>,
    /// The device's name, for example `NVIDIA H200`.
    #[serde(default)]
    pub device_name: Option<String>,
    /// `torch.get_num_threads()`, recorded, never changed.
    #[serde(default)]
    pub torch_threads: Option<u64>,
    /// `torch.get_num_interop_threads()`.
    #[serde(default)]
    pub torch_interop_threads: Option<u64>,
    /// Thread-related environment variables that were set (`OMP_NUM_THREADS`, `MKL_NUM_THREADS`, ...).
    #[serde(default)]
    pub thread_env: BTreeMap<String, String>,
    /// Settings that change numbers.
    #[serde(default)]
    pub flags: Flags,
    /// Floating-point dtypes involved, for example `float32`.
    #[serde(default)]
    pub dtypes: Vec<String>,
    /// For analyses: the model's class name.
    #[serde(default)]
    pub model_type: Option<String>,
    /// For analyses: the model's training flag before the analysis (it is restored afterwards).
    #[serde(default)]
    pub model_training: Option<bool>,
}

/// Metadata of a value passed to or returned by a module or workload; never its contents.
///
/// Deserialization goes through a flat private struct instead of serde's internally tagged enums, which
/// buffer their content and so lose the JSON path of an error inside a value.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ValueMeta {
    /// A tensor: shape, dtype, device and whether it requires grad.
    Tensor(TensorMeta),
    /// A tuple of values.
    Tuple(SequenceMeta),
    /// A list of values.
    List(SequenceMeta),
    /// A dict of values; keys are recorded as text.
    Dict(MappingMeta),
    /// A dataclass instance: its class name and fields.
    Dataclass(RecordMeta),
    /// A named tuple: its class name and fields.
    NamedTuple(RecordMeta),
    /// `None`.
    None(EmptyMeta),
    /// A Python scalar (`int`, `float`, `bool`, `complex`, `str`): its type only, never its value.
    Scalar(TypeOnlyMeta),
    /// Anything else: its type name only.
    Other(TypeOnlyMeta),
}

/// Tensor metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TensorMeta {
    /// Size of each dimension.
    pub shape: Vec<u64>,
    /// dtype name without the `torch.` prefix, for example `float32`.
    pub dtype: String,
    /// Device, for example `cpu` or `cuda:0`.
    pub device: String,
    /// Whether the tensor requires grad.
    pub requires_grad: bool,
}

/// Items of a tuple or list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequenceMeta {
    /// The items, in order.
    pub items: Vec<ValueMeta>,
}

/// Entries of a dict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingMeta {
    /// The entries, in insertion order.
    pub entries: Vec<NamedValueMeta>,
}

/// Fields of a dataclass or named tuple.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordMeta {
    /// The class name (not its module path).
    pub type_name: String,
    /// The fields, in declaration order.
    pub fields: Vec<NamedValueMeta>,
}

/// A key or field name with its value's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamedValueMeta {
    /// The key or field name as text.
    pub name: String,
    /// The value's metadata.
    pub value: ValueMeta,
}

/// A value recorded by its type name only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeOnlyMeta {
    /// The type name, for example `int`.
    pub type_name: String,
}

/// No further metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyMeta {}

/// The `kind` tag of a [`ValueMeta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ValueKind {
    Tensor,
    Tuple,
    List,
    Dict,
    Dataclass,
    NamedTuple,
    None,
    Scalar,
    Other,
}

impl ValueKind {
    fn as_str(self) -> &'static str {
        match self {
            ValueKind::Tensor => "tensor",
            ValueKind::Tuple => "tuple",
            ValueKind::List => "list",
            ValueKind::Dict => "dict",
            ValueKind::Dataclass => "dataclass",
            ValueKind::NamedTuple => "named_tuple",
            ValueKind::None => "none",
            ValueKind::Scalar => "scalar",
            ValueKind::Other => "other",
        }
    }

    /// The fields each kind has besides `kind`.
    fn fields(self) -> &'static [&'static str] {
        match self {
            ValueKind::Tensor => &["shape", "dtype", "device", "requires_grad"],
            ValueKind::Tuple | ValueKind::List => &["items"],
            ValueKind::Dict => &["entries"],
            ValueKind::Dataclass | ValueKind::NamedTuple => &["type_name", "fields"],
            ValueKind::None => &[],
            ValueKind::Scalar | ValueKind::Other => &["type_name"],
        }
    }
}

/// Every field any [`ValueMeta`] variant has, read in place so that errors keep their paths.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawValueMeta {
    kind: ValueKind,
    shape: Option<Vec<u64>>,
    dtype: Option<String>,
    device: Option<String>,
    requires_grad: Option<bool>,
    items: Option<Vec<ValueMeta>>,
    entries: Option<Vec<NamedValueMeta>>,
    type_name: Option<String>,
    fields: Option<Vec<NamedValueMeta>>,
}

impl RawValueMeta {
    fn present_fields(&self) -> [(&'static str, bool); 8] {
        [
            ("shape", self.shape.is_some()),
            ("dtype", self.dtype.is_some()),
            ("device", self.device.is_some()),
            ("requires_grad", self.requires_grad.is_some()),
            ("items", self.items.is_some()),
            ("entries", self.entries.is_some()),
            ("type_name", self.type_name.is_some()),
            ("fields", self.fields.is_some()),
        ]
    }

    fn into_value_meta(self) -> Result<ValueMeta, String> {
        let allowed = self.kind.fields();
        for (name, present) in self.present_fields() {
            if present && !allowed.contains(&name) {
                return Err(format!(
                    "unexpected field `{name}` for kind `{}`; expected {}",
                    self.kind.as_str(),
                    if allowed.is_empty() {
                        "no other field".to_owned()
                    } else {
                        allowed
                            .iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ));
            }
            if !present && allowed.contains(&name) {
                return Err(format!("missing field `{name}`"));
            }
        }
        let missing = || "missing field".to_owned();
        Ok(match self.kind {
            ValueKind::Tensor => ValueMeta::Tensor(TensorMeta {
                shape: self.shape.ok_or_else(missing)?,
                dtype: self.dtype.ok_or_else(missing)?,
                device: self.device.ok_or_else(missing)?,
                requires_grad: self.requires_grad.ok_or_else(missing)?,
            }),
            ValueKind::Tuple => ValueMeta::Tuple(SequenceMeta {
                items: self.items.ok_or_else(missing)?,
            }),
            ValueKind::List => ValueMeta::List(SequenceMeta {
                items: self.items.ok_or_else(missing)?,
            }),
            ValueKind::Dict => ValueMeta::Dict(MappingMeta {
                entries: self.entries.ok_or_else(missing)?,
            }),
            ValueKind::Dataclass => ValueMeta::Dataclass(RecordMeta {
                type_name: self.type_name.ok_or_else(missing)?,
                fields: self.fields.ok_or_else(missing)?,
            }),
            ValueKind::NamedTuple => ValueMeta::NamedTuple(RecordMeta {
                type_name: self.type_name.ok_or_else(missing)?,
                fields: self.fields.ok_or_else(missing)?,
            }),
            ValueKind::None => ValueMeta::None(EmptyMeta {}),
            ValueKind::Scalar => ValueMeta::Scalar(TypeOnlyMeta {
                type_name: self.type_name.ok_or_else(missing)?,
            }),
            ValueKind::Other => ValueMeta::Other(TypeOnlyMeta {
                type_name: self.type_name.ok_or_else(missing)?,
            }),
        })
    }
}

impl<'de> Deserialize<'de> for ValueMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawValueMeta::deserialize(deserializer)?
            .into_value_meta()
            .map_err(serde::de::Error::custom)
    }
}
