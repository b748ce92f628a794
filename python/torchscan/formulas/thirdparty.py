"""Formulas of common modules of transformers, timm and torchvision.ops, matched by class name.

These packages are never imported: a module is matched by the qualified name of its class (or of
a base class), so a model built with them gets the formula of the ``torch.nn`` module it is
equivalent to. A class not listed here still has no formula and stays partial.
"""

from __future__ import annotations

from torch import nn

from ._common import (
    Estimate,
    Inputs,
    Rule,
    arg,
    elementwise,
    first_tensor,
    param_elements,
    passthrough_batched,
)
from .linear import linear_cost

__all__ = ["rule_by_name", "supported_third_party_types"]

# FLOPs per element of activation modules, with the counts of activation.py: erf 1, tanh 6,
# sigmoid 4 (GELU exact 5, GELU tanh approximation 14).
_ACTIVATIONS: dict[str, int] = {
    "transformers.activations.GELUActivation": 5,
    "transformers.activations.AccurateGELUActivation": 14,
    "transformers.activations.NewGELUActivation": 14,
    "transformers.activations.GELUTanh": 14,
    "transformers.activations.PytorchGELUTanh": 14,
    "transformers.activations.FastGELUActivation": 14,
    "transformers.activations.QuickGELUActivation": 6,  # times 1.702, sigmoid 4, times x
    "transformers.activations.ClippedGELUActivation": 7,  # GELU 5, clip 2
    "transformers.activations.SiLUActivation": 5,
    "transformers.activations.MishActivation": 10,
    "transformers.activations.ReLUSquaredActivation": 2,  # comparison, square
    "transformers.activations.LinearActivation": 0,
    "timm.layers.activations.GELU": 5,
    "timm.layers.activations.GELUTanh": 14,
    "timm.layers.activations.QuickGELU": 6,
    "timm.layers.activations.Swish": 5,
    "timm.layers.activations.Mish": 10,
    "timm.layers.activations.Sigmoid": 4,
    "timm.layers.activations.Tanh": 6,
    "timm.layers.activations.HardSwish": 5,
    "timm.layers.activations.HardSigmoid": 4,
}

# Drop a whole residual branch per sample in training; the identity in evaluation.
_DROP_PATH = frozenset(
    {
        "timm.layers.drop.DropPath",
        "torchvision.ops.stochastic_depth.StochasticDepth",
    }
)

_PERMUTE = frozenset({"torchvision.ops.misc.Permute"})
_CONV1D = frozenset({"transformers.pytorch_utils.Conv1D"})
_RMS_NORMS = frozenset({"transformers.models.t5.modeling_t5.T5LayerNorm"})


def _qualified(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _activation(per_element: int) -> Rule:
    def estimate(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
        x, out = arg(inputs, 0), first_tensor(output)
        if x is None:
            return None
        if per_element == 0:
            return Estimate(0, 0, 0)  # the identity: returns its input
        written = out.numel() if out is not None else x.numel()
        return elementwise(x.numel(), written, per_element, param_elements(module))

    return Rule((), estimate, passthrough_batched)


def _estimate_drop_path(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """Identity in evaluation (0 FLOPs, read and write); training multiplies by a per-sample mask.

    With ``p`` 0 or in evaluation: FLOPs 0, DMAs ``2n``. Training: ``n`` FLOPs (mask multiply,
    the scaling folded in) and DMAs ``2n`` plus one mask element per sample.
    """
    x = arg(inputs, 0)
    if x is None:
        return None
    n = x.numel()
    probability = float(getattr(module, "drop_prob", getattr(module, "p", 0.0)) or 0.0)
    if not module.training or probability == 0.0:
        return Estimate(0, 0, 2 * n)
    samples = int(x.shape[0]) if x.ndim else 1
    return Estimate(n, 0, 2 * n + samples)


def _estimate_permute(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """A reordering of dimensions: 0 FLOPs; DMAs read and write each element (a copy)."""
    del module, output
    x = arg(inputs, 0)
    return None if x is None else Estimate(0, 0, 2 * x.numel())


def _estimate_conv1d(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """Transformers' ``Conv1D``: a Linear with a transposed ``(nx, nf)`` weight."""
    del output
    x = arg(inputs, 0)
    weight = getattr(module, "weight", None)
    if x is None or weight is None or weight.ndim != 2:
        return None
    in_features, out_features = int(weight.shape[0]), int(weight.shape[1])
    if in_features == 0 or x.numel() % in_features:
        return None
    bias = getattr(module, "bias", None) is not None
    return linear_cost(x.numel() // in_features, in_features, out_features, bias)


def _estimate_rms_norm(module: nn.Module, inputs: Inputs, output: object) -> Estimate | None:
    """An RMS norm over the last dimension with a weight (``nn.RMSNorm``'s count).

    For ``n`` elements in ``S`` rows: FLOPs ``3n + 2S + n``; MACs 0; DMAs read the input and
    the weight and write the output.
    """
    del output
    x = arg(inputs, 0)
    weight = getattr(module, "weight", None)
    if x is None or x.ndim == 0 or weight is None:
        return None
    n = x.numel()
    rows = n // int(x.shape[-1]) if int(x.shape[-1]) else 0
    return Estimate(4 * n + 2 * rows, 0, 2 * n + param_elements(module))


def _is_transformers_rms_norm(name: str) -> bool:
    # transformers defines one RMS norm class per model family (LlamaRMSNorm, Qwen2RMSNorm, ...),
    # each ``x * rsqrt(mean(x^2) + eps) * weight``.
    return name.startswith("transformers.models.") and name.endswith("RMSNorm")


def rule_by_name(module: nn.Module) -> Rule | None:
    """The formula for a known third-party module class (or a subclass of one), or None."""
    for kind in type(module).__mro__:
        name = _qualified(kind)
        if name in _ACTIVATIONS:
            return _activation(_ACTIVATIONS[name])
        if name in _DROP_PATH:
            return Rule((), _estimate_drop_path, passthrough_batched)
        if name in _PERMUTE:
            return Rule((), _estimate_permute, None)
        if name in _CONV1D:
            return Rule((), _estimate_conv1d, None)
        if name in _RMS_NORMS or _is_transformers_rms_norm(name):
            return Rule((), _estimate_rms_norm, None)
        if kind is nn.Module:
            return None
    return None


def supported_third_party_types() -> list[str]:
    """Qualified class names of the third-party modules with formulas, sorted."""
    names = {*_ACTIVATIONS, *_DROP_PATH, *_PERMUTE, *_CONV1D, *_RMS_NORMS}
    names.add("transformers.models.*.modeling_*.*RMSNorm")
    return sorted(names)
