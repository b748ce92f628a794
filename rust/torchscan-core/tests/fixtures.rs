//! The shared fixtures: every valid report reads, validates and round-trips byte for byte; every
//! invalid one is rejected with its defect's JSON path (`tests/fixtures/invalid_expected.json`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use torchscan_core::{parse_report, read_report, to_json_text};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// Every valid fixture: the reports, the bundled example, and the rank reports of a distributed
/// job with their merge (`tests/fixtures/distributed/`, kept apart because `tests/distributed.rs`
/// generates them).
fn valid_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = json_files(&root.join("tests/fixtures/reports"));
    files.extend(json_files(&root.join("python/torchscan/data")));
    files.extend(json_files(&root.join("tests/fixtures/distributed")));
    files
}

#[test]
fn every_valid_fixture_is_valid() {
    let files = valid_files();
    assert!(files.len() >= 7, "expected a fixture of every kind");
    for path in files {
        let text = fs::read_to_string(&path).expect("readable fixture");
        if let Err(problems) = read_report(&text) {
            panic!("{} is rejected: {problems:#?}", path.display());
        }
    }
}

#[test]
fn there_is_a_valid_fixture_of_every_kind() {
    let mut kinds = std::collections::BTreeSet::new();
    for path in valid_files() {
        let text = fs::read_to_string(&path).expect("readable fixture");
        kinds.insert(read_report(&text).expect("valid").kind());
    }
    assert_eq!(
        kinds.len(),
        torchscan_core::ReportKind::ALL.len(),
        "{kinds:?}"
    );
}

#[test]
fn valid_fixtures_round_trip_deterministically() {
    for path in valid_files() {
        let text = fs::read_to_string(&path).expect("readable fixture");
        let report = read_report(&text).expect("valid");
        let written = to_json_text(&report);
        let reread = read_report(&written).expect("what we write is valid");
        assert_eq!(report, reread, "{} changes on a round trip", path.display());
        assert_eq!(
            written,
            to_json_text(&reread),
            "{} is not byte-stable",
            path.display()
        );
        let original: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let rewritten: serde_json::Value = serde_json::from_str(&written).expect("JSON");
        assert_eq!(
            original,
            rewritten,
            "{} loses or adds fields",
            path.display()
        );
    }
}

fn expected_paths() -> BTreeMap<String, String> {
    let text = fs::read_to_string(repo_root().join("tests/fixtures/invalid_expected.json"))
        .expect("tests/fixtures/invalid_expected.json");
    serde_json::from_str(&text).expect("a JSON object of file name to path")
}

#[test]
fn every_invalid_fixture_is_rejected_at_its_defect() {
    let expected = expected_paths();
    let files = json_files(&repo_root().join("tests/fixtures/invalid"));
    assert!(
        files.len() >= 30,
        "at least 30 invalid fixtures, found {}",
        files.len()
    );
    let names: Vec<String> = files
        .iter()
        .map(|path| {
            path.file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names
            .iter()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        expected.keys().cloned().collect(),
        "invalid_expected.json must name every invalid fixture and nothing else"
    );
    for (path, name) in files.iter().zip(&names) {
        let text = fs::read_to_string(path).expect("readable fixture");
        let problems = match read_report(&text) {
            Ok(_) => panic!("{name} is accepted"),
            Err(problems) => problems,
        };
        let wanted = &expected[name];
        assert!(
            problems.iter().any(|problem| &problem.path == wanted),
            "{name}: no problem at {wanted}; found {problems:#?}"
        );
    }
}

#[test]
fn structural_parse_accepts_what_validation_refines() {
    // Every valid fixture also passes the structural parse alone.
    for path in valid_files() {
        let text = fs::read_to_string(&path).expect("readable fixture");
        assert!(parse_report(&text).is_ok(), "{}", path.display());
    }
}
