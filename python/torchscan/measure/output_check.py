"""``check_outputs``: does a candidate's output match the baseline's, leaf by leaf? Never values."""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from .._arguments import check_real
from .._values import tensor_meta
from ..context import capture_context
from ..reports import Diagnostic, LeafCheck, OutputCheckReport, StructureDifference, TensorMeta

__all__ = ["CHECK_METHOD", "check_outputs"]

CHECK_METHOD = (
    "per element: |candidate - baseline| <= atol + rtol * |baseline| on the baseline's device, "
    "in chunks; integer and bool tensors on both sides exactly, as integers; otherwise "
    "torch.isclose in float64 (complex128 for complex tensors), integers beyond 2**53 against "
    "floats exactly; Python numbers as 0-d tensors, Python ints on both sides exactly; sparse "
    "tensors through their dense values, nested tensors component by component"
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
# Integer leaves: values inside (-2**62, 2**62) have differences that int64 holds; beyond, the
# elements that differ are compared as Python ints. float64 holds every integer up to 2**53, and a
# bound or a ratio that float64 puts this close (relatively) to its limit is decided exactly.
_INT64_SAFE = 2**62
_LARGEST_FLOAT = 2**1024 - 2**971  # sys.float_info.max: a larger int is reported as null
_FLOAT_EXACT = 2**53
_CLOSE = 1e-14
_LAYOUT_HINT = "convert both sides to one layout (for example .to_dense()) to compare their values"
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
        if value.is_nested:
            return f"nested tensor ({value.layout}) of {len(value.unbind())} components"
        layout = "" if value.layout == torch.strided else f" ({value.layout})"
        return f"tensor of shape {list(value.shape)}{layout}"
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


def _is_integer(dtype: Any) -> bool:
    """Integer and bool dtypes: compared exactly (quantized dtypes are not among them)."""
    import torch

    return dtype in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint16,
        torch.uint32,
        torch.uint64,
    )


def _within(difference: int, scale: int, rtol: float, atol: float) -> bool:
    """``difference <= atol + rtol * scale``, without rounding (floats are exact fractions)."""
    if rtol == 0:
        return difference <= atol  # Python compares an int with a float exactly
    return Fraction(difference) <= Fraction(atol) + Fraction(rtol) * scale


def _ratio(difference: int, scale: int) -> float | None:
    """``difference / scale`` correctly rounded (Python's int division); None past float64."""
    try:
        return difference / scale
    except OverflowError:
        return None


def _as_int64(tensor: Any) -> Any | None:
    """An integer tensor's values as int64, or None when a uint64 value exceeds int64."""
    import torch

    if tensor.dtype == torch.uint64:
        bits = tensor.contiguous().view(torch.int64)
        return None if bool((bits < 0).any()) else bits
    return tensor.to(torch.int64)


def _compare_integers(
    left: Any, right: Any, rtol: float, atol: float
) -> tuple[int, int, int | None, float | None]:
    """Elements, mismatches and the largest errors of two integer tensors of one shape, exactly.

    ``left`` is the baseline. Returns the largest absolute error as an int.
    """
    elements = int(left.numel())
    if elements == 0:
        return 0, 0, None, None
    baseline, candidate = _as_int64(left), _as_int64(right)
    if baseline is None or candidate is None:
        return _compare_integers_in_python(left, right, rtol, atol)
    for values in (baseline, candidate):
        low, high = values.aminmax()
        if int(low) <= -_INT64_SAFE or int(high) >= _INT64_SAFE:
            return _compare_integers_in_python(left, right, rtol, atol)
    difference = (candidate - baseline).abs()  # exact: both sides inside (-2**62, 2**62)
    scale = baseline.abs()
    max_abs = int(difference.max())
    if rtol == 0:
        mismatched = int((difference > min(math.floor(atol), 2**63 - 1)).sum())
    else:
        # The bound in float64, then the elements whose decision its rounding could change
        # decided exactly.
        bound = atol + rtol * scale.double()
        approximate = difference.double()
        unsure = (
            (difference != 0) & bound.isfinite() & ((approximate - bound).abs() <= _CLOSE * bound)
        )
        mismatched = int(((approximate > bound) & ~unsure).sum())
        if bool(unsure.any()):
            mismatched += sum(
                not _within(d, s, rtol, atol)
                for d, s in zip(difference[unsure].tolist(), scale[unsure].tolist(), strict=True)
            )
    nonzero = scale != 0
    if not bool(nonzero.any()):
        return elements, mismatched, max_abs, None
    difference, scale = difference[nonzero], scale[nonzero]
    ratio = difference.double() / scale.double()
    # float64 divides integers up to 2**53 with one rounding; larger ones near the top are
    # divided again as Python ints (rounding is monotonic: the largest rounded ratio is the
    # rounded largest ratio).
    near = ratio >= float(ratio.max()) * (1 - _CLOSE)
    large = (difference != 0) & ((difference > _FLOAT_EXACT) | (scale > _FLOAT_EXACT))
    best = [float(ratio[near & ~large].max())] if bool((near & ~large).any()) else []
    for d, s in zip(difference[near & large].tolist(), scale[near & large].tolist(), strict=True):
        best.append(d / s)
    return elements, mismatched, max_abs, max(best)


