"""The exceptions torchscan raises; every one is a subclass of :class:`TorchscanError`."""

from __future__ import annotations

__all__ = [
    "ConcurrentAnalysisError",
    "DistributedMeasurementError",
    "IncompleteAnalysisError",
    "IncompleteMeasurementError",
    "InvalidArgumentError",
    "ModelInputError",
    "ReportComparisonError",
    "ReportMergeError",
    "ReportValidationError",
    "TorchscanError",
]

from typing import Any


class TorchscanError(Exception):
    """Base class of torchscan's own errors; a workload's own exceptions are never wrapped."""


class ReportValidationError(TorchscanError, ValueError):
    """A report does not satisfy schema version 1 or one of its invariants.

    ``problems`` lists every problem found as ``(json_path, message)`` pairs, for example
    ``("$.metrics.latency.value", "a partial metric has a null value; ...")``.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems: list[tuple[str, str]] = list(problems)
        count = len(self.problems)
        lines = [f"report is invalid ({count} problem{'s' if count != 1 else ''}):"]
        lines.extend(f"  {path}: {message}" for path, message in self.problems)
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[type[ReportValidationError], tuple[list[tuple[str, str]]]]:
        return (type(self), (self.problems,))


class InvalidArgumentError(TorchscanError, ValueError):
    """An argument has a value torchscan cannot use; the message says what to pass instead.

    Raised before anything runs for a value torchscan can check itself. Raised after the forward
    failed for inputs generated from ``input_shape`` or ``input_size`` whose shape the model
    refused (a batch dimension given twice, a shape that does not fit a layer, more or fewer
    inputs than the forward takes): then the model's exception is ``__cause__``, and the error
    is also of its kind (a ``RuntimeError`` or ``TypeError`` stays one), so code that catches it
    keeps working.
    """

    @staticmethod
    def like(original: BaseException, message: str) -> InvalidArgumentError:
        """An ``InvalidArgumentError`` that is also of ``original``'s kind where one fits."""
        if isinstance(original, RuntimeError) and not isinstance(original, ValueError):
            return _InvalidArgumentRuntimeError(message)
        if isinstance(original, TypeError):
            return _InvalidArgumentTypeError(message)
        return InvalidArgumentError(message)


class _InvalidArgumentRuntimeError(InvalidArgumentError, RuntimeError):
    """An :class:`InvalidArgumentError` raised for a ``RuntimeError`` of the model."""


