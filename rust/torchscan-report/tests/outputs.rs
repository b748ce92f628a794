//! An output never replaces an input: every command refuses, before it reads anything, an output
//! that is the same file as one of its inputs, whatever name it has there (the same path, another
//! path, a hard link, a symlink, `/dev/stdout`, standard input or output redirected to it).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BINARY: &str = env!("CARGO_BIN_EXE_torchscan-report");

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// A fresh directory holding a copy of every input, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!(
            "torchscan-report-outputs-{label}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("scratch directory");
        for (name, relative) in [
            (
                "analysis.json",
                "tests/fixtures/reports/analysis_small_cnn.json",
            ),
            (
                "widened.json",
                "tests/fixtures/reports/analysis_small_cnn_widened.json",
            ),
            (
                "baseline.json",
                "tests/fixtures/reports/benchmark_readme_cpu.json",
            ),
            (
                "candidate.json",
                "python/torchscan/data/example_workload.json",
            ),
            (
                "check.json",
                "tests/fixtures/reports/output_check_passed.json",
            ),
            ("rank0.json", "tests/fixtures/distributed/rank0.json"),
            ("rank1.json", "tests/fixtures/distributed/rank1.json"),
        ] {
            fs::copy(fixture(relative), path.join(name)).expect("copy a fixture");
        }
        Scratch(path)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// Every name in the directory, sorted: no temporary file and no output was left.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Every command with `-o` and its inputs, by file name in the scratch directory.
const COMMANDS: [&[&str]; 5] = [
    &["render", "analysis.json"],
    &["diff", "analysis.json", "widened.json"],
    &["compare", "baseline.json", "candidate.json"],
    &[
        "compare",
        "baseline.json",
        "candidate.json",
        "--check",
        "check.json",
    ],
    &["merge", "rank0.json", "rank1.json"],
];

fn command(scratch: &Scratch, args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    command.current_dir(&scratch.0);
    for arg in args {
        // Inputs are named by their full paths; options and `-` as they are.
        if arg.ends_with(".json") {
            command.arg(scratch.path(arg));
        } else {
            command.arg(arg);
        }
    }
    command
}

fn finish(mut command: Command, stdin: Stdio, stdout: Stdio) -> Output {
    command
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs")
}

fn stderr_text(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8")
}

/// What a refusal leaves: exit 2, one line naming both files, nothing on standard output, and
/// every input as it was, under the same inode.
fn assert_refused(output: &Output, expected_line: &str, before: &[(String, Vec<u8>, u64)]) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr_text(output));
    assert_eq!(stderr_text(output), format!("{expected_line}\n"));
    assert!(output.stdout.is_empty());
    for (path, bytes, inode) in before {
        assert_eq!(
            &fs::read(path).expect("the input is still there"),
            bytes,
            "{path}"
        );
        assert_eq!(fs::metadata(path).expect("stat").ino(), *inode, "{path}");
    }
}

fn snapshot(scratch: &Scratch) -> Vec<(String, Vec<u8>, u64)> {
    scratch
        .names()
        .into_iter()
        .map(|name| {
            let path = scratch.path(&name);
            let bytes = fs::read(&path).expect("read");
            let inode = fs::metadata(&path).expect("stat").ino();
            (path, bytes, inode)
        })
        .collect()
}

#[test]
fn o_naming_an_input_by_any_name_is_refused_before_anything_is_read() {
    for args in COMMANDS {
        let inputs: Vec<&str> = args
            .iter()
            .copied()
            .filter(|arg| arg.ends_with(".json"))
            .collect();
        for input in &inputs {
            let scratch = Scratch::new("by-name");
            fs::hard_link(scratch.path(input), scratch.path("hard-link.json")).expect("link");
            symlink(scratch.path(input), scratch.path("symlink.json")).expect("symlink");
            let before = snapshot(&scratch);
            let names_before = scratch.names();
            let dotted = scratch
                .0
                .join(".")
                .join(input)
                .to_string_lossy()
                .into_owned();
            for output_name in [
                scratch.path(input),
                dotted,
                (*input).to_owned(), // relative to the working directory
                scratch.path("hard-link.json"),
                scratch.path("symlink.json"),
                "symlink.json".to_owned(),
            ] {
                let mut run = command(&scratch, args);
                run.args(["-o", &output_name]);
                let output = finish(run, Stdio::null(), Stdio::piped());
                let expected = format!(
                    "torchscan-report: the output {output_name} is the same file as the input \
                     {}: nothing was read or written; choose another output file",
                    scratch.path(input)
                );
                assert_refused(&output, &expected, &before);
                assert_eq!(scratch.names(), names_before, "{args:?} -o {output_name}");
            }
        }
    }
}

