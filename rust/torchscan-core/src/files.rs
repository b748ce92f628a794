//! The one file writer and the one bounded file reader of torchscan.
//!
//! [`write_output`] follows what rustup and cargo do for the files they write: a regular file (or
//! a new path) is replaced atomically through a temporary file in the same directory, created with
//! `O_CREAT | O_EXCL` under an unpredictable name and with the final mode from the start; a symlink
//! is written through to its final target (the link stays a link). What cannot be replaced without
//! losing something is written in place, as shell redirection (`>`) would: a hard-linked file (so
//! that every name sees the new content), a device, FIFO or socket, and anything reached through a
//! magic link of `/proc` (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`). On a failure of an atomic
//! replacement the old content is intact and no temporary file remains.
//!
//! [`read_input`] reads a file but never more than its limit plus one byte, so that `/dev/zero`
//! or a huge file stops with an error naming the limit instead of exhausting memory.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::format::human_bytes;

/// The default input limit: 1 GiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// How many symlinks a path may pass through before the writer gives up, as Linux's `ELOOP`.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// How many temporary names the writer tries before it gives up.
const TEMPORARY_NAME_ATTEMPTS: usize = 64;

/// How many bytes of the target's name the temporary name keeps, so that a leftover temporary
/// (after a kill) says what it was for while the name stays far below `NAME_MAX` (255 bytes):
/// `.` + at most 32 bytes + `.` + 32 hex digits + `.tmp` is at most 70 bytes.
const TEMPORARY_NAME_PREFIX_BYTES: usize = 32;

/// The longest wait between two tries to open a FIFO that has no reader yet, or to write to one
/// whose buffer is full.
const LONGEST_FIFO_WAIT: Duration = Duration::from_millis(25);

/// `O_NONBLOCK` of the platform (std has no constant for it and this crate has no `libc`).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(any(
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc",
        target_arch = "sparc64"
    ))
))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    any(target_arch = "mips", target_arch = "mips64")
))]
const O_NONBLOCK: i32 = 0o200;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    any(target_arch = "sparc", target_arch = "sparc64")
))]
const O_NONBLOCK: i32 = 0x4000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NONBLOCK: i32 = 0x0004;

/// `ENXIO`: a non-blocking open of a FIFO for writing found no reader.
const ENXIO: i32 = 6;

/// What a [`FileError`] was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOperation {
    /// Reading an input.
    Read,
    /// Writing an output.
    Write,
}

/// An I/O error together with the path it concerns. It travels inside an [`io::Error`] of the
/// same kind (see [`FileError::of`]), so that callers that only know `io::Error` print a message
/// naming the file, and callers that map errors (the Python binding) find the path and errno.
#[derive(Debug)]
pub struct FileError {
    /// Reading or writing.
    pub operation: FileOperation,
    /// The path as the caller gave it.
    pub path: PathBuf,
    /// The underlying error; its `raw_os_error` is the errno where the OS gave one.
    pub source: io::Error,
}

impl FileError {
    /// Wraps `source` into an `io::Error` of the same kind that names `path`.
    pub fn wrap(operation: FileOperation, path: &Path, source: io::Error) -> io::Error {
        io::Error::new(
            source.kind(),
            FileError {
                operation,
                path: path.to_path_buf(),
                source,
            },
        )
    }

