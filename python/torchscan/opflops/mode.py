"""The private dispatch mode behind ``OperatorFlopCounter``: one decision per executed operator.

For each operator overload that reaches the Python dispatch key the mode picks, once, a rule:

1. a formula the caller gave for this call (by overload, packet or ``"ns::name"``);
2. a kernel formula (PyTorch's ``flop_registry`` first, then ours);
3. a composite operator (``CompositeImplicitAutograd``, which reaches the mode under
   ``inference_mode``) is decomposed, as ``FlopCounterMode`` does, so the kernels that actually run
   are what gets counted; a fallback formula or class is used only when it cannot be decomposed;
4. an exclusion class (``classify.exclusion_class``);
5. otherwise uncounted.

Two kinds of call are passed through unlisted, as ``FlopCounterMode`` does: size and stride
queries that reach a mode only for tensor subclasses, and the profiler's ``record_function``
markers (``profiler::_record_function_enter_new``, emitted by optimizers), which do no work.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .. import _core
from .._compiled import without_dynamo
from .classify import ExclusionClass, exclusion_class, moves_no_data, operator_name
from .formulas import COMPOSITE_FALLBACKS, RawFormula, builtin_formulas, from_shape_formula

__all__ = [
    "COUNTED",
    "DEFERRED",
    "EXCLUDED",
    "UNCOUNTED",
    "Entry",
    "OperatorFlopMode",
    "Recorder",
    "Rule",
    "Stats",
    "resolve_rule",
]

# Metadata queries that reach a mode only for tensor subclasses with Python sizes and strides
# (nested jagged tensors). ``FlopCounterMode`` hands them back to the subclass; so do we.
_SUBCLASS_METADATA = frozenset(
    {
        torch.ops.aten.sym_is_contiguous.default,
        torch.ops.aten.is_contiguous.default,
        torch.ops.aten.is_contiguous.memory_format,
        torch.ops.aten.is_strides_like_format.default,
        torch.ops.aten.is_non_overlapping_and_dense.default,
        torch.ops.aten.size.default,
        torch.ops.aten.sym_size.default,
        torch.ops.aten.stride.default,
        torch.ops.aten.sym_stride.default,
        torch.ops.aten.storage_offset.default,
        torch.ops.aten.sym_storage_offset.default,
        torch.ops.aten.numel.default,
        torch.ops.aten.sym_numel.default,
        torch.ops.aten.dim.default,
        torch.ops.prim.layout.default,
    }
)


# The profiler's ``record_function`` markers (optimizers emit them): annotations, not work. They
# are passed through without being listed, like the metadata queries above.
_MARKER_NAMESPACES = frozenset({"profiler"})


@dataclass(frozen=True)
class Rule:
    """How one operator overload is treated."""

    kind: Literal["formula", "decompose", "excluded", "uncounted"]
    formula: RawFormula | None = None
    user_formula: bool = False
    exclusion: ExclusionClass | None = None


class Stats(Protocol):
    """Per-operator-name tallies the mode keeps up to date (``flops._OperatorStats``)."""

    calls: int
    flops: int
    counted_calls: int
    uncounted_calls: int
    exclusion: ExclusionClass | None
    failures: list[str]


# What one executed call was, as the mode tells its recorder.
COUNTED: Final = 0
EXCLUDED: Final = 1
UNCOUNTED: Final = 2
# Counted by a built-in shape formula applied once the workload is over, to shapes taken during
# it (the analysis of ``crawl_module`` records calls so, see ``Entry.lean``).
DEFERRED: Final = 6
# Entry codes that are not outcomes: handled apart from the plain path.
_DECOMPOSE: Final = 3
_METADATA: Final = 4
_MARKER: Final = 5


class Entry:
    """One operator overload, resolved once: what to do with each of its calls.

    Entries hold no tallies (the recorder keeps them by operator name), so counters without
    formulas of their own share them across the process.
    """

    __slots__ = (
        "code",
        "direct",
        "exclusion",
        "formula",
        "handle",
        "lean",
        "moves_data",
        "name",
        "on_shapes",
        "op",
        "tensor_args",
        "user_formula",
    )

    def __init__(
        self,
        code: int,
        name: str,
        op: Callable[..., Any],
        formula: RawFormula | None = None,
        user_formula: bool = False,
        exclusion: ExclusionClass | None = None,
        tensor_lists: bool = False,
        handle: Any = None,
        tensor_args: tuple[int, ...] = (),
        direct: Callable[..., Any] | None = None,
        moves_data: bool = True,
    ) -> None:
        self.code = code
        self.name = name
        self.op = op
        # The operator's dispatcher handle (``OpOverload._handle``), which a recorder may run it
        # through with ``torch._C._dispatch_call_boxed`` (None: only through ``op``), and the
        # positions of its tensor arguments: that call takes no number in place of a tensor.
        self.handle = handle
        self.tensor_args = tensor_args
        # A Python binding of the operator that takes those same arguments to this very overload
        # (see ``_direct_bindings``): cheaper to call than the boxed call, which parses every
        # argument against the schema.
        self.direct = direct if handle is not None else None
        self.formula = formula
        self.user_formula = user_formula
        self.exclusion = exclusion
        # A built-in shape formula can be applied after the call, to shapes taken during it.
        self.on_shapes: Callable[..., int] | None = (
            None if user_formula else getattr(formula, "on_shapes", None)
        )
        # A call that needs nothing but shapes and identities: excluded, uncounted, or counted
        # by a built-in shape formula, and no argument is a list of tensors. A recorder may take
        # such calls apart from the general path (``crawl_module``'s analysis does).
        self.lean = (
            code in (EXCLUDED, UNCOUNTED) or (code == COUNTED and self.on_shapes is not None)
        ) and not tensor_lists
        # Whether its calls read or write tensor elements: not for views and metadata queries
        # (``classify.moves_no_data``), which operator bytes count as 0.
        self.moves_data = moves_data


class Recorder(Protocol):
    """What the mode reports to: ``OperatorFlopCounter`` and the analysis of ``crawl_module``."""

    def _stats_for(self, name: str) -> Stats:
        """The tallies of the operator ``name`` (``aten::addmm``), created on first use."""
        ...

    def _after(
        self,
        entry: Entry,
        outcome: int,
        flops: int,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> None:
        """Called after every listed call, once the tallies are updated."""
        ...


class CompiledRecorder(Recorder, Protocol):
    """What :class:`CompiledFlopMode` reports to, besides :class:`Recorder`'s calls."""

    def _dispatch_scope(self) -> Any:
        """Where operators ran, for ``_core.DispatchRecorder``.

        A ``_core.CallRecorder``, the live list of the active module paths, or a callable
        returning them.
        """
        ...

    def _dispatch_log(self) -> list[Any]:
        """The list the compiled dispatch logs operators to."""
        ...

    def _attach(self, dispatch: _core.DispatchRecorder) -> None:
        """The mode's compiled dispatch, once made (the general path logs through it)."""
        ...

    def _detach(self, dispatch: _core.DispatchRecorder) -> None:
        """The mode is leaving: take what the compiled dispatch counted."""
        ...


