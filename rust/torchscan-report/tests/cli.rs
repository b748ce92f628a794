//! The `torchscan-report` binary as users run it: stdout, stderr and exit codes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(relative: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(relative)
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_torchscan-report"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            // A command that fails before reading its input closes the pipe first.
            if let Err(error) = pipe.write_all(text.as_bytes()) {
                assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "write stdin");
            }
        }
    }
    child.wait_with_output().expect("the binary finishes")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 stderr")
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(dir)
        .expect("fixture directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

#[test]
fn schema_prints_exactly_the_checked_in_file() {
    let output = run(&["schema"], None);
    assert_eq!(output.status.code(), Some(0));
    let checked_in =
        fs::read_to_string(repo_root().join("docs/schema/report.v1.schema.json")).expect("schema");
    assert_eq!(stdout(&output), checked_in);
}

#[test]
fn validate_accepts_every_valid_fixture() {
    let files = files_in(&fixture("reports"));
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let output = run(&args, None);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!(
            "{} checked: {} valid, 0 invalid\n",
            files.len(),
            files.len()
        )
    );
}

#[test]
fn validate_prints_one_line_per_problem_with_its_path() {
    let expected: std::collections::BTreeMap<String, String> = serde_json::from_str(
        &fs::read_to_string(fixture("invalid_expected.json")).expect("expected paths"),
    )
    .expect("JSON object");
    for file in files_in(&fixture("invalid")) {
        let output = run(&["validate", &file], None);
        assert_eq!(output.status.code(), Some(1), "{file} must be invalid");
        let name = Path::new(&file)
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let wanted = format!("{file}: {}: ", expected[&name]);
        let text = stdout(&output);
        assert!(
            text.lines().any(|line| line.starts_with(&wanted)),
            "{name}: {text}"
        );
        assert!(
            text.lines()
                .all(|line| line.starts_with(&format!("{file}: $"))),
            "{text}"
        );
    }
}

