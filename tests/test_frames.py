"""`torchscan.to_frame`: a report's layers, operators, blocks and ranks as pandas DataFrames.

pandas comes with the ``test`` extra: without it these tests skip (except the one that checks the
error a user without pandas gets), except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from torchscan import (
    InvalidArgumentError,
    ReportValidationError,
    crawl_module,
    measure_flops,
    measure_workload,
    merge_rank_reports,
    to_frame,
)
from torchscan.reports.frames import _DTYPES, TABLE_COLUMNS, TABLES, Table

from .conftest import FIXTURES, ROOT, invalid_fixtures

REPORTS = FIXTURES / "reports"
SMALL_CNN = REPORTS / "analysis_small_cnn.json"
PARTIAL = REPORTS / "analysis_partial_operator_flops_tied_weights.json"
STRUCTURE = REPORTS / "analysis_structure_mode.json"
FLOPS = REPORTS / "flops_square_matmul.json"
BENCHMARK = REPORTS / "benchmark_readme_cpu.json"
BENCHMARK_WITH_STARTS = REPORTS / "benchmark_readme_cpu_1s.json"
DISTRIBUTED = FIXTURES / "distributed" / "merged.json"
RANK0 = FIXTURES / "distributed" / "rank0.json"
LAYER_METRICS = (
    "module_flops",
    "macs",
    "dmas",
    "receptive_field",
    "effective_stride",
    "effective_padding",
)


def require_pandas() -> ModuleType:
    try:
        import pandas
    except ImportError:
        reason = "pandas is not installed (it is in the test extra)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must run the pandas tests")
        pytest.skip(reason)
    return pandas


@pytest.fixture
def pandas() -> ModuleType:
    return require_pandas()


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# --------------------------------------------------------------------------- layers


def test_layers_are_the_report_layers_column_by_column(pandas: ModuleType) -> None:
    report = load(SMALL_CNN)
    frame = to_frame(report, table="layers")
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(TABLE_COLUMNS["layers"])
    assert len(frame) == len(report["layers"])
    for (_, row), layer in zip(frame.iterrows(), report["layers"], strict=True):
        assert row["path"] == layer["path"]
        assert row["call_index"] == layer["call_index"]
        assert row["name"] == layer["name"]
        assert row["depth"] == layer["depth"]
        assert row["type"] == layer["type"]
        assert row["trainable_params"] == layer["parameters"]["trainable"]
        assert row["frozen_params"] == layer["parameters"]["frozen"]
        assert row["params"] == layer["parameters"]["trainable"] + layer["parameters"]["frozen"]
        assert row["param_bytes"] == layer["parameters"]["bytes"]
        assert row["buffer_elements"] == layer["buffers"]["elements"]
        assert row["buffer_bytes"] == layer["buffers"]["bytes"]
        for metric in LAYER_METRICS:
            expected = layer["metrics"][metric]
            assert row[f"{metric}_status"] == expected["status"]
            if expected["status"] == "complete":
                assert row[metric] == expected["value"]
            else:
                assert math.isnan(row[metric])
    assert frame["leaf"].tolist() == [False, True, True, True, True, True]
    conv = frame.iloc[1]
    assert (conv["path"], conv["type"], conv["params"], conv["param_bytes"]) == (
        "0",
        "Conv2d",
        224,
        896,
    )
    assert conv["input_shapes"] == ((1, 3, 32, 32),)
    assert conv["output_shapes"] == ((1, 8, 30, 30),)
    assert (conv["module_flops"], conv["macs"], conv["receptive_field"]) == (388800, 194400, 3)
    # Complete layer estimates add up to the report's complete total.
    assert report["totals"]["module_flops"]["status"] == "complete"
    assert frame["module_flops"].sum() == report["totals"]["module_flops"]["value"] == 403360


def test_layer_columns_have_fixed_dtypes_and_documented_units(pandas: ModuleType) -> None:
    frame = to_frame(SMALL_CNN, table="layers")
    for column in ("call_index", "depth", "params", "param_bytes", "buffer_elements"):
        assert frame[column].dtype == "int64", column
    for column in LAYER_METRICS:
        assert frame[column].dtype == "float64", column
    assert frame["params_shared"].dtype == bool
    assert frame["leaf"].dtype == bool
    assert frame.attrs == {
        "kind": "analysis",
        "table": "layers",
        "units": {
            "params": "count",
            "trainable_params": "count",
            "frozen_params": "count",
            "param_bytes": "B",
            "params_total": "count",
            "trainable_params_total": "count",
            "frozen_params_total": "count",
            "param_bytes_total": "B",
            "buffer_elements": "count",
            "buffer_bytes": "B",
            "module_flops": "FLOPs",
            "macs": "MACs",
            "dmas": "DMAs",
            "receptive_field": "count",
            "effective_stride": "count",
            "effective_padding": "count",
        },
    }


def test_a_metric_without_a_value_is_nan_with_its_status_never_zero(pandas: ModuleType) -> None:
    frame = to_frame(PARTIAL, table="layers")
    act = frame[frame["path"] == "act"].iloc[0]
    assert act["type"] == "FusedGELU"
    assert act["module_flops_status"] == "unavailable"
    assert math.isnan(act["module_flops"])
    assert math.isnan(frame["module_flops"].sum(skipna=False))
    head = frame[frame["path"] == "head"].iloc[0]
    assert (head["module_flops"], head["module_flops_status"]) == (25600, "complete")
    structure = to_frame(STRUCTURE, table="layers")
    assert set(structure["module_flops_status"]) == {"unavailable"}
    assert structure["module_flops"].isna().all()
    assert structure["params"].sum() == load(STRUCTURE)["totals"]["parameters"]["value"]


def test_a_layer_with_children_includes_theirs_and_leaf_says_which(pandas: ModuleType) -> None:
    import torch

    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 6 * 6, 4),
    )
    report = crawl_module(model, (3, 8, 8))
    frame = to_frame(report, table="layers")
    assert frame["path"].tolist() == ["", "0", "0.0", "0.1", "1", "2"]
    assert frame["leaf"].tolist() == [False, False, True, True, True, True]
    assert (frame["module_flops_status"] == "complete").all()
    flops = dict(zip(frame["path"], frame["module_flops"], strict=True))
    assert flops["0"] == flops["0.0"] + flops["0.1"]
    leaves = frame.loc[frame["leaf"], "module_flops"].sum()
    assert flops[""] == leaves == report["totals"]["module_flops"]["value"]
    assert frame["params"].sum() == report["totals"]["parameters"]["value"]


def test_input_and_output_shapes_walk_every_container(pandas: ModuleType) -> None:
    report = load(SMALL_CNN)
    tensor = {"kind": "tensor", "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    layer = report["layers"][0]
    layer["input"]["kwargs"] = {
        "mask": {**tensor, "shape": [2]},
        "extra": {"kind": "scalar", "type": "int"},
    }
    layer["output"] = {
        "kind": "tuple",
        "items": [
            {**tensor, "shape": [1, 10]},
            {"kind": "none"},
            {
                "kind": "mapping",
                "type": "dict",
                "items": [{"key": "h", "key_type": "str", "value": {**tensor, "shape": [3]}}],
            },
            {
                "kind": "named_tuple",
                "type": "Pair",
                "fields": [{"name": "c", "value": {**tensor, "shape": []}}],
            },
        ],
    }
    frame = to_frame(report, table="layers")
    assert frame.iloc[0]["input_shapes"] == ((1, 3, 32, 32), (2,))
    assert frame.iloc[0]["output_shapes"] == ((1, 10), (3,), ())


# --------------------------------------------------------------------------- operators


@pytest.mark.parametrize("path", [SMALL_CNN, PARTIAL, FLOPS, BENCHMARK], ids=lambda p: p.name)
def test_operators_are_every_executed_operator_once(pandas: ModuleType, path: Path) -> None:
    report = load(path)
    view = report["operator_flops"]
    frame = to_frame(path, table="operators")
    assert list(frame.columns) == list(TABLE_COLUMNS["operators"])
    expected = (
        [(op["operator"], "counted", None, op["calls"], op["flops"]) for op in view["counted"]]
        + [(op["operator"], "excluded", op["class"], op["calls"], None) for op in view["excluded"]]
        + [(op["operator"], "uncounted", None, op["calls"], None) for op in view["uncounted"]]
    )
    rows = [
        (
            row.operator,
            row.status,
            None if missing(row.exclusion_class) else row.exclusion_class,
            row.calls,
            None if missing(row.flops) else row.flops,
        )
        for row in frame.itertuples()
    ]
    assert rows == expected
    assert frame["calls"].dtype == "int64"
    assert frame["flops"].dtype == "float64"
    # What was counted adds up to the total's known value: exact, or a lower bound when partial.
    assert frame["flops"].sum() == view["total"]["known_value"]
    assert frame.attrs["units"] == {"calls": "count", "flops": "FLOPs"}


def test_uncounted_operators_are_nan_never_zero(pandas: ModuleType) -> None:
    frame = to_frame(PARTIAL, table="operators")
    gelu = frame[frame["operator"] == "mylib::fused_gelu"].iloc[0]
    assert gelu["status"] == "uncounted"
    assert math.isnan(gelu["flops"])
    assert math.isnan(frame["flops"].sum(skipna=False))
    excluded = frame[frame["status"] == "excluded"]
    assert set(excluded["exclusion_class"]) == {"data_movement"}
    assert excluded["flops"].isna().all()


def test_no_operator_ran_is_an_empty_table_not_a_missing_one(pandas: ModuleType) -> None:
    report = measure_flops(lambda: None)
    assert report["operator_flops"]["total"]["status"] == "complete"
    frame = to_frame(report, table="operators")
    assert len(frame) == 0
    assert list(frame.columns) == list(TABLE_COLUMNS["operators"])
    assert (frame["calls"].dtype, frame["flops"].dtype) == ("int64", "float64")
    assert frame["flops"].sum() == report["operator_flops"]["total"]["value"] == 0


# --------------------------------------------------------------------------- blocks


@pytest.mark.parametrize("path", [BENCHMARK, BENCHMARK_WITH_STARTS], ids=lambda p: p.name)
def test_blocks_are_the_raw_timing_evidence(pandas: ModuleType, path: Path) -> None:
    report = load(path)
    timing = report["timing"]
    frame = to_frame(path, table="blocks")
    assert list(frame.columns) == list(TABLE_COLUMNS["blocks"])
    assert frame["block"].tolist() == list(range(len(timing["block_durations_s"])))
    assert frame["duration_s"].tolist() == timing["block_durations_s"]
    assert set(frame["calls"]) == {timing["calls_per_block"]}
    assert frame["latency_s"].tolist() == [
        duration / timing["calls_per_block"] for duration in timing["block_durations_s"]
    ]
    starts = timing.get("block_starts_s")
    if starts is None:
        assert frame["start_s"].isna().all()
    else:
        assert frame["start_s"].tolist() == starts
    # The report's latency is the median of the per-call block means.
    latency = report["metrics"]["latency"]
    assert latency["status"] == "complete"
    assert frame["latency_s"].median() == latency["value"]
    assert statistics.median(frame["latency_s"]) == latency["value"]
    assert frame.attrs == {
        "kind": "benchmark",
        "table": "blocks",
        "units": {"start_s": "s", "duration_s": "s", "calls": "count", "latency_s": "s"},
    }


def test_passes_that_did_not_run_have_no_table(pandas: ModuleType) -> None:
    report = measure_workload(lambda: None, metrics=["tensor_memory"], print_summary=False)
    assert report["timing"] is None
    assert report["operator_flops"] is None
    with pytest.raises(
        InvalidArgumentError,
        match=r"no timed blocks: latency is unavailable \(not requested\); measure with metrics "
        r"including 'latency'",
    ):
        to_frame(report, table="blocks")
    with pytest.raises(
        InvalidArgumentError,
        match=r"no operator view: operator FLOPs are unavailable \(not requested\); measure with "
        r"metrics including 'operator_flops' to get this table",
    ):
        to_frame(report, table="operators")
    with pytest.raises(
        InvalidArgumentError,
        match=r"this analysis report has no operator view: operator FLOPs are unavailable "
        r"\(not requested\); analyse with mode='full' to get this table",
    ):
        to_frame(STRUCTURE, table="operators")


# --------------------------------------------------------------------------- distributed jobs


def value_or_nan(metric: dict[str, Any]) -> float:
    return float(metric["value"]) if metric["status"] == "complete" else math.nan


def same(left: Any, right: Any) -> bool:
    """Equal, NaN equal to NaN (a missing metric is NaN in a frame)."""
    return (missing(left) and missing(right)) or left == right


def single_rank_report() -> dict[str, Any]:
    """A one-rank job: no barrier waits, no block starts, no process peak, no device."""
    rank0 = load(RANK0)
    rank0["context"]["distributed"]["world_size"] = 1
    rank0["context"]["device"] = None
    del rank0["timing"]["barrier_waits_s"]
    del rank0["timing"]["block_starts_s"]
    del rank0["metrics"]["rank_process_rss_peak"]
    return cast("dict[str, Any]", merge_rank_reports([rank0]))


def expected_rank_rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The ``ranks`` rows computed from the rank reports themselves, not from ``ranks``."""
    by_rank = sorted(report["rank_reports"], key=lambda r: r["context"]["distributed"]["rank"])
    durations = [r["timing"]["block_durations_s"] for r in by_rank]
    blocks = len(durations[0])
    # The slowest rank of a block: the largest duration, the lowest rank among equals.
    slowest = [
        max(range(len(by_rank)), key=lambda rank: (durations[rank][i], -rank))
        for i in range(blocks)
    ]
    counts = [slowest.count(rank) for rank in range(len(by_rank))]
    straggler = [len(by_rank) > 1 and 2 * count > blocks for count in counts]
    rows = []
    for rank_report in by_rank:
        distributed = rank_report["context"]["distributed"]
        rank = distributed["rank"]
        metrics = rank_report["metrics"]
        rss = metrics.get("rank_process_rss_peak")
        rows.append(
            (
                rank,
                distributed["local_rank"],
                distributed["host"],
                rank_report["context"]["device"],
                value_or_nan(metrics["latency"]),
                metrics["latency"]["status"],
                sum(rank_report["timing"].get("barrier_waits_s") or [], 0.0),
                counts[rank],
                value_or_nan(metrics["tensor_memory_peak"]),
                metrics["tensor_memory_peak"]["status"],
                value_or_nan(metrics["allocator_reserved_peak"]),
                metrics["allocator_reserved_peak"]["status"],
                math.nan if rss is None else value_or_nan(rss),
                "unavailable" if rss is None else rss["status"],
                straggler[rank],
            )
        )
    return rows


