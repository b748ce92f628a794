//! The common path of the analysis's operator dispatch, compiled: no Python frame runs for it.
//!
//! `crawl_module` counts the operators of a forward with a PyTorch dispatch mode. Most calls are
//! "lean" (see `Entry.lean` in `torchscan.opflops.mode`): excluded, uncounted, or counted by a
//! built-in shape formula, with no tensor among their keyword arguments. For those the mode only
//! runs the kernel and logs what the analysis works out after the forward: shapes, identities
//! and the module call that ran it. [`DispatchRecorder`] does exactly that; every other call goes
//! to the general path it was given, which is Python (and shielded from TorchDynamo there).

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple};
use pyo3::{IntoPyObjectExt, intern};

/// Calls of one entry logged here: the entry, its calls and its uncounted calls.
struct Tally {
    entry: Py<PyAny>,
    calls: u64,
    uncounted: u64,
}

/// The tallies in the order their entries were first seen, and where each entry's is.
#[derive(Default)]
struct Tallies {
    order: Vec<Tally>,
    index: HashMap<usize, usize>,
}

/// Logs the lean operator calls of one analysed forward (`torchscan.crawl`'s dispatch mode).
///
/// Called as the mode's `__torch_dispatch__(func, types, args, kwargs)` through a bound method.
/// A lean call appends to `log` the list
/// `[entry, recorder.top, outcome, 0, shaped_args, kwargs, input_ids, first, shaped_out, out_ids]`
/// that the Python side reads after the forward; anything else is handed to `general`. The calls
/// of each entry logged here are tallied apart, for `tallies()` after the forward.
#[pyclass(module = "torchscan._core", frozen)]
pub struct DispatchRecorder {
    /// The mode's entries: `id(overload)` to its `Entry`.
    entries: Py<PyDict>,
    /// The general path, called as `general(func, types, args, kwargs)`.
    general: Py<PyAny>,
    /// The module-call recorder; `recorder.top` is the innermost call running.
    recorder: Py<PyAny>,
    /// The forward's log.
    log: Py<PyList>,
    /// `torch.Tensor`.
    tensor: Py<PyAny>,
    /// Outcome codes of `torchscan.opflops.mode`: counted, deferred and uncounted.
    counted: i64,
    deferred: i64,
    uncounted: i64,
    /// Calls logged here, in the order their entries were first seen.
    tallies: Mutex<Tallies>,
}

