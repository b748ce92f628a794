//! The module calls of an analysed forward, recorded by compiled code.
//!
//! `crawl_module` records every module call of its forward: which module, under which call index,
//! inside which other call, and the metadata of what it received and returned. The code that does
//! so runs between the forward's kernels, where little of it is still in the processor's caches,
//! so it is kept short and compiled: [`ModuleForward`] stands in for a module's `forward` while
//! the analysis runs, and [`CallRecorder`] keeps the calls as plain records. The Python side
//! builds its call tree from them once the forward is over. [`TensorSpec`] is what is kept of a
//! tensor: its metadata, never its values.

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::{IntoPyObjectExt, PyTraverseError, intern};

use crate::template::Template;

/// The keys of a tensor's metadata in a report.
static TENSOR_META: Template =
    Template::new(&["kind", "shape", "dtype", "device", "requires_grad"]);

/// What a formula or a report needs of a tensor, taken when it is seen: never its values.
///
/// Shape (the tensor's `torch.Size`), dtype, device, `requires_grad` and the identity (`id`) the
/// tensor had, so an analysis can keep this instead of the tensor. `shape`, `ndim`, `dim()` and
/// `numel()` answer as the tensor did.
#[pyclass(module = "torchscan._core", frozen)]
pub struct TensorSpec {
    /// The tensor's shape, as the tensor gave it.
    #[pyo3(get)]
    shape: Py<PyAny>,
    /// The tensor's dtype.
    #[pyo3(get)]
    dtype: Py<PyAny>,
    /// The tensor's device.
    #[pyo3(get)]
    device: Py<PyAny>,
    /// Whether the tensor required gradients.
    #[pyo3(get)]
    requires_grad: bool,
    /// `id(tensor)` when it was seen.
    #[pyo3(get)]
    ident: usize,
}

impl TensorSpec {
    /// The shape as a list of its sizes, as Python has them.
    fn shape_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let shape = PyList::empty(py);
        for size in self.shape.bind(py).try_iter()? {
            shape.append(size?)?;
        }
        Ok(shape)
    }

    /// `(id(tensor), number of dimensions)` of the tensor it was taken of.
    pub(crate) fn identity_and_ndim(&self, py: Python<'_>) -> PyResult<(usize, usize)> {
        Ok((self.ident, self.shape.bind(py).len()?))
    }

    /// Takes the metadata of `tensor`.
    fn of(tensor: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = tensor.py();
        Ok(Self {
            shape: tensor.getattr(intern!(py, "shape"))?.unbind(),
            dtype: tensor.getattr(intern!(py, "dtype"))?.unbind(),
            device: tensor.getattr(intern!(py, "device"))?.unbind(),
            requires_grad: tensor.getattr(intern!(py, "requires_grad"))?.is_truthy()?,
            ident: tensor.as_ptr() as usize,
        })
    }
}

#[pymethods]
impl TensorSpec {
    #[new]
    fn new(tensor: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::of(tensor)
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self, py: Python<'_>) -> PyResult<usize> {
        self.shape.bind(py).len()
    }

    /// Number of dimensions.
    fn dim(&self, py: Python<'_>) -> PyResult<usize> {
        self.shape.bind(py).len()
    }

