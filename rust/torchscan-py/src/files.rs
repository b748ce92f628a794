//! `write_file` and `read_file`: the core's one writer and bounded reader, for Python.

use std::io;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::file_error;

/// Writes `data` to `path` as `torchscan_core::files::write_output` does: atomic replacement of
/// a regular file (its mode kept), write-through for symlinks, in place for hard links and magic
/// links of `/proc`, devices, FIFOs and sockets written directly. Raises the `OSError` subclass of
/// the failure, with `errno`, `strerror` and `filename` set. While a FIFO has no reader (or its
/// reader stops reading) the call waits, checking for signals about every 25 ms: a signal
/// handler's exception (`KeyboardInterrupt` for Ctrl-C) ends the wait and is raised.
#[pyfunction]
fn write_file(py: Python<'_>, path: PathBuf, data: &[u8]) -> PyResult<()> {
    let mut raised: Option<PyErr> = None;
    let outcome = py.detach(|| {
        torchscan_core::files::write_output_interruptible(&path, data, &mut || {
            Python::attach(|py| py.check_signals()).map_err(|error| {
                raised = Some(error);
                io::Error::new(io::ErrorKind::Interrupted, "interrupted by a signal")
            })
        })
    });
    match (outcome, raised) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(raised)) => Err(raised),
        (Err(error), None) => Err(file_error(py, &path, &error)),
    }
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

/// Runs `body` without the GIL, with SIGINT at its default action while Python's own handler
/// (`signal.default_int_handler`) is the one installed and this is the main thread: the
/// `torchscan-report` console script then stops on Ctrl-C as the binary does, even where it
/// waits (a FIFO without a reader) and Python could never run its handler. An ignored SIGINT
/// (a background job) or a handler of the caller's is left as it is. The handler is put back
/// afterwards.
pub fn with_default_sigint<T: Send>(
    py: Python<'_>,
    body: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let signal = py.import("signal")?;
    let threading = py.import("threading")?;
    let sigint = signal.getattr("SIGINT")?;
    let installed = signal.call_method1("getsignal", (&sigint,))?;
    let on_main_thread = threading
        .call_method0("current_thread")?
        .is(&threading.call_method0("main_thread")?);
    let swapped = on_main_thread && installed.is(&signal.getattr("default_int_handler")?);
    if swapped {
        signal.call_method1("signal", (&sigint, signal.getattr("SIG_DFL")?))?;
    }
    let outcome = py.detach(body);
    if swapped {
        signal.call_method1("signal", (&sigint, &installed))?;
    }
    Ok(outcome)
}

/// Adds the functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(write_file, module)?)?;
    module.add_function(wrap_pyfunction!(read_file, module)?)
}
