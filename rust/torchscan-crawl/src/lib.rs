//! The compiled analysis path of `crawl_module` (and `summary`) and of the operator FLOP
//! counters (`measure_flops`, `OperatorFlopCounter`), registered into `torchscan._core` by the
//! bindings crate.
//!
//! An analysis runs the model's forward once with a stand-in `forward` on every module and a
//! dispatch mode, then turns what it recorded into the report's layers. The parts that run once
//! per module call or operator must stay cheap, so they are compiled, one file per concept:
//!
//! - [`call_recorder`]: the module-forward stand-in and the record of every module call;
//! - [`dispatch_recorder`]: the common path of the operator dispatch, logged without a Python
//!   frame;
//! - [`operator_record`]: one executed operator as the log keeps it;
//! - [`operator_bytes`]: the bytes of the distinct tensors one operator call reads or writes;
//! - [`flop_ledger`]: what the operators of a counted workload came to (`measure_flops` and
//!   `OperatorFlopCounter` count through the same dispatch recorder);
//! - [`storage`]: a model's parameters and buffers, each module's own, the storage totals and
//!   the parameters under each module with children;
//! - [`receptive_fields`]: receptive fields replayed along the operator log;
//! - [`assembly`]: the layers, the module estimates and the operator views of the report;
//! - [`template`]: report dicts made as copies of a template.
//!
//! Python drives the analysis (`torchscan.crawl`); this crate works on Python objects through
//! PyO3 and is kept out of the workspace's default members, so a plain `cargo test` never links
//! libpython.

#![warn(missing_docs)]

pub mod assembly;
pub mod call_recorder;
pub mod dispatch_recorder;
pub mod flop_ledger;
pub mod operator_bytes;
pub mod operator_record;
pub mod receptive_fields;
pub mod storage;
pub mod template;

use pyo3::prelude::*;

/// Register the crawl path's classes and functions into `module` (`torchscan._core`).
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    assembly::register(module)?;
    call_recorder::register(module)?;
    dispatch_recorder::register(module)?;
    flop_ledger::register(module)?;
    operator_record::register(module)?;
    receptive_fields::register(module)?;
    storage::register(module)?;
    Ok(())
}