#[pymethods]
impl DispatchRecorder {
    #[new]
    #[pyo3(signature = (entries, general, recorder, log, tensor, counted, deferred, uncounted))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        entries: Py<PyDict>,
        general: Py<PyAny>,
        recorder: Py<PyAny>,
        log: Py<PyList>,
        tensor: Py<PyAny>,
        counted: i64,
        deferred: i64,
        uncounted: i64,
    ) -> Self {
        Self {
            entries,
            general,
            recorder,
            log,
            tensor,
            counted,
            deferred,
            uncounted,
            tallies: Mutex::new(Tallies::default()),
        }
    }

    /// `[(entry, calls, uncounted calls), ...]` of the calls logged here since the last time,
    /// in the order their entries were first seen.
    fn tallies(&self, py: Python<'_>) -> PyResult<Vec<(Py<PyAny>, u64, u64)>> {
        let mut tallies = self
            .tallies
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the operator tallies are poisoned"))?;
        let drained = std::mem::take(&mut *tallies);
        drop(tallies);
        Ok(drained
            .order
            .into_iter()
            .map(|tally| (tally.entry.clone_ref(py), tally.calls, tally.uncounted))
            .collect())
    }

    /// Runs one operator call: the lean path here, anything else through `general`.
    #[pyo3(signature = (_mode, func, types, args=None, kwargs=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        _mode: &Bound<'py, PyAny>,
        func: &Bound<'py, PyAny>,
        types: &Bound<'py, PyAny>,
        args: Option<&Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let empty = PyTuple::empty(py);
        let args = match args {
            Some(value) => value.clone(),
            None => empty.into_any(),
        };
        let kwargs = kwargs.filter(|value| !value.is_none()).cloned();
        let general = || -> PyResult<Bound<'py, PyAny>> {
            let kw = match &kwargs {
                Some(value) => value.clone(),
                None => py.None().into_bound(py),
            };
            self.general.bind(py).call1((func, types, &args, kw))
        };
        let key = (func.as_ptr() as usize).into_pyobject(py)?;
        let Some(entry) = self.entries.bind(py).get_item(key)? else {
            return general(); // resolved there, on its first call
        };
        if !entry.getattr(intern!(py, "lean"))?.is_truthy()? {
            return general();
        }
        let Ok(positional) = args.cast::<PyTuple>() else {
            return general();
        };
        let tensor = self.tensor.bind(py);
        let keywords = match &kwargs {
            Some(value) => match value.cast::<PyDict>() {
                Ok(dict) if dict.is_empty() => None,
                Ok(dict) => {
                    for (_, value) in dict.iter() {
                        if value.is_instance(tensor)?
                            || value.is_instance_of::<PyList>()
                            || value.is_instance_of::<PyTuple>()
                            || value.is_instance_of::<PyDict>()
                        {
                            return general();
                        }
                    }
                    Some(dict.clone())
                }
                Err(_) => return general(),
            },
            None => None,
        };
        let op = entry.getattr(intern!(py, "op"))?;
        let out = op.call(positional, keywords.as_ref())?;

        let mut code: i64 = entry.getattr(intern!(py, "code"))?.extract()?;
        self.tally(&entry, code == self.uncounted)?;
        let ids = PyList::empty(py);
        let shaped_args: Bound<'py, PyAny>;
        let shaped_out: Bound<'py, PyAny>;
        let out_ids: Bound<'py, PyAny>;
        if code == self.counted {
            // Shapes are taken after the call, as formulas see them.
            code = self.deferred;
            let shaped = PyList::empty(py);
            for value in positional.iter() {
                if value.is_instance(tensor)? {
                    shaped.append(value.getattr(intern!(py, "shape"))?)?;
                    ids.append(identity(py, &value)?)?;
                } else {
                    shaped.append(value)?;
                }
            }
            shaped_args = shaped.into_any();
            if out.is_instance(tensor)? {
                shaped_out = out.getattr(intern!(py, "shape"))?;
                out_ids = identity(py, &out)?;
            } else {
                shaped_out = shapes_of(py, &out, tensor)?;
                out_ids = tensor_ids(py, &out, tensor)?;
            }
        } else {
            // Excluded or uncounted: no formula and no DMAs; identities (and the result's
            // number of dimensions) are all the receptive fields need.
            for value in positional.iter() {
                if value.is_instance(tensor)? {
                    ids.append(identity(py, &value)?)?;
                }
            }
            shaped_args = py.None().into_bound(py);
            if out.is_instance(tensor)? {
                shaped_out = out.call_method0(intern!(py, "dim"))?;
                out_ids = identity(py, &out)?;
            } else {
                shaped_out = py.None().into_bound(py);
                out_ids = tensor_ids(py, &out, tensor)?;
            }
        }
        let first = match positional.get_item(0) {
            Ok(value) if value.is_instance(tensor)? => 1_i64,
            _ => 0_i64,
        };
        let top = self.recorder.bind(py).getattr(intern!(py, "top"))?;
        let keywords_logged = match keywords {
            Some(dict) => dict.into_any(),
            None => py.None().into_bound(py),
        };
        let record = PyList::new(
            py,
            [
                entry,
                top,
                code.into_bound_py_any(py)?,
                0_i64.into_bound_py_any(py)?,
                shaped_args,
                keywords_logged,
                ids.into_any(),
                first.into_bound_py_any(py)?,
                shaped_out,
                out_ids,
            ],
        )?;
        self.log.bind(py).append(record)?;
        Ok(out)
    }
}