    /// Number of elements (a Python integer, exact for any shape).
    fn numel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let shape = self.shape.bind(py);
        let mut elements: Option<i64> = Some(1);
        for size in shape.try_iter()? {
            let size = size?;
            elements = match (elements, size.extract::<i64>()) {
                (Some(product), Ok(size)) => product.checked_mul(size),
                _ => None,
            };
            if elements.is_none() {
                break;
            }
        }
        match elements {
            Some(product) => product.into_bound_py_any(py),
            // Beyond 64 bits (or a size that is not a plain int): Python's exact product.
            None => py
                .import(intern!(py, "math"))?
                .getattr(intern!(py, "prod"))?
                .call1((shape,)),
        }
    }

    /// The report's metadata of the tensor: `{"kind": "tensor", "shape", "dtype", "device",
    /// "requires_grad"}`, with the dtype's and the device's names looked up in the given
    /// caches; `None` while either name is not there yet (the caller names them).
    pub(crate) fn describe<'py>(
        &self,
        py: Python<'py>,
        dtype_names: &Bound<'py, PyDict>,
        device_names: &Bound<'py, PyDict>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(dtype_text) = dtype_names.get_item(self.dtype.bind(py))? else {
            return Ok(None);
        };
        let Some(device_text) = device_names.get_item(self.device.bind(py))? else {
            return Ok(None);
        };
        let meta = TENSOR_META.dict(py)?;
        meta.set_item(intern!(py, "kind"), intern!(py, "tensor"))?;
        meta.set_item(intern!(py, "shape"), self.shape_list(py)?)?;
        meta.set_item(intern!(py, "dtype"), dtype_text)?;
        meta.set_item(intern!(py, "device"), device_text)?;
        meta.set_item(intern!(py, "requires_grad"), self.requires_grad)?;
        Ok(Some(meta))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "TensorSpec(shape={}, dtype={}, device={}, requires_grad={})",
            self.shape_list(py)?.str()?,
            self.dtype.bind(py).str()?,
            self.device.bind(py).str()?,
            if self.requires_grad { "True" } else { "False" },
        ))
    }
}

/// A module the recorder knows: the module, its path and its depth in the module tree.
pub(crate) struct Known {
    pub(crate) module: Py<PyAny>,
    pub(crate) path: Py<PyAny>,
    pub(crate) depth: usize,
    /// Calls of it so far.
    calls: usize,
}

/// One module call.
pub(crate) struct Call {
    /// Position of the module in the recorder's list.
    pub(crate) module: usize,
    /// Its calls before this one.
    pub(crate) call_index: usize,
    /// Position of the call it was made in, if any.
    pub(crate) parent: Option<usize>,
    /// Positional arguments and result, frozen (`None` until the call closes).
    pub(crate) inputs: Option<Py<PyAny>>,
    /// Keyword arguments, frozen, as a dict (`None` when there were none).
    pub(crate) kwargs: Option<Py<PyAny>>,
    pub(crate) output: Option<Py<PyAny>>,
    pub(crate) finished: bool,
}

/// Records the module calls of one forward: the call tree, with frozen inputs and outputs.
///
/// Built with the analysed modules as `(module, path, depth)`, each once, the forward's log (or
/// `None`), `torch.Tensor` and the function that freezes any other value (`_values.freeze`).
/// `enter(index)` opens a call of the module at that position; `leave(module, inputs, output,
/// kwargs)` closes the innermost open call of `module` (and any left open inside it), freezing
/// the arguments it received and what it returned, and appends the call's position to the log. `top` is the position of the innermost open call. `records()` gives the calls once
/// the forward is over.
#[pyclass(module = "torchscan._core")]
pub struct CallRecorder {
    pub(crate) known: Vec<Known>,
    pub(crate) calls: Vec<Call>,
    /// Positions of the calls in the order they closed: children before their parent.
    pub(crate) closed: Vec<usize>,
    top: Option<usize>,
    log: Option<Py<PyList>>,
    tensor: Py<PyAny>,
    freeze: Py<PyAny>,
}

#[pymethods]
impl CallRecorder {
    #[new]
    fn new(
        modules: Vec<(Py<PyAny>, Py<PyAny>, usize)>,
        log: Option<Py<PyList>>,
        tensor: Py<PyAny>,
        freeze: Py<PyAny>,
    ) -> Self {
        Self {
            known: modules
                .into_iter()
                .map(|(module, path, depth)| Known {
                    module,
                    path,
                    depth,
                    calls: 0,
                })
                .collect(),
            calls: Vec::new(),
            closed: Vec::new(),
            top: None,
            log,
            tensor,
            freeze,
        }
    }

    /// Number of calls recorded.
    #[getter]
    fn count(&self) -> usize {
        self.calls.len()
    }

    /// Position of the innermost open call, `None` outside every call.
    #[getter]
    pub(crate) fn top(&self) -> Option<usize> {
        self.top
    }

