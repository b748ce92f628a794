"""The exceptions torchscan raises; every one is a subclass of :class:`TorchscanError`."""

from __future__ import annotations

__all__ = ["ReportValidationError", "TorchscanError"]


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