impl DispatchRecorder {
    /// Counts one call of `entry` (and one uncounted call when `uncounted`).
    fn tally(&self, entry: &Bound<'_, PyAny>, uncounted: bool) -> PyResult<()> {
        let mut tallies = self
            .tallies
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the operator tallies are poisoned"))?;
        let tallies = &mut *tallies;
        let position = *tallies
            .index
            .entry(entry.as_ptr() as usize)
            .or_insert_with(|| {
                tallies.order.push(Tally {
                    entry: entry.clone().unbind(),
                    calls: 0,
                    uncounted: 0,
                });
                tallies.order.len() - 1
            });
        let tally = &mut tallies.order[position];
        tally.calls += 1;
        if uncounted {
            tally.uncounted += 1;
        }
        Ok(())
    }
}

/// `id(value)`: the address CPython identifies an object by.
fn identity<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    (value.as_ptr() as usize).into_bound_py_any(py)
}

/// A value as shape formulas take it: every tensor replaced by its shape, through tuples, lists
/// and dicts (named tuples become plain tuples; a list or tuple of plain ints is kept as is).
fn shapes_of<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    tensor: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if value.is_instance(tensor)? {
        return value.getattr(intern!(py, "shape"));
    }
    let exact = value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>();
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'py, PyAny>> = value.try_iter()?.collect::<PyResult<_>>()?;
        if exact
            && items
                .iter()
                .all(|item| item.is_exact_instance_of::<PyInt>())
        {
            return Ok(value.clone()); // sizes, strides, paddings: nothing to replace
        }
        let mut shaped = Vec::with_capacity(items.len());
        for item in &items {
            if item.is_exact_instance_of::<PyInt>() {
                shaped.push(item.clone());
            } else {
                shaped.push(shapes_of(py, item, tensor)?);
            }
        }
        return if value.is_instance_of::<PyList>() {
            Ok(PyList::new(py, shaped)?.into_any())
        } else {
            Ok(PyTuple::new(py, shaped)?.into_any())
        };
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let shaped = PyDict::new(py);
        for (key, item) in dict.iter() {
            shaped.set_item(key, shapes_of(py, &item, tensor)?)?;
        }
        return Ok(shaped.into_any());
    }
    Ok(value.clone())
}

/// `[(id(t), t.dim()), ...]` for the tensors of a result, in order, through tuples, lists and
/// dicts.
fn tensor_ids<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    tensor: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let found = PyList::empty(py);
    collect_ids(py, value, tensor, &found)?;
    Ok(found.into_any())
}

fn collect_ids<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    tensor: &Bound<'py, PyAny>,
    found: &Bound<'py, PyList>,
) -> PyResult<()> {
    if value.is_instance(tensor)? {
        let dims = value.call_method0(intern!(py, "dim"))?;
        found.append(PyTuple::new(py, [identity(py, value)?, dims])?)?;
    } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        for item in value.try_iter()? {
            collect_ids(py, &item?, tensor, found)?;
        }
    } else if let Ok(dict) = value.cast::<PyDict>() {
        for (_, item) in dict.iter() {
            collect_ids(py, &item, tensor, found)?;
        }
    }
    Ok(())
}

/// Adds [`DispatchRecorder`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<DispatchRecorder>()
}

/// What every recorded `forward` of one analysis shares: the recorder's state and the Python
/// types and functions a call is recorded with.
#[pyclass(module = "torchscan._core", frozen)]
pub struct CallLog {
    /// The Python recorder: `top` is the innermost call open.
    recorder: Py<PyAny>,
    /// Every call, in the order they opened.
    calls: Py<PyList>,
    /// Calls in the order they closed.
    closed: Py<PyList>,
    /// The forward's log (full analysis only): closed calls are appended to it.
    log: Option<Py<PyList>>,
    /// Calls so far by module path.
    counts: Py<PyDict>,
    /// `torchscan.crawl._Call`.
    call_type: Py<PyAny>,
    /// `torchscan._values.TensorSpec`.
    spec_type: Py<PyAny>,
    /// `torchscan._values.freeze`, for anything but tensors and tuples of tensors.
    freeze: Py<PyAny>,
    /// `torch.Tensor`.
    tensor: Py<PyAny>,
    /// The estimates a call has until they are computed.
    no_estimates: Py<PyAny>,
}

