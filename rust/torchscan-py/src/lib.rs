//! `torchscan._core`: the Python extension. It defines the module, maps the core's errors to
//! Python exceptions (`errors.rs`, the one place), exposes the functions over report JSON
//! (strings in, strings out: `functions/`, one file per report family) and the file reads and
//! writes (`files.rs`), and registers the compiled analysis path of the `torchscan-crawl` crate.

mod errors;
mod files;
mod functions;

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
    module.add(
        "SUMMARY_COLUMNS",
        torchscan_core::summary::COLUMN_NAMES
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>(),
    )?;
    errors::register(module)?;
    functions::register(module)?;
    files::register(module)?;
    torchscan_crawl::register(module)?;
    Ok(())
}