    /// The `FileError` inside an `io::Error` made by [`FileError::wrap`], if it is one.
    pub fn of(error: &io::Error) -> Option<&FileError> {
        error.get_ref().and_then(|inner| inner.downcast_ref())
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.operation {
            FileOperation::Read => "read",
            FileOperation::Write => "write",
        };
        write!(
            formatter,
            "cannot {verb} {}: {}",
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Writes `bytes` to `path` without losing anything that a rename can keep.
///
/// - A symlink chain is followed by hand (at most [`MAX_SYMLINK_HOPS`] links; a relative target is
///   resolved against the link's directory; a dangling link creates its target). The final target
///   is written as below, so the link itself stays a link.
/// - A link of the `/proc` file system (`/proc/self/fd/N`, reached from `/dev/stdout` or
///   `/dev/fd/N`) is a magic link: its text (`pipe:[1234]`, or the old name of a renamed file)
///   is not where the kernel goes. Such a path, and any path whose target by text is not the file
///   the kernel opens (compared by device and inode), is written through the path itself, in place,
///   as shell redirection (`>`) would.
/// - A missing final target, or a regular file with one link, is replaced atomically: a temporary
///   file `.NAME.<32 random hex digits>.tmp` (NAME cut to its first 32 bytes, so that names up to
///   `NAME_MAX` work) is created in the target's directory with `O_CREAT | O_EXCL` (which never
///   follows a symlink; another name is tried when one exists) and with the existing file's
///   permission bits from the start (a new file gets `0o666` less the umask), written, given the
///   existing file's owner (best effort) and exact mode (set-id bits included, whatever the umask),
///   synced, renamed over the target, and the directory is synced (best effort).
/// - A regular file with several hard links is written in place so that every name sees the new
///   content (what `>` does; cargo and rustup never keep hard links, they rename): it is opened for
///   writing without `O_TRUNC` (so a read-only file fails as `open` fails for this user), the part
///   of the new content past the old end is written first (a full disk shows here and the file is
///   cut back to its old length, old content intact), then the rest is written over the old bytes
///   and the file is cut to the new length. This is not atomic: a reader may see a mix, and an
///   error while the old bytes are overwritten (rare: no new blocks are needed) leaves a mix.
/// - A FIFO is opened for writing without blocking; while it has no reader the writer waits and
///   tries again (as `>` waits), and writes as fast as the reader reads. A character or block
///   device or socket is opened for writing without `O_CREAT` and written directly. None of these
///   is ever replaced.
/// - A directory, or a missing parent directory, is an error.
///
/// Every error is an [`io::Error`] that carries a [`FileError`] naming `path`.
pub fn write_output(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_output_interruptible(path, bytes, &mut || Ok(()))
}

/// [`write_output`] that calls `interrupted` while it waits for a FIFO's reader (or for a full
/// FIFO to drain), about every 25 ms: an error it returns stops the wait and is returned (wrapped
/// in a [`FileError`]). The Python binding checks for signals there, so that Ctrl-C works.
pub fn write_output_interruptible(
    path: &Path,
    bytes: &[u8],
    interrupted: &mut dyn FnMut() -> io::Result<()>,
) -> io::Result<()> {
    let mut names = random_names();
    let mut writer = Writer {
        names: &mut names,
        interrupted,
        on_temporary: &mut |_| {},
    };
    writer.write(path, bytes)
}

/// [`write_output`] with the random part of the temporary names taken from `names` (each one
/// gives `.NAME.<part>.tmp`); when `names` ends before a free name is found, the write fails with
/// `AlreadyExists`. For tests that plant files under every name the writer will try.
#[doc(hidden)]
pub fn write_output_with_names(
    path: &Path,
    bytes: &[u8],
    names: &mut dyn Iterator<Item = String>,
) -> io::Result<()> {
    let mut writer = Writer {
        names,
        interrupted: &mut || Ok(()),
        on_temporary: &mut |_| {},
    };
    writer.write(path, bytes)
}

/// [`write_output`] that tells `on_temporary` the path of every temporary file it creates, just
/// after creating it. For tests of the names the writer picks.
#[doc(hidden)]
pub fn write_output_observed(
    path: &Path,
    bytes: &[u8],
    on_temporary: &mut dyn FnMut(&Path),
) -> io::Result<()> {
    let mut names = random_names();
    let mut writer = Writer {
        names: &mut names,
        interrupted: &mut || Ok(()),
        on_temporary,
    };
    writer.write(path, bytes)
}

fn random_names() -> impl Iterator<Item = String> {
    let random = RandomState::new();
    let mut counter = 0u64;
    std::iter::from_fn(move || {
        counter += 1;
        Some(random_hex(&random, counter))
    })
}

fn random_hex(random: &RandomState, counter: u64) -> String {
    // `RandomState` keys come from the OS's random source; hashing a counter and the process id
    // under two fresh states gives 128 bits nobody outside this process can predict.
    let high = random.hash_one((counter, std::process::id(), 0u8));
    let low = RandomState::new().hash_one((counter, std::process::id(), 1u8));
    format!("{high:016x}{low:016x}")
}

/// Where a path leads.
enum Resolved {
    /// The final target by the link texts, which is the file the kernel opens, with its metadata
    /// (`None` when it does not exist).
    Target(PathBuf, Option<Metadata>),
    /// A magic link, or link texts that lead elsewhere than the kernel goes: the path is written
    /// through as given. The metadata is that of the file the kernel opens.
    Through(Metadata),
}

/// The device number of the `/proc` file system, where every link is a magic link.
fn proc_device() -> Option<u64> {
    fs::symlink_metadata("/proc/self")
        .ok()
        .map(|metadata| metadata.dev())
}

fn same_node(first: &Metadata, second: &Metadata) -> bool {
    first.dev() == second.dev() && first.ino() == second.ino()
}

/// Follows the symlinks of `path` by hand, and checks the result against the kernel's.
fn resolve(path: &Path) -> io::Result<Resolved> {
    let proc = proc_device();
    let mut current = path.to_path_buf();
    for _ in 0..=MAX_SYMLINK_HOPS {
        let metadata = match fs::symlink_metadata(&current) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return check_against_kernel(path, current, None);
            }
            Err(error) => return Err(error),
        };
        if !metadata.file_type().is_symlink() {
            return check_against_kernel(path, current, Some(metadata));
        }
        if proc == Some(metadata.dev()) {
            // The text of a magic link (`pipe:[1234]`, a name the file no longer has) is not
            // where the kernel goes: only the kernel can follow it.
            return fs::metadata(path).map(Resolved::Through);
        }
        let target = fs::read_link(&current)?;
        current = if target.is_absolute() {
            target
        } else {
            directory_of(&current).join(target)
        };
    }
    // Let the kernel name the loop (ELOOP) when it sees one too; otherwise say it ourselves.
    match fs::metadata(path) {
        Err(error) => Err(error),
        Ok(_) => Err(io::Error::other(format!(
            "more than {MAX_SYMLINK_HOPS} symbolic links"
        ))),
    }
}

/// `Target` when the kernel opens what the link texts lead to (or both find nothing), else
/// `Through` the kernel's file.
fn check_against_kernel(
    path: &Path,
    target: PathBuf,
    by_text: Option<Metadata>,
) -> io::Result<Resolved> {
    match (fs::metadata(path), by_text) {
        (Ok(kernel), Some(by_text)) if same_node(&kernel, &by_text) => {
            Ok(Resolved::Target(target, Some(by_text)))
        }
        (Ok(kernel), _) => Ok(Resolved::Through(kernel)),
        (Err(error), None) if error.kind() == io::ErrorKind::NotFound => {
            Ok(Resolved::Target(target, None))
        }
        (Err(error), _) => Err(error),
    }
}

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn is_a_directory() -> io::Error {
    io::Error::new(io::ErrorKind::IsADirectory, "is a directory")
}

/// One write: where temporary names come from, what to call while waiting, and who hears of
/// each temporary file.
struct Writer<'a> {
    names: &'a mut dyn Iterator<Item = String>,
    interrupted: &'a mut dyn FnMut() -> io::Result<()>,
    on_temporary: &'a mut dyn FnMut(&Path),
}

