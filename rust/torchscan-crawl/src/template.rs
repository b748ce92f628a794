//! Report dicts made as copies of a template.
//!
//! A dict built key by key grows several times on the way; the copy of a dict that already has
//! every key is one allocation, and setting its values then replaces them in place. The reports
//! hold thousands of such dicts (a layer, its metrics, the metadata of its tensors).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

/// A dict with `keys` (interned), every value `None`, made once per `cell`.
pub(crate) struct Template {
    cell: PyOnceLock<Py<PyDict>>,
    keys: &'static [&'static str],
}

impl Template {
    /// A template of these keys, in this order.
    pub(crate) const fn new(keys: &'static [&'static str]) -> Self {
        Self {
            cell: PyOnceLock::new(),
            keys,
        }
    }

    /// A fresh dict with the template's keys in order, every value `None`.
    pub(crate) fn dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let template = self.cell.get_or_try_init(py, || {
            let template = PyDict::new(py);
            for key in self.keys {
                template.set_item(PyString::intern(py, key), py.None())?;
            }
            Ok::<_, PyErr>(template.unbind())
        })?;
        template.bind(py).copy()
    }
}
