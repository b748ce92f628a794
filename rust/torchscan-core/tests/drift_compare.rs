//! Comparisons of reports measured apart on synthetic blocks with a known drift: drift within
//! and between segments gives `inconclusive`, a shift beyond it the right verdict, identical
//! reports `no_detectable_change`, a short report a reason that says how long to measure, a
//! noisy side a `noisy_machine` diagnostic and no verdict of change unless the effect is larger
//! than the noise allows; every result validates.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};
use torchscan_core::benchmark_comparison::{CompareOptions, Pairing, compare_benchmarks_json_with};
use torchscan_core::read_report;
use torchscan_core::stats::block_timing;

fn long_fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports/benchmark_readme_cpu_1s.json");
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("JSON")
}

/// A deterministic generator for synthetic blocks (SplitMix64).
struct Draw(u64);

impl Draw {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal value (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A valid benchmark report with these per-call block means (one call per block), blocks back
/// to back from 0, its statistics recomputed, and `other_cpu` as its other-process CPU share.
fn report(means: &[f64], other_cpu: f64) -> String {
    let mut report = long_fixture();
    let timing = block_timing(means, 1).expect("timing");
    let mut starts = Vec::with_capacity(means.len());
    let mut at = 0.0;
    for duration in means {
        starts.push(at);
        at += duration;
    }
    report["timing"]["calls_per_block"] = json!(1);
    report["timing"]["block_durations_s"] = json!(means);
    report["timing"]["block_starts_s"] = json!(starts);
    let work = report["workload"]["work_units"].as_f64().expect("work");
    let metrics = &mut report["metrics"];
    for (key, value) in [
        ("latency", timing.latency_s),
        ("latency_iqr", timing.latency_iqr_s),
        ("throughput", work * timing.calls as f64 / timing.timed_s),
        ("machine_other_cpu_ratio", other_cpu),
    ] {
        metrics[key]["value"] = json!(value);
        metrics[key]["known_value"] = json!(value);
    }
    let text = serde_json::to_string(&report).expect("JSON");
    if let Err(problems) = read_report(&text) {
        panic!("the synthetic report is invalid: {problems:?}");
    }
    text
}

/// `blocks` per-call means of 25 ms around `level`: `level * exp(drift(t) + jitter)`, where
/// `drift` takes the block's position in [0, 1) and the jitter has a spread of `jitter`.
fn blocks(
    draw: &mut Draw,
    blocks: usize,
    level: f64,
    jitter: f64,
    drift: impl Fn(f64) -> f64,
) -> Vec<f64> {
    (0..blocks)
        .map(|i| {
            let position = i as f64 / blocks as f64;
            level * (drift(position) + jitter * draw.normal()).exp()
        })
        .collect()
}

fn compare_with(baseline: &str, candidate: &str, pairing: Pairing) -> Value {
    // The JSON path validates its result and reports an invalid one as an error.
    let text = compare_benchmarks_json_with(
        baseline,
        candidate,
        None,
        &CompareOptions::default(),
        pairing,
    )
    .expect("comparable, and the result validates");
    serde_json::from_str(&text).expect("JSON")
}

fn compare(baseline: &str, candidate: &str) -> Value {
    compare_with(baseline, candidate, Pairing::Independent)
}

fn latency(comparison: &Value) -> &Value {
    &comparison["deltas"][0]
}

fn codes(comparison: &Value) -> Vec<String> {
    comparison["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str().map(str::to_owned))
        .collect()
}

const LEVEL: f64 = 0.025;

/// A drift: the log deviation at a position in [0, 1) of a report.
type Drift = Box<dyn Fn(f64) -> f64>;

#[test]
fn identical_reports_show_no_detectable_change() {
    let mut draw = Draw(1);
    let side = report(&blocks(&mut draw, 80, LEVEL, 0.01, |_| 0.0), 0.0);
    let same = compare(&side, &side);
    assert_eq!(same["verdict"], "no_detectable_change");
    assert_eq!(latency(&same)["ratio"], 1.0);
    // The interval is centred on 1: each side's spread is counted once.
    let (low, high) = (
        latency(&same)["ratio_ci_low"].as_f64().expect("interval"),
        latency(&same)["ratio_ci_high"].as_f64().expect("interval"),
    );
    assert!(
        low < 1.0 && high > 1.0 && (low * high - 1.0).abs() < 1e-12,
        "[{low}, {high}]"
    );
    let method = latency(&same)["method"].as_str().expect("method");
    assert!(
        method.starts_with("measured apart: Welch's t interval at 95%"),
        "{method}"
    );
    assert!(
        method.contains("batch means over 10 and 10 time-ordered segments"),
        "{method}"
    );
    assert!(
        method.contains("drift slower than a report is not in the interval"),
        "{method}"
    );
    assert!(latency(&same)["reason"].is_null());
}

#[test]
fn drift_within_and_between_segments_gives_inconclusive() {
    // The same code on both sides; each report drifts by up to 8% (a slow wave over the report
    // and a step between its halves), with the two reports in different phases, so that their
    // medians differ by several percent from drift alone.
    let wave = |phase: f64| move |t: f64| 0.04 * (2.0 * std::f64::consts::PI * (t + phase)).sin();
    let step = |t: f64| if t < 0.5 { 0.0 } else { 0.08 };
    let cases: [(Drift, Drift); 3] = [
        (Box::new(wave(0.0)), Box::new(wave(0.5))),
        (Box::new(step), Box::new(|_| 0.0)),
        (Box::new(wave(0.25)), Box::new(step)),
    ];
    for (index, (left, right)) in cases.iter().enumerate() {
        let mut draw = Draw(10 + index as u64);
        let baseline = report(&blocks(&mut draw, 100, LEVEL, 0.01, left), 0.0);
        let candidate = report(&blocks(&mut draw, 100, LEVEL, 0.01, right), 0.0);
        let found = compare(&baseline, &candidate);
        let ratio = latency(&found)["ratio"].as_f64().expect("ratio");
        assert_eq!(
            found["verdict"], "inconclusive",
            "case {index}: ratio {ratio}"
        );
        let (low, high) = (
            latency(&found)["ratio_ci_low"].as_f64().expect("interval"),
            latency(&found)["ratio_ci_high"].as_f64().expect("interval"),
        );
        assert!(low < 0.98 && high > 1.02, "case {index}: [{low}, {high}]");
    }
}

#[test]
fn a_shift_beyond_the_drift_gives_the_right_verdict() {
    let wave = |phase: f64| move |t: f64| 0.04 * (2.0 * std::f64::consts::PI * (t + phase)).sin();
    for (factor, expected) in [(1.4, "slower"), (1.0 / 1.4, "faster")] {
        let mut draw = Draw(20);
        let baseline = report(&blocks(&mut draw, 100, LEVEL, 0.01, wave(0.0)), 0.0);
        let candidate = report(
            &blocks(&mut draw, 100, LEVEL * factor, 0.01, wave(0.5)),
            0.0,
        );
        let found = compare(&baseline, &candidate);
        assert_eq!(found["verdict"], expected, "factor {factor}");
        assert_eq!(latency(&found)["verdict"], expected);
        assert_eq!(found["deltas"][1]["verdict"], expected, "throughput");
    }
    // Without drift, a 5% shift of quiet blocks is clear.
    let mut draw = Draw(21);
    let baseline = report(&blocks(&mut draw, 60, LEVEL, 0.005, |_| 0.0), 0.0);
    let candidate = report(&blocks(&mut draw, 60, LEVEL * 1.05, 0.005, |_| 0.0), 0.0);
    assert_eq!(compare(&baseline, &candidate)["verdict"], "slower");
}

/// Verdicts of 200 seeded A/A pairs whose blocks follow an AR(1) drift: each block keeps `phi`
/// of the previous block's deviation and adds a normal step of spread `innovation`. Returns (changes, inconclusive, no change).
fn ar1_verdicts(phi: f64, innovation: f64) -> (usize, usize, usize) {
    let (mut changes, mut inconclusive, mut same) = (0, 0, 0);
    for seed in 0..200 {
        let mut draw = Draw(1000 + seed);
        let side = |draw: &mut Draw| {
            let mut deviation = 0.0;
            let means: Vec<f64> = (0..100)
                .map(|_| {
                    deviation = phi * deviation + innovation * draw.normal();
                    LEVEL * (deviation + 0.005 * draw.normal()).exp()
                })
                .collect();
            report(&means, 0.0)
        };
        let (baseline, candidate) = (side(&mut draw), side(&mut draw));
        match compare(&baseline, &candidate)["verdict"].as_str() {
            Some("faster" | "slower") => changes += 1,
            Some("inconclusive") => inconclusive += 1,
            _ => same += 1,
        }
    }
    (changes, inconclusive, same)
}

#[test]
fn autocorrelated_drift_rarely_gives_a_verdict_of_change() {
    // The counts are fixed by the seeds. Drift that forgets in about 20 blocks (a fifth of a
    // report): at most 1 in 100 pairs says faster or slower, and the interval is not so wide
    // that every pair is inconclusive.
    // With a drift of about 2% (innovation 0.006), most pairs are inconclusive; with about
    // 0.6% (innovation 0.002), most show no detectable change.
    let (changes, _, _) = ar1_verdicts(0.95, 0.006);
    assert!(
        changes <= 2,
        "{changes} verdicts of change in 200 A/A pairs"
    );
    let (changes, inconclusive, same) = ar1_verdicts(0.95, 0.002);
    eprintln!("small drift: {changes} changes, {inconclusive} inconclusive, {same} no change");
    assert!(
        changes <= 2,
        "{changes} verdicts of change in 200 A/A pairs"
    );
    assert!(
        same >= 100,
        "{same} no_detectable_change, {inconclusive} inconclusive"
    );
    // Drift that forgets in about 50 blocks (half a report) is near the limit the method states:
    // more verdicts of change, still few.
    let (changes, _, _) = ar1_verdicts(0.98, 0.006);
    assert!(
        changes <= 6,
        "{changes} verdicts of change in 200 A/A pairs"
    );
}

#[test]
fn a_report_too_short_to_estimate_its_drift_says_how_long_to_measure() {
    let mut draw = Draw(30);
    let long = report(&blocks(&mut draw, 60, LEVEL, 0.01, |_| 0.0), 0.0);
    let few = report(&blocks(&mut draw, 20, 0.06, 0.01, |_| 0.0), 0.0);
    let brief = report(&blocks(&mut draw, 30, 0.01, 0.01, |_| 0.0), 0.0);
    let found = compare(&long, &few);
    assert_eq!(found["verdict"], "inconclusive");
    let delta = latency(&found);
    assert!(delta["ratio_ci_low"].is_null() && delta["ratio_ci_high"].is_null());
    assert!(
        delta["ratio"].as_f64().expect("ratio") > 2.0,
        "the ratio itself is still given"
    );
    let reason = delta["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with(
            "the candidate report is too short to estimate the drift of the machine: 20 timed \
             blocks, fewer than 24; measure for at least 1 s and 24 blocks, for example \
             measure_workload(..., min_time_s=1.0, min_blocks=24)"
        ),
        "{reason}"
    );
    let reason = latency(&compare(&brief, &long))["reason"]
        .as_str()
        .expect("reason")
        .to_owned();
    assert!(
        reason.contains("the baseline report is too short")
            && reason.contains("s of timed blocks, less than 0.9 s"),
        "{reason}"
    );
    let both = compare(&few, &brief);
    let reason = latency(&both)["reason"].as_str().expect("reason");
    assert!(
        reason.contains("the baseline report is too short")
            && reason.contains("; the candidate report is too short"),
        "{reason}"
    );
}

#[test]
fn a_noisy_side_gets_a_diagnostic_and_no_verdict_unless_the_effect_exceeds_the_noise() {
    let mut draw = Draw(40);
    let quiet = report(&blocks(&mut draw, 60, LEVEL, 0.005, |_| 0.0), 0.0);
    // The candidate is 20% slower and was measured while other processes used 40% of all CPU
    // time: the noise alone could explain a factor of 1 / (1 - 0.4) = 1.67.
    let noisy_slower = report(&blocks(&mut draw, 60, LEVEL * 1.2, 0.005, |_| 0.0), 0.4);
    let found = compare(&quiet, &noisy_slower);
    assert_eq!(found["verdict"], "inconclusive");
    assert!(codes(&found).contains(&"noisy_machine".to_owned()));
    let reason = latency(&found)["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with(
            "measured apart on a noisy machine (the candidate: machine_other_cpu_ratio 0.400 > \
             0.10), the two reports can differ by the noise alone, up to 1.67 times"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("(the interval alone says slower)"),
        "{reason}"
    );
    // Twice as slow is more than the noise allows (1.02 x 1.67 = 1.70).
    let noisy_much_slower = report(&blocks(&mut draw, 60, LEVEL * 2.0, 0.005, |_| 0.0), 0.4);
    let found = compare(&quiet, &noisy_much_slower);
    assert_eq!(found["verdict"], "slower");
    assert!(codes(&found).contains(&"noisy_machine".to_owned()));
    // No change is never concluded across a noisy side.
    let noisy_same = report(&blocks(&mut draw, 60, LEVEL, 0.005, |_| 0.0), 0.4);
    assert_eq!(compare(&quiet, &noisy_same)["verdict"], "inconclusive");
    // Just under the threshold is quiet.
    let almost = report(&blocks(&mut draw, 60, LEVEL * 1.2, 0.005, |_| 0.0), 0.1);
    let found = compare(&quiet, &almost);
    assert_eq!(found["verdict"], "slower");
    assert!(!codes(&found).contains(&"noisy_machine".to_owned()));
}

#[test]
fn interleaved_reports_keep_their_verdict_on_a_noisy_machine_and_say_so() {
    let mut draw = Draw(50);
    let baseline = report(&blocks(&mut draw, 60, LEVEL, 0.005, |_| 0.0), 0.5);
    let candidate = report(&blocks(&mut draw, 60, LEVEL * 1.06, 0.005, |_| 0.0), 0.5);
    let found = compare_with(&baseline, &candidate, Pairing::Rounds);
    assert_eq!(found["verdict"], "slower");
    let reason = latency(&found)["reason"].as_str().expect("reason");
    assert!(
        reason.contains("the two sides were interleaved, so the load fell on both blocks"),
        "{reason}"
    );
    assert_eq!(
        codes(&found)
            .iter()
            .filter(|code| *code == "noisy_machine")
            .count(),
        2,
        "one per noisy side"
    );
    let method = latency(&found)["method"].as_str().expect("method");
    assert!(
        method.starts_with("one interleaved run: percentile bootstrap"),
        "{method}"
    );
}

#[test]
fn the_same_reports_always_give_the_same_comparison() {
    let mut draw = Draw(60);
    let baseline = report(&blocks(&mut draw, 70, LEVEL, 0.02, |t| 0.03 * t), 0.0);
    let candidate = report(
        &blocks(&mut draw, 90, LEVEL * 1.03, 0.02, |t| -0.03 * t),
        0.0,
    );
    let first = compare(&baseline, &candidate);
    for _ in 0..3 {
        assert_eq!(compare(&baseline, &candidate), first);
    }
    // Swapping the sides inverts the interval exactly.
    let swapped = compare(&candidate, &baseline);
    let (low, high) = (
        latency(&first)["ratio_ci_low"].as_f64().expect("interval"),
        latency(&first)["ratio_ci_high"].as_f64().expect("interval"),
    );
    let (swapped_low, swapped_high) = (
        latency(&swapped)["ratio_ci_low"]
            .as_f64()
            .expect("interval"),
        latency(&swapped)["ratio_ci_high"]
            .as_f64()
            .expect("interval"),
    );
    assert!((swapped_low - 1.0 / high).abs() < 1e-12 && (swapped_high - 1.0 / low).abs() < 1e-12);
}
