//! The common path of the analysis's operator dispatch, compiled: no Python frame runs for it.
//!
//! `crawl_module` counts the operators of a forward with a PyTorch dispatch mode. Most calls are
//! "lean" (see `Entry.lean` in `torchscan.opflops.mode`): excluded, uncounted, or counted by a
//! built-in shape formula, with no tensor among their keyword arguments. For those the mode only
//! runs the kernel and logs what the analysis works out after the forward: shapes, identities
//! and the module call that ran it. [`DispatchRecorder`] does exactly that; every other call goes
//! to the general path it was given, which is Python (and shielded from TorchDynamo there).
//!
//! A FLOP counter's recorder may also add up operator bytes (see [`crate::operator_bytes`]) in
//! the same pass: the lean path reads the sizes of each call's tensors here, the general path
//! hands its calls to [`DispatchRecorder::add_bytes`]. An analysed forward's recorder does not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple};

use crate::call_recorder::CallRecorder;
use crate::flop_ledger::{FlopLedger, Ledger};
use crate::operator_bytes::CallBytes;
use crate::operator_record::OperatorRecord;

/// Calls of one entry logged here: the entry, its calls and its uncounted calls.
struct Tally {
    entry: Py<PyAny>,
    calls: u64,
    uncounted: u64,
}

/// The calls of one operator entry that a [`DispatchRecorder`] logged.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct CallTally {
    /// The operator's `Entry` (`torchscan.opflops.mode`).
    pub entry: Py<PyAny>,
    /// Its calls.
    pub calls: u64,
    /// Those that are uncounted.
    pub uncounted: u64,
}

/// The tallies in the order their entries were first seen, and where each entry's is.
#[derive(Default)]
struct Tallies {
    order: Vec<Tally>,
    index: HashMap<usize, usize>,
}

/// Logs the lean operator calls of one analysed forward (`torchscan.crawl.dispatch_recorder`'s dispatch mode).
///
/// Called as the mode's `__torch_dispatch__(func, types, args, kwargs)` through a bound method.
/// A lean call appends an [`OperatorRecord`] to `log` (its `call` is the position of the
/// innermost module call running, see [`CallRecorder`]), which the assembly reads after the
/// forward; anything else is handed to `general`. The calls of each
/// entry logged here are tallied apart, for `tallies()` after the forward.
#[pyclass(module = "torchscan._core", frozen)]
pub struct DispatchRecorder {
    /// The mode's entries: `id(overload)` to its `Entry`.
    entries: Py<PyDict>,
    /// The general path, called as `general(func, types, args, kwargs)`.
    general: Py<PyAny>,
    /// Where an operator ran: the module call, or the module paths active.
    scope: Scope,
    /// A counter's running totals (`None` for an analysed forward, whose assembly reads the
    /// whole log once the forward is over).
    ledger: Option<Mutex<Ledger>>,
    /// The forward's log.
    log: Py<PyList>,
    /// `torch.Tensor`.
    tensor: Py<PyAny>,
    /// `torch.nn.Parameter`: like `torch.Tensor`, it takes no part in `__torch_function__`.
    parameter: Py<PyAny>,
    /// `torch._C._dispatch_call_boxed(handle, *args, **kwargs)`: runs an operator through the
    /// dispatcher straight away, without the argument checks of an overload's `_op`.
    call_boxed: Py<PyAny>,
    /// `torch._C._len_torch_function_stack()`: an entry's `direct` binding is called only while
    /// no `__torch_function__` mode is active, which it would otherwise hand the call to.
    function_modes: Py<PyAny>,
    /// Outcome codes of `torchscan.opflops.mode`: counted, deferred and uncounted.
    counted: i64,
    deferred: i64,
    uncounted: i64,
    /// Whether the ledger adds up operator bytes (a counter's only, when asked).
    bytes: bool,
    /// Calls logged here, in the order their entries were first seen.
    tallies: Mutex<Tallies>,
    /// What each operator seen so far needs, by `id(overload)`: `None` for the general path.
    /// Entries do not change once made, so theirs is read once per forward.
    seen: Mutex<HashMap<usize, Option<Arc<Lean>>>>,
}

/// Where the operators of a dispatch ran, as its records say.
enum Scope {
    /// An analysed forward: the innermost module call running (the recorder's `top`).
    Calls(Py<CallRecorder>),
    /// A counter tracking modules with hooks: the live list of the active module paths.
    Paths(Py<PyList>),
    /// A counter given a callable returning the active module paths.
    Callable(Py<PyAny>),
}

/// How many records a counter's log holds before its ledger reads them.
const LEDGER_BATCH: usize = 4096;

