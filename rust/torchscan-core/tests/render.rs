//! The HTML page: every fixture renders, shows its kind, metrics and badges, escapes every report
//! string, is deterministic, makes no external request and stays lean.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use torchscan_core::schema::common::{MetricResult, MetricStatus};
use torchscan_core::summary::format_metric;
use torchscan_core::{
    RenderFailure, Report, parse_report, read_report, render_html, render_report_json,
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .expect("fixture directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

fn fixtures() -> Vec<(PathBuf, String)> {
    let root = repo_root();
    let mut files = json_files(&root.join("tests/fixtures/reports"));
    files.extend(json_files(&root.join("python/torchscan/data")));
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).expect("readable fixture");
            (path, text)
        })
        .collect()
}

/// minijinja's HTML escape.
fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '/' => out.push_str("&#x2f;"),
            other => out.push(other),
        }
    }
    out
}

fn metrics_of(report: &Report) -> Vec<&MetricResult> {
    match report {
        Report::Analysis(r) => vec![&r.totals.parameter_bytes, &r.totals.module_flops],
        Report::Flops(r) => vec![&r.operator_flops.total],
        Report::Benchmark(r) => vec![
            &r.metrics.first_call,
            &r.metrics.latency,
            &r.metrics.throughput,
            &r.metrics.tensor_memory_peak,
        ],
        Report::PeakMemory(r) => vec![&r.tensor_memory_peak, &r.baseline],
        _ => vec![],
    }
}

fn assert_no_external_reference(html: &str, name: &str) {
    let lower = html.to_ascii_lowercase();
    for needle in [
        "http:", "https:", "src=", "href=", "@import", "url(", "<script", "<link", "//",
    ] {
        assert!(
            !lower.contains(needle),
            "{name}: the page contains {needle:?}"
        );
    }
}

#[test]
fn every_fixture_renders_with_its_kind_metrics_and_badges() {
    let files = fixtures();
    assert!(files.len() >= 7);
    for (path, text) in files {
        let name = path.display().to_string();
        let report = read_report(&text).expect("valid fixture");
        let html = render_html(&report).expect("renders");
        assert!(html.starts_with("<!DOCTYPE html>"), "{name}");
        assert!(html.ends_with("</html>\n"), "{name}");
        assert!(html.contains(&format!("<code>{}</code>", report.kind().as_str())));
        assert!(html.contains("prefers-color-scheme"), "{name}");
        assert!(html.contains("Diagnostics ("), "{name}");
        for metric in metrics_of(&report) {
            assert!(
                html.contains(&format!("badge {0}\">{0}</span>", metric.status.as_str())),
                "{name}: no {} badge",
                metric.status.as_str()
            );
            match metric.status {
                MetricStatus::Complete => {
                    let shown = escape(&format_metric(metric));
                    assert!(html.contains(&shown), "{name}: {shown} is missing");
                }
                MetricStatus::Partial => assert!(html.contains("at least "), "{name}"),
                MetricStatus::Unavailable => {
                    let reason = escape(metric.reason.as_deref().unwrap_or_default());
                    assert!(html.contains(&reason), "{name}: reason {reason} is missing");
                }
            }
        }
        for diagnostic in report.diagnostics() {
            let code = serde_json::to_value(diagnostic.code).expect("code");
            let code = code.as_str().expect("code text");
            assert!(html.contains(&format!("<code>{code}</code>")), "{name}");
        }
        assert_no_external_reference(&html, &name);
        assert_eq!(render_report_json(&text).as_deref(), Ok(html.as_str()));
    }
}

#[test]
fn kinds_show_their_specific_parts() {
    let render = |file: &str| {
        let text = fs::read_to_string(repo_root().join("tests/fixtures/reports").join(file))
            .expect("fixture");
        render_report_json(&text).expect("renders")
    };
    let benchmark = render("benchmark_readme_cpu.json");
    assert!(benchmark.contains("<svg "));
    assert!(benchmark.contains("class=\"med\""));
    assert!(benchmark.contains("never summed"));
    assert!(benchmark.contains("counted"));
    let analysis = render("analysis_small_cnn.json");
    assert!(analysis.contains("class=\"bar\" style=\"width:"));
    assert!(analysis.contains("Conv2d"));
    // Storage is labelled as storage, never as memory a reader could take for peak memory.
    assert!(analysis.contains("<h3>Parameter storage (not peak memory)<"));
    assert!(analysis.contains("<h3>Buffer storage (not peak memory)<"));
    assert!(!analysis.contains("Parameter memory"));
    let failed = render("benchmark_comparison_failed_check.json");
    assert!(failed.contains("deltas withheld"));
    assert!(failed.contains("class=\"banner "));
    let passed = render("benchmark_comparison_passed.json");
    assert!(passed.contains("Verdict: "));
    let diff = render("report_diff_widened_cnn.json");
    assert!(diff.contains("Layers changed ("));
    let partial = render("analysis_partial_operator_flops_tied_weights.json");
    assert!(partial.contains("badge partial\">partial</span>"));
    assert!(partial.contains("at least "));
}

