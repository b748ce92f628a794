"""check_outputs: structure, per-leaf metadata and errors, never values."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import warnings
from collections import namedtuple
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
import torch

import torchscan
from torchscan import InvalidArgumentError, check_outputs
from torchscan.cli import main

Pair = namedtuple("Pair", ["logits", "aux"])


@dataclass
class Output:
    hidden: torch.Tensor
    scores: list[torch.Tensor]


def test_identical_outputs_pass() -> None:
    x = torch.randn(3, 4)
    report = check_outputs((x, {"a": x * 2}), (x.clone(), {"a": x * 2}), rtol=0, atol=0)
    assert report["passed"] and report["structure_matches"]
    assert [leaf["path"] for leaf in report["leaves"]] == ["[0]", "[1].a"]
    assert report["leaves"][0]["max_abs_error"] == 0.0
    assert report["leaves"][0]["elements"] == 12
    assert torchscan.validate_report(report) == "output_check"


def test_errors_and_mismatches_are_exact() -> None:
    baseline = torch.tensor([1.0, 2.0, 4.0, 0.0])
    candidate = torch.tensor([1.0, 2.5, 4.0, 0.001])
    report = check_outputs(baseline, candidate, rtol=0.1, atol=0.0)
    leaf = report["leaves"][0]
    # |0.5| > 0.1 * 2 fails; |0.001| > 0 fails at atol 0.
    assert leaf["mismatched_elements"] == 2
    assert leaf["max_abs_error"] == pytest.approx(0.5)
    assert leaf["max_rel_error"] == pytest.approx(0.25)
    assert not report["passed"]
    assert torchscan.validate_report(report) == "output_check"
    assert "0.001" not in str(report) and "2.5" not in str(report)


def test_nan_handling() -> None:
    baseline = torch.tensor([float("nan"), 1.0])
    candidate = torch.tensor([float("nan"), 1.0])
    assert not check_outputs(baseline, candidate, rtol=0, atol=0)["passed"]
    report = check_outputs(baseline, candidate, rtol=0, atol=0, equal_nan=True)
    assert report["passed"]
    assert report["leaves"][0]["max_abs_error"] == 0.0


def test_structure_differences_are_located() -> None:
    x = torch.zeros(2)
    report = check_outputs(Pair(x, [x, x]), Pair(x, [x]), rtol=1e-5, atol=1e-8)
    assert not report["structure_matches"] and not report["passed"]
    assert report["structure_differences"] == [
        {"path": ".aux", "baseline": "list of 2", "candidate": "list of 1"}
    ]
    report = check_outputs({"a": x}, {"b": x}, rtol=0, atol=0)
    assert report["structure_differences"][0]["baseline"] == "dict with keys a"
    assert torchscan.validate_report(report) == "output_check"


def test_dataclass_shape_and_dtype_differences() -> None:
    base = Output(torch.zeros(2, 3), [torch.zeros(4)])
    cand = Output(torch.zeros(3, 2), [torch.zeros(4, dtype=torch.float64)])
    report = check_outputs(base, cand, rtol=0, atol=0)
    by_path = {leaf["path"]: leaf for leaf in report["leaves"]}
    assert by_path[".hidden"]["elements"] == 0
    assert by_path[".hidden"]["max_abs_error"] is None
    assert not by_path[".scores[0]"]["passed"]
    assert by_path[".scores[0]"]["mismatched_elements"] == 0
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes.count("output_metadata_mismatch") == 2
    assert torchscan.validate_report(report) == "output_check"


def test_python_numbers_and_other_leaves() -> None:
    report = check_outputs((1.0, "label", None), (1.0000001, "label", None), rtol=1e-5, atol=0)
    assert report["passed"]
    report = check_outputs(("a",), ("b",), rtol=0, atol=0)
    assert report["structure_differences"] == [
        {"path": "[0]", "baseline": "str", "candidate": "str (differs)"}
    ]
    assert '"a"' not in str(report["structure_differences"])


@pytest.mark.parametrize(("rtol", "atol"), [(-1, 0), (0, float("nan")), ("1", 0)])
def test_bad_tolerances(rtol: object, atol: object) -> None:
    with pytest.raises(InvalidArgumentError, match="must be"):
        check_outputs(torch.zeros(1), torch.zeros(1), rtol=rtol, atol=atol)  # type: ignore[arg-type]


# -- objects that hold tensors, cycles, deep structures -------------------------------------------


class Holder:
    """A user class holding tensors in its ``__dict__``."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.keys = keys
        self.values = values
        self.seen = 3


class Slotted:
    __slots__ = ("__private", "state", "unset")

    def __init__(self, state: torch.Tensor, private: torch.Tensor) -> None:
        self.state = state
        self.__private = private