def expected_rank_block_rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The ``rank_blocks`` rows computed from the rank reports' timing evidence."""
    by_rank = sorted(report["rank_reports"], key=lambda r: r["context"]["distributed"]["rank"])
    rows = []
    for i in range(len(by_rank[0]["timing"]["block_durations_s"])):
        durations = [r["timing"]["block_durations_s"][i] for r in by_rank]
        step_time = max(durations)
        slowest = durations.index(step_time)
        for rank, rank_report in enumerate(by_rank):
            timing = rank_report["timing"]
            starts = timing.get("block_starts_s")
            waits = timing.get("barrier_waits_s")
            rows.append(
                (
                    i,
                    rank,
                    math.nan if starts is None else starts[i],
                    durations[rank],
                    timing["calls_per_block"],
                    durations[rank] / timing["calls_per_block"],
                    math.nan if waits is None else waits[i],
                    step_time,
                    rank == slowest,
                )
            )
    return rows


def frame_rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in frame.itertuples(index=False)]


def assert_rows(frame: Any, expected: list[tuple[Any, ...]]) -> None:
    rows = frame_rows(frame)
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert len(row) == len(want)
        assert all(same(got, value) for got, value in zip(row, want, strict=True)), (row, want)


def test_ranks_are_one_row_per_rank_from_the_rank_reports(pandas: ModuleType) -> None:
    report = load(DISTRIBUTED)
    frame = to_frame(DISTRIBUTED, table="ranks")
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(TABLE_COLUMNS["ranks"])
    assert_rows(frame, expected_rank_rows(report))
    # The same as the report's own summary rows and straggler.
    summaries = report["ranks"]
    assert frame["rank"].tolist() == [summary["rank"] for summary in summaries] == [0, 1]
    assert frame["barrier_wait_s"].tolist() == [s["barrier_wait_s"] for s in summaries]
    assert frame["slowest_blocks"].tolist() == report["straggler"]["slowest_blocks"] == [0, 8]
    assert frame["straggler"].tolist() == [False, True]
    assert report["straggler"]["rank"] == 1
    assert frame["latency_s"].tolist() == [0.0048828125, 0.005859375]
    assert frame["tensor_memory_peak"].tolist() == [1048576.0, 1052672.0]
    assert frame["process_rss_peak"].tolist() == [200000000.0, 201000000.0]
    assert frame["barrier_wait_s"].tolist() == [0.0126953125, 0.0]