#[test]
fn rendering_is_deterministic() {
    for (_, text) in fixtures() {
        let first = render_report_json(&text).expect("renders");
        let second = render_report_json(&text).expect("renders");
        assert_eq!(first, second);
    }
}

const HOSTILE: &str = "<script>alert(1)</script>";

#[test]
fn every_report_string_is_escaped() {
    let text =
        fs::read_to_string(repo_root().join("tests/fixtures/reports/analysis_small_cnn.json"))
            .expect("fixture");
    let mut value: Value = serde_json::from_str(&text).expect("JSON");
    value["context"]["model_type"] = json!(HOSTILE);
    for layer in value["layers"].as_array_mut().expect("layers") {
        layer["type"] = json!(HOSTILE);
    }
    value["operator_flops"]["counted"][0]["operator"] = json!(HOSTILE);
    value["diagnostics"] = json!([{
        "code": "note",
        "severity": "info",
        "metric": null,
        "message": HOSTILE,
        "operator": HOSTILE,
    }]);
    let report = parse_report(&value.to_string()).expect("parses");
    let html = render_html(&report).expect("renders");
    assert!(!html.contains("<script"), "an unescaped <script> tag");
    let escaped = escape(HOSTILE);
    assert!(html.matches(&escaped).count() >= 4, "{html}");
}

#[test]
fn a_large_analysis_stays_lean() {
    let text =
        fs::read_to_string(repo_root().join("tests/fixtures/reports/analysis_small_cnn.json"))
            .expect("fixture");
    let mut value: Value = serde_json::from_str(&text).expect("JSON");
    let template = value["layers"][1].clone();
    let layers: Vec<Value> = (0..2_000)
        .map(|i| {
            let mut layer = template.clone();
            layer["path"] = json!(format!("blocks.{}.conv{}", i / 10, i % 10));
            layer["depth"] = json!(1 + i % 4);
            layer
        })
        .collect();
    value["layers"] = Value::Array(layers);
    let report = parse_report(&value.to_string()).expect("parses");
    let html = render_html(&report).expect("renders");
    assert!(
        html.len() < 2_000_000,
        "2,000 layers render to {} bytes",
        html.len()
    );
}

#[test]
fn invalid_json_gives_the_problems() {
    match render_report_json("{\"schema_version\": 1}") {
        Err(failure @ RenderFailure::Invalid(_)) => assert!(!failure.problems().is_empty()),
        other => panic!("expected problems, got {other:?}"),
    }
}

fn fixture_page(relative: &str) -> String {
    let text = fs::read_to_string(repo_root().join(relative)).expect("fixture");
    render_report_json(&text).expect("renders")
}

#[test]
fn slow_outlier_blocks_sit_hollow_on_the_top_edge() {
    // 15 of the example's 150 blocks lie more than 1.5 IQRs above Q3 (up to 0.027 ms per call).
    let page = fixture_page("python/torchscan/data/example_workload.json");
    assert_eq!(page.matches("<circle class=\"pt\"").count(), 135);
    assert_eq!(page.matches("<circle class=\"pt out\"").count(), 15);
    assert!(
        page.contains("; 15 slower blocks (up to 0.027 ms) drawn hollow at the top edge"),
        "{page}"
    );
    // Every hollow point is on the top edge of the plot (y = 10).
    for circle in page.split("<circle class=\"pt out\"").skip(1) {
        assert!(circle.contains("cy=\"10.0\""), "{circle}");
    }
    // Without outliers nothing is clipped.
    let page = fixture_page("tests/fixtures/reports/benchmark_readme_cpu.json");
    assert_eq!(page.matches("<circle class=\"pt\"").count(), 33);
    assert!(!page.contains("pt out"));
    assert!(!page.contains("drawn hollow"));
}
