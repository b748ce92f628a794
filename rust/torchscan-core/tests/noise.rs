//! The noise metrics of benchmark reports: optional in schema v1, their invariants (units,
//! ratios in [0, 1], whole counts, unavailable without timing) with JSON paths, and how the text
//! summary and the HTML page show them with the `noisy_machine` diagnostic.

use std::fs;
use std::path::Path;

use serde_json::Value;
use torchscan_core::{Problem, format_summary, read_report, render_html, to_json_text};

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports")
        .join(name);
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("JSON")
}

fn noisy() -> Value {
    fixture("benchmark_noisy_machine.json")
}

fn problems(report: &Value) -> Vec<Problem> {
    match read_report(&report.to_string()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems,
    }
}

fn paths(report: &Value) -> Vec<String> {
    problems(report)
        .into_iter()
        .map(|problem| problem.path)
        .collect()
}

fn set_value(report: &mut Value, key: &str, number: Value) {
    report["metrics"][key]["value"] = number.clone();
    report["metrics"][key]["known_value"] = number;
}

#[test]
fn a_report_without_noise_metrics_stays_valid_and_shows_no_noise_section() {
    let report = fixture("benchmark_readme_cpu.json");
    assert!(report["metrics"].get("machine_other_cpu_ratio").is_none());
    let parsed = read_report(&report.to_string()).expect("valid");
    assert!(!to_json_text(&parsed).contains("machine_other_cpu_ratio"));
    assert!(!format_summary(&parsed).contains("Machine noise"));
    assert!(
        !render_html(&parsed)
            .expect("page")
            .contains("Machine noise")
    );
}

#[test]
fn noise_metrics_round_trip_byte_for_byte() {
    let parsed = read_report(&noisy().to_string()).expect("valid");
    let written = to_json_text(&parsed);
    let value: Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(value["metrics"], noisy()["metrics"]);
    // A whole count is written as an integer.
    assert!(written.contains("\"value\": 37,"), "{written}");
}

#[test]
fn ratios_may_reach_one_but_not_pass_it() {
    for (number, valid) in [
        (serde_json::json!(0.0), true),
        (serde_json::json!(1.0), true),
        (serde_json::json!(1.0 + 1e-12), true),
        (serde_json::json!(1.000_001), false),
    ] {
        for key in ["machine_other_cpu_ratio", "cpu_steal_ratio"] {
            let mut report = noisy();
            set_value(&mut report, key, number.clone());
            let found = paths(&report);
            if valid {
                assert!(found.is_empty(), "{key} = {number}: {found:?}");
            } else {
                assert_eq!(
                    found,
                    [
                        format!("$.metrics.{key}.value"),
                        format!("$.metrics.{key}.known_value")
                    ],
                    "{key} = {number}"
                );
            }
        }
    }
}

#[test]
fn context_switches_are_whole_and_frequencies_positive_in_hz() {
    let mut report = noisy();
    set_value(
        &mut report,
        "involuntary_context_switches",
        serde_json::json!(0.5),
    );
    let found = problems(&report);
    assert_eq!(
        found[0].path,
        "$.metrics.involuntary_context_switches.value"
    );
    assert!(found[0].message.contains("whole number"), "{found:?}");

    let mut report = noisy();
    set_value(
        &mut report,
        "involuntary_context_switches",
        serde_json::json!(0),
    );
    assert!(paths(&report).is_empty());

    let mut report = noisy();
    set_value(&mut report, "cpu_frequency", serde_json::json!(0.0));
    assert_eq!(
        paths(&report),
        [
            "$.metrics.cpu_frequency.value",
            "$.metrics.cpu_frequency.known_value"
        ]
    );

    for (key, unit) in [
        ("cpu_frequency", "ratio"),
        ("machine_other_cpu_ratio", "count"),
        ("involuntary_context_switches", "s"),
    ] {
        let mut report = noisy();
        report["metrics"][key]["unit"] = Value::from(unit);
        assert_eq!(paths(&report), [format!("$.metrics.{key}.unit")], "{key}");
    }
}

#[test]
fn unavailable_noise_metrics_need_a_reason() {
    let mut report = noisy();
    let metric = &mut report["metrics"]["cpu_frequency"];
    metric["status"] = Value::from("unavailable");
    metric["value"] = Value::Null;
    metric["known_value"] = Value::Null;
    assert_eq!(paths(&report), ["$.metrics.cpu_frequency.reason"]);
    report["metrics"]["cpu_frequency"]["reason"] = Value::from("no cpufreq driver");
    assert!(paths(&report).is_empty());
    let parsed = read_report(&report.to_string()).expect("valid");
    assert!(
        format_summary(&parsed).contains("    CPU frequency: unavailable (no cpufreq driver)\n")
    );
}

#[test]
fn the_summary_and_the_page_show_the_noise_metrics_and_the_diagnostic() {
    let parsed = read_report(&noisy().to_string()).expect("valid");
    let summary = format_summary(&parsed);
    // After the README's lines (which end with the profiler's), never between them.
    assert!(
        summary.contains(
            "  Throughput: 5,217,020.700 samples/s\n  Operator FLOPs: 1,048,576.000 FLOPs\n"
        ),
        "{summary}"
    );
    assert!(
        summary.contains(
            "  Profiler: not requested (separate instrumented pass)\n  Machine noise during \
             timing:\n    Other CPU use: 0.435\n    CPU steal: 0.030\n    Involuntary context \
             switches: 37\n    CPU frequency: 2,600 MHz\n  Diagnostics:\n"
        ),
        "{summary}"
    );
    assert!(summary.contains("    warning noisy_machine: the machine was busy while the workload was timed: machine_other_cpu_ratio 0.435"));
    let page = render_html(&parsed).expect("page");
    let section = page
        .split("<h2>Machine noise</h2>")
        .nth(1)
        .and_then(|rest| rest.split("</section>").next())
        .expect("a Machine noise section");
    for text in [
        "Other CPU use",
        "0.435",
        "CPU steal",
        "0.030",
        "Involuntary context switches",
        "37",
        "CPU frequency",
        "2.600 GHz",
    ] {
        assert!(section.contains(text), "{text} missing from {section}");
    }
    assert!(page.contains("<code>noisy_machine</code>"));
}