#[test]
fn o_naming_the_file_standard_input_reads_is_refused() {
    for args in COMMANDS {
        let scratch = Scratch::new("stdin");
        let before = snapshot(&scratch);
        // The first input is read from standard input, redirected from the same file.
        let first = args
            .iter()
            .position(|arg| arg.ends_with(".json"))
            .expect("an input");
        let mut replaced: Vec<&str> = args.to_vec();
        replaced[first] = "-";
        let mut run = command(&scratch, &replaced);
        run.args(["-o", &scratch.path(args[first])]);
        let stdin = File::open(scratch.path(args[first])).expect("open");
        let output = finish(run, Stdio::from(stdin), Stdio::piped());
        let expected = format!(
            "torchscan-report: the output {} is the same file as the input <stdin>: nothing was \
             read or written; choose another output file",
            scratch.path(args[first])
        );
        assert_refused(&output, &expected, &before);
    }
}

#[test]
fn standard_output_appending_to_an_input_is_refused() {
    let mut every: Vec<Vec<&str>> = vec![
        vec!["validate", "analysis.json", "widened.json"],
        vec!["summary", "analysis.json"],
    ];
    for args in COMMANDS {
        every.push(args.to_vec());
        let mut dash = args.to_vec();
        dash.extend(["-o", "-"]);
        every.push(dash);
        let mut through = args.to_vec();
        through.extend(["-o", "/dev/stdout"]);
        every.push(through);
    }
    for args in every {
        let inputs: Vec<&str> = args
            .iter()
            .copied()
            .filter(|arg| arg.ends_with(".json"))
            .collect();
        let input = inputs[inputs.len() - 1];
        let scratch = Scratch::new("stdout");
        let before = snapshot(&scratch);
        // `>> input.json`: reading first and appending after would leave a report followed by
        // the output.
        let appended = OpenOptions::new()
            .append(true)
            .open(scratch.path(input))
            .expect("open");
        let output = finish(
            command(&scratch, &args),
            Stdio::null(),
            Stdio::from(appended),
        );
        let expected = if args.contains(&"/dev/stdout") {
            format!(
                "torchscan-report: the output /dev/stdout is the same file as the input {}: \
                 nothing was read or written; choose another output file",
                scratch.path(input)
            )
        } else {
            format!(
                "torchscan-report: standard output is the same file as the input {}: nothing \
                 was read or written; redirect standard output to another file",
                scratch.path(input)
            )
        };
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr_text(&output)
        );
        assert_eq!(stderr_text(&output), format!("{expected}\n"), "{args:?}");
        for (path, bytes, inode) in &before {
            assert_eq!(&fs::read(path).expect("read"), bytes, "{args:?} {path}");
            assert_eq!(fs::metadata(path).expect("stat").ino(), *inode);
        }
    }
}

#[test]
fn other_files_are_written_even_when_they_hold_the_same_bytes() {
    for args in COMMANDS {
        let scratch = Scratch::new("others");
        // A copy of an input is another file: it is replaced as any output is.
        let copy = scratch.path("copy.json");
        fs::copy(scratch.path(args[1]), &copy).expect("copy");
        for output_name in [copy.as_str(), "new.out"] {
            let mut run = command(&scratch, args);
            run.args(["-o", output_name]);
            let output = finish(run, Stdio::null(), Stdio::piped());
            assert_eq!(
                output.status.code(),
                Some(0),
                "{args:?}: {}",
                stderr_text(&output)
            );
            assert!(output.stderr.is_empty(), "{}", stderr_text(&output));
            let written = fs::read(scratch.0.join(output_name)).expect("written");
            assert_ne!(written, fs::read(scratch.path(args[1])).expect("the input"));
        }
        // Standard output to a pipe, or to a file that is no input, is written as always.
        let output = finish(command(&scratch, args), Stdio::null(), Stdio::piped());
        assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
        assert!(!output.stdout.is_empty());
        let elsewhere = File::create(scratch.0.join("stdout.txt")).expect("create");
        let output = finish(
            command(&scratch, args),
            Stdio::null(),
            Stdio::from(elsewhere),
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
        assert!(
            fs::metadata(scratch.0.join("stdout.txt"))
                .expect("stat")
                .len()
                > 0
        );
    }
}