#[pymethods]
impl CallLog {
    #[new]
    #[pyo3(signature = (recorder, calls, closed, log, counts, call_type, spec_type, freeze, tensor, no_estimates))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        recorder: Py<PyAny>,
        calls: Py<PyList>,
        closed: Py<PyList>,
        log: Option<Py<PyList>>,
        counts: Py<PyDict>,
        call_type: Py<PyAny>,
        spec_type: Py<PyAny>,
        freeze: Py<PyAny>,
        tensor: Py<PyAny>,
        no_estimates: Py<PyAny>,
    ) -> Self {
        Self {
            recorder,
            calls,
            closed,
            log,
            counts,
            call_type,
            spec_type,
            freeze,
            tensor,
            no_estimates,
        }
    }
}

/// A module's `forward` while an analysis records it: opens a call, runs the real forward,
/// closes the call with its inputs and output frozen (the same as the recorder's `_open` and
/// `_post`, which the hook-based recording uses).
///
/// `__wrapped__` is the real forward, so `inspect.signature` sees its parameters.
#[pyclass(module = "torchscan._core", frozen)]
pub struct ModuleForward {
    #[pyo3(get, name = "__wrapped__")]
    inner: Py<PyAny>,
    module: Py<PyAny>,
    path: Py<PyAny>,
    depth: i64,
    shared: Py<CallLog>,
}

#[pymethods]
impl ModuleForward {
    #[new]
    fn new(
        inner: Py<PyAny>,
        module: Py<PyAny>,
        path: Py<PyAny>,
        depth: i64,
        shared: Py<CallLog>,
    ) -> Self {
        Self {
            inner,
            module,
            path,
            depth,
            shared,
        }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let shared = self.shared.get();
        self.open(py, shared)?;
        match self.inner.bind(py).call(args, kwargs) {
            Ok(output) => {
                self.close(py, shared, args, &output)?;
                Ok(output)
            }
            Err(error) => {
                // The stack stays consistent when forward raised.
                self.close(py, shared, args, &py.None().into_bound(py))?;
                Err(error)
            }
        }
    }
}

impl ModuleForward {
    fn open(&self, py: Python<'_>, shared: &CallLog) -> PyResult<()> {
        let recorder = shared.recorder.bind(py);
        let counts = shared.counts.bind(py);
        let path = self.path.bind(py);
        let index: i64 = match counts.get_item(path)? {
            Some(value) => value.extract()?,
            None => 0,
        };
        counts.set_item(path, index + 1)?;
        let parent = recorder.getattr(intern!(py, "top"))?;
        let level: i64 = if parent.is_none() {
            0
        } else {
            parent.getattr(intern!(py, "level"))?.extract::<i64>()? + 1
        };
        let call_type = shared.call_type.bind(py);
        let call = call_type.call_method1(intern!(py, "__new__"), (call_type,))?;
        let none = py.None();
        call.setattr(intern!(py, "path"), path)?;
        call.setattr(intern!(py, "call_index"), index)?;
        call.setattr(intern!(py, "depth"), self.depth)?;
        call.setattr(intern!(py, "module"), self.module.bind(py))?;
        call.setattr(intern!(py, "parent"), &parent)?;
        call.setattr(intern!(py, "level"), level)?;
        // Most calls have no children: a list is made for the first one.
        call.setattr(intern!(py, "children"), PyTuple::empty(py))?;
        call.setattr(intern!(py, "inputs"), PyTuple::empty(py))?;
        call.setattr(intern!(py, "output"), &none)?;
        call.setattr(intern!(py, "finished"), false)?;
        call.setattr(intern!(py, "input_metas"), &none)?;
        call.setattr(intern!(py, "output_meta"), &none)?;
        call.setattr(intern!(py, "estimates"), shared.no_estimates.bind(py))?;
        call.setattr(intern!(py, "receptive_field"), &none)?;
        call.setattr(intern!(py, "own_flops"), 0_i64)?;
        call.setattr(intern!(py, "own_dmas"), 0_i64)?;
        call.setattr(intern!(py, "own_uncounted"), &none)?;
        call.setattr(intern!(py, "first_op"), -1_i64)?;
        if !parent.is_none() {
            let siblings = parent.getattr(intern!(py, "children"))?;
            match siblings.cast::<PyList>() {
                Ok(list) => list.append(&call)?,
                Err(_) => parent.setattr(intern!(py, "children"), PyList::new(py, [&call])?)?,
            }
        }
        shared.calls.bind(py).append(&call)?;
        recorder.setattr(intern!(py, "top"), call)
    }

