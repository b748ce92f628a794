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
/// A whole number in a unit of whole things (`B`, `FLOPs`, `MACs`, `DMAs`, `count`) is written as
/// a JSON integer (`112`, not `112.0`), as torchscan 0.2 wrote it.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricResult {
    /// `complete`, `partial` or `unavailable`.
    pub status: MetricStatus,
    /// The whole value; set only when `status` is `complete`.
    pub value: Option<f64>,
    /// The value known so far: equal to `value` when complete, a lower bound when partial.
    pub known_value: Option<f64>,
    /// SI base unit: `s`, `B`, `FLOPs`, `MACs`, `DMAs`, `count`, `ratio`, `Hz`, `FLOP/s`, `B/s`,
    /// `FLOP/B` or `<work_unit>/s`.
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

impl Serialize for MetricResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let integral = is_integral_unit(&self.unit);
        let number = |value: Option<f64>| value.map(|value| Number::new(value, integral));
        let mut state = serializer.serialize_struct("MetricResult", 7)?;
        state.serialize_field("status", &self.status)?;
        state.serialize_field("value", &number(self.value))?;
        state.serialize_field("known_value", &number(self.known_value))?;
        state.serialize_field("unit", &self.unit)?;
        state.serialize_field("scope", &self.scope)?;
        state.serialize_field("method", &self.method)?;
        state.serialize_field("reason", &self.reason)?;
        state.end()
    }
}

/// The units of whole things: bytes, FLOPs, MACs, DMAs and counts. Their whole numbers are
/// written as JSON integers; other units (`s`, `ratio`, `<work_unit>/s`) keep JSON floats.
pub const INTEGRAL_UNITS: &[&str] = &["B", "FLOPs", "MACs", "DMAs", "count"];

/// Whether `unit` counts whole things (one of [`INTEGRAL_UNITS`]).
pub fn is_integral_unit(unit: &str) -> bool {
    INTEGRAL_UNITS.contains(&unit)
}

/// 2^53: every integer up to this magnitude is exact as an `f64` (and in JavaScript).
pub const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// `value` as an integer when it is a whole number that an `f64` holds exactly
/// (`|value| <= 2^53`); `None` for a fraction, a larger magnitude or a non-finite number.
pub fn exact_integer(value: f64) -> Option<i64> {
    // Both bounds are exact in `f64` and within `i64`, so the cast cannot saturate.
    (value.is_finite() && value.fract() == 0.0 && value.abs() <= MAX_EXACT_INTEGER)
        .then_some(value as i64)
}

/// A report number as written: an integer when `integral` and [`exact_integer`] allow it,
/// otherwise a float.
#[derive(Debug, Clone, Copy)]
pub struct Number {
    value: f64,
    integral: bool,
}

impl Number {
    /// `value`, written as an integer where `integral` says it counts whole things.
    pub fn new(value: f64, integral: bool) -> Self {
        Number { value, integral }
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match exact_integer(self.value) {
            Some(whole) if self.integral => serializer.serialize_i64(whole),
            _ => serializer.serialize_f64(self.value),
        }
    }
}

/// `serialize_with` helpers for numbers that always count whole things (FLOPs of an operator,
/// torchscan 0.2's `by_operator` and `by_module`): whole numbers are written as JSON integers.
pub mod whole {
    use std::collections::BTreeMap;

    use serde::ser::SerializeMap;
    use serde::{Serialize, Serializer};

    use super::Number;

    /// One number.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        Number::new(*value, true).serialize(serializer)
    }

    /// A number or null.
    pub fn option<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_some(&Number::new(*value, true)),
            None => serializer.serialize_none(),
        }
    }

    /// A map of names to numbers.
    pub fn map<S: Serializer>(
        value: &BTreeMap<String, f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(value.len()))?;
        for (key, number) in value {
            map.serialize_entry(key, &Number::new(*number, true))?;
        }
        map.end()
    }
}

/// The fixed units a metric may carry, besides throughput units of the form `<work_unit>/s`.
pub const FIXED_UNITS: &[&str] = &[
    "s", "B", "FLOPs", "MACs", "DMAs", "count", "ratio", "Hz", "FLOP/s", "B/s", "FLOP/B",
];