def test_objects_holding_tensors_are_compared_through_their_attributes() -> None:
    keys, values = torch.randn(2, 3), torch.randn(2, 3)
    report = check_outputs(
        {"out": Holder(keys, values)}, {"out": Holder(keys.clone(), values.clone())}, rtol=0, atol=0
    )
    assert report["passed"], report["diagnostics"]
    # Name order: keys, seen (a number: a 0-d leaf), values.
    assert [leaf["path"] for leaf in report["leaves"]] == ["out.keys", "out.seen", "out.values"]
    changed = values.clone()
    changed[1, 2] += 1.0
    report = check_outputs(Holder(keys, values), Holder(keys, changed), rtol=0, atol=0)
    failing = [leaf for leaf in report["leaves"] if not leaf["passed"]]
    assert [(leaf["path"], leaf["mismatched_elements"]) for leaf in failing] == [(".values", 1)]
    assert report["diagnostics"][0]["code"] == "output_values_mismatch"
    assert report["diagnostics"][0]["message"].startswith("output leaf .values fails: 1 of 6")
    assert torchscan.validate_report(report) == "output_check"


def test_slots_are_walked_and_unset_slots_skipped() -> None:
    state, private = torch.ones(4), torch.zeros(2)
    report = check_outputs(Slotted(state, private), Slotted(state + 1, private), rtol=0, atol=0)
    by_path = {leaf["path"]: leaf for leaf in report["leaves"]}
    assert sorted(by_path) == [".__private", ".state"]
    assert by_path[".__private"]["passed"]
    assert by_path[".state"]["mismatched_elements"] == 4


def test_objects_without_tensors_are_compared_with_eq() -> None:
    class Plain:
        def __init__(self) -> None:
            self.label = "same"

    report = check_outputs(Plain(), Plain(), rtol=0, atol=0)
    # No tensors inside: compared with ==, which for a class without __eq__ is identity.
    assert report["structure_differences"] == [
        {"path": "", "baseline": "Plain", "candidate": "Plain (differs)"}
    ]
    assert report["leaves"] == []


def test_objects_with_different_attributes_are_a_structure_difference() -> None:
    left, right = Holder(torch.ones(1), torch.ones(1)), Holder(torch.ones(1), torch.ones(1))
    right.extra = torch.ones(1)  # type: ignore[attr-defined]
    report = check_outputs(left, right, rtol=0, atol=0)
    assert report["structure_differences"] == [
        {"path": "", "baseline": "Holder", "candidate": "Holder (attributes differ: extra)"}
    ]


def test_cycles_end_the_walk() -> None:
    def ring(tensor: torch.Tensor) -> Holder:
        first = Holder(tensor, torch.zeros(1))
        second = Holder(torch.zeros(1), torch.zeros(1))
        first.seen = second  # type: ignore[assignment]
        second.seen = first  # type: ignore[assignment]
        return first

    tensor = torch.arange(4.0)
    report = check_outputs(ring(tensor), ring(tensor.clone()), rtol=0, atol=0)
    assert report["passed"]
    assert [leaf["path"] for leaf in report["leaves"]] == [
        ".keys",
        ".seen.keys",
        ".seen.values",
        ".values",
    ]
    report = check_outputs(ring(tensor), ring(tensor + 1), rtol=0, atol=0)
    assert [leaf["path"] for leaf in report["leaves"] if not leaf["passed"]] == [".keys"]
    # A self-reference on one side only is a structure difference, not a hang.
    selfish = Holder(tensor, tensor)
    selfish.seen = selfish  # type: ignore[assignment]
    other = Holder(tensor, tensor)
    other.seen = Holder(tensor, tensor)  # type: ignore[assignment]
    report = check_outputs(selfish, other, rtol=0, atol=0)
    assert report["structure_differences"] == [
        {"path": ".seen", "baseline": "Holder", "candidate": "Holder (a different cycle)"}
    ]
    looped: list[object] = [torch.ones(1)]
    looped.append(looped)
    again: list[object] = [torch.ones(1)]
    again.append(again)
    assert check_outputs(looped, again, rtol=0, atol=0)["passed"]


def test_deep_and_huge_structures_end() -> None:
    deep: object = torch.ones(1)
    for _ in range(200):
        deep = Holder(deep, torch.ones(1))  # type: ignore[arg-type]
    report = check_outputs(deep, copy.deepcopy(deep), rtol=0, atol=0)
    assert not report["structure_matches"]
    assert report["structure_differences"][0]["candidate"] == (
        "Holder (nested too deeply to compare)"
    )
    # 2**40 paths through 41 shared lists: the walk stops after 100,000 nodes.
    shared: list[object] = [None]
    for _ in range(40):
        shared = [shared, shared]
    report = check_outputs(shared, shared, rtol=0, atol=0)
    assert report["structure_differences"][0]["candidate"].endswith(
        "(more than 100000 nodes to compare)"
    )
    assert len(report["structure_differences"]) == 1


# -- dtypes: check_dtype and the way out -----------------------------------------------------------


