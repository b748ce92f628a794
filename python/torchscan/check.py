"""``check_outputs``: does a candidate's output match the baseline's, leaf by leaf? Never values."""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
# Objects that are never walked through their attributes: classes, modules and functions.
_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
)
# Nesting deeper than this, or more nodes than this, is reported as a structure difference
# rather than walked: a check always ends, whatever the outputs hold.
_MAX_DEPTH = 64
_MAX_NODES = 100_000
# How many nodes the search for tensors inside one object may visit.
_MAX_SEARCH = 10_000
# Failing leaves named one by one in diagnostics; the rest are counted in one more.
_MAX_LEAF_DIAGNOSTICS = 20
# torch.testing.assert_close's default (rtol, atol) per dtype, for one operation.
_DEFAULT_TOLERANCES = {
    "torch.float16": (1e-3, 1e-5),
    "torch.bfloat16": (1.6e-2, 1e-5),
    "torch.float32": (1.3e-6, 1e-5),
    "torch.float64": (1e-7, 1e-7),
    "torch.complex32": (1e-3, 1e-5),
    "torch.complex64": (1.3e-6, 1e-5),
    "torch.complex128": (1e-7, 1e-7),
}
_LOW_PRECISION = ("torch.float16", "torch.bfloat16", "torch.complex32")
_CACHE_HINT = (
    "this leaf is in a cache (past keys and values), which a candidate may fill differently "
    "without changing the outputs that matter: check those only (for example .logits), or call "
    "both sides with use_cache=False"
)


class _Unset:
    """A dataclass field that was never set."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unset)

    def __hash__(self) -> int:
        return 0


_UNSET = _Unset()


def _attributes(value: Any) -> dict[str, Any]:
    """An object's stored attributes by name, in name order: its ``__dict__`` and set slots.

    Properties and other computed attributes are not read. Classes, modules and functions have
    none to walk.
    """
    if isinstance(value, _OPAQUE):
        return {}
    found: dict[str, Any] = {}
    try:
        stored = vars(value)
    except TypeError:  # no __dict__
        stored = {}
    for name, item in stored.items():
        if isinstance(name, str):
            found[name] = item
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if not isinstance(name, str) or name in ("__dict__", "__weakref__") or name in found:
                continue
            stored_name = name
            if name.startswith("__") and not name.endswith("__"):
                stored_name = f"_{klass.__name__.lstrip('_')}{name}"  # a private slot's name
            try:
                found[name] = object.__getattribute__(value, stored_name)
            except AttributeError:  # a slot never set
                continue
    return dict(sorted(found.items()))


def _is_record(value: Any) -> bool:
    """A named tuple or a dataclass instance: walked by its fields."""
    named = isinstance(value, tuple) and hasattr(type(value), "_fields")
    return named or (dataclasses.is_dataclass(value) and not isinstance(value, type))


def _fields(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, tuple):
        named: Any = type(value)
        names: tuple[str, ...] = named._fields
        return [(name, getattr(value, name)) for name in names]
    return [(item.name, getattr(value, item.name, _UNSET)) for item in dataclasses.fields(value)]


def _children(value: Any) -> Iterator[Any]:
    """The values below a node, in the order the walk visits them."""
    import torch

    if isinstance(value, (torch.Tensor, str, bytes, *_NUMBERS)) or value is None:
        return
    if _is_record(value):
        yield from (item for _, item in _fields(value))
    elif isinstance(value, (tuple, list)):
        yield from value
    elif isinstance(value, Mapping):
        yield from value.values()
    else:
        yield from _attributes(value).values()


def _is_cache_name(name: str) -> bool:
    lowered = name.lower()
    return "cache" in lowered or lowered in ("past_key_values", "past", "mems")


def _is_cache_object(value: Any) -> bool:
    return "cache" in type(value).__name__.lower()


def _describe_node(value: Any) -> str:
    """What a node is, for a structure difference: never its value."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor of shape {list(value.shape)}"
    if value is None:
        return "None"
    if value is _UNSET:
        return "unset"
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


def _where(path: str) -> str:
    return path or "(output)"


def _tolerance_text(dtype: str) -> str:
    """torch.testing.assert_close's default tolerances for ``dtype``."""
    rtol, atol = _DEFAULT_TOLERANCES[dtype]
    return f"torch.testing.assert_close's defaults for {dtype} are rtol={rtol:g}, atol={atol:g}"


