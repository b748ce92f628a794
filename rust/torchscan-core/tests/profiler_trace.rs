//! The profiler pass's kept trace (`profiler.trace`): the text summary names it, the page links
//! it, and a report without one reads, shows and renders exactly as before the field existed.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use torchscan_core::{format_summary, read_report, render_html, render_report_json, to_json_text};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fixture of a pass whose trace was kept, as JSON.
fn traced() -> Value {
    let text = fs::read_to_string(
        repo_root().join("tests/fixtures/reports/benchmark_profiler_trace.json"),
    )
    .expect("fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn without_trace(report: &Value) -> Value {
    let mut report = report.clone();
    report["profiler"]
        .as_object_mut()
        .expect("the profiler section")
        .remove("trace");
    report
}

fn summary_of(report: &Value) -> String {
    format_summary(&read_report(&report.to_string()).expect("a valid report"))
}

fn page_of(report: &Value) -> String {
    render_report_json(&report.to_string()).expect("a page")
}

#[test]
fn the_summary_names_the_trace_and_adds_nothing_else() {
    let report = traced();
    let summary = summary_of(&report);
    let trace_lines = [
        "  Profiler trace: traces/linear.json (Chrome trace event JSON, 0.035 MiB; open it in \
         Perfetto or chrome://tracing)",
        "    Scope: the 20 profiled calls of the profiler pass (2 profiler sessions, joined); \
         instrumented, so its times are slower than the timed blocks'",
    ];
    let lines: Vec<&str> = summary.lines().collect();
    let at = lines
        .iter()
        .position(|line| *line == trace_lines[0])
        .unwrap_or_else(|| panic!("no trace line in {summary}"));
    assert_eq!(lines[at + 1], trace_lines[1]);
    // Right after the profiler's operators, before the diagnostics.
    assert!(lines[at - 1].starts_with("    aten::"), "{summary}");
    let rest: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| !trace_lines.contains(line))
        .collect();
    let before = summary_of(&without_trace(&report));
    assert_eq!(rest, before.lines().collect::<Vec<_>>());
}

#[test]
fn the_page_links_the_trace_and_adds_nothing_else() {
    let report = traced();
    let page = page_of(&report);
    let link =
        "<dt>Trace</dt><dd><a href=\"traces&#x2f;linear.json\">traces&#x2f;linear.json</a></dd>";
    let start = page
        .find(link)
        .unwrap_or_else(|| panic!("no link in {page}"));
    let facts = &page[start..];
    let end = facts
        .find("</dl>")
        .expect("the end of the profiler's facts");
    let facts = &facts[..end];
    assert!(
        facts.contains("<dt>Trace file</dt><dd>Chrome trace event JSON, "),
        "{facts}"
    );
    assert!(facts.contains("Perfetto"), "{facts}");
    assert!(
        facts.contains(
            "<dt>Trace scope</dt><dd>the 20 profiled calls of the profiler pass (2 profiler \
             sessions, joined); instrumented, so its times are slower than the timed blocks&#x27;</dd>"
        ),
        "{facts}"
    );
    // The facts follow the pass's calls; without the trace the page is byte for byte the same.
    assert!(page[..start].ends_with("<dt>Calls</dt><dd>20</dd>"));
    let rest = format!("{}{}", &page[..start], &page[start + end..]);
    assert_eq!(rest, page_of(&without_trace(&report)));
    assert_eq!(page.matches("<a href=").count(), 1);
}

#[test]
fn a_hostile_path_is_escaped_in_the_text_and_percent_encoded_in_the_link() {
    let mut report = traced();
    let path = "javascript:alert(1)//<script>x</script>\u{202e}\" onclick=\"y.json";
    report["profiler"]["trace"]["path"] = json!(path);
    let page = page_of(&report);
    assert!(!page.contains("<script>x"));
    assert!(!page.contains("onclick=\""));
    assert!(!page.contains('\u{202e}'));
    assert!(page.contains(
        "<a href=\"javascript%3Aalert%281%29&#x2f;&#x2f;%3Cscript%3Ex%3C&#x2f;script%3E%E2%80%AE\
         %22%20onclick%3D%22y.json\">javascript:alert(1)&#x2f;&#x2f;&lt;script&gt;x&lt;&#x2f;\
         script&gt;\\u202e&quot; onclick=&quot;y.json</a>"
    ));
    let summary = summary_of(&report);
    assert!(summary.contains(
        "  Profiler trace: javascript:alert(1)//<script>x</script>\\u202e\" onclick=\"y.json (",
    ));
}

#[test]
fn an_absolute_path_links_a_file_url_and_a_gz_path_is_gzip() {
    let mut report = traced();
    report["profiler"]["trace"]["path"] = json!("/tmp/run 1/linear.json.gz");
    report["profiler"]["trace"]["format"] = json!("chrome_trace_gzip");
    let page = page_of(&report);
    assert!(page.contains(
        "<a href=\"file:&#x2f;&#x2f;&#x2f;tmp&#x2f;run%201&#x2f;linear.json.gz\">&#x2f;tmp&#x2f;\
         run 1&#x2f;linear.json.gz</a>"
    ));
    assert!(page.contains("<dt>Trace file</dt><dd>gzip-compressed Chrome trace event JSON, "));
    assert!(summary_of(&report).contains(
        "  Profiler trace: /tmp/run 1/linear.json.gz (gzip-compressed Chrome trace event JSON, "
    ));
}

#[test]
fn a_report_without_a_trace_writes_no_trace_member() {
    let before = without_trace(&traced());
    let report = read_report(&before.to_string()).expect("valid without a trace");
    let Some(benchmark) = report_benchmark(&report) else {
        panic!("a benchmark report")
    };
    assert!(benchmark.profiler.trace.is_none());
    let written: Value = serde_json::from_str(&to_json_text(&report)).expect("JSON");
    assert_eq!(written, before);
    assert!(written["profiler"].get("trace").is_none());
    // And null reads as absent, as for every optional member.
    let mut null = before.clone();
    null["profiler"]["trace"] = Value::Null;
    let reread = read_report(&null.to_string()).expect("null reads as absent");
    assert_eq!(render_html(&reread), render_html(&report));
}

fn report_benchmark(
    report: &torchscan_core::Report,
) -> Option<&torchscan_core::schema::benchmark::BenchmarkReport> {
    match report {
        torchscan_core::Report::Benchmark(benchmark) => Some(benchmark),
        _ => None,
    }
}
