"""``crawl_module`` and ``summary``: one evaluation forward of a model, layer by layer."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from .._arguments import check_integer
from ..errors import InvalidArgumentError
from ..reports import AnalysisReport
from .assembly import collection_paused, run_analysis, strict_check
from .inputs import torchinfo_inputs

__all__ = ["crawl_module", "summary"]

# torchscan 0.2's wrap modes; None turns wrapping off.
_WRAP_MODES = ("mid", "end")


def _check_flag(name: str, flag: Any) -> None:
    if not isinstance(flag, bool):
        raise InvalidArgumentError(f"{name} must be True or False, got {flag!r}")


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
    input_size: Any = None,
    input_data: Any = None,
    tensor_memory: bool = False,
) -> AnalysisReport:
    """Analyse one evaluation forward of ``model`` and return its ``AnalysisReport`` quietly.

    ``input_shape`` excludes the batch dimension (a batch of one is generated, in ``dtype`` or the
    model's parameter dtype; its sizes are positive integers, at most 2**48 elements per input,
    or :class:`~torchscan.InvalidArgumentError`); or give ``args`` / ``kwargs``, forwarded
    unchanged (the very same objects). As torchinfo takes them, ``input_size`` is the shape (or
    list of shapes) with the batch dimension, generated as ``input_shape`` is, and
    ``input_data`` the inputs themselves: one tensor, a list or tuple of positional inputs, or a
    mapping of keyword inputs. Give the inputs one way only. When the model refuses the shape of
    generated inputs (a batch dimension given twice in ``input_shape``, a shape that does not
    fit its first layer), :class:`~torchscan.InvalidArgumentError` names the layer and the
    argument to use, with the model's exception as ``__cause__``. ``tensor_memory=True``
    measures PyTorch's tensor memory peak of a second forward (``totals.tensor_memory_peak``,
    what torchinfo estimates instead). The forward runs once (twice with ``tensor_memory``), in
    evaluation mode with gradients disabled; every module's training flag and the grad mode are
    restored afterwards, exceptions included.
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
    _check_flag("tensor_memory", tensor_memory)
    args, kwargs = torchinfo_inputs(input_shape, input_size, input_data, args, kwargs)
    with collection_paused():
        report = run_analysis(
            model,
            input_shape,
            dtype,
            args,
            kwargs,
            device,
            mode,
            "crawl_module",
            input_size,
            tensor_memory,
        )
    if strict:
        strict_check(report)
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
    input_size: Any = None,
    input_data: Any = None,
    depth: int | None = None,
    col_names: Sequence[str] | None = None,
    tensor_memory: bool = False,
) -> AnalysisReport:
    """Print the layer table of ``model`` and return the same report as :func:`crawl_module`.

    Takes the arguments of :func:`crawl_module` (``dtype`` by keyword; torchinfo's
    ``input_size`` and ``input_data`` too) plus display options: ``max_depth`` (an integer from
    0 to ``sys.maxsize``, or torchinfo's name for it, ``depth``) hides layers nested deeper than
    that; ``col_names`` chooses the table's columns after the layer name, in order, by
    torchinfo's names (``input_size``, ``output_size``, ``num_params``, ``params_percent``,
    ``kernel_size``, ``mult_adds``, ``trainable``) or torchscan's (``parameters``,
    ``parameter_share``, ``module_flops``, ``macs``, ``operator_flops``, ``receptive_field``,
    ``effective_stride``, ``effective_padding``), checked before the forward runs; ``file`` is
    where the table goes (standard output by default). ``tensor_memory=True`` adds the measured
    tensor memory peak of a second forward to the totals, in place of torchinfo's estimate. The
    positional order is torchscan 0.2's, so its callers keep working: ``wrap_mode`` (``"mid"``,
    ``"end"`` or ``None``), ``receptive_field`` (adds each layer's receptive field to the table) and
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
    if depth is not None:
        check_integer("depth", depth, minimum=0, maximum=sys.maxsize)
        if max_depth is not None and max_depth != depth:
            raise InvalidArgumentError(
                f"depth is torchinfo's name for max_depth: give one of them, got depth={depth!r} "
                f"and max_depth={max_depth!r}"
            )
        max_depth = depth
    if max_depth is not None:
        check_integer("max_depth", max_depth, minimum=0, maximum=sys.maxsize)
    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
        ("tensor_memory", tensor_memory),
    ):
        _check_flag(name, flag)
    args, kwargs = torchinfo_inputs(input_shape, input_size, input_data, args, kwargs)
    from ..reports.validation import check_col_names, format_summary

    columns = check_col_names(col_names)
    with collection_paused():
        report = run_analysis(
            model,
            input_shape,
            dtype,
            args,
            kwargs,
            device,
            mode,
            "summary",
            input_size,
            tensor_memory,
        )
    text = format_summary(
        report,
        max_depth=max_depth,
        receptive_field=receptive_field,
        effective_rf_stats=effective_rf_stats,
        col_names=columns,
    )
    print(text, end="", file=file if file is not None else sys.stdout)
    if strict:
        strict_check(report)
    return report
