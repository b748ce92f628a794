//! Reading report JSON: dispatch on `schema_version`, then `kind`, then typed parsing with JSON paths.
//!
//! Non-finite numbers (`NaN`, `Infinity`, `-Infinity`, as Python's `json` writes them) are not JSON;
//! they are read leniently here only so that each one can be reported at its path instead of failing
//! the whole parse with a line and column.

use std::collections::{BTreeMap, btree_map};
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use crate::problem::{JsonPath, Problem};
use crate::schema::common::READABLE_SCHEMA_VERSIONS;
use crate::schema::{
    AnalysisReport, BenchmarkComparisonReport, BenchmarkReport, DistributedBenchmarkReport,
    FlopReport, OutputCheckReport, PeakMemoryReport, Report, ReportDiffReport, ReportKind,
};

/// Prefix of the string a non-finite token is replaced with before parsing. It starts with a NUL
/// character, which no report string carries.
const NON_FINITE_MARKER: &str = "\u{0}torchscan-non-finite:";
const NON_FINITE_TOKENS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

/// Replaces bare `NaN`, `Infinity` and `-Infinity` tokens outside strings by marker strings.
/// Returns `None` when the text has none, which is the common case.
fn quote_non_finite_tokens(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut quoted: Option<String> = None;
    let mut copied_up_to = 0;
    let mut index = 0;
    let mut in_string = false;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            match byte {
                b'\\' => index += 2,
                b'"' => {
                    in_string = false;
                    index += 1;
                }
                _ => index += 1,
            }
            continue;
        }
        if byte == b'"' {
            in_string = true;
            index += 1;
            continue;
        }
        let token = NON_FINITE_TOKENS
            .into_iter()
            .find(|token| bytes[index..].starts_with(token.as_bytes()));
        match token {
            Some(token) => {
                let out = quoted.get_or_insert_with(|| String::with_capacity(text.len() + 64));
                out.push_str(&text[copied_up_to..index]);
                out.push_str("\"\\u0000torchscan-non-finite:");
                out.push_str(token);
                out.push('"');
                index += token.len();
                copied_up_to = index;
            }
            None => index += 1,
        }
    }
    if let Some(out) = quoted.as_mut() {
        out.push_str(&text[copied_up_to..]);
    }
    quoted
}

