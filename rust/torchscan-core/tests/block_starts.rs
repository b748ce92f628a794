//! `timing.block_starts_s`: optional in schema v1, round-trips with and without it, and a report
//! that has it is checked against its block durations (length, finite, first 0, time order).

use std::fs;
use std::path::Path;

use serde_json::Value;
use torchscan_core::benchmark_comparison::{
    CompareOptions, Pairing, compare_benchmarks_json, compare_benchmarks_json_with,
};
use torchscan_core::schema::Report;
use torchscan_core::validate::check_report;
use torchscan_core::{Problem, read_report, to_json_text};

fn fixture_text() -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join("tests/fixtures/reports/benchmark_readme_cpu.json"),
    )
    .expect("fixture")
}

fn durations() -> Vec<f64> {
    let report: Value = serde_json::from_str(&fixture_text()).expect("JSON");
    report["timing"]["block_durations_s"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|value| value.as_f64().expect("number"))
        .collect()
}

/// Starts of back-to-back blocks with a gap of `gap_s` between one block's end and the next start.
fn starts_with_gap(gap_s: f64) -> Vec<f64> {
    let mut starts = vec![0.0];
    for duration in durations().iter().take(durations().len() - 1) {
        let previous = *starts.last().expect("one start");
        starts.push(previous + duration + gap_s);
    }
    starts
}

/// The README fixture with `timing.block_starts_s` set to `starts`, as JSON text.
fn with_starts(starts: &[f64]) -> String {
    let mut report: Value = serde_json::from_str(&fixture_text()).expect("JSON");
    report["timing"]["block_starts_s"] = serde_json::json!(starts);
    serde_json::to_string_pretty(&report).expect("JSON text")
}

fn problems(text: &str) -> Vec<Problem> {
    match read_report(text) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

/// The README fixture, typed, with its starts set in the struct (numbers JSON cannot carry).
fn typed_with_starts(starts: Vec<f64>) -> Report {
    let mut report = read_report(&fixture_text()).expect("valid fixture");
    match &mut report {
        Report::Benchmark(benchmark) => {
            benchmark.timing.as_mut().expect("timing").block_starts_s = Some(starts);
        }
        _ => panic!("the fixture is a benchmark report"),
    }
    report
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).expect("JSON")
}

fn paths(problems: &[Problem]) -> Vec<&str> {
    problems
        .iter()
        .map(|problem| problem.path.as_str())
        .collect()
}

#[test]
fn a_report_without_starts_reads_and_round_trips_without_them() {
    let text = fixture_text();
    assert!(!text.contains("block_starts_s"));
    let report = read_report(&text).expect("valid");
    match &report {
        Report::Benchmark(benchmark) => {
            assert_eq!(
                benchmark.timing.as_ref().expect("timing").block_starts_s,
                None
            );
        }
        _ => panic!("the fixture is a benchmark report"),
    }
    let written = to_json_text(&report);
    assert!(!written.contains("block_starts_s"));
    assert_eq!(json(&written), json(&text));
}

#[test]
fn a_report_with_starts_reads_and_round_trips_with_them() {
    let starts = starts_with_gap(1.5e-6);
    let text = with_starts(&starts);
    let report = read_report(&text).expect("valid");
    match &report {
        Report::Benchmark(benchmark) => assert_eq!(
            benchmark.timing.as_ref().expect("timing").block_starts_s,
            Some(starts.clone())
        ),
        _ => panic!("the fixture is a benchmark report"),
    }
    let written = to_json_text(&report);
    assert_eq!(json(&written), json(&text));
    let reread = read_report(&written).expect("still valid");
    assert_eq!(reread, report);
    assert_eq!(to_json_text(&reread), written);
    // Written right after the durations they belong to.
    let position = |key: &str| written.find(&format!("\"{key}\": ")).expect(key);
    assert!(position("block_durations_s") < position("block_starts_s"));
    assert!(position("block_starts_s") < position("timer_overhead_s"));
}

#[test]
fn null_starts_read_as_absent() {
    let mut report: Value = serde_json::from_str(&fixture_text()).expect("JSON");
    report["timing"]["block_starts_s"] = Value::Null;
    let text = serde_json::to_string(&report).expect("JSON text");
    let typed = read_report(&text).expect("valid");
    assert_eq!(json(&to_json_text(&typed)), json(&fixture_text()));
}

#[test]
fn back_to_back_blocks_without_a_gap_are_valid() {
    assert_eq!(problems(&with_starts(&starts_with_gap(0.0))), []);
    assert_eq!(problems(&with_starts(&starts_with_gap(0.25))), []);
}

#[test]
fn one_start_per_block_is_required() {
    let mut starts = starts_with_gap(1e-6);
    starts.pop();
    let found = problems(&with_starts(&starts));
    assert_eq!(paths(&found), ["$.timing.block_starts_s"]);
    assert_eq!(
        found[0].message,
        "has 32 starts for 33 block durations; every timed block has one start"
    );
    starts.extend([1.0, 2.0]);
    let found = problems(&with_starts(&starts));
    assert_eq!(paths(&found), ["$.timing.block_starts_s"]);
    assert_eq!(
        found[0].message,
        "has 34 starts for 33 block durations; every timed block has one start"
    );
    let found = problems(&with_starts(&[]));
    assert_eq!(paths(&found), ["$.timing.block_starts_s"]);
}

