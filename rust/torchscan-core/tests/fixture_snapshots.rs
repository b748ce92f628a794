//! Snapshots of the text summary and the HTML page of every fixture report, so that any change of
//! what a reader sees shows up as a reviewed diff under `tests/snapshots/`.
//!
//! `cargo insta review` (or `INSTA_UPDATE=always cargo test`) accepts intended changes; with
//! `CI=true` a missing or different snapshot fails.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use torchscan_core::{format_summary, read_report, render_html};

/// The largest HTML snapshot kept in the repository.
const MAX_SNAPSHOT_BYTES: usize = 200 * 1024;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every valid fixture report: `tests/fixtures/reports/*.json` and the bundled example.
fn fixtures() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["tests/fixtures/reports", "python/torchscan/data"] {
        for entry in fs::read_dir(root.join(dir)).expect("fixture directory") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 15, "fixtures found: {}", files.len());
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

fn snapshot_settings(path: &Path) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_input_file(path);
    settings.set_omit_expression(true);
    settings
}

#[test]
fn text_summary_of_every_fixture() {
    for path in fixtures() {
        let text = fs::read_to_string(&path).expect("fixture");
        let report = read_report(&text).expect("a valid fixture");
        let summary = format_summary(&report);
        assert!(summary.ends_with('\n'), "{}", path.display());
        snapshot_settings(&path).bind(|| {
            insta::assert_snapshot!(format!("summary__{}", stem(&path)), summary);
        });
    }
}

#[test]
fn html_page_of_every_fixture() {
    for path in fixtures() {
        let text = fs::read_to_string(&path).expect("fixture");
        let report = read_report(&text).expect("a valid fixture");
        let html = render_html(&report).expect("a page");
        assert!(
            html.len() < MAX_SNAPSHOT_BYTES,
            "{}: {} bytes",
            path.display(),
            html.len()
        );
        snapshot_settings(&path).bind(|| {
            insta::assert_snapshot!(format!("html__{}", stem(&path)), html);
        });
    }
}

#[test]
fn every_snapshot_belongs_to_a_fixture() {
    let mut expected = BTreeSet::new();
    for path in fixtures() {
        for prefix in ["summary", "html"] {
            expected.insert(format!("fixture_snapshots__{prefix}__{}.snap", stem(&path)));
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let found: BTreeSet<String> = fs::read_dir(&dir)
        .expect("the snapshot directory")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with("fixture_snapshots__") && name.ends_with(".snap"))
        .collect();
    let stale: Vec<_> = found.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&found).collect();
    assert!(stale.is_empty(), "snapshots without a fixture: {stale:?}");
    assert!(
        missing.is_empty(),
        "fixtures without a snapshot: {missing:?}"
    );
}
