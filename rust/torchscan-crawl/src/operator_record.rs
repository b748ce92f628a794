//! One executed operator of an analysed forward, as the log keeps it.
//!
//! The dispatch recorder makes one for every lean call, the Python general path
//! (`torchscan.crawl.dispatch_recorder`'s `CrawlCounter._after`) for every other call; after the
//! forward, the assembly reads them for the operator figures of each module call and the
//! receptive fields.

use pyo3::prelude::*;

/// An executed operator of the analysed forward's log.
///
/// `outcome` is one of `torchscan.opflops.mode`'s codes: `COUNTED` with its `flops`, `DEFERRED`
/// for a built-in shape formula applied after the forward (to `args`, `kwargs` and `out`),
/// `EXCLUDED` or `UNCOUNTED`. `args`, `kwargs` and `out` are as shape formulas take them
/// (tensors replaced by their shapes); a call whose FLOPs need no formula after the forward
/// keeps `None` there.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct OperatorRecord {
    /// The operator's `Entry` (`torchscan.opflops.mode`).
    pub entry: Py<PyAny>,
    /// The position of the innermost module call running (see `CallRecorder`), if any.
    pub call: Option<usize>,
    /// How the call was counted: an outcome code of `torchscan.opflops.mode`.
    pub outcome: i64,
    /// The FLOPs of a `COUNTED` call (0 for the other outcomes).
    pub flops: u128,
    /// The positional arguments as shape formulas take them (a list), or `None`.
    pub args: Py<PyAny>,
    /// The keyword arguments as shape formulas take them (a dict), or `None`.
    pub kwargs: Py<PyAny>,
    /// The result as shape formulas take it, or `None`.
    pub out: Py<PyAny>,
    /// `id()` of the tensor arguments, positional then keyword.
    pub inputs: Vec<usize>,
    /// How many of `inputs` belong to the first positional argument (the tensor, or the list
    /// of tensors, that the operator works on).
    pub first_inputs: usize,
    /// `(id(tensor), tensor.dim())` of the result's tensors, in order.
    pub outputs: Vec<(usize, usize)>,
}

#[pymethods]
impl OperatorRecord {
    /// A record with every field named (as the general path makes it).
    #[new]
    #[pyo3(signature = (*, entry, call, outcome, flops, args, kwargs, out, inputs, first_inputs, outputs))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        entry: Py<PyAny>,
        call: Option<usize>,
        outcome: i64,
        flops: u128,
        args: Py<PyAny>,
        kwargs: Py<PyAny>,
        out: Py<PyAny>,
        inputs: Vec<usize>,
        first_inputs: usize,
        outputs: Vec<(usize, usize)>,
    ) -> PyResult<Self> {
        if first_inputs > inputs.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "first_inputs is {first_inputs} but the record has {} tensor inputs",
                inputs.len()
            )));
        }
        Ok(Self {
            entry,
            call,
            outcome,
            flops,
            args,
            kwargs,
            out,
            inputs,
            first_inputs,
            outputs,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = self
            .entry
            .bind(py)
            .getattr(pyo3::intern!(py, "name"))
            .and_then(|name| name.str().map(|text| text.to_string()))
            .unwrap_or_else(|_| String::from("?"));
        Ok(format!(
            "OperatorRecord({name}, call={}, outcome={}, flops={})",
            self.call
                .map_or_else(|| String::from("None"), |call| call.to_string()),
            self.outcome,
            self.flops
        ))
    }
}

/// Adds [`OperatorRecord`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<OperatorRecord>()
}
