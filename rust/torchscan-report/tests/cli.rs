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
