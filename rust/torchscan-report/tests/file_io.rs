//! The binary's file I/O: `-o` on every kind of node (devices are `mknod` copies in a scratch
//! directory, never the real ones), `/dev/stdout`, a FIFO nobody reads and Ctrl-C, standard output
//! that cannot be written, and inputs that cannot be read, are too large or are not text. Exit
//! codes and the one-line messages.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::os::unix::process::ExitStatusExt;
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
    let null = scratch.join("null");
    let mut outputs = vec![&secret, &first, &link, &dangling];
    let null_made = mknod(&null, 1, 3);
    if null_made {
        outputs.push(&null);
    } else {
        eprintln!("skipped the copy of /dev/null: mknod is not permitted here");
    }
    for output in outputs {
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
    if null_made {
        let metadata = fs::symlink_metadata(&null).expect("lstat");
        assert!(metadata.file_type().is_char_device());
        assert_eq!(metadata.rdev(), 0x103, "still character device 1, 3");
    }
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

#[test]
fn o_dev_stdout_reaches_a_pipe_on_stdout() {
    // /dev/stdout -> /proc/self/fd/1 -> `pipe:[INODE]`: a magic link, not a path.
    let output = run(&["render", &report(), "-o", "/dev/stdout"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.stdout, rendered());
    assert!(output.stderr.is_empty());
}

#[test]
fn o_dev_stdout_on_a_file_opened_for_append_rewrites_that_file_as_shell_redirection() {
    let scratch = Scratch::new("stdout-append");
    let log = scratch.join("log.html");
    fs::write(&log, "old line\n").expect("seed");
    let inode = fs::metadata(&log).expect("stat").ino();
    let appender = fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("open for append");
    let output = run_with(
        &["render", &report(), "-o", "/dev/stdout"],
        Stdio::from(appender),
        &[],
    );
    assert_eq!(output.status.code(), Some(0));
    // `> /dev/stdout`: the same file, rewritten from its start.
    assert_eq!(fs::read(&log).expect("read"), rendered());
    assert_eq!(fs::metadata(&log).expect("stat").ino(), inode);
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

#[test]
fn o_with_a_255_byte_name_is_written() {
    let scratch = Scratch::new("long-name");
    let target = scratch.join(&"r".repeat(255));
    for _ in 0..2 {
        let output = run(&["render", &report(), "-o", &target.display().to_string()]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(fs::read(&target).expect("read"), rendered());
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

/// Waits until the process `pid` sleeps in the writer's wait for a FIFO reader (or, blocked in
/// `open`, waits for a partner), as `/proc/PID/wchan` names it.
fn wait_until_waiting_for_a_reader(pid: u32) {
    let started = Instant::now();
    loop {
        let wchan = fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        if ["hrtimer_nanosleep", "do_nanosleep", "wait_for_partner"].contains(&wchan.trim()) {
            return;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "the writer never waited for a reader (wchan {wchan:?})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn o_to_a_fifo_without_a_reader_waits_and_sigint_stops_it() {
    let scratch = Scratch::new("fifo-sigint");
    let fifo = scratch.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    // `env --default-signal=INT`: SIGINT at its default action even when this test runs with
    // SIGINT ignored (a background job), as a terminal's Ctrl-C would find it.
    let mut child = Command::new("env")
        .args(["--default-signal=INT", BINARY, "render", &report(), "-o"])
        .arg(&fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    wait_until_waiting_for_a_reader(child.id());
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("SIGINT did not stop the writer in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.signal(), Some(2), "killed by SIGINT: {status:?}");
    assert!(
        fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo()
    );
    assert_eq!(scratch.temporaries(), Vec::<String>::new());
}

/// Whether every directory above `path` (and `path` itself) lets other users pass (`o+x`), so
/// that a process of another user can reach what lies inside.
fn reachable_by_others(path: &Path) -> bool {
    path.ancestors()
        .all(|directory| fs::metadata(directory).is_ok_and(|metadata| metadata.mode() & 0o001 != 0))
}

#[test]
fn o_to_a_read_only_hard_linked_file_is_permission_denied_for_another_user() {
    let scratch = Scratch::new("readonly-hardlink");
    // Everything user `nobody` needs lies in the scratch directory, open to others: the binary
    // and the report are copies, so the test does not depend on where the checkout lives (a
    // checkout under a 0700 directory, such as `mktemp -d` or `/root`, is closed to `nobody`).
    fs::set_permissions(&scratch.0, fs::Permissions::from_mode(0o755)).expect("chmod");
    if !reachable_by_others(&scratch.0) {
        eprintln!(
            "skipped: {} is inside a directory closed to other users",
            scratch.0.display()
        );
        return;
    }
    let binary = scratch.join("torchscan-report");
    fs::copy(BINARY, &binary).expect("copy the binary");
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).expect("chmod");
    let input = scratch.join("report.json");
    fs::copy(report(), &input).expect("copy the report");
    fs::set_permissions(&input, fs::Permissions::from_mode(0o644)).expect("chmod");
    let (first, second) = (scratch.join("first.html"), scratch.join("second.html"));
    fs::write(&first, "old").expect("seed");
    fs::hard_link(&first, &second).expect("link");
    fs::set_permissions(&first, fs::Permissions::from_mode(0o444)).expect("chmod");
    // As user `nobody` (65534), which may read but not write the file, as `>` finds it.
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&binary)
        .arg("render")
        .arg(&input)
        .arg("-o")
        .arg(&first)
        .current_dir(&scratch.0)
        .stdin(Stdio::null())
        .output();
    let output = match output {
        Ok(output)
            if output.status.code() != Some(127) && !output.stderr.starts_with(b"setpriv") =>
        {
            output
        }
        _ => {
            eprintln!("skipped: setpriv cannot switch to user nobody here");
            return;
        }
    };
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr_line(&output),
        format!(
            "torchscan-report: cannot write {}: Permission denied (os error 13)",
            first.display()
        )
    );
    assert_eq!(fs::read(&second).expect("read"), b"old");
    assert_eq!(fs::metadata(&second).expect("stat").nlink(), 2);
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