class _Walker:
    def __init__(self, rtol: float, atol: float, equal_nan: bool, check_dtype: bool) -> None:
        self.rtol, self.atol, self.equal_nan = rtol, atol, equal_nan
        self.check_dtype = check_dtype
        self.differences: list[StructureDifference] = []
        self.cache_differences = 0
        self.leaves: list[LeafCheck] = []
        self.leaf_diagnostics: list[Diagnostic] = []
        self.devices: list[Any] = []
        self.dtypes: set[Any] = set()
        self.nodes = 0
        self.holds: dict[int, bool] = {}
        # Containers and objects being walked (id -> depth), to find cycles on either side.
        self.open_baseline: dict[int, int] = {}
        self.open_candidate: dict[int, int] = {}

    def differ(
        self, path: str, baseline: Any, candidate: Any, note: str = "", cache: bool = False
    ) -> None:
        self.differences.append(
            {
                "path": path,
                "baseline": _describe_node(baseline),
                "candidate": _describe_node(candidate) + note,
            }
        )
        self.cache_differences += cache

    def holds_tensors(self, value: Any) -> bool:
        """Whether a tensor is reachable from ``value`` (a bounded search that ends on cycles)."""
        import torch

        known = self.holds.get(id(value))
        if known is not None:
            return known
        seen = {id(value)}
        stack = list(_children(value))
        found = False
        while stack and len(seen) < _MAX_SEARCH:
            item = stack.pop()
            if isinstance(item, torch.Tensor):
                found = True
                break
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend(_children(item))
        self.holds[id(value)] = found
        return found

    @contextmanager
    def opened(self, baseline: Any, candidate: Any, depth: int) -> Iterator[None]:
        self.open_baseline[id(baseline)] = depth
        self.open_candidate[id(candidate)] = depth
        try:
            yield
        finally:
            del self.open_baseline[id(baseline)]
            del self.open_candidate[id(candidate)]

    def walk(
        self, baseline: Any, candidate: Any, path: str, depth: int = 0, cache: bool = False
    ) -> None:
        import torch

        self.nodes += 1
        if self.nodes == _MAX_NODES + 1:
            self.differ(path, baseline, candidate, f" (more than {_MAX_NODES} nodes to compare)")
        if self.nodes > _MAX_NODES:
            return
        if depth > _MAX_DEPTH:
            self.differ(path, baseline, candidate, " (nested too deeply to compare)", cache)
            return
        cache = cache or _is_cache_object(baseline) or _is_cache_object(candidate)
        if isinstance(baseline, _NUMBERS) and not isinstance(baseline, bool):
            baseline = torch.tensor(baseline)
        if isinstance(candidate, _NUMBERS) and not isinstance(candidate, bool):
            candidate = torch.tensor(candidate)
        if isinstance(baseline, torch.Tensor) or isinstance(candidate, torch.Tensor):
            if isinstance(baseline, torch.Tensor) and isinstance(candidate, torch.Tensor):
                self.compare(baseline, candidate, path, cache)
            else:
                self.differ(path, baseline, candidate, cache=cache)
            return
        if id(baseline) in self.open_baseline or id(candidate) in self.open_candidate:
            # A cycle: the same enclosing node on both sides is the same structure.
            before = self.open_baseline.get(id(baseline))
            if before is None or before != self.open_candidate.get(id(candidate)):
                self.differ(path, baseline, candidate, " (a different cycle)", cache)
            return
        if _is_record(baseline):
            if type(baseline) is not type(candidate):
                self.differ(path, baseline, candidate, cache=cache)
                return
            with self.opened(baseline, candidate, depth):
                for (name, left), (_, right) in zip(
                    _fields(baseline), _fields(candidate), strict=True
                ):
                    self.walk(
                        left,
                        right,
                        f"{path}.{name}",
                        depth + 1,
                        cache or _is_cache_name(name),
                    )
            return
        if isinstance(baseline, (tuple, list)):
            if type(baseline) is not type(candidate) or len(baseline) != len(candidate):
                self.differ(path, baseline, candidate, cache=cache)
                return
            with self.opened(baseline, candidate, depth):
                for index, (left, right) in enumerate(zip(baseline, candidate, strict=True)):
                    self.walk(left, right, _child_path(path, index), depth + 1, cache)
            return
        if isinstance(baseline, Mapping):
            if not isinstance(candidate, Mapping) or set(baseline) != set(candidate):
                self.differ(path, baseline, candidate, cache=cache)
                return
            with self.opened(baseline, candidate, depth):
                for key in baseline:
                    name = key if isinstance(key, str) else type(key).__name__
                    self.walk(
                        baseline[key],
                        candidate[key],
                        _child_path(path, name),
                        depth + 1,
                        cache or _is_cache_name(name),
                    )
            return
        if type(baseline) is type(candidate) and (
            self.holds_tensors(baseline) or self.holds_tensors(candidate)
        ):
            # An object that holds tensors: compared through its stored attributes.
            left_attributes, right_attributes = _attributes(baseline), _attributes(candidate)
            if list(left_attributes) != list(right_attributes):
                only = sorted(set(left_attributes) ^ set(right_attributes))
                self.differ(
                    path, baseline, candidate, f" (attributes differ: {', '.join(only)})", cache
                )
                return
            with self.opened(baseline, candidate, depth):
                for name, left in left_attributes.items():
                    self.walk(
                        left,
                        right_attributes[name],
                        f"{path}.{name}",
                        depth + 1,
                        cache or _is_cache_name(name),
                    )
            return
        # None, strings, booleans and other objects: equal or a difference (values unrecorded).
        try:
            same = type(baseline) is type(candidate) and bool(baseline == candidate)
        except Exception:  # an object whose == fails or is ambiguous cannot be shown equal
            same = False
        if not same:
            note = " (differs)" if type(baseline) is type(candidate) else ""
            self.differ(path, baseline, candidate, note, cache)

    def compare(self, baseline: Any, candidate: Any, path: str, cache: bool) -> None:
        import torch

        self.devices.append(baseline.device)
        for tensor in (baseline, candidate):
            if tensor.is_floating_point() or tensor.is_complex():
                self.dtypes.add(tensor.dtype)
        base_meta, cand_meta = tensor_meta(baseline), tensor_meta(candidate)
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
        if base_meta["shape"] == cand_meta["shape"]:
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
            same_dtype = base_meta["dtype"] == cand_meta["dtype"]
            leaf["passed"] = mismatched == 0 and (same_dtype or not self.check_dtype)
        self.leaves.append(leaf)
        self.explain(leaf, cache)

    def explain(self, leaf: LeafCheck, cache: bool) -> None:
        """A diagnostic for a leaf that failed or whose metadata differ: what and the way out."""
        base, cand = leaf["baseline"], leaf["candidate"]
        shape_differs = base["shape"] != cand["shape"]
        dtype_differs = base["dtype"] != cand["dtype"]
        notes = []
        if shape_differs:
            notes.append(f"shape {base['shape']} vs {cand['shape']}")
        if dtype_differs:
            across = (
                "" if self.check_dtype else " (values compared across dtypes: check_dtype=False)"
            )
            notes.append(f"dtype {base['dtype']} vs {cand['dtype']}{across}")
        if base["device"] != cand["device"]:
            notes.append(f"device {base['device']} vs {cand['device']}")
        mismatched = leaf["mismatched_elements"]
        if mismatched:
            errors = ", ".join(
                f"{name} {value:.3g}"
                for name, value in (
                    ("max abs error", leaf["max_abs_error"]),
                    ("max rel error", leaf["max_rel_error"]),
                )
                if value is not None
            )
            notes.append(
                f"{mismatched:,} of {leaf['elements']:,} elements outside atol + rtol * "
                f"|baseline| (rtol={self.rtol:g}, atol={self.atol:g}"
                + (f"; {errors})" if errors else ")")
            )
        if not notes:
            return
        ways: list[str] = []
        if cache and not leaf["passed"]:
            ways.append(_CACHE_HINT)
        if dtype_differs and self.check_dtype and not shape_differs:
            ways.append(
                "pass check_dtype=False to accept the change of dtype: the values are within "
                "the tolerances"
                if not mismatched
                else "pass check_dtype=False to compare the values across dtypes"
            )
        low = [d for d in (base["dtype"], cand["dtype"]) if d in _LOW_PRECISION]
        if mismatched and low:
            ways.append(
                f"choose tolerances for {low[0]}: {_tolerance_text(low[0])} for one operation, "
                "and a model's output accumulates the rounding of many, so pick what your "
                "application can accept"
            )
        elif mismatched and not cache:
            hint = (
                f" ({_tolerance_text(base['dtype'])})"
                if base["dtype"] in _DEFAULT_TOLERANCES
                else ""
            )
            ways.append(
                "if the candidate is meant to change rounding only (another kernel, another "
                f"order of summation), choose rtol and atol for that{hint}; otherwise it "
                "computes something else"
            )
        if shape_differs and not cache:
            ways.append("the candidate computes a different shape here")
        metadata = shape_differs or dtype_differs or base["device"] != cand["device"]
        message = f"output leaf {_where(leaf['path'])} " + (
            "differs: " if leaf["passed"] or metadata else "fails: "
        )
        message += "; ".join(notes)
        if ways:
            way_out = "; ".join(ways)
            message += ". " + way_out[0].upper() + way_out[1:]
        self.leaf_diagnostics.append(
            {
                "code": "output_metadata_mismatch" if metadata else "output_values_mismatch",
                "severity": "warning",
                "metric": None,
                "message": message,
            }
        )

    def structure_diagnostic(self) -> Diagnostic:
        shown = self.differences[:5]
        places = "; ".join(
            f"{_where(item['path'])}: baseline {item['baseline']}, candidate {item['candidate']}"
            for item in shown
        )
        more = len(self.differences) - len(shown)
        message = (
            f"the outputs' structures differ in {len(self.differences)} place(s): {places}"
            + (f"; and {more} more" if more else "")
            + " (see structure_differences). "
        )
        if self.cache_differences:
            message += (
                "A cache (past keys and values) differs, which a candidate may fill differently "
                "without changing the outputs that matter: check those only (for example "
                ".logits), or call both sides with use_cache=False"
            )
            if self.cache_differences < len(self.differences):
                message += "; elsewhere, "
        if self.cache_differences < len(self.differences):
            message += (
                "make both sides return the same structure, or check only the parts that "
                "should agree"
            )
        return {
            "code": "output_metadata_mismatch",
            "severity": "warning",
            "metric": None,
            "message": message,
        }


