//! Receptive fields of an analysed forward, replayed from its log by compiled code.
//!
//! `crawl_module` logs every module call and operator of its forward (see `torchscan.crawl.dispatch_recorder`).
//! Once the forward is over, [`FieldTracker`] carries each tensor's receptive field, effective
//! stride and leading padding along that log, keyed by tensor identity, and gives every module
//! call its `receptive_field` section. Only the field step of a module comes from Python (the
//! per-module formulas); everything else runs here.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use torchscan_core::receptive_field::{Field, Step};

use crate::call_recorder::TensorSpec;
use crate::operator_record::OperatorRecord;
use crate::template::Template;

/// Why a call has no field when its input depends on the model input through a step that no
/// field describes.
const MIXED_REASON: &str = "the input depends on the model input through a step that does not \
     keep spatial positions aligned (attention, a linear or recurrent layer, an upsampling, a \
     transposed convolution)";
const NOT_A_CHAIN: &str = "the output is not produced by a chain of tracked layers (branches \
     merged by an untracked operation, or no spatial dimensions)";
const NOT_FROM_INPUT: &str = "the input does not come from the model input through tracked layers";
const TRANSPOSED: &str = "transposed convolutions are not tracked";

/// What a tensor carries: a field, or the mark of a tensor that depends on the model input
/// through a step no field describes (attention, a linear layer, an upsampling...).
#[derive(Clone)]
enum State {
    Field(Arc<Field>),
    Mixed,
}

/// What the analysis needs of a module's type, asked of Python once per type.
pub(crate) struct Kind {
    /// The type, kept alive while its address keys the cache.
    _kind: Py<PyType>,
    /// Whether a module formula serves the type.
    pub(crate) has_rule: bool,
    transposed: bool,
    /// The rule's field step, `field(module, inputs, output) -> FieldStep | None`.
    field: Option<Py<PyAny>>,
    /// Whether that step is `passthrough_batched` (positions kept in every spatial dimension of
    /// a batched, channels-first first argument), which is worked out here.
    batched_passthrough: bool,
    /// The rule's estimate, `estimate(module, inputs, output) -> Estimate | None`.
    pub(crate) estimate: Option<Py<PyAny>>,
    /// `type(module).__name__`.
    pub(crate) name: String,
    /// The same, as a Python string.
    pub(crate) name_object: Py<PyString>,
    /// The method of the estimates its formula gives: `formula for <name>`.
    pub(crate) formula_method: Py<PyString>,
}

/// What the analysis needs of a module's type: its formula, field step and estimate.
///
/// `torchscan.crawl.receptive_fields` makes one per module type; it depends on the type alone.
#[pyclass(module = "torchscan._core", frozen, get_all)]
pub struct ModuleKind {
    /// Whether a module formula covers the type.
    pub has_formula: bool,
    /// Whether the type is a transposed convolution.
    pub transposed: bool,
    /// The formula's receptive-field step, or `None`.
    pub field: Py<PyAny>,
    /// Whether that step is `passthrough_batched`, which the replay works out itself.
    pub batched_passthrough: bool,
    /// The formula's estimate (`estimate(module, inputs, output)`), or `None`.
    pub estimate: Py<PyAny>,
}

#[pymethods]
impl ModuleKind {
    /// A kind with every field named.
    #[new]
    #[pyo3(signature = (*, has_formula, transposed, field, batched_passthrough, estimate))]
    fn new(
        has_formula: bool,
        transposed: bool,
        field: Py<PyAny>,
        batched_passthrough: bool,
        estimate: Py<PyAny>,
    ) -> Self {
        Self {
            has_formula,
            transposed,
            field,
            batched_passthrough,
            estimate,
        }
    }
}

/// Carries receptive fields along an analysed forward's log (see the module documentation).
///
/// `kind_of(module)` answers a [`ModuleKind`] for a module's type; `iter_tensors(value)`
/// lists the tensor specs of a frozen value. The assembly hands it the log's operators
/// ([`FieldTracker::on_operator`]) and module calls ([`FieldTracker::on_call`]) in the order
/// they ran.
pub struct FieldTracker {
    states: HashMap<usize, State>,
    kinds: HashMap<usize, Arc<Kind>>,
    elementwise: HashMap<usize, bool>,
    kind_of: Py<PyAny>,
    iter_tensors: Py<PyAny>,
}

