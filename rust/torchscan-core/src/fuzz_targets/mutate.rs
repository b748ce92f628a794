//! Structure-aware mutation of report JSON for the fuzz targets: one value at a random path is
//! replaced by an edge case of its kind (numbers at the limits of f64 and of exact integers,
//! strings with control and bidirectional characters, emptied or duplicated arrays, dropped or
//! duplicated keys, swapped types, deeper nesting). Inputs that are not JSON are left to the
//! fuzzer's byte mutations.

use serde_json::Value;

use super::DOCUMENT_SEPARATOR;

/// Numbers a report field may be set to: zero and signs, the ends of f64, the first integer f64
/// cannot hold (2^53 + 1), integers past u64 and i64, and one number past f64 (1e309).
const EDGE_NUMBERS: [&str; 18] = [
    "0",
    "-1",
    "1",
    "-0.0",
    "0.5",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "5e-324",
    "2.2250738585072014e-308",
    "9007199254740993",
    "-9007199254740993",
    "1000000000000000000000000000000",
    "18446744073709551616",
    "-9223372036854775809",
    "4294967296",
    "1e309",
    "1E-7",
];

/// Strings a report field may be set to: empty, control characters, bidirectional overrides and
/// isolates, a byte-order mark, markup, and characters outside the basic plane.
const EDGE_STRINGS: [&str; 10] = [
    "",
    "\u{0}",
    "a\u{0}b\u{7}\u{1b}[31m\r\n\t",
    "\u{202e}evil\u{202c}",
    "\u{2066}x\u{2069}\u{200f}\u{061c}",
    "\u{feff}name",
    "<script>alert(1)</script>&amp;\"'",
    "{{ page }}{% if x %}",
    "\u{1f600}\u{10ffff}\u{fffd}",
    "analysis",
];

/// The first of the two kinds of mutation the fuzz targets count: structure-aware, or left to
/// the fuzzer's byte mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationKind {
    /// One JSON value changed at a random path ([`mutate_documents`] gave bytes).
    Structured,
    /// The input was not JSON, or the result would not fit: the fuzzer's byte mutation.
    Bytes,
}

/// A JSON value that keeps its members' order and may hold one key twice, with numbers kept as
/// their text, so that the mutations can write what `serde_json::Value` cannot hold.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn from_value(value: Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(flag) => Json::Bool(flag),
            Value::Number(number) => Json::Number(number.to_string()),
            Value::String(text) => Json::String(text),
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from_value).collect()),
            Value::Object(members) => Json::Object(
                members
                    .into_iter()
                    .map(|(key, value)| (key, Json::from_value(value)))
                    .collect(),
            ),
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            Json::Number(text) => out.push_str(text),
            Json::String(text) => write_string(text, out),
            Json::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The values in pre-order (the root first).
    fn count(&self) -> usize {
        1 + match self {
            Json::Array(items) => items.iter().map(Json::count).sum(),
            Json::Object(members) => members.iter().map(|(_, value)| value.count()).sum(),
            _ => 0,
        }
    }

    fn nth(&self, index: usize) -> Option<&Json> {
        let mut stack = vec![self];
        let mut seen = 0;
        while let Some(current) = stack.pop() {
            if seen == index {
                return Some(current);
            }
            seen += 1;
            match current {
                Json::Array(items) => stack.extend(items.iter().rev()),
                Json::Object(members) => stack.extend(members.iter().rev().map(|(_, value)| value)),
                _ => {}
            }
        }
        None
    }

    fn nth_mut(&mut self, index: usize) -> Option<&mut Json> {
        let mut stack = vec![self];
        let mut seen = 0;
        while let Some(current) = stack.pop() {
            if seen == index {
                return Some(current);
            }
            seen += 1;
            match current {
                Json::Array(items) => stack.extend(items.iter_mut().rev()),
                Json::Object(members) => {
                    stack.extend(members.iter_mut().rev().map(|(_, value)| value))
                }
                _ => {}
            }
        }
        None
    }
}