/// Reports every marker string left by [`quote_non_finite_tokens`] and replaces it with `0` so
/// that the typed parse can still look for a structural error in the rest of the document.
fn take_non_finite_markers(value: &mut Value, path: &mut JsonPath, problems: &mut Vec<Problem>) {
    match value {
        Value::String(text) => {
            if let Some(token) = text.strip_prefix(NON_FINITE_MARKER) {
                problems.push(Problem::new(
                    path.to_string(),
                    format!("non-finite number {token} is not allowed; numbers must be finite"),
                ));
                *value = Value::from(0);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                path.push_index(index);
                take_non_finite_markers(item, path, problems);
                path.pop();
            }
        }
        Value::Object(entries) => {
            for (key, item) in entries.iter_mut() {
                path.push_key(key);
                take_non_finite_markers(item, path, problems);
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The deepest nesting of arrays and objects a report may have, the root object counting as one
/// (serde_json's recursion limit). Value metadata, the deepest part of a report, stops at 32
/// levels of containers, about 100 levels of JSON.
pub const MAX_NESTING_DEPTH: usize = 127;

/// What [`CheckedValue`] found while reading: the path it is at, and the first problem it met.
struct Reading {
    path: JsonPath,
    problem: Option<Problem>,
}

impl Reading {
    /// Records the problem a child at the current path failed with, unless one is recorded: only
    /// nesting too deep is located here (serde_json's other errors carry a line and column).
    fn child_failed<E: de::Error>(&mut self, error: &E) {
        if self.problem.is_none() && error.to_string().starts_with("recursion limit exceeded") {
            self.problem = Some(Problem::new(
                self.path.to_string(),
                format!(
                    "nested too deeply: a report nests at most {MAX_NESTING_DEPTH} arrays and \
                     objects (the root object counts as one)"
                ),
            ));
        }
    }
}

/// Reads a JSON value as serde_json's own `Value` does, and also refuses a key given twice in one
/// object and locates nesting past [`MAX_NESTING_DEPTH`], each by its JSON path.
struct CheckedValue<'r> {
    reading: &'r mut Reading,
}

impl<'de> DeserializeSeed<'de> for CheckedValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CheckedValue<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        loop {
            self.reading.path.push_index(values.len());
            let item = items.next_element_seed(CheckedValue {
                reading: &mut *self.reading,
            });
            match item {
                Ok(Some(item)) => values.push(item),
                Ok(None) => break,
                Err(error) => {
                    self.reading.child_failed(&error);
                    return Err(error);
                }
            }
            self.reading.path.pop();
        }
        self.reading.path.pop();
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            self.reading.path.push_key(&key);
            if object.contains_key(&key) {
                if self.reading.problem.is_none() {
                    self.reading.problem = Some(Problem::new(
                        self.reading.path.to_string(),
                        format!("duplicate key `{key}`; each key appears once in an object"),
                    ));
                }
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let item = entries.next_value_seed(CheckedValue {
                reading: &mut *self.reading,
            });
            match item {
                Ok(item) => {
                    object.insert(key, item);
                }
                Err(error) => {
                    self.reading.child_failed(&error);
                    return Err(error);
                }
            }
            self.reading.path.pop();
        }
        Ok(Value::Object(object))
    }
}

/// Reads JSON text into a value with [`CheckedValue`]: a duplicate key or nesting too deep is a
/// problem at its path, any other error a problem at `$` with serde_json's line and column.
fn read_checked_value(source: &str) -> Result<Value, Problem> {
    let mut reading = Reading {
        path: JsonPath::root(),
        problem: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(source);
    let parsed = CheckedValue {
        reading: &mut reading,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|error| {
        reading
            .problem
            .take()
            .unwrap_or_else(|| Problem::new("$", format!("not valid JSON: {error}")))
    })
}

/// Parses JSON text into a value, reporting non-finite numbers by path.
fn parse_json(text: &str) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
    let quoted = quote_non_finite_tokens(text);
    let source = quoted.as_deref().unwrap_or(text);
    let mut value = read_checked_value(source).map_err(|problem| vec![problem])?;
    let mut problems = Vec::new();
    if quoted.is_some() {
        take_non_finite_markers(&mut value, &mut JsonPath::root(), &mut problems);
    }
    Ok((value, problems))
}

fn versions_list() -> String {
    READABLE_SCHEMA_VERSIONS
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn kinds_list() -> String {
    ReportKind::ALL
        .iter()
        .map(|kind| format!("`{}`", kind.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the `schema_version` and `kind` of a parsed document, before anything else.
fn dispatch(value: &Value) -> Result<ReportKind, Problem> {
    let Some(object) = value.as_object() else {
        let found = match value {
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            Value::Null | Value::Object(_) => "null",
        };
        return Err(Problem::new(
            "$",
            format!("a report is a JSON object, got {found}"),
        ));
    };
    let version = match object.get("schema_version") {
        None => {
            return Err(Problem::new(
                "$.schema_version",
                format!(
                    "missing; every report carries its schema_version (this build reads versions: {})",
                    versions_list()
                ),
            ));
        }
        Some(version) => version,
    };
    match version.as_u64() {
        Some(number) if READABLE_SCHEMA_VERSIONS.contains(&number) => {}
        Some(number) => {
            return Err(Problem::new(
                "$.schema_version",
                format!(
                    "unsupported schema_version {number}; this build reads versions: {}",
                    versions_list()
                ),
            ));
        }
        None => {
            return Err(Problem::new(
                "$.schema_version",
                format!(
                    "must be a non-negative integer, found {version}; this build reads versions: {}",
                    versions_list()
                ),
            ));
        }
    }
    match object.get("kind") {
        None => Err(Problem::new(
            "$.kind",
            format!("missing; expected one of {}", kinds_list()),
        )),
        Some(Value::String(tag)) => ReportKind::from_tag(tag).ok_or_else(|| {
            Problem::new(
                "$.kind",
                format!(
                    "unknown report kind `{tag}`; expected one of {}",
                    kinds_list()
                ),
            )
        }),
        Some(other) => Err(Problem::new(
            "$.kind",
            format!(
                "must be a string, found {other}; expected one of {}",
                kinds_list()
            ),
        )),
    }
}

/// Makes the path of a missing (or, in value metadata, misplaced) field end at that field. serde's
/// path already ends at an unknown field, but stops at the object that lacks a required one.
fn field_problem(mut path: JsonPath, message: String) -> Problem {
    for prefix in ["missing field `", "unexpected field `"] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some(end) = rest.find('`')
        {
            path.push_key(&rest[..end]);
            break;
        }
    }
    Problem::new(path.to_string(), message)
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = JsonPath::from_serde(error.path());
        field_problem(path, error.into_inner().to_string())
    })
}

/// The report kind a document most likely is: the first `"kind": "<report kind>"` pair in the
/// text. Only a guess, and only speed depends on it: the typed parse checks `kind` itself.
fn guess_kind(text: &str) -> Option<ReportKind> {
    const KEY: &str = "\"kind\"";
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let value = rest
            .trim_start()
            .strip_prefix(':')
            .map(str::trim_start)
            .and_then(|after| after.strip_prefix('"'));
        if let Some(value) = value
            && let Some(end) = value.find('"')
            && let Some(kind) = ReportKind::from_tag(&value[..end])
        {
            return Some(kind);
        }
    }
    None
}

fn typed_fast<T: DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_str(text).ok()
}