/// Whether `name` may be used as a work unit (`samples`, `tokens`, `images`, ...).
pub fn is_valid_work_unit(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(first) if first.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= 64
}

/// The unit of a throughput in `work_unit`s: `<work_unit>/s`.
pub fn throughput_unit(work_unit: &str) -> String {
    format!("{work_unit}/s")
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
    /// Parameters or buffers are shared (one tensor under several names, or views that overlap
    /// in one storage) and each storage element was counted once.
    SharedTensors,
    /// A requested metric is unavailable on the measured device.
    UnsupportedOnDevice,
    /// Timing IQR/median reached 0.10.
    TimingNoise,
    /// Timing IQR/median reached 0.25: latency differences below that are not meaningful.
    HighTimingNoise,
    /// Other processes, the hypervisor or preemption competed with the timed phase beyond a
    /// documented threshold; the message names the noise metrics that passed it.
    NoisyMachine,
    /// The `hardware_peak` pass's matmul rate or copy bandwidth may read below what the device
    /// attains: other processes, steal or preemption past the `noisy_machine` thresholds while
    /// it was timed, blocks that spread, or a matmul slower than its size search found; the
    /// message says which. A utilization divided by it then reads high.
    NoisyPeak,
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
    /// The profiler pass failed or was cut short, or its trace was not written whole.
    ProfilerFailed,
    /// Compared reports differ in device, threads, dtypes, versions or flags.
    ContextMismatch,
    /// The output check failed, so comparison deltas are withheld.
    OutputCheckFailed,
    /// No output check was given, so the comparison is unchecked.
    Unchecked,
    /// An output leaf differs in shape, dtype or device.
    OutputMetadataMismatch,
    /// An output leaf's values differ beyond the tolerances; the message names the leaf and the
    /// likely way out.
    OutputValuesMismatch,
    /// The model's structure differs between the compared reports.
    StructureChanged,
    /// Operators ran on other threads while a dispatch-mode pass watched its own thread: they
    /// are not counted, and the pass's value is partial.
    OtherThreads,
    /// Compared benchmarks computed in different floating-point dtypes (`float32 -> bfloat16`):
    /// often the change under test, named so that it is never mistaken for another.
    PrecisionChanged,
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
    /// The autocast regions active, device type to dtype (`{"cpu": "torch.bfloat16"}`); empty
    /// when none is active, absent in reports that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::read::unique_keys_optional")]
    pub autocast: Option<BTreeMap<String, String>>,
}

