//! Snapshots of what a user of `torchscan-report` sees: exit code, standard output and standard
//! error of every subcommand, in success and in each kind of failure. The commands run in the
//! repository root with relative fixture paths, so the snapshots hold on any checkout.
//!
//! (`schema` prints the checked-in JSON Schema; `cli.rs` checks that output byte for byte.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::assert_cmd_snapshot;

const SMALL_CNN: &str = "tests/fixtures/reports/analysis_small_cnn.json";
const WIDENED_CNN: &str = "tests/fixtures/reports/analysis_small_cnn_widened.json";
const STRUCTURE: &str = "tests/fixtures/reports/analysis_structure_mode.json";
const BASELINE: &str = "tests/fixtures/reports/benchmark_readme_cpu.json";
const CANDIDATE: &str = "tests/fixtures/reports/benchmark_readme_m3_pro.json";
const CUDA: &str = "tests/fixtures/reports/benchmark_cuda_full.json";
const CHECK_PASSED: &str = "tests/fixtures/reports/output_check_passed.json";
const CHECK_FAILED: &str = "tests/fixtures/reports/output_check_failed.json";
const FLOPS: &str = "tests/fixtures/reports/flops_square_matmul.json";
const INVALID: &str = "tests/fixtures/invalid/block_duration_negative.json";
const RANK0: &str = "tests/fixtures/distributed/rank0.json";
const RANK1: &str = "tests/fixtures/distributed/rank1.json";
const MERGED: &str = "tests/fixtures/distributed/merged.json";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The binary, run in `dir` with colours left to clap's detection (never forced).
fn cli_in(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_torchscan-report"));
    command
        .current_dir(dir)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    command
}

fn cli() -> Command {
    cli_in(&repo_root())
}

/// A fresh, empty directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "torchscan-report-snapshots-{}-{name}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn help_of_every_command() {
    assert_cmd_snapshot!("help", cli().arg("--help"));
    for command in [
        "validate", "summary", "schema", "diff", "compare", "merge", "render",
    ] {
        assert_cmd_snapshot!(format!("help_{command}"), cli().args([command, "--help"]));
    }
}

#[test]
fn usage_errors() {
    assert_cmd_snapshot!("usage_no_command", cli());
    assert_cmd_snapshot!("usage_unknown_command", cli().arg("frobnicate"));
    assert_cmd_snapshot!(
        "usage_schema_extra_argument",
        cli().args(["schema", "extra"])
    );
}

