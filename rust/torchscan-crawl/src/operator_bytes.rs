//! The bytes one operator call reads or writes, as a counter's operator bytes model them.
//!
//! Every executed operator counts `numel * element_size` of each distinct tensor among its
//! arguments (positional and keyword, through lists, tuples and dicts) and its results, each
//! tensor once per call, by identity: an in-place `add_` counts its `self` once, `a * a` counts
//! `a` once. Operators are counted each on its own, with no reuse between them, so the sum is a
//! model of memory traffic, not what the hardware measures. Views and metadata queries move no
//! data: their entries say so (`Entry.moves_data`), and their calls are not walked at all.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// The distinct tensors of one operator call and the bytes they come to.
///
/// Identities are kept in a small vector: a call has a handful of tensors, for which a linear
/// search is cheaper than hashing.
#[derive(Default)]
pub(crate) struct CallBytes {
    /// `id()` of the tensors counted so far.
    seen: Vec<usize>,
    /// Their bytes (`tensor.nbytes`).
    pub(crate) bytes: u128,
    /// Tensors whose size could not be read as a whole number (symbolic sizes, sparse
    /// layouts): left out of `bytes`.
    pub(crate) unsized_tensors: u64,
}

impl CallBytes {
    /// Counts the tensor `value` unless this call counted it already.
    pub(crate) fn tensor(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = value.as_ptr() as usize;
        if self.seen.contains(&key) {
            return Ok(());
        }
        self.seen.push(key);
        let py = value.py();
        // `nbytes` is `numel() * element_size()`, read in one attribute access.
        match value
            .getattr(intern!(py, "nbytes"))
            .and_then(|bytes| bytes.extract::<u64>())
        {
            Ok(bytes) => self.bytes = self.bytes.saturating_add(u128::from(bytes)),
            Err(_) => self.unsized_tensors += 1,
        }
        Ok(())
    }

    /// Counts the tensors of `value`: a tensor, or tensors inside tuples, lists and dicts.
    pub(crate) fn value(
        &mut self,
        value: &Bound<'_, PyAny>,
        tensor: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if value.is_instance(tensor)? {
            return self.tensor(value);
        }
        if let Ok(tuple) = value.cast::<PyTuple>() {
            for item in tuple.iter() {
                self.value(&item, tensor)?;
            }
        } else if let Ok(list) = value.cast::<PyList>() {
            for item in list.iter() {
                self.value(&item, tensor)?;
            }
        } else if let Ok(dict) = value.cast::<PyDict>() {
            for (_, item) in dict.iter() {
                self.value(&item, tensor)?;
            }
        }
        Ok(())
    }
}