def fp32_and_bf16_outputs() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)
    ).eval()
    x = torch.randn(32, 64)
    with torch.inference_mode():
        baseline = model(x)
        candidate = copy.deepcopy(model).to(torch.bfloat16)(x.to(torch.bfloat16))
    return baseline, candidate


def outside(baseline: torch.Tensor, candidate: torch.Tensor, rtol: float, atol: float) -> int:
    """Elements outside atol + rtol * |baseline|, computed apart from check_outputs."""
    left, right = baseline.double(), candidate.double()
    return int(((right - left).abs() > atol + rtol * left.abs()).sum())


def test_a_dtype_difference_fails_by_default_and_says_check_dtype_false() -> None:
    baseline, candidate = fp32_and_bf16_outputs()
    report = check_outputs(baseline, candidate, rtol=1.6e-2, atol=1e-2)
    assert not report["passed"] and report["check_dtype"] is True
    leaf = report["leaves"][0]
    assert leaf["mismatched_elements"] == outside(baseline, candidate, 1.6e-2, 1e-2) == 0
    assert report["diagnostics"] == [
        {
            "code": "output_metadata_mismatch",
            "severity": "warning",
            "metric": None,
            "message": "output leaf (output) differs: dtype torch.float32 vs torch.bfloat16. "
            "Pass check_dtype=False to accept the change of dtype: the values are within the "
            "tolerances",
        }
    ]
    assert torchscan.validate_report(report) == "output_check"


def test_check_dtype_false_compares_across_dtypes() -> None:
    baseline, candidate = fp32_and_bf16_outputs()
    report = check_outputs(baseline, candidate, rtol=1.6e-2, atol=1e-2, check_dtype=False)
    assert report["passed"] and report["check_dtype"] is False
    assert report["leaves"][0]["candidate"]["dtype"] == "torch.bfloat16"
    assert "check_dtype=False" in report["diagnostics"][0]["message"]
    assert torchscan.validate_report(report) == "output_check"
    # The validator accepts a passing leaf of another dtype only when check_dtype is false.
    report["check_dtype"] = True
    with pytest.raises(torchscan.ReportValidationError, match="unless check_dtype is false"):
        torchscan.validate_report(report)

    exact = check_outputs(baseline, candidate, rtol=0, atol=0, check_dtype=False)
    leaf = exact["leaves"][0]
    assert not exact["passed"]
    assert leaf["mismatched_elements"] == int((candidate.double() != baseline.double()).sum())
    assert leaf["max_abs_error"] == float((candidate.double() - baseline.double()).abs().max())

    # torch.testing's bfloat16 defaults are for one operation: some elements near zero fail,
    # and the message names those tolerances.
    one_op = check_outputs(baseline, candidate, rtol=1.6e-2, atol=1e-5, check_dtype=False)
    expected = outside(baseline, candidate, 1.6e-2, 1e-5)
    assert 0 < expected < 2048
    assert one_op["leaves"][0]["mismatched_elements"] == expected
    message = one_op["diagnostics"][0]["message"]
    assert message.startswith("output leaf (output) differs: dtype torch.float32 vs ")
    assert f"{expected:,} of 2,048 elements outside" in message
    assert "defaults for torch.bfloat16 are rtol=0.016, atol=1e-05" in message


def test_a_value_difference_names_the_leaf_and_the_tolerances_of_its_dtype() -> None:
    baseline = {"logits": torch.tensor([1.0, 2.0, 3.0])}
    candidate = {"logits": torch.tensor([1.0, 2.1, 3.0])}
    report = check_outputs(baseline, candidate, rtol=1e-5, atol=1e-8)
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "output_values_mismatch"
    message = diagnostic["message"]
    assert message.startswith("output leaf logits fails: 1 of 3 elements outside")
    assert "defaults for torch.float32 are rtol=1.3e-06, atol=1e-05" in message
    assert "use_cache" not in message


def test_a_cache_difference_says_how_to_leave_the_cache_out() -> None:
    x = torch.ones(2)
    report = check_outputs(
        {"logits": x, "past_key_values": None},
        {"logits": x, "past_key_values": ((x, x),)},
        rtol=0,
        atol=0,
    )
    message = report["diagnostics"][0]["message"]
    assert "past_key_values: baseline None, candidate tuple of 1" in message
    assert ".logits" in message and "use_cache=False" in message
    report = check_outputs(
        {"logits": x, "past_key_values": ((x, x),)},
        {"logits": x, "past_key_values": ((x, x + 1),)},
        rtol=0,
        atol=0,
    )
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["message"].startswith("output leaf past_key_values[0][1] fails: 2 of 2")
    assert "use_cache=False" in diagnostic["message"]


