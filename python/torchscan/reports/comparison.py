"""Comparison of two analysis reports of a model, through the Rust core (the one implementation)."""

from __future__ import annotations

import json
from typing import cast

from .. import _core
from .._arguments import MAX_BOOTSTRAP_RESAMPLES, check_integer, check_real
from ..errors import ReportComparisonError, ReportValidationError
from . import BenchmarkComparison, ReportDiff
from .validation import ReportInput, report_json

__all__ = [
    "ReportComparisonError",
    "check_comparison_options",
    "compare_benchmarks",
    "compare_reports",
]


def _side_json(side: str, report: ReportInput) -> str:
    """The JSON text of one side; a problem serializing it names the side in its paths."""
    try:
        return report_json(report)
    except ReportValidationError as error:
        raise ReportValidationError(
            [(f"{side}:{path}", message) for path, message in error.problems]
        ) from None


def compare_reports(before: ReportInput, after: ReportInput) -> ReportDiff:
    """Compare two analyses of a model; return the ``report_diff`` report.

    ``before`` and ``after`` are each an ``analysis`` report as a mapping (as torchscan's functions
    return it), JSON text (``str`` or UTF-8 ``bytes``) or a file (a path object, or a ``str`` that
    is not JSON text; see :func:`~torchscan.reports.validation.report_json`).

    Each model-wide total of the analysis report (parameters, buffers, storage bytes, module
    FLOPs/MACs/DMAs and operator FLOPs) is compared with the weaker status of the two sides, in
    ``totals[name]`` as torchscan 0.2 did (``diff["totals"]["parameters"]["delta"]``):
    ``before``/``after`` are set for a complete side, and ``delta`` only when both sides are
    complete; otherwise ``reason`` says which side is not complete and why. Layers are matched by
    module path and call index into ``layers["added"]``, ``layers["removed"]`` and
    ``layers["changed"]``. A ``context_mismatch`` warning
    notes a different device, dtypes, torch version or training mode; a ``structure_changed``
    note notes added or removed layers. The result is the one ``torchscan-report diff`` writes
    with ``--format json``, and it is validated before it is returned.

    Raises :class:`~torchscan.errors.ReportValidationError` when either report is invalid (each
    problem's path starts with ``before:`` or ``after:``), :class:`ReportComparisonError` when the
    reports cannot be compared, and :class:`TypeError` for an input of another type.
    """
    before_text = _side_json("before", before)
    after_text = _side_json("after", after)
    text = _core.compare_reports_json(before_text, after_text)
    return cast(ReportDiff, json.loads(text))


def check_comparison_options(
    confidence_level: float, bootstrap_resamples: int, seed: int, min_effect: float
) -> None:
    """Raise :class:`~torchscan.InvalidArgumentError` for an option the core would refuse."""
    check_real(
        "confidence_level",
        confidence_level,
        minimum=0.0,
        maximum=1.0,
        minimum_open=True,
        maximum_open=True,
    )
    check_integer(
        "bootstrap_resamples",
        bootstrap_resamples,
        minimum=1,
        maximum=MAX_BOOTSTRAP_RESAMPLES,
    )
    check_integer("seed", seed, minimum=0, maximum=2**64 - 1)
    check_real("min_effect", min_effect, minimum=0.0, meaning="a relative change, for example 0.02")


def compare_benchmarks(
    baseline: ReportInput,
    candidate: ReportInput,
    *,
    check: ReportInput | None = None,
    confidence_level: float = 0.95,
    bootstrap_resamples: int = 2000,
    seed: int = 0,
    min_effect: float = 0.02,
    paired: bool = False,
) -> BenchmarkComparison:
    """Compare a candidate benchmark with a baseline; return a ``benchmark_comparison`` report.

    Computed in the core: for latency and throughput the ratio candidate / baseline with a
    confidence interval and a verdict (``faster``, ``slower``, ``no_detectable_change`` or
    ``inconclusive``) that needs both significance and a change of at least ``min_effect``; for
    first call, operator FLOPs and memory, deltas when both sides are complete. Reports measured
    apart get an interval that includes the machine's drift (batch means over time-ordered
    segments of each report's blocks, Welch's t interval; closed form, so the same reports give
    the same result); a report shorter than 1 s or 24 blocks gives ``inconclusive`` with a
    ``reason`` that says how long to measure. A side timed on a noisy machine (other processes
    above 10% of all CPU time, steal above 2%, more than 50 involuntary context switches per
    second, or a ``noisy_machine`` diagnostic) adds a ``noisy_machine`` diagnostic; measured
    apart, it allows ``faster`` or ``slower`` only for an effect beyond what the noise explains,
    and never ``no_detectable_change``. Each timing delta names its ``method``. ``check`` is the
    ``output_check`` report of :func:`~torchscan.check_outputs`: when it failed every delta is
    withheld; without it the comparison is ``unchecked``. A passing check does not establish
    task accuracy. Reports that count different work are refused with
    :class:`ReportComparisonError`.

    ``paired=True`` is for two reports of one interleaved run (as
    :func:`~torchscan.compare_workloads` makes them), where block ``i`` of each side ran in the
    same round: rounds are resampled whole (a percentile bootstrap seeded by ``seed``), and the
    latency interval is that of the median of per-round ratios, in which drift of the machine
    cancels; a noisy machine is named but weighs on both sides alike. It needs the same number
    of blocks on both sides (otherwise :class:`ReportComparisonError`) and is noted in the
    report's diagnostics.

    The options must be in range, or :class:`~torchscan.InvalidArgumentError` names the one that
    is not: ``confidence_level`` a number in (0, 1); ``bootstrap_resamples`` an integer from 1 to
    1,000,000; ``seed`` an integer in [0, 2**64); ``min_effect`` a finite number >= 0 (``bool``
    is not a number here).
    """
    check_comparison_options(confidence_level, bootstrap_resamples, seed, min_effect)
    sides = [_side_json("baseline", baseline), _side_json("candidate", candidate)]
    check_text = _side_json("check", check) if check is not None else None
    text = _core.compare_benchmarks_json(
        sides[0],
        sides[1],
        check_text,
        confidence_level,
        bootstrap_resamples,
        seed,
        min_effect,
        bool(paired),
    )
    return cast(BenchmarkComparison, json.loads(text))