class _InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An :class:`InvalidArgumentError` raised for a ``TypeError`` of the model."""


class ModelInputError(TorchscanError):
    """The model's forward failed on its inputs in a way torchscan recognises; says what to pass.

    Raised by :func:`~torchscan.crawl_module` and :func:`~torchscan.summary` in two cases only:
    an input generated from ``input_shape`` (floating-point unless ``dtype`` says otherwise)
    reached an operation that takes integer indices (``nn.Embedding``, ``index_select``,
    ``gather``, ``one_hot``, indexing, ...), and the forward was not given an argument it
    needs (``missing`` names it, for example ``decoder_input_ids`` of an encoder-decoder
    model). The model's own exception is ``__cause__``, and this error is also an instance of
    that exception's kind (``RuntimeError``, ``IndexError``, ``TypeError`` or ``ValueError``),
    so code that catches it keeps working. Any other exception of the model propagates
    unchanged.
    """

    def __init__(self, message: str, missing: tuple[str, ...] = ()) -> None:
        self.missing: tuple[str, ...] = tuple(missing)
        super().__init__(message)

    def __reduce__(self) -> tuple[type[ModelInputError], tuple[str, tuple[str, ...]]]:
        return (type(self), (str(self), self.missing))

    @staticmethod
    def like(
        original: BaseException, message: str, missing: tuple[str, ...] = ()
    ) -> ModelInputError | None:
        """A ``ModelInputError`` of the same kind as ``original``, or ``None`` if none fits."""
        for kind in _MODEL_INPUT_KINDS:
            if isinstance(original, kind.__bases__[1]):
                return kind(message, missing)
        return None


class _ModelInputIndexError(ModelInputError, IndexError):
    """A :class:`ModelInputError` raised for an ``IndexError``."""


class _ModelInputTypeError(ModelInputError, TypeError):
    """A :class:`ModelInputError` raised for a ``TypeError``."""


class _ModelInputValueError(ModelInputError, ValueError):
    """A :class:`ModelInputError` raised for a ``ValueError``."""


class _ModelInputRuntimeError(ModelInputError, RuntimeError):
    """A :class:`ModelInputError` raised for a ``RuntimeError``."""


# Most specific first: the first kind the original exception is an instance of is used.
_MODEL_INPUT_KINDS: tuple[type[ModelInputError], ...] = (
    _ModelInputIndexError,
    _ModelInputTypeError,
    _ModelInputValueError,
    _ModelInputRuntimeError,
)


class ConcurrentAnalysisError(TorchscanError, RuntimeError):
    """An analysis needs modules that another analysis is using now; nothing was changed.

    Raised before the analysis touches the model when one of its modules is being analysed in
    another thread, or when the analysis was started inside a forward (or callable) that an
    analysis of the same modules is running on this thread. The message names the module and
    the analysis holding it; wait for that analysis to return, or analyse a copy of the model.
    """


class ReportComparisonError(TorchscanError):
    """Two valid reports cannot be compared: their numbers would not measure the same thing.

    Raised when either report is not an ``analysis`` report, when their schema versions differ,
    when one analysis is ``full`` and the other ``structure``, or when the ``module_flops`` or
    ``operator_flops`` methods differ. ``reason`` says what differs and what to do.
    """

    def __init__(self, reason: str) -> None:
        self.reason: str = reason
        super().__init__(reason)


class ReportMergeError(TorchscanError, ValueError):
    """Rank reports that do not belong to one job cannot be merged; ``reason`` says why.

    Raised by :func:`~torchscan.merge_rank_reports` when the reports are not ``benchmark``
    reports of a distributed job, when ranks are missing or repeated, or when their world sizes,
    backends, workloads, settings or aligned blocks differ.
    """

    def __init__(self, reason: str) -> None:
        self.reason: str = reason
        super().__init__(reason)


class DistributedMeasurementError(TorchscanError, RuntimeError):
    """The ranks of a distributed measurement lost each other: a rank died, hung or disagreed.

    Raised by :func:`~torchscan.measure_workload` on the ranks that are still alive when a
    barrier or an exchange of the measurement does not complete within ``rank_timeout_s``
    seconds, or fails because a peer is gone. ``phase`` names where (for example ``block 3``).
    """

    def __init__(self, reason: str, phase: str) -> None:
        self.reason: str = reason
        self.phase: str = phase
        super().__init__(reason)


class _IncompleteError(TorchscanError):
    """A strict call found requested metrics partial or unavailable; carries the whole report."""

    _WHAT = "result"

    def __init__(self, report: Any, metrics: list[tuple[str, str]]) -> None:
        self.report = report
        self.metrics: list[tuple[str, str]] = list(metrics)
        listed = ", ".join(f"{name} ({status})" for name, status in self.metrics)
        super().__init__(
            f"strict {self._WHAT}: requested metrics are incomplete: {listed}; "
            "see the report's diagnostics (error.report) for what is missing"
        )

    def __reduce__(self) -> tuple[type[_IncompleteError], tuple[Any, list[tuple[str, str]]]]:
        return (type(self), (self.report, self.metrics))


class IncompleteAnalysisError(_IncompleteError):
    """``strict=True`` was given and a requested metric of an analysis is partial or unavailable.

    ``report`` is the whole ``AnalysisReport``, so nothing measured is lost; ``metrics`` names
    the incomplete metrics with their status.
    """

    _WHAT = "analysis"


class IncompleteMeasurementError(_IncompleteError):
    """``measure_workload(..., strict=True)``: a requested metric is partial or unavailable.

    ``report`` is the whole ``BenchmarkReport``; ``metrics`` names the incomplete metrics with
    their status.
    """

    _WHAT = "measurement"