def test_failing_leaves_beyond_twenty_are_counted_in_one_diagnostic() -> None:
    baseline = [torch.zeros(1) for _ in range(25)]
    candidate = [torch.ones(1) for _ in range(25)]
    report = check_outputs(baseline, candidate, rtol=0, atol=0)
    assert len(report["diagnostics"]) == 21
    assert report["diagnostics"][19]["message"].startswith("output leaf [19] fails")
    assert report["diagnostics"][20]["message"] == "5 more output leaves fail or differ; see leaves"


def test_the_compare_command_takes_no_check_dtype(tmp_path: Path) -> None:
    sides = {}
    for name, dtype in (("base", "float32"), ("half", "bfloat16")):
        sides[name] = tmp_path / f"{name}.py"
        sides[name].write_text(
            "import torch\n"
            "torch.manual_seed(0)\n"
            "a = torch.randn(16, 16)\n"
            "def workload():\n"
            f"    return a.to(torch.{dtype}) * 2\n",
            encoding="utf-8",
        )
    check = tmp_path / "check.json"
    common = ["--metrics", "latency", "--min-time", "0.1", "--max-time", "0.5"]
    common += ["--rtol", "1.6e-2", "--atol", "1e-2", "--check-json", str(check)]
    references = [f"{sides['base']}:workload", f"{sides['half']}:workload"]
    assert main(["compare", *references, *common]) == 1  # the dtypes differ
    report = json.loads(check.read_text(encoding="utf-8"))
    assert report["check_dtype"] is True and not report["passed"]
    assert "check_dtype=False" in report["diagnostics"][0]["message"]
    assert main(["compare", *references, *common, "--no-check-dtype"]) == 0
    report = json.loads(check.read_text(encoding="utf-8"))
    assert report["check_dtype"] is False and report["passed"]
    assert report["leaves"][0]["candidate"]["dtype"] == "torch.bfloat16"


# -- integer leaves: compared exactly, never through float64 --------------------------------------

TIMESTAMP = 1_733_450_000_123_456_789  # nanoseconds: far above 2**53


@pytest.mark.parametrize(
    ("baseline", "candidate"),
    [
        (torch.tensor([TIMESTAMP]), torch.tensor([TIMESTAMP + 1])),
        (torch.tensor([2**53]), torch.tensor([2**53 + 1])),
        (2**53, 2**53 + 1),
        (
            torch.tensor([2**63], dtype=torch.uint64),
            torch.tensor([2**63 + 1], dtype=torch.uint64),
        ),
    ],
    ids=["int64-timestamps-1ns-apart", "int64-2**53", "python-ints-2**53", "uint64-2**63"],
)
def test_integers_one_apart_fail_an_exact_check(
    baseline: int | torch.Tensor, candidate: int | torch.Tensor
) -> None:
    report = check_outputs(baseline, candidate, rtol=0, atol=0)
    (leaf,) = report["leaves"]
    assert not report["passed"]
    assert (leaf["elements"], leaf["mismatched_elements"]) == (1, 1)
    assert leaf["max_abs_error"] == 1 and type(leaf["max_abs_error"]) is int
    first = baseline if isinstance(baseline, int) else int(baseline.tolist()[0])
    assert leaf["max_rel_error"] == 1 / first
    message = report["diagnostics"][0]["message"]
    assert "1 of 1 elements outside" in message and "max abs error 1," in message
    assert torchscan.validate_report(report) == "output_check"
    assert check_outputs(baseline, baseline, rtol=0, atol=0)["passed"]
    assert check_outputs(baseline, candidate, rtol=0, atol=1)["passed"]


def test_integer_errors_are_exact_beyond_int64() -> None:
    # Differences that overflow int64, and uint64 against int64 (same bits, different values).
    low, high = torch.tensor([-(2**63), 7]), torch.tensor([2**63 - 1, 7])
    leaf = check_outputs(low, high, rtol=0, atol=0)["leaves"][0]
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 2**64 - 1)
    assert leaf["max_rel_error"] == (2**64 - 1) / 2**63
    unsigned = torch.tensor([2**64 - 1, 5], dtype=torch.uint64)
    report = check_outputs(torch.tensor([-1, 5]), unsigned, rtol=0, atol=0, check_dtype=False)
    leaf = report["leaves"][0]
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 2**64)
    assert torchscan.validate_report(report) == "output_check"
    # Python ints beyond 64 bits are compared as ints.
    report = check_outputs(2**70, 2**70 + 3, rtol=0, atol=2)
    leaf = report["leaves"][0]
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 3)
    assert leaf["baseline"]["dtype"] == leaf["candidate"]["dtype"] == "int"
    assert check_outputs(2**70, 2**70 + 3, rtol=0, atol=3)["passed"]
    assert torchscan.validate_report(report) == "output_check"


