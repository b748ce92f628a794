//! Golden text: the bundled example report prints exactly the README's lines.

use std::fs;
use std::path::Path;

const README_SUMMARY: &str = "\
Workload on cpu (1 PyTorch threads)
  First call: 0.174 ms
  Latency (block median): 0.006 ms
  Latency IQR: 0.001 ms
  Throughput: 4,191,866.300 samples/s
  Operator FLOPs: 1,048,576.000 FLOPs
  PyTorch peak memory: 0.094 MiB
    Scope: PyTorch tracked CPU tensors
  Process peak RSS: unavailable (not requested)
  Profiler: not requested (separate instrumented pass)
";

#[test]
fn example_workload_prints_the_readme_lines() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../python/torchscan/data/example_workload.json");
    let text = fs::read_to_string(path).expect("bundled example report");
    let report = torchscan_core::read_report(&text).expect("valid");
    assert_eq!(torchscan_core::format_summary(&report), README_SUMMARY);
}
