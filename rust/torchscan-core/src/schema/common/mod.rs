//! Types shared by every report kind: the schema version, metrics, diagnostics, context and value metadata.

mod context;
mod diagnostic;
mod metric;
mod value_meta;

pub use context::{Context, DistributedContext, Flags, ProcessGroupOrigin};
pub use diagnostic::{Diagnostic, DiagnosticCode, Severity};
pub use metric::{
    FIXED_UNITS, INTEGRAL_UNITS, MAX_EXACT_INTEGER, MetricResult, MetricStatus, Number,
    exact_integer, is_integral_unit, is_known_unit, is_valid_work_unit, throughput_unit, whole,
};
pub use value_meta::{
    EmptyMeta, MappingItemMeta, MappingKey, MappingMeta, NamedValueMeta, RecordMeta, SequenceMeta,
    TensorMeta, TypeOnlyMeta, ValueMeta, dtype_text, dtypes_text,
};

use std::borrow::Cow;

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
