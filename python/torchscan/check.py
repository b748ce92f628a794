"""``check_outputs``: does a candidate's output match the baseline's, leaf by leaf? Never values."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ._arguments import check_real
from ._values import tensor_meta
from .context import capture_context
from .reports import Diagnostic, LeafCheck, OutputCheckReport, StructureDifference

__all__ = ["CHECK_METHOD", "check_outputs"]

CHECK_METHOD = (
    "torch.isclose per element: |candidate - baseline| <= atol + rtol * |baseline|, compared in "
    "float64 (complex128 for complex tensors) on the baseline's device; Python numbers as 0-d "
    "tensors"
)
_NUMBERS = (bool, int, float, complex)


def _describe_node(value: Any) -> str:
    """What a node is, for a structure difference: never its value."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor of shape {list(value.shape)}"
    if value is None:
        return "None"
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return f"{type(value).__name__} (named tuple of {len(value)})"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, Mapping):
        return f"dict with keys {', '.join(sorted(map(str, value)))}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__name__} (dataclass)"
    return type(value).__name__


def _child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


class _Walker:
    def __init__(self, rtol: float, atol: float, equal_nan: bool) -> None:
        self.rtol, self.atol, self.equal_nan = rtol, atol, equal_nan
        self.differences: list[StructureDifference] = []
        self.leaves: list[LeafCheck] = []
        self.diagnostics: list[Diagnostic] = []
        self.devices: list[Any] = []
        self.dtypes: set[Any] = set()

    def differ(self, path: str, baseline: Any, candidate: Any, note: str = "") -> None:
        self.differences.append(
            {
                "path": path,
                "baseline": _describe_node(baseline),
                "candidate": _describe_node(candidate) + note,
            }
        )

    def walk(self, baseline: Any, candidate: Any, path: str, depth: int = 0) -> None:
        import torch

        if depth > 64:
            self.differ(path, baseline, candidate, " (nested too deeply to compare)")
            return
        if isinstance(baseline, _NUMBERS) and not isinstance(baseline, bool):
            baseline = torch.tensor(baseline)
        if isinstance(candidate, _NUMBERS) and not isinstance(candidate, bool):
            candidate = torch.tensor(candidate)
        if isinstance(baseline, torch.Tensor) or isinstance(candidate, torch.Tensor):
            if isinstance(baseline, torch.Tensor) and isinstance(candidate, torch.Tensor):
                self.compare(baseline, candidate, path)
            else:
                self.differ(path, baseline, candidate)
            return
        named = isinstance(baseline, tuple) and hasattr(type(baseline), "_fields")
        if named or (dataclasses.is_dataclass(baseline) and not isinstance(baseline, type)):
            if type(baseline) is not type(candidate):
                self.differ(path, baseline, candidate)
                return
            names = (
                list(type(baseline)._fields)
                if named
                else [item.name for item in dataclasses.fields(baseline)]
            )
            for name in names:
                self.walk(
                    getattr(baseline, name), getattr(candidate, name), f"{path}.{name}", depth + 1
                )
            return
        if isinstance(baseline, (tuple, list)):
            if type(baseline) is not type(candidate) or len(baseline) != len(candidate):
                self.differ(path, baseline, candidate)
                return
            for index, (left, right) in enumerate(zip(baseline, candidate, strict=True)):
                self.walk(left, right, _child_path(path, index), depth + 1)
            return
        if isinstance(baseline, Mapping):
            if not isinstance(candidate, Mapping) or set(baseline) != set(candidate):
                self.differ(path, baseline, candidate)
                return
            for key in baseline:
                name = key if isinstance(key, str) else type(key).__name__
                self.walk(baseline[key], candidate[key], _child_path(path, name), depth + 1)
            return
        # None, strings, booleans and other objects: equal or a difference (values unrecorded).
        try:
            same = type(baseline) is type(candidate) and bool(baseline == candidate)
        except Exception:  # an object whose == fails or is ambiguous cannot be shown equal
            same = False
        if not same:
            self.differ(
                path, baseline, candidate, " (differs)" if type(baseline) is type(candidate) else ""
            )

    def compare(self, baseline: Any, candidate: Any, path: str) -> None:
        import torch

        self.devices.append(baseline.device)
        for tensor in (baseline, candidate):
            if tensor.is_floating_point() or tensor.is_complex():
                self.dtypes.add(tensor.dtype)
        base_meta, cand_meta = tensor_meta(baseline), tensor_meta(candidate)
        notes = []
        if base_meta["shape"] != cand_meta["shape"]:
            notes.append(f"shape {base_meta['shape']} vs {cand_meta['shape']}")
        if base_meta["dtype"] != cand_meta["dtype"]:
            notes.append(f"dtype {base_meta['dtype']} vs {cand_meta['dtype']}")
        if base_meta["device"] != cand_meta["device"]:
            notes.append(f"device {base_meta['device']} vs {cand_meta['device']}")
        if notes:
            self.diagnostics.append(
                {
                    "code": "output_metadata_mismatch",
                    "severity": "warning",
                    "metric": None,
                    "message": f"output leaf {path or '(output)'} differs: " + "; ".join(notes),
                }
            )
        leaf: LeafCheck = {
            "path": path,
            "passed": False,
            "baseline": base_meta,
            "candidate": cand_meta,
            "elements": 0,
            "mismatched_elements": 0,
            "max_abs_error": None,
            "max_rel_error": None,
        }
        if base_meta["shape"] != cand_meta["shape"]:
            self.leaves.append(leaf)
            return
        with torch.no_grad():
            complex_values = baseline.is_complex() or candidate.is_complex()
            kind = torch.complex128 if complex_values else torch.float64
            left = baseline.detach().to(dtype=kind)
            right = candidate.detach().to(device=baseline.device, dtype=kind)
            close = torch.isclose(
                right, left, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan
            )
            elements = int(close.numel())
            mismatched = elements - int(close.sum().item())
            difference = (right - left).abs()
            finite = torch.isfinite(difference)
            max_abs = float(difference[finite].max().item()) if bool(finite.any()) else None
            scale = left.abs()
            relative_ok = finite & (scale > 0)
            max_rel = (
                float((difference[relative_ok] / scale[relative_ok]).max().item())
                if bool(relative_ok.any())
                else None
            )
        leaf["elements"] = elements
        leaf["mismatched_elements"] = mismatched
        leaf["max_abs_error"] = max_abs if max_abs is None or math.isfinite(max_abs) else None
        leaf["max_rel_error"] = max_rel if max_rel is None or math.isfinite(max_rel) else None
        leaf["passed"] = mismatched == 0 and base_meta["dtype"] == cand_meta["dtype"]
        self.leaves.append(leaf)