impl FieldTracker {
    /// A tracker that knows no field yet, asking `kind_of` about module types and listing the
    /// tensor specs of frozen values with `iter_tensors`.
    pub(crate) fn new(kind_of: Py<PyAny>, iter_tensors: Py<PyAny>) -> Self {
        Self {
            states: HashMap::new(),
            kinds: HashMap::new(),
            elementwise: HashMap::new(),
            kind_of,
            iter_tensors,
        }
    }

    /// Gives a model input (`id(tensor)` and its number of dimensions) the field of a single
    /// position: size 1, stride 1, padding 0 in each spatial dimension (batched, channels first).
    pub(crate) fn seed(&mut self, ident: usize, ndim: usize) {
        if ndim >= 3 {
            let spatial = ndim - 2;
            self.states
                .insert(ident, State::Field(Arc::new(Field::position(spatial))));
        }
    }
}

impl FieldTracker {
    /// Carries the fields through one operator of the log.
    pub(crate) fn on_operator(&mut self, py: Python<'_>, record: &OperatorRecord) -> PyResult<()> {
        let inputs = &record.inputs;
        let outputs = &record.outputs;
        if self.is_elementwise(py, record.entry.bind(py))? {
            // Fields are carried from the inputs to the outputs; new tensors at an address end
            // the state kept there first.
            for (ident, _) in outputs {
                if !inputs.contains(ident) {
                    self.states.remove(ident);
                }
            }
            self.combine(inputs, outputs);
            return Ok(());
        }
        // Any other operator's new results depend on its first argument (the tensor it works
        // on, or the list of them) in a way no field step describes.
        let first = record.first_inputs;
        let mixed = inputs
            .iter()
            .take(first)
            .any(|ident| self.states.contains_key(ident));
        for (ident, _) in outputs {
            if inputs.contains(ident) {
                continue; // an argument returned as it is (an in-place operator)
            }
            if mixed {
                self.states.insert(*ident, State::Mixed);
            } else {
                self.states.remove(ident);
            }
        }
        Ok(())
    }

    /// Whether the operator's entry is excluded as elementwise (read once per entry).
    fn is_elementwise(&mut self, py: Python<'_>, entry: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = entry.as_ptr() as usize;
        if let Some(known) = self.elementwise.get(&key) {
            return Ok(*known);
        }
        let exclusion = entry.getattr(intern!(py, "exclusion"))?;
        let elementwise = !exclusion.is_none() && exclusion.extract::<String>()? == "elementwise";
        self.elementwise.insert(key, elementwise);
        Ok(elementwise)
    }

    /// Propagates through an elementwise operator: the union of its inputs' fields.
    fn combine(&mut self, inputs: &[usize], outputs: &[(usize, usize)]) {
        if inputs.len() == 1 {
            // The usual activation, in place or not.
            let Some(state) = self.states.get(&inputs[0]).cloned() else {
                return;
            };
            for &(ident, ndim) in outputs {
                let fits = match &state {
                    State::Mixed => true,
                    State::Field(field) => ndim.checked_sub(2) == Some(field.size.len()),
                };
                if fits {
                    self.states.insert(ident, state.clone());
                }
            }
            return;
        }
        let found: Vec<State> = inputs
            .iter()
            .filter_map(|ident| self.states.get(ident).cloned())
            .collect();
        if found.is_empty() {
            return;
        }
        let mut fields: Vec<Arc<Field>> = Vec::with_capacity(found.len());
        let mut mixed = false;
        for state in found {
            match state {
                State::Mixed => mixed = true,
                State::Field(field) => fields.push(field),
            }
        }
        // One input depends on the model input in a way no field describes, or the inputs'
        // grids differ: neither does the result.
        let merged = match fields.as_slice() {
            _ if mixed => None,
            [one] => Some(one.clone()),
            _ => Field::union(fields.iter().map(|field| field.as_ref())).map(Arc::new),
        };
        let Some(merged) = merged else {
            for &(ident, _) in outputs {
                self.states.insert(ident, State::Mixed);
            }
            return;
        };
        let dims = merged.dims();
        let state = State::Field(merged);
        for &(ident, ndim) in outputs {
            if ndim.checked_sub(2) == Some(dims) {
                self.states.insert(ident, state.clone());
            }
        }
    }

