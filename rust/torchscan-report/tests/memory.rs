//! Reading a report costs a few times its size, whatever it holds: the binary runs under an
//! address-space limit (`ulimit -v`) of four times the file plus 64 MiB (the binary itself, a
//! debug build included) on generated documents of 8 MiB, each a long array of zeros where no
//! report has one. Before, such documents were read as a tree of values, 16 times their size.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BINARY: &str = env!("CARGO_BIN_EXE_torchscan-report");

/// The size of each generated document.
const DOCUMENT_BYTES: u64 = 8 << 20;

/// A fresh directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!(
            "torchscan-report-memory-{label}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("scratch directory");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Writes `head`, then `0,` repeated until the file is [`DOCUMENT_BYTES`] long less the tail,
/// then `0` and `tail`.
fn write_zeros(path: &Path, head: &str, tail: &str) {
    let mut file = BufWriter::new(File::create(path).expect("create"));
    file.write_all(head.as_bytes()).expect("write");
    let pairs = (DOCUMENT_BYTES - head.len() as u64 - tail.len() as u64 - 1) / 2;
    let chunk = "0,".repeat(1 << 16);
    let mut left = pairs;
    while left > 0 {
        let now = left.min(1 << 16);
        file.write_all(&chunk.as_bytes()[..2 * now as usize])
            .expect("write");
        left -= now;
    }
    file.write_all(b"0").expect("write");
    file.write_all(tail.as_bytes()).expect("write");
    file.flush().expect("flush");
}

/// `torchscan-report ARGS` under an address-space limit of four times the document plus 64 MiB.
fn run_limited(args: &[&Path]) -> Output {
    let limit_kib = (4 * DOCUMENT_BYTES + (64 << 20)) / 1024;
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(BINARY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("sh runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

#[test]
fn a_top_level_array_is_refused_from_its_first_byte_within_a_few_times_its_size() {
    let scratch = Scratch::new("array");
    let path = scratch.0.join("zeros.json");
    write_zeros(&path, "  \n[", "]");
    assert_eq!(fs::metadata(&path).expect("stat").len(), DOCUMENT_BYTES);
    for command in ["validate", "summary", "render"] {
        let output = run_limited(&[Path::new(command), &path]);
        assert_eq!(output.status.code(), Some(1), "{command}: {output:?}");
        let expected = format!(
            "{}: $: a report is a JSON object, got an array\n",
            path.display()
        );
        if command == "validate" {
            assert_eq!(text(&output.stdout), expected);
        } else {
            assert_eq!(text(&output.stderr), expected);
        }
    }
}

#[test]
fn an_object_holding_a_long_array_is_read_within_a_few_times_its_size() {
    let scratch = Scratch::new("object");
    // A field no report has: refused where it starts, by the typed parse.
    let unknown = scratch.0.join("unknown.json");
    write_zeros(
        &unknown,
        r#"{"schema_version": 1, "kind": "benchmark", "x": ["#,
        "]}",
    );
    // A kind no report has, the array first: the careful path reads the whole document, keeping
    // nothing of it.
    let unknown_kind = scratch.0.join("unknown_kind.json");
    write_zeros(
        &unknown_kind,
        r#"{"x": {"y": ["#,
        r#"]}, "schema_version": 1, "kind": "nope"}"#,
    );
    for (path, problem) in [
        (
            &unknown,
            "$.x: unknown field `x`, expected one of `schema_version`, `kind`, `context`, \
             `diagnostics`, `workload`, `settings`, `timing`, `metrics`, `operator_flops`, \
             `profiler`, `hardware_peak`",
        ),
        (
            &unknown_kind,
            "$.kind: unknown report kind `nope`; expected one of `analysis`, `flops`, \
             `benchmark`, `peak_memory`, `output_check`, `benchmark_comparison`, `report_diff`, \
             `distributed_benchmark`",
        ),
    ] {
        let output = run_limited(&[Path::new("validate"), path]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        assert_eq!(
            text(&output.stdout),
            format!("{}: {problem}\n", path.display())
        );
    }
}