    /// Opens a call of the module at position `index`.
    fn enter(&mut self, index: usize) -> PyResult<()> {
        let Some(known) = self.known.get_mut(index) else {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "no module at position {index}"
            )));
        };
        let call_index = known.calls;
        known.calls += 1;
        self.calls.push(Call {
            module: index,
            call_index,
            parent: self.top,
            inputs: None,
            kwargs: None,
            output: None,
            finished: false,
        });
        self.top = Some(self.calls.len() - 1);
        Ok(())
    }

    /// Closes the innermost open call of `module`; `output` is `None` when its forward raised.
    /// `kwargs` are the keyword arguments it received (`None` or empty when there were none).
    #[staticmethod]
    #[pyo3(signature = (recorder, module, inputs, output, kwargs=None))]
    fn leave(
        recorder: &Bound<'_, CallRecorder>,
        module: &Bound<'_, PyAny>,
        inputs: &Bound<'_, PyAny>,
        output: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        // Freezing reads attributes, which may run Python code: no borrow is held meanwhile.
        let (tensor, freeze) = {
            let this = recorder.try_borrow()?;
            if this.open_call_of(module).is_none() {
                return Ok(());
            }
            (
                this.tensor.clone_ref(recorder.py()),
                this.freeze.clone_ref(recorder.py()),
            )
        };
        let py = recorder.py();
        let tensor = tensor.bind(py);
        let frozen_inputs = match inputs.cast::<PyTuple>() {
            Ok(tuple) if tuple.len() == 1 && tuple.get_item(0)?.is_instance(tensor)? => {
                let spec = Bound::new(py, TensorSpec::of(&tuple.get_item(0)?)?)?;
                PyTuple::new(py, [spec])?.into_any()
            }
            _ => freeze.bind(py).call1((inputs,))?,
        };
        let frozen_output = if output.is_instance(tensor)? {
            Bound::new(py, TensorSpec::of(output)?)?.into_any()
        } else {
            freeze.bind(py).call1((output,))?
        };
        let frozen_kwargs = match kwargs {
            Some(kwargs) if !kwargs.is_empty() => Some(freeze.bind(py).call1((kwargs,))?.unbind()),
            _ => None,
        };
        let mut this = recorder.try_borrow_mut()?;
        let Some(position) = this.open_call_of(module) else {
            return Ok(());
        };
        let log = this.log.as_ref().map(|log| log.clone_ref(py));
        let call = &mut this.calls[position];
        call.inputs = Some(frozen_inputs.unbind());
        call.kwargs = frozen_kwargs;
        call.output = Some(frozen_output.unbind());
        call.finished = true;
        let parent = call.parent;
        this.top = parent;
        this.closed.push(position);
        drop(this);
        if let Some(log) = log {
            log.bind(py).append(position)?;
        }
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for known in &self.known {
            visit.call(&known.module)?;
            visit.call(&known.path)?;
        }
        for call in &self.calls {
            visit.call(&call.inputs)?;
            visit.call(&call.kwargs)?;
            visit.call(&call.output)?;
        }
        visit.call(&self.log)?;
        visit.call(&self.tensor)?;
        visit.call(&self.freeze)?;
        Ok(())
    }

    fn __clear__(&mut self) {
        self.known.clear();
        self.calls.clear();
        self.log = None;
    }
}

impl CallRecorder {
    /// The innermost open call of `module`, walking out from the innermost open call.
    fn open_call_of(&self, module: &Bound<'_, PyAny>) -> Option<usize> {
        let mut position = self.top;
        while let Some(current) = position {
            let call = &self.calls[current];
            if self.known[call.module].module.as_ptr() == module.as_ptr() {
                return Some(current);
            }
            position = call.parent;
        }
        None
    }
}

/// A module's `forward` while it is recorded: opens a call, runs the real one, closes it.
///
/// Set as the instance's `forward` for the duration of the analysis. `function` is the real
/// forward: the class's function, called with the module first when `method` is true, or the
/// callable the instance held. `previous` is what the instance held before (restored
/// afterwards) and `__wrapped__` the real forward, so `inspect.signature` sees its parameters.
/// Only calls on the thread that built it are recorded: a call from any other thread (the model
/// run elsewhere while it is analysed) goes straight to the real forward.
#[pyclass(module = "torchscan._core", frozen)]
pub struct ModuleForward {
    recorder: Py<CallRecorder>,
    index: usize,
    /// The recorded module.
    #[pyo3(get)]
    module: Py<PyAny>,
    function: Py<PyAny>,
    method: bool,
    /// What the instance held as `forward` before.
    #[pyo3(get)]
    previous: Py<PyAny>,
    /// The analysing thread.
    owner: std::thread::ThreadId,
}