/// [`unique_keys`] for an optional map: `null` (or an absent field, with `#[serde(default)]`)
/// is `None`, a map with a key repeated is an error.
pub(crate) fn unique_keys_optional<'de, D, V>(
    deserializer: D,
) -> Result<Option<BTreeMap<String, V>>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(bound = "V: Deserialize<'de>")]
    struct Unique<V>(#[serde(deserialize_with = "unique_keys")] BTreeMap<String, V>);
    Ok(Option::<Unique<V>>::deserialize(deserializer)?.map(|unique| unique.0))
}

/// Reads a map of the schema (a JSON object with free keys, such as `by_operator`) and refuses a
/// key given twice, which a map would otherwise keep the last of silently. Strict typed parsing
/// already refuses a struct field given twice; every map field of the schema names this function
/// in `#[serde(deserialize_with)]`, so the fast path refuses a repeated key at no extra cost and
/// hands the document to the careful path, which names the key with its path.
pub(crate) fn unique_keys<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct UniqueKeys<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueKeys<V> {
        type Value = BTreeMap<String, V>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a map")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
            let mut map = BTreeMap::new();
            while let Some((key, value)) = entries.next_entry::<String, V>()? {
                if let btree_map::Entry::Vacant(slot) = map.entry(key) {
                    slot.insert(value);
                } else {
                    return Err(de::Error::custom("duplicate key in a map"));
                }
            }
            Ok(map)
        }
    }

    deserializer.deserialize_map(UniqueKeys(PhantomData))
}

/// The typed report of a sound document, read straight from the text; `None` for anything else.
///
/// This is the common case made cheap: no intermediate [`Value`] tree and no path tracking. A
/// typed report succeeds only for its own `kind` and for `schema_version` 1, so a wrong guess of
/// the kind only costs time. It accepts exactly the documents that [`parse_careful`] accepts
/// without a problem (strict JSON has no non-finite tokens, and a document this parse refuses,
/// such as one with a duplicated field, is handed to the careful path), so whatever it rejects is
/// read again there, which finds the problems with their paths. Both paths refuse a key given
/// twice in one object (see [`unique_keys`]) and nesting past [`MAX_NESTING_DEPTH`].
fn parse_sound(text: &str) -> Option<Report> {
    Some(match guess_kind(text)? {
        ReportKind::Analysis => Report::Analysis(Box::new(typed_fast(text)?)),
        ReportKind::Flops => Report::Flops(Box::new(typed_fast(text)?)),
        ReportKind::Benchmark => Report::Benchmark(Box::new(typed_fast(text)?)),
        ReportKind::PeakMemory => Report::PeakMemory(Box::new(typed_fast(text)?)),
        ReportKind::OutputCheck => Report::OutputCheck(Box::new(typed_fast(text)?)),
        ReportKind::BenchmarkComparison => Report::BenchmarkComparison(Box::new(typed_fast(text)?)),
        ReportKind::ReportDiff => Report::ReportDiff(Box::new(typed_fast(text)?)),
        ReportKind::DistributedBenchmark => {
            Report::DistributedBenchmark(Box::new(typed_fast(text)?))
        }
    })
}

/// Parses leniently: the typed report when the structure is sound (even if non-finite numbers
/// were found and replaced), and every problem found so far.
fn parse_lenient(text: &str) -> (Option<Report>, Vec<Problem>) {
    match parse_sound(text) {
        Some(report) => (Some(report), Vec::new()),
        None => parse_careful(text),
    }
}

