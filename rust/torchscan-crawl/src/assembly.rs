//! The per-call parts of an analysis report, assembled by compiled code once the forward is over.
//!
//! `crawl_module` records the module calls of its forward in a [`CallRecorder`] and, in full
//! mode, logs every operator. [`Assembler::assemble`] turns those records into the report's layers: the
//! metadata of what each call received and returned, the module estimates (a module's formula,
//! or its children plus the operators it ran itself), the receptive fields (see
//! [`FieldTracker`]), the model's module totals and the operator FLOPs of every module path.
//! Only the formulas and the description of values other than tensors run Python code.

use std::collections::{BTreeSet, HashSet};

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyString, PyTuple};

use torchscan_core::call_tree::{CallTree, OwnOperators, path_totals, post_order};
use torchscan_core::schema::common::exact_integer;

use crate::call_recorder::{CallRecorder, TensorSpec, shape_elements};
use crate::flop_ledger::{FormulaTally, Tallies};
use crate::operator_record::OperatorRecord;
use crate::receptive_fields::{FieldTracker, unavailable};
use crate::storage::OwnStorage;
use crate::template::Template;

const NOT_REQUESTED: &str = "not requested";
const FROM_CHILDREN: &str = "sum of its children's estimates and of the operators it runs itself";
const FROM_OPERATORS: &str = "operators it runs itself";

/// The texts the report gives module estimates and the operator FLOPs of module paths.
struct Texts {
    /// Scope of every module estimate.
    module_scope: Py<PyString>,
    /// Method of the model's module totals.
    module_method: Py<PyString>,
    /// Scope of the operator FLOPs of a module path.
    path_scope: Py<PyString>,
    /// Method of the operator FLOPs of a module path.
    path_method: Py<PyString>,
}

/// The keys of a metric in a report.
static METRIC: Template = Template::new(&[
    "status",
    "value",
    "known_value",
    "unit",
    "scope",
    "method",
    "reason",
]);

/// The keys of a layer in a report.
static LAYER: Template = Template::new(&[
    "path",
    "call_index",
    "name",
    "depth",
    "type",
    "input",
    "output",
    "parameters",
    "buffers",
    "metrics",
    "receptive_field",
]);

/// The keys of a layer's own parameters.
static PARAMETERS: Template = Template::new(&["trainable", "frozen", "bytes", "shared"]);

/// The keys of the parameters under a module with children.
static TOTAL: Template = Template::new(&["trainable", "frozen", "bytes"]);

/// The keys of a layer's own buffers.
static BUFFERS: Template = Template::new(&["elements", "bytes", "shared"]);

/// The keys of a layer's metrics.
static METRICS: Template = Template::new(&[
    "calls",
    "module_flops",
    "macs",
    "dmas",
    "receptive_field",
    "effective_stride",
    "effective_padding",
]);

/// Scope and method of a layer's receptive field as single numbers.
const FIELD_SCOPE: &str = "receptive field at this call's output, in elements of the model input";
const FIELD_METHOD: &str = "receptive-field replay along convolution and pooling chains";

/// A layer's receptive field, effective stride and padding as single numbers, from its
/// per-dimension `field`: complete when every spatial dimension has the same, else unavailable.
fn field_numbers<'py>(
    py: Python<'py>,
    field: &Bound<'py, PyDict>,
    metrics: &Bound<'py, PyDict>,
) -> PyResult<()> {
    let (unit, scope, method) = (
        intern!(py, "count"),
        intern!(py, FIELD_SCOPE),
        intern!(py, FIELD_METHOD),
    );
    let status: String = match field.get_item(intern!(py, "status"))? {
        Some(status) => status.extract()?,
        None => return Err(PyValueError::new_err("a receptive field without a status")),
    };
    let reason = |py: Python<'py>| -> PyResult<Bound<'py, PyString>> {
        let text: String = field
            .get_item(intern!(py, "reason"))?
            .map(|reason| reason.extract())
            .transpose()?
            .unwrap_or_default();
        Ok(PyString::new(py, &text))
    };
    for (name, key) in [
        (intern!(py, "receptive_field"), intern!(py, "size")),
        (intern!(py, "effective_stride"), intern!(py, "stride")),
        (intern!(py, "effective_padding"), intern!(py, "padding")),
    ] {
        let metric = match status.as_str() {
            "complete" => {
                let values: Vec<f64> = match field.get_item(key)? {
                    Some(values) => values.extract()?,
                    None => Vec::new(),
                };
                match values.split_first() {
                    None => not_computed(
                        py,
                        unit,
                        scope,
                        method,
                        intern!(py, "the output has no spatial dimension"),
                    )?,
                    Some((first, rest)) if rest.iter().all(|value| value == first) => Metric {
                        known: *first,
                        method: method.clone().unbind(),
                        reason: None,
                    }
                    .to_dict(py, unit, scope)?,
                    Some(_) => not_computed(
                        py,
                        unit,
                        scope,
                        method,
                        intern!(
                            py,
                            "differs by spatial dimension: receptive_field gives one number per dimension"
                        ),
                    )?,
                }
            }
            "partial" => {
                let text = format!("the receptive field is partial: {}", reason(py)?);
                not_computed(py, unit, scope, method, &PyString::new(py, &text))?
            }
            _ => not_computed(py, unit, scope, method, &reason(py)?)?,
        };
        metrics.set_item(name, metric)?;
    }
    Ok(())
}