def _tolerance(name: str, value: Any) -> float:
    return check_real(name, value, minimum=0.0, meaning="a tolerance")


def check_outputs(
    baseline_output: Any,
    candidate_output: Any,
    *,
    rtol: float,
    atol: float,
    equal_nan: bool = False,
) -> OutputCheckReport:
    """Compare a candidate's output with the baseline's and return an ``output_check`` report.

    Outputs may nest tuples, lists, dicts, dataclasses and named tuples; the structure must match
    (same kinds, lengths, keys and fields), and every tensor leaf (Python numbers count as 0-d
    tensors) must have the same shape and dtype and be within ``atol + rtol * |baseline|``
    elementwise (``equal_nan`` makes NaNs in the same places equal). The report records, per
    leaf, shapes, dtypes, devices, maximum absolute and relative errors and mismatch counts,
    never tensor values. A passing check says the outputs agree within these tolerances on these
    inputs; it does not establish task accuracy. ``rtol`` and ``atol`` are finite numbers >= 0
    (``int`` or ``float``, not ``bool``), or :class:`~torchscan.InvalidArgumentError` names them.
    """
    walker = _Walker(_tolerance("rtol", rtol), _tolerance("atol", atol), bool(equal_nan))
    walker.walk(baseline_output, candidate_output, "")
    if walker.differences:
        walker.diagnostics.insert(
            0,
            {
                "code": "output_metadata_mismatch",
                "severity": "warning",
                "metric": None,
                "message": (
                    f"the outputs' structures differ in {len(walker.differences)} place(s); "
                    "see structure_differences"
                ),
            },
        )
    structure_matches = not walker.differences
    passed = structure_matches and all(leaf["passed"] for leaf in walker.leaves)
    device = walker.devices[0] if walker.devices else None
    return {
        "schema_version": 1,
        "kind": "output_check",
        "context": capture_context(device, walker.dtypes),
        "diagnostics": walker.diagnostics,
        "passed": passed,
        "method": CHECK_METHOD,
        "rtol": float(rtol),
        "atol": float(atol),
        "equal_nan": bool(equal_nan),
        "structure_matches": structure_matches,
        "structure_differences": walker.differences,
        "leaves": walker.leaves,
    }
