"""The classes that exclude operators from operator FLOPs, and the convolution backward formula.

Operators that do no floating-point arithmetic (comparisons, logical and bitwise masks, tests of
values, checks that raise) are excluded as ``no_arithmetic``: they never make a total partial.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from torchscan import _core, measure_flops, validate_report
from torchscan.opflops import classify
from torchscan.opflops.classify import ExclusionClass, exclusion_class, named_class

torch.set_num_threads(1)

aten = torch.ops.aten


def excluded(report: Any) -> dict[str, str]:
    return {op["operator"]: op["class"] for op in report["operator_flops"]["excluded"]}


def test_the_classes_are_the_same_in_python_and_in_the_core() -> None:
    reasons = _core.exclusion_reasons()
    assert list(reasons) == list(get_args(ExclusionClass))
    assert reasons["no_arithmetic"] == (
        "excluded by convention: no floating-point arithmetic (comparisons, masks, checks)"
    )


def test_no_operator_is_named_in_two_classes() -> None:
    lists = {
        "allocation": classify._ALLOCATION,
        "data_movement": classify._DATA_MOVEMENT,
        "normalization": classify._NORMALIZATION,
        "pooling": classify._POOLING,
        "reduction": classify._REDUCTION,
        "elementwise": classify._ELEMENTWISE,
        "no_arithmetic": classify._NO_ARITHMETIC,
    }
    assert set(lists) == set(get_args(ExclusionClass))
    seen: dict[str, str] = {}
    twice = []
    for class_name, names in lists.items():
        for name in names:
            if name in seen:
                twice.append((name, seen[name], class_name))
            seen[name] = class_name
    assert twice == []
    assert {name: named_class(f"aten::{name}") for name in seen} == seen


@pytest.mark.parametrize(
    ("overload", "expected"),
    [
        (aten.isin.Tensor_Tensor, "no_arithmetic"),
        (aten.eq.Tensor, "no_arithmetic"),
        (aten.ne.Scalar, "no_arithmetic"),
        (aten.lt.Scalar, "no_arithmetic"),
        (aten.ge.Tensor, "no_arithmetic"),
        (aten.eq_.Scalar, "no_arithmetic"),  # an in-place comparison: named through ``eq``
        (aten.logical_and.default, "no_arithmetic"),
        (aten.bitwise_or.Tensor, "no_arithmetic"),
        (aten.isnan.default, "no_arithmetic"),
        (aten._linalg_check_errors.default, "no_arithmetic"),
        (aten._assert_async.msg, "no_arithmetic"),
        (aten.is_nonzero.default, "no_arithmetic"),
        # Index and mask building keeps the class of what it computes.
        (aten.arange.default, "allocation"),
        (aten.nonzero.default, "data_movement"),
        (aten.tril.default, "elementwise"),
        (aten.where.self, "elementwise"),
        (aten.argmax.default, "reduction"),
        (aten.topk.default, "reduction"),
        (aten.argsort.default, "data_movement"),
        (aten._local_scalar_dense.default, "data_movement"),
        # Histograms scale values into bins and sum counts: the input reduced to its bins.
        (aten.histc.default, "reduction"),
        (aten.bincount.default, "reduction"),
        # Variants are named through the operator they are of.
        (aten.add_.Tensor, "elementwise"),
        (aten._foreach_mul_.Scalar, "elementwise"),
        (aten.gelu_backward.default, "elementwise"),
        (aten.resize_.default, "allocation"),
    ],
)
def test_classes_by_name(overload: Any, expected: str) -> None:
    assert exclusion_class(overload) == expected
    assert named_class(classify.operator_name(overload)) == expected


def test_named_class_leaves_counted_and_unknown_operators_alone() -> None:
    assert named_class("aten::mm") is None
    assert named_class("aten::convolution_backward") is None
    assert named_class("mylib::isin") is None
    # Tags still place an operator that no list names.
    assert named_class("aten::special_bessel_j0") is None
    assert exclusion_class(aten.special_bessel_j0.default) == "elementwise"
    assert named_class("prim::device") == "data_movement"


def test_comparisons_and_isin_are_complete() -> None:
    tokens = torch.tensor([[3, 7, 1, 0]])
    stops = torch.tensor([0, 7])
    scores = torch.randn(1, 4)

    def stopping() -> Any:
        done = torch.isin(tokens, stops) | (scores > 0.5)
        return done.logical_not().any()

    report = measure_flops(stopping)
    assert validate_report(report) == "flops"
    total = report["operator_flops"]["total"]
    assert total["status"] == "complete", total["reason"]
    assert total["value"] == 0
    classes = excluded(report)
    for name in ("aten::isin", "aten::gt", "aten::bitwise_or", "aten::logical_not"):
        assert classes[name] == "no_arithmetic", name
    assert report["operator_flops"]["ignored_operators"]["aten.isin"]["reason"] == (
        "excluded by convention: no floating-point arithmetic (comparisons, masks, checks)"
    )


def test_tokens_per_expert_histogram_is_complete() -> None:
    # transformers 5's mixture-of-experts layers count the tokens sent to each expert with histc
    # (bincount in others): a reduction, excluded by name, never a reason to be partial.
    expert_ids = torch.tensor([0, 0, 1, 3, 3, 3])

    def tokens_per_expert() -> Any:
        counts = torch.histc(expert_ids.float(), bins=4, min=0, max=3)
        return counts, torch.bincount(expert_ids, minlength=4)

    report = measure_flops(tokens_per_expert)
    total = report["operator_flops"]["total"]
    assert total["status"] == "complete", total["reason"]
    assert total["value"] == 0
    classes = excluded(report)
    assert classes["aten::histc"] == "reduction"
    assert classes["aten::bincount"] == "reduction"
    assert named_class("aten::histc") == named_class("aten::bincount") == "reduction"


def test_linalg_checks_are_excluded_not_uncounted() -> None:
    matrix = torch.eye(3) * 2

    report = measure_flops(lambda: torch.linalg.inv(matrix))
    classes = excluded(report)
    assert classes["aten::_linalg_check_errors"] == "no_arithmetic"
    uncounted = {op["operator"] for op in report["operator_flops"]["uncounted"]}
    assert "aten::_linalg_check_errors" not in uncounted
    # The inversion itself has no formula: it, and only it, keeps the total partial.
    assert uncounted == {"aten::linalg_inv_ex"}


# -- the convolution backward: each gradient costs one forward, whatever ``groups`` is -----------


@pytest.mark.parametrize(
    ("groups", "transposed", "forward"),
    [
        # Conv2d(8, 16, 3, stride=2, padding=1) on 2 x 8 x 5 x 5: 3 x 3 outputs per sample, each
        # 16 output channels x 8 / groups input channels x 9 taps.
        (1, False, 2 * 2 * 9 * 16 * 8 * 9),
        (2, False, 2 * 2 * 9 * 16 * 4 * 9),
        (8, False, 2 * 2 * 9 * 16 * 1 * 9),
        # ConvTranspose2d(8, 16, 3, stride=2, padding=1): each of the 5 x 5 inputs per sample
        # meets 8 input channels x 16 / groups output channels x 9 taps.
        (2, True, 2 * 2 * 25 * 8 * 8 * 9),
        (8, True, 2 * 2 * 25 * 8 * 2 * 9),
    ],
)
def test_convolution_backward_counts_each_gradient_as_one_forward(
    groups: int, transposed: bool, forward: int
) -> None:
    kind = nn.ConvTranspose2d if transposed else nn.Conv2d
    conv = kind(8, 16, 3, stride=2, padding=1, groups=groups)
    x = torch.randn(2, 8, 5, 5, requires_grad=True)

    assert measure_flops(lambda: conv(x))["operator_flops"]["total"]["value"] == forward
    report = measure_flops(lambda: conv(x).sum().backward())
    assert report["operator_flops"]["total"]["status"] == "complete"
    # Forward, input gradient, weight gradient.
    assert report["operator_flops"]["total"]["value"] == 3 * forward
    # Without the input gradient (an input that needs none): forward and weight gradient.
    frozen = x.detach()
    assert (
        measure_flops(lambda: conv(frozen).sum().backward())["operator_flops"]["total"]["value"]
        == 2 * forward
    )
    # PyTorch's formula counts the weight gradient as if groups were 1.
    with FlopCounterMode(display=False) as mode:
        conv(x).sum().backward()
    assert mode.get_total_flops() == 2 * forward + groups * forward