def test_a_rank_metric_without_a_value_is_nan_with_its_status(pandas: ModuleType) -> None:
    frame = to_frame(DISTRIBUTED, table="ranks")
    assert frame["allocator_reserved_peak_status"].tolist() == ["unavailable", "unavailable"]
    assert frame["allocator_reserved_peak"].isna().all()
    assert math.isnan(frame["allocator_reserved_peak"].sum(skipna=False))
    assert frame["tensor_memory_peak_status"].tolist() == ["complete", "complete"]
    report = single_rank_report()
    single = to_frame(report, table="ranks")
    assert_rows(single, expected_rank_rows(report))
    row = single.iloc[0]
    assert (row["process_rss_peak_status"], math.isnan(row["process_rss_peak"])) == (
        "unavailable",
        True,
    )
    assert missing(row["device"])
    # One rank records no barrier wait (its summary says 0) and is never a straggler.
    assert (row["barrier_wait_s"], row["slowest_blocks"], row["straggler"]) == (0.0, 8, False)


def test_rank_columns_have_fixed_dtypes_and_documented_units(pandas: ModuleType) -> None:
    for report in (load(DISTRIBUTED), single_rank_report()):
        frame = to_frame(report, table="ranks")
        for column in ("rank", "local_rank", "slowest_blocks"):
            assert frame[column].dtype == "int64", column
        for column in (
            "latency_s",
            "barrier_wait_s",
            "tensor_memory_peak",
            "allocator_reserved_peak",
            "process_rss_peak",
        ):
            assert frame[column].dtype == "float64", column
        assert frame["straggler"].dtype == bool
        assert frame.attrs == {
            "kind": "distributed_benchmark",
            "table": "ranks",
            "units": {
                "latency_s": "s",
                "barrier_wait_s": "s",
                "slowest_blocks": "count",
                "tensor_memory_peak": "B",
                "allocator_reserved_peak": "B",
                "process_rss_peak": "B",
            },
        }


