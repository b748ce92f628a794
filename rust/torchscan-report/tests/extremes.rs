//! Valid reports whose numbers sit at the ends of the float range: `compare` gives a valid
//! comparison (never "a bug of torchscan"), and `merge` refuses, by name, a job whose sums are
//! past the range (never an invalid report with exit code 0).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

#[path = "../../torchscan-core/tests/support/blocks.rs"]
mod support;

const BINARY: &str = env!("CARGO_BIN_EXE_torchscan-report");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!(
            "torchscan-report-extremes-{label}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("scratch directory");
        Scratch(path)
    }

    fn write(&self, name: &str, value: &Value) -> String {
        let path = self.0.join(name);
        fs::write(&path, serde_json::to_string_pretty(value).expect("JSON")).expect("write");
        path.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BINARY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// The example workload with thirty blocks of `scale` seconds (one call each) and `work_units`
/// per call, its statistics recomputed.
fn benchmark(scale: f64, work_units: f64) -> Value {
    let text = fs::read_to_string(repo_root().join("python/torchscan/data/example_workload.json"))
        .expect("example");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    let blocks: Vec<f64> = (0..30)
        .map(|index| scale * (1.0 + f64::from(index % 7) * 0.01))
        .collect();
    support::with_blocks(report, &blocks, 1, work_units).expect("statistics in the float range")
}

#[test]
fn compare_with_a_subnormal_baseline_latency_writes_a_valid_comparison() {
    let scratch = Scratch::new("compare");
    let baseline = scratch.write("baseline.json", &benchmark(5e-324, 5e-324));
    let candidate = scratch.write("candidate.json", &benchmark(1e-3, 5e-324));
    for input in [&baseline, &candidate] {
        let output = run(&["validate", input]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    }
    let out = scratch.0.join("comparison.json");
    let output = run(&[
        "compare",
        &baseline,
        &candidate,
        "--format",
        "json",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(output.stderr.is_empty());
    let validated = run(&["validate", &out.to_string_lossy()]);
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}",
        text(&validated.stdout)
    );
    let comparison: Value =
        serde_json::from_str(&fs::read_to_string(&out).expect("written")).expect("JSON");
    let latency = &comparison["deltas"][0];
    assert_eq!(latency["metric"], "latency");
    assert_eq!(latency["baseline"], 5e-324);
    assert_eq!(latency["ratio"], Value::Null);
    assert_eq!(latency["verdict"], "inconclusive");
    // The text summary says why there is no ratio.
    let output = run(&["compare", &baseline, &candidate]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains(
            "why: the ratio candidate / baseline (1.03e-3 / 5e-324) is past the range of a \
             float, so it is not stated"
        ),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn merge_of_barrier_waits_summing_past_the_range_is_refused_by_name() {
    let scratch = Scratch::new("merge");
    let fixture = |name: &str| -> Value {
        let text = fs::read_to_string(repo_root().join("tests/fixtures/distributed").join(name))
            .expect("fixture");
        serde_json::from_str(&text).expect("JSON")
    };
    let rank0 = scratch.write("rank0.json", &fixture("rank0.json"));
    let mut heavy = fixture("rank1.json");
    let waits = heavy["timing"]["barrier_waits_s"]
        .as_array()
        .expect("waits")
        .len();
    heavy["timing"]["barrier_waits_s"] = serde_json::json!(vec![1e308; waits]);
    let rank1 = scratch.write("rank1.json", &heavy);
    let output = run(&["validate", &rank0, &rank1]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let out = scratch.0.join("job.json");
    let output = run(&["merge", &rank0, &rank1, "-o", &out.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "torchscan-report: cannot merge the rank reports: the sum of rank 1's barrier waits \
             is past the largest float (1.7976931348623157e308), so the merged report cannot \
             state it ({waits} waits, the largest 1e308 s); the rank reports hold numbers too \
             large to merge\n"
        )
    );
    assert!(!out.exists());
}