impl Flags {
    /// The autocast regions as text (`cpu bfloat16, cuda float16`, or `off`), `None` when not
    /// recorded.
    pub fn autocast_text(&self) -> Option<String> {
        self.autocast.as_ref().map(|regions| {
            if regions.is_empty() {
                return "off".to_owned();
            }
            regions
                .iter()
                .map(|(device, dtype)| format!("{device} {}", dtype_text(dtype)))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
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
    #[serde(deserialize_with = "crate::read::unique_keys")]
    pub thread_env: BTreeMap<String, String>,
    /// Settings that change numbers.
    #[serde(default)]
    pub flags: Flags,
    /// Floating-point dtypes involved, as PyTorch names them, for example `torch.float32`.
    /// Where operators were counted (`flops` and `benchmark` reports), the dtypes the counted
    /// operators computed in come first, largest FLOP share first, then the others by name;
    /// elsewhere they are sorted by name.
    #[serde(default)]
    pub dtypes: Vec<String>,
    /// For analyses (and `flops` reports of one module): the model's class, qualified as
    /// torchscan 0.2 wrote it (`torchvision.models.resnet.ResNet`: `__module__.__qualname__`).
    #[serde(default)]
    pub model_type: Option<String>,
    /// The model's training flag before the report was made (it is restored afterwards).
    #[serde(default)]
    pub training_before: Option<bool>,
    /// For analyses: how the model was run, `evaluation_no_grad` (evaluation mode, gradients
    /// disabled).
    #[serde(default)]
    pub execution_mode: Option<String>,
    /// For analyses: the devices of the model's parameters and buffers and of the input tensors,
    /// sorted.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Where the report was made in a `torch.distributed` job: this process's rank, local rank,
    /// the world size, the backend and the host. Absent outside a distributed job, and in
    /// reports written before it was recorded (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedContext>,
}

/// How the process group that aligned the ranks came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessGroupOrigin {
    /// The caller had initialised `torch.distributed`; torchscan used its default group.
    Existing,
    /// `RANK` and `WORLD_SIZE` said so but no group was initialised: torchscan initialised one
    /// from the environment (`env://`) for its own barriers and destroyed it afterwards.
    Created,
}

/// A rank's place in a `torch.distributed` job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributedContext {
    /// This process's global rank, below `world_size`.
    pub rank: u64,
    /// This process's rank on its host (`LOCAL_RANK`), below `world_size`.
    pub local_rank: u64,
    /// The number of ranks in the job (at least 1).
    pub world_size: u64,
    /// The process group's backend, for example `gloo` or `nccl`.
    pub backend: String,
    /// The host name of the machine this rank ran on.
    pub host: String,
    /// Whether the process group was the caller's or torchscan's own.
    pub process_group: ProcessGroupOrigin,
    /// A random id that rank 0 drew for this measurement and every rank recorded: reports with
    /// different ids come from different measurements and are never merged.
    pub measurement_id: String,
}

/// Metadata of a value passed to or returned by a module or workload; never its contents.
///
/// The layout is torchscan 0.2's (`tensor`, `tuple`, `list`, `mapping`, `scalar`, `none`,
/// `object`), with dataclasses and named tuples described field by field.
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
    /// A mapping (a dict or any other `Mapping`): its class name and its items.
    Mapping(MappingMeta),
    /// A dataclass instance: its class name and fields.
    Dataclass(RecordMeta),
    /// A named tuple: its class name and fields.
    NamedTuple(RecordMeta),
    /// `None`.
    None(EmptyMeta),
    /// A Python scalar (`int`, `float`, `bool`, `complex`, `str`, `bytes`): its type only, never
    /// its value.
    Scalar(TypeOnlyMeta),
    /// Anything else: its type name only.
    Object(TypeOnlyMeta),
}

/// Tensor metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TensorMeta {
    /// Size of each dimension.
    pub shape: Vec<u64>,
    /// dtype as PyTorch names it, for example `torch.float32`.
    pub dtype: String,
    /// Device, for example `cpu` or `cuda:0`.
    pub device: String,
    /// Whether the tensor requires grad.
    pub requires_grad: bool,
}

/// A dtype name without PyTorch's `torch.` prefix, for text: `torch.float32` -> `float32`.
pub fn dtype_text(dtype: &str) -> &str {
    dtype.strip_prefix("torch.").unwrap_or(dtype)
}

/// Dtype names for text, without the `torch.` prefix, joined by `separator`.
pub fn dtypes_text(dtypes: &[String], separator: &str) -> String {
    dtypes
        .iter()
        .map(|dtype| dtype_text(dtype))
        .collect::<Vec<_>>()
        .join(separator)
}

impl TensorMeta {
    /// The dtype without PyTorch's `torch.` prefix, for text: `float32`.
    pub fn dtype_text(&self) -> &str {
        dtype_text(&self.dtype)
    }
}

/// Items of a tuple or list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequenceMeta {
    /// The items, in order.
    pub items: Vec<ValueMeta>,
}

/// A mapping's class name and items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingMeta {
    /// The mapping's class name, for example `dict`.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The items, in iteration order.
    pub items: Vec<MappingItemMeta>,
}

/// A mapping key that is safe to record: an integer or a string that is a Python identifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MappingKey {
    /// An integer key.
    Integer(i64),
    /// A string key that is an identifier.
    Name(String),
}

/// One item of a mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingItemMeta {
    /// The key, when it is an integer or an identifier; absent otherwise, so that no file name
    /// or other free text enters a report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<MappingKey>,
    /// The key's type name, for example `str`.
    pub key_type: String,
    /// The value's metadata.
    pub value: ValueMeta,
}

impl MappingItemMeta {
    /// The key as text; `<key_type>` when the report does not record it.
    pub fn key_text(&self) -> String {
        match &self.key {
            Some(MappingKey::Integer(key)) => key.to_string(),
            Some(MappingKey::Name(key)) => key.clone(),
            None => format!("<{}>", self.key_type),
        }
    }
}

