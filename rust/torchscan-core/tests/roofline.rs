//! How close to the hardware's limit: the rate metrics of benchmark reports and their
//! `hardware_peak` section, their invariants with JSON paths, the lines the text summary adds, the
//! roofline of the HTML page and the rows `compare_benchmarks` adds.
//!
//! The variants are made from `benchmark_hardware_peak.json` (a 256 x 512 by 512 x 128 float32
//! matmul on CPU: 33,554,432 FLOPs and 917,504 operator bytes, a declared compute peak and a
//! measured bandwidth), their derived numbers recomputed here as the validator recomputes them.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};
use torchscan_core::benchmark_comparison::{CompareOptions, compare_benchmarks_json};
use torchscan_core::{format_summary, read_report, render_html};

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports")
        .join(name);
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("JSON")
}

fn peak_report() -> Value {
    fixture("benchmark_hardware_peak.json")
}

fn paths(report: &Value) -> Vec<String> {
    match read_report(&report.to_string()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.into_iter().map(|problem| problem.path).collect(),
    }
}

fn number(report: &Value, pointer: &str) -> f64 {
    report
        .pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}"))
}

fn complete(metric: &mut Value, value: f64) {
    metric["status"] = json!("complete");
    metric["value"] = json!(value);
    metric["known_value"] = json!(value);
    metric["reason"] = Value::Null;
}

fn unavailable(metric: &mut Value, reason: &str) {
    metric["status"] = json!("unavailable");
    metric["value"] = Value::Null;
    metric["known_value"] = Value::Null;
    metric["reason"] = json!(reason);
}

/// Sets operator bytes and recomputes the arithmetic intensity and the bandwidth utilization.
fn with_operator_bytes(report: &mut Value, bytes: f64) {
    let flops = number(report, "/metrics/operator_flops/value");
    let latency = number(report, "/metrics/latency/value");
    let bandwidth = number(report, "/hardware_peak/bandwidth/value");
    complete(&mut report["metrics"]["operator_bytes"], bytes);
    complete(
        &mut report["metrics"]["arithmetic_intensity"],
        flops / bytes,
    );
    complete(
        &mut report["metrics"]["bandwidth_utilization"],
        bytes / latency / bandwidth,
    );
}

/// The lines the text summary adds for a recorded peak: from `Achieved:` to the diagnostics.
fn peak_lines(report: &Value) -> String {
    let parsed = read_report(&report.to_string()).expect("a valid report");
    let summary = format_summary(&parsed);
    let start = summary.find("  Achieved:").expect("an Achieved line");
    let end = summary.find("  Diagnostics:").unwrap_or(summary.len());
    summary[start..end].to_owned()
}

/// The hardware section of the page, from its heading to the end of the section.
fn hardware_html(report: &Value) -> String {
    let parsed = read_report(&report.to_string()).expect("a valid report");
    let page = render_html(&parsed).expect("a page");
    let start = page
        .find("<h2>Hardware peak and roofline</h2>")
        .expect("the hardware section");
    let end = start + page[start..].find("</section>").expect("its end");
    page[start..end].to_owned()
}

#[test]
fn the_fixture_is_valid_and_every_older_fixture_stays_valid() {
    assert_eq!(paths(&peak_report()), Vec::<String>::new());
    let report = peak_report();
    // The example: exactly 917,504 B and 33,554,432 FLOPs.
    assert_eq!(number(&report, "/metrics/operator_bytes/value"), 917_504.0);
    assert_eq!(
        number(&report, "/metrics/operator_flops/value"),
        33_554_432.0
    );
    for name in [
        "benchmark_readme_cpu.json",
        "benchmark_cuda_full.json",
        "benchmark_noisy_machine.json",
    ] {
        let older = fixture(name);
        assert!(
            older["metrics"].get("achieved_flop_rate").is_none(),
            "{name}"
        );
        assert!(older.get("hardware_peak").is_none(), "{name}");
        assert_eq!(paths(&older), Vec::<String>::new(), "{name}");
        let parsed = read_report(&older.to_string()).expect("valid");
        assert!(!format_summary(&parsed).contains("Achieved:"), "{name}");
        assert!(
            !render_html(&parsed).expect("page").contains("roofline"),
            "{name}"
        );
    }
}

/// A change made to a report, to see the problem it makes.
type Change = Box<dyn Fn(&mut Value)>;

