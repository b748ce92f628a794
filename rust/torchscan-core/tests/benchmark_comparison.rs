//! Benchmark comparisons on the shared fixtures: verdicts, withheld deltas, refusals, determinism.

use std::fs;
use std::path::Path;

use serde_json::Value;
use torchscan_core::benchmark_comparison::{
    BenchCompareFailure, CompareOptions, Pairing, compare_benchmarks_json,
    compare_benchmarks_json_with,
};
use torchscan_core::read_report;
use torchscan_core::stats::block_timing;

fn fixture(relative: &str) -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(relative),
    )
    .expect("fixture")
}

fn example() -> String {
    fixture("tests/fixtures/reports/benchmark_readme_m3_pro.json")
}

/// The example workload's block durations.
fn example_blocks() -> Vec<f64> {
    let report: Value = serde_json::from_str(&example()).expect("JSON");
    report["timing"]["block_durations_s"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

/// The example workload with every block `factor` times as long, its statistics recomputed.
fn scaled(factor: f64) -> String {
    with_blocks(example_blocks().iter().map(|d| d * factor).collect())
}

/// The example workload with these block durations, its statistics recomputed.
fn with_blocks(blocks: Vec<f64>) -> String {
    let mut report: Value = serde_json::from_str(&example()).expect("JSON");
    let calls = report["timing"]["calls_per_block"].as_u64().expect("calls");
    let timing = block_timing(&blocks, calls).expect("timing");
    report["timing"]["block_durations_s"] = serde_json::json!(blocks);
    let metrics = &mut report["metrics"];
    for (key, value) in [
        ("latency", timing.latency_s),
        ("latency_iqr", timing.latency_iqr_s),
        ("throughput", 32.0 * timing.calls as f64 / timing.timed_s),
    ] {
        metrics[key]["value"] = serde_json::json!(value);
        metrics[key]["known_value"] = serde_json::json!(value);
    }
    let text = serde_json::to_string(&report).expect("JSON");
    read_report(&text).expect("the scaled report is valid");
    text
}

fn compare(baseline: &str, candidate: &str, check: Option<&str>) -> Value {
    let text = compare_benchmarks_json(baseline, candidate, check, &CompareOptions::default())
        .expect("comparable");
    serde_json::from_str(&text).expect("JSON")
}

fn delta<'a>(report: &'a Value, metric: &str) -> &'a Value {
    report["deltas"]
        .as_array()
        .expect("deltas")
        .iter()
        .find(|d| d["metric"] == metric)
        .expect("metric compared")
}