#[test]
fn validate_exit_code_is_one_when_any_file_is_invalid() {
    let valid = fixture("reports/analysis_small_cnn.json");
    let invalid = files_in(&fixture("invalid"))[0].clone();
    let output = run(
        &["validate", valid.to_str().expect("utf-8"), &invalid],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).ends_with("2 checked: 1 valid, 1 invalid\n"));
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(run(&[], None).status.code(), Some(2));
    assert_eq!(run(&["validate"], None).status.code(), Some(2));
    assert_eq!(run(&["frobnicate"], None).status.code(), Some(2));
    let missing = run(&["validate", "/nonexistent/report.json"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read /nonexistent/report.json"));
    let help = run(&["--help"], None);
    assert_eq!(help.status.code(), Some(0));
    assert!(
        stdout(&help)
            .contains("Exit codes: 0 ok, 1 invalid input (including a file that is not UTF-8")
    );
}

#[test]
fn stdin_is_read_for_a_dash() {
    let text = fs::read_to_string(repo_root().join("python/torchscan/data/example_workload.json"))
        .expect("example report");
    let output = run(&["summary", "-"], Some(&text));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("Workload on cpu (1 PyTorch threads)\n"));
    let output = run(&["validate", "-"], Some("{\"schema_version\": 2}"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "<stdin>: $.schema_version: unsupported schema_version 2; this build reads versions: 1\n"
    );
}

#[test]
fn summary_of_an_invalid_report_exits_one() {
    let output = run(&["summary", "-"], Some("[]"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "<stdin>: $: a report is a JSON object, got an array\n"
    );
    assert_eq!(stdout(&output), "");
}

fn fixture_str(relative: &str) -> String {
    fixture(relative).to_string_lossy().into_owned()
}

#[test]
fn diff_prints_the_text_summary_of_the_comparison() {
    let before = fixture_str("reports/analysis_small_cnn.json");
    let after = fixture_str("reports/analysis_small_cnn_widened.json");
    let output = run(&["diff", &before, &after], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let text = stdout(&output);
    assert!(
        text.starts_with(
            "Report diff: Sequential -> Sequential\n  parameters: 314 -> 618 (+304)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  Layers added: 1\n    5 #0 (Identity)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "    0 #0 (Conv2d): output, parameters.trainable, parameters.bytes, metrics.module_flops, metrics.macs, metrics.dmas\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("info structure_changed: 1 layer added"),
        "{text}"
    );
    let dash = run(&["diff", &before, &after, "-o", "-"], None);
    assert_eq!(dash.status.code(), Some(0));
    assert_eq!(stdout(&dash), text, "`-o -` is standard output");
}

#[test]
fn diff_json_is_a_valid_report_diff_and_reads_stdin_for_a_dash() {
    let before = fixture_str("reports/analysis_small_cnn.json");
    let after_text =
        fs::read_to_string(fixture("reports/analysis_small_cnn_widened.json")).expect("fixture");
    let output = run(
        &["diff", &before, "-", "--format", "json"],
        Some(&after_text),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json = stdout(&output);
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(value["kind"], "report_diff");
    assert_eq!(value["layers"]["added"][0]["path"], "5");
    let validated = run(&["validate", "-"], Some(&json));
    assert_eq!(validated.status.code(), Some(0), "{}", stdout(&validated));

    // The same diff with stdin as BEFORE: the JSON equals the file-only run.
    let before_text =
        fs::read_to_string(fixture("reports/analysis_small_cnn.json")).expect("fixture");
    let after = fixture_str("reports/analysis_small_cnn_widened.json");
    let output = run(&["diff", "-", &after, "--format=json"], Some(&before_text));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), json);
}

#[test]
fn diff_writes_the_output_file_atomically() {
    let dir = std::env::temp_dir().join(format!("torchscan-report-diff-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temporary directory");
    let out = dir.join("diff.json");
    fs::write(&out, "old contents").expect("previous file");
    let before = fixture_str("reports/analysis_small_cnn.json");
    let after = fixture_str("reports/analysis_partial_operator_flops_tied_weights.json");
    let out_arg = out.to_string_lossy().into_owned();
    let output = run(
        &["diff", &before, &after, "--format", "json", "-o", &out_arg],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let written = fs::read_to_string(&out).expect("written");
    let value: serde_json::Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(value["kind"], "report_diff");
    let module_flops = value["totals"]["module_flops"].clone();
    assert_eq!(module_flops["status"], "partial");
    assert_eq!(module_flops["delta"], serde_json::Value::Null);
    // Only the output file is left: no temporary file.
    let names: Vec<_> = fs::read_dir(&dir)
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("diff.json")]);

    // A refused comparison leaves the previous file alone.
    let structure = fixture_str("reports/analysis_structure_mode.json");
    let output = run(&["diff", &before, &structure, "-o", &out_arg], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(fs::read_to_string(&out).expect("kept"), written);
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn diff_refuses_reports_that_cannot_be_compared() {
    let full = fixture_str("reports/analysis_small_cnn.json");
    let structure = fixture_str("reports/analysis_structure_mode.json");
    let output = run(&["diff", &full, &structure], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!(
            "torchscan-report: cannot compare {full} and {structure}: the analysis modes differ: \
             before is `full`, after is `structure`; analyse both models in the same mode (both \
             `full` or both `structure`)\n"
        )
    );
    let benchmark = fixture_str("reports/benchmark_readme_cpu.json");
    let output = run(&["diff", &benchmark, &full], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("the report before is a `benchmark` report"),
        "{}",
        stderr(&output)
    );
    let full_text =
        fs::read_to_string(fixture("reports/analysis_small_cnn.json")).expect("fixture");
    let version_two = full_text.replacen("\"schema_version\": 1", "\"schema_version\": 2", 1);
    let output = run(&["diff", &full, "-"], Some(&version_two));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("before is schema_version 1, after is schema_version 2"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn diff_of_invalid_input_prints_the_problems_and_exits_one() {
    let full = fixture_str("reports/analysis_small_cnn.json");
    let output = run(&["diff", "-", &full], Some("[]"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "<stdin>: $: a report is a JSON object, got an array\n"
    );
    let invalid = fixture_str("invalid/unknown_analysis_mode.json");
    let output = run(&["diff", &full, &invalid], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output)
            .lines()
            .all(|line| line.starts_with(&format!("{invalid}: $"))),
        "{}",
        stderr(&output)
    );
}

#[test]
fn diff_usage_errors_exit_two() {
    let full = fixture_str("reports/analysis_small_cnn.json");
    assert_eq!(run(&["diff"], None).status.code(), Some(2));
    assert_eq!(run(&["diff", &full], None).status.code(), Some(2));
    assert_eq!(
        run(&["diff", &full, &full, "--format", "yaml"], None)
            .status
            .code(),
        Some(2)
    );
    let both_stdin = run(&["diff", "-", "-"], Some("{}"));
    assert_eq!(both_stdin.status.code(), Some(2));
    assert!(stderr(&both_stdin).contains("only one of BEFORE and AFTER can be `-`"));
    let missing = run(&["diff", &full, "/nonexistent/after.json"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read /nonexistent/after.json"));
    let unwritable = run(
        &["diff", &full, &full, "-o", "/nonexistent/dir/out.json"],
        None,
    );
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(stderr(&unwritable).contains("cannot write /nonexistent/dir/out.json"));
    let help = run(&["--help"], None);
    assert!(stdout(&help).contains("torchscan-report diff before.json after.json"));
}

#[test]
fn render_writes_the_page_to_stdout_and_atomically_to_a_file() {
    let dir = std::env::temp_dir().join(format!("torchscan-render-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temporary directory");
    for file in files_in(&fixture("reports")) {
        let output = run(&["render", &file], None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let page = stdout(&output);
        assert!(page.starts_with("<!DOCTYPE html>"));
        let text = fs::read_to_string(&file).expect("fixture");
        let piped = run(&["render", "-"], Some(&text));
        assert_eq!(piped.status.code(), Some(0));
        assert_eq!(stdout(&piped), page);
        let target = dir.join("page.html");
        let target_text = target.to_string_lossy().into_owned();
        let written = run(&["render", &file, "-o", &target_text], None);
        assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
        assert_eq!(stdout(&written), "");
        assert_eq!(fs::read_to_string(&target).expect("page"), page);
    }
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .expect("directory")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn render_exit_codes() {
    let invalid = run(&["render", "-"], Some("{\"schema_version\": 1}"));
    assert_eq!(invalid.status.code(), Some(1));
    assert_eq!(stdout(&invalid), "");
    assert!(stderr(&invalid).contains("<stdin>: "));
    let missing = run(&["render", "/nonexistent/report.json"], None);
    assert_eq!(missing.status.code(), Some(2));
    let usage = run(&["render"], None);
    assert_eq!(usage.status.code(), Some(2));
    let file = fixture("reports/flops_square_matmul.json");
    let unwritable = run(
        &[
            "render",
            &file.to_string_lossy(),
            "-o",
            "/nonexistent/dir/page.html",
        ],
        None,
    );
    assert_eq!(unwritable.status.code(), Some(2));
}

const BASELINE: &str = "reports/benchmark_readme_cpu.json";
/// A report long enough (1 s, 43 blocks) for a comparison measured apart to estimate its drift.
const LONG_BASELINE: &str = "reports/benchmark_readme_cpu_1s.json";
const CHECK_PASSED: &str = "reports/output_check_passed.json";
const CHECK_FAILED: &str = "reports/output_check_failed.json";

fn candidate_path() -> String {
    repo_root()
        .join("tests/fixtures/reports/benchmark_readme_m3_pro.json")
        .to_string_lossy()
        .into_owned()
}

fn read(path: &str) -> String {
    fs::read_to_string(path).expect("readable report")
}

/// A fresh, empty directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("torchscan-report-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// The long baseline with every timed block `factor` times as long (and its starts moved to
/// match), as a new benchmark report.
fn scaled_baseline(factor: f64) -> String {
    let mut report: serde_json::Value =
        serde_json::from_str(&read(&fixture_str(LONG_BASELINE))).expect("JSON");
    let timing = &mut report["timing"];
    let starts: Vec<f64> = timing["block_starts_s"]
        .as_array()
        .expect("starts")
        .iter()
        .map(|v| v.as_f64().expect("number") * factor)
        .collect();
    timing["block_starts_s"] = serde_json::json!(starts);
    let blocks: Vec<f64> = timing["block_durations_s"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|v| v.as_f64().expect("number") * factor)
        .collect();
    let calls = timing["calls_per_block"].as_f64().expect("calls");
    let mut per_call: Vec<f64> = blocks.iter().map(|b| b / calls).collect();
    timing["block_durations_s"] = serde_json::json!(blocks);
    per_call.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let position = q * (per_call.len() - 1) as f64;
        let (low, high) = (position.floor() as usize, position.ceil() as usize);
        per_call[low] + (per_call[high] - per_call[low]) * (position - low as f64)
    };
    let (q1, median, q3) = (quantile(0.25), quantile(0.5), quantile(0.75));
    let metrics = &mut report["metrics"];
    metrics["latency"]["value"] = serde_json::json!(median);
    metrics["latency"]["known_value"] = serde_json::json!(median);
    metrics["latency_iqr"]["value"] = serde_json::json!(q3 - q1);
    metrics["latency_iqr"]["known_value"] = serde_json::json!(q3 - q1);
    let work_units = report["workload"]["work_units"].as_f64().expect("work");
    let total: f64 = blocks.iter().sum();
    let throughput = work_units * calls * blocks.len() as f64 / total;
    let metrics = &mut report["metrics"];
    metrics["throughput"]["value"] = serde_json::json!(throughput);
    metrics["throughput"]["known_value"] = serde_json::json!(throughput);
    serde_json::to_string_pretty(&report).expect("JSON")
}

fn core_comparison(
    baseline: &str,
    candidate: &str,
    check: Option<&str>,
    options: &torchscan_core::benchmark_comparison::CompareOptions,
) -> String {
    torchscan_core::benchmark_comparison::compare_benchmarks_json(
        baseline, candidate, check, options,
    )
    .expect("a comparison")
}

#[test]
fn compare_json_is_the_core_comparison_byte_for_byte() {
    let baseline = fixture_str(BASELINE);
    let candidate = candidate_path();
    let defaults = torchscan_core::benchmark_comparison::CompareOptions::default();
    for check in [None, Some(CHECK_PASSED), Some(CHECK_FAILED)] {
        let mut args = vec![
            "compare".to_owned(),
            baseline.clone(),
            candidate.clone(),
            "--format".to_owned(),
            "json".to_owned(),
        ];
        let check_text = check.map(|c| read(&fixture_str(c)));
        if let Some(c) = check {
            args.extend(["--check".to_owned(), fixture_str(c)]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run(&args, None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stderr(&output), "");
        let expected = core_comparison(
            &read(&baseline),
            &read(&candidate),
            check_text.as_deref(),
            &defaults,
        );
        assert_eq!(stdout(&output), expected, "check {check:?}");
        let value: serde_json::Value = serde_json::from_str(&expected).expect("JSON");
        assert_eq!(value["kind"], "benchmark_comparison");
        assert_eq!(value["settings"]["bootstrap_resamples"], 2000);
        assert_eq!(value["settings"]["confidence_level"], 0.95);
        assert_eq!(value["settings"]["min_effect"], 0.02);
        assert_eq!(value["settings"]["seed"], 0);
    }
}

#[test]
fn compare_passes_every_option_to_the_core() {
    let baseline = fixture_str(BASELINE);
    let candidate = candidate_path();
    let output = run(
        &[
            "compare",
            &baseline,
            &candidate,
            "--format",
            "json",
            "--seed",
            "11",
            "--bootstrap-resamples",
            "300",
            "--confidence-level",
            "0.8",
            "--min-effect",
            "0.1",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let options = torchscan_core::benchmark_comparison::CompareOptions {
        confidence_level: 0.8,
        bootstrap_resamples: 300,
        seed: 11,
        min_effect: 0.1,
    };
    let expected = core_comparison(&read(&baseline), &read(&candidate), None, &options);
    assert_eq!(stdout(&output), expected);
    let defaults = run(&["compare", &baseline, &candidate, "--format=json"], None);
    assert_ne!(stdout(&defaults), expected, "the options change the result");
}

#[test]
fn compare_text_and_html_show_the_json_comparison() {
    let baseline = fixture_str(BASELINE);
    let candidate = candidate_path();
    let check = fixture_str(CHECK_PASSED);
    let json = run(
        &[
            "compare", &baseline, &candidate, "--check", &check, "--format", "json",
        ],
        None,
    );
    let report = torchscan_core::read_report(&stdout(&json)).expect("a valid comparison");
    let text = run(&["compare", &baseline, &candidate, "--check", &check], None);
    assert_eq!(text.status.code(), Some(0));
    assert_eq!(stdout(&text), torchscan_core::format_summary(&report));
    assert!(
        stdout(&text).starts_with("Comparison: "),
        "{}",
        stdout(&text)
    );
    let html = run(
        &[
            "compare", &baseline, &candidate, "--check", &check, "--format", "html",
        ],
        None,
    );
    assert_eq!(html.status.code(), Some(0));
    let rendered = run(&["render", "-"], Some(&stdout(&json)));
    assert_eq!(stdout(&html), stdout(&rendered));
    assert!(stdout(&html).contains("benchmark_comparison"));
}

#[test]
fn compare_reads_any_one_input_from_stdin() {
    let baseline = fixture_str(BASELINE);
    let candidate = candidate_path();
    let check = fixture_str(CHECK_FAILED);
    let from_files = run(
        &[
            "compare", &baseline, &candidate, "--check", &check, "--format", "json",
        ],
        None,
    );
    assert_eq!(from_files.status.code(), Some(0));
    let variants: [([&str; 3], &str); 3] = [
        (["-", &candidate, &check], &baseline),
        ([&baseline, "-", &check], &candidate),
        ([&baseline, &candidate, "-"], &check),
    ];
    for ([base, cand, chk], piped) in variants {
        let output = run(
            &[
                "compare", base, cand, "--check", chk, "--format", "json", "-o", "-",
            ],
            Some(&read(piped)),
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output), stdout(&from_files), "{piped} on stdin");
    }
}

#[test]
fn compare_gate_fails_on_a_named_verdict_after_writing_the_output() {
    let dir = scratch("compare-gate");
    let slower = dir.join("slower.json");
    fs::write(&slower, scaled_baseline(1.5)).expect("candidate");
    let slower = slower.to_string_lossy().into_owned();
    let validated = run(&["validate", &slower], None);
    assert_eq!(validated.status.code(), Some(0), "{}", stdout(&validated));
    let baseline = fixture_str(LONG_BASELINE);
    let out = dir.join("comparison.json");
    let out_arg = out.to_string_lossy().into_owned();
    let gated = run(
        &[
            "compare",
            &baseline,
            &slower,
            "--format",
            "json",
            "-o",
            &out_arg,
            "--fail-on",
            "slower",
        ],
        None,
    );
    assert_eq!(gated.status.code(), Some(1));
    assert_eq!(
        stderr(&gated),
        "torchscan-report: the verdict is `slower`, which --fail-on rejects\n"
    );
    let written: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&out).expect("written first")).expect("JSON");
    assert_eq!(written["verdict"], "slower");
    let latency = written["deltas"]
        .as_array()
        .expect("deltas")
        .iter()
        .find(|d| d["metric"] == "latency")
        .expect("latency")
        .clone();
    let ratio = latency["ratio"].as_f64().expect("ratio");
    assert!((ratio - 1.5).abs() < 1e-9, "{ratio}");
    // Other verdicts pass the gate; several gates can be named.
    for gates in [
        &["--fail-on", "faster"][..],
        &["--fail-on", "inconclusive,withheld"],
    ] {
        let mut args = vec!["compare", &baseline, &slower];
        args.extend_from_slice(gates);
        let output = run(&args, None);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{gates:?}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).starts_with("Comparison: slower\n"));
    }
    let repeated = run(
        &[
            "compare",
            &baseline,
            &slower,
            "--fail-on",
            "faster",
            "--fail-on",
            "slower",
        ],
        None,
    );
    assert_eq!(repeated.status.code(), Some(1));
    // The same reports the other way round: faster.
    let faster = run(
        &["compare", &slower, &baseline, "--fail-on", "faster"],
        None,
    );
    assert_eq!(faster.status.code(), Some(1));
    assert!(stdout(&faster).starts_with("Comparison: faster\n"));
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn compare_refusals_and_invalid_input_exit_one_and_write_nothing() {
    let dir = scratch("compare-refused");
    let out = dir.join("comparison.txt");
    fs::write(&out, "previous").expect("previous file");
    let out_arg = out.to_string_lossy().into_owned();
    let baseline = fixture_str(BASELINE);
    let cuda = fixture_str("reports/benchmark_cuda_full.json");
    let output = run(&["compare", &baseline, &cuda, "-o", &out_arg], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "torchscan-report: cannot compare {baseline} and {cuda}: the reports count different \
             work (32 samples vs 4096 tokens per call); measure both with the same work_units \
             and work_unit\n"
        )
    );
    let flops = fixture_str("reports/flops_square_matmul.json");
    let output = run(
        &[
            "compare",
            &baseline,
            &candidate_path(),
            "--check",
            &flops,
            "-o",
            &out_arg,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("{flops}: $.kind: expected a `output_check` report, found `flops`\n")
    );
    let broken = read(&baseline).replacen("\"calls_per_block\": 1000", "\"calls_per_block\": 0", 1);
    let output = run(&["compare", &baseline, "-", "-o", &out_arg], Some(&broken));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("<stdin>: $.timing.calls_per_block: "),
        "{}",
        stderr(&output)
    );
    assert_eq!(fs::read_to_string(&out).expect("kept"), "previous");
    let names: Vec<_> = fs::read_dir(&dir)
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("comparison.txt")]);
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn compare_usage_errors_exit_two() {
    let baseline = fixture_str(BASELINE);
    let candidate = candidate_path();
    assert_eq!(run(&["compare"], None).status.code(), Some(2));
    assert_eq!(run(&["compare", &baseline], None).status.code(), Some(2));
    for (option, value) in [
        ("--confidence-level", "0"),
        ("--confidence-level", "1"),
        ("--bootstrap-resamples", "0"),
        ("--bootstrap-resamples", "1000001"),
        ("--min-effect", "-0.01"),
        ("--min-effect", "inf"),
        ("--seed", "-1"),
        ("--format", "yaml"),
        ("--fail-on", "worse"),
    ] {
        let output = run(&["compare", &baseline, &candidate, option, value], None);
        assert_eq!(output.status.code(), Some(2), "{option} {value}");
        assert!(stderr(&output).contains(option), "{}", stderr(&output));
        assert_eq!(stdout(&output), "");
    }
    let two = run(&["compare", "-", "-"], Some("{}"));
    assert_eq!(two.status.code(), Some(2));
    let missing = run(&["compare", &baseline, "/nonexistent/candidate.json"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read /nonexistent/candidate.json"));
    let unwritable = run(
        &[
            "compare",
            &baseline,
            &candidate,
            "-o",
            "/nonexistent/dir/out.json",
        ],
        None,
    );
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(stderr(&unwritable).contains("cannot write /nonexistent/dir/out.json"));
}

#[test]
fn diff_html_is_the_page_of_the_diff_report() {
    let before = fixture_str("reports/analysis_small_cnn.json");
    let after = fixture_str("reports/analysis_small_cnn_widened.json");
    let json = run(&["diff", &before, &after, "--format", "json"], None);
    let html = run(&["diff", &before, &after, "--format", "html"], None);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let rendered = run(&["render", "-"], Some(&stdout(&json)));
    assert_eq!(stdout(&html), stdout(&rendered));
    assert!(
        stdout(&html).contains("Layers added (1)"),
        "{}",
        stdout(&html)
    );
}

#[test]
fn every_command_help_has_examples() {
    for command in [
        "validate", "summary", "schema", "diff", "compare", "merge", "render",
    ] {
        let output = run(&[command, "--help"], None);
        assert_eq!(output.status.code(), Some(0));
        let text = stdout(&output);
        let examples = text
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{command} --help has no examples: {text}"));
        assert!(
            examples
                .lines()
                .take_while(|line| !line.is_empty())
                .any(|line| line.contains(&format!("torchscan-report {command}"))),
            "{command}: {examples}"
        );
        assert!(text.contains("Exit codes: 0 "), "{command}");
    }
}

#[test]
fn schema_writes_nothing_on_stderr() {
    let output = run(&["schema"], None);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert!(value.is_object());
}

#[test]
fn every_command_prints_the_same_version_line() {
    let expected = format!("torchscan-report {}\n", env!("CARGO_PKG_VERSION"));
    for command in [
        None,
        Some("validate"),
        Some("summary"),
        Some("schema"),
        Some("diff"),
        Some("compare"),
        Some("merge"),
        Some("render"),
    ] {
        let args: Vec<&str> = command.into_iter().chain(["--version"]).collect();
        let output = run(&args, None);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert_eq!(stdout(&output), expected, "{args:?}");
    }
}

const RANK0: &str = "distributed/rank0.json";
const RANK1: &str = "distributed/rank1.json";
const MERGED: &str = "distributed/merged.json";

/// A fixture report, as JSON to change.
fn fixture_value(relative: &str) -> serde_json::Value {
    serde_json::from_str(&read(&fixture_str(relative))).expect("JSON")
}

/// Writes `value` as `name` in `dir`; its path.
fn written(dir: &Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    fs::write(&path, serde_json::to_string_pretty(value).expect("JSON")).expect("written");
    path.to_string_lossy().into_owned()
}

/// The fixture job with every block (and its start and barrier wait) `factor` times as long,
/// each rank's statistics recomputed: the rank reports, written in `dir`.
fn scaled_ranks(dir: &Path, factor: f64) -> [String; 2] {
    [RANK0, RANK1].map(|relative| {
        let mut report = fixture_value(relative);
        let timing = &mut report["timing"];
        for key in ["block_durations_s", "block_starts_s", "barrier_waits_s"] {
            let scaled: Vec<f64> = timing[key]
                .as_array()
                .expect("numbers")
                .iter()
                .map(|v| v.as_f64().expect("number") * factor)
                .collect();
            timing[key] = serde_json::json!(scaled);
        }
        let blocks: Vec<f64> = timing["block_durations_s"]
            .as_array()
            .expect("blocks")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect();
        let calls = timing["calls_per_block"].as_u64().expect("calls");
        let stats = torchscan_core::stats::block_timing(&blocks, calls).expect("timing");
        let work_units = report["workload"]["work_units"].as_f64().expect("work");
        for (key, value) in [
            ("latency", stats.latency_s),
            ("latency_iqr", stats.latency_iqr_s),
            ("throughput", stats.throughput(work_units)),
        ] {
            report["metrics"][key]["value"] = serde_json::json!(value);
            report["metrics"][key]["known_value"] = serde_json::json!(value);
        }
        let name = Path::new(relative).file_name().expect("name");
        written(dir, &name.to_string_lossy(), &report)
    })
}

#[test]
fn merge_json_is_the_core_merge_byte_for_byte_in_any_order() {
    let (rank0, rank1) = (fixture_str(RANK0), fixture_str(RANK1));
    let expected = read(&fixture_str(MERGED));
    for args in [
        vec!["merge", &rank0, &rank1],
        vec!["merge", &rank1, &rank0],
        vec!["merge", &rank1, &rank0, "--format", "json"],
    ] {
        let output = run(&args, None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output), expected);
        assert_eq!(stderr(&output), "");
    }
    assert_eq!(
        torchscan_core::merge_json::merge_rank_reports_json(&[&read(&rank1), &read(&rank0)]),
        Ok(expected.clone())
    );
    // One input from standard input, the output to a file.
    let dir = scratch("merge-json");
    let out = dir.join("job.json");
    let out_arg = out.to_string_lossy().into_owned();
    let output = run(&["merge", &rank0, "-", "-o", &out_arg], Some(&read(&rank1)));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert_eq!(read(&out_arg), expected);
    let valid = run(&["validate", &out_arg], None);
    assert_eq!(valid.status.code(), Some(0), "{}", stdout(&valid));
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn merge_text_and_html_show_the_merged_report() {
    let (rank0, rank1) = (fixture_str(RANK0), fixture_str(RANK1));
    let report = torchscan_core::read_report(&read(&fixture_str(MERGED))).expect("valid");
    let text = run(&["merge", &rank0, &rank1, "--format", "text"], None);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert_eq!(stdout(&text), torchscan_core::format_summary(&report));
    let html = run(&["merge", &rank0, &rank1, "--format", "html"], None);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    assert_eq!(
        stdout(&html),
        torchscan_core::render_html(&report).expect("a page")
    );
}

#[test]
fn merge_refusals_and_invalid_input_exit_one_and_write_nothing() {
    let dir = scratch("merge-refused");
    let out = dir.join("job.json");
    fs::write(&out, "previous").expect("previous file");
    let out_arg = out.to_string_lossy().into_owned();
    let rank0 = fixture_str(RANK0);
    let rank1 = fixture_str(RANK1);
    let refused = |args: &[&str], expected: String| {
        let mut all = vec!["merge"];
        all.extend(args);
        all.extend(["-o", out_arg.as_str()]);
        let output = run(&all, None);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(stdout(&output), "");
        assert_eq!(stderr(&output), format!("{expected}\n"), "{args:?}");
    };
    let changed = |name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let mut value = fixture_value(RANK1);
        change(&mut value);
        written(&dir, name, &value)
    };
    let cannot = "torchscan-report: cannot merge the rank reports:";

    let single = changed("single.json", &|v| {
        v["context"]
            .as_object_mut()
            .expect("context")
            .remove("distributed");
        let timing = v["timing"].as_object_mut().expect("timing");
        timing.remove("barrier_waits_s");
        timing.remove("collectives_per_call");
        v["metrics"]
            .as_object_mut()
            .expect("metrics")
            .remove("rank_process_rss_peak");
    });
    refused(
        &[&rank0, &single],
        format!(
            "{cannot} {single} was not measured in a distributed job (its context has no \
             `distributed` member): merging needs the `benchmark` report of every rank of one job"
        ),
    );
    let flops = fixture_str("reports/flops_square_matmul.json");
    refused(
        &[&rank0, &flops],
        format!(
            "{cannot} {flops} is a `flops` report: merging needs the `benchmark` report of every \
             rank"
        ),
    );
    refused(
        &[&rank0, &rank1, &rank1],
        format!(
            "{cannot} rank 1 is given twice ({rank1} and {rank1}): merging needs each rank's \
             report once"
        ),
    );
    refused(
        &[&rank0],
        format!(
            "{cannot} rank 1 of a world of 2 is missing: merging needs the report of every rank"
        ),
    );
    let world = changed("world.json", &|v| {
        v["context"]["distributed"]["world_size"] = serde_json::json!(3);
    });
    refused(
        &[&rank0, &world],
        format!(
            "{cannot} rank 0 was measured in a world of 2 ranks and rank 1 in a world of 3: the \
             reports are not of one job"
        ),
    );
    let nccl = changed("nccl.json", &|v| {
        v["context"]["distributed"]["backend"] = serde_json::json!("nccl");
    });
    refused(
        &[&rank0, &nccl],
        format!(
            "{cannot} rank 0 used the `gloo` backend and rank 1 the `nccl` backend: the reports \
             are not of one job"
        ),
    );
    let renamed = changed("renamed.json", &|v| {
        v["workload"]["name"] = serde_json::json!("eval_step");
    });
    refused(
        &[&rank0, &renamed],
        format!(
            "{cannot} rank 0 and rank 1 measured different workloads (name `train_step` vs \
             `eval_step`): every rank measures the same workload"
        ),
    );
    let budget = changed("budget.json", &|v| {
        v["settings"]["max_time_s"] = serde_json::json!(5.0);
    });
    refused(
        &[&rank0, &budget],
        format!(
            "{cannot} rank 0 and rank 1 used different settings (max_time_s 2 vs 5): every rank \
             uses the same timing budget"
        ),
    );
    let untimed = changed("untimed.json", &|v| {
        v["timing"] = serde_json::Value::Null;
        for key in [
            "first_call",
            "latency",
            "latency_iqr",
            "throughput",
            "machine_other_cpu_ratio",
            "cpu_steal_ratio",
            "involuntary_context_switches",
            "cpu_frequency",
        ] {
            let metric = &mut v["metrics"][key];
            metric["status"] = serde_json::json!("unavailable");
            metric["value"] = serde_json::Value::Null;
            metric["known_value"] = serde_json::Value::Null;
            metric["reason"] = serde_json::json!("the timing pass failed");
        }
    });
    refused(
        &[&rank0, &untimed],
        format!(
            "{cannot} rank 1 has no timing evidence: merging needs the latency pass on every rank"
        ),
    );
    let warm = changed("warm.json", &|v| {
        v["timing"]["warmup_calls"] = serde_json::json!(15);
    });
    refused(
        &[&rank0, &warm],
        format!(
            "{cannot} the blocks were not aligned: rank 0 ran 16 warm-up calls and rank 1 15; \
             measure every rank in one distributed run, so that block i covers the same calls on \
             each"
        ),
    );
    // A rank report that is not valid: its problems, located in its file.
    let unaligned = changed("unaligned.json", &|v| {
        v["timing"]
            .as_object_mut()
            .expect("timing")
            .remove("barrier_waits_s");
    });
    refused(
        &[&rank0, &unaligned],
        format!(
            "{unaligned}: $.timing.barrier_waits_s: is required in a distributed job of 2 ranks: \
             every timed block is aligned by a barrier whose wait is recorded"
        ),
    );
    let output = run(&["merge", &rank0, "-", "-o", &out_arg], Some("[]"));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("<stdin>: $: "),
        "{}",
        stderr(&output)
    );
    assert_eq!(fs::read_to_string(&out).expect("kept"), "previous");
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn merge_usage_errors_exit_two() {
    let rank0 = fixture_str(RANK0);
    let rank1 = fixture_str(RANK1);
    let none = run(&["merge"], None);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("<RANK_REPORT>..."),
        "{}",
        stderr(&none)
    );
    let two = run(&["merge", "-", "-"], Some("{}"));
    assert_eq!(two.status.code(), Some(2));
    assert_eq!(
        stderr(&two),
        "torchscan-report: standard input (`-`) can be named only once\n"
    );
    let missing = run(&["merge", &rank0, "/nonexistent/rank1.json"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read /nonexistent/rank1.json"));
    let format = run(&["merge", &rank0, &rank1, "--format", "yaml"], None);
    assert_eq!(format.status.code(), Some(2));
    assert!(stderr(&format).contains("--format"), "{}", stderr(&format));
    let unwritable = run(
        &["merge", &rank0, &rank1, "-o", "/nonexistent/dir/job.json"],
        None,
    );
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(stderr(&unwritable).contains("cannot write /nonexistent/dir/job.json"));
}

#[test]
fn compare_two_merged_jobs_by_step_time() {
    let dir = scratch("compare-merged");
    let [rank0, rank1] = scaled_ranks(&dir, 2.0);
    let slower = dir.join("slower.json");
    let slower_arg = slower.to_string_lossy().into_owned();
    let output = run(&["merge", &rank0, &rank1, "-o", &slower_arg], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let before = fixture_str(MERGED);
    let output = run(&["compare", &before, &slower_arg, "--format", "json"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let options = torchscan_core::benchmark_comparison::CompareOptions::default();
    assert_eq!(
        stdout(&output),
        core_comparison(&read(&before), &read(&slower_arg), None, &options)
    );
    let comparison: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(comparison["deltas"][0]["metric"], "latency");
    assert_eq!(comparison["deltas"][0]["ratio"], 2.0);
    assert_eq!(comparison["deltas"][1]["ratio"], 0.5);
    let notes: Vec<&str> = comparison["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["code"] == "note")
        .map(|d| d["message"].as_str().expect("message"))
        .collect();
    assert!(
        notes.iter().any(|note| note
            .starts_with("both sides are distributed jobs (2 ranks on gloo -> 2 ranks on gloo)")),
        "{notes:?}"
    );
    // A benchmark and a merged job are not compared.
    let single = fixture_str(RANK0);
    let output = run(&["compare", &single, &before], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "torchscan-report: cannot compare {single} and {before}: the baseline is a \
             `benchmark` report and the candidate a `distributed_benchmark` report: a \
             single-process benchmark is compared with another, and a merged distributed job \
             (merge_rank_reports) with another\n"
        )
    );
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn validate_accepts_the_distributed_fixtures_and_names_a_tampered_number() {
    let files = [RANK0, RANK1, MERGED].map(fixture_str);
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let output = run(&args, None);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stderr(&output), "3 checked: 3 valid, 0 invalid\n");
    let mut merged = fixture_value(MERGED);
    merged["blocks"][0]["step_time_s"] = serde_json::json!(0.5);
    let output = run(&["validate", "-"], Some(&merged.to_string()));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "<stdin>: $.blocks[0].step_time_s: 0.5 disagrees with 0.01171875, which merging \
         rank_reports gives\n"
    );
}
