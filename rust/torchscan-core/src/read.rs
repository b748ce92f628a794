//! Reading report JSON: dispatch on `schema_version`, then `kind`, then typed parsing with JSON paths.
//!
//! Non-finite numbers (`NaN`, `Infinity`, `-Infinity`, as Python's `json` writes them) are not JSON;
//! they are read leniently here only so that each one can be reported at its path instead of failing
//! the whole parse with a line and column.

use std::fmt;

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
    replace_non_finite_tokens(text, |token, out| {
        out.push_str("\"\\u0000torchscan-non-finite:");
        out.push_str(token);
        out.push('"');
    })
}

/// Replaces bare `NaN`, `Infinity` and `-Infinity` tokens outside strings by `0`, so that the
/// typed parse can still look for a structural error in the rest of the document. Returns `None`
/// when the text has none.
fn zero_non_finite_tokens(text: &str) -> Option<String> {
    replace_non_finite_tokens(text, |_, out| out.push('0'))
}

/// Replaces every bare non-finite token outside strings by what `write` writes for it.
fn replace_non_finite_tokens(text: &str, write: impl Fn(&str, &mut String)) -> Option<String> {
    let bytes = text.as_bytes();
    let mut replaced: Option<String> = None;
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
                let out = replaced.get_or_insert_with(|| String::with_capacity(text.len() + 64));
                out.push_str(&text[copied_up_to..index]);
                write(token, out);
                index += token.len();
                copied_up_to = index;
            }
            None => index += 1,
        }
    }
    if let Some(out) = replaced.as_mut() {
        out.push_str(&text[copied_up_to..]);
    }
    replaced
}

/// The problem of a non-finite number found at `path`.
fn non_finite_problem(path: &JsonPath, token: &str) -> Problem {
    Problem::new(
        path.to_string(),
        format!("non-finite number {token} is not allowed; numbers must be finite"),
    )
}

/// The deepest nesting of arrays and objects a report may have, the root object counting as one
/// (serde_json's recursion limit). Value metadata, the deepest part of a report, stops at 32
/// levels of containers, about 100 levels of JSON.
pub const MAX_NESTING_DEPTH: usize = 127;

/// What the top level of a document is, as a problem says it: `an array`, `a string`...
fn found_name(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Null => "null",
    }
}

/// What [`Scan`] found while reading: the path it is at, the first problem it met, every
/// non-finite number, and the top level (whether it is an object, with its `schema_version` and
/// `kind`).
struct Reading {
    path: JsonPath,
    depth: usize,
    problem: Option<Problem>,
    non_finite: Vec<(JsonPath, String)>,
    /// What the top level is when it is not an object: `an array`, ...
    root_not_object: Option<&'static str>,
    version: Option<Value>,
    kind: Option<Value>,
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

/// Reads a JSON value and checks it as a report's text must be: a key given twice in one object
/// and nesting past [`MAX_NESTING_DEPTH`] are refused, each at its JSON path, and every
/// non-finite number (a marker string of [`quote_non_finite_tokens`]) is listed at its path.
///
/// Nothing of the document is kept (its memory is the keys of the open objects), except what
/// `capture` asks for: the value itself, as serde_json's own `Value` (for the top level's
/// `schema_version` and `kind`, so that an array of millions of numbers is never a tree of
/// values). The top level is recorded as an object or as what it is.
struct Scan<'r> {
    reading: &'r mut Reading,
    capture: bool,
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Value>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Scan<'_> {
    /// A scalar: kept when captured; at the top level, recorded as not an object.
    fn scalar(self, value: impl FnOnce() -> Value) -> Option<Value> {
        if self.reading.depth == 0 {
            self.reading.root_not_object = Some(found_name(&value()));
            return None;
        }
        self.capture.then(value)
    }

