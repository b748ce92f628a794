//! One executed operator, as the log of a compiled dispatch keeps it.
//!
//! The dispatch recorder makes one for every lean call, the Python general path (the counters'
//! `_after`) for every other call. For an analysed forward, the assembly reads them once the
//! forward is over, for the operator figures of each module call and the receptive fields; for
//! a FLOP counter, its ledger (`flop_ledger`) reads them in batches while it counts.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

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
    /// The position of the innermost module call running (see `CallRecorder`), if any: where
    /// an analysed forward's operator ran.
    pub call: Option<usize>,
    /// The module paths active, outermost first (a tuple), or `None`: where an operator counted
    /// by `measure_flops` or `OperatorFlopCounter` ran.
    pub paths: Py<PyAny>,
    /// The first floating-point dtype among the result's tensors (the precision the operator
    /// computed in), or `None`; recorded by counters only.
    pub dtype: Py<PyAny>,
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
    #[pyo3(signature = (
        *,
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
        paths = None,
        dtype = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
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
        paths: Option<Bound<'_, PyTuple>>,
        dtype: Option<Py<PyAny>>,
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
            paths: paths.map_or_else(|| py.None(), |paths| paths.into_any().unbind()),
            dtype: dtype.unwrap_or_else(|| py.None()),
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