    /// What the analysis needs of `module`'s type.
    pub(crate) fn kind(
        &mut self,
        py: Python<'_>,
        module: &Bound<'_, PyAny>,
    ) -> PyResult<Arc<Kind>> {
        let kind = module.get_type();
        let key = kind.as_ptr() as usize;
        if let Some(known) = self.kinds.get(&key) {
            return Ok(known.clone());
        }
        let answer = self.kind_of.bind(py).call1((module,))?;
        let answer = answer.cast_into::<ModuleKind>().map_err(|_| {
            PyTypeError::new_err("kind_of(module) must return a torchscan._core.ModuleKind")
        })?;
        let answer = answer.get();
        let has_rule = answer.has_formula;
        let transposed = answer.transposed;
        let batched_passthrough = answer.batched_passthrough;
        let field = answer.field.bind(py).clone();
        let estimate = answer.estimate.bind(py).clone();
        let name_object = kind.name()?;
        let name: String = name_object.extract()?;
        let known = Arc::new(Kind {
            formula_method: PyString::new(py, &format!("formula for {name}")).unbind(),
            name_object: name_object.unbind(),
            name,
            _kind: kind.unbind(),
            has_rule,
            transposed,
            field: (!field.is_none()).then(|| field.unbind()),
            batched_passthrough,
            estimate: (!estimate.is_none()).then(|| estimate.unbind()),
        });
        self.kinds.insert(key, known.clone());
        Ok(known)
    }

    /// `(identity, number of dimensions)` of every tensor spec in a frozen value, in order.
    fn specs(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
        if let Ok(spec) = value.cast::<TensorSpec>() {
            return Ok(vec![spec.get().identity_and_ndim(py)?]);
        }
        let mut found = Vec::new();
        for item in self.iter_tensors.bind(py).call1((value,))?.try_iter()? {
            let item = item?;
            match item.cast::<TensorSpec>() {
                Ok(spec) => found.push(spec.get().identity_and_ndim(py)?),
                Err(_) => found.push((
                    item.getattr(intern!(py, "ident"))?.extract()?,
                    item.getattr(intern!(py, "shape"))?.len()?,
                )),
            }
        }
        Ok(found)
    }

