//! Metric results: a value with its unit, status, scope and method, written as a JSON integer
//! when it counts whole things; the units a report may use.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

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
