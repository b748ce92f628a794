//! Paths, tensor shapes and values, and the recorded context (threads, dtypes, settings a report
//! does not record) as text.

use std::fmt::Display;

use crate::schema::common::{TensorMeta, ValueMeta};

use super::{NOT_RECORDED, UNKNOWN};

/// A module path for display: `(root)` for the root module's empty path.
pub fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

/// A path inside an output structure for display: `(output)` for the whole output's empty path.
pub fn display_output_path(path: &str) -> &str {
    if path.is_empty() { "(output)" } else { path }
}

/// The shapes of a value as text: `[1, 8, 30, 30]`, `([2], None)`, `{x: [3]}`, ...
pub fn shape_text(meta: &ValueMeta) -> String {
    meta_text(meta, &|tensor| format!("[{}]", shape_list(tensor)))
}

/// A value's metadata as text: `tensor [1, 8, 30, 30] float32`; `detailed` adds the device and
/// the grad flag of tensors (`tensor [2] float32 on cpu, requires grad`).
///
/// The text a `report_diff` records for a changed input or output; [`shape_text`] is the same
/// walk with tensors shown by their shape alone.
pub fn value_text(meta: &ValueMeta, detailed: bool) -> String {
    meta_text(meta, &|tensor| {
        let mut text = format!("tensor [{}] {}", shape_list(tensor), tensor.dtype_text());
        if detailed {
            text.push_str(" on ");
            text.push_str(&tensor.device);
            if tensor.requires_grad {
                text.push_str(", requires grad");
            }
        }
        text
    })
}

fn shape_list(tensor: &TensorMeta) -> String {
    tensor
        .shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value's structure as text, each tensor written by `tensor`.
fn meta_text(meta: &ValueMeta, tensor: &dyn Fn(&TensorMeta) -> String) -> String {
    let join = |items: Vec<String>| items.join(", ");
    match meta {
        ValueMeta::Tensor(t) => tensor(t),
        ValueMeta::Tuple(sequence) => format!(
            "({})",
            join(
                sequence
                    .items
                    .iter()
                    .map(|item| meta_text(item, tensor))
                    .collect()
            )
        ),
        ValueMeta::List(sequence) => format!(
            "[{}]",
            join(
                sequence
                    .items
                    .iter()
                    .map(|item| meta_text(item, tensor))
                    .collect()
            )
        ),
        ValueMeta::Mapping(mapping) => format!(
            "{{{}}}",
            join(
                mapping
                    .items
                    .iter()
                    .map(|item| format!("{}: {}", item.key_text(), meta_text(&item.value, tensor)))
                    .collect()
            )
        ),
        ValueMeta::Dataclass(record) | ValueMeta::NamedTuple(record) => format!(
            "{}({})",
            record.type_name,
            join(
                record
                    .fields
                    .iter()
                    .map(|field| format!("{}={}", field.name, meta_text(&field.value, tensor)))
                    .collect()
            )
        ),
        ValueMeta::None(_) => "None".to_owned(),
        ValueMeta::Scalar(type_only) | ValueMeta::Object(type_only) => type_only.type_name.clone(),
    }
}

/// A context value that may be missing: the value, or [`UNKNOWN`].
pub fn or_unknown(value: Option<&str>) -> &str {
    value.unwrap_or(UNKNOWN)
}

/// A thread count that may be missing: the count, or [`UNKNOWN`].
pub fn threads_text(threads: Option<u64>) -> String {
    threads.map_or_else(|| UNKNOWN.to_owned(), |t| t.to_string())
}

/// A recorded setting as a reader wants it: the value, or [`NOT_RECORDED`].
pub fn recorded_text<T: Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| NOT_RECORDED.to_owned(), ToString::to_string)
}

/// A recorded JSON setting (a flag of the context): a string as it is, null as [`NOT_RECORDED`],
/// anything else as JSON.
pub fn recorded_json_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => NOT_RECORDED.to_owned(),
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A context's dtypes joined by `separator` ([`crate::schema::common::dtypes_text`]), or `empty`
/// when there is none. A `report_diff`'s context warning writes `none` with `", "`; a benchmark
/// comparison's writes [`NOT_RECORDED`] with `","`, as their diagnostics always did.
pub fn dtypes_or(dtypes: &[String], separator: &str, empty: &str) -> String {
    if dtypes.is_empty() {
        empty.to_owned()
    } else {
        crate::schema::common::dtypes_text(dtypes, separator)
    }
}
