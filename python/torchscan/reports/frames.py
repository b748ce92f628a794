"""A report's tables as ``pandas.DataFrame`` s: layers, operators, timed blocks and ranks.

pandas is an optional dependency (the ``pandas`` extra), imported only when a table is asked for.
Numbers stay in the report's SI units; a metric that is not complete is NaN beside its status,
never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .. import _core
from ..errors import InvalidArgumentError
from .validation import ReportInput, report_json

if TYPE_CHECKING:
    import pandas

__all__ = ["TABLES", "TABLE_COLUMNS", "Table", "to_frame"]

Table = Literal["layers", "operators", "blocks", "ranks", "rank_blocks"]
"""The names of the tables :func:`to_frame` makes."""

#: The tables of each report kind that has any, in the order they are listed in errors.
TABLES: dict[str, tuple[Table, ...]] = {
    "analysis": ("layers", "operators"),
    "flops": ("operators",),
    "benchmark": ("operators", "blocks"),
    "distributed_benchmark": ("ranks", "rank_blocks"),
}

# The module estimates and receptive field of a layer: each a value column and a status column.
_LAYER_METRICS: tuple[tuple[str, str], ...] = (
    ("module_flops", "FLOPs"),
    ("macs", "MACs"),
    ("dmas", "DMAs"),
    ("receptive_field", "count"),
    ("effective_stride", "count"),
    ("effective_padding", "count"),
)

# The memory peaks of a rank of a distributed job: each a value column and a status column.
_RANK_MEMORY_METRICS = ("tensor_memory_peak", "allocator_reserved_peak", "process_rss_peak")

# The parameters under a module with children (a layer's ``parameters["total"]``): NaN on
# leaves and in reports written before totals were recorded.
_TOTAL_COLUMNS = (
    "params_total",
    "trainable_params_total",
    "frozen_params_total",
    "param_bytes_total",
)

#: Every column of each table with its unit (``""`` for a column without one), in table order.
TABLE_COLUMNS: dict[Table, dict[str, str]] = {
    "layers": {
        "path": "",
        "call_index": "",
        "name": "",
        "depth": "",
        "type": "",
        "leaf": "",
        "input_shapes": "",
        "output_shapes": "",
        "params": "count",
        "trainable_params": "count",
        "frozen_params": "count",
        "param_bytes": "B",
        "params_shared": "",
        "params_total": "count",
        "trainable_params_total": "count",
        "frozen_params_total": "count",
        "param_bytes_total": "B",
        "buffer_elements": "count",
        "buffer_bytes": "B",
        "buffers_shared": "",
        **{
            column: column_unit
            for name, unit in _LAYER_METRICS
            for column, column_unit in ((name, unit), (f"{name}_status", ""))
        },
    },
    "operators": {
        "operator": "",
        "status": "",
        "exclusion_class": "",
        "calls": "count",
        "flops": "FLOPs",
    },
    "blocks": {
        "block": "",
        "start_s": "s",
        "duration_s": "s",
        "calls": "count",
        "latency_s": "s",
    },
    "ranks": {
        "rank": "",
        "local_rank": "",
        "host": "",
        "device": "",
        "latency_s": "s",
        "latency_status": "",
        "barrier_wait_s": "s",
        "slowest_blocks": "count",
        **{
            column: column_unit
            for name in _RANK_MEMORY_METRICS
            for column, column_unit in ((name, "B"), (f"{name}_status", ""))
        },
        "straggler": "",
    },
    "rank_blocks": {
        "block": "",
        "rank": "",
        "start_s": "s",
        "duration_s": "s",
        "calls": "count",
        "latency_s": "s",
        "barrier_wait_s": "s",
        "step_time_s": "s",
        "slowest": "",
    },
}

# The numeric and boolean columns' dtypes, fixed so that they do not depend on the values (a
# metric column is float64 even when every value is a whole number; an empty table keeps them).
_DTYPES: dict[str, str] = {
    **dict.fromkeys(
        (
            "call_index",
            "depth",
            "params",
            "trainable_params",
            "frozen_params",
            "param_bytes",
            "buffer_elements",
            "buffer_bytes",
            "calls",
            "block",
            "rank",
            "local_rank",
            "slowest_blocks",
        ),
        "int64",
    ),
    **dict.fromkeys(
        (
            "flops",
            "start_s",
            "duration_s",
            "latency_s",
            "barrier_wait_s",
            "step_time_s",
            *_RANK_MEMORY_METRICS,
            *_TOTAL_COLUMNS,
            *(name for name, _ in _LAYER_METRICS),
        ),
        "float64",
    ),
    **dict.fromkeys(("leaf", "params_shared", "buffers_shared", "straggler", "slowest"), "bool"),
}

_MISSING_PANDAS = (
    'torchscan.to_frame needs pandas: install it with pip install "torchscan[pandas]" '
    "(or pip install pandas)"
)


def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError as error:
        raise ImportError(_MISSING_PANDAS, name="pandas") from error
    return pandas


def _number(metric: Mapping[str, Any]) -> float:
    """A metric's value, NaN unless it is complete (a partial metric's value is null too)."""
    value = metric["value"]
    return math.nan if value is None else float(value)


def _shapes(meta: Mapping[str, Any]) -> Iterator[tuple[int, ...]]:
    """The shapes of the tensors of a value's metadata tree, depth first, in the tree's order."""
    kind = meta["kind"]
    if kind == "tensor":
        yield tuple(int(size) for size in meta["shape"])
    elif kind in ("tuple", "list", "mapping"):
        for item in meta["items"]:
            yield from _shapes(item["value"] if kind == "mapping" else item)
    elif kind in ("dataclass", "named_tuple"):
        for field in meta["fields"]:
            yield from _shapes(field["value"])


def _parents(paths: list[str]) -> set[str]:
    """Every module path that another path is nested under (``""``, the root, for any other)."""
    parents: set[str] = set()
    for path in paths:
        if path:
            parts = path.split(".")
            parents.update(".".join(parts[:end]) for end in range(len(parts)))
    return parents


def _total_columns(total: Mapping[str, int] | None) -> dict[str, float]:
    """The parameters under a module with children as the four ``*_total`` columns.

    NaN for a leaf (its total is its own count) or a report written before totals were recorded.
    """
    if total is None:
        return dict.fromkeys(_TOTAL_COLUMNS, math.nan)
    return {
        "params_total": float(total["trainable"] + total["frozen"]),
        "trainable_params_total": float(total["trainable"]),
        "frozen_params_total": float(total["frozen"]),
        "param_bytes_total": float(total["bytes"]),
    }


def _layer_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    parents = _parents([layer["path"] for layer in report["layers"]])
    for layer in report["layers"]:
        arguments = layer["input"]
        parameters = layer["parameters"]
        buffers = layer["buffers"]
        row: dict[str, Any] = {
            "path": layer["path"],
            "call_index": layer["call_index"],
            "name": layer["name"],
            "depth": layer["depth"],
            "type": layer["type"],
            "leaf": layer["path"] not in parents,
            "input_shapes": tuple(
                shape
                for meta in (*arguments["args"], *arguments["kwargs"].values())
                for shape in _shapes(meta)
            ),
            "output_shapes": tuple(_shapes(layer["output"])),
            "params": parameters["trainable"] + parameters["frozen"],
            "trainable_params": parameters["trainable"],
            "frozen_params": parameters["frozen"],
            "param_bytes": parameters["bytes"],
            "params_shared": parameters["shared"],
            **_total_columns(parameters.get("total")),
            "buffer_elements": buffers["elements"],
            "buffer_bytes": buffers["bytes"],
            "buffers_shared": buffers["shared"],
        }
        for name, _unit in _LAYER_METRICS:
            metric = layer["metrics"][name]
            row[name] = _number(metric)
            row[f"{name}_status"] = metric["status"]
        rows.append(row)
    return rows


def _operator_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = report["kind"]
    view = report["operator_flops"]
    if view is None or (
        view["total"]["status"] == "unavailable"
        and not (view["counted"] or view["excluded"] or view["uncounted"])
    ):
        metric = report["metrics"]["operator_flops"] if view is None else view["total"]
        remedy = {
            "benchmark": "measure with metrics including 'operator_flops'",
            "analysis": "analyse with mode='full'",
        }.get(kind, "count them")
        raise InvalidArgumentError(
            f"this {kind} report has no operator view: operator FLOPs are unavailable "
            f"({metric['reason']}); {remedy} to get this table"
        )
    rows: list[dict[str, Any]] = [
        {
            "operator": op["operator"],
            "status": "counted",
            "exclusion_class": None,
            "calls": op["calls"],
            "flops": float(op["flops"]),
        }
        for op in view["counted"]
    ]
    rows.extend(
        {
            "operator": op["operator"],
            "status": "excluded",
            "exclusion_class": op["class"],
            "calls": op["calls"],
            "flops": math.nan,
        }
        for op in view["excluded"]
    )
    rows.extend(
        {
            "operator": op["operator"],
            "status": "uncounted",
            "exclusion_class": None,
            "calls": op["calls"],
            "flops": math.nan,
        }
        for op in view["uncounted"]
    )
    return rows


def _block_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    timing = report["timing"]
    if timing is None:
        reason = report["metrics"]["latency"]["reason"]
        raise InvalidArgumentError(
            f"this benchmark report has no timed blocks: latency is unavailable ({reason}); "
            "measure with metrics including 'latency' to get this table"
        )
    calls = timing["calls_per_block"]
    durations = timing["block_durations_s"]
    starts = timing.get("block_starts_s") or [math.nan] * len(durations)
    return [
        {
            "block": index,
            "start_s": float(start),
            "duration_s": float(duration),
            "calls": calls,
            "latency_s": duration / calls,
        }
        for index, (start, duration) in enumerate(zip(starts, durations, strict=True))
    ]


def _rank_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per rank of a distributed job, by rank, from its summary in ``ranks``."""
    straggler = report["straggler"]
    rows = []
    for summary in report["ranks"]:
        rank = summary["rank"]
        latency = summary["latency"]
        row: dict[str, Any] = {
            "rank": rank,
            "local_rank": summary["local_rank"],
            "host": summary["host"],
            "device": summary["device"],
            "latency_s": _number(latency),
            "latency_status": latency["status"],
            "barrier_wait_s": float(summary["barrier_wait_s"]),
            "slowest_blocks": straggler["slowest_blocks"][rank],
        }
        for name in _RANK_MEMORY_METRICS:
            metric = summary[name]
            row[name] = _number(metric)
            row[f"{name}_status"] = metric["status"]
        row["straggler"] = rank == straggler["rank"]
        rows.append(row)
    return rows


