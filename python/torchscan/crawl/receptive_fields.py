"""What the receptive-field replay (``_core.FieldTracker``) asks of a module's type."""

from __future__ import annotations

import functools
from typing import Any

_KIND_BY_TYPE: dict[type, tuple[bool, bool, Any, bool, Any]] = {}


def _module_kind(module: Any) -> tuple[bool, bool, Any, bool, Any]:
    """What the report's assembly needs of a module's type (see ``_core.assemble``).

    Whether it has a formula, whether it is a transposed convolution, its field step, whether
    that step is ``passthrough_batched`` (which the receptive-field replay works out itself),
    and its estimate. All of it depends on the type alone.
    """
    kind = _KIND_BY_TYPE.get(type(module))
    if kind is not None:
        return kind
    from ..formulas._common import passthrough_batched

    rule = _formulas()._rule(module)
    transposed = isinstance(module, _conv_transpose_type())
    if rule is None:
        kind = (False, transposed, None, False, None)
    else:
        kind = (True, transposed, rule.field, rule.field is passthrough_batched, rule.estimate)
    _KIND_BY_TYPE[type(module)] = kind
    return kind


@functools.cache
def _conv_transpose_type() -> type:
    from torch.nn.modules.conv import _ConvTransposeNd

    return _ConvTransposeNd


@functools.cache
def _formulas() -> Any:
    """The module formulas (imported on first use: they import torch)."""
    from .. import formulas

    return formulas