#[test]
fn every_derived_number_is_recomputed() {
    let cases: Vec<(&str, Change)> = vec![
        (
            "$.metrics.achieved_flop_rate.value",
            Box::new(|r| {
                let value = number(r, "/metrics/achieved_flop_rate/value") * 1.001;
                complete(&mut r["metrics"]["achieved_flop_rate"], value);
            }),
        ),
        (
            "$.metrics.arithmetic_intensity.value",
            Box::new(|r| complete(&mut r["metrics"]["arithmetic_intensity"], 36.0)),
        ),
        (
            "$.metrics.flop_utilization.value",
            Box::new(|r| complete(&mut r["metrics"]["flop_utilization"], 0.5)),
        ),
        (
            "$.metrics.bandwidth_utilization.value",
            Box::new(|r| complete(&mut r["metrics"]["bandwidth_utilization"], 0.5)),
        ),
        (
            "$.hardware_peak.measured.flop_rate.value",
            Box::new(|r| {
                complete(&mut r["hardware_peak"]["measured"]["flop_rate"], 1.0e9);
            }),
        ),
        (
            "$.hardware_peak.measured.bandwidth.value",
            Box::new(|r| {
                complete(&mut r["hardware_peak"]["measured"]["bandwidth"], 1.0e9);
                complete(&mut r["hardware_peak"]["bandwidth"], 1.0e9);
                // Keep the utilization consistent with the new used peak, to name one problem.
                let bytes = number(r, "/metrics/operator_bytes/value");
                let latency = number(r, "/metrics/latency/value");
                complete(
                    &mut r["metrics"]["bandwidth_utilization"],
                    bytes / latency / 1.0e9,
                );
            }),
        ),
    ];
    for (path, change) in cases {
        let mut report = peak_report();
        change(&mut report);
        // The first problem is the changed number; what is derived from it may follow.
        assert_eq!(
            paths(&report).first().map(String::as_str),
            Some(path),
            "{path}"
        );
    }
}

#[test]
fn statuses_follow_their_inputs() {
    // Without a peak, utilization is unavailable: a complete one is refused.
    let mut report = peak_report();
    report
        .as_object_mut()
        .expect("object")
        .remove("hardware_peak");
    report["settings"]["passes"] = json!(["latency", "operator_flops", "tensor_memory"]);
    assert_eq!(
        paths(&report),
        vec![
            "$.metrics.flop_utilization.status",
            "$.metrics.bandwidth_utilization.status"
        ]
    );
    // Without a latency there is no achieved rate: a complete one is refused.
    let mut report = peak_report();
    unavailable(&mut report["metrics"]["latency"], "not requested");
    assert!(paths(&report).contains(&"$.metrics.achieved_flop_rate.status".to_owned()));
    // A requested pass records what it measured.
    let mut report = peak_report();
    report["hardware_peak"]["measured"] = Value::Null;
    assert_eq!(
        paths(&report),
        vec![
            "$.hardware_peak.measured",
            // Its bandwidth was the one used, and no longer exists.
            "$.hardware_peak.bandwidth_origin"
        ]
    );
    let mut report = peak_report();
    report
        .as_object_mut()
        .expect("object")
        .remove("hardware_peak");
    assert!(paths(&report).contains(&"$.hardware_peak".to_owned()));
    // A peak rate is whole or missing.
    let mut report = peak_report();
    let peak = &mut report["hardware_peak"]["measured"]["theoretical_flop_rate"];
    peak["status"] = json!("partial");
    peak["known_value"] = json!(1.0e12);
    assert!(
        paths(&report)
            .contains(&"$.hardware_peak.measured.theoretical_flop_rate.status".to_owned())
    );
}

#[test]
fn a_declared_peak_is_the_one_used_and_copied_whole() {
    let mut report = peak_report();
    report["hardware_peak"]["flop_rate_origin"] = json!("measured");
    assert_eq!(paths(&report), vec!["$.hardware_peak.flop_rate_origin"]);
    let mut report = peak_report();
    complete(&mut report["hardware_peak"]["flop_rate"], 2.0e11);
    let found = paths(&report);
    assert!(
        found.contains(&"$.hardware_peak.flop_rate".to_owned()),
        "{found:?}"
    );
    let mut report = peak_report();
    report["hardware_peak"]["declared"]["source"] = json!("  ");
    assert_eq!(paths(&report), vec!["$.hardware_peak.declared.source"]);
    let mut report = peak_report();
    report["metrics"]["achieved_flop_rate"]["unit"] = json!("FLOPs");
    assert!(paths(&report).contains(&"$.metrics.achieved_flop_rate.unit".to_owned()));
}

#[test]
fn summary_lines_of_a_compute_bound_workload() {
    insta::assert_snapshot!("summary_compute_bound", peak_lines(&peak_report()));
}

/// The fixture against a compute peak declared ten times higher: its ridge point moves past the
/// workload's arithmetic intensity.
fn memory_bound() -> Value {
    let mut report = peak_report();
    let achieved = number(&report, "/metrics/achieved_flop_rate/value");
    complete(
        &mut report["hardware_peak"]["declared"]["flop_rate"],
        1.0e12,
    );
    complete(&mut report["hardware_peak"]["flop_rate"], 1.0e12);
    complete(
        &mut report["metrics"]["flop_utilization"],
        achieved / 1.0e12,
    );
    report
}