/// A number of whole things as the report writes it: a Python `int` when it is a whole number an
/// `f64` holds exactly, else a `float` (the core's [`exact_integer`] rule).
fn whole_number(py: Python<'_>, value: f64) -> PyResult<Bound<'_, PyAny>> {
    match exact_integer(value) {
        Some(whole) => whole.into_bound_py_any(py),
        None => value.into_bound_py_any(py),
    }
}

/// A module estimate: complete, or partial with what is known and why the rest is missing.
struct Metric {
    known: f64,
    method: Py<PyString>,
    /// `None` for a complete estimate.
    reason: Option<String>,
}

impl Metric {
    /// The report's `MetricResult` of this estimate, in `unit` and `scope`.
    fn to_dict<'py>(
        &self,
        py: Python<'py>,
        unit: &Bound<'py, PyString>,
        scope: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let metric = METRIC.dict(py)?;
        let known = whole_number(py, self.known)?;
        match &self.reason {
            None => {
                metric.set_item(intern!(py, "status"), intern!(py, "complete"))?;
                metric.set_item(intern!(py, "value"), &known)?;
            }
            Some(reason) => {
                metric.set_item(intern!(py, "status"), intern!(py, "partial"))?;
                metric.set_item(intern!(py, "reason"), reason)?;
            }
        }
        metric.set_item(intern!(py, "known_value"), known)?;
        metric.set_item(intern!(py, "unit"), unit)?;
        metric.set_item(intern!(py, "scope"), scope)?;
        metric.set_item(intern!(py, "method"), self.method.bind(py))?;
        Ok(metric)
    }
}

/// A layer's `calls` metric: one record is one call (torchscan 0.2's `calls`).
fn one_call(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let metric = METRIC.dict(py)?;
    metric.set_item(intern!(py, "status"), intern!(py, "complete"))?;
    metric.set_item(intern!(py, "value"), 1)?;
    metric.set_item(intern!(py, "known_value"), 1)?;
    metric.set_item(intern!(py, "unit"), intern!(py, "count"))?;
    metric.set_item(
        intern!(py, "scope"),
        intern!(py, "this record: one call of the module"),
    )?;
    metric.set_item(
        intern!(py, "method"),
        intern!(py, "module calls recorded in the forward"),
    )?;
    Ok(metric)
}

/// An estimate not computed in structure mode.
fn not_requested<'py>(
    py: Python<'py>,
    unit: &Bound<'py, PyString>,
    scope: &Bound<'py, PyString>,
    method: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyDict>> {
    not_computed(py, unit, scope, method, intern!(py, NOT_REQUESTED))
}

/// An unavailable metric, and why.
fn not_computed<'py>(
    py: Python<'py>,
    unit: &Bound<'py, PyString>,
    scope: &Bound<'py, PyString>,
    method: &Bound<'py, PyString>,
    reason: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyDict>> {
    let metric = METRIC.dict(py)?; // value and known_value stay None
    metric.set_item(intern!(py, "status"), intern!(py, "unavailable"))?;
    metric.set_item(intern!(py, "unit"), unit)?;
    metric.set_item(intern!(py, "scope"), scope)?;
    metric.set_item(intern!(py, "method"), method)?;
    metric.set_item(intern!(py, "reason"), reason)?;
    Ok(metric)
}

/// The names and units of the three estimates, as Python strings.
fn kinds(py: Python<'_>) -> [(&Bound<'_, PyString>, &Bound<'_, PyString>); 3] {
    [
        (intern!(py, "module_flops"), intern!(py, "FLOPs")),
        (intern!(py, "macs"), intern!(py, "MACs")),
        (intern!(py, "dmas"), intern!(py, "DMAs")),
    ]
}

/// One module call, as the assembly needs it.
struct Node {
    module: usize,
    call_index: usize,
    parent: Option<usize>,
    inputs: Option<Py<PyAny>>,
    kwargs: Option<Py<PyAny>>,
    output: Option<Py<PyAny>>,
    finished: bool,
    children: Vec<usize>,
    /// Nesting in the call tree (0 for a call made outside any tracked module).
    level: usize,
    /// Operators the call ran itself (not inside a child module), from the operator pass.
    own_flops: u128,
    own_dmas: u128,
    /// DMAs of operators whose count does not fit in 128 bits, as floats.
    own_dmas_beyond: f64,
    own_uncounted: Option<BTreeSet<String>>,
    first_op: i64,
    /// Set once the forward's calls are walked children first.
    estimates: Option<[Metric; 3]>,
}

/// The calls as the core's call tree sees them.
struct Calls<'a>(&'a [Node]);

impl CallTree for Calls<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn parent(&self, call: usize) -> Option<usize> {
        self.0[call].parent
    }
    fn children(&self, call: usize) -> &[usize] {
        &self.0[call].children
    }
}

/// A module the calls refer to.
struct Module {
    module: Py<PyAny>,
    path: Py<PyAny>,
    path_text: String,
    depth: usize,
}

/// How the forward's operator records are read: the outcome codes of
/// `torchscan.opflops.mode`, `torch.Size`, and the Python count of the elements of shapes for
/// what the compiled count cannot take.
struct OperatorPass<'py> {
    counted: i64,
    deferred: i64,
    uncounted: i64,
    size_type: Bound<'py, PyAny>,
    shape_elements: Bound<'py, PyAny>,
}

