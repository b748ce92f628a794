//! A model's parameters and buffers, read once: each module's own counts, the storage totals
//! and the parameters under each module with children.
//!
//! Tensors are counted by the storage they cover ([`torchscan_core::coverage`]): the same
//! tensor under two names, or views that overlap in one storage (a transposed tie), count each
//! storage element once; disjoint views of one flat buffer count in full.

use std::collections::{HashMap, HashSet};

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use torchscan_core::coverage::{View, cover};
use torchscan_core::parameter_totals::{ParameterCount, module_children, totals_under};

/// What [`walk_storage`] found: each module's own tensors, the storage totals of distinct
/// tensors (every storage element counted once) and the ties.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct StorageWalk {
    /// Each module's own parameters and buffers, for the assembly.
    pub own: Py<OwnStorage>,
    /// Parameter elements.
    pub parameters: u64,
    /// Elements of the parameters that require grad.
    pub trainable: u64,
    /// Bytes of the parameters.
    pub parameter_bytes: u64,
    /// Buffer elements.
    pub buffer_elements: u64,
    /// Bytes of the buffers.
    pub buffer_bytes: u64,
    /// The floating-point dtypes of the parameters, each once, in the order met.
    pub dtypes: Vec<Py<PyAny>>,
    /// The devices of the parameters and buffers, each once, in the order met.
    pub devices: Vec<Py<PyAny>>,
    /// Tensors counted once although reachable under more than one name or overlapping in
    /// storage, one group each.
    pub ties: Vec<Py<StorageTie>>,
}

/// A group of tensors counted once: reachable under more than one name, or overlapping in one
/// storage (a transposed tie).
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct StorageTie {
    /// The names the group's tensors are reachable under.
    pub names: Vec<String>,
    /// How many distinct tensors the group has.
    pub tensors: usize,
    /// Their elements, each tensor in full.
    pub elements: u64,
    /// The elements counted: each storage element once.
    pub counted: u64,
}