#[test]
fn summary_lines_of_a_memory_bound_workload() {
    let report = memory_bound();
    assert_eq!(paths(&report), Vec::<String>::new());
    let lines = peak_lines(&report);
    assert!(
        lines.contains("Bound: memory-bound: arithmetic intensity 36.57 FLOP/B is below"),
        "{lines}"
    );
    insta::assert_snapshot!("summary_memory_bound", lines);
    let html = hardware_html(&report);
    assert!(
        html.contains("is memory-bound: its roof there is"),
        "{html}"
    );
    insta::assert_snapshot!("html_memory_bound", html);
}

#[test]
fn a_workload_above_the_modelled_roof_is_said_to_be() {
    let mut report = peak_report();
    // 32 MiB of operator bytes: 1 FLOP per byte, so the bandwidth roof there is far below the
    // achieved rate, as where caches or a fused kernel keep the traffic on chip.
    with_operator_bytes(&mut report, 33_554_432.0);
    assert_eq!(paths(&report), Vec::<String>::new());
    let lines = peak_lines(&report);
    assert!(
        lines.contains("Bound: memory-bound: arithmetic intensity 1 FLOP/B"),
        "{lines}"
    );
    let html = hardware_html(&report);
    assert!(html.contains("It is above the roof there"), "{html}");
}

/// The fixture without operator bytes: what every report says until they are counted.
fn without_intensity() -> Value {
    let mut report = peak_report();
    let metrics = report["metrics"].as_object_mut().expect("metrics");
    metrics.remove("operator_bytes");
    metrics.remove("arithmetic_intensity");
    unavailable(
        &mut report["metrics"]["bandwidth_utilization"],
        "operator bytes per second: unavailable (metrics.operator_bytes: not recorded)",
    );
    report
}

#[test]
fn without_intensity_the_workload_is_not_placed() {
    let report = without_intensity();
    assert_eq!(paths(&report), Vec::<String>::new());
    let lines = peak_lines(&report);
    assert!(!lines.contains("Operator bandwidth"), "{lines}");
    insta::assert_snapshot!("summary_without_intensity", lines);
    let html = hardware_html(&report);
    assert!(!html.contains("<circle"), "{html}");
    assert!(html.contains("The workload is not placed"), "{html}");
    insta::assert_snapshot!("html_without_intensity", html);
}

#[test]
fn without_a_peak_the_page_shows_the_rates_and_how_to_get_one() {
    let mut report = peak_report();
    report
        .as_object_mut()
        .expect("object")
        .remove("hardware_peak");
    report["settings"]["passes"] = json!(["latency", "operator_flops", "tensor_memory"]);
    for key in ["flop_utilization", "bandwidth_utilization"] {
        unavailable(
            &mut report["metrics"][key],
            "no peak to compare with: measure one with metrics=[..., 'hardware_peak'] or \
             declare one with peak={...}",
        );
    }
    assert_eq!(paths(&report), Vec::<String>::new());
    let parsed = read_report(&report.to_string()).expect("valid");
    // The text summary adds nothing without a peak: the lines it always printed stay alone.
    assert!(!format_summary(&parsed).contains("Achieved"));
    let page = render_html(&parsed).expect("a page");
    let start = page
        .find("<h2>Achieved rates</h2>")
        .expect("the rates section");
    let section = &page[start..start + page[start..].find("</section>").expect("its end")];
    assert!(section.contains("No peak is recorded"), "{section}");
    assert_eq!(
        section.matches("<div class=\"card\">").count(),
        5,
        "{section}"
    );
    assert!(!page.contains("<svg class=\"roofline\""));
}

#[test]
fn the_roofline_of_the_fixture() {
    let html = hardware_html(&peak_report());
    assert_eq!(html.matches("<svg class=\"roofline\"").count(), 1);
    assert_eq!(html.matches("<circle").count(), 1);
    assert!(!html.contains("<script"));
    insta::assert_snapshot!("html_compute_bound", html);
}

#[test]
fn without_a_peak_bandwidth_there_is_no_roofline() {
    let mut report = peak_report();
    report["settings"]["passes"] = json!(["latency", "operator_flops", "tensor_memory"]);
    report["hardware_peak"]["measured"] = Value::Null;
    report["hardware_peak"]["bandwidth_origin"] = Value::Null;
    unavailable(
        &mut report["hardware_peak"]["bandwidth"],
        "not declared (peak= gave no bandwidth); the hardware_peak pass was not requested",
    );
    unavailable(
        &mut report["metrics"]["bandwidth_utilization"],
        "hardware_peak.bandwidth: unavailable",
    );
    assert_eq!(paths(&report), Vec::<String>::new());
    let lines = peak_lines(&report);
    assert!(
        lines.contains("Bound: unknown (hardware_peak.bandwidth is unavailable"),
        "{lines}"
    );
    let html = hardware_html(&report);
    assert!(!html.contains("<svg"), "{html}");
    assert!(
        html.contains("No roofline: hardware_peak.bandwidth is unavailable"),
        "{html}"
    );
    insta::assert_snapshot!("summary_declared_compute_only", lines);
}