/// The parts of a lean entry the recorder uses on every call.
struct Lean {
    entry: Py<PyAny>,
    code: i64,
    handle: Option<Py<PyAny>>,
    direct: Option<Py<PyAny>>,
    tensor_args: Vec<usize>,
    op: Py<PyAny>,
    /// Whether its calls' bytes are counted: the recorder counts bytes and the operator reads
    /// or writes tensor elements (`Entry.moves_data`).
    bytes: bool,
}

impl Lean {
    /// The lean parts of `entry`, or `None` when its calls take the general path; `bytes`:
    /// whether the recorder counts operator bytes.
    fn of(entry: &Bound<'_, PyAny>, bytes: bool) -> PyResult<Option<Self>> {
        let py = entry.py();
        if !entry.getattr(intern!(py, "lean"))?.is_truthy()? {
            return Ok(None);
        }
        let optional = |name: &Bound<'_, pyo3::types::PyString>| -> PyResult<Option<Py<PyAny>>> {
            let value = entry.getattr(name)?;
            Ok((!value.is_none()).then(|| value.unbind()))
        };
        Ok(Some(Self {
            entry: entry.clone().unbind(),
            code: entry.getattr(intern!(py, "code"))?.extract()?,
            handle: optional(intern!(py, "handle"))?,
            direct: optional(intern!(py, "direct"))?,
            tensor_args: entry.getattr(intern!(py, "tensor_args"))?.extract()?,
            op: entry.getattr(intern!(py, "op"))?.unbind(),
            bytes: bytes && entry.getattr(intern!(py, "moves_data"))?.is_truthy()?,
        }))
    }
}