/// Fields of a dataclass or named tuple.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordMeta {
    /// The class name (not its module path).
    #[serde(rename = "type")]
    pub type_name: String,
    /// The fields, in declaration order.
    pub fields: Vec<NamedValueMeta>,
}

/// A field name with its value's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamedValueMeta {
    /// The field name.
    pub name: String,
    /// The value's metadata.
    pub value: ValueMeta,
}

/// A value recorded by its type name only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeOnlyMeta {
    /// The type name, for example `int`.
    #[serde(rename = "type")]
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
    Mapping,
    Dataclass,
    NamedTuple,
    None,
    Scalar,
    Object,
}

impl ValueKind {
    fn as_str(self) -> &'static str {
        match self {
            ValueKind::Tensor => "tensor",
            ValueKind::Tuple => "tuple",
            ValueKind::List => "list",
            ValueKind::Mapping => "mapping",
            ValueKind::Dataclass => "dataclass",
            ValueKind::NamedTuple => "named_tuple",
            ValueKind::None => "none",
            ValueKind::Scalar => "scalar",
            ValueKind::Object => "object",
        }
    }

    /// The fields each kind has besides `kind`.
    fn fields(self) -> &'static [&'static str] {
        match self {
            ValueKind::Tensor => &["shape", "dtype", "device", "requires_grad"],
            ValueKind::Tuple | ValueKind::List => &["items"],
            ValueKind::Mapping => &["type", "items"],
            ValueKind::Dataclass | ValueKind::NamedTuple => &["type", "fields"],
            ValueKind::None => &[],
            ValueKind::Scalar | ValueKind::Object => &["type"],
        }
    }
}

/// An item of a tuple, a list or a mapping, read in place: a value (it has a `kind`) or a
/// mapping item (it has a `key_type`).
enum RawItem {
    Value(ValueMeta),
    MappingItem(MappingItemMeta),
}

impl<'de> Deserialize<'de> for RawItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawValueMeta::deserialize(deserializer)?;
        if raw.kind.is_some() {
            return raw
                .into_value_meta()
                .map(RawItem::Value)
                .map_err(serde::de::Error::custom);
        }
        raw.into_mapping_item()
            .map(RawItem::MappingItem)
            .map_err(serde::de::Error::custom)
    }
}

/// Every field any [`ValueMeta`] variant or mapping item has, read in place so that errors keep
/// their paths.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawValueMeta {
    kind: Option<ValueKind>,
    shape: Option<Vec<u64>>,
    dtype: Option<String>,
    device: Option<String>,
    requires_grad: Option<bool>,
    items: Option<Vec<RawItem>>,
    #[serde(rename = "type")]
    type_name: Option<String>,
    fields: Option<Vec<NamedValueMeta>>,
    key: Option<MappingKey>,
    key_type: Option<String>,
    value: Option<ValueMeta>,
}

