"""`torchscan.to_frame`: a report's layers, operators and timed blocks as pandas DataFrames.

pandas comes with the ``test`` extra: without it these tests skip (except the one that checks the
error a user without pandas gets), except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from torchscan import (
    InvalidArgumentError,
    ReportValidationError,
    crawl_module,
    measure_flops,
    measure_workload,
    to_frame,
)
from torchscan.frames import TABLE_COLUMNS, TABLES

from .conftest import FIXTURES, invalid_fixtures

REPORTS = FIXTURES / "reports"
SMALL_CNN = REPORTS / "analysis_small_cnn.json"
PARTIAL = REPORTS / "analysis_partial_operator_flops_tied_weights.json"
STRUCTURE = REPORTS / "analysis_structure_mode.json"
FLOPS = REPORTS / "flops_square_matmul.json"
BENCHMARK = REPORTS / "benchmark_readme_cpu.json"
BENCHMARK_WITH_STARTS = REPORTS / "benchmark_readme_cpu_1s.json"
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


# --------------------------------------------------------------------------- errors


def test_a_table_the_kind_lacks_lists_the_valid_ones(pandas: ModuleType) -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"table 'blocks' is not in this report: analysis reports have the tables "
        r"'layers', 'operators' \(tables by kind: analysis: 'layers', 'operators'; flops: "
        r"'operators'; benchmark: 'operators', 'blocks'\)$",
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
        match=r"table must be one of 'layers', 'operators', 'blocks'; got ",
    ):
        to_frame(SMALL_CNN, table=table)


def test_tables_by_kind_are_the_documented_ones() -> None:
    assert TABLES == {
        "analysis": ("layers", "operators"),
        "flops": ("operators",),
        "benchmark": ("operators", "blocks"),
    }


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
