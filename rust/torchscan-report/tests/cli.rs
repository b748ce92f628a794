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
            pipe.write_all(text.as_bytes()).expect("write stdin");
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
    assert!(stdout(&help).contains("Exit codes: 0 ok, 1 invalid input, 2 usage."));
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
        "<stdin>: $: a report must be a JSON object\n"
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
            "    0 #0 (Conv2d): output, parameters, trainable_parameters, flops, macs, dmas\n"
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
    assert_eq!(value["layers_added"][0]["path"], "5");
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
    let module_flops = value["totals"]
        .as_array()
        .expect("totals")
        .iter()
        .find(|t| t["metric"] == "module_flops")
        .expect("module_flops")
        .clone();
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
        "<stdin>: $: a report must be a JSON object\n"
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
