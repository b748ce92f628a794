//! Value metadata: what an input or output was (tensor, sequence, mapping, record, ...), read
//! from JSON through a raw form that names the kind that failed.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

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