def test_integer_tolerances_are_applied_exactly() -> None:
    # rtol 0.5 of 2**61 + 1 is 2**60 + 0.5: 2**60 passes, 2**60 + 1 fails (float64 rounds both
    # the difference and the baseline to powers of two, and would pass both).
    base = 2**61 + 1
    baseline = torch.tensor([base, base])
    candidate = torch.tensor([base + 2**60, base + 2**60 + 1])
    leaf = check_outputs(baseline, candidate, rtol=0.5, atol=0)["leaves"][0]
    assert leaf["mismatched_elements"] == 1
    assert leaf["max_abs_error"] == 2**60 + 1
    assert leaf["max_rel_error"] == (2**60 + 1) / base
    # The same beyond int64's differences: uint64 values above 2**63.
    big = 2**63 + 1
    unsigned = torch.tensor([big, big], dtype=torch.uint64)
    shifted = torch.tensor([big + 2**62, big + 2**62 + 1], dtype=torch.uint64)
    leaf = check_outputs(unsigned, shifted, rtol=0.5, atol=0)["leaves"][0]
    # 0.5 * (2**63 + 1) = 2**62 + 0.5.
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 2**62 + 1)
    # A relative error that float64 division of the rounded operands gets wrong in its last bit.
    difference, scale = 154521630826478532, 280909214649168956
    assert float(difference) / float(scale) != difference / scale
    leaf = check_outputs(torch.tensor([scale]), torch.tensor([scale + difference]), rtol=1, atol=0)[
        "leaves"
    ][0]
    assert leaf["max_rel_error"] == difference / scale
    assert leaf["mismatched_elements"] == 0
    # Booleans are integers too.
    leaf = check_outputs(torch.tensor([True, False]), torch.tensor([True, True]), rtol=0, atol=0)[
        "leaves"
    ][0]
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 1)


# -- sparse and nested tensors ---------------------------------------------------------------------


def sparse(dense: torch.Tensor, layout: str) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR tensor support is in beta state"
        if layout == "mkldnn":
            return dense.to_mkldnn()
        if layout in ("bsr", "bsc"):
            return getattr(dense, f"to_sparse_{layout}")((2, 2))
        return dense.to_sparse() if layout == "coo" else getattr(dense, f"to_sparse_{layout}")()


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr", "bsc", "mkldnn"])
def test_sparse_tensors_are_compared_through_their_dense_values(layout: str) -> None:
    if layout == "mkldnn" and not torch.backends.mkldnn.is_available():
        pytest.skip("this PyTorch has no oneDNN")
    eye = torch.eye(4)
    report = check_outputs(sparse(eye, layout), sparse(eye.clone(), layout), rtol=0, atol=0)
    assert report["passed"], report["diagnostics"]
    assert report["leaves"][0]["elements"] == 16
    changed = eye.clone()
    changed[0, 1] = 0.5
    report = check_outputs(sparse(eye, layout), sparse(changed, layout), rtol=0, atol=0)
    leaf = report["leaves"][0]
    assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == (1, 0.5)
    assert torchscan.validate_report(report) == "output_check"


def test_a_layout_difference_fails_and_names_both_layouts() -> None:
    eye = torch.eye(3)
    report = check_outputs({"a": eye.to_sparse()}, {"a": eye}, rtol=0, atol=0)
    assert not report["passed"]
    leaf = report["leaves"][0]
    assert not leaf["passed"] and leaf["elements"] == 0
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "output_metadata_mismatch"
    assert diagnostic["message"] == (
        "output leaf a differs: layout torch.sparse_coo vs torch.strided. Convert both sides to "
        "one layout (for example .to_dense()) to compare their values"
    )
    assert torchscan.validate_report(report) == "output_check"


def test_a_leaf_that_cannot_be_compared_fails_with_the_way_out() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated
        quantized = torch.quantize_per_tensor(torch.tensor([0.1, 0.2]), 0.1, 0, torch.qint8)
    report = check_outputs(quantized, quantized, rtol=0, atol=0)
    assert not report["passed"] and not report["leaves"][0]["passed"]
    (diagnostic,) = report["diagnostics"]
    message = diagnostic["message"]
    assert message.startswith("output leaf (output) fails: values of layout torch.strided and ")
    assert "dtype torch.qint8 cannot be compared" in message and ".dequantize()" in message
    assert torchscan.validate_report(report) == "output_check"


def jagged(*parts: torch.Tensor) -> torch.Tensor:
    return torch.nested.nested_tensor(list(parts), layout=torch.jagged)


