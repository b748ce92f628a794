"""check_outputs: structure, per-leaf metadata and errors, never values."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import pytest
import torch

import torchscan
from torchscan import InvalidArgumentError, check_outputs

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