def _tolerance(name: str, value: Any) -> float:
    return check_real(name, value, minimum=0.0, meaning="a tolerance")


def check_outputs(
    baseline_output: Any,
    candidate_output: Any,
    *,
    rtol: float,
    atol: float,
    equal_nan: bool = False,
    check_dtype: bool = True,
) -> OutputCheckReport:
    """Compare a candidate's output with the baseline's and return an ``output_check`` report.

    Outputs may nest tuples, lists, dicts, dataclasses (Hugging Face ``ModelOutput`` among them)
    and named tuples; the structure must match (same kinds, lengths, keys and fields), and every
    tensor leaf (Python numbers count as 0-d tensors) must have the same shape and be within
    ``atol + rtol * |baseline|`` elementwise (``equal_nan`` makes NaNs in the same places equal).

    Any other object that holds tensors (a Hugging Face ``DynamicCache`` or
    ``EncoderDecoderCache``, any user class) is compared through its stored attributes: the
    entries of its ``__dict__`` and its set ``__slots__``, in name order (properties are not
    read). Both sides must be of the same type with the same attribute names, and the walk goes
    on into each attribute, so a leaf's path reads like ``.cache.layers[0].keys``. An object
    holds tensors when a tensor is reachable from it through containers, fields and attributes.
    Objects that hold no tensors are compared with ``==``. A reference back to an enclosing
    container or object (a cycle) ends the walk there and matches when both sides have it in the
    same place; nesting deeper than 64 levels or more than 100,000 nodes is reported as a
    structure difference rather than walked.

    ``check_dtype`` (default True, as in ``torch.testing.assert_close``) makes a leaf whose
    dtype differs fail. When False, leaves of different dtypes are compared by value, in float64
    (complex128), which holds every value of either side exactly: an fp32 baseline and a
    bfloat16 candidate within the tolerances pass.

    The report records, per leaf, shapes, dtypes, devices, maximum absolute and relative errors
    and mismatch counts, never tensor values; each failing leaf gets a diagnostic that names its
    path and the likely way out (``check_dtype=False``, tolerances for a low-precision dtype,
    checking ``.logits`` only or ``use_cache=False`` for a cache). A passing check says the
    outputs agree within these tolerances on these inputs; it does not establish task accuracy.
    ``rtol`` and ``atol`` are finite numbers >= 0 (``int`` or ``float``, not ``bool``), or
    :class:`~torchscan.InvalidArgumentError` names them.
    """
    walker = _Walker(
        _tolerance("rtol", rtol), _tolerance("atol", atol), bool(equal_nan), bool(check_dtype)
    )
    walker.walk(baseline_output, candidate_output, "")
    diagnostics: list[Diagnostic] = []
    if walker.differences:
        diagnostics.append(walker.structure_diagnostic())
    named = walker.leaf_diagnostics[:_MAX_LEAF_DIAGNOSTICS]
    diagnostics.extend(named)
    rest = walker.leaf_diagnostics[_MAX_LEAF_DIAGNOSTICS:]
    if rest:
        diagnostics.append(
            {
                "code": rest[0]["code"],
                "severity": "warning",
                "metric": None,
                "message": f"{len(rest)} more output leaves fail or differ; see leaves",
            }
        )
    structure_matches = not walker.differences
    passed = structure_matches and all(leaf["passed"] for leaf in walker.leaves)
    device = walker.devices[0] if walker.devices else None
    return {
        "schema_version": 1,
        "kind": "output_check",
        "context": capture_context(device, walker.dtypes),
        "diagnostics": diagnostics,
        "passed": passed,
        "method": CHECK_METHOD,
        "rtol": float(rtol),
        "atol": float(atol),
        "equal_nan": bool(equal_nan),
        "check_dtype": bool(check_dtype),
        "structure_matches": structure_matches,
        "structure_differences": walker.differences,
        "leaves": walker.leaves,
    }
