"""``crawl_module`` and ``summary``: one evaluation forward of a model, layer by layer."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import IO, Any

from .._arguments import check_integer
from ..errors import InvalidArgumentError
from ..reports import AnalysisReport
from .assembly import _analyse, _collection_paused, _strict_check

__all__ = ["crawl_module", "summary"]

# torchscan 0.2's wrap modes; None turns wrapping off.
_WRAP_MODES = ("mid", "end")


def crawl_module(
    model: Any,
    input_shape: Any = None,
    dtype: Any = None,
    *,
    args: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    device: Any = None,
    mode: str = "full",
    strict: bool = False,
) -> AnalysisReport:
    """Analyse one evaluation forward of ``model`` and return its ``AnalysisReport`` quietly.

    ``input_shape`` excludes the batch dimension (a batch of one is generated, in ``dtype`` or the
    model's parameter dtype; its sizes are positive integers, at most 2**48 elements per input,
    or :class:`~torchscan.InvalidArgumentError`); or give ``args`` / ``kwargs``, forwarded
    unchanged (the very same objects). The forward runs once, in evaluation mode with gradients
    disabled; every module's training flag and the grad mode are restored afterwards, exceptions
    included.
    ``mode="structure"`` records shapes, parameters and storage only. ``strict=True`` raises
    :class:`~torchscan.IncompleteAnalysisError` (carrying the report) when a requested metric is
    partial or unavailable. Parameters and buffers are counted by the storage they cover: a
    tied tensor, or views that overlap in one storage, count each element once (the
    ``shared_tensors`` diagnostic names them); disjoint views of one flat buffer count in full.

    A generated (floating-point) input that reaches an index operation (``nn.Embedding``, ...)
    and an argument the forward needs but was not given raise
    :class:`~torchscan.ModelInputError`, which says what to pass (``dtype=torch.long``,
    ``args``, ``kwargs``) and is also of the kind of the model's exception, its ``__cause__``.
    Any other exception of the forward propagates unchanged.

    The model's modules are held by this call alone while it runs: another analysis of any of
    them (in another thread, or started inside this forward) raises
    :class:`~torchscan.ConcurrentAnalysisError` before it changes anything, as this call does
    while another holds them. Calls of the model from other threads meanwhile are not recorded.
    """
    with _collection_paused():
        report = _analyse(model, input_shape, dtype, args, kwargs, device, mode, "crawl_module")
    if strict:
        _strict_check(report)
    return report


def summary(
    model: Any,
    input_shape: Any = None,
    wrap_mode: str | None = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    *,
    dtype: Any = None,
    args: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    device: Any = None,
    mode: str = "full",
    strict: bool = False,
    file: IO[str] | None = None,
) -> AnalysisReport:
    """Print the layer table of ``model`` and return the same report as :func:`crawl_module`.

    Takes the arguments of :func:`crawl_module` (``dtype`` by keyword) plus display options:
    ``max_depth`` (an integer from 0 to ``sys.maxsize``) hides layers nested deeper than that;
    ``file`` is where the table goes (standard output by default). The positional order is
    torchscan 0.2's, so its callers keep working: ``wrap_mode`` (``"mid"``, ``"end"`` or
    ``None``), ``receptive_field`` (adds each layer's receptive field to the table) and
    ``effective_rf_stats`` (adds its effective stride and padding). The table names each layer
    by its own name, indented, so there is no dotted path for ``wrap_mode`` to shorten; the
    receptive field is always in the report, whatever the table shows. With ``strict=True`` the
    table is printed before :class:`~torchscan.IncompleteAnalysisError` is raised. Threads and
    nested analyses follow :func:`crawl_module`'s rules
    (:class:`~torchscan.ConcurrentAnalysisError`), and so do storage counts and
    :class:`~torchscan.ModelInputError`.
    """
    if wrap_mode is not None and wrap_mode not in _WRAP_MODES:
        raise InvalidArgumentError(
            f"wrap_mode must be 'mid', 'end' or None (torchscan 0.2's values), got {wrap_mode!r}"
        )
    if max_depth is not None:
        check_integer("max_depth", max_depth, minimum=0, maximum=sys.maxsize)
    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
    ):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name} must be True or False, got {flag!r}")
    with _collection_paused():
        report = _analyse(model, input_shape, dtype, args, kwargs, device, mode, "summary")
    from ..validation import format_summary

    text = format_summary(
        report,
        max_depth=max_depth,
        receptive_field=receptive_field,
        effective_rf_stats=effective_rf_stats,
    )
    print(text, end="", file=file if file is not None else sys.stdout)
    if strict:
        _strict_check(report)
    return report