impl Writer<'_> {
    fn write(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write_resolved(path, bytes)
            .map_err(|error| FileError::wrap(FileOperation::Write, path, error))
    }

    fn write_resolved(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let (target, metadata, through) = match resolve(path)? {
            Resolved::Target(target, None) => return self.replace_atomically(&target, bytes, None),
            Resolved::Target(target, Some(metadata)) => (target, metadata, false),
            Resolved::Through(metadata) => (path.to_path_buf(), metadata, true),
        };
        let file_type = metadata.file_type();
        if file_type.is_dir() {
            // Opening a directory for writing fails with the OS's own EISDIR.
            OpenOptions::new().write(true).open(&target)?;
            return Err(is_a_directory());
        }
        if file_type.is_file() {
            // Behind a magic link, replacing the file would leave its open descriptors (the
            // shell's `>> log` behind `/dev/stdout`) on a file nobody sees: write it in place.
            if metadata.nlink() > 1 || through {
                return write_in_place(&target, bytes, &metadata);
            }
            return self.replace_atomically(&target, bytes, Some(&metadata));
        }
        if file_type.is_fifo() {
            return self.write_fifo(&target, bytes, &metadata);
        }
        if file_type.is_char_device() || file_type.is_block_device() || file_type.is_socket() {
            return write_directly(&target, bytes, &metadata);
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file, directory, device, FIFO or socket",
        ))
    }

    fn replace_atomically(
        &mut self,
        target: &Path,
        bytes: &[u8],
        existing: Option<&Metadata>,
    ) -> io::Result<()> {
        let (directory, file_name) = split_target(target)?;
        let permissions = existing.map_or(0o666, |existing| existing.mode() & 0o777);
        let mut temporary = Temporary::create(directory, file_name, permissions, self.names)?;
        (self.on_temporary)(&temporary.path);
        let file = temporary.file()?;
        file.write_all(bytes)?;
        if let Some(existing) = existing {
            // Owner first: changing the owner may clear set-id bits that the mode then restores.
            // The mode is set again because the umask may have taken bits away at creation.
            let _ = std::os::unix::fs::fchown(&*file, Some(existing.uid()), Some(existing.gid()));
            file.set_permissions(fs::Permissions::from_mode(existing.mode() & 0o7777))?;
        }
        file.sync_all()?;
        fs::rename(&temporary.path, target)?;
        temporary.renamed();
        if let Ok(directory_file) = File::open(directory) {
            let _ = directory_file.sync_all();
        }
        Ok(())
    }

    /// Opens the FIFO without blocking, waiting for a reader, then writes as the reader reads.
    fn write_fifo(&mut self, target: &Path, bytes: &[u8], metadata: &Metadata) -> io::Result<()> {
        let mut pause = Duration::from_millis(1);
        let mut file = loop {
            match OpenOptions::new()
                .write(true)
                .custom_flags(O_NONBLOCK)
                .open(target)
            {
                Ok(file) => break file,
                Err(error) if error.raw_os_error() == Some(ENXIO) => {
                    (self.interrupted)()?;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_FIFO_WAIT);
                }
                Err(error) => return Err(error),
            }
        };
        same_file(&file, metadata)?;
        // The descriptor stays non-blocking, so that a reader that stops reading cannot hold the
        // writer where `interrupted` is never called.
        let mut rest = bytes;
        let mut pause = Duration::from_millis(1);
        while !rest.is_empty() {
            match file.write(rest) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(written) => {
                    rest = &rest[written..];
                    pause = Duration::from_millis(1);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    (self.interrupted)()?;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_FIFO_WAIT);
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

fn same_file(opened: &File, expected: &Metadata) -> io::Result<()> {
    let actual = opened.metadata()?;
    if same_node(&actual, expected) {
        Ok(())
    } else {
        Err(io::Error::other(
            "the file was replaced while being written",
        ))
    }
}

fn write_directly(target: &Path, bytes: &[u8], metadata: &Metadata) -> io::Result<()> {
    // No O_CREAT and no O_TRUNC: the node is written as it is, never created or replaced.
    let mut file = OpenOptions::new().write(true).open(target)?;
    same_file(&file, metadata)?;
    file.write_all(bytes)?;
    file.flush()
}

/// Writes `bytes` over the regular file at `target` in place (see [`write_output`]).
fn write_in_place(target: &Path, bytes: &[u8], metadata: &Metadata) -> io::Result<()> {
    // Opened as `>` opens it, less O_TRUNC: what this user may not write fails here, untouched.
    let mut file = OpenOptions::new().write(true).open(target)?;
    same_file(&file, metadata)?;
    let old_length = file.metadata()?.len();
    let kept_length = usize::try_from(old_length)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let (head, tail) = bytes.split_at(kept_length);
    if !tail.is_empty() {
        // The new blocks first, while the old bytes are still whole: a full disk or quota shows
        // here, and cutting the file back to its old length leaves the old content as it was.
        let grown = file
            .seek(SeekFrom::Start(old_length))
            .and_then(|_| file.write_all(tail))
            .and_then(|()| file.sync_data());
        if let Err(error) = grown {
            let _ = file.set_len(old_length);
            return Err(error);
        }
    }
    file.seek(SeekFrom::Start(0))?;
    file.write_all(head)?;
    file.set_len(bytes.len() as u64)?;
    file.sync_all()
}

/// A temporary file that is removed when dropped unless it was renamed away.
struct Temporary {
    path: PathBuf,
    file: Option<File>,
}

/// `.NAME.<random part>.tmp`, with NAME cut to [`TEMPORARY_NAME_PREFIX_BYTES`] (at a character
/// boundary when it is UTF-8).
fn temporary_name(file_name: &OsStr, random_part: &str) -> OsString {
    let name_bytes = file_name.as_bytes();
    let mut kept = name_bytes.len().min(TEMPORARY_NAME_PREFIX_BYTES);
    if let Ok(text) = std::str::from_utf8(name_bytes) {
        while !text.is_char_boundary(kept) {
            kept -= 1;
        }
    }
    let mut temporary_name = OsString::from(".");
    temporary_name.push(OsStr::from_bytes(&name_bytes[..kept]));
    temporary_name.push(format!(".{random_part}.tmp"));
    temporary_name
}

impl Temporary {
    /// Creates the temporary with `O_CREAT | O_EXCL` and the permission bits `permissions` from
    /// the start (less the umask): its content is never readable by more people than the file it
    /// replaces.
    fn create(
        directory: &Path,
        file_name: &OsStr,
        permissions: u32,
        names: &mut dyn Iterator<Item = String>,
    ) -> io::Result<Temporary> {
        for random_part in names.take(TEMPORARY_NAME_ATTEMPTS) {
            let path = directory.join(temporary_name(file_name, &random_part));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(permissions & 0o777)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Temporary {
                        path,
                        file: Some(file),
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no unused temporary file name was found",
        ))
    }

    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("the temporary file is closed"))
    }

    /// The temporary name is gone (renamed over the target): nothing is left to remove.
    fn renamed(mut self) {
        self.file = None;
        self.path = PathBuf::new();
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        self.file = None;
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn split_target(target: &Path) -> io::Result<(&Path, &OsStr)> {
    let file_name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path does not end in a file name",
        )
    })?;
    Ok((directory_of(target), file_name))
}