def test_nested_tensors_are_compared_component_by_component() -> None:
    first, second = torch.arange(2.0), torch.arange(3.0)
    report = check_outputs(
        {"out": jagged(first, second)}, {"out": jagged(first, second)}, rtol=0, atol=0
    )
    assert report["passed"], report["diagnostics"]
    assert [(leaf["path"], leaf["elements"]) for leaf in report["leaves"]] == [
        ("out.unbind()[0]", 2),
        ("out.unbind()[1]", 3),
    ]
    assert report["leaves"][1]["baseline"]["shape"] == [3]
    assert torchscan.validate_report(report) == "output_check"
    same = jagged(first, second)
    assert check_outputs(same, same, rtol=0, atol=0)["passed"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors of torch.strided are a prototype
        strided = [torch.nested.nested_tensor([first, second]) for _ in range(2)]
    assert check_outputs(strided[0], strided[1], rtol=0, atol=0)["passed"]
    # One value, one component's shape, then the number of components.
    report = check_outputs(same, jagged(first, second + 1), rtol=0, atol=0)
    failing = [(leaf["path"], leaf["mismatched_elements"]) for leaf in report["leaves"]]
    assert failing == [(".unbind()[0]", 0), (".unbind()[1]", 3)]
    report = check_outputs(same, jagged(first, torch.arange(4.0)), rtol=0, atol=0)
    assert report["diagnostics"][0]["message"].startswith(
        "output leaf .unbind()[1] differs: shape [3] vs [4]"
    )
    report = check_outputs(same, jagged(first, second, first), rtol=0, atol=0)
    assert report["structure_differences"] == [
        {
            "path": "",
            "baseline": "nested tensor (torch.jagged) of 2 components",
            "candidate": "nested tensor (torch.jagged) of 3 components",
        }
    ]
    # Another layout, or a plain tensor, is a structure difference that names both.
    report = check_outputs(same, strided[0], rtol=0, atol=0)
    assert report["structure_differences"][0]["candidate"] == (
        "nested tensor (torch.strided) of 2 components"
    )
    report = check_outputs([same], [torch.zeros(2, 3)], rtol=0, atol=0)
    assert report["structure_differences"] == [
        {
            "path": "[0]",
            "baseline": "nested tensor (torch.jagged) of 2 components",
            "candidate": "tensor of shape [2, 3]",
        }
    ]
    assert torchscan.validate_report(report) == "output_check"


def test_meta_tensors_fail_and_say_they_hold_no_values() -> None:
    meta = torch.empty(3, device="meta")
    check = check_outputs(meta, meta, rtol=0, atol=0)
    assert check["passed"] is False
    (diagnostic,) = check["diagnostics"]
    assert diagnostic["message"].endswith(
        "A tensor on the meta device has no values: run the workload on a real device "
        "(device='cpu') to compare its outputs"
    )


# -- integers against floating point, and values compared in chunks -------------------------------


@pytest.mark.parametrize(
    ("integer", "number", "atol", "expected"),
    [
        # float64 rounds 2**53 + 1 to 2**53: the old check passed them at atol 0.
        (torch.tensor([2**53 + 1]), torch.tensor([2.0**53], dtype=torch.float64), 0, (1, 1.0)),
        (2**53 + 1, float(2**53), 0, (1, 1.0)),
        # int64's extremes: -2**63 is a float exactly; 2**63 - 1 is 1 below the float 2**63.
        (
            torch.tensor([-(2**63), 2**63 - 1]),
            torch.tensor([-(2.0**63), 2.0**63], dtype=torch.float64),
            0,
            (1, 1.0),
        ),
        (
            torch.tensor([-(2**63), 2**63 - 1]),
            torch.tensor([-(2.0**63), 2.0**63], dtype=torch.float64),
            1,
            (0, 1.0),
        ),
        (torch.tensor([2**64 - 1], dtype=torch.uint64), torch.tensor([2.0**64]), 0, (1, 1.0)),
        (torch.tensor([2**62 + 1]), torch.tensor([2.0**62], dtype=torch.float64), 0, (1, 1.0)),
        (torch.tensor([2**61 + 3]), torch.tensor([2.0**61], dtype=torch.float64), 2, (1, 3.0)),
        # A large integer against a float with a fraction: 2**54 + 1 - 0.5, rounded once.
        (torch.tensor([2**54 + 1]), torch.tensor([0.5], dtype=torch.float64), 0, (1, 2.0**54)),
        (torch.tensor([255], dtype=torch.uint8), torch.tensor([255.0]), 0, (0, 0.0)),
        (torch.tensor([True, False]), torch.tensor([1.0, 0.0], dtype=torch.float16), 0, (0, 0.0)),
        (torch.tensor([2**60 + 1]), torch.tensor([math.nan], dtype=torch.float64), 0, (1, None)),
        (
            torch.tensor([2**60 + 1]),
            torch.tensor([complex(2.0**60, 1.0)], dtype=torch.complex128),
            0,
            (1, math.sqrt(2)),
        ),
    ],
    ids=[
        "int64-2**53+1",
        "python-2**53+1",
        "int64-extremes",
        "int64-extremes-atol-1",
        "uint64-top",
        "past-2**62",
        "int64-2**61-atol-2",
        "large-against-a-fraction",
        "uint8",
        "bool-float16",
        "nan",
        "complex",
    ],
)
def test_integers_against_floats_are_compared_exactly(
    integer: int | torch.Tensor,
    number: float | torch.Tensor,
    atol: int,
    expected: tuple[int, float | None],
) -> None:
    for baseline, candidate in ((integer, number), (number, integer)):
        report = check_outputs(baseline, candidate, rtol=0, atol=atol, check_dtype=False)
        (leaf,) = report["leaves"]
        assert (leaf["mismatched_elements"], leaf["max_abs_error"]) == expected
        assert report["passed"] is (expected[0] == 0)
        assert torchscan.validate_report(report) == "output_check"


def _exact_leaf(
    baseline: torch.Tensor, candidate: torch.Tensor, rtol: float, atol: float
) -> tuple[int, int, float | None, float | None]:
    """An integer tensor against a floating one, element by element, the documented way.

    Integers within 2**53 in float64 (as two floats are compared), larger ones as fractions.
    """
    mismatched, max_abs, max_rel = 0, None, None
    integer_is_baseline = not baseline.is_floating_point()
    for base, cand in zip(baseline.tolist(), candidate.tolist(), strict=True):
        integer = base if integer_is_baseline else cand
        if abs(integer) <= 2**53 or not math.isfinite(base if not integer_is_baseline else cand):
            b, c = float(base), float(cand)
            difference = abs(c - b)
            # torch.isclose: an infinite difference is close only between equal infinities.
            close = c == b or (math.isfinite(difference) and difference <= atol + rtol * abs(b))
            absolute = difference if math.isfinite(difference) else None
            relative = difference / abs(b) if absolute is not None and b != 0 else None
        else:
            exact = abs(Fraction(cand) - Fraction(base))
            close = exact <= Fraction(atol) + Fraction(rtol) * abs(Fraction(base))
            absolute = float(exact)
            relative = float(exact / abs(Fraction(base))) if base != 0 else None
        mismatched += not close
        if absolute is not None:
            max_abs = absolute if max_abs is None else max(max_abs, absolute)
        if relative is not None:
            max_rel = relative if max_rel is None else max(max_rel, relative)
    return int(baseline.numel()), mismatched, max_abs, max_rel


def test_large_integers_against_floats_match_fractions_element_by_element() -> None:
    generator = torch.Generator().manual_seed(41)
    size = 3000
    integers = torch.randint(-(2**62) + 1, 2**62, (size,), generator=generator)
    integers[::7] = torch.randint(-1000, 1000, (len(integers[::7]),), generator=generator)
    integers[1::11] = 2**53 + torch.randint(-3, 4, (len(integers[1::11]),), generator=generator)
    integers[2::13] = torch.tensor(2**63 - 1)
    integers[3::17] = torch.tensor(-(2**63))
    # Floats near the integers (their rounding, a few units off), fractions, and specials.
    numbers = integers.double() + torch.randint(-4, 5, (size,), generator=generator).double()
    numbers[::5] = torch.rand(len(numbers[::5]), generator=generator, dtype=torch.float64) * 8
    numbers[4::19] = math.nan
    numbers[5::23] = -math.inf
    numbers[6::29] = 2.0**70
    for rtol, atol in ((0.0, 0.0), (0.0, 3.0), (1e-18, 0.0), (0.25, 0.5)):
        for baseline, candidate in ((integers, numbers), (numbers, integers)):
            leaf = check_outputs(baseline, candidate, rtol=rtol, atol=atol, check_dtype=False)[
                "leaves"
            ][0]
            found = (
                leaf["elements"],
                leaf["mismatched_elements"],
                leaf["max_abs_error"],
                leaf["max_rel_error"],
            )
            assert found == _exact_leaf(baseline, candidate, rtol, atol), (rtol, atol)


def _reference_floats(
    baseline: torch.Tensor, candidate: torch.Tensor, rtol: float, atol: float, equal_nan: bool
) -> tuple[int, int, float | None, float | None]:
    """The check of two floating tensors whole, in float64, as it was before chunks."""
    complex_values = baseline.is_complex() or candidate.is_complex()
    kind = torch.complex128 if complex_values else torch.float64
    left, right = baseline.to(kind), candidate.to(kind)
    close = torch.isclose(right, left, rtol=rtol, atol=atol, equal_nan=equal_nan)
    difference = (right - left).abs()
    finite = torch.isfinite(difference)
    max_abs = float(difference[finite].max()) if bool(finite.any()) else None
    scale = left.abs()
    ok = finite & (scale > 0)
    max_rel = float((difference[ok] / scale[ok]).max()) if bool(ok.any()) else None
    return int(close.numel()), int(close.numel()) - int(close.sum()), max_abs, max_rel


def _adversarial(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=generator, dtype=torch.float64)
    flat = values.view(-1)
    for start, special in enumerate([math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1e308]):
        flat[start :: 17 + start] = special
    if dtype.is_complex:
        return torch.complex(values, values.flip(-1)).to(dtype)
    return values.to(dtype)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1000])