/// How values are described: `describe(value)` for anything, with the dtype and device names
/// it has already worked out, which tensor specs are described with here.
struct Describe<'py> {
    describe: Bound<'py, PyAny>,
    dtype_names: Bound<'py, PyDict>,
    device_names: Bound<'py, PyDict>,
}

impl<'py> Describe<'py> {
    /// The report's metadata of a frozen value: a tensor spec's here, anything else's in Python.
    fn of(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(spec) = value.cast::<TensorSpec>()
            && let Some(meta) =
                spec.get()
                    .describe(value.py(), &self.dtype_names, &self.device_names)?
        {
            return Ok(meta.into_any());
        }
        self.describe.call1((value,))
    }
}

/// The per-call parts of an analysis report, as [`Assembler::assemble`] returns them.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct Assembly {
    /// The report's layers, in the order the calls opened.
    pub layers: Py<PyList>,
    /// The model's `module_flops`, `macs` and `dmas` (not requested in structure mode).
    pub module_totals: Py<PyDict>,
    /// The operator FLOPs of every module path (empty in structure mode).
    pub by_module: Py<PyList>,
    /// The diagnostics of modules without a formula (empty in structure mode).
    pub diagnostics: Py<PyList>,
    /// Per operator entry with deferred formulas, what they came to.
    pub tallies: Vec<Py<FormulaTally>>,
    /// The floating-point dtypes the module calls returned, by name, in the order met, each
    /// with the FLOPs of the operators the calls returning it ran themselves (0 in structure
    /// mode): what the forward computed in, with its share of the work.
    pub output_dtypes: Vec<(Py<PyString>, u128)>,
}

/// The floating-point dtypes of the module calls' outputs (see [`Assembly::output_dtypes`]),
/// read from the layers' output metadata. Whether a dtype is a floating-point one is asked of
/// the dtype once per name.
struct OutputDtypes<'py> {
    /// Name, FLOPs, and whether the dtype is a floating-point one.
    found: Vec<(Bound<'py, PyString>, u128, bool)>,
    /// The dtypes by name, as `describe` names them (a dtype's name is `str(dtype)`).
    dtype_names: Bound<'py, PyDict>,
}

impl<'py> OutputDtypes<'py> {
    /// Notes the dtypes of one call's output metadata; its own operators' FLOPs count for the
    /// first floating-point one (the precision it computed in).
    fn note(&mut self, output: &Bound<'py, PyAny>, flops: u128) -> PyResult<()> {
        let mut first = true;
        self.walk(output, flops, &mut first, 0)
    }