def _rank_block_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per aligned block and rank: blocks in the order they ran, ranks by rank."""
    ranks = sorted(
        (
            (rank_report["context"]["distributed"]["rank"], rank_report["timing"])
            for rank_report in report["rank_reports"]
        ),
        key=lambda item: item[0],
    )
    rows = []
    for index, block in enumerate(report["blocks"]):
        for rank, timing in ranks:
            calls = timing["calls_per_block"]
            duration = timing["block_durations_s"][index]
            starts = timing.get("block_starts_s")
            waits = timing.get("barrier_waits_s")
            rows.append(
                {
                    "block": index,
                    "rank": rank,
                    "start_s": math.nan if starts is None else float(starts[index]),
                    "duration_s": float(duration),
                    "calls": calls,
                    "latency_s": duration / calls,
                    "barrier_wait_s": math.nan if waits is None else float(waits[index]),
                    "step_time_s": float(block["step_time_s"]),
                    "slowest": rank == block["slowest_rank"],
                }
            )
    return rows


_ROWS = {
    "layers": _layer_rows,
    "operators": _operator_rows,
    "blocks": _block_rows,
    "ranks": _rank_rows,
    "rank_blocks": _rank_block_rows,
}


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(repr(name) for name in names)


def to_frame(report: ReportInput, *, table: Table) -> pandas.DataFrame:
    """Return one table of a valid report as a ``pandas.DataFrame``, one row per item.

    ``table`` is ``"layers"`` (an analysis report's layers: one row per module call, in call
    order), ``"operators"`` (the operator FLOPs view of an analysis, flops or benchmark report:
    one row per executed operator, counted ones first, then excluded, then uncounted, each
    group sorted by name), ``"blocks"`` (a benchmark report's timed blocks, in the order they
    ran), ``"ranks"`` (a distributed_benchmark report's ranks: one row per rank, by rank) or
    ``"rank_blocks"`` (a distributed_benchmark report's aligned blocks on every rank: one row per
    block and rank, the blocks in the order they ran, each block's ranks by rank). ``report`` is
    a mapping, JSON text, or a path to a JSON file, as for :func:`~torchscan.render_report`.

    Columns are flat ``snake_case`` names; numbers are the report's own, in SI base units (no
    scaling, no rounding), listed with their units in ``torchscan.reports.frames.TABLE_COLUMNS`` and
    in ``frame.attrs["units"]``. A metric that is partial or unavailable is NaN beside its status
    column, never 0: pandas' ``sum()`` skips NaN, so check the statuses (or pass ``skipna=False``)
    before adding a column up. ``frame.attrs`` also holds the report's ``kind`` and the ``table``.

    Raises :class:`ImportError` naming ``pip install "torchscan[pandas]"`` without pandas,
    :class:`~torchscan.InvalidArgumentError` for a ``table`` the report's kind does not have (the
    message lists those it has) or one the report lacks because its pass did not run, and
    :class:`~torchscan.ReportValidationError` when the report is invalid.
    """
    known = tuple(_ROWS)
    if not isinstance(table, str) or table not in _ROWS:
        raise InvalidArgumentError(f"table must be one of {_listed(known)}; got {table!r}")
    pandas = _import_pandas()
    text = report_json(report)
    kind = _core.validate_report_json(text)
    tables = TABLES.get(kind, ())
    if table not in tables:
        if tables:
            has = f"{kind} reports have the tables {_listed(tables)}"
        else:
            has = f"{kind} reports have no table"
        readers = "; ".join(f"{name}: {_listed(names)}" for name, names in TABLES.items())
        raise InvalidArgumentError(
            f"table {table!r} is not in this report: {has} (tables by kind: {readers})"
        )
    data = json.loads(text)
    rows = _ROWS[table](data)
    columns = TABLE_COLUMNS[table]
    frame = pandas.DataFrame.from_records(rows, columns=list(columns))
    frame = frame.astype({column: _DTYPES[column] for column in columns if column in _DTYPES})
    frame.attrs = {
        "kind": kind,
        "table": table,
        "units": {column: unit for column, unit in columns.items() if unit},
    }
    return frame