def test_rank_blocks_are_every_rank_s_timing_evidence(pandas: ModuleType) -> None:
    report = load(DISTRIBUTED)
    frame = to_frame(DISTRIBUTED, table="rank_blocks")
    assert list(frame.columns) == list(TABLE_COLUMNS["rank_blocks"])
    expected = expected_rank_block_rows(report)
    assert frame_rows(frame) == expected  # every value is present: compared exactly
    assert frame["block"].tolist() == [block for block in range(8) for _ in range(2)]
    assert frame["rank"].tolist() == [0, 1] * 8
    # The job's blocks are the slowest rank's, as the report says.
    assert frame["step_time_s"].tolist() == [
        block["step_time_s"] for block in report["blocks"] for _ in range(2)
    ]
    assert frame.loc[frame["slowest"], "rank"].tolist() == [
        block["slowest_rank"] for block in report["blocks"]
    ]
    slowest = frame[frame["slowest"]]
    assert slowest["duration_s"].tolist() == slowest["step_time_s"].tolist()
    assert frame.loc[frame["rank"] == 0, "barrier_wait_s"].tolist() == [
        0.0009765625,
        0.001953125,
        0.001953125,
        0.0009765625,
        0.001953125,
        0.001953125,
        0.001953125,
        0.0009765625,
    ]
    # A rank's latency is the median of its rows; its barrier wait, their sum.
    for summary in report["ranks"]:
        rows = frame[frame["rank"] == summary["rank"]]
        assert statistics.median(rows["latency_s"]) == summary["latency"]["value"]
        assert sum(rows["barrier_wait_s"]) == summary["barrier_wait_s"]
    # The job's step time is the median of the per-call step times over blocks.
    per_block = frame.drop_duplicates("block")
    step_time = report["metrics"]["step_time"]["value"]
    assert statistics.median(per_block["step_time_s"] / per_block["calls"]) == step_time