def _compare_integers_in_python(
    left: Any, right: Any, rtol: float, atol: float
) -> tuple[int, int, int | None, float | None]:
    """:func:`_compare_integers` where int64 cannot hold the values or their differences.

    The elements that differ are compared as Python ints.
    """
    import torch

    unsigned = torch.uint64
    bits = [
        t.contiguous().view(torch.int64) if t.dtype == unsigned else t.to(torch.int64)
        for t in (left, right)
    ]
    # Equal bits are equal values, unless one side is uint64 and the other negative.
    differs = bits[0] != bits[1]
    if (left.dtype == unsigned) != (right.dtype == unsigned):
        differs |= bits[1 if left.dtype == unsigned else 0] < 0
    # Python ints from the int64 bits (PyTorch indexes few uint64 tensors), 2**64 added back
    # where a uint64 value had its top bit set.
    values = [
        [v + 2**64 if v < 0 else v for v in b[differs].tolist()]
        if t.dtype == unsigned
        else b[differs].tolist()
        for t, b in zip((left, right), bits, strict=True)
    ]
    mismatched, max_abs, max_rel = 0, 0, 0.0
    for base, cand in zip(values[0], values[1], strict=True):
        difference, scale = abs(cand - base), abs(base)
        mismatched += not _within(difference, scale, rtol, atol)
        max_abs = max(max_abs, difference)
        if scale:
            ratio = _ratio(difference, scale)
            max_rel = math.inf if ratio is None else max(max_rel, ratio)
    has_scale = bool((bits[0] != 0).any())
    return int(left.numel()), mismatched, max_abs, max_rel if has_scale else None


# ---------------------------------------------------------------------------------------------
# Values in chunks: one leaf's tensors are compared a chunk at a time, so the float64 copies,
# differences and masks of a comparison never hold more than one chunk.

#: Elements compared at a time: the float64 (complex128) copies, differences and masks of one
#: chunk are a few MiB each, whatever the size of the leaf.
CHUNK_ELEMENTS = 1 << 18

#: Elements, mismatched elements, the largest absolute error and the largest relative error.
_Errors = tuple[int, int, int | float | None, float | None]


def _chunks(left: Any, right: Any, limit: int) -> Iterator[tuple[Any, Any]]:
    """Both tensors (of one shape) in pieces of at most ``limit`` elements, flattened.

    The pieces cover every element once, the same elements of both sides together: slices of
    the first dimension, and of the dimensions below it where one index of the first holds more
    than ``limit`` elements. A piece is a view where the tensor's strides allow, else a copy of
    that piece alone.
    """
    if left.numel() <= limit or left.dim() == 0:
        yield left.reshape(-1), right.reshape(-1)
        return
    inner = left[0].numel()  # elements under one index of the first dimension
    if inner > limit:
        for index in range(left.shape[0]):
            yield from _chunks(left[index], right[index], limit)
        return
    rows = limit // inner
    for start in range(0, left.shape[0], rows):
        yield (
            left[start : start + rows].reshape(-1),
            right[start : start + rows].reshape(-1),
        )