/// The identity of a regular file (its device and inode), which every name of it shares: its
/// path, any hard link, any symlink to it, `/dev/stdin` when standard input is redirected from it.
/// Commands compare the identities of their inputs and outputs, so that an output never replaces
/// an input it names another way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// The device the file is on.
    pub device: u64,
    /// Its inode on that device.
    pub inode: u64,
}

impl FileIdentity {
    /// The identity of the regular file that `path` leads to (symlinks followed); `None` when
    /// nothing is there, when it cannot be examined, or when it is not a regular file (a device
    /// or FIFO can be read and written at once without one replacing the other).
    pub fn of_path(path: &Path) -> Option<FileIdentity> {
        fs::metadata(path)
            .ok()
            .and_then(|metadata| Self::of_metadata(&metadata))
    }

    /// The identity of an open file, when it is a regular file.
    pub fn of_file(file: &File) -> Option<FileIdentity> {
        file.metadata()
            .ok()
            .and_then(|metadata| Self::of_metadata(&metadata))
    }

    fn of_metadata(metadata: &Metadata) -> Option<FileIdentity> {
        metadata.file_type().is_file().then(|| FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }
}

/// Reads the file at `path`, but never more than `max_bytes + 1` bytes: a longer input (or a
/// device that never ends) fails with an error naming the limit. Errors carry a [`FileError`].
pub fn read_input(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let read = File::open(path).and_then(|file| read_bounded(file, max_bytes));
    read.map_err(|error| FileError::wrap(FileOperation::Read, path, error))
}

/// Reads `reader` to its end like [`read_input`], naming `name` in errors (for standard input).
pub fn read_stream(reader: impl Read, name: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    read_bounded(reader, max_bytes)
        .map_err(|error| FileError::wrap(FileOperation::Read, name, error))
}

fn read_bounded(reader: impl Read, max_bytes: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "larger than the limit of {}; raise it with --max-input-bytes or \
                 TORCHSCAN_MAX_INPUT_BYTES",
                limit_text(max_bytes)
            ),
        ));
    }
    Ok(bytes)
}