    fn close<'py>(
        &self,
        py: Python<'py>,
        shared: &CallLog,
        args: &Bound<'py, PyTuple>,
        output: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let recorder = shared.recorder.bind(py);
        let module = self.module.bind(py);
        let mut call = recorder.getattr(intern!(py, "top"))?;
        while !call.is_none() && !call.getattr(intern!(py, "module"))?.is(module) {
            call = call.getattr(intern!(py, "parent"))?;
        }
        if call.is_none() {
            return Ok(());
        }
        recorder.setattr(intern!(py, "top"), call.getattr(intern!(py, "parent"))?)?;
        call.setattr(intern!(py, "inputs"), freeze(py, shared, args.as_any())?)?;
        call.setattr(intern!(py, "output"), freeze(py, shared, output)?)?;
        call.setattr(intern!(py, "finished"), true)?;
        shared.closed.bind(py).append(&call)?;
        if let Some(log) = &shared.log {
            log.bind(py).append(&call)?;
        }
        Ok(())
    }
}

/// `_values.freeze(value)`: tensors and tuples of tensors here, anything else in Python.
fn freeze<'py>(
    py: Python<'py>,
    shared: &CallLog,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let tensor = shared.tensor.bind(py);
    if value.is_instance(tensor)? {
        return spec(py, shared, value);
    }
    if let Ok(items) = value.cast_exact::<PyTuple>() {
        let mut specs = Vec::with_capacity(items.len());
        for item in items.iter() {
            if !item.is_instance(tensor)? {
                return shared.freeze.bind(py).call1((value,));
            }
            specs.push(spec(py, shared, &item)?);
        }
        return Ok(PyTuple::new(py, specs)?.into_any());
    }
    shared.freeze.bind(py).call1((value,))
}

/// `TensorSpec(tensor)`, built without running Python code.
fn spec<'py>(
    py: Python<'py>,
    shared: &CallLog,
    tensor: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let spec_type = shared.spec_type.bind(py);
    let spec = spec_type.call_method1(intern!(py, "__new__"), (spec_type,))?;
    spec.setattr(intern!(py, "shape"), tensor.getattr(intern!(py, "shape"))?)?;
    spec.setattr(intern!(py, "dtype"), tensor.getattr(intern!(py, "dtype"))?)?;
    spec.setattr(
        intern!(py, "device"),
        tensor.getattr(intern!(py, "device"))?,
    )?;
    spec.setattr(
        intern!(py, "requires_grad"),
        tensor.getattr(intern!(py, "requires_grad"))?,
    )?;
    spec.setattr(intern!(py, "ident"), identity(py, tensor)?)?;
    Ok(spec)
}

/// Adds [`CallLog`] and [`ModuleForward`] to the module.
pub fn register_calls(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<CallLog>()?;
    module.add_class::<ModuleForward>()
}
