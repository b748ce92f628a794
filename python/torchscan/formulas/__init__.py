"""Per-module estimates: FLOPs, MACs, DMAs and receptive-field steps from shapes and configuration.

These are estimates of one call of a module, computed from its type, its attributes and the
shapes of its inputs and outputs (never the tensor values). They are labelled separately from
the operator FLOPs and are never added to them. Each family's conventions are written in the
docstrings of its module (``linear``, ``conv``, ``norm``, ``activation``, ``pooling``,
``dropout``, ``shape``, ``embedding``, ``distance``, ``attention``, ``recurrent``).

Dispatch is by ``isinstance`` on ``torch.nn`` classes, in the order of ``RULES`` (a subclass
comes before any rule of its bases), so subclasses of supported types, lazy modules and
``SyncBatchNorm`` get their base type's formula. A module without a formula gets None: the
caller reports the metric as partial, naming the type, and never treats None as zero.
"""

from __future__ import annotations

from torch import nn

from . import (
    activation,
    attention,
    conv,
    distance,
    dropout,
    embedding,
    linear,
    norm,
    pooling,
    recurrent,
    shape,
    thirdparty,
)
from ._common import Estimate, FieldStep, Rule, is_passthrough

__all__ = [
    "RULES",
    "Estimate",
    "FieldStep",
    "field_step",
    "has_formula",
    "is_passthrough",
    "module_estimate",
    "supported_module_types",
    "supported_third_party_types",
]

# The public home of the result types (they are defined in ``_common`` to avoid import cycles).
Estimate.__module__ = FieldStep.__module__ = __name__

RULES: tuple[Rule, ...] = (
    *linear.RULES,
    *conv.RULES,
    *norm.RULES,
    *embedding.RULES,
    *activation.RULES,
    *pooling.RULES,
    *dropout.RULES,
    *shape.RULES,
    *distance.RULES,
    *attention.RULES,
    *recurrent.RULES,
)


# The rule depends only on the module's class; analysis asks for it on every module call.
_RULE_BY_TYPE: dict[type, Rule | None] = {}


def _rule(module: nn.Module) -> Rule | None:
    kind = type(module)
    try:
        return _RULE_BY_TYPE[kind]
    except KeyError:
        pass
    found = next((rule for rule in RULES if isinstance(module, rule.types)), None)
    if found is None:
        found = thirdparty.rule_by_name(module)
    _RULE_BY_TYPE[kind] = found
    return found


def module_estimate(
    module: nn.Module, inputs: tuple[object, ...], output: object
) -> Estimate | None:
    """The estimate of one call, or None when the module's type has no formula.

    ``inputs`` are the positional arguments of the call and ``output`` what forward returned.
    None is also returned when a tensor the formula needs is missing from them (for example
    passed by keyword, which a forward hook without kwargs does not see). The caller then
    reports the metric partial with a diagnostic naming the type; never treat None as zero.
    """
    rule = _rule(module)
    if rule is None:
        return None
    return rule.estimate(module, tuple(inputs), output)


def has_formula(module: nn.Module) -> bool:
    """Whether the module's type has a formula (``module_estimate`` may still need its inputs)."""
    return _rule(module) is not None


def field_step(module: nn.Module, inputs: tuple[object, ...], output: object) -> FieldStep | None:
    """How the layer transforms receptive field per spatial dimension, or None.

    Convolution and pooling layers give their kernel, stride, (leading) padding and dilation
    (transposed convolutions only with stride 1, as the equivalent direct convolution;
    adaptive pooling only when every input size is a multiple of the output size, as kernel
    = stride = the ratio). Layers that keep spatial positions aligned elementwise
    (activations, normalisation, dropout, identity, channel shuffle) give kernel 1, stride 1,
    padding 0 and dilation 1 for each spatial dim of the input, counted as ``ndim - 2``
    (batched, channels first; the per-class count for instance norms). Padding layers give
    their leading padding and PixelUnshuffle kernel = stride = its factor. None for layers
    that make receptive field meaningless or inexpressible as an integer step: Linear,
    Flatten, attention, RNNs, embeddings, any upsampling, fractional pooling, unpooling,
    softmax or GLU along a spatial dim, and unknown types.
    """
    rule = _rule(module)
    if rule is None or rule.field is None:
        return None
    return rule.field(module, tuple(inputs), output)


def supported_third_party_types() -> list[str]:
    """Qualified names of transformers, timm and torchvision.ops classes with formulas."""
    return thirdparty.supported_third_party_types()


def supported_module_types() -> list[str]:
    """Class names with formulas, sorted: registered ``torch.nn`` classes and their subclasses."""
    registered = {kind for rule in RULES for kind in rule.types}
    names = {kind.__name__ for kind in registered if not kind.__name__.startswith("_")}
    for name in dir(nn):
        candidate = getattr(nn, name)
        if (
            not name.startswith("_")
            and isinstance(candidate, type)
            and issubclass(candidate, nn.Module)
            and issubclass(candidate, tuple(registered))
        ):
            names.add(name)
    return sorted(names)
