//! The HTML page: every fixture renders, shows its kind, metrics and badges, escapes every report
//! string, is deterministic, makes no external request and stays lean.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use torchscan_core::format::readable_metric;
use torchscan_core::schema::common::{MetricResult, MetricStatus};
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

/// The page without the one link it may hold, to a kept profiler trace: a local file (a
/// relative path, or a `file:` URL), opened only when clicked, never fetched by the page.
fn without_trace_link(html: &str, name: &str) -> String {
    const LINK: &str = "<dt>Trace</dt><dd><a href=\"";
    let Some(start) = html.find(LINK) else {
        return html.to_owned();
    };
    let rest = &html[start + LINK.len()..];
    let end = rest.find('"').expect("the end of the link target");
    let target = &rest[..end];
    assert!(
        !target.contains(':') || target.starts_with("file:&#x2f;&#x2f;&#x2f;"),
        "{name}: the trace links {target:?}, not a local file"
    );
    format!("{}{}", &html[..start], &rest[end..])
}

fn assert_no_external_reference(html: &str, name: &str) {
    let lower = without_trace_link(html, name).to_ascii_lowercase();
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
                    let shown = escape(&readable_metric(metric).0);
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
    // 15 of the README run's 150 blocks lie more than 1.5 IQRs above Q3 (up to 27.46 us per call).
    let page = fixture_page("tests/fixtures/reports/benchmark_readme_m3_pro.json");
    assert_eq!(page.matches("<circle class=\"pt\"").count(), 135);
    assert_eq!(page.matches("<circle class=\"pt out\"").count(), 15);
    assert!(
        page.contains("; 15 slower blocks (up to 27.46 us) drawn hollow at the top edge"),
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

/// The rows of the page's contexts table: (setting, left, right, marked as differing).
fn context_table_rows(html: &str) -> Vec<(String, String, String, bool)> {
    let start = html
        .find("<table class=\"sides\">")
        .expect("a contexts table");
    let table = &html[start..start + html[start..].find("</table>").expect("its end")];
    let cell = |text: &str| text.replace("<strong>", "").replace("</strong>", "");
    table
        .lines()
        .filter(|line| line.starts_with("<tr") && line.contains("<td>"))
        .map(|line| {
            let cells: Vec<String> = line
                .split("<td")
                .skip(1)
                .map(|c| cell(&c[c.find('>').expect("a cell") + 1..c.find("</td>").expect("end")]))
                .collect();
            let differs = line.starts_with("<tr class=\"differs\">");
            assert_eq!(cells[3], if differs { "&#8800; differs" } else { "same" });
            (
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                differs,
            )
        })
        .collect()
}

#[test]
fn a_comparison_page_shows_both_contexts_with_the_differences_marked() {
    // Reports compared as `compare_benchmarks` writes them: the comparison's own context records
    // only the torchscan version; device, threads, torch and Python belong to the two sides.
    let root = repo_root().join("tests/fixtures/reports");
    let baseline = fs::read_to_string(root.join("benchmark_readme_cpu.json")).expect("fixture");
    let mut candidate: Value = serde_json::from_str(&baseline).expect("JSON");
    candidate["context"]["torch_threads"] = json!(4);
    candidate["context"]["python_version"] = json!("3.12.1");
    candidate["context"]["dtypes"] = json!(["torch.bfloat16"]);
    let comparison = torchscan_core::benchmark_comparison::compare_benchmarks_json(
        &baseline,
        &candidate.to_string(),
        None,
        &torchscan_core::benchmark_comparison::CompareOptions::default(),
    )
    .expect("compared");
    let own: Value = serde_json::from_str(&comparison).expect("JSON");
    assert!(own["context"]["device"].is_null() && own["context"]["torch_threads"].is_null());
    let html = render_report_json(&comparison).expect("renders");
    // Nothing the two reports record is shown as unknown.
    assert!(!html.contains("unknown"), "{html}");
    let header = &html[html.find("<header>").expect("header")..html.find("</header>").unwrap()];
    assert!(header.contains("<dt>torchscan</dt>"));
    assert!(!header.contains("<dt>Device</dt>"));
    let rows = context_table_rows(&html);
    let row = |label: &str| {
        rows.iter()
            .find(|r| r.0 == label)
            .map(|r| (r.1.as_str(), r.2.as_str(), r.3))
            .unwrap_or_else(|| panic!("no row {label}: {rows:?}"))
    };
    assert_eq!(row("Device"), ("cpu", "cpu", false));
    assert_eq!(row("Threads"), ("1", "4", true));
    assert_eq!(row("torch"), ("2.15.0", "2.15.0", false));
    assert_eq!(row("Python"), ("3.11.7", "3.12.1", true));
    assert_eq!(row("dtypes"), ("float32", "bfloat16", true));
    assert_eq!(row("Interop threads"), ("1", "1", false));
    assert_eq!(rows.iter().filter(|r| r.3).count(), 3);
    assert!(html.contains("3 settings differ (marked \u{2260})."));
    // The text summary names the same differences.
    let summary = torchscan_core::format_summary(&read_report(&comparison).expect("valid"));
    assert!(
        summary.contains(
            "Contexts differ: Python 3.11.7 -> 3.12.1; Threads 1 -> 4; dtypes float32 -> bfloat16\n"
        ),
        "{summary}"
    );
}

#[test]
fn a_diff_page_shows_both_analyses_contexts() {
    let root = repo_root().join("tests/fixtures/reports");
    let before = fs::read_to_string(root.join("analysis_small_cnn.json")).expect("fixture");
    let mut after: Value = serde_json::from_str(&before).expect("JSON");
    after["context"]["torch_version"] = json!("2.16.0");
    let diff = torchscan_core::compare_reports_json(&before, &after.to_string()).expect("diffed");
    let html = render_report_json(&diff).expect("renders");
    assert!(!html.contains("unknown"), "{html}");
    let rows = context_table_rows(&html);
    let torch = rows.iter().find(|r| r.0 == "torch").expect("torch row");
    assert_eq!(
        (torch.1.as_str(), torch.2.as_str(), torch.3),
        ("2.15.0", "2.16.0", true)
    );
    assert_eq!(rows.iter().filter(|r| r.3).count(), 1);
    assert!(html.contains("<th>Before</th><th>After</th>"));
}

#[test]
fn a_profiler_pass_stopped_by_the_time_budget_says_so() {
    let text =
        fs::read_to_string(repo_root().join("tests/fixtures/reports/benchmark_cuda_full.json"))
            .expect("fixture");
    let mut report: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(report["profiler"]["calls"], json!(10));
    let page = render_report_json(&report.to_string()).expect("renders");
    assert!(page.contains("<dt>Calls</dt><dd>10</dd>"));
    report["profiler"]["requested_calls"] = json!(25);
    let text = report.to_string();
    let page = render_report_json(&text).expect("renders");
    assert!(
        page.contains(
            "<dt>Calls</dt><dd>10 of 25 requested (the time budget stopped the pass)</dd>"
        )
    );
    let summary = torchscan_core::format_summary(&read_report(&text).expect("valid"));
    assert!(
        summary.contains("  Profiler: 10 calls of 25 requested, within the time budget ("),
        "{summary}"
    );
    // All requested calls ran: the counts read as before.
    report["profiler"]["requested_calls"] = json!(10);
    let page = render_report_json(&report.to_string()).expect("renders");
    assert!(page.contains("<dt>Calls</dt><dd>10</dd>"));
}
