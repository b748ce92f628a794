//! Replays every input kept in `fuzz/corpus/<target>/` (found by `make fuzz`, minimized with
//! libFuzzer's `-merge=1`) through the same target bodies the fuzz binaries run, so that a plain
//! `cargo test` catches a regression on any of them without building libFuzzer.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use torchscan_core::fuzz_targets::{TARGET_NAMES, run_target};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) => panic!("cannot list {}: {error}", dir.display()),
    };
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .map(|path| match fs::read(&path) {
            Ok(bytes) => (path, bytes),
            Err(error) => panic!("cannot read {}: {error}", path.display()),
        })
        .collect();
    inputs.sort();
    inputs
}

/// Runs one target on every kept input; returns the inputs that panicked, with the message.
fn replay(target: &str) -> (usize, Vec<String>) {
    let inputs = inputs(target);
    let failures = inputs
        .iter()
        .filter_map(|(path, bytes)| {
            let outcome = catch_unwind(AssertUnwindSafe(|| run_target(target, bytes)));
            match outcome {
                Ok(true) => None,
                Ok(false) => Some(format!("no target named {target}")),
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    Some(format!("{}: {message}", path.display()))
                }
            }
        })
        .collect();
    (inputs.len(), failures)
}

fn check(target: &str) {
    let (count, failures) = replay(target);
    assert!(
        count >= 10,
        "fuzz/corpus/{target} holds {count} inputs: the kept corpus is missing"
    );
    assert!(
        failures.is_empty(),
        "{} of {count} kept inputs of `{target}` fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_target_has_a_kept_corpus() {
    for target in TARGET_NAMES {
        assert!(
            corpus_dir(target).is_dir(),
            "fuzz/corpus/{target} is missing"
        );
    }
    assert!(!run_target("no-such-target", b"{}"));
}

#[test]
fn read_replays_its_corpus() {
    check("read");
}

#[test]
fn summary_replays_its_corpus() {
    check("summary");
}

#[test]
fn render_replays_its_corpus() {
    check("render");
}

#[test]
fn diff_replays_its_corpus() {
    check("diff");
}

#[test]
fn bench_replays_its_corpus() {
    check("bench");
}