/// The careful path: a [`Value`] tree first (non-finite numbers reported by path), then the
/// version and kind, then the typed parse with the path of its first structural error.
fn parse_careful(text: &str) -> (Option<Report>, Vec<Problem>) {
    let (value, mut problems) = match parse_json(text) {
        Ok(parsed) => parsed,
        Err(problems) => return (None, problems),
    };
    let kind = match dispatch(&value) {
        Ok(kind) => kind,
        Err(problem) => {
            problems.push(problem);
            return (None, problems);
        }
    };
    let report = match kind {
        ReportKind::Analysis => {
            typed::<AnalysisReport>(value).map(|r| Report::Analysis(Box::new(r)))
        }
        ReportKind::Flops => typed::<FlopReport>(value).map(|r| Report::Flops(Box::new(r))),
        ReportKind::Benchmark => {
            typed::<BenchmarkReport>(value).map(|r| Report::Benchmark(Box::new(r)))
        }
        ReportKind::PeakMemory => {
            typed::<PeakMemoryReport>(value).map(|r| Report::PeakMemory(Box::new(r)))
        }
        ReportKind::OutputCheck => {
            typed::<OutputCheckReport>(value).map(|r| Report::OutputCheck(Box::new(r)))
        }
        ReportKind::BenchmarkComparison => typed::<BenchmarkComparisonReport>(value)
            .map(|r| Report::BenchmarkComparison(Box::new(r))),
        ReportKind::ReportDiff => {
            typed::<ReportDiffReport>(value).map(|r| Report::ReportDiff(Box::new(r)))
        }
        ReportKind::DistributedBenchmark => typed::<DistributedBenchmarkReport>(value)
            .map(|r| Report::DistributedBenchmark(Box::new(r))),
    };
    match report {
        Ok(report) => (Some(report), problems),
        Err(problem) => {
            problems.push(problem);
            (None, problems)
        }
    }
}

/// Parses report JSON into a typed [`Report`], checking structure only.
///
/// Dispatches on `schema_version` first (an unknown version is an error naming the versions this
/// build reads), then on `kind`. Returns every non-finite number found and the first structural
/// error, each with its JSON path.
pub fn parse_report(text: &str) -> Result<Report, Vec<Problem>> {
    match parse_lenient(text) {
        (Some(report), problems) if problems.is_empty() => Ok(report),
        (_, problems) => Err(problems),
    }
}