/// Tensors counted once, one group each: `(names, distinct tensors, their elements, the
/// elements counted)`.
type Ties = Vec<(Vec<String>, usize, u64, u64)>;

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
    /// Adds a parameter (`trainable` when it requires grad) or a buffer that counts `elements`
    /// elements taking `bytes`.
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

    /// The totals with the modules' own tensors and the ties, as [`walk_storage`] returns them.
    fn into_walk(self, py: Python<'py>, own: OwnStorage, ties: Ties) -> PyResult<StorageWalk> {
        let ties = ties
            .into_iter()
            .map(|(names, tensors, elements, counted)| {
                Py::new(
                    py,
                    StorageTie {
                        names,
                        tensors,
                        elements,
                        counted,
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(StorageWalk {
            own: Py::new(py, own)?,
            parameters: self.parameters,
            trainable: self.trainable,
            parameter_bytes: self.parameter_bytes,
            buffer_elements: self.buffers,
            buffer_bytes: self.buffer_bytes,
            dtypes: self.dtypes.into_iter().map(Bound::unbind).collect(),
            devices: self.devices.into_iter().map(Bound::unbind).collect(),
            ties,
        })
    }
}

/// Which storage a tensor's elements live in: the address its storage starts at (data
/// pointer less the offset), or, for a tensor without data (meta), its storage object's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum StorageKey {
    Data(u64),
    Object(u64),
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
    /// The storage the tensor views (`None` without one: a tensor without elements, or one
    /// whose storage cannot be read).
    storage: Option<StorageKey>,
    /// Whether the tensor's elements lie contiguously in its storage.
    contiguous: bool,
    /// How it lies in its storage, read when that storage holds other tensors too or the
    /// tensor is not contiguous: it is then counted by the storage it covers.
    view: Option<View>,
}

/// What one distinct tensor adds to a count of tensors taken in order (see [`count_once`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Elements the tensor adds: of the storage it covers, those no earlier tensor covers.
    pub(crate) elements: u64,
    /// Bytes the tensor adds, likewise.
    pub(crate) bytes: u64,
    /// Some of its storage was already counted with an earlier tensor.
    pub(crate) overlapped: bool,
    /// The tensors that overlap in one storage: the storage and the position (in the order
    /// counted) of the group's first tensor; `None` for a tensor counted on its own.
    pub(crate) group: Option<(StorageKey, usize)>,
}

/// What each of `tensors` (distinct tensor objects, in order) adds when every storage element
/// is counted once, at the first tensor that covers it.
///
/// Tensors without a read view ([`OwnTensor::view`]) count their elements in full; the others
/// are compared, storage by storage, by the bytes they cover ([`cover`]).
pub(crate) fn count_once(tensors: &[&OwnTensor]) -> Vec<Counted> {
    let mut counted: Vec<Counted> = tensors
        .iter()
        .map(|tensor| Counted {
            elements: tensor.elements,
            bytes: tensor.bytes,
            overlapped: false,
            group: None,
        })
        .collect();
    let mut by_storage: HashMap<StorageKey, Vec<usize>> = HashMap::new();
    let mut storages: Vec<StorageKey> = Vec::new();
    for (position, tensor) in tensors.iter().enumerate() {
        if let (Some(key), Some(_)) = (tensor.storage, &tensor.view) {
            by_storage
                .entry(key)
                .or_insert_with(|| {
                    storages.push(key);
                    Vec::new()
                })
                .push(position);
        }
    }
    for key in storages {
        let positions = &by_storage[&key];
        let views: Vec<View> = positions
            .iter()
            .filter_map(|&position| tensors[position].view.clone())
            .collect();
        for (index, found) in cover(&views).iter().enumerate() {
            let position = positions[index];
            counted[position] = Counted {
                elements: found.first_elements(&views[index]),
                bytes: found.first_bytes,
                overlapped: found.first_bytes < found.bytes,
                group: Some((key, positions[found.group])),
            };
        }
    }
    counted
}

/// Reads how `tensor` lies in its storage: its element offset, sizes and strides.
fn read_view(tensor: &Bound<'_, PyAny>, itemsize: u64) -> PyResult<View> {
    let py = tensor.py();
    let offset = tensor
        .call_method0(intern!(py, "storage_offset"))?
        .extract()?;
    let sizes: Vec<u64> = tensor.getattr(intern!(py, "shape"))?.extract()?;
    let strides: Vec<u64> = tensor.call_method0(intern!(py, "stride"))?.extract()?;
    Ok(View {
        offset,
        sizes,
        strides,
        itemsize,
    })
}

/// Reads a parameter or buffer: its elements and bytes, whether it requires grad, and which
/// storage it views.
fn read_tensor(tensor: &Bound<'_, PyAny>, parameter: bool) -> PyResult<OwnTensor> {
    let py = tensor.py();
    let elements: u64 = tensor.call_method0(intern!(py, "numel"))?.extract()?;
    let trainable = parameter && tensor.getattr(intern!(py, "requires_grad"))?.is_truthy()?;
    let itemsize: u64 = tensor
        .call_method0(intern!(py, "element_size"))?
        .extract()?;
    let mut storage = None;
    let mut contiguous = true;
    if elements > 0 {
        // Tensors without storage (some subclasses) raise: they are told apart by identity.
        let pointer = match tensor.call_method0(intern!(py, "data_ptr")) {
            Ok(value) => value.extract::<u64>().unwrap_or(0),
            Err(_) => 0,
        };
        let offset = tensor
            .call_method0(intern!(py, "storage_offset"))
            .and_then(|value| value.extract::<u64>());
        storage = match offset {
            Ok(offset) if pointer != 0 => pointer
                .checked_sub(offset.saturating_mul(itemsize))
                .map(StorageKey::Data),
            Ok(_) => tensor
                .call_method0(intern!(py, "untyped_storage"))
                .and_then(|storage| storage.getattr(intern!(py, "_cdata")))
                .and_then(|cdata| cdata.extract::<u64>())
                .ok()
                .filter(|&cdata| cdata != 0)
                .map(StorageKey::Object),
            Err(_) => None,
        };
        if storage.is_some() {
            contiguous = tensor
                .call_method0(intern!(py, "is_contiguous"))?
                .is_truthy()?;
        }
    }
    Ok(OwnTensor {
        identity: tensor.as_ptr() as usize,
        elements,
        bytes: elements.saturating_mul(itemsize),
        parameter,
        trainable,
        storage,
        contiguous,
        view: None,
    })
}

/// The own parameters and buffers of every module of a model, as [`walk_storage`] found them.
///
/// The modules are kept alive by the model while the report is assembled, and so are their
/// tensors, whose identities this holds.
#[pyclass(module = "torchscan._core", frozen)]
pub struct OwnStorage {
    pub(crate) modules: Vec<Vec<OwnTensor>>,
    /// The parameters under each module with children, by module path (see
    /// [`totals_under`]); `None` for the others.
    pub(crate) totals: Vec<Option<ParameterCount>>,
}

impl OwnStorage {
    /// What each tensor viewing a shared storage (or not contiguous) adds, by identity, when
    /// the modules at `positions` are counted in that order, each tensor at the first module
    /// that holds it (see [`count_once`]). Tensors counted in full are left out.
    pub(crate) fn counted_in_order(
        &self,
        positions: impl Iterator<Item = usize>,
    ) -> PyResult<HashMap<usize, Counted>> {
        if !self
            .modules
            .iter()
            .any(|tensors| tensors.iter().any(|tensor| tensor.view.is_some()))
        {
            return Ok(HashMap::new());
        }
        let mut seen: HashSet<usize> = HashSet::new();
        let mut order: Vec<&OwnTensor> = Vec::new();
        for position in positions {
            let tensors = self.modules.get(position).ok_or_else(|| {
                PyValueError::new_err("the storage walk gives fewer modules than the recorder")
            })?;
            for tensor in tensors {
                if tensor.view.is_some() && seen.insert(tensor.identity) {
                    order.push(tensor);
                }
            }
        }
        Ok(order
            .iter()
            .map(|tensor| tensor.identity)
            .zip(count_once(&order))
            .collect())
    }
}

/// The `(name, tensor identity)` of every parameter and buffer under every path of a module.
fn named_identities<'py>(named_modules: &Bound<'py, PyList>) -> PyResult<Vec<(String, usize)>> {
    let py = named_modules.py();
    let mut found = Vec::new();
    for pair in named_modules.iter() {
        let pair = pair.cast::<PyTuple>()?;
        let path: String = pair.get_item(0)?.extract()?;
        let module = pair.get_item(1)?;
        for name in [intern!(py, "_parameters"), intern!(py, "_buffers")] {
            for item in module
                .getattr(name)?
                .call_method0(intern!(py, "items"))?
                .try_iter()?
            {
                let item = item?;
                let item = item.cast::<PyTuple>()?;
                let tensor = item.get_item(1)?;
                if tensor.is_none() {
                    continue;
                }
                let key = item.get_item(0)?;
                let key = key.cast::<PyString>()?.to_str()?;
                let name = if path.is_empty() {
                    key.to_owned()
                } else {
                    format!("{path}.{key}")
                };
                found.push((name, tensor.as_ptr() as usize));
            }
        }
    }
    Ok(found)
}

