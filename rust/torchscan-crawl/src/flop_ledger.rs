//! What the operators of a counted workload came to: FLOPs per operator entry, per module path
//! and per dtype, and the devices, dtypes and threads they ran on.
//!
//! `measure_flops` and `OperatorFlopCounter` count through the same compiled dispatch as
//! `crawl_module` (see [`crate::dispatch_recorder`]): the common calls are logged as
//! [`OperatorRecord`]s with the module paths active and the dtype they computed in, and a
//! [`Ledger`] reads that log in batches while the workload runs (so a long workload keeps a
//! bounded log), applying the deferred shape formulas ([`apply_shape_formula`], which the
//! analysis's assembly applies too) and attributing every operator to its module paths. The
//! counter reads the totals once its dispatch mode exits ([`FlopLedger`]). A counter that adds
//! up operator bytes (see [`crate::operator_bytes`]) adds each call's to the ledger as it runs.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::thread::ThreadId;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use crate::operator_bytes::CallBytes;
use crate::operator_record::OperatorRecord;

/// What the deferred shape formulas of one operator entry came to, for the counter's tallies.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct FormulaTally {
    /// The operator's `Entry` (`torchscan.opflops.mode`).
    pub entry: Py<PyAny>,
    /// Calls its formula counted.
    pub counted: u64,
    /// The FLOPs of those calls.
    pub flops: u128,
    /// Calls whose formula failed (counted as the mode counts a failing formula).
    pub uncounted: u64,
    /// The first three failures, as `"TypeName: message"`.
    pub failures: Vec<String>,
}

/// What the deferred formulas of one operator entry came to so far.
pub(crate) struct Tally {
    pub(crate) entry: Py<PyAny>,
    pub(crate) counted: u64,
    pub(crate) flops: u128,
    pub(crate) uncounted: u64,
    pub(crate) failures: Vec<String>,
}

impl Tally {
    /// An empty tally of `entry`.
    pub(crate) fn new(entry: &Bound<'_, PyAny>) -> Self {
        Self {
            entry: entry.clone().unbind(),
            counted: 0,
            flops: 0,
            uncounted: 0,
            failures: Vec::new(),
        }
    }

    /// Applies `entry.on_shapes(args, kwargs, out)` to one logged call and tallies it: its
    /// FLOPs, or `None` when the formula failed (counted as the mode counts a failing formula:
    /// uncounted, its first three failures kept).
    pub(crate) fn apply<'py>(
        &mut self,
        args: &Bound<'py, PyAny>,
        kwargs: &Bound<'py, PyAny>,
        out: &Bound<'py, PyAny>,
    ) -> PyResult<Option<u128>> {
        let py = args.py();
        let keywords = if kwargs.is_truthy()? {
            kwargs.clone()
        } else {
            PyDict::new(py).into_any()
        };
        let formula = self.entry.bind(py).getattr(intern!(py, "on_shapes"))?;
        match formula
            .call1((args, keywords, out))
            .and_then(|value| py.get_type::<PyInt>().call1((value,)))
            .and_then(|value| value.extract::<u128>())
        {
            Ok(value) => {
                self.counted += 1;
                self.flops = self.flops.saturating_add(value);
                Ok(Some(value))
            }
            Err(error) => {
                self.uncounted += 1;
                if self.failures.len() < 3 {
                    let value = error.value(py);
                    self.failures
                        .push(format!("{}: {}", value.get_type().name()?, value.str()?));
                }
                Ok(None)
            }
        }
    }

    /// The tally as Python reads it.
    pub(crate) fn into_py(self, py: Python<'_>) -> PyResult<Py<FormulaTally>> {
        Py::new(
            py,
            FormulaTally {
                entry: self.entry,
                counted: self.counted,
                flops: self.flops,
                uncounted: self.uncounted,
                failures: self.failures,
            },
        )
    }
}

/// The tallies of entries in the order they were first met, and where each entry's is.
#[derive(Default)]
pub(crate) struct Tallies {
    order: Vec<Tally>,
    index: HashMap<usize, usize>,
}