    fn child(&mut self) -> Scan<'_> {
        Scan {
            reading: &mut *self.reading,
            capture: self.capture,
        }
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = Option<Value>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| Value::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| Value::from(value)))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| Value::from(value)))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Option<Value>, E> {
        if let Some(token) = value.strip_prefix(NON_FINITE_MARKER) {
            self.reading
                .non_finite
                .push((self.reading.path.clone(), token.to_owned()));
            // Read as 0, as the typed parse will read it.
            return Ok(self.scalar(|| Value::from(0)));
        }
        Ok(self.scalar(|| Value::String(value.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| Value::Null))
    }

    fn visit_none<E>(self) -> Result<Option<Value>, E> {
        Ok(self.scalar(|| Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut items: A) -> Result<Option<Value>, A::Error> {
        if self.reading.depth == 0 {
            self.reading.root_not_object = Some("an array");
        }
        self.reading.depth += 1;
        let mut values = Vec::new();
        let mut index = 0;
        loop {
            self.reading.path.push_index(index);
            let item = items.next_element_seed(self.child());
            match item {
                Ok(Some(item)) => {
                    if let Some(item) = item {
                        values.push(item);
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    self.reading.child_failed(&error);
                    return Err(error);
                }
            }
            self.reading.path.pop();
            index += 1;
        }
        self.reading.path.pop();
        self.reading.depth -= 1;
        Ok(self.capture.then_some(Value::Array(values)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Option<Value>, A::Error> {
        let root = self.reading.depth == 0;
        self.reading.depth += 1;
        let mut keys = std::collections::BTreeSet::new();
        let mut object = serde_json::Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            self.reading.path.push_key(&key);
            if keys.contains(&key) {
                if self.reading.problem.is_none() {
                    self.reading.problem = Some(Problem::new(
                        self.reading.path.to_string(),
                        format!("duplicate key `{key}`; each key appears once in an object"),
                    ));
                }
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            // The top level's version and kind are kept, for the dispatch; nothing else is.
            let kept = root && (key == "schema_version" || key == "kind");
            let item = entries.next_value_seed(Scan {
                reading: &mut *self.reading,
                capture: self.capture || kept,
            });
            match item {
                Ok(item) => {
                    if kept {
                        let slot = if key == "kind" {
                            &mut self.reading.kind
                        } else {
                            &mut self.reading.version
                        };
                        *slot = item;
                    } else if let Some(item) = item {
                        object.insert(key.clone(), item);
                    }
                }
                Err(error) => {
                    self.reading.child_failed(&error);
                    return Err(error);
                }
            }
            keys.insert(key);
            self.reading.path.pop();
        }
        self.reading.depth -= 1;
        Ok(self.capture.then_some(Value::Object(object)))
    }
}

/// Reads JSON text with [`Scan`]: a duplicate key or nesting too deep is a problem at its path,
/// any other error a problem at `$` with serde_json's line and column.
fn scan_text(source: &str) -> Result<Reading, Problem> {
    let mut reading = Reading {
        path: JsonPath::root(),
        depth: 0,
        problem: None,
        non_finite: Vec::new(),
        root_not_object: None,
        version: None,
        kind: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(source);
    let scanned = Scan {
        reading: &mut reading,
        capture: false,
    }
    .deserialize(&mut deserializer)
    .and_then(|_| deserializer.end());
    match scanned {
        Ok(()) => Ok(reading),
        Err(error) => Err(reading
            .problem
            .take()
            .unwrap_or_else(|| Problem::new("$", format!("not valid JSON: {error}")))),
    }
}

/// Checks JSON text without building it: every non-finite number by path, in the order of the
/// document's keys sorted (as a map of serde_json sorts them), and what the top level is.
fn scan_json(text: &str) -> Result<(Reading, Vec<Problem>), Vec<Problem>> {
    let quoted = quote_non_finite_tokens(text);
    let source = quoted.as_deref().unwrap_or(text);
    let mut reading = scan_text(source).map_err(|problem| vec![problem])?;
    let mut found = std::mem::take(&mut reading.non_finite);
    found.sort_by(|left, right| left.0.cmp(&right.0));
    let problems = found
        .iter()
        .map(|(path, token)| non_finite_problem(path, token))
        .collect();
    Ok((reading, problems))
}

/// What the first character of JSON text (after white space) says the document is, when that
/// is an array or a string: a report is an object, so such a document is refused from its first
/// byte, before any of it is read (an array of millions of numbers would otherwise be read
/// whole). Other values are short, or are read as any document is.
fn not_an_object_from_the_start(text: &str) -> Option<&'static str> {
    let first = text
        .bytes()
        .find(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))?;
    match first {
        b'[' => Some("an array"),
        b'"' => Some("a string"),
        _ => None,
    }
}

fn not_an_object(found: &str) -> Problem {
    Problem::new("$", format!("a report is a JSON object, got {found}"))
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

/// Reads the `schema_version` and `kind` of a scanned document, before anything else.
fn dispatch(reading: &Reading) -> Result<ReportKind, Problem> {
    if let Some(found) = reading.root_not_object {
        return Err(not_an_object(found));
    }
    let version = match &reading.version {
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
    match &reading.kind {
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

/// The typed report read from JSON text that [`scan_json`] found sound, with the path of its
/// first structural error. serde_json's line and column are left out of the message: the path
/// says where.
fn typed<T: DeserializeOwned>(text: &str) -> Result<T, Problem> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = JsonPath::from_serde(error.path());
        let inner = error.into_inner();
        let mut message = inner.to_string();
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        if inner.line() > 0 && message.ends_with(&position) {
            message.truncate(message.len() - position.len());
        }
        field_problem(path, message)
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

/// The typed report of a sound document, read straight from the text; `None` for anything else.
///
/// This is the common case made cheap: no intermediate [`Value`] tree and no path tracking. A
/// typed report succeeds only for its own `kind` and for `schema_version` 1, so a wrong guess of
/// the kind only costs time. It accepts exactly the documents that [`parse_careful`] accepts
/// without a problem (strict JSON has no non-finite tokens, and a document this parse refuses,
/// such as one with a duplicated field, is handed to the careful path), so whatever it rejects is
/// read again there, which finds the problems with their paths. Both paths refuse a key given
/// twice in one object (see [`unique_keys`](crate::schema::unique_keys)) and nesting past [`MAX_NESTING_DEPTH`].
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
    if let Some(found) = not_an_object_from_the_start(text) {
        return (None, vec![not_an_object(found)]);
    }
    match parse_sound(text) {
        Some(report) => (Some(report), Vec::new()),
        None => parse_careful(text),
    }
}

/// The careful path: the text is scanned first without being kept (non-finite numbers, duplicate
/// keys and nesting too deep reported by path), then the version and kind, then the typed parse
/// with the path of its first structural error. No tree of [`Value`]s is built: a document costs
/// its typed report, as on the sound path.
fn parse_careful(text: &str) -> (Option<Report>, Vec<Problem>) {
    let (reading, mut problems) = match scan_json(text) {
        Ok(scanned) => scanned,
        Err(problems) => return (None, problems),
    };
    let kind = match dispatch(&reading) {
        Ok(kind) => kind,
        Err(problem) => {
            problems.push(problem);
            return (None, problems);
        }
    };
    drop(reading);
    let zeroed = zero_non_finite_tokens(text);
    let value = zeroed.as_deref().unwrap_or(text);
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
    fn non_finite_numbers_are_reported_by_path_in_the_order_of_sorted_keys() {
        let (reading, problems) =
            scan_json(r#"{"b": {"c": -Infinity}, "a": [1, NaN, {"z": NaN, "y": Infinity}]}"#)
                .expect("parses leniently");
        assert_eq!(reading.root_not_object, None);
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["$.a[1]", "$.a[2].y", "$.a[2].z", "$.b.c"]);
        assert_eq!(
            problems[3].message,
            "non-finite number -Infinity is not allowed; numbers must be finite"
        );
        assert_eq!(
            zero_non_finite_tokens(r#"{"a": [NaN, "NaN", -Infinity]}"#).as_deref(),
            Some(r#"{"a": [0, "NaN", 0]}"#)
        );
    }

    #[test]
    fn the_scan_keeps_only_the_version_and_kind_of_the_top_level() {
        let (reading, problems) = scan_json(
            r#"{"x": {"kind": "tensor", "schema_version": 3}, "kind": ["a", NaN],
                "schema_version": NaN}"#,
        )
        .expect("parses");
        assert_eq!(reading.version, Some(Value::from(0)));
        assert_eq!(reading.kind, Some(serde_json::json!(["a", 0])));
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["$.kind[1]", "$.schema_version"]);
        for (text, found) in [("[1]", "an array"), ("3", "a number"), ("null", "null")] {
            let (reading, _) = scan_json(text).expect("parses");
            assert_eq!(reading.root_not_object, Some(found), "{text}");
        }
    }

    #[test]
    fn arrays_and_strings_are_refused_from_their_first_byte() {
        for (text, found) in [
            (" \n\t[", Some("an array")),
            ("\r\n\"unterminated", Some("a string")),
            ("{\"a\": []}", None),
            ("3", None),
            ("", None),
        ] {
            assert_eq!(not_an_object_from_the_start(text), found, "{text:?}");
        }
        // Not even valid JSON: what matters is that a report is an object.
        let problems = parse_report("[0, 0, 0").expect_err("not an object");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "$");
        assert_eq!(
            problems[0].message,
            "a report is a JSON object, got an array"
        );
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
