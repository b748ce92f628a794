//! One walk over a model's parameters and buffers: each module's own counts and, when no tensor
//! is shared, the model's storage totals.

use std::collections::HashSet;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// The model's totals when no tensor is listed twice and no two tensors view one storage:
/// `(parameters, trainable parameters, parameter bytes, buffer elements, buffer bytes,
/// floating-point parameter dtypes)`.
type Totals<'py> = (u64, u64, u64, u64, u64, Vec<Bound<'py, PyAny>>);

/// Walks `named_modules` (`(path, module)` pairs, a module listed under each of its paths).
///
/// Returns the own `(parameters, trainable parameters, buffer elements)` of every module, in
/// the order modules are first listed, and the totals when every parameter and buffer is a
/// distinct tensor with its own non-null storage (`None` otherwise: the caller works out
/// what is shared, by name).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn walk_storage<'py>(
    py: Python<'py>,
    named_modules: &Bound<'py, PyList>,
) -> PyResult<(Vec<(u64, u64, u64)>, Option<Totals<'py>>)> {
    let mut seen_modules: HashSet<usize> = HashSet::new();
    let mut own = Vec::new();
    let mut seen_tensors: HashSet<usize> = HashSet::new();
    let mut pointers: HashSet<u64> = HashSet::new();
    let mut distinct = true;
    let (mut parameters, mut trainable, mut parameter_bytes) = (0_u64, 0_u64, 0_u64);
    let (mut buffer_count, mut buffer_bytes) = (0_u64, 0_u64);
    let mut dtypes: Vec<Bound<'py, PyAny>> = Vec::new();
    let numel = intern!(py, "numel");
    let element_size = intern!(py, "element_size");
    for pair in named_modules.iter() {
        let module = pair.cast::<PyTuple>()?.get_item(1)?;
        if !seen_modules.insert(module.as_ptr() as usize) {
            distinct = false; // its tensors are listed again
            continue;
        }
        let mut counts = (0_u64, 0_u64, 0_u64);
        for (is_parameter, name) in [
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
                let elements: u64 = tensor.call_method0(numel)?.extract()?;
                let requires_grad =
                    is_parameter && tensor.getattr(intern!(py, "requires_grad"))?.is_truthy()?;
                if is_parameter {
                    counts.0 += elements;
                    if requires_grad {
                        counts.1 += elements;
                    }
                } else {
                    counts.2 += elements;
                }
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
                let bytes =
                    elements.saturating_mul(tensor.call_method0(element_size)?.extract::<u64>()?);
                if is_parameter {
                    parameters += elements;
                    parameter_bytes += bytes;
                    if requires_grad {
                        trainable += elements;
                    }
                    if tensor
                        .call_method0(intern!(py, "is_floating_point"))?
                        .is_truthy()?
                    {
                        let dtype = tensor.getattr(intern!(py, "dtype"))?;
                        if !dtypes.iter().any(|known| known.is(&dtype)) {
                            dtypes.push(dtype);
                        }
                    }
                } else {
                    buffer_count += elements;
                    buffer_bytes += bytes;
                }
            }
        }
        own.push(counts);
    }
    let totals = distinct.then_some((
        parameters,
        trainable,
        parameter_bytes,
        buffer_count,
        buffer_bytes,
        dtypes,
    ));
    Ok((own, totals))
}

/// Adds [`walk_storage`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(walk_storage, module)?)
}