def test_rank_blocks_without_waits_or_starts_are_nan_never_zero(pandas: ModuleType) -> None:
    report = single_rank_report()
    frame = to_frame(report, table="rank_blocks")
    assert_rows(frame, expected_rank_block_rows(report))
    assert len(frame) == 8
    assert frame["barrier_wait_s"].isna().all()
    assert frame["start_s"].isna().all()
    assert frame["slowest"].all()
    assert frame["duration_s"].tolist() == frame["step_time_s"].tolist() == [0.009765625] * 8


def test_rank_block_columns_have_fixed_dtypes_and_documented_units(pandas: ModuleType) -> None:
    for report in (load(DISTRIBUTED), single_rank_report()):
        frame = to_frame(report, table="rank_blocks")
        for column in ("block", "rank", "calls"):
            assert frame[column].dtype == "int64", column
        for column in (
            "start_s",
            "duration_s",
            "latency_s",
            "barrier_wait_s",
            "step_time_s",
        ):
            assert frame[column].dtype == "float64", column
        assert frame["slowest"].dtype == bool
        assert frame.attrs == {
            "kind": "distributed_benchmark",
            "table": "rank_blocks",
            "units": {
                "start_s": "s",
                "duration_s": "s",
                "calls": "count",
                "latency_s": "s",
                "barrier_wait_s": "s",
                "step_time_s": "s",
            },
        }