#[test]
fn validate() {
    assert_cmd_snapshot!(
        "validate_valid",
        cli().args(["validate", SMALL_CNN, BASELINE, FLOPS])
    );
    assert_cmd_snapshot!(
        "validate_invalid",
        cli().args(["validate", SMALL_CNN, INVALID])
    );
    assert_cmd_snapshot!(
        "validate_stdin_unknown_version",
        cli()
            .args(["validate", "-"])
            .pass_stdin(r#"{"schema_version": 2, "kind": "analysis"}"#)
    );
    assert_cmd_snapshot!(
        "validate_stdin_not_json",
        cli().args(["validate", "-"]).pass_stdin("{not json")
    );
    assert_cmd_snapshot!(
        "validate_missing_file",
        cli().args(["validate", SMALL_CNN, "missing.json"])
    );
    assert_cmd_snapshot!("validate_no_file", cli().arg("validate"));
}

#[test]
fn summary() {
    assert_cmd_snapshot!("summary_benchmark", cli().args(["summary", BASELINE]));
    assert_cmd_snapshot!(
        "summary_stdin_not_a_report",
        cli().args(["summary", "-"]).pass_stdin("[]")
    );
    assert_cmd_snapshot!("summary_invalid", cli().args(["summary", INVALID]));
    assert_cmd_snapshot!(
        "summary_missing_file",
        cli().args(["summary", "missing.json"])
    );
}

#[test]
fn diff() {
    assert_cmd_snapshot!("diff_text", cli().args(["diff", SMALL_CNN, WIDENED_CNN]));
    assert_cmd_snapshot!(
        "diff_json",
        cli().args(["diff", SMALL_CNN, WIDENED_CNN, "--format", "json"])
    );
    assert_cmd_snapshot!(
        "diff_html",
        cli().args(["diff", SMALL_CNN, WIDENED_CNN, "--format", "html"])
    );
    assert_cmd_snapshot!("diff_refused", cli().args(["diff", SMALL_CNN, STRUCTURE]));
    assert_cmd_snapshot!(
        "diff_not_analyses",
        cli().args(["diff", BASELINE, SMALL_CNN])
    );
    assert_cmd_snapshot!(
        "diff_invalid_stdin",
        cli().args(["diff", "-", SMALL_CNN]).pass_stdin("[]")
    );
    assert_cmd_snapshot!(
        "diff_both_stdin",
        cli().args(["diff", "-", "-"]).pass_stdin("{}")
    );
    assert_cmd_snapshot!(
        "diff_unknown_format",
        cli().args(["diff", SMALL_CNN, WIDENED_CNN, "--format", "yaml"])
    );
    assert_cmd_snapshot!(
        "diff_unwritable_output",
        cli().args([
            "diff",
            SMALL_CNN,
            WIDENED_CNN,
            "-o",
            "/nonexistent/dir/diff.txt"
        ])
    );
}

#[test]
fn compare() {
    assert_cmd_snapshot!(
        "compare_text_unchecked",
        cli().args(["compare", BASELINE, CANDIDATE])
    );
    assert_cmd_snapshot!(
        "compare_text_checked",
        cli().args(["compare", BASELINE, CANDIDATE, "--check", CHECK_PASSED])
    );
    assert_cmd_snapshot!(
        "compare_json_failed_check",
        cli().args([
            "compare",
            BASELINE,
            CANDIDATE,
            "--check",
            CHECK_FAILED,
            "--format",
            "json"
        ])
    );
    assert_cmd_snapshot!(
        "compare_html_checked",
        cli().args([
            "compare",
            BASELINE,
            CANDIDATE,
            "--check",
            CHECK_PASSED,
            "--format",
            "html"
        ])
    );
    assert_cmd_snapshot!(
        "compare_json_options",
        cli().args([
            "compare",
            BASELINE,
            CANDIDATE,
            "--format=json",
            "--seed",
            "7",
            "--bootstrap-resamples",
            "500",
            "--confidence-level",
            "0.9",
            "--min-effect",
            "0.05",
        ])
    );
    assert_cmd_snapshot!(
        "compare_gate_failed",
        cli().args([
            "compare",
            BASELINE,
            CANDIDATE,
            "--check",
            CHECK_FAILED,
            "--fail-on",
            "slower,withheld"
        ])
    );
    assert_cmd_snapshot!(
        "compare_gate_passed",
        cli().args(["compare", BASELINE, CANDIDATE, "--fail-on", "slower"])
    );
    assert_cmd_snapshot!(
        "compare_different_work",
        cli().args(["compare", BASELINE, CUDA])
    );
    assert_cmd_snapshot!(
        "compare_wrong_kinds",
        cli().args(["compare", BASELINE, FLOPS, "--check", BASELINE])
    );
    assert_cmd_snapshot!(
        "compare_invalid_stdin",
        cli().args(["compare", BASELINE, "-"]).pass_stdin("[]")
    );
    assert_cmd_snapshot!(
        "compare_invalid_report",
        cli().args(["compare", INVALID, BASELINE])
    );
    assert_cmd_snapshot!(
        "compare_two_stdin",
        cli()
            .args(["compare", BASELINE, "-", "--check", "-"])
            .pass_stdin("{}")
    );
    assert_cmd_snapshot!(
        "compare_confidence_out_of_range",
        cli().args(["compare", BASELINE, CANDIDATE, "--confidence-level", "1.5"])
    );
    assert_cmd_snapshot!(
        "compare_zero_resamples",
        cli().args(["compare", BASELINE, CANDIDATE, "--bootstrap-resamples", "0"])
    );
    assert_cmd_snapshot!(
        "compare_unknown_gate",
        cli().args(["compare", BASELINE, CANDIDATE, "--fail-on", "worse"])
    );
    assert_cmd_snapshot!(
        "compare_missing_file",
        cli().args(["compare", BASELINE, "missing.json"])
    );
    assert_cmd_snapshot!(
        "compare_unwritable_output",
        cli().args([
            "compare",
            BASELINE,
            CANDIDATE,
            "-o",
            "/nonexistent/dir/out.txt"
        ])
    );
}

#[test]
fn merge() {
    assert_cmd_snapshot!(
        "merge_to_file",
        cli().args(["merge", RANK1, RANK0, "-o", "/dev/null"])
    );
    assert_cmd_snapshot!(
        "merge_rank_twice",
        cli().args(["merge", RANK0, RANK1, RANK1])
    );
    assert_cmd_snapshot!("merge_missing_rank", cli().args(["merge", RANK1]));
    assert_cmd_snapshot!("merge_not_a_benchmark", cli().args(["merge", RANK0, FLOPS]));
    assert_cmd_snapshot!(
        "merge_not_distributed",
        cli().args(["merge", RANK0, BASELINE])
    );
    assert_cmd_snapshot!(
        "merge_invalid_report",
        cli().args(["merge", RANK0, INVALID])
    );
    assert_cmd_snapshot!(
        "merge_invalid_stdin",
        cli().args(["merge", RANK0, "-"]).pass_stdin("[]")
    );
    assert_cmd_snapshot!(
        "merge_two_stdin",
        cli().args(["merge", "-", "-"]).pass_stdin("{}")
    );
    assert_cmd_snapshot!("merge_no_report", cli().arg("merge"));
    assert_cmd_snapshot!(
        "merge_unwritable_output",
        cli().args(["merge", RANK0, RANK1, "-o", "/nonexistent/dir/job.json"])
    );
    assert_cmd_snapshot!(
        "compare_merged_jobs",
        cli().args(["compare", MERGED, MERGED])
    );
    assert_cmd_snapshot!(
        "compare_benchmark_with_merged_job",
        cli().args(["compare", BASELINE, MERGED])
    );
}

#[test]
fn render() {
    assert_cmd_snapshot!("render_flops_stdout", cli().args(["render", FLOPS]));
    let dir = scratch("render");
    fs::copy(repo_root().join(FLOPS), dir.join("flops.json")).expect("copy the fixture");
    assert_cmd_snapshot!(
        "render_to_file",
        cli_in(&dir).args(["render", "flops.json", "-o", "page.html"])
    );
    let stdout = cli().args(["render", FLOPS]).output().expect("runs").stdout;
    assert_eq!(fs::read(dir.join("page.html")).expect("the page"), stdout);
    let _ = fs::remove_dir_all(&dir);
    assert_cmd_snapshot!(
        "render_invalid_stdin",
        cli()
            .args(["render", "-"])
            .pass_stdin(r#"{"schema_version": 1}"#)
    );
    assert_cmd_snapshot!(
        "render_missing_file",
        cli().args(["render", "missing.json"])
    );
    assert_cmd_snapshot!(
        "render_unwritable_output",
        cli().args(["render", FLOPS, "-o", "/nonexistent/dir/page.html"])
    );
}
