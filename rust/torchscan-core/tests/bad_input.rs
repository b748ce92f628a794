//! Bad report input: duplicate keys, nesting too deep, documents that are not objects, and
//! control or bidirectional characters shown escaped in every renderer.

use std::fs;
use std::path::Path;

use torchscan_core::{format_summary, read_report, render_html};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports")
        .join(name);
    fs::read_to_string(path).expect("fixture")
}

#[test]
fn a_duplicate_key_is_refused_at_its_path() {
    let text = fixture("benchmark_readme_cpu.json");
    let duplicated = text.replacen("\"device\": ", "\"device\": \"cpu\", \"device\": ", 1);
    assert_ne!(duplicated, text);
    let problems = read_report(&duplicated).expect_err("duplicate");
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "$.context.device");
    assert_eq!(
        problems[0].message,
        "duplicate key `device`; each key appears once in an object"
    );
}

#[test]
fn a_duplicate_map_key_is_refused_even_when_spelled_with_an_escape() {
    let text = fixture("flops_square_matmul.json");
    let at = text.find("\"by_operator\": {").expect("by_operator") + "\"by_operator\": {".len();
    for key in ["aten.mm", "aten.m\\u006d"] {
        let mut duplicated = text.clone();
        duplicated.insert_str(at, &format!("\"{key}\": 1.0, "));
        let problems = read_report(&duplicated).expect_err("duplicate map key");
        assert_eq!(
            problems[0].path, "$.operator_flops.by_operator[\"aten.mm\"]",
            "{key}"
        );
    }
}

#[test]
fn nesting_is_read_to_127_levels_and_refused_past_them_at_a_path() {
    let nested = |depth: usize| {
        format!(
            "{{\"a\": {}1{}}}",
            "[".repeat(depth - 1),
            "]".repeat(depth - 1)
        )
    };
    let problems = read_report(&nested(127)).expect_err("not a report");
    assert_eq!(problems[0].path, "$.schema_version");
    let problems = read_report(&nested(128)).expect_err("too deep");
    assert_eq!(problems.len(), 1);
    let expected_path = format!("$.a{}", "[0]".repeat(126));
    assert_eq!(problems[0].path, expected_path);
    assert!(
        problems[0]
            .message
            .starts_with("nested too deeply: a report nests at most 127")
    );
    let problems = read_report(&nested(10_000)).expect_err("too deep");
    assert_eq!(problems[0].path, expected_path);
}

#[test]
fn a_document_that_is_not_an_object_says_what_it_is() {
    for (text, found) in [
        ("[]", "an array"),
        ("\"x\"", "a string"),
        ("3", "a number"),
        ("true", "a boolean"),
        ("null", "null"),
    ] {
        let problems = read_report(text).expect_err("not an object");
        assert_eq!(problems[0].path, "$");
        assert_eq!(
            problems[0].message,
            format!("a report is a JSON object, got {found}")
        );
    }
}

#[test]
fn strings_with_controls_and_bidi_characters_show_escaped_in_text_and_html() {
    let text = fixture("flops_square_matmul.json");
    let report = read_report(&text).expect("valid");
    let mut value = serde_json::to_value(&report).expect("value");
    value["context"]["device"] = serde_json::Value::from("a\u{202e}b\u{0}c");
    let hostile = read_report(&value.to_string()).expect("still valid");
    let summary = format_summary(&hostile);
    let html = render_html(&hostile).expect("page");
    for output in [&summary, &html] {
        assert!(!output.contains('\u{202e}') && !output.contains('\u{0}'));
    }
    assert!(html.contains("a\\u202eb\\u0000c"), "{html}");
    assert!(summary.contains("a\\u202eb\\u0000c"), "{summary}");
    // Untouched reports render exactly as before.
    assert_eq!(
        format_summary(&report),
        format_summary(&read_report(&text).expect("valid"))
    );
}

#[test]
fn at_most_a_thousand_problems_are_listed_and_the_rest_counted() {
    let example = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../python/torchscan/data/example_workload.json"),
    )
    .expect("example");
    let mut report: serde_json::Value = serde_json::from_str(&example).expect("JSON");
    let timing = report["timing"].as_object_mut().expect("timing");
    timing.remove("block_starts_s");
    timing.insert(
        "block_durations_s".to_owned(),
        serde_json::json!(vec![0.0; 5000]),
    );
    let text = serde_json::to_string(&report).expect("JSON");
    let problems = read_report(&text).expect_err("every block is 0 s long");
    assert_eq!(problems.len(), 1001);
    for (index, problem) in problems[..1000].iter().enumerate() {
        assert_eq!(problem.path, format!("$.timing.block_durations_s[{index}]"));
        assert_eq!(problem.message, "block durations must be positive, found 0");
    }
    let last = &problems[1000];
    assert_eq!(last.path, "$");
    // 4000 more blocks, and the latency, IQR and throughput that they do not give.
    let (count, rest) = last.message.split_once(' ').expect("a count");
    assert!(count.parse::<usize>().expect("a number") >= 4000, "{last}");
    assert_eq!(
        rest,
        "more problems are not listed (at most 1000 are); fix the ones above first"
    );
}