def test_distributed_reports_have_only_their_tables(pandas: ModuleType) -> None:
    others: tuple[Table, ...] = ("layers", "operators", "blocks")
    distributed: tuple[Table, ...] = ("ranks", "rank_blocks")
    for table in others:
        with pytest.raises(
            InvalidArgumentError,
            match=rf"^table '{table}' is not in this report: distributed_benchmark reports have "
            r"the tables 'ranks', 'rank_blocks' \(tables by kind: ",
        ):
            to_frame(DISTRIBUTED, table=table)
    for table in distributed:
        with pytest.raises(
            InvalidArgumentError,
            match=rf"^table '{table}' is not in this report: benchmark reports have the tables "
            r"'operators', 'blocks' \(",
        ):
            to_frame(BENCHMARK, table=table)
        with pytest.raises(InvalidArgumentError, match=r"analysis reports have the tables"):
            to_frame(SMALL_CNN, table=table)


# --------------------------------------------------------------------------- errors


def test_a_table_the_kind_lacks_lists_the_valid_ones(pandas: ModuleType) -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"table 'blocks' is not in this report: analysis reports have the tables "
        r"'layers', 'operators' \(tables by kind: analysis: 'layers', 'operators'; flops: "
        r"'operators'; benchmark: 'operators', 'blocks'; distributed_benchmark: 'ranks', "
        r"'rank_blocks'\)$",
    ):
        to_frame(SMALL_CNN, table="blocks")
    with pytest.raises(InvalidArgumentError, match=r"flops reports have the tables 'operators' \("):
        to_frame(FLOPS, table="layers")
    with pytest.raises(InvalidArgumentError, match="peak_memory reports have no table"):
        to_frame(REPORTS / "peak_memory_cpu.json", table="operators")
    with pytest.raises(InvalidArgumentError, match="report_diff reports have no table"):
        to_frame(REPORTS / "report_diff_widened_cnn.json", table="layers")


