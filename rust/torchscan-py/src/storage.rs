//! A model's parameters and buffers, read once: each module's own counts and the storage totals.

use std::collections::HashSet;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// The storage totals of distinct tensors: `(parameters, trainable parameters, parameter
/// bytes, buffer elements, buffer bytes, floating-point parameter dtypes, devices)`.
type Totals<'py> = (
    u64,
    u64,
    u64,
    u64,
    u64,
    Vec<Bound<'py, PyAny>>,
    Vec<Bound<'py, PyAny>>,
);

/// Storage totals being added up, one distinct tensor at a time.
#[derive(Default)]
struct Sums<'py> {
    parameters: u64,
    trainable: u64,
    parameter_bytes: u64,
    buffers: u64,
    buffer_bytes: u64,
    dtypes: Vec<Bound<'py, PyAny>>,
    /// The devices of the parameters and buffers, each once.
    devices: Vec<Bound<'py, PyAny>>,
}

impl<'py> Sums<'py> {
    /// Adds a parameter (`trainable` when it requires grad) or a buffer of `elements` elements
    /// taking `bytes`.
    fn add(
        &mut self,
        tensor: &Bound<'py, PyAny>,
        elements: u64,
        bytes: u64,
        parameter: bool,
        trainable: bool,
    ) -> PyResult<()> {
        let py = tensor.py();
        let device = tensor.getattr(intern!(py, "device"))?;
        let mut known = false;
        for seen in &self.devices {
            if seen.eq(&device)? {
                known = true;
                break;
            }
        }
        if !known {
            self.devices.push(device);
        }
        if !parameter {
            self.buffers += elements;
            self.buffer_bytes += bytes;
            return Ok(());
        }
        self.parameters += elements;
        self.parameter_bytes += bytes;
        if trainable {
            self.trainable += elements;
        }
        if tensor
            .call_method0(intern!(py, "is_floating_point"))?
            .is_truthy()?
        {
            let dtype = tensor.getattr(intern!(py, "dtype"))?;
            if !self.dtypes.iter().any(|known| known.is(&dtype)) {
                self.dtypes.push(dtype);
            }
        }
        Ok(())
    }

    fn totals(self) -> Totals<'py> {
        (
            self.parameters,
            self.trainable,
            self.parameter_bytes,
            self.buffers,
            self.buffer_bytes,
            self.dtypes,
            self.devices,
        )
    }
}

/// Elements of a tensor and, for a parameter, whether it requires grad.
fn count(tensor: &Bound<'_, PyAny>, parameter: bool) -> PyResult<(u64, bool)> {
    let py = tensor.py();
    let elements = tensor.call_method0(intern!(py, "numel"))?.extract()?;
    let trainable = parameter && tensor.getattr(intern!(py, "requires_grad"))?.is_truthy()?;
    Ok((elements, trainable))
}

/// One of a module's own parameters or buffers.
pub(crate) struct OwnTensor {
    /// The tensor object's identity: a tensor held by several modules is counted at the first.
    pub(crate) identity: usize,
    pub(crate) elements: u64,
    pub(crate) bytes: u64,
    /// A parameter (else a buffer).
    pub(crate) parameter: bool,
    /// A parameter that requires grad.
    pub(crate) trainable: bool,
}

/// The own parameters and buffers of every module of a model, as [`walk_storage`] found them.
///
/// The modules are kept alive by the model while the report is assembled, and so are their
/// tensors, whose identities this holds.
#[pyclass(module = "torchscan._core", frozen)]
pub struct OwnStorage {
    pub(crate) modules: Vec<Vec<OwnTensor>>,
}

/// Walks `named_modules` (`(path, module)` pairs, a module listed under each of its paths).
///
/// Returns the own parameters and buffers of every module, in the order modules are first
/// listed, and the totals when every parameter and buffer is a distinct tensor with its own
/// non-null storage (`None` otherwise: the caller works out what is shared, by name, and adds
/// up the distinct tensors with [`storage_totals`]).
#[pyfunction]
fn walk_storage<'py>(
    py: Python<'py>,
    named_modules: &Bound<'py, PyList>,
) -> PyResult<(OwnStorage, Option<Totals<'py>>)> {
    let mut seen_modules: HashSet<usize> = HashSet::new();
    let mut own = Vec::new();
    let mut seen_tensors: HashSet<usize> = HashSet::new();
    let mut pointers: HashSet<u64> = HashSet::new();
    let mut distinct = true;
    let mut sums = Sums::default();
    for pair in named_modules.iter() {
        let module = pair.cast::<PyTuple>()?.get_item(1)?;
        if !seen_modules.insert(module.as_ptr() as usize) {
            distinct = false; // its tensors are listed again
            continue;
        }
        let mut tensors = Vec::new();
        for (parameter, name) in [
            (true, intern!(py, "_parameters")),
            (false, intern!(py, "_buffers")),
        ] {
            for tensor in module
                .getattr(name)?
                .call_method0(intern!(py, "values"))?
                .try_iter()?
            {
                let tensor = tensor?;
                if tensor.is_none() {
                    continue;
                }
                let (elements, trainable) = count(&tensor, parameter)?;
                let bytes = elements.saturating_mul(
                    tensor
                        .call_method0(intern!(py, "element_size"))?
                        .extract::<u64>()?,
                );
                tensors.push(OwnTensor {
                    identity: tensor.as_ptr() as usize,
                    elements,
                    bytes,
                    parameter,
                    trainable,
                });
                if !distinct {
                    continue;
                }
                // Meta and other storage-less tensors have no pointer (or raise): the caller's
                // general path tells them apart by identity.
                let pointer = match tensor.call_method0(intern!(py, "data_ptr")) {
                    Ok(value) => value.extract::<u64>().unwrap_or(0),
                    Err(_) => 0,
                };
                if pointer == 0
                    || !pointers.insert(pointer)
                    || !seen_tensors.insert(tensor.as_ptr() as usize)
                {
                    distinct = false;
                    continue;
                }
                sums.add(&tensor, elements, bytes, parameter, trainable)?;
            }
        }
        own.push(tensors);
    }
    Ok((OwnStorage { modules: own }, distinct.then(|| sums.totals())))
}

/// The storage totals of distinct `parameters` and `buffers` (tensors).
#[pyfunction]
fn storage_totals<'py>(
    py: Python<'py>,
    parameters: &Bound<'py, PyList>,
    buffers: &Bound<'py, PyList>,
) -> PyResult<Totals<'py>> {
    let mut sums = Sums::default();
    for (parameter, tensors) in [(true, parameters), (false, buffers)] {
        for tensor in tensors.iter() {
            let (elements, trainable) = count(&tensor, parameter)?;
            let bytes = elements.saturating_mul(
                tensor
                    .call_method0(intern!(py, "element_size"))?
                    .extract::<u64>()?,
            );
            sums.add(&tensor, elements, bytes, parameter, trainable)?;
        }
    }
    Ok(sums.totals())
}

/// Adds [`OwnStorage`], [`walk_storage`] and [`storage_totals`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<OwnStorage>()?;
    module.add_function(wrap_pyfunction!(walk_storage, module)?)?;
    module.add_function(wrap_pyfunction!(storage_totals, module)?)
}