    fn walk(
        &mut self,
        meta: &Bound<'py, PyAny>,
        flops: u128,
        first: &mut bool,
        depth: usize,
    ) -> PyResult<()> {
        // Metadata nests as deep as the value it describes, which `describe` bounds; this bound
        // only keeps a malformed one from recursing without end.
        if depth > 64 {
            return Ok(());
        }
        let py = meta.py();
        if let Ok(dict) = meta.cast::<PyDict>() {
            if let Some(kind) = dict.get_item(intern!(py, "kind"))?
                && kind.eq(intern!(py, "tensor"))?
            {
                if let Some(name) = dict.get_item(intern!(py, "dtype"))?
                    && let Ok(name) = name.cast_into::<PyString>()
                {
                    self.add(name, flops, first)?;
                }
                return Ok(());
            }
            for (_, value) in dict.iter() {
                self.walk(&value, flops, first, depth + 1)?;
            }
        } else if let Ok(list) = meta.cast::<PyList>() {
            for item in list.iter() {
                self.walk(&item, flops, first, depth + 1)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, name: Bound<'py, PyString>, flops: u128, first: &mut bool) -> PyResult<()> {
        let text = name.to_str()?;
        let position = match self
            .found
            .iter()
            .position(|(known, _, _)| known.to_str().is_ok_and(|known| known == text))
        {
            Some(position) => position,
            None => {
                let floating = self.floating(text)?;
                self.found.push((name, 0, floating));
                self.found.len() - 1
            }
        };
        let entry = &mut self.found[position];
        if entry.2 && *first {
            *first = false;
            entry.1 = entry.1.saturating_add(flops);
        }
        Ok(())
    }

    /// Whether the dtype named `text` is a floating-point one (`False` for a name no dtype
    /// has).
    fn floating(&self, text: &str) -> PyResult<bool> {
        let py = self.dtype_names.py();
        for (dtype, name) in self.dtype_names.iter() {
            if name
                .cast::<PyString>()
                .is_ok_and(|name| name.to_str().is_ok_and(|name| name == text))
            {
                return dtype.getattr(intern!(py, "is_floating_point"))?.is_truthy();
            }
        }
        Ok(false)
    }

    /// The floating-point dtypes, in the order met, with their FLOPs.
    fn take(self) -> Vec<(Py<PyString>, u128)> {
        self.found
            .into_iter()
            .filter(|(_, _, floating)| *floating)
            .map(|(name, flops, _)| (name.unbind(), flops))
            .collect()
    }
}

/// Assembles the per-call parts of analysis reports; made once, with what every analysis of
/// the process shares.
///
/// `kind_of(module)` gives a module's [`crate::receptive_fields::ModuleKind`] and
/// `iter_tensors(value)` the tensor specs of a frozen value, as [`FieldTracker`] takes them;
/// `describe(value)` describes a value other than a tensor spec, and `dtype_names` and
/// `device_names` name the dtypes and devices of tensor specs. `module_scope`, `module_method`,
/// `path_scope` and `path_method` are the scopes and methods of module estimates and of the
/// operator FLOPs of module paths. `counted`, `deferred` and `uncounted` are the outcome codes
/// of `torchscan.opflops.mode`, `size_type` is `torch.Size` and `shape_elements(values)` the
/// Python count of the elements of shapes, for counts the compiled one cannot hold.
#[pyclass(module = "torchscan._core", frozen)]
pub struct Assembler {
    kind_of: Py<PyAny>,
    iter_tensors: Py<PyAny>,
    describe: Py<PyAny>,
    dtype_names: Py<PyDict>,
    device_names: Py<PyDict>,
    texts: Texts,
    counted: i64,
    deferred: i64,
    uncounted: i64,
    size_type: Py<PyAny>,
    shape_elements: Py<PyAny>,
}

#[pymethods]
impl Assembler {
    /// An assembler with every part named (see the class documentation).
    #[new]
    #[pyo3(signature = (
        *,
        kind_of,
        iter_tensors,
        describe,
        dtype_names,
        device_names,
        module_scope,
        module_method,
        path_scope,
        path_method,
        counted,
        deferred,
        uncounted,
        size_type,
        shape_elements,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind_of: Py<PyAny>,
        iter_tensors: Py<PyAny>,
        describe: Py<PyAny>,
        dtype_names: Py<PyDict>,
        device_names: Py<PyDict>,
        module_scope: Py<PyString>,
        module_method: Py<PyString>,
        path_scope: Py<PyString>,
        path_method: Py<PyString>,
        counted: i64,
        deferred: i64,
        uncounted: i64,
        size_type: Py<PyAny>,
        shape_elements: Py<PyAny>,
    ) -> Self {
        Self {
            kind_of,
            iter_tensors,
            describe,
            dtype_names,
            device_names,
            texts: Texts {
                module_scope,
                module_method,
                path_scope,
                path_method,
            },
            counted,
            deferred,
            uncounted,
            size_type,
            shape_elements,
        }
    }

    /// Assembles the per-call parts of an analysis report from a recorder whose forward is
    /// over.
    ///
    /// With a `log` (full mode: module calls as their positions and [`OperatorRecord`]s, in the
    /// order they ran), the estimates, receptive fields (seeded at the model inputs'
    /// `(id, ndim)`, `seeds`) and operator figures are worked out; without one (structure mode)
    /// they are not requested. `own` holds each recorded module's own parameters and buffers,
    /// counted at the first layer that holds them, and the parameters under each module with
    /// children, which its layers give as `parameters["total"]`.
    #[pyo3(signature = (recorder, own, *, log = None, seeds = Vec::new()))]
    fn assemble<'py>(
        &self,
        py: Python<'py>,
        recorder: &Bound<'py, CallRecorder>,
        own: PyRef<'py, OwnStorage>,
        log: Option<Bound<'py, PyList>>,
        seeds: Vec<(usize, usize)>,
    ) -> PyResult<Assembly> {
        let operators = OperatorPass {
            counted: self.counted,
            deferred: self.deferred,
            uncounted: self.uncounted,
            size_type: self.size_type.bind(py).clone(),
            shape_elements: self.shape_elements.bind(py).clone(),
        };
        let describe = Describe {
            describe: self.describe.bind(py).clone(),
            dtype_names: self.dtype_names.bind(py).clone(),
            device_names: self.device_names.bind(py).clone(),
        };
        let helpers = (self.kind_of.clone_ref(py), self.iter_tensors.clone_ref(py));
        assemble(
            py,
            recorder,
            log,
            seeds,
            &operators,
            own,
            helpers,
            &describe,
            &self.texts,
        )
    }
}

