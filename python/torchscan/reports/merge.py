"""Reports of a ``torch.distributed`` job: the ranks' ``benchmark`` reports merged into one.

``measure_workload`` measures each rank with blocks aligned across ranks (see
``docs/distributed.md``); :func:`merge_rank_reports` (or ``torchscan-report merge``) makes the
job's ``distributed_benchmark`` report from every rank's report. The merge is computed in the
core, so the Python function and the command line give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import cast

from .. import _core
from ..errors import InvalidArgumentError, ReportValidationError
from . import DistributedBenchmarkReport
from .validation import ReportInput, report_json

__all__ = ["merge_rank_reports"]


def merge_rank_reports(reports: Iterable[ReportInput]) -> DistributedBenchmarkReport:
    """Merge every rank's ``benchmark`` report into the job's ``distributed_benchmark`` report.

    ``reports`` holds one report per rank, in any order, each a mapping (as
    :func:`~torchscan.measure_workload` returns it), JSON text or a file path (see
    :func:`~torchscan.reports.validation.report_json`). The result keeps every rank's report whole
    (``rank_reports``, by rank) and derives from them: per aligned block the step time (the
    slowest rank's), which rank that was and the spread across ranks; the step time per call
    (median and IQR) and the job's throughput in the declared work units; the straggler (the
    rank slowest in more than half of the blocks) and what it costs per call; each rank's own
    latency, barrier waits, tensor and allocator peaks and process RSS.

    Reports that do not belong together raise :class:`~torchscan.ReportMergeError` with the
    reason: not ``benchmark`` reports of a distributed job, a rank missing or given twice, or
    different world sizes, backends, workloads, settings, calls per block or block counts. A
    report that is not valid raises :class:`~torchscan.ReportValidationError`, its paths
    prefixed by its position in ``reports`` (``input 1:$.timing``).
    """
    if isinstance(reports, (str, bytes)) or not isinstance(reports, Iterable):
        raise InvalidArgumentError(
            "reports must be a list of the ranks' benchmark reports (mappings, JSON texts or "
            f"file paths); got {type(reports).__name__}"
        )
    texts = []
    for index, report in enumerate(reports):
        try:
            texts.append(report_json(report))
        except ReportValidationError as error:
            raise ReportValidationError(
                [(f"input {index}:{path}", message) for path, message in error.problems]
            ) from None
    text = _core.merge_rank_reports_json(texts)
    return cast(DistributedBenchmarkReport, json.loads(text))