#[test]
fn the_first_block_starts_at_zero() {
    let starts: Vec<f64> = starts_with_gap(1e-6).iter().map(|s| s + 0.5).collect();
    let found = problems(&with_starts(&starts));
    assert_eq!(paths(&found), ["$.timing.block_starts_s[0]"]);
    assert_eq!(
        found[0].message,
        "the first block starts at 0 (starts are measured from it), found 0.5"
    );
}

#[test]
fn a_block_cannot_start_before_the_previous_one_ended() {
    let durations = durations();
    let mut starts = starts_with_gap(0.0);
    starts[5] = starts[4] + durations[4] / 2.0;
    let found = problems(&with_starts(&starts));
    assert_eq!(paths(&found), ["$.timing.block_starts_s[5]"]);
    assert!(
        found[0].message.contains("before block 4 ended"),
        "{}",
        found[0].message
    );
    // Out of time order: two starts swapped.
    let mut starts = starts_with_gap(1e-6);
    starts.swap(10, 11);
    assert_eq!(
        paths(&problems(&with_starts(&starts))),
        ["$.timing.block_starts_s[11]"]
    );
}

#[test]
fn the_order_check_allows_a_relative_error_of_1e_9_of_the_larger_number() {
    let durations = durations();
    let exact = starts_with_gap(0.0);
    let end_of_block_19 = exact[19] + durations[19];
    let mut starts = exact.clone();
    starts[20] = end_of_block_19 * (1.0 - 0.5e-9);
    assert_eq!(problems(&with_starts(&starts)), []);
    starts[20] = end_of_block_19 * (1.0 - 2e-9);
    assert_eq!(
        paths(&problems(&with_starts(&starts))),
        ["$.timing.block_starts_s[20]"]
    );
}

#[test]
fn non_finite_starts_are_refused_by_path() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut starts = starts_with_gap(1e-6);
        starts[3] = bad;
        let found = check_report(&typed_with_starts(starts));
        assert!(
            found
                .iter()
                .any(|problem| problem.path == "$.timing.block_starts_s[3]"
                    && problem.message == format!("must be finite, found {bad}")),
            "{bad}: {found:#?}"
        );
    }
    let mut starts = starts_with_gap(1e-6);
    starts[0] = f64::NAN;
    let found = check_report(&typed_with_starts(starts));
    assert!(
        paths(&found).contains(&"$.timing.block_starts_s[0]"),
        "{found:#?}"
    );
    // As text, the reader refuses a non-finite token at the same path.
    let text = with_starts(&starts_with_gap(1e-6)).replacen(
        "\"block_starts_s\": [\n      0.0,",
        "\"block_starts_s\": [\n      Infinity,",
        1,
    );
    assert!(text.contains("Infinity"));
    assert!(
        paths(&problems(&text)).contains(&"$.timing.block_starts_s[0]"),
        "{:#?}",
        problems(&text)
    );
}

#[test]
fn starts_change_a_comparison_only_through_the_span() {
    let options = CompareOptions::default();
    let plain = fixture_text();
    let timed = with_starts(&starts_with_gap(2e-6));
    let spread = with_starts(&starts_with_gap(0.03));
    let other_spread = with_starts(&starts_with_gap(0.125));
    let compare = |left: &str, right: &str, pairing| {
        compare_benchmarks_json_with(left, right, None, &options, pairing).expect("comparable")
    };
    // Interleaved: starts play no part.
    let without = compare(&plain, &plain, Pairing::Rounds);
    assert_eq!(without, compare(&timed, &other_spread, Pairing::Rounds));
    assert_eq!(without, compare(&plain, &timed, Pairing::Rounds));
    assert!(!without.contains("block_starts_s"));
    // Apart: the span decides whether a report is long enough (0.2 s of blocks back to back is
    // not; with gaps of 30 ms or 125 ms between them it lasts 1.2 s or 4.2 s), and nothing else.
    let short: Value =
        serde_json::from_str(&compare(&plain, &timed, Pairing::Independent)).expect("JSON");
    assert_eq!(short["verdict"], "inconclusive");
    assert!(short["deltas"][0]["ratio_ci_low"].is_null());
    assert_eq!(
        compare(&spread, &spread, Pairing::Independent),
        compare(&other_spread, &spread, Pairing::Independent)
    );
    let long: Value =
        serde_json::from_str(&compare(&spread, &other_spread, Pairing::Independent)).expect("JSON");
    assert!(long["deltas"][0]["ratio_ci_low"].is_f64());
    assert_eq!(
        compare_benchmarks_json(&timed, &timed, None, &options).expect("comparable"),
        compare_benchmarks_json(&plain, &plain, None, &options).expect("comparable")
    );
}