/// Walks `named_modules` (`(path, module)` pairs, a module listed under each of its paths).
///
/// Returns the own parameters and buffers of every module, in the order modules are first
/// listed, with the parameters under each module with children (by module path, each storage
/// element once); the storage totals, every storage element counted once (at the first tensor that
/// covers it, in that order); and the ties: tensors reachable under more than one name, and
/// tensors that overlap in one storage.
#[pyfunction]
fn walk_storage<'py>(py: Python<'py>, named_modules: &Bound<'py, PyList>) -> PyResult<StorageWalk> {
    // Each module's position in `own`, by identity.
    let mut seen_modules: HashMap<usize, usize> = HashMap::new();
    let mut own: Vec<Vec<OwnTensor>> = Vec::new();
    // Every distinct tensor, in order, with where it is listed in `own`.
    let mut distinct: Vec<(Bound<'py, PyAny>, usize, usize)> = Vec::new();
    // Each distinct tensor's position in `distinct`, by identity.
    let mut seen_tensors: HashMap<usize, usize> = HashMap::new();
    // Per module, the positions of its tensors in `distinct`; and every `(path, module)` pair.
    let mut positions: Vec<Vec<usize>> = Vec::new();
    let mut listing: Vec<(Bound<'py, PyString>, usize)> = Vec::with_capacity(named_modules.len());
    let mut listed_again = false;
    for pair in named_modules.iter() {
        let pair = pair.cast::<PyTuple>()?;
        let module = pair.get_item(1)?;
        let index = *seen_modules
            .entry(module.as_ptr() as usize)
            .or_insert(own.len());
        if let Ok(path) = pair.get_item(0)?.cast_into::<PyString>() {
            listing.push((path, index));
        }
        if index < own.len() {
            listed_again = true; // its tensors are reachable under another name
            continue;
        }
        let mut tensors = Vec::new();
        let mut module_positions = Vec::new();
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
                let read = read_tensor(&tensor, parameter)?;
                let position = *seen_tensors.entry(read.identity).or_insert(distinct.len());
                if position == distinct.len() {
                    distinct.push((tensor, own.len(), tensors.len()));
                } else {
                    listed_again = true;
                }
                module_positions.push(position);
                tensors.push(read);
            }
        }
        own.push(tensors);
        positions.push(module_positions);
    }
    // Storages that several distinct tensors view: those tensors, and any that is not
    // contiguous, are counted by the storage they cover.
    let mut viewers: HashMap<StorageKey, usize> = HashMap::new();
    for &(_, module, index) in &distinct {
        if let Some(key) = own[module][index].storage {
            *viewers.entry(key).or_insert(0) += 1;
        }
    }
    let mut views: HashMap<usize, View> = HashMap::new();
    for (tensor, module, index) in &distinct {
        let read = &own[*module][*index];
        let Some(key) = read.storage else { continue };
        if viewers[&key] > 1 || !read.contiguous {
            let itemsize = read.bytes.checked_div(read.elements).unwrap_or(0);
            views.insert(read.identity, read_view(tensor, itemsize)?);
        }
    }
    if !views.is_empty() {
        for tensors in &mut own {
            for tensor in tensors {
                if let Some(view) = views.get(&tensor.identity) {
                    tensor.view = Some(view.clone());
                }
            }
        }
    }
    let order: Vec<&OwnTensor> = distinct
        .iter()
        .map(|&(_, module, index)| &own[module][index])
        .collect();
    let counted = count_once(&order);
    let mut sums = Sums::default();
    for ((tensor, _, _), (read, found)) in distinct.iter().zip(order.iter().zip(&counted)) {
        sums.add(
            tensor,
            found.elements,
            found.bytes,
            read.parameter,
            read.trainable,
        )?;
    }
    let overlapping = counted
        .iter()
        .enumerate()
        .any(|(position, found)| found.group.is_some_and(|(_, first)| first != position));
    let ties = if listed_again || overlapping {
        ties_of(named_modules, &order, &counted)?
    } else {
        Vec::new()
    };
    let shared_storage = viewers.values().any(|&count| count > 1);
    let totals = parameters_under(&listing, &positions, &order, &counted, shared_storage);
    drop(order);
    sums.into_walk(
        py,
        OwnStorage {
            modules: own,
            totals,
        },
        ties,
    )
}