impl RawValueMeta {
    fn present_fields(&self) -> [(&'static str, bool); 10] {
        [
            ("shape", self.shape.is_some()),
            ("dtype", self.dtype.is_some()),
            ("device", self.device.is_some()),
            ("requires_grad", self.requires_grad.is_some()),
            ("items", self.items.is_some()),
            ("type", self.type_name.is_some()),
            ("fields", self.fields.is_some()),
            ("key", self.key.is_some()),
            ("key_type", self.key_type.is_some()),
            ("value", self.value.is_some()),
        ]
    }

    /// A mapping item: `key_type`, `value` and an optional `key`, nothing else.
    fn into_mapping_item(self) -> Result<MappingItemMeta, String> {
        for (name, present) in self.present_fields() {
            if present && !["key", "key_type", "value"].contains(&name) {
                return Err(format!(
                    "a mapping item has `key_type`, `value` and an optional `key`, not `{name}` (a value has `kind`)"
                ));
            }
        }
        Ok(MappingItemMeta {
            key: self.key,
            key_type: self.key_type.ok_or_else(|| {
                "missing field `kind` (a value) or `key_type` (a mapping item)".to_owned()
            })?,
            value: self
                .value
                .ok_or_else(|| "missing field `value`".to_owned())?,
        })
    }

    /// Items that must all be values (a tuple or a list) or all mapping items (a mapping).
    fn values(items: Vec<RawItem>) -> Result<Vec<ValueMeta>, String> {
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                RawItem::Value(value) => Ok(value),
                RawItem::MappingItem(_) => Err(format!(
                    "item {index} is a mapping item; the items of a tuple or list are values with a `kind`"
                )),
            })
            .collect()
    }

    fn mapping_items(items: Vec<RawItem>) -> Result<Vec<MappingItemMeta>, String> {
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                RawItem::MappingItem(entry) => Ok(entry),
                RawItem::Value(_) => Err(format!(
                    "item {index} is a value; the items of a mapping have `key_type` and `value`"
                )),
            })
            .collect()
    }

    fn into_value_meta(self) -> Result<ValueMeta, String> {
        let Some(kind) = self.kind else {
            return Err("missing field `kind`".to_owned());
        };
        let allowed = kind.fields();
        for (name, present) in self.present_fields() {
            if present && !allowed.contains(&name) {
                return Err(format!(
                    "unexpected field `{name}` for kind `{}`; expected {}",
                    kind.as_str(),
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
        Ok(match kind {
            ValueKind::Tensor => ValueMeta::Tensor(TensorMeta {
                shape: self.shape.ok_or_else(missing)?,
                dtype: self.dtype.ok_or_else(missing)?,
                device: self.device.ok_or_else(missing)?,
                requires_grad: self.requires_grad.ok_or_else(missing)?,
            }),
            ValueKind::Tuple => ValueMeta::Tuple(SequenceMeta {
                items: Self::values(self.items.ok_or_else(missing)?)?,
            }),
            ValueKind::List => ValueMeta::List(SequenceMeta {
                items: Self::values(self.items.ok_or_else(missing)?)?,
            }),
            ValueKind::Mapping => ValueMeta::Mapping(MappingMeta {
                type_name: self.type_name.ok_or_else(missing)?,
                items: Self::mapping_items(self.items.ok_or_else(missing)?)?,
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
            ValueKind::Object => ValueMeta::Object(TypeOnlyMeta {
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

#[cfg(test)]
mod tests {
    use super::{MAX_EXACT_INTEGER, MetricResult, exact_integer};

    fn written(value: f64, unit: &str) -> String {
        let metric = MetricResult::complete(value, unit, "scope", "method");
        let json = serde_json::to_value(&metric).expect("a metric serializes");
        json["value"].to_string()
    }

    #[test]
    fn whole_numbers_of_whole_things_are_json_integers() {
        assert_eq!(written(112.0, "count"), "112");
        assert_eq!(written(0.0, "B"), "0");
        assert_eq!(written(388_800.0, "FLOPs"), "388800");
        assert_eq!(written(MAX_EXACT_INTEGER, "MACs"), "9007199254740992");
        // A fraction, a magnitude past 2^53 and the other units stay floats.
        assert_eq!(written(1.5, "count"), "1.5");
        assert_eq!(
            written(MAX_EXACT_INTEGER * 4.0, "DMAs"),
            "3.602879701896397e+16"
        );
        assert_eq!(written(2.0, "s"), "2.0");
        assert_eq!(written(1.0, "ratio"), "1.0");
        assert_eq!(written(10.0, "samples/s"), "10.0");
    }

    #[test]
    fn exact_integers_stop_at_two_to_the_53() {
        assert_eq!(exact_integer(-3.0), Some(-3));
        assert_eq!(exact_integer(0.5), None);
        assert_eq!(exact_integer(f64::NAN), None);
        assert_eq!(exact_integer(f64::INFINITY), None);
        assert_eq!(exact_integer(MAX_EXACT_INTEGER * 2.0), None);
    }

    #[test]
    fn integers_are_read_back_as_the_same_metric() {
        let metric = MetricResult::complete(112.0, "count", "scope", "method");
        let text = serde_json::to_string(&metric).expect("serializes");
        assert!(text.contains("\"value\":112,"), "{text}");
        let back: MetricResult = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, metric);
    }
}
