//! Comparisons of valid benchmark reports whose numbers sit at the ends of the float range: a
//! subnormal latency (`5e-324` s), blocks near `f64::MAX`, work units from `5e-324` to `1e300`.
//! Every such pair gives a comparison that passes validation, or a named refusal; never a
//! comparison that the core itself finds invalid ("a bug of torchscan").

#[path = "support/blocks.rs"]
mod support;

use proptest::prelude::*;
use serde_json::Value;
use torchscan_core::benchmark_comparison::{
    BenchCompareError, BenchCompareFailure, CompareOptions, Pairing, compare_benchmarks_json,
    compare_benchmarks_json_with,
};
use torchscan_core::{Report, format_summary, read_report, render_html};

/// The smallest positive float, a subnormal.
const SMALLEST: f64 = 5e-324;

fn example() -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../python/torchscan/data/example_workload.json"),
    )
    .expect("example");
    serde_json::from_str(&text).expect("JSON")
}

/// The example workload with these blocks, calls per block and work units per call, its
/// statistics recomputed; `None` when no valid report has them (their sum or the throughput is
/// past the float range).
fn report(blocks: &[f64], calls: u64, work_units: f64) -> Option<String> {
    let report = support::with_blocks(example(), blocks, calls, work_units)?;
    let text = serde_json::to_string(&report).expect("JSON");
    match read_report(&text) {
        Ok(_) => Some(text),
        Err(problems) => panic!("the generated report is invalid: {problems:?}"),
    }
}

/// Checks the outcome of one comparison: a valid `benchmark_comparison` (whose summary and page
/// are made too), or a refusal named by the core. Returns the comparison as JSON, if any.
fn assert_valid_or_refused(
    outcome: Result<String, BenchCompareFailure>,
    context: &str,
) -> Option<Value> {
    match outcome {
        Ok(json) => {
            let report = read_report(&json)
                .unwrap_or_else(|problems| panic!("{context}: invalid comparison: {problems:?}"));
            assert!(
                matches!(report, Report::BenchmarkComparison(_)),
                "{context}"
            );
            let _ = format_summary(&report);
            render_html(&report).unwrap_or_else(|error| panic!("{context}: {error}"));
            Some(serde_json::from_str(&json).expect("JSON"))
        }
        Err(BenchCompareFailure::Refused(
            error @ (BenchCompareError::NotPaired(_) | BenchCompareError::DifferentWork { .. }),
        )) => {
            assert!(!error.to_string().is_empty());
            None
        }
        Err(other) => panic!("{context}: {other:?}"),
    }
}

fn delta<'a>(comparison: &'a Value, metric: &str) -> &'a Value {
    comparison["deltas"]
        .as_array()
        .expect("deltas")
        .iter()
        .find(|delta| delta["metric"] == metric)
        .expect("the metric is compared")
}

/// Thirty blocks of `scale` seconds, each a little longer than the one before.
fn blocks(scale: f64) -> Vec<f64> {
    (0..30)
        .map(|index| (scale * (1.0 + f64::from(index % 7) * 0.01)).min(f64::MAX))
        .collect()
}

#[test]
fn a_subnormal_baseline_latency_gives_a_valid_comparison_without_an_overflowing_ratio() {
    let baseline = report(&blocks(SMALLEST), 1, SMALLEST).expect("valid");
    let candidate = report(&blocks(1e-3), 1, SMALLEST).expect("valid");
    for pairing in [Pairing::Independent, Pairing::Rounds] {
        let outcome = compare_benchmarks_json_with(
            &baseline,
            &candidate,
            None,
            &CompareOptions::default(),
            pairing,
        );
        let comparison = assert_valid_or_refused(outcome, "subnormal").expect("a comparison");
        let latency = delta(&comparison, "latency");
        assert_eq!(latency["status"], "complete");
        assert_eq!(latency["baseline"], SMALLEST);
        assert!(latency["ratio"].is_null(), "{latency}");
        assert_eq!(latency["ratio_ci_low"], Value::Null);
        assert_eq!(latency["verdict"], "inconclusive");
        let reason = latency["reason"].as_str().expect("a reason");
        assert!(
            reason.starts_with(
                "the ratio candidate / baseline (1.03e-3 / 5e-324) is past the range of a float, \
                 so it is not stated; "
            ),
            "{reason}"
        );
        // The other way round, the throughput ratio is the one past the range.
        let outcome = compare_benchmarks_json_with(
            &candidate,
            &baseline,
            None,
            &CompareOptions::default(),
            pairing,
        );
        let comparison = assert_valid_or_refused(outcome, "reversed").expect("a comparison");
        let throughput = delta(&comparison, "throughput");
        assert!(throughput["ratio"].is_null(), "{throughput}");
        assert!(
            throughput["reason"]
                .as_str()
                .expect("a reason")
                .contains("is past the range of a float"),
            "{throughput}"
        );
        // The latency ratio, 5e-324 / 1e-3, is subnormal and stated.
        assert!(
            delta(&comparison, "latency")["ratio"]
                .as_f64()
                .expect("a ratio")
                > 0.0
        );
    }
}

