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

/// The README's lines of a benchmark summary, in their order: each line's start, and whether a
/// report may leave it out (a scope or an allocator peak that was not measured).
const README_LINES: [(&str, bool); 16] = [
    ("Workload on ", false),
    ("  First call: ", false),
    ("  Latency (block median): ", false),
    ("  Latency IQR: ", false),
    ("  Throughput: ", false),
    ("  Operator FLOPs: ", false),
    ("  PyTorch peak memory: ", false),
    ("    Scope: ", true),
    ("  Allocator reserved peak: ", true),
    ("    Scope: ", true),
    ("  Process peak RSS: ", false),
    ("    Scope: ", true),
    ("    Workload peak: ", true),
    ("    Baseline after set-up: ", true),
    ("  Profiler: ", false),
    // The profiler's top operators: `    aten::addmm: 20 calls, 1.2 ms self`.
    ("    ", true),
];

/// How many of `lines` are the README's lines, which must come first, in their order, with
/// nothing between them; `Err` names the first line out of place.
fn readme_lines(lines: &[&str]) -> Result<usize, String> {
    let mut at = 0;
    for (index, (start, optional)) in README_LINES.iter().enumerate() {
        let last = index + 1 == README_LINES.len();
        loop {
            match lines.get(at) {
                Some(line) if line.starts_with(start) => {
                    at += 1;
                    if !last {
                        break;
                    }
                }
                _ if *optional => break,
                found => {
                    return Err(format!(
                        "line {} should start with {start:?}, found {found:?}",
                        at + 1
                    ));
                }
            }
        }
    }
    // Nothing after them repeats one of their labels.
    for line in &lines[at..] {
        if let Some((start, _)) = README_LINES[..15]
            .iter()
            .find(|(start, _)| !start.starts_with("    ") && line.starts_with(start))
        {
            return Err(format!(
                "{line:?} repeats {start:?} after the README's lines"
            ));
        }
    }
    Ok(at)
}

/// Every benchmark report the repository holds, by path.
fn benchmark_fixtures(root: &Path) -> Vec<(String, torchscan_core::Report)> {
    let mut paths = vec![root.join("python/torchscan/data/example_workload.json")];
    for folder in ["tests/fixtures/reports", "tests/fixtures/distributed"] {
        let mut found: Vec<_> = fs::read_dir(root.join(folder))
            .expect("fixture folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        found.sort();
        paths.extend(found);
    }
    paths
        .into_iter()
        .filter_map(|path| {
            let text = fs::read_to_string(&path).expect("fixture");
            match torchscan_core::read_report(&text).expect("valid fixture") {
                report @ torchscan_core::Report::Benchmark(_) => {
                    Some((path.display().to_string(), report))
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn every_benchmark_summary_starts_with_the_readme_lines_in_order_and_together() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fixtures = benchmark_fixtures(&root);
    assert!(fixtures.len() >= 8, "{} benchmark fixtures", fixtures.len());
    let mut later = 0;
    for (path, report) in fixtures {
        let summary = torchscan_core::format_summary(&report);
        let lines: Vec<&str> = summary.lines().collect();
        match readme_lines(&lines) {
            // What came later (noise, the distributed job, rates, diagnostics) follows them.
            Ok(count) => later += usize::from(count < lines.len()),
            Err(why) => panic!("{path}: {why}\n{summary}"),
        }
    }
    assert!(
        later >= 5,
        "only {later} fixtures add lines after the README's"
    );
}

#[test]
fn the_readme_lines_check_finds_a_line_between_them() {
    let lines = [
        "Workload on cpu (1 PyTorch threads)",
        "  First call: 0.174 ms",
        "  Latency (block median): 0.006 ms",
        "  Latency IQR: 0.001 ms",
        "  Throughput: 4,191,866.300 samples/s",
        "  Machine noise during timing:",
        "  Operator FLOPs: 1,048,576.000 FLOPs",
    ];
    assert_eq!(
        readme_lines(&lines),
        Err(
            "line 6 should start with \"  Operator FLOPs: \", found Some(\"  Machine noise \
             during timing:\")"
                .to_owned()
        )
    );
}
