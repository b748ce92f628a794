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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .classify import ExclusionClass, exclusion_class, operator_name
from .formulas import COMPOSITE_FALLBACKS, RawFormula, builtin_formulas, from_shape_formula

__all__ = ["OperatorFlopMode", "Recorder", "Rule", "resolve_rule"]

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


class Recorder(Protocol):
    """What the mode reports to: ``OperatorFlopCounter``."""

    def _record(
        self,
        name: str,
        kind: Literal["counted", "excluded", "uncounted"],
        flops: int,
        exclusion: ExclusionClass | None,
        failure: str | None,
    ) -> None: ...

    def _observe(self, tensor: Any) -> None: ...


_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd


def _is_composite(func: Any) -> bool:
    # Only the dispatcher's own composite kernels: an operator with a real kernel that merely has
    # a Python reference decomposition (``native_batch_norm``, ``upsample_nearest2d``...) runs its
    # kernel, so that kernel is what is counted, and the workload is not slowed by the reference.
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))


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


# TorchDispatchMode is untyped; seen through ``Any`` so strict mypy accepts the subclass.
_DispatchModeBase: Any = TorchDispatchMode


class OperatorFlopMode(_DispatchModeBase):  # type: ignore[misc]
    """Counts every operator that reaches the Python dispatch key into ``recorder``."""

    supports_higher_order_operators = True

    def __init__(
        self,
        recorder: Recorder,
        user_formulas: Mapping[Any, RawFormula],
        on_user_formula_error: Callable[[str, BaseException], BaseException],
    ) -> None:
        super().__init__()
        self._recorder = recorder
        self._user_formulas = user_formulas
        self._on_user_formula_error = on_user_formula_error
        # Read when the counter starts, so formulas registered with PyTorch's
        # ``register_flop_formula`` before then are used too.
        self._builtins = builtin_formulas()
        self._rules: dict[Any, Rule] = {}
        # An optional observer of every operator with its arguments and result (model analysis
        # uses it for per-call memory accesses and receptive fields).
        self._after_operator: Callable[..., None] | None = getattr(
            recorder, "_after_operator", None
        )

    def _rule(self, func: Any) -> Rule:
        rule = self._rules.get(func)
        if rule is None:
            rule = resolve_rule(func, self._user_formulas, self._builtins)
            self._rules[func] = rule
        return rule

    def _observe(self, values: Any) -> None:
        # Runs on every operator: a plain walk of the argument containers is several times
        # cheaper than pytree, and operator arguments only nest tuples, lists and dicts.
        observe = self._recorder._observe
        pending = [values]
        while pending:
            value = pending.pop()
            if isinstance(value, torch.Tensor):
                observe(value)
            elif isinstance(value, (tuple, list)):
                pending.extend(value)
            elif isinstance(value, dict):
                pending.extend(value.values())

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs if kwargs else {}
        if func in _SUBCLASS_METADATA:
            return NotImplemented
        if isinstance(func, torch._ops.HigherOrderOperator):
            return self._higher_order(func, args, kwargs)
        if func.namespace in _MARKER_NAMESPACES:
            return func(*args, **kwargs)
        rule = self._rule(func)
        if rule.kind == "decompose":
            # Re-enter the mode so the decomposition's operators are counted one by one.
            with self:
                result = _decompose(func, args, kwargs)
            if result is not NotImplemented:
                return result
            rule = _fallback_rule(func)
            self._rules[func] = rule
        out = func(*args, **kwargs)
        # Results carry the devices and dtypes the work ran in; their arguments are results of
        # earlier operators or the caller's inputs, which the caller describes.
        self._observe(out)
        name = operator_name(func)
        if rule.kind == "formula":
            assert rule.formula is not None
            self._count(name, rule, args, kwargs, out)
        elif rule.kind == "excluded":
            self._recorder._record(name, "excluded", 0, rule.exclusion, None)
        else:
            self._recorder._record(name, "uncounted", 0, None, None)
        if self._after_operator is not None:
            kind = "counted" if rule.kind == "formula" else rule.kind
            self._after_operator(kind, rule.exclusion, args, kwargs, out)
        return out

    def _count(
        self, name: str, rule: Rule, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None:
        assert rule.formula is not None
        try:
            flops = rule.formula(args, kwargs, out)
        except Exception as error:  # a formula must never break the caller's workload
            if rule.user_formula:
                raise self._on_user_formula_error(name, error) from error
            failure = f"{type(error).__name__}: {error}"
            self._recorder._record(name, "uncounted", 0, None, failure)
            return
        if rule.user_formula and (not isinstance(flops, int) or flops < 0):
            raise self._on_user_formula_error(
                name, ValueError(f"returned {flops!r}; a FLOP formula returns an int >= 0")
            )
        self._recorder._record(name, "counted", int(flops), None, None)

    def _higher_order(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Higher-order operators (eager ``cond``, ``flex_attention``...) run with the mode popped,
        # so their inner operators are not seen: counted only through a formula, else uncounted.
        name = f"higher_order::{func.name()}"
        user = self._user_formulas.get(func) or self._user_formulas.get(name)
        out = func(*args, **kwargs)
        # Results carry the devices and dtypes the work ran in; their arguments are results of
        # earlier operators or the caller's inputs, which the caller describes.
        self._observe(out)
        if user is not None:
            self._count(name, Rule("formula", formula=user, user_formula=True), args, kwargs, out)
            return out
        registry = torch.utils.flop_counter.flop_registry.get(func)
        if registry is not None:
            formula = from_shape_formula(registry, raw=True)
            self._count(name, Rule("formula", formula=formula), args, kwargs, out)
        else:
            self._recorder._record(name, "uncounted", 0, None, None)
        return out