@pytest.mark.parametrize("table", ["layer", "Layers", "", None, 3])
def test_an_unknown_table_name_lists_the_tables(table: Any) -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"table must be one of 'layers', 'operators', 'blocks', 'ranks', 'rank_blocks'; "
        r"got ",
    ):
        to_frame(SMALL_CNN, table=table)


def test_tables_by_kind_are_the_documented_ones() -> None:
    assert TABLES == {
        "analysis": ("layers", "operators"),
        "flops": ("operators",),
        "benchmark": ("operators", "blocks"),
        "distributed_benchmark": ("ranks", "rank_blocks"),
    }


def documented_columns() -> dict[str, dict[str, tuple[str, str]]]:
    """Every column of every table of the pandas page: its unit and dtype, by table."""
    text = (ROOT / "docs" / "notebooks-and-pandas.md").read_text(encoding="utf-8")
    section = text.split("### Columns and units", 1)[1]
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    current = None
    for line in section.splitlines():
        heading = re.match(r'^`"(\w+)"` \(', line)
        if heading:
            current = tables.setdefault(heading.group(1), {})
        elif current is not None and line.startswith("| `"):
            names, unit, dtypes = (cell.strip() for cell in line.split("|")[1:4])
            columns = re.findall(r"`(\w+)`", names)
            for index, (column, dtype) in enumerate(
                zip(columns, [d.strip() for d in dtypes.split(",")], strict=True)
            ):
                # A metric's row names its status column second: the unit is the value's.
                current[column] = (unit if index == 0 else "", dtype)
    return tables


def test_the_docs_list_every_column_with_its_unit_and_dtype() -> None:
    documented = documented_columns()
    assert list(documented) == list(TABLE_COLUMNS)
    for table, columns in TABLE_COLUMNS.items():
        assert list(documented[table]) == list(columns), table
        for column, unit in columns.items():
            assert documented[table][column][0] == unit, (table, column)
            dtype = documented[table][column][1]
            assert dtype == _DTYPES.get(column, dtype if dtype == "object" else "string"), (
                table,
                column,
            )


def test_invalid_reports_raise_the_validation_error(pandas: ModuleType) -> None:
    path = invalid_fixtures()[0]
    with pytest.raises(ReportValidationError):
        to_frame(path, table="layers")
    with pytest.raises(FileNotFoundError):
        to_frame(REPORTS / "missing.json", table="layers")


def test_without_pandas_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import pandas` raise ImportError, as when it is missing.
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r'pip install "torchscan\[pandas\]"') as raised:
        to_frame(SMALL_CNN, table="layers")
    assert raised.value.name == "pandas"
    assert isinstance(raised.value.__cause__, ImportError)


def test_import_torchscan_imports_neither_pandas_nor_ipython() -> None:
    code = (
        "import sys, torchscan\n"
        "names = ('pandas', 'IPython', 'nbformat', 'nbclient')\n"
        "print(sorted(name for name in names if name in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