/// What `counted` tensors add to a count of parameters: elements by whether they require grad,
/// and bytes; nothing for a buffer.
fn parameter_count(tensor: &OwnTensor, counted: &Counted) -> ParameterCount {
    match (tensor.parameter, tensor.trainable) {
        (false, _) => ParameterCount::default(),
        (true, true) => ParameterCount {
            trainable: counted.elements,
            frozen: 0,
            bytes: counted.bytes,
        },
        (true, false) => ParameterCount {
            trainable: 0,
            frozen: counted.elements,
            bytes: counted.bytes,
        },
    }
}

/// The parameters under each module with children ([`totals_under`]): `listing` pairs every
/// path with its module's position, `positions` gives each module's tensors as positions in
/// `order` (every distinct tensor, counted as the model's totals count them: `counted`).
/// Without `shared_storage` a module's total adds up what its tensors add to the model's;
/// otherwise the tensors under it are counted together, each storage element once.
fn parameters_under(
    listing: &[(Bound<'_, PyString>, usize)],
    positions: &[Vec<usize>],
    order: &[&OwnTensor],
    counted: &[Counted],
    shared_storage: bool,
) -> Vec<Option<ParameterCount>> {
    // A path that is not valid text (never a module attribute's name) hangs from nothing.
    let paths: Vec<(&str, usize)> = listing
        .iter()
        .filter_map(|(path, module)| Some((path.to_str().ok()?, *module)))
        .collect();
    let children = module_children(&paths, positions.len());
    let alone: Vec<ParameterCount> = order
        .iter()
        .zip(counted)
        .map(|(tensor, found)| parameter_count(tensor, found))
        .collect();
    totals_under(&children, positions, &alone, shared_storage, |under| {
        let tensors: Vec<&OwnTensor> = under.iter().map(|&position| order[position]).collect();
        let mut total = ParameterCount::default();
        for (tensor, found) in tensors.iter().zip(count_once(&tensors)) {
            total.add(&parameter_count(tensor, &found));
        }
        total
    })
}

/// The groups of tensors counted once: distinct tensors (`order`, as [`count_once`] counted
/// them) that overlap in storage, and any tensor reachable under more than one name.
fn ties_of(
    named_modules: &Bound<'_, PyList>,
    order: &[&OwnTensor],
    counted: &[Counted],
) -> PyResult<Ties> {
    // Each distinct tensor's group: the position of the group's first tensor.
    let position_of: HashMap<usize, usize> = order
        .iter()
        .enumerate()
        .map(|(position, tensor)| (tensor.identity, position))
        .collect();
    let group_of =
        |position: usize| -> usize { counted[position].group.map_or(position, |(_, first)| first) };
    let mut names: Vec<Vec<String>> = vec![Vec::new(); order.len()];
    for (name, identity) in named_identities(named_modules)? {
        if let Some(&position) = position_of.get(&identity) {
            let group = &mut names[group_of(position)];
            if !group.contains(&name) {
                group.push(name);
            }
        }
    }
    // Per group: (distinct tensors, their elements, the elements counted).
    let mut sizes: Vec<(usize, u64, u64)> = vec![(0, 0, 0); order.len()];
    for (position, tensor) in order.iter().enumerate() {
        let size = &mut sizes[group_of(position)];
        size.0 += 1;
        size.1 += tensor.elements;
        size.2 += counted[position].elements;
    }
    Ok(names
        .into_iter()
        .zip(sizes)
        .filter(|(group_names, _)| group_names.len() > 1)
        .map(|(group_names, (tensors, elements, kept))| (group_names, tensors, elements, kept))
        .collect())
}

/// Adds [`OwnStorage`], [`StorageWalk`], [`StorageTie`] and [`walk_storage`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<OwnStorage>()?;
    module.add_class::<StorageWalk>()?;
    module.add_class::<StorageTie>()?;
    module.add_function(wrap_pyfunction!(walk_storage, module)?)
}
