//! `write_file` and `read_file`: the core's one writer and bounded reader, for Python.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::file_error;

/// Writes `data` to `path` as `torchscan_core::files::write_output` does: atomic replacement of
/// a regular file (its mode kept), write-through for symlinks, hard links and devices, FIFOs and
/// sockets written directly. Raises the `OSError` subclass of the failure, with `errno`,
/// `strerror` and `filename` set; the old content is then intact and no temporary file remains.
#[pyfunction]
fn write_file(py: Python<'_>, path: PathBuf, data: &[u8]) -> PyResult<()> {
    let outcome = py.detach(|| torchscan_core::files::write_output(&path, data));
    outcome.map_err(|error| file_error(py, &path, &error))
}

/// Reads the file at `path`, refusing one longer than `max_bytes` (default 1 GiB) without reading
/// more than `max_bytes + 1` bytes. Raises the `OSError` subclass of the failure (`errno.EFBIG`
/// for a file over the limit), with `errno`, `strerror` and `filename` set.
#[pyfunction]
// The default is written out so that the text signature shows it; a test checks it equals
// `DEFAULT_MAX_INPUT_BYTES`.
#[pyo3(signature = (path, max_bytes = 1073741824))]
fn read_file<'py>(py: Python<'py>, path: PathBuf, max_bytes: u64) -> PyResult<Bound<'py, PyBytes>> {
    let outcome = py.detach(|| torchscan_core::files::read_input(&path, max_bytes));
    match outcome {
        Ok(bytes) => Ok(PyBytes::new(py, &bytes)),
        Err(error) => Err(file_error(py, &path, &error)),
    }
}

/// Adds the functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(write_file, module)?)?;
    module.add_function(wrap_pyfunction!(read_file, module)?)
}