#[pymethods]
impl DispatchRecorder {
    #[new]
    #[pyo3(signature = (
        entries,
        general,
        scope,
        log,
        tensor,
        parameter,
        call_boxed,
        function_modes,
        counted,
        deferred,
        uncounted,
        *,
        operator_bytes = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        entries: Py<PyDict>,
        general: Py<PyAny>,
        scope: &Bound<'_, PyAny>,
        log: Py<PyList>,
        tensor: Py<PyAny>,
        parameter: Py<PyAny>,
        call_boxed: Py<PyAny>,
        function_modes: Py<PyAny>,
        counted: i64,
        deferred: i64,
        uncounted: i64,
        operator_bytes: bool,
    ) -> PyResult<Self> {
        let (scope, ledger) = if let Ok(recorder) = scope.cast::<CallRecorder>() {
            (Scope::Calls(recorder.clone().unbind()), None)
        } else {
            let scope = if let Ok(list) = scope.cast::<PyList>() {
                Scope::Paths(list.clone().unbind())
            } else if scope.is_callable() {
                Scope::Callable(scope.clone().unbind())
            } else {
                return Err(PyTypeError::new_err(
                    "scope must be a CallRecorder, a list of module paths or a callable",
                ));
            };
            let native_id = py
                .import(intern!(py, "threading"))?
                .getattr(intern!(py, "get_native_id"))?
                .unbind();
            (scope, Some(Mutex::new(Ledger::new(native_id))))
        };
        let bytes = operator_bytes && ledger.is_some();
        Ok(Self {
            entries,
            general,
            scope,
            ledger,
            log,
            tensor,
            parameter,
            call_boxed,
            function_modes,
            counted,
            deferred,
            uncounted,
            bytes,
            tallies: Mutex::new(Tallies::default()),
            seen: Mutex::new(HashMap::new()),
        })
    }

    /// A counter's general path notes a result here: the devices and floating-point dtypes of
    /// its tensors; returns the first floating-point dtype among them, or `None`.
    fn observe<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = value.py();
        self.ledger(py)?.observe(value, self.tensor.bind(py))
    }

    /// A counter's general path logs an operator here (its ledger reads the log in batches).
    fn append(&self, py: Python<'_>, record: &Bound<'_, OperatorRecord>) -> PyResult<()> {
        let log = self.log.bind(py);
        log.append(record)?;
        if log.len() >= LEDGER_BATCH {
            self.read_log(py)?;
        }
        Ok(())
    }

    /// A counter's general path adds the operator bytes of one call here: those of the distinct
    /// tensors among `args`, `kwargs` and `out` (see [`crate::operator_bytes`]). Returns them.
    #[pyo3(signature = (args, kwargs, out))]
    fn add_bytes(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyAny>>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<u128> {
        let tensor = self.tensor.bind(py);
        let mut call = CallBytes::default();
        call.value(args, tensor)?;
        if let Some(kwargs) = kwargs {
            call.value(kwargs, tensor)?;
        }
        call.value(out, tensor)?;
        self.ledger(py)?.add_bytes(&call);
        Ok(call.bytes)
    }

    /// What a counter's operators came to since the last time (the log is read first).
    #[pyo3(name = "ledger")]
    fn ledger_totals(&self, py: Python<'_>) -> PyResult<FlopLedger> {
        self.read_log(py)?;
        self.ledger(py)?.take(py)
    }

    /// The calls logged here since the last time, per entry, in the order entries were first
    /// seen.
    fn tallies(&self, py: Python<'_>) -> PyResult<Vec<CallTally>> {
        let mut tallies = self
            .tallies
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the operator tallies are poisoned"))?;
        let drained = std::mem::take(&mut *tallies);
        drop(tallies);
        Ok(drained
            .order
            .into_iter()
            .map(|tally| CallTally {
                entry: tally.entry.clone_ref(py),
                calls: tally.calls,
                uncounted: tally.uncounted,
            })
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
        let Some(lean) = self.lean(py, func)? else {
            return general();
        };
        let entry = lean.entry.bind(py).clone();
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
        let out = self.run(py, &lean, positional, keywords.as_ref())?;

        let mut bytes = lean.bytes.then(CallBytes::default);
        let mut code = lean.code;
        self.tally(&entry, code == self.uncounted)?;
        let mut inputs: Vec<usize> = Vec::new();
        let shaped_args: Bound<'py, PyAny>;
        let shaped_out: Bound<'py, PyAny>;
        let mut outputs: Vec<(usize, usize)> = Vec::new();
        let counted = code == self.counted;
        if counted {
            // Shapes are taken after the call, as formulas see them.
            code = self.deferred;
            let shaped = PyList::empty(py);
            for value in positional.iter() {
                if value.is_instance(tensor)? {
                    shaped.append(value.getattr(intern!(py, "shape"))?)?;
                    inputs.push(identity(&value));
                    if let Some(bytes) = bytes.as_mut() {
                        bytes.tensor(&value)?;
                    }
                } else {
                    shaped.append(value)?;
                }
            }
            shaped_args = shaped.into_any();
            if out.is_instance(tensor)? {
                shaped_out = out.getattr(intern!(py, "shape"))?;
                outputs.push((identity(&out), shaped_out.len()?));
            } else {
                shaped_out = shapes_of(py, &out, tensor)?;
                collect_ids(py, &out, tensor, &mut outputs)?;
            }
        } else {
            // Excluded or uncounted: no formula and no DMAs; identities (and the results'
            // numbers of dimensions) are all the receptive fields need.
            for value in positional.iter() {
                if value.is_instance(tensor)? {
                    inputs.push(identity(&value));
                    if let Some(bytes) = bytes.as_mut() {
                        bytes.tensor(&value)?;
                    }
                }
            }
            shaped_args = py.None().into_bound(py);
            shaped_out = py.None().into_bound(py);
            collect_ids(py, &out, tensor, &mut outputs)?;
        }
        if let Some(bytes) = bytes.as_mut() {
            bytes.value(&out, tensor)?;
        }
        let first_inputs = match positional.get_item(0) {
            Ok(value) if value.is_instance(tensor)? => 1,
            _ => 0,
        };
        let (call, paths, dtype) = match &self.scope {
            Scope::Calls(recorder) => (recorder.bind(py).try_borrow()?.top(), py.None(), py.None()),
            scope => {
                // The user's callable runs before the ledger is locked.
                let called = match scope {
                    Scope::Callable(active) => {
                        let found = active.bind(py).call0()?;
                        let found: Vec<Bound<'py, PyAny>> =
                            found.try_iter()?.collect::<PyResult<_>>()?;
                        Some(PyTuple::new(py, found)?.into_any().unbind())
                    }
                    _ => None,
                };
                let mut ledger = self.ledger(py)?;
                ledger.note_thread(py)?;
                if let Some(bytes) = &bytes {
                    ledger.add_bytes(bytes);
                }
                let paths = match (scope, called) {
                    (_, Some(paths)) => paths,
                    (Scope::Paths(list), None) => ledger.snapshot(list.bind(py))?,
                    _ => py.None(),
                };
                let dtype = ledger
                    .observe(&out, tensor)?
                    .map_or_else(|| py.None(), Bound::unbind);
                (None, paths, dtype)
            }
        };
        let record = OperatorRecord {
            entry: entry.unbind(),
            call,
            paths,
            dtype,
            outcome: code,
            flops: 0,
            args: shaped_args.unbind(),
            kwargs: match keywords {
                Some(dict) if counted => dict.into_any().unbind(),
                _ => py.None(),
            },
            out: shaped_out.unbind(),
            inputs,
            first_inputs,
            outputs,
        };
        let record = Bound::new(py, record)?;
        if self.ledger.is_some() {
            self.append(py, &record)?;
            return Ok(out);
        }
        self.log.bind(py).append(record)?;
        Ok(out)
    }
}

impl DispatchRecorder {
    /// Runs the operator of a lean call. When every tensor argument is a plain tensor or a
    /// parameter (neither takes part in `__torch_function__`) and each position the schema
    /// types as a tensor holds one (or `None`), the call goes to the entry's `direct` binding
    /// (while no `__torch_function__` mode is active) or to the dispatcher straight away
    /// through its `handle`; otherwise through its `op`, which also takes numbers for tensors.
    fn run<'py>(
        &self,
        py: Python<'py>,
        lean: &Lean,
        positional: &Bound<'py, PyTuple>,
        keywords: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(handle) = &lean.handle
            && self.runs_boxed(py, lean, positional)?
        {
            if let Some(direct) = &lean.direct
                && self.function_modes.bind(py).call0()?.extract::<usize>()? == 0
            {
                return direct.bind(py).call(positional, keywords);
            }
            let mut items = Vec::with_capacity(positional.len() + 1);
            items.push(handle.bind(py).clone());
            items.extend(positional.iter());
            return self
                .call_boxed
                .bind(py)
                .call(PyTuple::new(py, items)?, keywords);
        }
        lean.op.bind(py).call(positional, keywords)
    }

    /// Whether the arguments of a lean call can be given to the dispatcher as they are.
    fn runs_boxed<'py>(
        &self,
        py: Python<'py>,
        lean: &Lean,
        positional: &Bound<'py, PyTuple>,
    ) -> PyResult<bool> {
        let tensor = self.tensor.bind(py);
        let plain = [tensor.as_ptr(), self.parameter.bind(py).as_ptr()];
        for value in positional.iter() {
            if !plain.contains(&value.get_type().as_ptr()) && value.is_instance(tensor)? {
                return Ok(false); // a tensor subclass: the overload's own checks apply
            }
        }
        for &index in &lean.tensor_args {
            if let Ok(value) = positional.get_item(index)
                && !value.is_none()
                && !plain.contains(&value.get_type().as_ptr())
            {
                return Ok(false); // a number where the schema wants a tensor
            }
        }
        Ok(true)
    }

    /// The lean parts of the entry of `func`, read once; `None` for the general path (also
    /// while `func` has no entry yet: the general path makes it on its first call).
    fn lean(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Lean>>> {
        let key = func.as_ptr() as usize;
        if let Some(known) = self.seen()?.get(&key) {
            return Ok(known.clone());
        }
        let Some(entry) = self.entries.bind(py).get_item(key)? else {
            return Ok(None);
        };
        let lean = Lean::of(&entry, self.bytes)?.map(Arc::new);
        self.seen()?.insert(key, lean.clone());
        Ok(lean)
    }

    /// A counter's ledger (an analysed forward has none).
    ///
    /// A thread waiting for it detaches from the interpreter meanwhile: the holder may run
    /// Python code (a formula) that lets another thread run, which may then wait here.
    fn ledger(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, Ledger>> {
        self.ledger
            .as_ref()
            .ok_or_else(|| PyTypeError::new_err("an analysed forward's recorder keeps no ledger"))?
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("the operator ledger is poisoned"))
    }

    /// Reads a counter's log into its ledger.
    fn read_log(&self, py: Python<'_>) -> PyResult<()> {
        self.ledger(py)?.read(
            self.log.bind(py),
            self.counted,
            self.deferred,
            self.uncounted,
        )
    }

    fn seen(&self) -> PyResult<std::sync::MutexGuard<'_, HashMap<usize, Option<Arc<Lean>>>>> {
        self.seen
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the operator cache is poisoned"))
    }

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
fn identity(value: &Bound<'_, PyAny>) -> usize {
    value.as_ptr() as usize
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

/// Appends `(id(t), t.dim())` of the tensors of a result to `found`, in order, through tuples,
/// lists and dicts.
fn collect_ids<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    tensor: &Bound<'py, PyAny>,
    found: &mut Vec<(usize, usize)>,
) -> PyResult<()> {
    if value.is_instance(tensor)? {
        let dims: usize = value.call_method0(intern!(py, "dim"))?.extract()?;
        found.push((identity(value), dims));
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
    module.add_class::<CallTally>()?;
    module.add_class::<DispatchRecorder>()
}