/// Assembles the per-call parts of an analysis report (see [`Assembler::assemble`]).
#[allow(clippy::too_many_arguments)]
fn assemble<'py>(
    py: Python<'py>,
    recorder: &Bound<'py, CallRecorder>,
    log: Option<Bound<'py, PyList>>,
    seeds: Vec<(usize, usize)>,
    operators: &OperatorPass<'py>,
    own: PyRef<'py, OwnStorage>,
    helpers: (Py<PyAny>, Py<PyAny>),
    describe: &Describe<'py>,
    texts: &Texts,
) -> PyResult<Assembly> {
    let full = log.is_some();
    // Everything is copied out first: formulas run Python code, which must find the recorder
    // free.
    let (modules, mut nodes, closed) = {
        let this = recorder.try_borrow()?;
        let modules = this
            .known
            .iter()
            .map(|known| {
                Ok(Module {
                    module: known.module.clone_ref(py),
                    path: known.path.clone_ref(py),
                    path_text: known.path.bind(py).extract()?,
                    depth: known.depth,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let nodes: Vec<Node> = this
            .calls
            .iter()
            .map(|call| Node {
                module: call.module,
                call_index: call.call_index,
                parent: call.parent,
                inputs: call.inputs.as_ref().map(|value| value.clone_ref(py)),
                kwargs: call.kwargs.as_ref().map(|value| value.clone_ref(py)),
                output: call.output.as_ref().map(|value| value.clone_ref(py)),
                finished: call.finished,
                children: Vec::new(),
                level: 0,
                own_flops: 0,
                own_dmas: 0,
                own_dmas_beyond: 0.0,
                own_uncounted: None,
                first_op: -1,
                estimates: None,
            })
            .collect();
        (modules, nodes, this.closed.clone())
    };
    let count = nodes.len();
    for position in 0..count {
        if let Some(parent) = nodes[position].parent {
            nodes[position].level = nodes[parent].level + 1;
            nodes[parent].children.push(position);
        }
    }
    // Every call closes (the forward hook is always called), so the order they closed in is
    // already children first; a call left open by a hook that misbehaved needs the tree walk.
    let ordered = if closed.len() == count {
        closed
    } else {
        post_order(&Calls(&nodes))
    };
    let module_scope = texts.module_scope.bind(py);
    let module_method = texts.module_method.bind(py);
    let mut diagnostics: Vec<Bound<'py, PyDict>> = Vec::new();
    let mut fields: Vec<Option<Bound<'py, PyDict>>> = (0..count).map(|_| None).collect();
    let mut tracker = FieldTracker::new(helpers.0, helpers.1);
    let mut tallies: Vec<Py<FormulaTally>> = Vec::new();
    if full {
        if let Some(log) = &log {
            tallies = operator_pass(py, log, &mut nodes, operators)?.take(py)?;
        }
        let mut reported: HashSet<usize> = HashSet::new();
        for &position in &ordered {
            estimate(
                py,
                &mut nodes,
                &modules,
                &mut tracker,
                position,
                &mut reported,
                &mut diagnostics,
            )?;
        }
        for (ident, ndim) in seeds {
            tracker.seed(ident, ndim);
        }
        if let Some(log) = &log {
            for event in log.iter() {
                if let Ok(record) = event.cast::<OperatorRecord>() {
                    tracker.on_operator(py, record.get())?;
                    continue;
                }
                let position: usize = event.extract()?;
                let Some(node) = nodes.get(position) else {
                    return Err(PyValueError::new_err(format!(
                        "the log names call {position} of {count}"
                    )));
                };
                let none = py.None();
                let inputs = node.inputs.as_ref().unwrap_or(&none).bind(py);
                let output = node.output.as_ref().unwrap_or(&none).bind(py);
                let module = modules[node.module].module.bind(py);
                let field =
                    tracker.on_call(py, module, inputs, output, !node.children.is_empty())?;
                fields[position] = Some(field);
            }
        }
    }
    // The layers, in the order the calls opened; a parameter or buffer is counted at the first
    // layer that holds it, and storage that an earlier layer's tensors cover is not counted
    // again (see `count_once`).
    let by_storage = own.counted_in_order(nodes.iter().map(|node| node.module))?;
    let layers = PyList::empty(py);
    let mut output_dtypes = OutputDtypes {
        found: Vec::new(),
        dtype_names: describe.dtype_names.clone(),
    };
    let mut seen: HashSet<usize> = HashSet::new();
    let mut names: Vec<Option<Bound<'py, PyString>>> = (0..modules.len()).map(|_| None).collect();
    for (position, node) in nodes.iter().enumerate() {
        let module = &modules[node.module];
        let tensors = own.modules.get(node.module).ok_or_else(|| {
            PyValueError::new_err("the storage walk gives fewer modules than the recorder")
        })?;
        let (mut trainable, mut frozen, mut parameter_bytes, mut parameters_shared) =
            (0_u64, 0_u64, 0_u64, false);
        let (mut buffer_elements, mut buffer_bytes, mut buffers_shared) = (0_u64, 0_u64, false);
        for tensor in tensors {
            let first = seen.insert(tensor.identity);
            let (elements, bytes, overlapped) = match by_storage.get(&tensor.identity) {
                Some(counted) => (counted.elements, counted.bytes, counted.overlapped),
                None => (tensor.elements, tensor.bytes, false),
            };
            match (tensor.parameter, first) {
                (true, false) => parameters_shared = true,
                (false, false) => buffers_shared = true,
                (true, true) => {
                    parameters_shared |= overlapped;
                    if tensor.trainable {
                        trainable += elements;
                    } else {
                        frozen += elements;
                    }
                    parameter_bytes += bytes;
                }
                (false, true) => {
                    buffers_shared |= overlapped;
                    buffer_elements += elements;
                    buffer_bytes += bytes;
                }
            }
        }
        let layer = LAYER.dict(py)?;
        layer.set_item(intern!(py, "path"), module.path.bind(py))?;
        layer.set_item(intern!(py, "call_index"), node.call_index)?;
        layer.set_item(intern!(py, "depth"), module.depth)?;
        let kind = tracker.kind(py, module.module.bind(py))?;
        let type_name = kind.name_object.bind(py);
        let name = match &names[node.module] {
            Some(name) => name.clone(),
            None => {
                let name = match module.path_text.rsplit_once('.') {
                    Some((_, last)) => PyString::new(py, last),
                    None if module.path_text.is_empty() => {
                        PyString::new(py, &type_name.to_str()?.to_lowercase())
                    }
                    None => module.path.bind(py).cast::<PyString>()?.clone(),
                };
                names[node.module] = Some(name.clone());
                name
            }
        };
        layer.set_item(intern!(py, "name"), name)?;
        layer.set_item(intern!(py, "type"), type_name)?;
        let args = PyList::empty(py);
        let kwargs = PyDict::new(py);
        let mut output = py.None().into_bound(py);
        if node.finished {
            if let Some(inputs) = &node.inputs {
                for value in inputs.bind(py).try_iter()? {
                    args.append(describe.of(&value?)?)?;
                }
            }
            if let Some(keywords) = &node.kwargs {
                for (key, value) in keywords.bind(py).cast::<PyDict>()?.iter() {
                    kwargs.set_item(key, describe.of(&value)?)?;
                }
            }
            let none = py.None();
            output = describe.of(node.output.as_ref().unwrap_or(&none).bind(py))?;
            output_dtypes.note(&output, node.own_flops)?;
        }
        let input = PyDict::new(py);
        input.set_item(intern!(py, "args"), args)?;
        input.set_item(intern!(py, "kwargs"), kwargs)?;
        layer.set_item(intern!(py, "input"), input)?;
        layer.set_item(intern!(py, "output"), output)?;
        let parameters = PARAMETERS.dict(py)?;
        parameters.set_item(intern!(py, "trainable"), trainable)?;
        parameters.set_item(intern!(py, "frozen"), frozen)?;
        parameters.set_item(intern!(py, "bytes"), parameter_bytes)?;
        parameters.set_item(intern!(py, "shared"), parameters_shared)?;
        if let Some(Some(under)) = own.totals.get(node.module) {
            let total = TOTAL.dict(py)?;
            total.set_item(intern!(py, "trainable"), under.trainable)?;
            total.set_item(intern!(py, "frozen"), under.frozen)?;
            total.set_item(intern!(py, "bytes"), under.bytes)?;
            parameters.set_item(intern!(py, "total"), total)?;
        }
        layer.set_item(intern!(py, "parameters"), parameters)?;
        let buffers = BUFFERS.dict(py)?;
        buffers.set_item(intern!(py, "elements"), buffer_elements)?;
        buffers.set_item(intern!(py, "bytes"), buffer_bytes)?;
        buffers.set_item(intern!(py, "shared"), buffers_shared)?;
        layer.set_item(intern!(py, "buffers"), buffers)?;
        let metrics = METRICS.dict(py)?;
        metrics.set_item(intern!(py, "calls"), one_call(py)?)?;
        for (index, (name, unit)) in kinds(py).into_iter().enumerate() {
            let metric = match &node.estimates {
                Some(estimates) if full => estimates[index].to_dict(py, unit, module_scope)?,
                _ => not_requested(py, unit, module_scope, module_method)?,
            };
            metrics.set_item(name, metric)?;
        }
        let field = match fields[position].take() {
            Some(field) => field,
            None if full => unavailable(py, intern!(py, "not computed for this call"))?,
            None => unavailable(py, intern!(py, NOT_REQUESTED))?,
        };
        field_numbers(py, &field, &metrics)?;
        layer.set_item(intern!(py, "metrics"), metrics)?;
        layer.set_item(intern!(py, "receptive_field"), field)?;
        if let Some(kernel) = kernel_size(module.module.bind(py))? {
            layer.set_item(intern!(py, "kernel_size"), kernel)?;
        }
        layers.append(layer)?;
    }
    let by_module = PyList::empty(py);
    if full {
        for (entry_path, flops, names) in path_flops(&nodes, &modules, &ordered) {
            let entry = PyDict::new(py);
            entry.set_item(intern!(py, "path"), entry_path)?;
            let reason = (!names.is_empty()).then(|| {
                let listed: Vec<&str> = names.iter().map(String::as_str).collect();
                format!(
                    "uncounted operators ran inside this module: {}",
                    listed.join(", ")
                )
            });
            let metric = Metric {
                known: flops as f64,
                method: texts.path_method.clone_ref(py),
                reason,
            };
            entry.set_item(
                intern!(py, "flops"),
                metric.to_dict(py, intern!(py, "FLOPs"), texts.path_scope.bind(py))?,
            )?;
            by_module.append(entry)?;
        }
    }
    let totals = module_totals(py, &nodes, &modules, texts, full)?;
    Ok(Assembly {
        layers: layers.unbind(),
        module_totals: totals.unbind(),
        by_module: by_module.unbind(),
        diagnostics: PyList::new(py, diagnostics)?.unbind(),
        tallies,
        output_dtypes: output_dtypes.take(),
    })
}

/// A size of `kernel_size`: an integer (not a boolean) of at least 0.
fn is_size(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() && value.ge(0)?)
}

/// The module's own `kernel_size` attribute (convolution, pooling) as a list of sizes, for
/// torchinfo's kernel column: `[k]` for one size, the sizes of a tuple or list, each the
/// object the module holds; `None` without one, or when it holds anything else (a boolean, a
/// negative number, a string).
fn kernel_size<'py>(module: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = module.py();
    let Ok(attributes) = module.getattr(intern!(py, "__dict__")) else {
        return Ok(None);
    };
    let Ok(attributes) = attributes.cast_into::<PyDict>() else {
        return Ok(None);
    };
    let Some(kernel) = attributes.get_item(intern!(py, "kernel_size"))? else {
        return Ok(None);
    };
    if kernel.is_instance_of::<PyBool>() {
        return Ok(None);
    }
    if kernel.is_instance_of::<PyInt>() {
        return Ok(if is_size(&kernel)? {
            Some(PyList::new(py, [kernel])?)
        } else {
            None
        });
    }
    if !(kernel.is_instance_of::<PyTuple>() || kernel.is_instance_of::<PyList>()) {
        return Ok(None);
    }
    let sizes = PyList::empty(py);
    for size in kernel.try_iter()? {
        let size = size?;
        if !is_size(&size)? {
            return Ok(None);
        }
        sizes.append(size)?;
    }
    Ok(Some(sizes))
}

/// Gives each call the FLOPs, DMAs and uncounted operator names of the operators it ran itself
/// (not inside a child module) and the sequence number of its first operator, applying the
/// deferred formulas; returns what those came to per entry, in the order entries were met.
fn operator_pass<'py>(
    py: Python<'py>,
    log: &Bound<'py, PyList>,
    nodes: &mut [Node],
    pass: &OperatorPass<'py>,
) -> PyResult<Tallies> {
    let mut tallies = Tallies::default();
    let mut sequence: i64 = 0;
    for event in log.iter() {
        let Ok(record) = event.cast::<OperatorRecord>() else {
            continue;
        };
        let record = record.get();
        let entry = record.entry.bind(py);
        let call = record.call;
        if let Some(position) = call {
            let Some(node) = nodes.get_mut(position) else {
                return Err(PyValueError::new_err(format!(
                    "an operator names call {position} of {}",
                    nodes.len()
                )));
            };
            if node.first_op < 0 {
                node.first_op = sequence;
            }
        }
        sequence += 1;
        let mut outcome = record.outcome;
        let (args, kwargs, out) = (
            record.args.bind(py),
            record.kwargs.bind(py),
            record.out.bind(py),
        );
        let mut flops: u128 = 0;
        if outcome == pass.deferred {
            // A failing formula is counted as the mode counts one.
            match tallies.of(entry).apply(args, kwargs, out)? {
                Some(value) => {
                    flops = value;
                    outcome = pass.counted;
                }
                None => outcome = pass.uncounted,
            }
        } else if outcome == pass.counted {
            flops = record.flops;
        }
        let Some(position) = call else {
            continue;
        };
        let node = &mut nodes[position];
        if outcome == pass.counted {
            node.own_flops = node.own_flops.saturating_add(flops);
            let empty = PyTuple::empty(py);
            let keywords = if kwargs.is_truthy()? {
                kwargs.clone()
            } else {
                empty.clone().into_any()
            };
            let moved = PyTuple::new(
                py,
                [args.clone(), PyTuple::new(py, [out])?.into_any(), keywords],
            )?;
            match shape_elements(moved.as_any(), &pass.size_type) {
                Some(dmas) => node.own_dmas = node.own_dmas.saturating_add(dmas),
                // Beyond 128 bits (shapes of meta tensors can be that large): Python's exact
                // count, kept as the nearest float.
                None => {
                    let dmas: f64 = pass.shape_elements.call1((moved,))?.extract()?;
                    node.own_dmas_beyond += dmas;
                }
            }
        } else if outcome == pass.uncounted {
            let name: String = entry.getattr(intern!(py, "name"))?.extract()?;
            node.own_uncounted
                .get_or_insert_with(BTreeSet::new)
                .insert(name);
        }
    }
    Ok(tallies)
}

/// Sets the estimates of the call at `position`, whose children have theirs: the module's
/// formula, or its children plus the operators it runs itself.
fn estimate<'py>(
    py: Python<'py>,
    nodes: &mut [Node],
    modules: &[Module],
    tracker: &mut FieldTracker,
    position: usize,
    reported: &mut HashSet<usize>,
    diagnostics: &mut Vec<Bound<'py, PyDict>>,
) -> PyResult<()> {
    let node = &nodes[position];
    let module = &modules[node.module];
    let bound = module.module.bind(py);
    let kind = tracker.kind(py, bound)?;
    let none = py.None();
    if node.finished
        && let Some(formula) = &kind.estimate
    {
        let inputs = node.inputs.as_ref().unwrap_or(&none).bind(py);
        let output = node.output.as_ref().unwrap_or(&none).bind(py);
        let found = formula.bind(py).call1((bound, inputs, output))?;
        if !found.is_none() {
            let method = &kind.formula_method;
            // As `float(value)`: exact for floats, correctly rounded for integers.
            let value =
                |name: &Bound<'_, PyString>| -> PyResult<f64> { found.getattr(name)?.extract() };
            let values = [
                value(intern!(py, "flops"))?,
                value(intern!(py, "macs"))?,
                value(intern!(py, "dmas"))?,
            ];
            nodes[position].estimates = Some(values.map(|known| Metric {
                known,
                method: method.clone_ref(py),
                reason: None,
            }));
            return Ok(());
        }
    }
    let mut missing: Vec<String> = Vec::new();
    if !node.finished {
        missing.push(format!("{} did not finish its forward", kind.name));
    } else if is_leaf(py, bound)? {
        missing.push(format!("no formula for {}", kind.name));
        if reported.insert(node.module) {
            let diagnostic = PyDict::new(py);
            diagnostic.set_item(intern!(py, "code"), "module_without_formula")?;
            diagnostic.set_item(intern!(py, "severity"), "warning")?;
            diagnostic.set_item(intern!(py, "metric"), "module_flops")?;
            diagnostic.set_item(
                intern!(py, "message"),
                format!(
                    "{} has no module estimate formula; module FLOPs, MACs and DMAs are partial \
                     (lower bounds). Operator FLOPs count its operators.",
                    kind.name
                ),
            )?;
            diagnostic.set_item(intern!(py, "path"), module.path.bind(py))?;
            diagnostics.push(diagnostic);
        }
    }
    if let Some(names) = &node.own_uncounted
        && !names.is_empty()
    {
        let listed: Vec<&str> = names.iter().map(String::as_str).collect();
        missing.push(format!(
            "operators without a FLOP formula ran in {}: {}",
            kind.name,
            listed.join(", ")
        ));
    }
    let own_flops = node.own_flops as f64;
    let own = [
        own_flops,
        own_flops / 2.0,
        node.own_dmas as f64 + node.own_dmas_beyond,
    ];
    let method = if node.children.is_empty() {
        intern!(py, FROM_OPERATORS)
    } else {
        intern!(py, FROM_CHILDREN)
    };
    let mut estimates: Vec<Metric> = Vec::with_capacity(3);
    for (index, own_value) in own.iter().enumerate() {
        let mut children = 0.0_f64;
        let mut incomplete = false;
        for &child in &node.children {
            let Some(metric) = nodes[child].estimates.as_ref().map(|all| &all[index]) else {
                return Err(PyValueError::new_err(
                    "a call's estimates were asked for before its children's",
                ));
            };
            children += metric.known;
            incomplete |= metric.reason.is_some();
        }
        let known = own_value + children;
        let reason = if missing.is_empty() && !incomplete {
            None
        } else {
            let mut reasons = missing.clone();
            if incomplete {
                reasons.push("a child module's estimate is incomplete".to_owned());
            }
            Some(reasons.join("; "))
        };
        estimates.push(Metric {
            known,
            method: method.clone().unbind(),
            reason,
        });
    }
    let [flops, macs, dmas]: [Metric; 3] = estimates
        .try_into()
        .map_err(|_| PyValueError::new_err("three estimates per call"))?;
    nodes[position].estimates = Some([flops, macs, dmas]);
    Ok(())
}