#[pymethods]
impl ModuleForward {
    #[new]
    fn new(
        recorder: Py<CallRecorder>,
        index: usize,
        module: Py<PyAny>,
        function: Py<PyAny>,
        method: bool,
        previous: Py<PyAny>,
    ) -> Self {
        Self {
            recorder,
            index,
            module,
            function,
            method,
            previous,
            owner: std::thread::current().id(),
        }
    }

    /// The real forward.
    #[getter]
    fn __wrapped__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.method {
            py.import(intern!(py, "types"))?
                .getattr(intern!(py, "MethodType"))?
                .call1((self.function.bind(py), self.module.bind(py)))
        } else {
            Ok(self.function.bind(py).clone())
        }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let recorder = self.recorder.bind(py);
        let module = self.module.bind(py);
        let function = self.function.bind(py);
        let call = || {
            if self.method {
                let mut items = Vec::with_capacity(args.len() + 1);
                items.push(module.clone());
                items.extend(args.iter());
                function.call(PyTuple::new(py, items)?, kwargs)
            } else {
                function.call(args, kwargs)
            }
        };
        if std::thread::current().id() != self.owner {
            return call();
        }
        recorder.try_borrow_mut()?.enter(self.index)?;
        match call() {
            Ok(output) => {
                CallRecorder::leave(recorder, module, args, &output, kwargs)?;
                Ok(output)
            }
            Err(error) => {
                CallRecorder::leave(recorder, module, args, &py.None().into_bound(py), kwargs)?;
                Err(error)
            }
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.recorder)?;
        visit.call(&self.module)?;
        visit.call(&self.function)?;
        visit.call(&self.previous)?;
        Ok(())
    }
}

/// Elements of every shape (an object of exactly `size_type`, `torch.Size`) among `values`,
/// through lists, tuples and dicts of exactly those types: the data an operator's counted call
/// moves, from the shapes logged for it. `None` when a total or a product does not fit in 128
/// bits, or a size is not a non-negative integer; the caller then counts in Python.
pub(crate) fn shape_elements(
    values: &Bound<'_, PyAny>,
    size_type: &Bound<'_, PyAny>,
) -> Option<u128> {
    let mut total: u128 = 0;
    add_shape_elements(values, size_type, &mut total, 0).then_some(total)
}

/// Adds the elements of the shapes among `values` to `total`; false when it cannot.
fn add_shape_elements(
    values: &Bound<'_, PyAny>,
    size_type: &Bound<'_, PyAny>,
    total: &mut u128,
    depth: usize,
) -> bool {
    // Logged values are shallow; anything deeper is left to the Python count.
    if depth > 32 {
        return false;
    }
    let Ok(items) = values.try_iter() else {
        return false;
    };
    for item in items {
        let Ok(item) = item else {
            return false;
        };
        let kind = item.get_type();
        if kind.is(size_type) {
            let Ok(sizes) = item.try_iter() else {
                return false;
            };
            let mut product: u128 = 1;
            for size in sizes {
                let Some(next) = size
                    .ok()
                    .and_then(|size| size.extract::<u128>().ok())
                    .and_then(|size| product.checked_mul(size))
                else {
                    return false;
                };
                product = next;
            }
            let Some(sum) = total.checked_add(product) else {
                return false;
            };
            *total = sum;
        } else if item.is_exact_instance_of::<PyList>() || item.is_exact_instance_of::<PyTuple>() {
            if !add_shape_elements(&item, size_type, total, depth + 1) {
                return false;
            }
        } else if let Ok(dict) = item.cast_exact::<PyDict>()
            && !add_shape_elements(&dict.values().into_any(), size_type, total, depth + 1)
        {
            return false;
        }
    }
    true
}

/// Adds [`TensorSpec`], [`CallRecorder`] and [`ModuleForward`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<TensorSpec>()?;
    module.add_class::<CallRecorder>()?;
    module.add_class::<ModuleForward>()
}