    /// The field of one module call (its frozen inputs and output, and whether it called other
    /// modules), carried to its outputs.
    pub(crate) fn on_call<'py>(
        &mut self,
        py: Python<'py>,
        module: &Bound<'py, PyAny>,
        inputs: &Bound<'py, PyAny>,
        output: &Bound<'py, PyAny>,
        has_children: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let kind = self.kind(py, module)?;
        let outputs = self.specs(py, output)?;
        if !kind.has_rule && has_children {
            return match outputs
                .first()
                .and_then(|(ident, _)| self.states.get(ident))
            {
                None => unavailable(py, intern!(py, NOT_A_CHAIN)),
                Some(State::Mixed) => unavailable(py, intern!(py, MIXED_REASON)),
                Some(State::Field(field)) => complete(py, field),
            };
        }
        let first = match inputs.cast::<PyTuple>() {
            Ok(tuple) if !tuple.is_empty() => Some(tuple.get_item(0)?),
            Ok(_) => None,
            Err(_) => inputs.get_item(0).ok(),
        };
        let input = match &first {
            Some(value) if value.cast::<TensorSpec>().is_ok() => self.specs(py, value)?,
            _ => self.specs(py, inputs)?,
        };
        let state = input
            .first()
            .and_then(|(ident, _)| self.states.get(ident))
            .cloned();
        let field = match state {
            None => return unavailable(py, intern!(py, NOT_FROM_INPUT)),
            // From here the output depends on the model input: when no field describes that
            // dependence, the outputs are marked so that nothing after them claims one.
            Some(State::Mixed) => return self.mix(py, &outputs, intern!(py, MIXED_REASON)),
            Some(State::Field(field)) => field,
        };
        if kind.transposed {
            return self.mix(py, &outputs, intern!(py, TRANSPOSED));
        }
        let dims = field.dims();
        if kind.batched_passthrough {
            // `passthrough_batched`: no step without a tensor first argument, else one step of
            // kernel 1 per spatial dimension of that argument.
            let Some(spec) = first
                .as_ref()
                .and_then(|value| value.cast::<TensorSpec>().ok())
            else {
                let reason = format!("{} does not keep spatial positions aligned", kind.name);
                return self.mix(py, &outputs, &PyString::new(py, &reason));
            };
            let (_, ndim) = spec.get().identity_and_ndim(py)?;
            let spatial = ndim.saturating_sub(2);
            if spatial != dims {
                let reason = format!(
                    "{} works on {} spatial dimensions, its input has {}",
                    kind.name, spatial, dims
                );
                return self.mix(py, &outputs, &PyString::new(py, &reason));
            }
            return self.carry(py, &outputs, field);
        }
        let step = match &kind.field {
            Some(function) => function.bind(py).call1((module, inputs, output))?,
            None => py.None().into_bound(py),
        };
        if step.is_none() {
            let reason = format!("{} does not keep spatial positions aligned", kind.name);
            return self.mix(py, &outputs, &PyString::new(py, &reason));
        }
        let read = |name: &Bound<'py, pyo3::types::PyString>| -> PyResult<Vec<f64>> {
            step.getattr(name)?.extract()
        };
        let kernel = read(intern!(py, "kernel"))?;
        if kernel.len() != dims {
            let reason = format!(
                "{} works on {} spatial dimensions, its input has {}",
                kind.name,
                kernel.len(),
                dims
            );
            return self.mix(py, &outputs, &PyString::new(py, &reason));
        }
        let window = Step {
            kernel,
            stride: read(intern!(py, "stride"))?,
            padding: read(intern!(py, "padding"))?,
            dilation: read(intern!(py, "dilation"))?,
        };
        let new_field = if window.is_identity() {
            field // activations, normalisation: positions unchanged
        } else {
            match field.through(&window) {
                Some(next) => Arc::new(next),
                None => {
                    return Err(PyValueError::new_err(format!(
                        "the field step of {} gives {} kernel sizes but {} strides, {} paddings \
                         and {} dilations",
                        kind.name,
                        dims,
                        window.stride.len(),
                        window.padding.len(),
                        window.dilation.len()
                    )));
                }
            }
        };
        self.carry(py, &outputs, new_field)
    }

    /// Gives the outputs with as many spatial dimensions as `field` that field.
    fn carry<'py>(
        &mut self,
        py: Python<'py>,
        outputs: &[(usize, usize)],
        field: Arc<Field>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dims = field.dims();
        for &(ident, ndim) in outputs {
            if ndim.checked_sub(2) == Some(dims) {
                self.states.insert(ident, State::Field(field.clone()));
            }
        }
        complete(py, &field)
    }

    /// Marks the outputs as depending on the model input through a step no field describes.
    fn mix<'py>(
        &mut self,
        py: Python<'py>,
        outputs: &[(usize, usize)],
        reason: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyDict>> {
        for &(ident, _) in outputs {
            self.states.insert(ident, State::Mixed);
        }
        unavailable(py, reason)
    }
}

/// The keys of a call's `receptive_field` section.
static SECTION: Template = Template::new(&["status", "size", "stride", "padding", "reason"]);

/// The `receptive_field` section of a call with a field.
fn complete<'py>(py: Python<'py>, field: &Field) -> PyResult<Bound<'py, PyDict>> {
    let section = SECTION.dict(py)?;
    section.set_item(intern!(py, "status"), intern!(py, "complete"))?;
    section.set_item(intern!(py, "size"), PyList::new(py, &field.size)?)?;
    section.set_item(intern!(py, "stride"), PyList::new(py, &field.stride)?)?;
    section.set_item(intern!(py, "padding"), PyList::new(py, &field.padding)?)?;
    section.set_item(intern!(py, "reason"), py.None())?;
    Ok(section)
}

/// The `receptive_field` section of a call without one, and why.
pub(crate) fn unavailable<'py>(
    py: Python<'py>,
    reason: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyDict>> {
    let section = SECTION.dict(py)?; // size, stride and padding stay None
    section.set_item(intern!(py, "status"), intern!(py, "unavailable"))?;
    section.set_item(intern!(py, "reason"), reason)?;
    Ok(section)
}

/// Adds [`ModuleKind`] to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<ModuleKind>()
}
