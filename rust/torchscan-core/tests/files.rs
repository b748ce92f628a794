//! The one writer and the bounded reader on every kind of node: regular files (new, 0600, hard
//! linked, read-only, a 255-byte name), symlinks (chains, dangling, loops), magic links of
//! `/proc/self/fd`, FIFOs (with and without a reader), devices, sockets, directories, a missing
//! directory, a full and a read-only file system, and symlinks planted under every temporary name.
//! Devices are `mknod` copies in a scratch directory: no test writes a real device.

use std::collections::BTreeSet;
use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use torchscan_core::files::{
    FileError, FileOperation, read_input, read_stream, write_output, write_output_interruptible,
    write_output_observed, write_output_with_names,
};

/// A fresh directory under the system temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "torchscan-files-{label}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&path).expect("create the scratch directory");
        Scratch(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Entries of `directory` that look like the writer's temporary files.
fn temporaries(directory: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(directory)
        .expect("list the directory")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.') && name.ends_with(".tmp"))
        .collect();
    names.sort();
    names
}

fn mknod(path: &Path, kind: &str, major: u32, minor: u32) -> bool {
    Command::new("mknod")
        .arg(path)
        .arg(kind)
        .arg(major.to_string())
        .arg(minor.to_string())
        .status()
        .map(|status| status.success())
        .unwrap_or(false)
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn assert_names(error: &std::io::Error, path: &Path) {
    let file_error = FileError::of(error).expect("the error carries the path");
    assert_eq!(file_error.path, path);
    assert_eq!(file_error.operation, FileOperation::Write);
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot write {}: ", path.display())),
        "{error}"
    );
}

#[test]
fn a_new_file_is_created_without_execute_bits_and_no_temporary_is_left() {
    let scratch = Scratch::new("new");
    let target = scratch.join("out.html");
    write_output(&target, b"<p>new</p>").expect("write");
    assert_eq!(fs::read(&target).expect("read"), b"<p>new</p>");
    let metadata = fs::symlink_metadata(&target).expect("stat");
    assert!(metadata.file_type().is_file());
    assert_eq!(metadata.mode() & 0o111, 0, "mode {:o}", metadata.mode());
    assert_eq!(metadata.mode() & 0o600, 0o600, "mode {:o}", metadata.mode());
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_0600_file_is_replaced_atomically_and_stays_0600() {
    let scratch = Scratch::new("mode");
    let target = scratch.join("secret.json");
    fs::write(&target, b"old").expect("seed");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).expect("chmod");
    let inode_before = fs::metadata(&target).expect("stat").ino();
    write_output(&target, b"new content").expect("write");
    let metadata = fs::metadata(&target).expect("stat");
    assert_eq!(metadata.mode() & 0o7777, 0o600);
    // Replaced by rename: a new inode, never a partially written old one.
    assert_ne!(metadata.ino(), inode_before);
    assert_eq!(fs::read(&target).expect("read"), b"new content");
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_hard_linked_file_gets_the_new_content_under_every_name() {
    let scratch = Scratch::new("hardlink");
    let first = scratch.join("first.json");
    let second = scratch.join("second.json");
    fs::write(&first, b"old old old").expect("seed");
    fs::hard_link(&first, &second).expect("link");
    let inode = fs::metadata(&first).expect("stat").ino();
    write_output(&first, b"new").expect("write");
    for name in [&first, &second] {
        let metadata = fs::metadata(name).expect("stat");
        assert_eq!(metadata.ino(), inode, "{}", name.display());
        assert_eq!(metadata.nlink(), 2);
        assert_eq!(fs::read(name).expect("read"), b"new");
    }
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_hard_linked_file_grows_and_shrinks_in_place_to_exactly_the_new_content() {
    let scratch = Scratch::new("hardlink-sizes");
    let first = scratch.join("first.json");
    let second = scratch.join("second.json");
    fs::write(&first, b"0123456789").expect("seed");
    fs::hard_link(&first, &second).expect("link");
    let inode = fs::metadata(&first).expect("stat").ino();
    for content in [
        &b"a much longer new content"[..],
        b"tiny",
        b"",
        b"0123456789",
    ] {
        write_output(&second, content).expect("write");
        assert_eq!(fs::read(&first).expect("read"), content);
        assert_eq!(fs::metadata(&first).expect("stat").ino(), inode);
    }
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_read_only_hard_linked_file_is_written_as_opening_it_for_writing_allows() {
    let scratch = Scratch::new("hardlink-readonly");
    let first = scratch.join("first.json");
    let second = scratch.join("second.json");
    fs::write(&first, b"old").expect("seed");
    fs::hard_link(&first, &second).expect("link");
    fs::set_permissions(&first, fs::Permissions::from_mode(0o444)).expect("chmod");
    let may_open = fs::OpenOptions::new().write(true).open(&first).is_ok();
    let outcome = write_output(&first, b"new");
    if may_open {
        // Root (CAP_DAC_OVERRIDE): `>` succeeds, and so does the writer, in place.
        outcome.expect("opening for writing is allowed");
        assert_eq!(fs::read(&second).expect("read"), b"new");
    } else {
        let error = outcome.expect_err("opening for writing is refused");
        assert_names(&error, &first);
        assert_eq!(error.kind(), ErrorKind::PermissionDenied);
        assert_eq!(fs::read(&second).expect("read"), b"old");
    }
    let metadata = fs::metadata(&second).expect("stat");
    assert_eq!(metadata.mode() & 0o7777, 0o444);
    assert_eq!(metadata.nlink(), 2);
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_255_byte_name_is_replaced_atomically() {
    let scratch = Scratch::new("longname");
    for length in [240, 255] {
        let target = scratch.join(&"n".repeat(length));
        write_output(&target, b"first").expect("create");
        let inode = fs::metadata(&target).expect("stat").ino();
        write_output(&target, b"second").expect("replace");
        assert_eq!(fs::read(&target).expect("read"), b"second");
        assert_ne!(fs::metadata(&target).expect("stat").ino(), inode);
    }
    // One byte past NAME_MAX is the OS's error, naming the path.
    let too_long = scratch.join(&"n".repeat(256));
    let error = write_output(&too_long, b"x").expect_err("NAME_MAX");
    assert_names(&error, &too_long);
    let source = &FileError::of(&error).expect("path").source;
    assert_eq!(source.raw_os_error(), Some(36), "ENAMETOOLONG: {error}");
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let scratch = Scratch::new("symlink");
    fs::create_dir(scratch.join("real")).expect("mkdir");
    fs::create_dir(scratch.join("links")).expect("mkdir");
    let target = scratch.join("real/report.html");
    fs::write(&target, b"old").expect("seed");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).expect("chmod");
    // A chain of two links; the relative target resolves against the link's own directory.
    let first = scratch.join("links/first");
    let second = scratch.join("links/second");
    symlink("../real/report.html", &second).expect("symlink");
    symlink("second", &first).expect("symlink");
    write_output(&first, b"new").expect("write");
    assert_eq!(fs::read(&target).expect("read"), b"new");
    assert_eq!(
        fs::read_link(&first).expect("link"),
        PathBuf::from("second")
    );
    assert_eq!(
        fs::read_link(&second).expect("link"),
        PathBuf::from("../real/report.html")
    );
    assert_eq!(fs::metadata(&target).expect("stat").mode() & 0o7777, 0o640);
    assert_eq!(temporaries(&scratch.join("real")), Vec::<String>::new());
    assert_eq!(temporaries(&scratch.join("links")), Vec::<String>::new());
}

#[test]
fn a_dangling_symlink_creates_its_target() {
    let scratch = Scratch::new("dangling");
    let link = scratch.join("link.json");
    symlink("made/by/link.json", &link).expect("symlink");
    fs::create_dir_all(scratch.join("made/by")).expect("mkdir");
    write_output(&link, b"created").expect("write");
    assert!(
        fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read(scratch.join("made/by/link.json")).expect("read"),
        b"created"
    );
}

#[test]
fn a_symlink_loop_is_an_error_naming_the_path() {
    let scratch = Scratch::new("loop");
    let one = scratch.join("one");
    symlink("two", &one).expect("symlink");
    symlink("one", scratch.join("two")).expect("symlink");
    let error = write_output(&one, b"x").expect_err("a loop cannot be written");
    assert_names(&error, &one);
    let source = &FileError::of(&error).expect("path").source;
    assert_eq!(source.raw_os_error(), Some(40), "ELOOP: {error}");
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn forty_links_are_followed_and_forty_one_are_refused() {
    let scratch = Scratch::new("hops");
    fs::write(scratch.join("end"), b"old").expect("seed");
    let mut previous = "end".to_owned();
    for hop in 1..=41 {
        let name = format!("hop{hop}");
        symlink(&previous, scratch.join(&name)).expect("symlink");
        previous = name;
    }
    write_output(&scratch.join("hop40"), b"forty").expect("40 links are followed");
    assert_eq!(fs::read(scratch.join("end")).expect("read"), b"forty");
    let error = write_output(&scratch.join("hop41"), b"x").expect_err("41 links are too many");
    assert_names(&error, &scratch.join("hop41"));
    assert_eq!(fs::read(scratch.join("end")).expect("read"), b"forty");
}

#[test]
fn a_fifo_is_written_directly_and_stays_a_fifo() {
    let scratch = Scratch::new("fifo");
    let fifo = scratch.join("pipe");
    mkfifo(&fifo);
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut received = Vec::new();
        fs::File::open(&reader_path)
            .and_then(|mut file| file.read_to_end(&mut received))
            .map(|_| received)
    });
    write_output(&fifo, b"through the pipe").expect("write");
    let received = reader.join().expect("reader thread").expect("read");
    assert_eq!(received, b"through the pipe");
    assert!(
        fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo()
    );
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_copy_of_dev_null_is_written_and_never_replaced() {
    let scratch = Scratch::new("null");
    let null = scratch.join("null");
    if !mknod(&null, "c", 1, 3) {
        eprintln!("skipped: mknod is not permitted here");
        return;
    }
    write_output(&null, b"discarded").expect("write the copy");
    let metadata = fs::symlink_metadata(&null).expect("lstat");
    assert!(metadata.file_type().is_char_device());
    assert_eq!(metadata.rdev(), 0x103, "still character device 1, 3");
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_copy_of_dev_full_fails_with_storage_full_and_stays_a_device() {
    let scratch = Scratch::new("full");
    let full = scratch.join("full");
    if !mknod(&full, "c", 1, 7) {
        eprintln!("skipped: mknod is not permitted here");
        return;
    }
    let error = write_output(&full, b"nowhere to go").expect_err("a full device");
    assert_names(&error, &full);
    assert_eq!(error.kind(), ErrorKind::StorageFull, "{error}");
    let source = &FileError::of(&error).expect("path").source;
    assert_eq!(source.raw_os_error(), Some(28), "ENOSPC");
    assert!(
        fs::symlink_metadata(&full)
            .expect("lstat")
            .file_type()
            .is_char_device()
    );
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_socket_is_opened_directly_and_never_replaced() {
    let scratch = Scratch::new("socket");
    let socket = scratch.join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    let error = write_output(&socket, b"x").expect_err("open() refuses a socket");
    assert_names(&error, &socket);
    assert!(
        fs::symlink_metadata(&socket)
            .expect("lstat")
            .file_type()
            .is_socket()
    );
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_directory_and_a_missing_directory_are_errors_naming_the_path() {
    let scratch = Scratch::new("dirs");
    let directory = scratch.join("a-directory");
    fs::create_dir(&directory).expect("mkdir");
    fs::write(directory.join("kept"), b"kept").expect("seed");
    let error = write_output(&directory, b"x").expect_err("a directory");
    assert_names(&error, &directory);
    assert_eq!(error.kind(), ErrorKind::IsADirectory);
    assert_eq!(fs::read(directory.join("kept")).expect("read"), b"kept");

    let missing = scratch.join("missing/out.json");
    let error = write_output(&missing, b"x").expect_err("a missing directory");
    assert_names(&error, &missing);
    assert_eq!(error.kind(), ErrorKind::NotFound);
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

/// Plants a symlink to a victim file under every temporary name the writer will be offered.
fn plant(scratch: &Scratch, target_name: &str, parts: &[&str]) -> Vec<PathBuf> {
    parts
        .iter()
        .map(|part| {
            let victim = scratch.join(&format!("victim-{part}"));
            fs::write(&victim, format!("victim {part}")).expect("seed victim");
            let planted = scratch.join(&format!(".{target_name}.{part}.tmp"));
            symlink(&victim, &planted).expect("plant");
            victim
        })
        .collect()
}

fn assert_victims_untouched(victims: &[PathBuf]) {
    for victim in victims {
        let name = victim
            .file_name()
            .and_then(|name| name.to_str())
            .expect("name");
        let part = name.trim_start_matches("victim-");
        assert_eq!(
            fs::read_to_string(victim).expect("read victim"),
            format!("victim {part}")
        );
    }
}

#[test]
fn planted_symlinks_under_every_name_are_never_followed() {
    let scratch = Scratch::new("planted");
    let target = scratch.join("out.json");
    fs::write(&target, b"old").expect("seed");
    let parts = ["aaaa", "bbbb", "cccc"];
    let victims = plant(&scratch, "out.json", &parts);

    // Every name is taken: the write fails cleanly.
    let mut names = parts.iter().map(|part| (*part).to_owned());
    let error =
        write_output_with_names(&target, b"new", &mut names).expect_err("no free temporary name");
    assert_names(&error, &target);
    assert_eq!(error.kind(), ErrorKind::AlreadyExists);
    assert_eq!(fs::read(&target).expect("read"), b"old");
    assert_victims_untouched(&victims);

    // One more name is free: the write succeeds, still without touching a victim.
    let mut names = parts
        .iter()
        .map(|part| (*part).to_owned())
        .chain(["dddd".to_owned()]);
    write_output_with_names(&target, b"new", &mut names).expect("the fourth name is free");
    assert_eq!(fs::read(&target).expect("read"), b"new");
    assert_victims_untouched(&victims);
    for part in parts {
        let planted = scratch.join(&format!(".out.json.{part}.tmp"));
        assert!(
            fs::symlink_metadata(&planted)
                .expect("planted link is still there")
                .file_type()
                .is_symlink()
        );
    }
    assert!(!scratch.join(".out.json.dddd.tmp").exists());
}

#[test]
fn a_hard_linked_file_needs_no_temporary_name_and_follows_no_planted_link() {
    let scratch = Scratch::new("planted-hardlink");
    let target = scratch.join("out.json");
    fs::write(&target, b"old").expect("seed");
    fs::hard_link(&target, scratch.join("other-name")).expect("link");
    let parts = ["aaaa", "bbbb"];
    let victims = plant(&scratch, "out.json", &parts);
    // Even with no name to offer, the in-place write succeeds: it creates no temporary.
    write_output_with_names(&target, b"new", &mut std::iter::empty()).expect("in place");
    assert_eq!(fs::read(scratch.join("other-name")).expect("read"), b"new");
    assert_victims_untouched(&victims);
}

#[test]
fn temporary_names_differ_between_writes() {
    let scratch = Scratch::new("names");
    let target = scratch.join("out.json");
    let mut seen = Vec::new();
    for round in 0..50u32 {
        write_output_observed(&target, round.to_string().as_bytes(), &mut |temporary| {
            seen.push(temporary.to_path_buf());
        })
        .expect("write");
    }
    assert_eq!(fs::read_to_string(&target).expect("read"), "49");
    assert_eq!(seen.len(), 50, "one temporary per write");
    let names: BTreeSet<String> = seen
        .iter()
        .map(|path| {
            assert_eq!(path.parent(), Some(scratch.0.as_path()));
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .expect("name");
            let random_part = name
                .strip_prefix(".out.json.")
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .expect("the .NAME.<random>.tmp form");
            assert_eq!(random_part.len(), 32, "{name}");
            assert!(
                random_part.bytes().all(|byte| byte.is_ascii_hexdigit()),
                "{name}"
            );
            name.to_owned()
        })
        .collect();
    assert_eq!(
        names.len(),
        50,
        "every write picked a name of its own: {names:?}"
    );
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_fifo_without_a_reader_waits_and_asks_whether_to_stop() {
    let scratch = Scratch::new("fifo-waits");
    let fifo = scratch.join("pipe");
    mkfifo(&fifo);
    let mut asked = 0;
    let error = write_output_interruptible(&fifo, b"nobody reads", &mut || {
        asked += 1;
        if asked < 5 {
            Ok(())
        } else {
            Err(std::io::Error::new(
                ErrorKind::Interrupted,
                "stopped by the test",
            ))
        }
    })
    .expect_err("the wait is stopped");
    assert_eq!(asked, 5);
    assert_names(&error, &fifo);
    assert_eq!(error.kind(), ErrorKind::Interrupted);
    assert!(
        fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo()
    );
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_fifo_whose_reader_stops_reading_asks_whether_to_stop() {
    let scratch = Scratch::new("fifo-stalls");
    let fifo = scratch.join("pipe");
    mkfifo(&fifo);
    // A reader that opens the FIFO and never reads: 4 MiB cannot fit in its buffer.
    let reader = fs::OpenOptions::new()
        .read(true)
        .custom_flags(0o4000) // O_NONBLOCK: open without waiting for a writer
        .open(&fifo)
        .expect("open the read end");
    let mut asked = 0;
    let error = write_output_interruptible(&fifo, &vec![b'x'; 4 << 20], &mut || {
        asked += 1;
        if asked < 3 {
            Ok(())
        } else {
            Err(std::io::Error::new(
                ErrorKind::Interrupted,
                "stopped by the test",
            ))
        }
    })
    .expect_err("the stalled write is stopped");
    assert_eq!(asked, 3);
    assert_eq!(error.kind(), ErrorKind::Interrupted);
    drop(reader);
}

/// A file opened for appending, as the shell opens `>> log`, and its `/proc/self/fd` link.
fn opened_for_append(path: &Path) -> (fs::File, PathBuf) {
    let file = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for append");
    let link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    (file, link)
}

#[test]
fn a_proc_fd_link_to_a_pipe_is_written_through() {
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let link = PathBuf::from(format!("/proc/self/fd/{}", writer.as_raw_fd()));
    // Its text is `pipe:[INODE]`, which is no path at all.
    let text = fs::read_link(&link).expect("readlink");
    assert!(text.to_string_lossy().starts_with("pipe:["), "{text:?}");
    write_output(&link, b"through the pipe").expect("write");
    drop(writer);
    let mut received = Vec::new();
    reader.read_to_end(&mut received).expect("read");
    assert_eq!(received, b"through the pipe");
}

#[test]
fn a_proc_fd_link_to_a_file_open_for_append_is_written_in_place_as_shell_redirection() {
    let scratch = Scratch::new("proc-append");
    let log = scratch.join("log.txt");
    fs::write(&log, b"old line\n").expect("seed");
    let inode = fs::metadata(&log).expect("stat").ino();
    let (mut appender, link) = opened_for_append(&log);
    write_output(&link, b"new content\n").expect("write");
    // `> /proc/self/fd/N`: truncated and written from the start, the same inode.
    assert_eq!(fs::read(&log).expect("read"), b"new content\n");
    assert_eq!(fs::metadata(&log).expect("stat").ino(), inode);
    // The appending descriptor still writes to the file everyone sees, after the new content.
    appender.write_all(b"appended\n").expect("append");
    assert_eq!(fs::read(&log).expect("read"), b"new content\nappended\n");
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

#[test]
fn a_proc_fd_link_to_a_deleted_file_writes_that_file_and_creates_nothing() {
    let scratch = Scratch::new("proc-deleted");
    let log = scratch.join("log.txt");
    fs::write(&log, b"old").expect("seed");
    let (appender, link) = opened_for_append(&log);
    fs::remove_file(&log).expect("unlink");
    // The link text is now `.../log.txt (deleted)`. A file planted under that name must not be
    // what gets written: the kernel's file and the text's file differ by inode.
    let planted = scratch.join("log.txt (deleted)");
    assert_eq!(fs::read_link(&link).expect("readlink"), planted);
    fs::write(&planted, b"planted").expect("plant");
    write_output(&link, b"new").expect("write");
    assert_eq!(fs::read(&planted).expect("read"), b"planted");
    let mut through_descriptor = Vec::new();
    fs::File::open(&link)
        .and_then(|mut file| file.read_to_end(&mut through_descriptor))
        .expect("read back through the link");
    assert_eq!(through_descriptor, b"new");
    fs::remove_file(&planted).expect("remove the planted file");
    write_output(&link, b"newer").expect("write again, nothing under the text's name");
    assert!(!planted.exists(), "the link text's name is never created");
    drop(appender);
    assert_eq!(temporaries(&scratch.0), Vec::<String>::new());
}

/// A tmpfs mounted in a scratch directory, unmounted on drop.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(path: &Path, options: &str) -> Option<Mount> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Mount(path.to_path_buf()))
    }

    fn remount(&self, options: &str) -> bool {
        Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .map(|status| status.success())
            .unwrap_or(false)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_file_system_keeps_the_old_content() {
    let scratch = Scratch::new("readonly");
    let mount_point = scratch.join("mnt");
    fs::create_dir(&mount_point).expect("mkdir");
    let Some(mount) = Mount::tmpfs(&mount_point, "size=1m") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    let target = mount_point.join("out.json");
    let linked = mount_point.join("linked.json");
    fs::write(&target, b"old").expect("seed");
    fs::write(&linked, b"old linked").expect("seed");
    fs::hard_link(&linked, mount_point.join("linked-too.json")).expect("link");
    assert!(mount.remount("ro"), "remount read-only");
    for (path, old) in [(&target, &b"old"[..]), (&linked, &b"old linked"[..])] {
        let error = write_output(path, b"new").expect_err("read-only");
        assert_names(&error, path);
        assert_eq!(error.kind(), ErrorKind::ReadOnlyFilesystem, "{error}");
        assert_eq!(fs::read(path).expect("read"), old);
    }
    assert_eq!(temporaries(&mount_point), Vec::<String>::new());
}

#[test]
fn a_full_file_system_keeps_the_old_content_of_plain_and_hard_linked_files() {
    let scratch = Scratch::new("fullfs");
    let mount_point = scratch.join("mnt");
    fs::create_dir(&mount_point).expect("mkdir");
    let Some(_mount) = Mount::tmpfs(&mount_point, "size=256k") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    let target = mount_point.join("out.json");
    let linked = mount_point.join("linked.json");
    fs::write(&target, vec![b'a'; 64 * 1024]).expect("seed");
    fs::write(&linked, vec![b'b'; 64 * 1024]).expect("seed");
    fs::hard_link(&linked, mount_point.join("linked-too.json")).expect("link");
    let too_big = vec![b'n'; 512 * 1024];
    for (path, old) in [(&target, b'a'), (&linked, b'b')] {
        let error = write_output(path, &too_big).expect_err("no space");
        assert_names(&error, path);
        assert_eq!(error.kind(), ErrorKind::StorageFull, "{error}");
        assert_eq!(fs::read(path).expect("read"), vec![old; 64 * 1024]);
    }
    assert_eq!(
        fs::read(mount_point.join("linked-too.json")).expect("read"),
        vec![b'b'; 64 * 1024]
    );
    assert_eq!(temporaries(&mount_point), Vec::<String>::new());
}

#[test]
fn reads_stop_one_byte_past_the_limit() {
    let error = read_input(Path::new("/dev/zero"), 4096).expect_err("/dev/zero never ends");
    assert_eq!(error.kind(), ErrorKind::FileTooLarge);
    assert_eq!(
        error.to_string(),
        "cannot read /dev/zero: larger than the limit of 4096 bytes (4 KiB); raise it with \
         --max-input-bytes or TORCHSCAN_MAX_INPUT_BYTES"
    );
    let scratch = Scratch::new("read");
    let exact = scratch.join("exact.json");
    fs::write(&exact, vec![b'x'; 100]).expect("seed");
    assert_eq!(read_input(&exact, 100).expect("at the limit").len(), 100);
    assert!(read_input(&exact, 99).is_err());

    // A reader that counts what is taken from it: the limit plus one byte, never more.
    struct Counting(u64);
    impl Read for Counting {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            self.0 += buffer.len() as u64;
            buffer.fill(b' ');
            Ok(buffer.len())
        }
    }
    let mut counting = Counting(0);
    let error = read_stream(&mut counting, Path::new("<stdin>"), 10).expect_err("too long");
    assert!(
        error
            .to_string()
            .starts_with("cannot read <stdin>: larger than the limit of 10 bytes")
    );
    assert_eq!(counting.0, 11);
}

#[test]
fn reads_of_missing_files_and_directories_name_the_path() {
    let scratch = Scratch::new("readerrors");
    let missing = scratch.join("missing.json");
    let error = read_input(&missing, 1024).expect_err("missing");
    assert_eq!(error.kind(), ErrorKind::NotFound);
    assert_eq!(
        error.to_string(),
        format!(
            "cannot read {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let error = read_input(&scratch.0, 1024).expect_err("a directory");
    assert_eq!(error.kind(), ErrorKind::IsADirectory);
    assert!(error.to_string().contains(&scratch.0.display().to_string()));
}
