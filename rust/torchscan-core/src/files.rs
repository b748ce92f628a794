//! The one file writer and the one bounded file reader of torchscan.
//!
//! [`write_output`] follows what rustup and cargo do for the files they write: a regular file (or
//! a new path) is replaced atomically through a temporary file in the same directory, created with
//! `O_CREAT | O_EXCL` under an unpredictable name; a symlink is written through to its final target
//! (the link stays a link); a hard-linked file is rewritten in place so that every name sees the
//! new content; a device, FIFO or socket is written directly, as shell redirection would, and
//! never replaced. On any failure the old content is intact and no temporary file remains.
//!
//! [`read_input`] reads a file but never more than its limit plus one byte, so that `/dev/zero`
//! or a huge file stops with an error naming the limit instead of exhausting memory.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The default input limit: 1 GiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// How many symlinks a path may pass through before the writer gives up, as Linux's `ELOOP`.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// How many temporary names the writer tries before it gives up.
const TEMPORARY_NAME_ATTEMPTS: usize = 64;

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

/// Writes `bytes` to `path` without losing anything on failure.
///
/// - A symlink chain is followed by hand (at most [`MAX_SYMLINK_HOPS`] links; a relative target is
///   resolved against the link's directory; a dangling link creates its target). The final target
///   is written as below, so the link itself stays a link.
/// - A missing final target, or a regular file with one link, is replaced atomically: a temporary
///   file `.NAME.<random hex>.tmp` is created in the target's directory with `O_CREAT | O_EXCL`
///   (which never follows a symlink; another name is tried when one exists), written, synced,
///   given the existing file's mode (and owner, best effort; a new file gets `0o666` less the
///   umask), renamed over the target, and the directory is synced (best effort).
/// - A regular file with several hard links is rewritten in place so that every link sees the new
///   content: the content is first written to a temporary file in the same directory (so a full
///   disk or a read-only file system is found before the file is touched), the temporary is
///   removed, then the file is truncated and written; if that fails, the old content (read
///   beforehand) is written back. Readers may see a partial file while it is rewritten.
/// - A character or block device, FIFO or socket is opened for writing without `O_CREAT` and
///   written directly, as shell redirection would; it is never replaced.
/// - A directory, or a missing parent directory, is an error.
///
/// Every error is an [`io::Error`] that carries a [`FileError`] naming `path`; after it, the old
/// content is intact and no temporary file remains.
pub fn write_output(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let random = RandomState::new();
    let mut counter = 0u64;
    let mut names = std::iter::from_fn(move || {
        counter += 1;
        Some(random_hex(&random, counter))
    });
    write_output_with_names(path, bytes, &mut names)
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
    write_resolved(path, bytes, names)
        .map_err(|error| FileError::wrap(FileOperation::Write, path, error))
}

fn random_hex(random: &RandomState, counter: u64) -> String {
    // `RandomState` keys come from the OS's random source; hashing a counter and the process id
    // under two fresh states gives 128 bits nobody outside this process can predict.
    let high = random.hash_one((counter, std::process::id(), 0u8));
    let low = RandomState::new().hash_one((counter, std::process::id(), 1u8));
    format!("{high:016x}{low:016x}")
}

