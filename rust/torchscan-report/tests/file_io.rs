//! The binary's file I/O: `-o` on every kind of node, standard output that cannot be written, and
//! inputs that cannot be read, are too large or are not text. Exit codes and the one-line messages.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_torchscan-report");
const TIMEOUT: Duration = Duration::from_secs(120);

fn report() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reports/analysis_partial_operator_flops_tied_weights.json")
        .display()
        .to_string()
}

/// A fresh directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "torchscan-report-io-{label}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&path).expect("scratch directory");
        Scratch(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn temporaries(&self) -> Vec<String> {
        fs::read_dir(&self.0)
            .expect("list")
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.') && name.ends_with(".tmp"))
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary with `stdout`, killing it if it outlives the timeout.
fn run_with(args: &[&str], stdout: Stdio, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the binary starts");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("torchscan-report {args:?} did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(args: &[&str]) -> Output {
    run_with(args, Stdio::piped(), &[])
}

/// The one line of standard error.
fn stderr_line(output: &Output) -> String {
    let text = String::from_utf8(output.stderr.clone()).expect("UTF-8");
    assert!(
        text.ends_with('\n') && text.matches('\n').count() == 1,
        "{text:?}"
    );
    text.trim_end().to_owned()
}

fn mknod(path: &Path, major: u32, minor: u32) -> bool {
    Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .map(|status| status.success())
        .unwrap_or(false)
}

fn rendered() -> Vec<u8> {
    let output = run(&["render", &report()]);
    assert_eq!(output.status.code(), Some(0));
    output.stdout
}

#[test]
fn o_to_a_copy_of_dev_full_exits_2_and_stays_a_device() {
    let scratch = Scratch::new("full");
    let full = scratch.join("full");
    if !mknod(&full, 1, 7) {
        eprintln!("skipped: mknod is not permitted here");
        return;
    }
    let output = run(&["render", &report(), "-o", &full.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot write {}: No space left on device (os error 28)",
            full.display()
        )
    );
    assert!(
        fs::symlink_metadata(&full)
            .expect("lstat")
            .file_type()
            .is_char_device()
    );
    assert_eq!(scratch.temporaries(), Vec::<String>::new());

    // The same failure on standard output gives the same exit code.
    let device = fs::OpenOptions::new()
        .write(true)
        .open(&full)
        .expect("open");
    let output = run_with(&["render", &report()], Stdio::from(device), &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        "torchscan-report: cannot write <stdout>: No space left on device (os error 28)"
    );
}

#[test]
fn a_closed_pipe_on_stdout_exits_2() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    for args in [
        vec!["render".to_owned(), report()],
        vec!["summary".to_owned(), report()],
        vec!["schema".to_owned()],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run_with(&args, Stdio::from(writer.try_clone().expect("clone")), &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(
            stderr_line(&output),
            "torchscan-report: cannot write <stdout>: Broken pipe (os error 32)"
        );
    }
}

#[test]
fn o_to_a_fifo_reaches_the_reader_and_stays_a_fifo() {
    let scratch = Scratch::new("fifo");
    let fifo = scratch.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut received = Vec::new();
        fs::File::open(&reader_path)
            .and_then(|mut file| file.read_to_end(&mut received))
            .map(|_| received)
    });
    let output = run(&["render", &report(), "-o", &fifo.display().to_string()]);
    assert_eq!(output.status.code(), Some(0));
    // Checked before joining: a FIFO replaced by a file would leave the reader blocked forever.
    assert!(
        fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo()
    );
    assert_eq!(reader.join().expect("reader").expect("read"), rendered());
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

#[test]
fn o_keeps_modes_hard_links_and_symlinks() {
    let scratch = Scratch::new("kinds");
    let secret = scratch.join("secret.html");
    fs::write(&secret, "old").expect("seed");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).expect("chmod");
    let (first, second) = (scratch.join("first.html"), scratch.join("second.html"));
    fs::write(&first, "old").expect("seed");
    fs::hard_link(&first, &second).expect("link");
    let (target, link) = (scratch.join("target.html"), scratch.join("link.html"));
    fs::write(&target, "old").expect("seed");
    symlink("target.html", &link).expect("symlink");
    let dangling = scratch.join("dangling.html");
    symlink("created.html", &dangling).expect("symlink");
    for output in [
        &secret,
        &first,
        &link,
        &dangling,
        &PathBuf::from("/dev/null"),
    ] {
        let result = run(&["render", &report(), "-o", &output.display().to_string()]);
        assert_eq!(result.status.code(), Some(0), "{}", output.display());
    }
    let page = rendered();
    assert_eq!(fs::read(&secret).expect("read"), page);
    assert_eq!(fs::metadata(&secret).expect("stat").mode() & 0o7777, 0o600);
    assert_eq!(fs::read(&second).expect("read"), page);
    assert_eq!(
        fs::metadata(&first).expect("stat").ino(),
        fs::metadata(&second).expect("stat").ino()
    );
    assert!(
        fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(&target).expect("read"), page);
    assert_eq!(fs::read(scratch.join("created.html")).expect("read"), page);
    assert!(
        fs::symlink_metadata("/dev/null")
            .expect("lstat")
            .file_type()
            .is_char_device()
    );
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

#[test]
fn o_in_a_missing_directory_or_on_a_directory_exits_2() {
    let scratch = Scratch::new("dirs");
    let missing = scratch.join("missing/out.html");
    let output = run(&[
        "diff",
        &report(),
        &report(),
        "-o",
        &missing.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot write {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let output = run(&["render", &report(), "-o", &scratch.0.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot write {}: Is a directory (os error 21)",
            scratch.0.display()
        )
    );
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

#[test]
fn reading_a_device_that_never_ends_stops_at_the_limit() {
    let output = run(&["validate", "/dev/zero", "--max-input-bytes", "1000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert_eq!(
        stderr.lines().next(),
        Some(
            "torchscan-report: cannot read /dev/zero: larger than the limit of 1000 bytes; raise \
             it with --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES"
        )
    );
    let output = run_with(
        &["summary", "/dev/zero"],
        Stdio::piped(),
        &[("TORCHSCAN_MAX_INPUT_BYTES", "2048")],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        "torchscan-report: cannot read /dev/zero: larger than the limit of 2048 bytes (2 KiB); \
         raise it with --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES"
    );
}

#[test]
fn bad_limits_are_one_line_usage_errors() {
    for value in ["0", "-5", "ten", ""] {
        let output = run(&["validate", &report(), "--max-input-bytes", value]);
        assert_eq!(output.status.code(), Some(2), "{value:?}");
        assert_eq!(
            stderr_line(&output),
            format!(
                "torchscan-report: invalid --max-input-bytes value `{value}`: expected a whole \
                 number of bytes, at least 1"
            )
        );
    }
    let output = run_with(
        &["validate", &report()],
        Stdio::piped(),
        &[("TORCHSCAN_MAX_INPUT_BYTES", "1 GiB")],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        "torchscan-report: invalid TORCHSCAN_MAX_INPUT_BYTES value `1 GiB`: expected a whole \
         number of bytes, at least 1"
    );
}

#[test]
fn unreadable_inputs_exit_2_and_text_that_is_not_utf8_exits_1() {
    let scratch = Scratch::new("inputs");
    let missing = scratch.join("missing.json");
    let output = run(&["summary", &missing.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot read {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let output = run(&["render", &scratch.0.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot read {}: Is a directory (os error 21)",
            scratch.0.display()
        )
    );
    let latin1 = scratch.join("latin1.json");
    fs::write(&latin1, b"{\"kind\": \"caf\xe9\"}").expect("seed");
    let output = run(&["summary", &latin1.display().to_string()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr_line(&output),
        format!(
            "{}: $: not valid UTF-8 (invalid byte at offset 13); a report is JSON text in UTF-8",
            latin1.display()
        )
    );
    let output = run(&["validate", &latin1.display().to_string()]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn stdin_named_twice_is_a_usage_error() {
    let output = run(&["validate", "-", "-"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        "torchscan-report: standard input (`-`) can be named only once"
    );
}