#[test]
fn ratios_past_either_end_of_the_range_are_not_stated() {
    // 1e-300 s against 1e300 s: the ratio is 1e600 one way and 1e-600 the other.
    let short = report(&blocks(1e-300), 1, SMALLEST).expect("valid");
    let long = report(&blocks(1e300), 1, SMALLEST).expect("valid");
    for (baseline, candidate, side) in [(&short, &long, "past"), (&long, &short, "below")] {
        let comparison = assert_valid_or_refused(
            compare_benchmarks_json(baseline, candidate, None, &CompareOptions::default()),
            side,
        )
        .expect("a comparison");
        let latency = delta(&comparison, "latency");
        assert!(latency["ratio"].is_null(), "{latency}");
        assert!(
            latency["reason"]
                .as_str()
                .expect("a reason")
                .contains(&format!("is {side} the range of a float")),
            "{latency}"
        );
    }
}

#[test]
fn work_units_of_a_refusal_are_written_as_people_write_them() {
    let one = report(&blocks(1e-3), 1, 1e-300).expect("valid");
    let other = report(&blocks(1e-3), 1, 32.0).expect("valid");
    match compare_benchmarks_json(&one, &other, None, &CompareOptions::default()) {
        Err(BenchCompareFailure::Refused(error)) => assert_eq!(
            error.to_string(),
            "the reports count different work (1e-300 samples vs 32 samples per call); measure \
             both with the same work_units and work_unit"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A scale of block durations anywhere in the float range, the ends included.
fn scale() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(SMALLEST),
        Just(f64::MIN_POSITIVE),
        Just(1e-310),
        Just(1e-3),
        Just(1e300),
        Just(f64::MAX / 64.0),
        (-323.0_f64..308.0).prop_map(|exponent| 10f64.powf(exponent).max(SMALLEST)),
    ]
}

/// One side: block durations of about `scale` seconds, each `scale` times a jitter in [1, 2).
fn side() -> impl Strategy<Value = (Vec<f64>, u64)> {
    (
        scale(),
        prop::collection::vec(1.0_f64..2.0, 1..40),
        prop_oneof![Just(1_u64), Just(7), Just(1000), Just(1_000_000)],
    )
        .prop_map(|(scale, jitters, calls)| {
            let blocks = jitters
                .iter()
                .map(|jitter| (scale * jitter).clamp(SMALLEST, f64::MAX))
                .collect();
            (blocks, calls)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn valid_reports_at_the_ends_of_the_float_range_compare_or_are_refused_by_name(
        baseline in side(),
        mut candidate in side(),
        paired in any::<bool>(),
        work_units in prop_oneof![Just(1.0), Just(32.0), Just(1e300), Just(1e-300), Just(SMALLEST)],
        confidence_level in prop_oneof![Just(0.95), Just(1e-300), Just(1.0 - f64::EPSILON), 0.01_f64..0.999],
        min_effect in prop_oneof![Just(0.0), Just(0.02), Just(1e300), Just(f64::MAX)],
        bootstrap_resamples in 1_u64..64,
        seed in any::<u64>(),
    ) {
        if paired {
            // As many blocks as the baseline, so that rounds pair up.
            let cycled = candidate.0.iter().copied().cycle().take(baseline.0.len()).collect();
            candidate.0 = cycled;
        }
        // The smallest work units give every report a finite throughput; the others may not.
        let pair = report(&baseline.0, baseline.1, work_units)
            .zip(report(&candidate.0, candidate.1, work_units))
            .or_else(|| {
                report(&baseline.0, baseline.1, SMALLEST)
                    .zip(report(&candidate.0, candidate.1, SMALLEST))
            });
        let Some((baseline, candidate)) = pair else {
            // Blocks whose sum is past the float range: no valid report holds them.
            return Ok(());
        };
        let options = CompareOptions { confidence_level, bootstrap_resamples, seed, min_effect };
        for pairing in [Pairing::Independent, Pairing::Rounds] {
            let outcome =
                compare_benchmarks_json_with(&baseline, &candidate, None, &options, pairing);
            assert_valid_or_refused(outcome, &format!("{pairing:?}"));
        }
    }
}
