//! Problems found in a report, each located by a JSON path such as `$.layers[3].flops.value`.

use std::fmt;

/// One step of a JSON path. Steps order as a walk of a document whose object keys are sorted
/// visits them (keys by their text, items by their index).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Key(String),
    Index(usize),
}

/// A JSON path from the document root (`$`), built while walking a report. Paths order as a walk
/// of a document whose object keys are sorted visits them.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// The root, written `$`.
    pub fn root() -> Self {
        JsonPath::default()
    }

    /// Descends into an object member.
    pub fn push_key(&mut self, key: &str) {
        self.steps.push(Step::Key(key.to_owned()));
    }

    /// Descends into an array item.
    pub fn push_index(&mut self, index: usize) {
        self.steps.push(Step::Index(index));
    }

    /// Goes back up one step.
    pub fn pop(&mut self) {
        self.steps.pop();
    }

    /// Converts the path serde recorded when a typed parse failed.
    pub fn from_serde(path: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment;
        let mut json_path = JsonPath::root();
        for segment in path.iter() {
            match segment {
                Segment::Seq { index } => json_path.push_index(*index),
                Segment::Map { key } => json_path.push_key(key),
                // Enum segments name a variant, not a place in the document; unknown segments
                // carry nothing we can print.
                Segment::Enum { .. } | Segment::Unknown => {}
            }
        }
        json_path
    }
}

fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(first) if first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("$")?;
        for step in &self.steps {
            match step {
                Step::Key(key) if is_plain_key(key) => write!(formatter, ".{key}")?,
                Step::Key(key) => {
                    let quoted = serde_json::to_string(key).map_err(|_| fmt::Error)?;
                    write!(formatter, "[{quoted}]")?;
                }
                Step::Index(index) => write!(formatter, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// One problem in a report: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON path of the offending field, for example `$.metrics.latency.value`.
    pub path: String,
    /// What is wrong, for people.
    pub message: String,
}

impl Problem {
    /// A problem at `path`. Control and bidirectional formatting characters that a path or a
    /// message quotes from the report are written escaped (`\u202e`, see
    /// [`display_text`](crate::format::display_text)), so that a problem prints as it reads.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            path: shown(path.into()),
            message: shown(message.into()),
        }
    }

    /// This problem as found in the input named `side` (`before`, `baseline`, `check`, ...) of a
    /// comparison: its path prefixed `side:`, as in `before:$.totals.parameters`.
    pub fn on_side(&self, side: impl fmt::Display) -> Problem {
        Problem::new(format!("{side}:{}", self.path), self.message.clone())
    }
}

fn shown(text: String) -> String {
    match crate::format::display_text(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.path, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_keys_and_indices() {
        let mut path = JsonPath::root();
        assert_eq!(path.to_string(), "$");
        path.push_key("layers");
        path.push_index(3);
        path.push_key("odd key");
        assert_eq!(path.to_string(), "$.layers[3][\"odd key\"]");
        path.pop();
        path.push_key("flops");
        assert_eq!(path.to_string(), "$.layers[3].flops");
    }

    #[test]
    fn a_side_prefixes_the_path() {
        let problem = Problem::new("$.totals.parameters", "expected a number");
        let shown = problem.on_side("before");
        assert_eq!(shown.path, "before:$.totals.parameters");
        assert_eq!(shown.message, "expected a number");
        assert_eq!(
            shown.to_string(),
            "before:$.totals.parameters: expected a number"
        );
    }
}