_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd


# Whether an overload takes a list of tensors, by identity (overloads live as long as the process).
_TENSOR_LISTS: dict[int, bool] = {}


def _boxed_call(func: Any) -> tuple[Any, tuple[int, ...]]:
    """``(handle, tensor argument positions)`` to run ``func`` by, or ``(None, ())``.

    An operator whose tensor arguments are all positional can be run through its dispatcher
    handle, once the caller has checked that each of those positions holds a tensor (the
    dispatcher hands a number given for a tensor back as a number).
    """
    try:
        handle = getattr(func, "_handle", None)
        schema = getattr(func, "_schema", None)
    except RuntimeError:  # an operator the dispatcher does not register (``prim::device``)
        return None, ()
    if handle is None or schema is None:
        return None, ()
    positions: list[int] = []
    for index, argument in enumerate(schema.arguments):
        if str(argument.type) in ("Tensor", "Optional[Tensor]"):
            if argument.kwarg_only:
                return None, ()
            positions.append(index)
    return handle, tuple(positions)


@functools.cache
def _direct_bindings() -> dict[Any, Callable[..., Any]]:
    """Overloads with a Python binding that resolves to that very overload.

    Given the overload's arguments as the dispatcher hands them to a mode (a tensor, or None
    where the schema allows it, in every tensor position; keyword-only arguments by name), each
    binding below has one signature they fit, which calls this overload and nothing else: no
    argument parser picks another overload for numbers in tensor positions, since there are
    none. Bindings run ``__torch_function__`` modes, so a recorder calls them only while none is
    active. ``tests/test_crawl.py`` checks each one reaches its overload.
    """
    aten = torch.ops.aten
    nn_functions: Any = torch._C._nn
    return {
        aten.convolution.default: torch.convolution,
        aten.native_batch_norm.default: torch.native_batch_norm,
        aten.native_layer_norm.default: torch.native_layer_norm,
        aten.relu.default: torch.relu,
        aten.relu_.default: torch.relu_,
        aten.sigmoid.default: torch.sigmoid,
        aten.tanh.default: torch.tanh,
        aten.gelu.default: nn_functions.gelu,
        aten.add.Tensor: torch.add,
        aten.add_.Tensor: torch.Tensor.add_,
        aten.mul.Tensor: torch.mul,
        aten.addmm.default: torch.addmm,
        aten.mm.default: torch.mm,
        aten.bmm.default: torch.bmm,
        aten.max_pool2d_with_indices.default: nn_functions.max_pool2d_with_indices,
        aten.mean.dim: torch.mean,
        aten._softmax.default: torch._softmax,
        aten.view.default: torch.Tensor.view,
        aten.t.default: torch.t,
    }