/// `1073741824 bytes (1 GiB)`, `100 bytes`: the exact limit and the limit as people say it.
fn limit_text(max_bytes: u64) -> String {
    if max_bytes < 1024 {
        format!("{max_bytes} bytes")
    } else {
        format!("{max_bytes} bytes ({})", human_bytes(max_bytes))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::{Temporary, human_bytes, limit_text, temporary_name};

    #[test]
    fn a_temporary_has_the_final_permissions_from_its_creation() {
        let directory =
            std::env::temp_dir().join(format!("torchscan-files-unit-mode-{}", std::process::id()));
        fs::create_dir_all(&directory).expect("scratch directory");
        for permissions in [0o600, 0o640, 0o400] {
            let mut names = std::iter::once(format!("{permissions:o}"));
            let temporary =
                Temporary::create(&directory, OsStr::new("out.json"), permissions, &mut names)
                    .expect("create");
            // Nothing has been written and no chmod has run: this is the mode `open` gave it.
            let metadata = fs::symlink_metadata(&temporary.path).expect("stat");
            assert_eq!(
                metadata.mode() & 0o7777,
                permissions,
                "{:o}",
                metadata.mode()
            );
            assert_eq!(metadata.len(), 0);
            drop(temporary);
        }
        let mut names = std::iter::once("new".to_owned());
        let temporary = Temporary::create(&directory, OsStr::new("new.json"), 0o666, &mut names)
            .expect("create");
        let mode = fs::symlink_metadata(&temporary.path).expect("stat").mode();
        drop(temporary);
        let umask_probe = directory.join("umask-probe");
        fs::write(&umask_probe, b"").expect("probe");
        // A new file gets what any new file gets: 0o666 less the umask.
        assert_eq!(
            mode & 0o7777,
            fs::metadata(&umask_probe)
                .expect("stat")
                .permissions()
                .mode()
                & 0o7777
        );
        let _ = fs::remove_dir_all(&directory);
    }

    #[test]
    fn temporary_names_stay_short_whatever_the_target_name() {
        let part = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            temporary_name(OsStr::new("out.json"), part),
            OsStr::new(".out.json.0123456789abcdef0123456789abcdef.tmp")
        );
        let long = "n".repeat(255);
        let name = temporary_name(OsStr::new(&long), part);
        assert_eq!(name.len(), 1 + 32 + 1 + 32 + 4);
        assert!(name.as_bytes().starts_with(&[b'.'; 1]));
        // A UTF-8 name is cut at a character boundary: 31 bytes of `a` and a 2-byte `é` at
        // bytes 31..33 keep only the `a`s.
        let accented = format!("{}é{}", "a".repeat(31), "b".repeat(100));
        let name = temporary_name(OsStr::new(&accented), part);
        assert_eq!(name, OsStr::new(&format!(".{}.{part}.tmp", "a".repeat(31))));
        // A name that is not UTF-8 is cut at 32 bytes.
        let raw = OsStr::from_bytes(&[0xff; 40]);
        assert_eq!(temporary_name(raw, part).len(), 70);
    }

    #[test]
    fn limits_read_as_people_say_them() {
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert_eq!(limit_text(1 << 30), "1073741824 bytes (1 GiB)");
        assert_eq!(limit_text(100), "100 bytes");
    }
}