#[test]
fn a_slower_candidate_is_slower_and_a_faster_one_faster() {
    let slower = compare(&example(), &scaled(1.2), None);
    assert_eq!(slower["verdict"], "slower");
    assert_eq!(delta(&slower, "latency")["verdict"], "slower");
    // Throughput is a mean, so the example's rare slow blocks (up to 4.5 times the median) make
    // its segments spread: 20% is within its interval, 50% is not.
    let throughput = delta(&slower, "throughput");
    let (low, high) = (
        throughput["ratio_ci_low"].as_f64().expect("interval"),
        throughput["ratio_ci_high"].as_f64().expect("interval"),
    );
    assert!(low < 1.0 / 1.2 && 1.0 / 1.2 < high, "[{low}, {high}]");
    let much_slower = compare(&example(), &scaled(1.5), None);
    assert_eq!(delta(&much_slower, "throughput")["verdict"], "slower");
    let low = delta(&slower, "latency")["ratio_ci_low"]
        .as_f64()
        .expect("interval");
    assert!(low > 1.02, "{low}");
    let faster = compare(&example(), &scaled(0.8), None);
    assert_eq!(faster["verdict"], "faster");
    assert_eq!(faster["check"]["status"], "unchecked");
    let codes: Vec<&str> = faster["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"unchecked"));
}

#[test]
fn the_same_report_shows_no_change() {
    let same = compare(&example(), &example(), None);
    let latency = delta(&same, "latency");
    assert_eq!(latency["ratio"], 1.0);
    assert_ne!(same["verdict"], "faster");
    assert_ne!(same["verdict"], "slower");
}

#[test]
fn a_failed_check_withholds_every_delta() {
    let failed = fixture("tests/fixtures/reports/output_check_failed.json");
    let report = compare(&example(), &scaled(1.2), Some(&failed));
    assert_eq!(report["verdict"], "withheld");
    for delta in report["deltas"].as_array().expect("deltas") {
        assert_eq!(delta["status"], "withheld");
        assert!(delta["delta"].is_null() && delta["ratio"].is_null());
    }
    let passed = fixture("tests/fixtures/reports/output_check_passed.json");
    let report = compare(&example(), &scaled(1.2), Some(&passed));
    assert_eq!(report["check"]["status"], "passed");
    assert_eq!(report["verdict"], "slower");
}

#[test]
fn results_are_deterministic() {
    let first =
        compare_benchmarks_json(&example(), &scaled(1.03), None, &CompareOptions::default());
    let second =
        compare_benchmarks_json(&example(), &scaled(1.03), None, &CompareOptions::default());
    assert_eq!(first, second);
}

#[test]
fn different_work_and_wrong_kinds_are_refused() {
    let mut other: Value = serde_json::from_str(&example()).expect("JSON");
    other["workload"]["work_unit"] = serde_json::json!("images");
    other["metrics"]["throughput"]["unit"] = serde_json::json!("images/s");
    let other = serde_json::to_string(&other).expect("JSON");
    match compare_benchmarks_json(&example(), &other, None, &CompareOptions::default()) {
        Err(BenchCompareFailure::Refused(error)) => {
            assert!(error.to_string().contains("different work"));
        }
        outcome => panic!("expected a refusal, got {outcome:?}"),
    }
    let analysis = fixture("tests/fixtures/reports/analysis_small_cnn.json");
    match compare_benchmarks_json(&analysis, &example(), None, &CompareOptions::default()) {
        Err(BenchCompareFailure::Invalid(problems)) => {
            assert_eq!(problems[0].path, "baseline:$.kind");
        }
        outcome => panic!("expected invalid input, got {outcome:?}"),
    }
}

fn compare_paired(baseline: &str, candidate: &str, pairing: Pairing) -> Value {
    let text = compare_benchmarks_json_with(
        baseline,
        candidate,
        None,
        &CompareOptions::default(),
        pairing,
    )
    .expect("comparable");
    serde_json::from_str(&text).expect("JSON")
}

fn interval(report: &Value, metric: &str) -> (f64, f64) {
    let found = delta(report, metric);
    (
        found["ratio_ci_low"].as_f64().expect("low"),
        found["ratio_ci_high"].as_f64().expect("high"),
    )
}

/// Blocks of an interleaved run on a drifting machine: round `i` is slowed by a factor that
/// wanders between 1 and 1.6 over the run, the same for both sides (they ran together), and
/// each block carries its own small jitter (+-1%, deterministic).
fn drifting(factor: f64, phase: u64) -> Vec<f64> {
    example_blocks()
        .iter()
        .enumerate()
        .map(|(index, _)| {
            let round = index as f64;
            let drift = 1.3 + 0.3 * (round / 7.0).sin();
            let mut state = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ phase;
            state ^= state >> 29;
            let jitter = ((state % 2001) as f64 - 1000.0) / 100_000.0;
            0.006 * factor * drift * (1.0 + jitter)
        })
        .collect()
}

#[test]
fn paired_rounds_see_a_small_change_through_drift_that_hides_it_from_independent_blocks() {
    let baseline = with_blocks(drifting(1.0, 1));
    let candidate = with_blocks(drifting(1.05, 2));
    let independent = compare_paired(&baseline, &candidate, Pairing::Independent);
    assert_eq!(independent["verdict"], "inconclusive");
    let paired = compare_paired(&baseline, &candidate, Pairing::Rounds);
    assert_eq!(paired["verdict"], "slower");
    let (low, high) = interval(&paired, "latency");
    assert!(low > 1.03 && high < 1.07, "{low} {high}");
    assert!((low..=high).contains(&1.05), "{low} {high}");
    let (low, high) = interval(&paired, "throughput");
    assert!(high < 1.0 / 1.03 && low > 1.0 / 1.07, "{low} {high}");
    assert_eq!(delta(&paired, "throughput")["verdict"], "slower");
    let notes: Vec<&str> = paired["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["code"] == "note")
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("150 rounds"), "{}", notes[0]);
    assert!(
        !independent["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .any(|d| d["code"] == "note")
    );
}

#[test]
fn paired_rounds_of_the_same_run_show_no_change() {
    let baseline = with_blocks(drifting(1.0, 3));
    let candidate = with_blocks(drifting(1.0, 4));
    let paired = compare_paired(&baseline, &candidate, Pairing::Rounds);
    assert_eq!(paired["verdict"], "no_detectable_change");
    let (low, high) = interval(&paired, "latency");
    assert!(0.99 < low && high < 1.01, "{low} {high}");
    let again = compare_paired(&baseline, &candidate, Pairing::Rounds);
    assert_eq!(again, paired);
}

#[test]
fn paired_rounds_need_blocks_that_pair_up() {
    let mut fewer = example_blocks();
    fewer.pop();
    let options = CompareOptions::default();
    match compare_benchmarks_json_with(
        &example(),
        &with_blocks(fewer),
        None,
        &options,
        Pairing::Rounds,
    ) {
        Err(BenchCompareFailure::Refused(error)) => {
            let message = error.to_string();
            assert!(
                message.contains("150 timed blocks and the candidate 149"),
                "{message}"
            );
        }
        outcome => panic!("expected a refusal, got {outcome:?}"),
    }
    match compare_benchmarks_json_with(
        &with_blocks(vec![0.006]),
        &with_blocks(vec![0.006]),
        None,
        &options,
        Pairing::Rounds,
    ) {
        Err(BenchCompareFailure::Refused(error)) => {
            assert!(error.to_string().contains("at least two rounds"));
        }
        outcome => panic!("expected a refusal, got {outcome:?}"),
    }
}

#[test]
fn options_out_of_range_are_refused_by_the_json_entry_point_without_a_panic() {
    use torchscan_core::benchmark_comparison::{BenchCompareError, MAX_BOOTSTRAP_RESAMPLES};

    let report = example();
    for (options, expected) in [
        (
            CompareOptions {
                bootstrap_resamples: u64::MAX,
                ..CompareOptions::default()
            },
            format!(
                "bootstrap resamples must be from 1 to 1000000, got {}",
                u64::MAX
            ),
        ),
        (
            CompareOptions {
                bootstrap_resamples: 0,
                ..CompareOptions::default()
            },
            "bootstrap resamples must be from 1 to 1000000, got 0".to_owned(),
        ),
        (
            CompareOptions {
                confidence_level: f64::NAN,
                ..CompareOptions::default()
            },
            "confidence level must be in (0, 1), got NaN".to_owned(),
        ),
        (
            CompareOptions {
                min_effect: f64::INFINITY,
                ..CompareOptions::default()
            },
            "minimum effect must be finite and >= 0, got inf".to_owned(),
        ),
    ] {
        for pairing in [Pairing::Independent, Pairing::Rounds] {
            let refused = compare_benchmarks_json_with(&report, &report, None, &options, pairing);
            assert_eq!(
                refused,
                Err(BenchCompareFailure::Refused(
                    BenchCompareError::InvalidOption(expected.clone())
                ))
            );
        }
    }
    // The bounds themselves are accepted (the largest is checked by the unit test: a million
    // resamples take minutes in a debug build).
    assert_eq!(MAX_BOOTSTRAP_RESAMPLES, 1_000_000);
    let smallest = CompareOptions {
        bootstrap_resamples: 1,
        ..CompareOptions::default()
    };
    assert!(compare_benchmarks_json(&report, &report, None, &smallest).is_ok());
}

#[test]
fn a_comparison_at_the_level_closest_to_one_reads_back_valid() {
    // Its JSON text holds 0.9999999999999999, which a best-effort float parser reads as 1.0.
    let options = CompareOptions {
        confidence_level: 1.0 - f64::EPSILON / 2.0,
        bootstrap_resamples: 10,
        ..CompareOptions::default()
    };
    let report = example();
    let text = compare_benchmarks_json(&report, &report, None, &options).expect("a comparison");
    let read = read_report(&text).expect("the comparison reads back valid");
    let value: Value = serde_json::to_value(&read).expect("JSON");
    assert_eq!(
        value["settings"]["confidence_level"].as_f64(),
        Some(1.0 - f64::EPSILON / 2.0)
    );
}