def _takes_tensor_lists(func: Any) -> bool:
    """Whether an argument of ``func`` is a list of tensors (``Tensor[]``, ``Tensor?[]``)."""
    known = _TENSOR_LISTS.get(id(func))
    if known is None:
        schema = getattr(func, "_schema", None)
        # Without a schema nothing is known: the general case is assumed.
        known = schema is None or any(
            "Tensor" in text and ("List" in text or "[]" in text)
            for text in (str(argument.type) for argument in schema.arguments)
        )
        _TENSOR_LISTS[id(func)] = known
    return known


def _is_composite(func: Any) -> bool:
    # Only the dispatcher's own composite kernels: an operator with a real kernel that merely has
    # a Python reference decomposition (``native_batch_norm``, ``upsample_nearest2d``...) runs its
    # kernel, so that kernel is what is counted, and the workload is not slowed by the reference.
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))
    except RuntimeError:  # an operator the dispatcher does not register (``prim::device``)
        return False


def _decompose(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the dispatcher's composite kernel of ``func``, the one a plain call would run."""
    op_dk = getattr(func, "_op_dk", None)
    if op_dk is None:  # an older or newer OpOverload without the private entry point
        return func.decompose(*args, **kwargs)
    return op_dk(_COMPOSITE, *args, **kwargs)


def _fallback_rule(func: Any) -> Rule:
    """The rule of an operator that is not decomposed: formula, exclusion, or uncounted."""
    fallback = COMPOSITE_FALLBACKS.get(func.overloadpacket)
    if fallback is not None:
        return Rule("formula", formula=fallback)
    exclusion = exclusion_class(func)
    if exclusion is not None:
        return Rule("excluded", exclusion=exclusion)
    return Rule("uncounted")


def resolve_rule(
    func: Any, user_formulas: Mapping[Any, RawFormula], builtins: Mapping[Any, RawFormula]
) -> Rule:
    """The rule for the operator overload ``func`` (see the module docstring for the order)."""
    name = operator_name(func)
    overload_name = f"{name}.{func._overloadname}"  # "ns::op.default" too, not only "ns::op"
    for key in (func, func.overloadpacket, overload_name, name):
        user = user_formulas.get(key)
        if user is not None:
            return Rule("formula", formula=user, user_formula=True)
    builtin = builtins.get(func.overloadpacket)
    if builtin is not None:
        return Rule("formula", formula=builtin)
    if _is_composite(func):
        return Rule("decompose")
    return _fallback_rule(func)


# The built-in formula table, the rules resolved against it and their entries by overload
# identity (``OperatorFlopMode``).
_SHARED_RULES: list[Any] = [None, {}, {}]

# TorchDispatchMode is untyped; seen through ``Any`` so strict mypy accepts the subclass.
_DispatchModeBase: Any = TorchDispatchMode
_NO_KWARGS: Mapping[str, Any] = {}


class OperatorFlopMode(_DispatchModeBase):  # type: ignore[misc]
    """Counts every operator that reaches the Python dispatch key into ``recorder``.

    Runs on every operator of the workload, so the common path is one dictionary lookup of the
    overload's :class:`Entry`, the kernel, the tallies and one call to the recorder.
    """

    supports_higher_order_operators = True

    def __init__(
        self,
        recorder: Recorder,
        user_formulas: Mapping[Any, RawFormula],
        on_user_formula_error: Callable[[str, BaseException], BaseException],
    ) -> None:
        super().__init__()
        self._stats_for = recorder._stats_for
        self._after = recorder._after
        self._user_formulas = user_formulas
        self._on_user_formula_error = on_user_formula_error
        # Read when the counter starts, so formulas registered with PyTorch's
        # ``register_flop_formula`` before then are used too.
        self._builtins = builtin_formulas()
        self._entries: dict[int, Entry] = {}
        # Without formulas of its own, a counter resolves every overload as any other counter
        # of the same built-in table does: those rules and entries are shared across counters.
        self._shared_rules: dict[Any, Rule] | None = None
        if not user_formulas:
            if _SHARED_RULES[0] is not self._builtins:
                _SHARED_RULES[:] = [self._builtins, {}, {}]
            self._shared_rules = _SHARED_RULES[1]
            self._entries = _SHARED_RULES[2]

    def _entry(self, func: Any) -> Entry:
        """Resolve ``func`` once (see the module docstring for the order of the rules)."""
        op = getattr(func, "_op", func)  # the kernel entry point, without OpOverload.__call__
        if func in _SUBCLASS_METADATA:
            entry = Entry(_METADATA, "", op)
        elif func.namespace in _MARKER_NAMESPACES:
            entry = Entry(_MARKER, "", op)
        else:
            rule = self._shared_rules.get(func) if self._shared_rules is not None else None
            if rule is None:
                rule = resolve_rule(func, self._user_formulas, self._builtins)
                if self._shared_rules is not None:
                    self._shared_rules[func] = rule
            entry = self._entry_of_rule(func, rule)
        self._entries[id(func)] = entry
        return entry

    def _entry_of_rule(self, func: Any, rule: Rule) -> Entry:
        name = operator_name(func)
        op = getattr(func, "_op", func)
        code = {"formula": COUNTED, "excluded": EXCLUDED, "uncounted": UNCOUNTED}.get(
            rule.kind, _DECOMPOSE
        )
        if code == _DECOMPOSE:  # never listed itself: its decomposition's operators are
            return Entry(code, name, op)
        return Entry(
            code,
            name,
            op,
            rule.formula,
            rule.user_formula,
            rule.exclusion,
            _takes_tensor_lists(func),
            *_boxed_call(func),
            _direct_bindings().get(func),
            not moves_no_data(func),
        )

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Not PyTorch's wrapper, which imports Dynamo: ``without_dynamo`` keeps it out.
        return False

    def _dispatch(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        # Keyed by identity: an overload's own ``__hash__`` is Python code, and overloads live
        # as long as the process.
        entry = self._entries.get(id(func))
        if entry is None:
            if isinstance(func, torch._ops.HigherOrderOperator):
                return self._higher_order(func, args, kwargs or {})
            entry = self._entry(func)
        code = entry.code
        if code > UNCOUNTED:
            if code == _METADATA:
                return NotImplemented
            if code == _MARKER:
                return entry.op(*args, **kwargs) if kwargs else entry.op(*args)
            # Re-enter the mode so the decomposition's operators are counted one by one.
            with self:
                result = _decompose(func, args, kwargs or {})
            if result is not NotImplemented:
                return result
            entry = self._entries[id(func)] = self._entry_of_rule(func, _fallback_rule(func))
            code = entry.code
        out = entry.op(*args, **kwargs) if kwargs else entry.op(*args)
        stats = self._stats_for(entry.name)
        stats.calls += 1
        if stats.exclusion is None and entry.exclusion is not None:
            stats.exclusion = entry.exclusion
        flops = 0
        if code == COUNTED:
            flops, code = self._count(entry, stats, args, kwargs or _NO_KWARGS, out)
        elif code == UNCOUNTED:
            stats.uncounted_calls += 1
        self._after(entry, code, flops, args, kwargs or _NO_KWARGS, out)
        return out

    __torch_dispatch__ = without_dynamo(_dispatch)

    def _count(
        self,
        entry: Entry,
        stats: Stats,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> tuple[int, int]:
        """Apply the formula: ``(flops, COUNTED)``, or ``(0, UNCOUNTED)`` when it fails."""
        assert entry.formula is not None
        try:
            flops = entry.formula(args, kwargs, out)
        except Exception as error:  # a formula must never break the caller's workload
            if entry.user_formula:
                raise self._on_user_formula_error(entry.name, error) from error
            stats.uncounted_calls += 1
            if len(stats.failures) < 3:
                stats.failures.append(f"{type(error).__name__}: {error}")
            return 0, UNCOUNTED
        if entry.user_formula and (not isinstance(flops, int) or flops < 0):
            raise self._on_user_formula_error(
                entry.name, ValueError(f"returned {flops!r}; a FLOP formula returns an int >= 0")
            )
        flops = int(flops)
        stats.counted_calls += 1
        stats.flops += flops
        return flops, COUNTED

    def _higher_order(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Higher-order operators (eager ``cond``, ``flex_attention``...) run with the mode popped,
        # so their inner operators are not seen: counted only through a formula, else uncounted.
        name = f"higher_order::{func.name()}"
        user = self._user_formulas.get(func) or self._user_formulas.get(name)
        out = func(*args, **kwargs)
        if user is not None:
            rule = Rule("formula", formula=user, user_formula=True)
        else:
            registry = torch.utils.flop_counter.flop_registry.get(func)
            rule = (
                Rule("formula", formula=from_shape_formula(registry, raw=True))
                if registry is not None
                else Rule("uncounted")
            )
        entry = Entry(
            COUNTED if rule.kind == "formula" else UNCOUNTED,
            name,
            func,
            rule.formula,
            rule.user_formula,
        )
        stats = self._stats_for(name)
        stats.calls += 1
        flops, code = 0, entry.code
        if code == COUNTED:
            flops, code = self._count(entry, stats, args, kwargs, out)
        else:
            stats.uncounted_calls += 1
        self._after(entry, code, flops, args, kwargs, out)
        return out


class CompiledFlopMode(OperatorFlopMode):
    """:class:`OperatorFlopMode` whose common calls are run and logged by compiled code.

    A lean call (see ``Entry.lean``) without tensors among its keyword arguments is run and logged
    as an operator record by ``_core.DispatchRecorder``, installed as this instance's
    ``__torch_dispatch__``: no Python frame runs for it, and its shape formula is applied from
    the log (by a counter's ledger, in batches while the workload runs, or by the analysis's
    assembly once its forward is over). Every other call takes the general path (the class's own
    ``__torch_dispatch__``, which TorchDynamo is kept out of), which counts it at once and logs
    it through the recorder's ``_after``. ``crawl_module``, ``measure_flops`` and every
    ``OperatorFlopCounter`` count through this mode.

    A recorder whose ``_count_bytes`` is true (a counter's, not the analysis's) has the compiled
    dispatch add up operator bytes too: the lean calls' there, the general path's through the
    recorder's ``_after`` (``_core.DispatchRecorder.add_bytes``).
    """

    def __init__(
        self,
        recorder: CompiledRecorder,
        user_formulas: Mapping[Any, RawFormula],
        on_user_formula_error: Callable[[str, BaseException], BaseException],
    ) -> None:
        super().__init__(recorder, user_formulas, on_user_formula_error)
        self._depth = 0
        self._owner = recorder
        dispatch = _core.DispatchRecorder(
            self._entries,
            types.MethodType(OperatorFlopMode.__torch_dispatch__, self),
            recorder._dispatch_scope(),
            recorder._dispatch_log(),
            torch.Tensor,
            torch.nn.Parameter,
            torch._C._dispatch_call_boxed,
            torch._C._len_torch_function_stack,
            COUNTED,
            DEFERRED,
            UNCOUNTED,
            operator_bytes=bool(getattr(recorder, "_count_bytes", False)),
        )
        self.__torch_dispatch__ = types.MethodType(dispatch, self)  # type: ignore[method-assign]
        recorder._attach(dispatch)

    def __enter__(self) -> Any:
        self._depth += 1  # the general path re-enters the mode to decompose an operator
        return super().__enter__()

    def __exit__(self, *exc: Any) -> Any:
        self._depth -= 1
        try:
            return super().__exit__(*exc)
        finally:
            # At the outermost exit only. The dispatch recorder refers back to the mode:
            # unlinked, both are freed at once.
            dispatch = None if self._depth else self.__dict__.pop("__torch_dispatch__", None)
            if dispatch is not None:
                self._owner._detach(dispatch.__func__)