/// Parses and validates report JSON: structure first, then every semantic invariant.
///
/// On failure returns every problem found, each with its JSON path. Structural errors stop the
/// typed parse at the first one. Non-finite numbers are all listed; the invariant checks run
/// once every number is finite (a stand-in for a non-finite number would only make them report
/// consequences of the same defect), and then list every problem.
pub fn read_report(text: &str) -> Result<Report, Vec<Problem>> {
    let report = parse_report(text)?;
    let problems = crate::validate::check_report(&report);
    if problems.is_empty() {
        Ok(report)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_tokens_outside_strings_are_quoted() {
        let quoted =
            quote_non_finite_tokens(r#"{"a": NaN, "b": "NaN", "c": [-Infinity, Infinity]}"#)
                .expect("tokens present");
        assert_eq!(
            quoted,
            r#"{"a": "\u0000torchscan-non-finite:NaN", "b": "NaN", "c": ["\u0000torchscan-non-finite:-Infinity", "\u0000torchscan-non-finite:Infinity"]}"#
        );
        assert!(quote_non_finite_tokens(r#"{"a": "x\"NaN", "b": -1.5}"#).is_none());
    }

    #[test]
    fn non_finite_numbers_are_reported_by_path() {
        let (value, problems) =
            parse_json(r#"{"a": [1, NaN], "b": {"c": -Infinity}}"#).expect("parses leniently");
        assert_eq!(value["a"][1], Value::from(0));
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["$.a[1]", "$.b.c"]);
    }

    #[test]
    fn missing_and_unknown_fields_are_located_at_the_field() {
        let problems = parse_report(
            r#"{"schema_version": 1, "kind": "flops", "context": {"torchscan_version": "0.3.0", "bogus": 1}}"#,
        )
        .expect_err("unknown field");
        assert_eq!(problems[0].path, "$.context.bogus");
        assert!(problems[0].message.starts_with("unknown field `bogus`"));
        let problems = parse_report(r#"{"schema_version": 1, "kind": "flops", "context": {}}"#)
            .expect_err("missing field");
        assert_eq!(problems[0].path, "$.context.torchscan_version");
        assert_eq!(problems[0].message, "missing field `torchscan_version`");
    }

    fn fixture_texts() -> Vec<(std::path::PathBuf, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut found = Vec::new();
        for dir in ["tests/fixtures/reports", "python/torchscan/data"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("fixture directory") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|ext| ext == "json") {
                    let text = std::fs::read_to_string(&path).expect("fixture");
                    found.push((path, text));
                }
            }
        }
        assert!(found.len() >= 10, "fixtures found: {}", found.len());
        found
    }

    #[test]
    fn the_sound_path_reads_every_fixture_as_the_careful_path_does() {
        for (path, text) in fixture_texts() {
            let sound = parse_sound(&text);
            let (careful, problems) = parse_careful(&text);
            assert!(problems.is_empty(), "{}: {problems:?}", path.display());
            assert!(sound.is_some(), "{}", path.display());
            assert_eq!(sound, careful, "{}", path.display());
        }
    }

    #[test]
    fn documents_the_sound_path_refuses_are_read_carefully() {
        let (_, text) = fixture_texts()
            .into_iter()
            .find(|(path, _)| path.ends_with("flops_square_matmul.json"))
            .expect("flops fixture");
        // A duplicated field: strict typed parsing refuses it, the careful path names it.
        let duplicated = text.replacen('{', r#"{"kind": "analysis","#, 1);
        assert!(parse_sound(&duplicated).is_none());
        let problems = parse_report(&duplicated).expect_err("a duplicate key");
        assert_eq!(problems[0].path, "$.kind");
        assert_eq!(
            problems[0].message,
            "duplicate key `kind`; each key appears once in an object"
        );
        // A non-finite number is not JSON: refused here, reported by path there.
        let non_finite = text.replacen("\"schema_version\": 1", "\"schema_version\": NaN", 1);
        assert!(parse_sound(&non_finite).is_none());
        let problems = parse_report(&non_finite).expect_err("NaN");
        assert_eq!(problems[0].path, "$.schema_version");
        // Valid JSON of an unknown version or kind: refused here, explained there.
        for other in [
            text.replacen("\"schema_version\": 1", "\"schema_version\": 2", 1),
            text.replacen("\"kind\": \"flops\"", "\"kind\": \"flop\"", 1),
        ] {
            assert_ne!(other, text);
            assert!(parse_sound(&other).is_none());
            assert!(parse_report(&other).is_err());
        }
    }

    #[test]
    fn the_kind_guess_skips_value_kinds_and_needs_no_order() {
        let text = r#"{"inputs": [{"kind": "tensor"}], "kind" : "analysis", "schema_version": 1}"#;
        assert_eq!(guess_kind(text), Some(ReportKind::Analysis));
        assert_eq!(
            guess_kind(r#"{"kind": 3, "x": {"kind":"flops"}}"#),
            Some(ReportKind::Flops)
        );
        assert_eq!(guess_kind(r#"{"kind": "tensor"}"#), None);
        assert_eq!(guess_kind("[]"), None);
    }

    #[test]
    fn a_wrong_kind_guess_still_reads_the_report() {
        let (_, text) = fixture_texts()
            .into_iter()
            .find(|(path, _)| path.ends_with("flops_square_matmul.json"))
            .expect("flops fixture");
        // The first `"kind"` pair names another report kind: the typed parse of that kind fails,
        // and the report is still read as what it is.
        let misleading = text.replacen('{', r#"{"callable_note": {"kind": "benchmark"},"#, 1);
        assert_eq!(guess_kind(&misleading), Some(ReportKind::Benchmark));
        assert!(parse_sound(&misleading).is_none());
        let problems = parse_report(&misleading).expect_err("an unknown field");
        assert_eq!(problems[0].path, "$.callable_note");
    }

    #[test]
    fn unknown_version_names_readable_versions() {
        let problems = parse_report(r#"{"schema_version": 7, "kind": "analysis"}"#)
            .expect_err("version 7 is unknown");
        assert_eq!(problems[0].path, "$.schema_version");
        assert!(problems[0].message.contains("this build reads versions: 1"));
    }
}