impl Tallies {
    /// The tally of `entry`, made empty on its first call.
    pub(crate) fn of(&mut self, entry: &Bound<'_, PyAny>) -> &mut Tally {
        let key = entry.as_ptr() as usize;
        let position = match self.index.get(&key) {
            Some(position) => *position,
            None => {
                self.order.push(Tally::new(entry));
                self.index.insert(key, self.order.len() - 1);
                self.order.len() - 1
            }
        };
        &mut self.order[position]
    }

    /// The tallies as Python reads them, in order; none are kept.
    pub(crate) fn take(&mut self, py: Python<'_>) -> PyResult<Vec<Py<FormulaTally>>> {
        self.index.clear();
        std::mem::take(&mut self.order)
            .into_iter()
            .map(|tally| tally.into_py(py))
            .collect()
    }
}

/// The operator FLOPs of one module path, children included.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct PathFlops {
    /// The module path (`"layer1.0"`, or as the counter names modules).
    pub path: String,
    /// FLOPs of the counted operators that ran inside it.
    pub flops: u128,
    /// Names of the uncounted operators that ran inside it, sorted.
    pub uncounted: Vec<String>,
}

/// What a counter's compiled dispatch found, read once its mode has exited.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct FlopLedger {
    /// Per operator entry with deferred formulas, what they came to, in the order entries
    /// were first met.
    pub formulas: Vec<Py<FormulaTally>>,
    /// Per module path an operator ran in, in the order paths were first met.
    pub modules: Vec<Py<PathFlops>>,
    /// FLOPs of the logged operators by the dtype of their result.
    pub dtype_flops: Py<PyDict>,
    /// The devices of the logged operators' results, each once, in the order met.
    pub devices: Vec<Py<PyAny>>,
    /// The floating-point dtypes of those results, each once, in the order met.
    pub dtypes: Vec<Py<PyAny>>,
    /// Native ids of the threads the lean calls ran on.
    pub threads: Vec<u64>,
    /// Operator bytes: the bytes of every executed operator's distinct tensor arguments and
    /// results, each operator on its own (0 where the counter does not add them up).
    pub operator_bytes: u128,
    /// Tensors whose size could not be read, left out of `operator_bytes`.
    pub unsized_tensors: u64,
}

/// One module path's running totals.
struct PathTotals {
    path: Py<PyString>,
    flops: u128,
    uncounted: BTreeSet<String>,
}

/// A counter's running totals (see the module documentation).
pub(crate) struct Ledger {
    /// Deferred formula tallies.
    formulas: Tallies,
    /// Per module path, in the order first met, and where each path's is (by its text).
    paths: Vec<PathTotals>,
    path_index: HashMap<String, usize>,
    /// FLOPs by dtype, in the order first met (dtypes are singletons: keyed by identity).
    dtype_flops: Vec<(Py<PyAny>, u128)>,
    devices: Vec<Py<PyAny>>,
    dtypes: Vec<Py<PyAny>>,
    /// Whether a dtype (by identity) is a floating-point one.
    floating: HashMap<usize, bool>,
    /// The threads seen, and `threading.get_native_id` to name a new one.
    threads: Vec<(ThreadId, u64)>,
    native_id: Py<PyAny>,
    /// The last snapshot of a live list of paths: the items' identities and the tuple made.
    last_paths: Option<(Vec<usize>, Py<PyTuple>)>,
    /// Operator bytes so far, and the tensors whose size could not be read.
    bytes: u128,
    unsized_tensors: u64,
}

impl Ledger {
    /// An empty ledger; `native_id` is `threading.get_native_id`.
    pub(crate) fn new(native_id: Py<PyAny>) -> Self {
        Self {
            formulas: Tallies::default(),
            paths: Vec::new(),
            path_index: HashMap::new(),
            dtype_flops: Vec::new(),
            devices: Vec::new(),
            dtypes: Vec::new(),
            floating: HashMap::new(),
            threads: Vec::new(),
            native_id,
            last_paths: None,
            bytes: 0,
            unsized_tensors: 0,
        }
    }

