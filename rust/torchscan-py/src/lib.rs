//! `torchscan._core`: a thin binding over torchscan-core. Strings in, strings out; errors are
//! mapped to Python exceptions in `errors.rs` only.

mod assemble;
mod calls;
mod dispatch;
mod errors;
mod fields;
mod files;
mod functions;
mod storage;
mod template;

use pyo3::prelude::*;

/// The `torchscan._core` extension module.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", torchscan_core::VERSION)?;
    module.add(
        "SCHEMA_VERSION",
        torchscan_core::schema::common::SCHEMA_VERSION,
    )?;
    module.add(
        "READABLE_SCHEMA_VERSIONS",
        torchscan_core::schema::common::READABLE_SCHEMA_VERSIONS.to_vec(),
    )?;
    errors::register(module)?;
    functions::register(module)?;
    assemble::register(module)?;
    calls::register(module)?;
    dispatch::register(module)?;
    fields::register(module)?;
    files::register(module)?;
    storage::register(module)?;
    Ok(())
}
