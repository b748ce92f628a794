//! Golden text: the bundled example report prints exactly the README's lines
//! (`tests/fixtures/example_workload.summary.txt`, which the README quotes).

use std::fs;
use std::path::Path;

#[test]
fn example_workload_prints_the_readme_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = fs::read_to_string(root.join("python/torchscan/data/example_workload.json"))
        .expect("bundled example report");
    let expected = fs::read_to_string(root.join("tests/fixtures/example_workload.summary.txt"))
        .expect("golden summary");
    let report = torchscan_core::read_report(&text).expect("valid");
    assert_eq!(torchscan_core::format_summary(&report), expected);
}