/// Whether the module has no child module.
fn is_leaf(py: Python<'_>, module: &Bound<'_, PyAny>) -> PyResult<bool> {
    for child in module
        .getattr(intern!(py, "_modules"))?
        .call_method0(intern!(py, "values"))?
        .try_iter()?
    {
        if !child?.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Operator FLOPs of every module path, children included, from each call's own operators:
/// `(path, flops, uncounted operator names)` (see [`path_totals`]).
fn path_flops<'py>(
    nodes: &[Node],
    modules: &'py [Module],
    ordered: &[usize],
) -> Vec<(&'py Py<PyAny>, u128, BTreeSet<String>)> {
    // A path's identity: the first module with its text.
    let mut path_ids: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, module) in modules.iter().enumerate() {
        path_ids.entry(module.path_text.as_str()).or_insert(index);
    }
    let own: Vec<OwnOperators> = nodes
        .iter()
        .map(|node| OwnOperators {
            path: path_ids[modules[node.module].path_text.as_str()],
            level: node.level,
            flops: node.own_flops,
            uncounted: node.own_uncounted.clone().unwrap_or_default(),
            first_operator: u64::try_from(node.first_op).ok(),
        })
        .collect();
    path_totals(&Calls(nodes), &own, ordered)
        .into_iter()
        .map(|total| {
            let module = nodes[total.call].module;
            (&modules[module].path, total.flops, total.uncounted)
        })
        .collect()
}