    /// Adds the bytes of one operator call.
    pub(crate) fn add_bytes(&mut self, call: &CallBytes) {
        self.bytes = self.bytes.saturating_add(call.bytes);
        self.unsized_tensors += call.unsized_tensors;
    }

    /// Notes the thread a lean call runs on (a `torch.jit.fork` thread inherits the mode).
    pub(crate) fn note_thread(&mut self, py: Python<'_>) -> PyResult<()> {
        let current = std::thread::current().id();
        if self.threads.iter().any(|(known, _)| *known == current) {
            return Ok(());
        }
        let native: u64 = self.native_id.bind(py).call0()?.extract()?;
        self.threads.push((current, native));
        Ok(())
    }

    /// The active paths of a live list as a tuple: the previous tuple while the list holds the
    /// same strings, so consecutive operators of one module share it.
    pub(crate) fn snapshot(&mut self, list: &Bound<'_, PyList>) -> PyResult<Py<PyAny>> {
        let py = list.py();
        let items: Vec<Bound<'_, PyAny>> = list.iter().collect();
        let identities: Vec<usize> = items.iter().map(|item| item.as_ptr() as usize).collect();
        if let Some((known, tuple)) = &self.last_paths
            && *known == identities
        {
            return Ok(tuple.clone_ref(py).into_any());
        }
        let tuple = PyTuple::new(py, items)?.unbind();
        self.last_paths = Some((identities, tuple.clone_ref(py)));
        Ok(tuple.into_any())
    }