/// The final target of `path` after following symlinks by hand, with its metadata (`None` when
/// it does not exist).
fn resolve(path: &Path) -> io::Result<(PathBuf, Option<Metadata>)> {
    let mut current = path.to_path_buf();
    for _ in 0..=MAX_SYMLINK_HOPS {
        let metadata = match fs::symlink_metadata(&current) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok((current, None)),
            Err(error) => return Err(error),
        };
        if !metadata.file_type().is_symlink() {
            return Ok((current, Some(metadata)));
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

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn write_resolved(
    path: &Path,
    bytes: &[u8],
    names: &mut dyn Iterator<Item = String>,
) -> io::Result<()> {
    let (target, metadata) = resolve(path)?;
    let Some(metadata) = metadata else {
        return replace_atomically(&target, bytes, None, names);
    };
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        // Opening a directory for writing fails with the OS's own EISDIR.
        OpenOptions::new().write(true).open(&target)?;
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if file_type.is_file() {
        if metadata.nlink() > 1 {
            return rewrite_in_place(&target, bytes, &metadata, names);
        }
        return replace_atomically(&target, bytes, Some(&metadata), names);
    }
    if file_type.is_char_device()
        || file_type.is_block_device()
        || file_type.is_fifo()
        || file_type.is_socket()
    {
        return write_directly(&target, bytes, &metadata);
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file, directory, device, FIFO or socket",
    ))
}

fn same_file(opened: &File, expected: &Metadata) -> io::Result<()> {
    let actual = opened.metadata()?;
    if actual.dev() == expected.dev() && actual.ino() == expected.ino() {
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

/// A temporary file that is removed when dropped unless it was renamed away.
struct Temporary {
    path: PathBuf,
    file: Option<File>,
}

impl Temporary {
    fn create(
        directory: &Path,
        file_name: &OsStr,
        names: &mut dyn Iterator<Item = String>,
    ) -> io::Result<Temporary> {
        for random_part in names.take(TEMPORARY_NAME_ATTEMPTS) {
            let mut temporary_name = OsString::from(".");
            temporary_name.push(file_name);
            temporary_name.push(format!(".{random_part}.tmp"));
            let path = directory.join(temporary_name);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
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

    fn write_synced(&mut self, bytes: &[u8]) -> io::Result<()> {
        let file = self.file()?;
        file.write_all(bytes)?;
        file.sync_all()
    }

    fn remove(mut self) -> io::Result<()> {
        self.file = None;
        let path = std::mem::take(&mut self.path);
        fs::remove_file(path)
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

fn replace_atomically(
    target: &Path,
    bytes: &[u8],
    existing: Option<&Metadata>,
    names: &mut dyn Iterator<Item = String>,
) -> io::Result<()> {
    let (directory, file_name) = split_target(target)?;
    let mut temporary = Temporary::create(directory, file_name, names)?;
    temporary.write_synced(bytes)?;
    if let Some(existing) = existing {
        let file = temporary.file()?;
        // Owner first: changing the owner may clear set-id bits that the mode then restores.
        let _ = std::os::unix::fs::fchown(&*file, Some(existing.uid()), Some(existing.gid()));
        file.set_permissions(fs::Permissions::from_mode(existing.mode() & 0o7777))?;
    }
    fs::rename(&temporary.path, target)?;
    // The temporary name is gone: nothing left to remove.
    temporary.file = None;
    temporary.path = PathBuf::new();
    if let Ok(directory_file) = File::open(directory) {
        let _ = directory_file.sync_all();
    }
    Ok(())
}

fn rewrite_in_place(
    target: &Path,
    bytes: &[u8],
    metadata: &Metadata,
    names: &mut dyn Iterator<Item = String>,
) -> io::Result<()> {
    let mut file = OpenOptions::new().read(true).write(true).open(target)?;
    same_file(&file, metadata)?;
    let mut old_content = Vec::new();
    file.read_to_end(&mut old_content)?;
    // A trial write of the new content: a full disk or a read-only file system shows here,
    // before the file is touched. The trial is removed first so that its space is free again.
    let (directory, file_name) = split_target(target)?;
    let mut trial = Temporary::create(directory, file_name, names)?;
    trial.write_synced(bytes)?;
    trial.remove()?;
    let written = overwrite(&mut file, bytes);
    if written.is_err() {
        let _ = overwrite(&mut file, &old_content);
    }
    written
}

fn overwrite(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(bytes)?;
    file.sync_all()
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

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::{human_bytes, limit_text};

    #[test]
    fn limits_read_as_people_say_them() {
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert_eq!(limit_text(1 << 30), "1073741824 bytes (1 GiB)");
        assert_eq!(limit_text(100), "100 bytes");
    }
}