@pytest.mark.parametrize(
    ("shape", "dtypes", "view"),
    [
        ((1000,), (torch.float32, torch.float32), "contiguous"),
        ((37, 29), (torch.float64, torch.float32), "transposed"),
        ((3, 5, 67), (torch.float32, torch.bfloat16), "every-other-column"),
        ((4, 1, 250), (torch.complex64, torch.complex128), "contiguous"),
        ((0, 5), (torch.float32, torch.float32), "contiguous"),
        ((), (torch.float64, torch.float64), "contiguous"),
    ],
    ids=["1d", "transposed", "strided-3d", "complex", "empty", "0-d"],
)
def test_values_compared_in_chunks_are_the_values_compared_whole(
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
    shape: tuple[int, ...],
    dtypes: tuple[torch.dtype, torch.dtype],
    view: str,
) -> None:
    monkeypatch.setattr(torchscan.measure.output_check, "CHUNK_ELEMENTS", chunk)
    full = shape if view != "every-other-column" else (*shape[:-1], shape[-1] * 2)
    baseline = _adversarial(full, dtypes[0], 1)
    # The candidate: the baseline with some elements moved and others replaced, so that NaNs,
    # infinities and -0.0 meet their equals and each other across chunk boundaries.
    candidate = baseline.to(dtypes[1]).clone()
    if candidate.numel() > 1:
        noise = _adversarial(full, dtypes[1], 2)
        candidate.view(-1)[::3] = noise.view(-1)[::3]
        candidate.view(-1)[1::5] = candidate.view(-1)[1::5] * (1 + 1e-6)
    if view == "transposed":
        baseline, candidate = baseline.t(), candidate.t()
    elif view == "every-other-column":
        baseline, candidate = baseline[..., ::2], candidate[..., ::2]
    for rtol, atol, equal_nan in ((0.0, 0.0, False), (1e-5, 1e-8, True), (0.5, 1.0, False)):
        report = check_outputs(
            baseline, candidate, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False
        )
        leaf = report["leaves"][0]
        found = (
            leaf["elements"],
            leaf["mismatched_elements"],
            leaf["max_abs_error"],
            leaf["max_rel_error"],
        )
        expected = _reference_floats(baseline, candidate, rtol, atol, equal_nan)
        if expected[3] is not None and not math.isfinite(expected[3]):
            expected = (*expected[:3], None)  # a relative error past float64 is recorded as null
        assert found == expected, (rtol, atol, equal_nan)


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_integers_compared_in_chunks_are_the_integers_compared_whole(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    generator = torch.Generator().manual_seed(7)
    baseline = torch.randint(-(2**62), 2**62, (40, 9), generator=generator)
    candidate = baseline + torch.randint(-3, 4, (40, 9), generator=generator)
    baseline[::4, 2] = torch.tensor(-(2**63))  # past int64's differences in some chunks only
    candidate[::4, 2] = torch.tensor(2**63 - 1)
    results = []
    for size in (chunk, 10**9):
        monkeypatch.setattr(torchscan.measure.output_check, "CHUNK_ELEMENTS", size)
        for rtol, atol in ((0.0, 0.0), (0.0, 2.0), (1e-18, 1.0)):
            leaf = check_outputs(baseline.t(), candidate.t(), rtol=rtol, atol=atol)["leaves"][0]
            results.append(
                (
                    leaf["mismatched_elements"],
                    leaf["max_abs_error"],
                    leaf["max_rel_error"],
                )
            )
    assert results[:3] == results[3:]
    # The whole: exactly as Python ints.
    pairs = list(zip(baseline.view(-1).tolist(), candidate.view(-1).tolist(), strict=True))
    assert results[0][:2] == (
        sum(c != b for b, c in pairs),
        max(abs(c - b) for b, c in pairs),
    )


_MEMORY_CHILD = """
import sys, torch
from torchscan import check_outputs

def status(key):
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024

n = 16 * 2**20
baseline = torch.randn(n)
candidate = baseline + 1e-3
check_outputs(torch.ones(4), torch.ones(4), rtol=0, atol=0)  # lazy initialisation, untimed
with open("/proc/self/clear_refs", "w") as file:
    file.write("5")  # the peak RSS starts again from the current RSS
before = status("VmRSS")
report = check_outputs(baseline, candidate, rtol=0, atol=1e-2)
assert report["passed"], report["leaves"]
print(status("VmHWM") - before)
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_a_large_leaf_adds_less_memory_than_one_side(tmp_path: Path) -> None:
    # 16 Mi float32 elements, 64 MiB a side: compared whole, the float64 copies, difference,
    # scale and masks added about 700 MiB at once; in chunks a few MiB.
    script = tmp_path / "child.py"
    script.write_text(_MEMORY_CHILD, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr
    added = int(result.stdout.split()[-1])
    assert added < 64 * 2**20, f"{added / 2**20:.0f} MiB added"