    /// Notes the devices and dtypes of a result's tensors (through tuples, lists and dicts);
    /// returns the first floating-point dtype among them, or `None`.
    pub(crate) fn observe<'py>(
        &mut self,
        value: &Bound<'py, PyAny>,
        tensor: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = value.py();
        if value.is_instance(tensor)? {
            let device = value.getattr(intern!(py, "device"))?;
            let mut known = false;
            for seen in &self.devices {
                if seen.bind(py).eq(&device)? {
                    known = true;
                    break;
                }
            }
            if !known {
                self.devices.push(device.unbind());
            }
            let dtype = value.getattr(intern!(py, "dtype"))?;
            let key = dtype.as_ptr() as usize;
            let floating = match self.floating.get(&key) {
                Some(known) => *known,
                None => {
                    let floating = dtype
                        .getattr(intern!(py, "is_floating_point"))?
                        .is_truthy()?;
                    self.floating.insert(key, floating);
                    if floating {
                        self.dtypes.push(dtype.clone().unbind());
                    }
                    floating
                }
            };
            return Ok(floating.then_some(dtype));
        }
        let mut first = None;
        if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            for item in value.try_iter()? {
                let found = self.observe(&item?, tensor)?;
                if first.is_none() {
                    first = found;
                }
            }
        } else if let Ok(dict) = value.cast::<PyDict>() {
            for (_, item) in dict.iter() {
                let found = self.observe(&item, tensor)?;
                if first.is_none() {
                    first = found;
                }
            }
        }
        Ok(first)
    }

    /// Reads the log's operator records (module calls are not logged for counters) and empties
    /// it: applies the deferred formulas, then adds each operator to its dtype and module paths.
    /// `counted`, `deferred` and `uncounted` are `torchscan.opflops.mode`'s outcome codes.
    pub(crate) fn read(
        &mut self,
        log: &Bound<'_, PyList>,
        counted: i64,
        deferred: i64,
        uncounted: i64,
    ) -> PyResult<()> {
        let py = log.py();
        // Taken out first: formulas run Python code, while which another thread running the
        // workload may log more.
        let count = log.len();
        let records: Vec<Bound<'_, PyAny>> = log.get_slice(0, count).iter().collect();
        log.del_slice(0, count)?;
        // Module paths of each distinct tuple, resolved once per batch.
        let mut resolved: HashMap<usize, Vec<usize>> = HashMap::new();
        for event in &records {
            let Ok(record) = event.cast::<OperatorRecord>() else {
                continue;
            };
            let record = record.get();
            let entry = record.entry.bind(py);
            let mut outcome = record.outcome;
            let mut flops: u128 = 0;
            if outcome == deferred {
                let found = self.formulas.of(entry).apply(
                    record.args.bind(py),
                    record.kwargs.bind(py),
                    record.out.bind(py),
                )?;
                match found {
                    Some(value) => {
                        flops = value;
                        outcome = counted;
                    }
                    None => outcome = uncounted,
                }
            } else if outcome == counted {
                flops = record.flops;
            }
            if outcome == counted && flops > 0 && !record.dtype.is_none(py) {
                let key = record.dtype.as_ptr() as usize;
                match self
                    .dtype_flops
                    .iter_mut()
                    .find(|(dtype, _)| dtype.as_ptr() as usize == key)
                {
                    Some((_, sum)) => *sum = sum.saturating_add(flops),
                    None => self.dtype_flops.push((record.dtype.clone_ref(py), flops)),
                }
            }
            let paths = record.paths.bind(py);
            if paths.is_none() {
                continue;
            }
            let key = paths.as_ptr() as usize;
            if let Entry::Vacant(slot) = resolved.entry(key) {
                let mut positions: Vec<usize> = Vec::new();
                for path in paths.try_iter()? {
                    let path = path?;
                    let path = path.cast::<PyString>()?;
                    let text = path.to_str()?;
                    let position = match self.path_index.get(text) {
                        Some(position) => *position,
                        None => {
                            self.paths.push(PathTotals {
                                path: path.clone().unbind(),
                                flops: 0,
                                uncounted: BTreeSet::new(),
                            });
                            self.path_index
                                .insert(text.to_owned(), self.paths.len() - 1);
                            self.paths.len() - 1
                        }
                    };
                    if !positions.contains(&position) {
                        positions.push(position); // each module once, even if re-entered
                    }
                }
                slot.insert(positions);
            }
            let positions = &resolved[&key];
            if outcome == counted {
                for &position in positions {
                    let totals = &mut self.paths[position];
                    totals.flops = totals.flops.saturating_add(flops);
                }
            } else if outcome == uncounted {
                let name: String = entry.getattr(intern!(py, "name"))?.extract()?;
                for &position in positions {
                    self.paths[position].uncounted.insert(name.clone());
                }
            }
        }
        Ok(())
    }

    /// The totals as Python reads them; the ledger starts again empty.
    pub(crate) fn take(&mut self, py: Python<'_>) -> PyResult<FlopLedger> {
        let formulas = self.formulas.take(py)?;
        let modules = std::mem::take(&mut self.paths)
            .into_iter()
            .map(|totals| {
                Py::new(
                    py,
                    PathFlops {
                        path: totals.path.bind(py).to_str()?.to_owned(),
                        flops: totals.flops,
                        uncounted: totals.uncounted.into_iter().collect(),
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        self.path_index.clear();
        let dtype_flops = PyDict::new(py);
        for (dtype, flops) in std::mem::take(&mut self.dtype_flops) {
            dtype_flops.set_item(dtype, flops)?;
        }
        self.floating.clear();
        self.last_paths = None;
        Ok(FlopLedger {
            formulas,
            modules,
            dtype_flops: dtype_flops.unbind(),
            devices: std::mem::take(&mut self.devices),
            dtypes: std::mem::take(&mut self.dtypes),
            threads: std::mem::take(&mut self.threads)
                .into_iter()
                .map(|(_, native)| native)
                .collect(),
            operator_bytes: std::mem::take(&mut self.bytes),
            unsized_tensors: std::mem::take(&mut self.unsized_tensors),
        })
    }
}

/// Adds [`FormulaTally`], [`PathFlops`] and [`FlopLedger`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<FormulaTally>()?;
    module.add_class::<PathFlops>()?;
    module.add_class::<FlopLedger>()
}
