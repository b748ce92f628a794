//! The one place where core errors become Python exceptions.

use std::io;
use std::path::Path;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use torchscan_core::benchmark_comparison::BenchCompareFailure;
use torchscan_core::distributed::MergeFailure;
use torchscan_core::stats::StatsError;
use torchscan_core::{CompareFailure, Problem, RenderFailure};

/// The exception types of `torchscan.errors` that core failures become.
const ERRORS_MODULE: &str = "torchscan.errors";

/// `torchscan.errors.<name>(argument)`, raised; an `ImportError` if the package is broken.
fn torchscan_error<'py, A>(py: Python<'py>, name: &str, argument: A) -> PyErr
where
    A: IntoPyObject<'py>,
{
    let made = py
        .import(ERRORS_MODULE)
        .and_then(|module| module.getattr(name))
        .and_then(|kind| kind.call1((argument,)));
    match made {
        Ok(error) => PyErr::from_value(error),
        Err(error) => error,
    }
}

/// Nothing to register: the exceptions are torchscan's own (`torchscan.errors`).
pub fn register(_module: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}

/// A `col_names` the summary does not know (an unknown name, a repeat, two names of one column),
/// as `torchscan.errors.InvalidArgumentError("col_names: <why>")`.
pub fn column_error(py: Python<'_>, error: impl std::fmt::Display) -> PyErr {
    torchscan_error(py, "InvalidArgumentError", format!("col_names: {error}"))
}

/// Problems found in a report, as `torchscan.errors.ReportValidationError([(path, message), ...])`.
pub fn validation_error(py: Python<'_>, problems: Vec<Problem>) -> PyErr {
    let pairs: Vec<(String, String)> = problems
        .into_iter()
        .map(|problem| (problem.path, problem.message))
        .collect();
    match PyList::new(py, pairs) {
        Ok(list) => torchscan_error(py, "ReportValidationError", list),
        Err(error) => error,
    }
}

/// A comparison that gave no diff: invalid input as `ReportValidationError` (paths prefixed
/// `before:` or `after:`), a refused comparison as `ReportComparisonError(reason)`, and a diff
/// that fails validation (a bug) as `RuntimeError`.
pub fn compare_error(py: Python<'_>, failure: CompareFailure) -> PyErr {
    match failure {
        CompareFailure::Invalid { .. } => validation_error(py, failure.problems()),
        CompareFailure::Refused(error) => {
            torchscan_error(py, "ReportComparisonError", error.to_string())
        }
        CompareFailure::Internal(_) => PyRuntimeError::new_err(failure.to_string()),
    }
}

/// A page that was not rendered: invalid input as `ReportValidationError`, a rendering error (a
/// bug) as `RuntimeError`.
pub fn render_error(py: Python<'_>, failure: RenderFailure) -> PyErr {
    match failure {
        RenderFailure::Invalid(problems) => validation_error(py, problems),
        RenderFailure::Render(error) => PyRuntimeError::new_err(error.to_string()),
    }
}

/// A benchmark comparison that was not made: invalid input as `ReportValidationError`, a refusal
/// as `ReportComparisonError`, an invalid result (a bug) as `RuntimeError`.
pub fn bench_compare_error(py: Python<'_>, failure: BenchCompareFailure) -> PyErr {
    match failure {
        BenchCompareFailure::Invalid(problems) => validation_error(py, problems),
        BenchCompareFailure::Refused(error) => {
            torchscan_error(py, "ReportComparisonError", error.to_string())
        }
        BenchCompareFailure::Internal(problems) => PyRuntimeError::new_err(format!(
            "torchscan produced an invalid comparison (a bug): {}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// A merge that was not made: invalid input as `ReportValidationError` (paths prefixed
/// `input N:`), a refusal as `ReportMergeError(reason)`, an invalid result (a bug) as
/// `RuntimeError`.
pub fn merge_error(py: Python<'_>, failure: MergeFailure) -> PyErr {
    match failure {
        MergeFailure::Invalid(problems) => validation_error(py, problems),
        MergeFailure::Refused(error) => torchscan_error(py, "ReportMergeError", error.to_string()),
        MergeFailure::Internal(_) => PyRuntimeError::new_err(failure.to_string()),
    }
}

/// A statistic that cannot be computed, as `ValueError`.
pub fn stats_error(error: StatsError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// A failed file read or write as the `OSError` subclass Python itself would raise:
/// `OSError(errno, strerror, filename)` picks `FileNotFoundError`, `IsADirectoryError`,
/// `PermissionError`... from the errno. The path is the one the error names (else `path`); an
/// error that carries no OS errno gets the errno of its kind where one fits.
pub fn file_error(py: Python<'_>, path: &Path, error: &io::Error) -> PyErr {
    let (filename, source) = match torchscan_core::files::FileError::of(error) {
        Some(file_error) => (file_error.path.as_path(), &file_error.source),
        None => (path, error),
    };
    let errno = source
        .raw_os_error()
        .or_else(|| errno_of_kind(py, source.kind()));
    let strerror = match source.raw_os_error() {
        // The OS's own text, without std's " (os error N)" suffix.
        Some(code) => {
            let text = io::Error::from_raw_os_error(code).to_string();
            match text.rfind(" (os error ") {
                Some(end) => text[..end].to_owned(),
                None => text,
            }
        }
        None => source.to_string(),
    };
    // The filename as `str` (decoded as `os.fsdecode` does), whatever type the caller passed.
    PyOSError::new_err((errno, strerror, filename.as_os_str().to_os_string()))
}

fn errno_of_kind(py: Python<'_>, kind: io::ErrorKind) -> Option<i32> {
    let name = match kind {
        io::ErrorKind::NotFound => "ENOENT",
        io::ErrorKind::PermissionDenied => "EACCES",
        io::ErrorKind::AlreadyExists => "EEXIST",
        io::ErrorKind::IsADirectory => "EISDIR",
        io::ErrorKind::NotADirectory => "ENOTDIR",
        io::ErrorKind::ReadOnlyFilesystem => "EROFS",
        io::ErrorKind::StorageFull => "ENOSPC",
        io::ErrorKind::FileTooLarge => "EFBIG",
        io::ErrorKind::BrokenPipe => "EPIPE",
        io::ErrorKind::InvalidInput => "EINVAL",
        _ => return None,
    };
    py.import("errno")
        .and_then(|module| module.getattr(name))
        .and_then(|value| value.extract::<i32>())
        .ok()
}
