//! Text taken from a report, made safe to display: characters that are invisible or that change
//! how the text around them displays are written as `\u` and four lower-case hex digits.
//!
//! A report's strings (module names, types, diagnostic messages, work units, ...) come from the
//! user's code. A NUL, an escape sequence or a right-to-left override in a module name would make
//! a printed line or a page show something else than the report holds, so every renderer passes
//! every such string through [`display_text`] (the HTML page through its template formatter, the
//! text summary through [`escaped_report`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Serialize, ser};
use serde_json::Value;

use crate::format::{display_text, is_escaped_for_display, needs_escaping};
use crate::schema::Report;

/// Escapes every string and object key of `value` in place; returns whether anything changed.
fn escape_value(value: &mut Value) -> bool {
    match value {
        Value::String(text) => match display_text(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(shown) => {
                *text = shown;
                true
            }
        },
        Value::Array(items) => items
            .iter_mut()
            .map(escape_value)
            .fold(false, |changed, item_changed| changed | item_changed),
        Value::Object(entries) => {
            let keys_changed = entries
                .keys()
                .any(|key| matches!(display_text(key), Cow::Owned(_)));
            if keys_changed {
                let taken = std::mem::take(entries);
                for (key, mut item) in taken {
                    escape_value(&mut item);
                    entries.insert(display_text(&key).into_owned(), item);
                }
                true
            } else {
                entries
                    .values_mut()
                    .map(escape_value)
                    .fold(false, |changed, item_changed| changed | item_changed)
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Stops a [`FindsEscaped`] walk: a string that needs escaping was found (or, never in a report,
/// a value that cannot be serialized).
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string to escape")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Stop
    }
}

/// A serializer that only looks at strings (map keys included) and stops at the first one that
/// [`display_text`] would change: it tells whether a report needs escaping without building
/// anything, so the common case costs one walk.
struct FindsEscaped;

macro_rules! nothing_to_find {
    ($($method:ident($type:ty)),* $(,)?) => {
        $(fn $method(self, _value: $type) -> Result<(), Stop> {
            Ok(())
        })*
    };
}

impl ser::Serializer for FindsEscaped {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    nothing_to_find!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
    );

    fn serialize_char(self, value: char) -> Result<(), Stop> {
        if is_escaped_for_display(value) {
            Err(Stop)
        } else {
            Ok(())
        }
    }

    fn serialize_str(self, value: &str) -> Result<(), Stop> {
        if needs_escaping(value) {
            Err(Stop)
        } else {
            Ok(())
        }
    }

    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Stop> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, Stop> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }
}

macro_rules! compound {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for FindsEscaped {
            type Ok = ();
            type Error = Stop;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
                value.serialize(FindsEscaped)
            }

            fn end(self) -> Result<(), Stop> {
                Ok(())
            }
        })*
    };
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for FindsEscaped {
    type Ok = ();
    type Error = Stop;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stop> {
        key.serialize(FindsEscaped)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        value.serialize(FindsEscaped)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStruct for FindsEscaped {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(FindsEscaped)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for FindsEscaped {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(FindsEscaped)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

fn escaped<T: Serialize + DeserializeOwned>(report: &T) -> Option<T> {
    // The common case: nothing to escape, found by a walk that builds nothing.
    report.serialize(FindsEscaped).err()?;
    let mut value = serde_json::to_value(report).ok()?;
    if !escape_value(&mut value) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// The report with every string and key passed through [`display_text`], for display only; `None`
/// when no string needs it (the common case). Two keys that become equal keep the last one, which
/// only the display can show.
pub fn escaped_report(report: &Report) -> Option<Report> {
    Some(match report {
        Report::Analysis(r) => Report::Analysis(Box::new(escaped(r.as_ref())?)),
        Report::Flops(r) => Report::Flops(Box::new(escaped(r.as_ref())?)),
        Report::Benchmark(r) => Report::Benchmark(Box::new(escaped(r.as_ref())?)),
        Report::PeakMemory(r) => Report::PeakMemory(Box::new(escaped(r.as_ref())?)),
        Report::OutputCheck(r) => Report::OutputCheck(Box::new(escaped(r.as_ref())?)),
        Report::BenchmarkComparison(r) => {
            Report::BenchmarkComparison(Box::new(escaped(r.as_ref())?))
        }
        Report::ReportDiff(r) => Report::ReportDiff(Box::new(escaped(r.as_ref())?)),
        Report::DistributedBenchmark(r) => {
            Report::DistributedBenchmark(Box::new(escaped(r.as_ref())?))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_characters_are_escaped() {
        assert_eq!(display_text("a\u{202e}b\u{0}c"), "a\\u202eb\\u0000c");
        assert_eq!(
            display_text("\t\n\u{7f}\u{85}\u{9f}"),
            "\\u0009\\u000a\\u007f\\u0085\\u009f"
        );
        assert_eq!(
            display_text("\u{61c}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{2066}\u{2069}"),
            "\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a\\u2066\\u2069"
        );
        assert!(matches!(
            display_text("Conv2d é 中 \u{a0}"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            display_text("\u{a0}\u{2065}\u{206a}\u{200d}"),
            "\u{a0}\u{2065}\u{206a}\u{200d}"
        );
    }

    #[test]
    fn every_code_point_is_classified_as_documented() {
        let escaped: Vec<u32> = (0..=0x10_ffff_u32)
            .filter_map(char::from_u32)
            .filter(|c| is_escaped_for_display(*c))
            .map(u32::from)
            .collect();
        let mut expected: Vec<u32> = (0..=0x1f).chain(0x7f..=0x9f).collect();
        expected.extend([0x61c, 0x200e, 0x200f]);
        expected.extend(0x2028..=0x202e);
        expected.extend(0x2066..=0x2069);
        assert_eq!(escaped, expected);
    }

    #[test]
    fn keys_and_nested_strings_are_escaped() {
        let mut value = serde_json::json!({"a\u{202e}": ["x\u{1b}[31m", {"k": "plain"}], "b": 1});
        assert!(escape_value(&mut value));
        assert_eq!(
            value,
            serde_json::json!({"a\\u202e": ["x\\u001b[31m", {"k": "plain"}], "b": 1})
        );
        let mut plain = serde_json::json!({"a": ["b", 1, null]});
        assert!(!escape_value(&mut plain));
    }
}