fn write_string(text: &str, out: &mut String) {
    match serde_json::to_string(text) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same mutation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound` (`bound` at least 1).
    fn below(&mut self, bound: usize) -> usize {
        let bound = bound.max(1) as u64;
        usize::try_from(self.next() % bound).unwrap_or(0)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len()))
        }
    }
}

/// Another value of the same document, to splice in: a real enum value, key or sub-report where
/// a field of another kind was.
fn donor(root: &Json, rng: &mut Rng) -> Json {
    root.nth(rng.below(root.count()))
        .cloned()
        .unwrap_or(Json::Null)
}

fn donor_string(root: &Json, rng: &mut Rng) -> Option<String> {
    for _ in 0..8 {
        match root.nth(rng.below(root.count())) {
            Some(Json::String(text)) => return Some(text.clone()),
            Some(Json::Object(members)) if !members.is_empty() => {
                return members
                    .get(rng.below(members.len()))
                    .map(|(key, _)| key.clone());
            }
            _ => {}
        }
    }
    None
}

fn mutate_number(text: &str, rng: &mut Rng) -> String {
    let value = text.parse::<f64>().unwrap_or(0.0);
    match rng.below(6) {
        0 => format!("{}", value + 1.0),
        1 => format!("{}", value - 1.0),
        2 => format!("{}", value * 2.0),
        3 => format!("{}", -value),
        _ => rng.pick(&EDGE_NUMBERS).copied().unwrap_or("0").to_owned(),
    }
}

fn mutate_string(text: &str, root: &Json, rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => donor_string(root, rng).unwrap_or_default(),
        1 => "\u{202e}x".repeat(1 + rng.below(2048)),
        2 => {
            let extra = rng.pick(&EDGE_STRINGS).copied().unwrap_or("");
            let cut = rng.below(text.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|at| text.is_char_boundary(*at))
                .unwrap_or(0);
            format!("{}{extra}{}", &text[..cut], &text[cut..])
        }
        3 => {
            let keep = rng.below(text.len() + 1);
            let keep = (0..=keep)
                .rev()
                .find(|at| text.is_char_boundary(*at))
                .unwrap_or(0);
            text[..keep].to_owned()
        }
        _ => rng.pick(&EDGE_STRINGS).copied().unwrap_or("").to_owned(),
    }
}

fn swapped_type(rng: &mut Rng) -> Json {
    match rng.below(7) {
        0 => Json::Null,
        1 => Json::Bool(rng.below(2) == 0),
        2 => Json::Number("0".to_owned()),
        3 => Json::String(String::new()),
        4 => Json::Array(Vec::new()),
        5 => Json::Object(Vec::new()),
        _ => Json::Number("NaN".to_owned()),
    }
}

fn deepened(value: Json, rng: &mut Rng) -> Json {
    // Up to 200 levels: past serde_json's limit of 128 as well as under it.
    let levels = 1 + rng.below(200);
    let mut nested = value;
    for level in 0..levels {
        nested = if level % 2 == 0 {
            Json::Array(vec![nested])
        } else {
            Json::Object(vec![("nested".to_owned(), nested)])
        };
    }
    nested
}

/// Changes one value of `root` at a random path.
fn mutate_value(root: &mut Json, rng: &mut Rng) {
    let target = rng.below(root.count());
    let spliced = donor(root, rng);
    let Some(node) = root.nth_mut(target) else {
        return;
    };
    // A quarter of the time the value's kind does not matter: swap the type, splice another
    // value of the document in, or nest the value deeper.
    if rng.below(4) == 0 {
        let old = std::mem::replace(node, Json::Null);
        *node = match rng.below(3) {
            0 => swapped_type(rng),
            1 => spliced,
            _ => deepened(old, rng),
        };
        return;
    }
    match node {
        Json::Null => *node = spliced,
        Json::Bool(flag) => *flag = !*flag,
        Json::Number(text) => *text = mutate_number(text, rng),
        Json::String(text) => {
            let old = std::mem::take(text);
            *text = mutate_string(&old, &spliced, rng);
        }
        Json::Array(items) => match rng.below(5) {
            0 => items.clear(),
            1 => {
                let doubled = items.clone();
                items.extend(doubled);
            }
            2 if !items.is_empty() => {
                let at = rng.below(items.len());
                items.remove(at);
            }
            3 if !items.is_empty() => {
                let at = rng.below(items.len());
                let copy = items[at].clone();
                items.insert(at, copy);
            }
            _ => items.push(spliced),
        },
        Json::Object(members) => match rng.below(5) {
            0 if !members.is_empty() => {
                let at = rng.below(members.len());
                members.remove(at);
            }
            1 if !members.is_empty() => {
                // The same key twice, with the same value or another.
                let at = rng.below(members.len());
                let (key, value) = members[at].clone();
                let value = if rng.below(2) == 0 { value } else { spliced };
                let insert_at = rng.below(members.len() + 1);
                members.insert(insert_at, (key, value));
            }
            2 if !members.is_empty() => {
                let at = rng.below(members.len());
                let key = donor_string(&members[at].1, rng).unwrap_or_else(|| "extra".to_owned());
                members[at].0 = key;
            }
            3 => members.clear(),
            _ => members.push(("extra".to_owned(), spliced)),
        },
    }
}

/// One JSON document mutated, or `None` when `text` is not JSON.
fn mutate_document(text: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(text).ok()?;
    let mut root = Json::from_value(value);
    let rounds = 1 + usize::from(rng.below(4) == 0) + usize::from(rng.below(16) == 0);
    for _ in 0..rounds {
        mutate_value(&mut root, rng);
    }
    let mut out = String::with_capacity(text.len() + 64);
    root.write(&mut out);
    Some(out.into_bytes())
}

/// Mutates one of the NUL-separated JSON documents of `data` at a random path (or, now and
/// then, copies one document over another); `None` when the chosen document is not JSON or the
/// result would be longer than `max_size`, for the caller to fall back to byte mutation.
pub fn mutate_documents(data: &[u8], seed: u64, max_size: usize) -> Option<Vec<u8>> {
    let mut rng = Rng(seed);
    let mut documents: Vec<Vec<u8>> = data
        .split(|byte| *byte == DOCUMENT_SEPARATOR)
        .map(<[u8]>::to_vec)
        .collect();
    let chosen = rng.below(documents.len());
    if documents.len() > 1 && rng.below(16) == 0 {
        let source = rng.below(documents.len());
        let copy = documents.get(source)?.clone();
        *documents.get_mut(chosen)? = copy;
    } else {
        let mutated = mutate_document(documents.get(chosen)?, &mut rng)?;
        *documents.get_mut(chosen)? = mutated;
    }
    let joined = documents.join(&DOCUMENT_SEPARATOR);
    (joined.len() <= max_size).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"a":1.5,"b":["x","y"],"c":{"d":true,"e":null}}"#;

    #[test]
    fn text_that_is_not_json_is_left_to_byte_mutation() {
        assert_eq!(mutate_documents(b"{not json", 7, 4096), None);
        assert_eq!(mutate_documents(&[0xff, 0xfe], 7, 4096), None);
    }

    #[test]
    fn a_result_longer_than_the_limit_is_refused() {
        let limit = SMALL.len();
        let results: Vec<_> = (0..500)
            .map(|seed| mutate_documents(SMALL.as_bytes(), seed, limit))
            .collect();
        assert!(results.iter().flatten().all(|bytes| bytes.len() <= limit));
        assert!(results.iter().any(Option::is_none));
    }

    #[test]
    fn mutations_reach_every_kind_of_edge_case() {
        let outputs: Vec<String> = (0..5000)
            .filter_map(|seed| mutate_documents(SMALL.as_bytes(), seed, 1 << 20))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .collect();
        assert_eq!(
            outputs.len(),
            5000,
            "every seed of a JSON input gives a mutation"
        );
        let any = |needle: &str| outputs.iter().any(|text| text.contains(needle));
        for needle in [
            "9007199254740993",
            "1e308",
            "-0.0",
            "1000000000000000000000000000000",
            "\\u0000",
            "\u{202e}",
            "\"b\":[]",
            r#"[{"nested":[{"nested":["#,
            "NaN",
        ] {
            assert!(any(needle), "no mutation wrote {needle}");
        }
        // A key written twice, and a key dropped.
        assert!(
            outputs
                .iter()
                .any(|text| text.matches("\"a\":").count() == 2)
        );
        assert!(outputs.iter().any(|text| !text.contains("\"a\":")));
        // An array with an element duplicated.
        assert!(outputs.iter().any(|text| text.contains("\"x\",\"x\"")));
    }

    #[test]
    fn only_one_document_of_several_changes() {
        let data = [SMALL.as_bytes(), &[DOCUMENT_SEPARATOR], SMALL.as_bytes()].concat();
        for seed in 0..200 {
            let Some(mutated) = mutate_documents(&data, seed, 1 << 20) else {
                panic!("seed {seed} gave no mutation of two JSON documents");
            };
            let parts: Vec<&[u8]> = mutated.split(|byte| *byte == DOCUMENT_SEPARATOR).collect();
            assert_eq!(parts.len(), 2);
            assert!(
                parts.iter().any(|part| *part == SMALL.as_bytes()),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_mutation() {
        for seed in 0..50 {
            assert_eq!(
                mutate_documents(SMALL.as_bytes(), seed, 4096),
                mutate_documents(SMALL.as_bytes(), seed, 4096)
            );
        }
    }
}