def _merge(total: _Errors, part: _Errors) -> _Errors:
    """Two chunks' elements, mismatches and largest errors as one (None where neither has one)."""

    def larger(a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else max(a, b)

    return (
        total[0] + part[0],
        total[1] + part[1],
        larger(total[2], part[2]),
        larger(total[3], part[3]),
    )


def _compare_floats(left: Any, right: Any, rtol: float, atol: float, equal_nan: bool) -> _Errors:
    """Two tensors of one shape in float64 (complex128), ``left`` the baseline.

    ``torch.isclose`` decides each element; the largest absolute error is over the finite
    differences, the largest relative error over those whose baseline is nonzero.
    """
    import torch

    elements = int(left.numel())
    if elements == 0:
        return 0, 0, None, None
    complex_values = left.is_complex() or right.is_complex()
    kind = torch.complex128 if complex_values else torch.float64
    left, right = left.to(dtype=kind), right.to(dtype=kind)
    close = torch.isclose(right, left, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = elements - int(close.sum().item())
    del close
    difference = (right - left).abs()
    finite = torch.isfinite(difference)
    # Errors are >= 0: -1 marks the elements left out of a maximum.
    max_abs = float(torch.where(finite, difference, -1.0).max().item())
    scale = left.abs()
    relative_ok = finite & (scale > 0)
    max_rel = float(torch.where(relative_ok, difference / scale, -1.0).max().item())
    return (
        elements,
        mismatched,
        max_abs if max_abs >= 0 else None,
        max_rel if max_rel >= 0 else None,
    )


def _sqrt_float(value: Fraction) -> float:
    """The square root of a rational >= 0, correctly rounded to a float (``inf`` past the range).

    ``sqrt(value) * 2**shift`` lies in ``[root, root + 1)`` for the integer square root ``root``
    of ``value * 4**shift`` (at least 60 bits): equal to ``root`` when exact, else strictly inside,
    where the midpoint ``root + 1/2`` rounds as it does (no rounding boundary of a float lies
    strictly between two integers at that scale).
    """
    numerator, denominator = value.numerator, value.denominator
    if numerator == 0:
        return 0.0
    shift = max(0, (120 - (numerator.bit_length() - denominator.bit_length())) // 2 + 1)
    scaled = numerator << (2 * shift)
    root = math.isqrt(scaled // denominator)
    if root * root * denominator == scaled:
        result = Fraction(root, 1 << shift)
    else:
        result = Fraction(2 * root + 1, 1 << (shift + 1))
    try:
        return float(result)
    except OverflowError:
        return math.inf


def _sqrt_within(square: Fraction, scale_square: Fraction, rtol: float, atol: float) -> bool:
    """``sqrt(square) <= atol + rtol * sqrt(scale_square)``, exactly (all rationals, >= 0)."""
    a, b = Fraction(atol), Fraction(rtol)
    if b == 0 or scale_square == 0:
        return square <= a * a
    # Squared: square <= a^2 + 2ab sqrt(q) + b^2 q, that is rest <= 2ab sqrt(q).
    rest = square - a * a - b * b * scale_square
    if rest <= 0:
        return True
    return rest * rest <= 4 * a * a * b * b * scale_square


def _exact_mixed(
    integer: int, number: float | complex, integer_is_baseline: bool, rtol: float, atol: float
) -> tuple[bool, float, float | None]:
    """One integer element against one finite float (or complex) element, exactly.

    Returns whether ``|candidate - baseline| <= atol + rtol * |baseline|``, the absolute error
    and the relative error (``None`` for a zero baseline), each correctly rounded.
    """
    if isinstance(number, complex):
        real, imaginary = Fraction(number.real), Fraction(number.imag)
        square = (Fraction(integer) - real) ** 2 + imaginary**2
        scale_square = Fraction(integer) ** 2 if integer_is_baseline else real**2 + imaginary**2
        within = _sqrt_within(square, scale_square, rtol, atol)
        relative = _sqrt_float(square / scale_square) if scale_square else None
        return within, _sqrt_float(square), relative
    difference = abs(Fraction(integer) - Fraction(number))
    scale = abs(Fraction(integer) if integer_is_baseline else Fraction(number))
    within = difference <= Fraction(atol) + Fraction(rtol) * scale
    try:
        absolute = float(difference)
    except OverflowError:
        absolute = math.inf
    relative = None
    if scale:
        try:
            relative = float(difference / scale)
        except OverflowError:
            relative = math.inf
    return within, absolute, relative


def _compare_mixed(left: Any, right: Any, rtol: float, atol: float, equal_nan: bool) -> _Errors:
    """An integer (or bool) side against a floating or complex side, ``left`` the baseline.

    float64 holds every integer up to 2**53 exactly: those elements are compared as floats are
    (:func:`_compare_floats`). Larger integers would be rounded there, so their elements are
    decided exactly: in int64 arithmetic where both numbers are below 2**62
    (:func:`_compare_large`), as Python fractions otherwise. A NaN or an infinity on the
    floating side never matches an integer.
    """
    import torch

    integer_is_baseline = _is_integer(left.dtype)
    integers, numbers = (left, right) if integer_is_baseline else (right, left)
    if integers.dtype not in (torch.int64, torch.uint64):  # every value within 2**53
        return _compare_floats(left, right, rtol, atol, equal_nan)
    unsigned = integers.dtype == torch.uint64
    # int64 bits: a uint64 value past int64 reads negative (PyTorch indexes few uint64 tensors).
    bits = integers.contiguous().view(torch.int64) if unsigned else integers
    large = (bits > _FLOAT_EXACT) | (bits < (0 if unsigned else -_FLOAT_EXACT))
    if not bool(large.any()):
        return _compare_floats(left, right, rtol, atol, equal_nan)
    elements = int(left.numel())
    small = ~large
    pair = (bits[small], numbers[small])
    total = _compare_floats(*(pair if integer_is_baseline else pair[::-1]), rtol, atol, equal_nan)
    bits = bits[large]
    kind = torch.complex128 if numbers.is_complex() else torch.float64
    numbers = numbers[large].to(dtype=kind)
    finite = torch.isfinite(numbers)
    # A NaN or an infinity against an integer: a mismatch, its error left out of the maxima.
    total = _merge(total, (0, int(bits.numel()) - int(finite.sum().item()), None, None))
    bits, numbers = bits[finite], numbers[finite]
    if not numbers.is_complex():
        safe = (numbers.abs() < _INT64_SAFE) & (bits < _INT64_SAFE) & (bits > -_INT64_SAFE)
        if unsigned:
            safe &= bits >= 0
        part = _compare_large(bits[safe], numbers[safe], integer_is_baseline, rtol, atol)
        total = _merge(total, part)
        bits, numbers = bits[~safe], numbers[~safe]
    # The rest (integers or floats past 2**62, complex numbers) as Python fractions.
    values: list[int] = bits.tolist()
    if unsigned:
        values = [value + 2**64 if value < 0 else value for value in values]
    for integer, number in zip(values, numbers.tolist(), strict=True):
        within, absolute, relative = _exact_mixed(integer, number, integer_is_baseline, rtol, atol)
        total = _merge(total, (0, int(not within), absolute, relative))
    return elements, total[1], total[2], total[3]


def _compare_large(
    integers: Any, numbers: Any, integer_is_baseline: bool, rtol: float, atol: float
) -> tuple[int, int, float | None, float | None]:
    """Integers past 2**53 (int64, below 2**62) against finite float64 numbers below 2**62.

    Exact: a float below 2**62 is its integer part ``whole`` (int64) plus a fraction ``part`` in
    (-1, 1), both exact, so the difference is ``steps - part`` with ``steps = integer - whole``
    exact in int64. float64 then decides every element but those whose bound it puts within
    1e-14 (relatively) of the difference, decided as fractions, and gives the largest errors,
    the few that float64 puts near the top computed again as fractions.
    """
    import torch

    elements = int(integers.numel())
    if elements == 0:
        return 0, 0, None, None
    whole = numbers.trunc()
    part = numbers - whole  # exact: the fraction of a float
    steps = integers - whole.to(torch.int64)  # exact: both below 2**62 in magnitude
    difference = (steps.double() - part).abs()
    scale = integers.abs().double() if integer_is_baseline else numbers.abs()
    bound = atol + rtol * scale

    def exact(mask: Any) -> list[tuple[bool, float, float | None]]:
        return [
            _exact_mixed(integer, number, integer_is_baseline, rtol, atol)
            for integer, number in zip(integers[mask].tolist(), numbers[mask].tolist(), strict=True)
        ]

    unsure = bound.isfinite() & ((difference - bound).abs() <= _CLOSE * bound)
    mismatched = int(((difference > bound) & ~unsure).sum().item())
    mismatched += sum(not within for within, _, _ in exact(unsure))
    # The largest absolute error: float64 rounds the difference once where steps fit in 2**53
    # (exact then), twice beyond; the largest rounded value is the rounded largest value.
    top = float(difference.max().item())
    inexact = steps.abs() > _FLOAT_EXACT
    near = inexact & (difference >= top * (1 - _CLOSE))
    sure = difference[~inexact]
    candidates = [float(sure.max().item())] if sure.numel() else []
    candidates += [absolute for _, absolute, _ in exact(near)]
    max_abs = max(candidates)
    # The largest relative error: float64 rounds it more than once, so those near the top are
    # computed again; a zero difference is an exact zero.
    nonzero = scale > 0
    if not bool(nonzero.any()):
        return elements, mismatched, max_abs, None
    ratio = torch.where(nonzero, difference / scale, -1.0)
    top = float(ratio.max().item())
    near = nonzero & (difference != 0) & (ratio >= top * (1 - _CLOSE))
    relatives = [relative for _, _, relative in exact(near) if relative is not None]
    max_rel = max(relatives) if relatives else max(top, 0.0)
    return elements, mismatched, max_abs, max_rel


def _int_meta(value: int, fits: bool) -> TensorMeta:
    """A Python int's metadata: a 0-d int64 tensor's when ``fits``, else dtype ``int``."""
    import torch

    if fits:
        return tensor_meta(torch.tensor(value))
    return {"shape": [], "dtype": "int", "device": "cpu", "requires_grad": False}


def _number_tensor(value: Any) -> Any | None:
    """A Python number as a 0-d tensor (uint64 for ints above int64); None past 64 bits."""
    import torch

    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**64:
            return None
        if value >= 2**63:
            return torch.tensor(value, dtype=torch.uint64)
    return torch.tensor(value)


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
        ints = [isinstance(v, int) and not isinstance(v, bool) for v in (baseline, candidate)]
        if all(ints):
            self.compare_ints(baseline, candidate, path, cache)
            return
        sides = [baseline, candidate]
        for index, value in enumerate(sides):
            if isinstance(value, _NUMBERS) and not isinstance(value, bool):
                sides[index] = _number_tensor(value)
                if sides[index] is None:  # a Python int that no tensor dtype holds
                    note = " (an int beyond 64 bits on one side)"
                    self.differ(path, baseline, candidate, note, cache)
                    return
        baseline, candidate = sides
        nested = [isinstance(v, torch.Tensor) and v.is_nested for v in (baseline, candidate)]
        if any(nested):
            self.compare_nested(baseline, candidate, path, depth, cache)
            return
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

    def compare_nested(
        self, baseline: Any, candidate: Any, path: str, depth: int, cache: bool
    ) -> None:
        """Nested tensors: the same layout and number of components, each component a leaf."""
        import torch

        both = isinstance(baseline, torch.Tensor) and isinstance(candidate, torch.Tensor)
        if not both or not (baseline.is_nested and candidate.is_nested):
            self.differ(path, baseline, candidate, cache=cache)
            return
        if baseline.layout != candidate.layout:
            self.differ(path, baseline, candidate, cache=cache)
            return
        left, right = baseline.unbind(), candidate.unbind()
        if len(left) != len(right):
            self.differ(path, baseline, candidate, cache=cache)
            return
        for index, (part, other) in enumerate(zip(left, right, strict=True)):
            self.walk(part, other, f"{path}.unbind()[{index}]", depth + 1, cache)

    def compare_ints(self, baseline: int, candidate: int, path: str, cache: bool) -> None:
        """Two Python ints, compared exactly as ints (0-d int64 leaves where int64 holds both)."""
        import torch

        self.devices.append(torch.device("cpu"))
        fits = all(-(2**63) <= value < 2**63 for value in (baseline, candidate))
        difference, scale = abs(candidate - baseline), abs(baseline)
        mismatched = int(not _within(difference, scale, self.rtol, self.atol))
        leaf: LeafCheck = {
            "path": path,
            "passed": False,
            "baseline": _int_meta(baseline, fits),
            "candidate": _int_meta(candidate, fits),
            "elements": 1,
            "mismatched_elements": mismatched,
            "max_abs_error": difference if difference <= _LARGEST_FLOAT else None,
            "max_rel_error": _ratio(difference, scale) if scale else None,
        }
        leaf["passed"] = mismatched == 0
        self.leaves.append(leaf)
        self.explain(leaf, cache)

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
        layouts = (str(baseline.layout), str(candidate.layout))
        problem = ""
        if baseline.is_meta or candidate.is_meta:
            # Meta tensors have shapes and dtypes but no values: nothing to compare.
            problem = "meta"
        elif layouts[0] == layouts[1] and base_meta["shape"] == cand_meta["shape"]:
            try:
                elements, mismatched, max_abs, max_rel = self.values(baseline, candidate)
            except (RuntimeError, NotImplementedError, TypeError, ValueError) as error:
                if isinstance(error, torch.OutOfMemoryError):
                    raise
                # A layout or dtype PyTorch cannot convert or compare: the leaf fails and says
                # how to compare it.
                problem = type(error).__name__
            else:
                leaf["elements"] = elements
                leaf["mismatched_elements"] = mismatched
                leaf["max_abs_error"] = (
                    max_abs if max_abs is None or max_abs <= _LARGEST_FLOAT else None
                )
                leaf["max_rel_error"] = (
                    max_rel if max_rel is None or math.isfinite(max_rel) else None
                )
                same_dtype = base_meta["dtype"] == cand_meta["dtype"]
                leaf["passed"] = mismatched == 0 and (same_dtype or not self.check_dtype)
        self.leaves.append(leaf)
        self.explain(leaf, cache, layouts, problem)

    def values(self, baseline: Any, candidate: Any) -> _Errors:
        """Elements, mismatches and the largest errors of two tensors of one shape and layout.

        Compared a chunk of :data:`CHUNK_ELEMENTS` at a time on the baseline's device (each
        candidate chunk moved there), so the extra memory stays a few chunks whatever the size.
        """
        import torch

        with torch.no_grad():
            left, right = baseline.detach(), candidate.detach()
            if left.layout != torch.strided:  # sparse (and oneDNN) tensors: their dense values
                left, right = left.to_dense(), right.to_dense()
            integers = (_is_integer(left.dtype), _is_integer(right.dtype))
            rtol, atol, equal_nan = self.rtol, self.atol, self.equal_nan
            if all(integers):

                def compare(first: Any, second: Any) -> _Errors:
                    return _compare_integers(first, second, rtol, atol)

            elif any(integers):

                def compare(first: Any, second: Any) -> _Errors:
                    return _compare_mixed(first, second, rtol, atol, equal_nan)

            else:

                def compare(first: Any, second: Any) -> _Errors:
                    return _compare_floats(first, second, rtol, atol, equal_nan)

            total: _Errors = (0, 0, None, None)
            for first, second in _chunks(left, right, CHUNK_ELEMENTS):
                total = _merge(total, compare(first, second.to(device=first.device)))
        return total

    def explain(
        self,
        leaf: LeafCheck,
        cache: bool,
        layouts: tuple[str, str] = ("torch.strided", "torch.strided"),
        problem: str = "",
    ) -> None:
        """A diagnostic for a leaf that failed or whose metadata differ: what and the way out."""
        base, cand = leaf["baseline"], leaf["candidate"]
        shape_differs = base["shape"] != cand["shape"]
        dtype_differs = base["dtype"] != cand["dtype"]
        layout_differs = layouts[0] != layouts[1]
        notes = []
        if layout_differs:
            notes.append(f"layout {layouts[0]} vs {layouts[1]}")
        if problem:
            notes.append(
                f"values of layout {layouts[0]} and dtype {base['dtype']}"
                + ("" if not dtype_differs else f" vs {cand['dtype']}")
                + f" cannot be compared ({problem})"
            )
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
        if layout_differs:
            ways.append(_LAYOUT_HINT)
        if problem == "meta":
            ways.append(
                "a tensor on the meta device has no values: run the workload on a real device "
                "(device='cpu') to compare its outputs"
            )
        elif problem:
            ways.append(
                "convert both sides to plain tensors of a dtype PyTorch compares first "
                "(.to_dense() for another layout, .dequantize() for a quantized tensor)"
            )
        if cache and not leaf["passed"]:
            ways.append(_CACHE_HINT)
        if dtype_differs and self.check_dtype and not shape_differs and not layout_differs:
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
        metadata = (
            shape_differs or dtype_differs or layout_differs or base["device"] != cand["device"]
        )
        message = f"output leaf {_where(leaf['path'])} " + (
            "differs: " if leaf["passed"] or metadata else "fails: "
        )
        message += "; ".join(notes)
        if ways:
            way_out = "; ".join(ways)
            message += ". " + way_out[0].upper() + way_out[1:]
        self.leaf_diagnostics.append(
            {
                "code": (
                    "output_metadata_mismatch" if metadata or problem else "output_values_mismatch"
                ),
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


def check_tolerance(name: str, value: Any) -> float:
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

    Floating-point and complex leaves are compared in float64 (complex128). Integer and bool
    leaves on both sides, and Python ints on both sides, are compared exactly as integers: the
    bound ``atol + rtol * |baseline|`` is evaluated without rounding (with ``rtol=0`` a difference
    passes when it is at most ``atol``), and ``max_abs_error`` is the exact largest difference.
    Sparse tensors of the same layout are compared through their dense values (a layout
    difference fails the leaf), nested tensors component by component, each component a leaf at
    ``path.unbind()[i]``, after their layouts and numbers of components match. A leaf that
    PyTorch cannot compare (a quantized tensor) fails with a diagnostic that names its layout and
    dtype and how to convert it.

    ``check_dtype`` (default True, as in ``torch.testing.assert_close``) makes a leaf whose
    dtype differs fail. When False, leaves of different dtypes are compared by value: two integer
    dtypes exactly, otherwise in float64 (complex128), which holds every float32 and bfloat16
    value exactly: an fp32 baseline and a bfloat16 candidate within the tolerances pass. An
    integer side's values beyond 2**53, which float64 would round, are compared with the floats
    exactly (``2**53 + 1`` against ``2.0**53`` is one mismatched element with an absolute error
    of 1), and their largest errors are the exact ones, correctly rounded.

    Each leaf is compared in chunks of :data:`CHUNK_ELEMENTS` elements on the baseline's device,
    so the check's extra memory stays a few MiB whatever the size of the tensors.

    The report records, per leaf, shapes, dtypes, devices, maximum absolute and relative errors
    and mismatch counts, never tensor values; each failing leaf gets a diagnostic that names its
    path and the likely way out (``check_dtype=False``, tolerances for a low-precision dtype,
    checking ``.logits`` only or ``use_cache=False`` for a cache). A passing check says the
    outputs agree within these tolerances on these inputs; it does not establish task accuracy.
    ``rtol`` and ``atol`` are finite numbers >= 0 (``int`` or ``float``, not ``bool``), or
    :class:`~torchscan.InvalidArgumentError` names them.
    """
    walker = _Walker(
        check_tolerance("rtol", rtol),
        check_tolerance("atol", atol),
        bool(equal_nan),
        bool(check_dtype),
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
