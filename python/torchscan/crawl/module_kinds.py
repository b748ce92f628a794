"""What the analysis (``_core.Assembler``, receptive fields included) asks of a module type."""

from __future__ import annotations

import functools
from typing import Any

from .. import _core

_KIND_BY_TYPE: dict[type, _core.ModuleKind] = {}


def module_kind(module: Any) -> _core.ModuleKind:
    """What the report's assembly needs of a module's type (see ``_core.Assembler``).

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
        kind = _core.ModuleKind(
            has_formula=False,
            transposed=transposed,
            field=None,
            batched_passthrough=False,
            estimate=None,
        )
    else:
        kind = _core.ModuleKind(
            has_formula=True,
            transposed=transposed,
            field=rule.field,
            batched_passthrough=rule.field is passthrough_batched,
            estimate=rule.estimate,
        )
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