/// The model's `module_flops`, `macs` and `dmas`: the sums over the calls of the root module
/// (not requested in structure mode).
fn module_totals<'py>(
    py: Python<'py>,
    nodes: &[Node],
    modules: &[Module],
    texts: &Texts,
    full: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (scope, method) = (texts.module_scope.bind(py), texts.module_method.bind(py));
    let roots: Vec<&Node> = nodes
        .iter()
        .filter(|node| modules[node.module].path_text.is_empty())
        .collect();
    let totals = PyDict::new(py);
    for (index, (total_name, unit)) in kinds(py).into_iter().enumerate() {
        if !full || roots.is_empty() {
            totals.set_item(total_name, not_requested(py, unit, scope, method)?)?;
            continue;
        }
        let mut known = 0.0_f64;
        let mut reasons: BTreeSet<&str> = BTreeSet::new();
        let mut incomplete = false;
        for root in &roots {
            let Some(metric) = root.estimates.as_ref().map(|all| &all[index]) else {
                return Err(PyValueError::new_err("a root call has no estimates"));
            };
            known += metric.known;
            if let Some(reason) = &metric.reason {
                incomplete = true;
                if !reason.is_empty() {
                    reasons.insert(reason);
                }
            }
        }
        let metric = Metric {
            known,
            method: method.clone().unbind(),
            reason: incomplete.then(|| reasons.into_iter().collect::<Vec<_>>().join("; ")),
        };
        totals.set_item(total_name, metric.to_dict(py, unit, scope)?)?;
    }
    Ok(totals)
}

/// Adds [`assemble`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Assembly>()?;
    module.add_class::<Assembler>()
}