#[test]
fn a_comparison_adds_the_rates_beside_latency_without_a_verdict() {
    let baseline = peak_report();
    let mut candidate = peak_report();
    // The candidate does the same work in the same time, against a peak declared twice as high.
    let achieved = number(&candidate, "/metrics/achieved_flop_rate/value");
    complete(
        &mut candidate["hardware_peak"]["declared"]["flop_rate"],
        3.0e11,
    );
    complete(&mut candidate["hardware_peak"]["flop_rate"], 3.0e11);
    complete(
        &mut candidate["metrics"]["flop_utilization"],
        achieved / 3.0e11,
    );
    assert_eq!(paths(&candidate), Vec::<String>::new());
    let text = compare_benchmarks_json(
        &baseline.to_string(),
        &candidate.to_string(),
        None,
        &CompareOptions::default(),
    )
    .expect("a comparison");
    let comparison: Value = serde_json::from_str(&text).expect("JSON");
    let metrics: Vec<&str> = comparison["deltas"]
        .as_array()
        .expect("deltas")
        .iter()
        .map(|delta| delta["metric"].as_str().expect("name"))
        .collect();
    assert_eq!(
        metrics,
        [
            "latency",
            "throughput",
            "achieved_flop_rate",
            "flop_utilization",
            "first_call",
            "operator_flops",
            "tensor_memory_peak",
            "process_rss_peak"
        ]
    );
    let utilization = &comparison["deltas"][3];
    assert_eq!(utilization["unit"], "ratio");
    assert_eq!(utilization["verdict"], Value::Null);
    assert_eq!(utilization["ratio"].as_f64(), Some(0.5));
    assert_eq!(comparison["deltas"][2]["ratio"].as_f64(), Some(1.0));
    // Reports without the rates keep their rows: the comparison fixtures' snapshots hold them.
    let older = fixture("benchmark_readme_cpu.json").to_string();
    let text = compare_benchmarks_json(&older, &older, None, &CompareOptions::default())
        .expect("a comparison");
    assert!(!text.contains("achieved_flop_rate"));
}

/// The fixture against peaks declared at the ends of the float range (1e308 FLOP/s, 1e-300 B/s):
/// reports written elsewhere may hold them, although `peak=` refuses them.
fn peaks_far_apart() -> Value {
    let mut report = peak_report();
    let achieved = number(&report, "/metrics/achieved_flop_rate/value");
    for (key, value) in [("flop_rate", 1.0e308), ("bandwidth", 1.0e-300)] {
        let unit = if key == "flop_rate" { "FLOP/s" } else { "B/s" };
        let declared = &mut report["hardware_peak"]["declared"][key];
        complete(declared, value);
        declared["unit"] = json!(unit);
        let used = report["hardware_peak"]["declared"][key].clone();
        report["hardware_peak"][key] = used;
        report["hardware_peak"][format!("{key}_origin")] = json!("declared");
    }
    complete(
        &mut report["metrics"]["flop_utilization"],
        achieved / 1.0e308,
    );
    unavailable(
        &mut report["metrics"]["bandwidth_utilization"],
        "operator bytes per second / hardware_peak.bandwidth is beyond the range of a float",
    );
    report
}

#[test]
fn a_quotient_beyond_the_float_range_is_unavailable_and_leaves_no_ridge_point() {
    let report = peaks_far_apart();
    assert_eq!(paths(&report), Vec::<String>::new());
    // The quotient overflows: a complete utilization is refused, whatever number it states.
    let mut lying = peaks_far_apart();
    complete(&mut lying["metrics"]["bandwidth_utilization"], f64::MAX);
    assert_eq!(
        paths(&lying),
        vec!["$.metrics.bandwidth_utilization.status"]
    );
    let parsed = read_report(&report.to_string()).expect("valid");
    let summary = format_summary(&parsed);
    assert!(
        summary.contains(
            "Bound: unknown (the ridge point hardware_peak.flop_rate / hardware_peak.bandwidth \
             (1e308 / 1e-300) is beyond the range of a float)"
        ),
        "{summary}"
    );
    assert!(!summary.contains("inf"), "{summary}");
    let html = hardware_html(&report);
    assert!(!html.contains("<svg"), "{html}");
}
