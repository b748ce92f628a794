"""``python -m torchscan summary``, ``measure --html``, ``--version`` and the help of every command.

Every run is a subprocess of ``python -m torchscan`` with one PyTorch thread, on models written
to a temporary file; the table, the JSON and the page are compared with what the Python API gives
for the same model.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import torchscan
from torchscan import crawl_module, format_summary, render_report, validate_report
from torchscan.cli import _parser

from .conftest import ROOT
from .test_docs_console import MODEL as DOCS_MODEL

MODELS = """\
import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))


def make_model():
    return SmallCNN()


model = make_model()
number = 3


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.embedding = nn.Embedding(10, 4)

    def forward(self, x, tokens):
        return self.linear(x) + self.embedding(tokens).sum(1)


class FusedGELU(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x) * 2


def partial():
    return nn.Sequential(nn.Linear(4, 4), FusedGELU())


class Raising(nn.Module):
    def forward(self, x):
        return helper(x)


def helper(x):
    raise ValueError("raised by the model")


def broken():
    raise RuntimeError("raised by the factory")


def not_a_module():
    return {"weights": 1}


def needs_arguments(width):
    return nn.Linear(width, width)
"""
COMMAND = "python -m torchscan summary: error: "
SHAPE = ("--input-shape", "3,16,16")


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """The analyses of this process run on one thread, as the subprocesses do."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "models.py"
    path.write_text(MODELS, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def namespace() -> dict[str, Any]:
    """The same model file, run in this process: the oracle's models."""
    found: dict[str, Any] = {}
    exec(compile(MODELS, "models.py", "exec"), found)
    return found


def torchscan_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscan", *map(str, args)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "100"},
        timeout=300,
    )


def summary_cli(models: Path, name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return torchscan_cli("summary", f"{models}:{name}", *args)


def line_of(code: str) -> int:
    """The line number of ``code`` in the model file."""
    return [line.strip() for line in MODELS.splitlines()].index(code) + 1


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a usage error prints on standard error (exit code 2), without its prefix."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


def same_analysis(report: dict[str, Any], expected: dict[str, Any]) -> None:
    assert validate_report(report) == "analysis"
    assert report["layers"] == expected["layers"]
    assert report["totals"] == expected["totals"]
    assert report["mode"] == expected["mode"]
    assert report["diagnostics"] == expected["diagnostics"]


@pytest.mark.parametrize("name", ["make_model", "SmallCNN", "model"])
def test_a_factory_a_class_and_an_instance_print_the_table_of_crawl_module(
    models: Path, namespace: dict[str, Any], name: str
) -> None:
    result = summary_cli(models, name, *SHAPE)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    expected = format_summary(crawl_module(namespace["make_model"](), input_shape=(3, 16, 16)))
    assert result.stdout == expected
    assert "  0 (Conv2d)              [1, 8, 14, 14]    224        224   84,672  42,336" in (
        result.stdout.splitlines()
    )


def test_json_is_the_report_and_html_its_page(
    models: Path, namespace: dict[str, Any], tmp_path: Path
) -> None:
    out, page = tmp_path / "analysis.json", tmp_path / "analysis.html"
    result = summary_cli(models, "make_model", *SHAPE, "--json", out, "--html", page)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    expected = crawl_module(namespace["make_model"](), input_shape=(3, 16, 16))
    same_analysis(report, dict(expected))
    assert result.stdout == format_summary(report)
    assert page.read_text(encoding="utf-8") == render_report(report)


def test_json_to_stdout_prints_the_report_alone(models: Path, namespace: dict[str, Any]) -> None:
    result = summary_cli(models, "model", *SHAPE, "--json", "-")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    expected = crawl_module(namespace["make_model"](), input_shape=(3, 16, 16))
    same_analysis(report, dict(expected))


def test_input_size_is_input_shape_with_the_batch_dimension(
    models: Path, namespace: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "size.json"
    result = summary_cli(models, "model", "--input-size", "2,3,16,16", "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    expected = crawl_module(namespace["make_model"](), input_size=(2, 3, 16, 16))
    same_analysis(report, dict(expected))
    assert result.stdout == format_summary(report)
    assert [layer["output"]["shape"] for layer in report["layers"][:2]] == [[2, 10], [2, 8, 14, 14]]
    single = summary_cli(models, "model", "--input-size", "1,3,16,16")
    assert single.returncode == 0, single.stderr
    assert single.stdout == summary_cli(models, "model", *SHAPE).stdout


def test_several_inputs_and_a_dtype_per_input(models: Path, namespace: dict[str, Any]) -> None:
    options = ("--input-shape", "3", "--input-shape", "5", "--dtype", "float32,int64")
    columns = ("--col-names", "input_size,output_size,num_params,mult_adds")
    result = summary_cli(models, "Tokens", *options, *columns)
    assert result.returncode == 0, result.stderr
    report = crawl_module(
        namespace["Tokens"](), input_shape=[(3,), (5,)], dtype=[torch.float32, torch.int64]
    )
    expected = format_summary(
        report, col_names=["input_size", "output_size", "num_params", "mult_adds"]
    )
    assert result.stdout == expected
    assert "embedding (Embedding)  [1, 5]       [1, 5, 4]         40     0" in expected


def test_display_options_reach_the_table(models: Path, namespace: dict[str, Any]) -> None:
    options = ("--depth", "1", "--receptive-field", "--effective-rf-stats")
    result = summary_cli(models, "make_model", *SHAPE, *options)
    assert result.returncode == 0, result.stderr
    report = crawl_module(namespace["make_model"](), input_shape=(3, 16, 16))
    expected = format_summary(report, max_depth=1, receptive_field=True, effective_rf_stats=True)
    assert result.stdout == expected
    assert "  0 (Conv2d)" not in expected
    alias = summary_cli(models, "make_model", *SHAPE, "--max-depth", "1", *options[2:])
    assert alias.stdout == expected


def test_structure_mode(models: Path, namespace: dict[str, Any]) -> None:
    result = summary_cli(models, "SmallCNN", *SHAPE, "--mode", "structure", "--strict")
    assert result.returncode == 0, result.stderr
    report = crawl_module(namespace["make_model"](), input_shape=(3, 16, 16), mode="structure")
    assert result.stdout == format_summary(report)
    assert "  Module FLOPs (estimate): unavailable (not requested)" in result.stdout.splitlines()


def test_strict_writes_the_outputs_then_exits_one_naming_the_metrics(
    models: Path, namespace: dict[str, Any], tmp_path: Path
) -> None:
    out, page = tmp_path / "partial.json", tmp_path / "partial.html"
    result = summary_cli(models, "partial", "--input-shape", "4", "--strict", "--json", out)
    assert result.returncode == 1
    assert result.stderr == (
        "python -m torchscan summary: --strict: requested metrics are incomplete: module_flops "
        "(partial), macs (partial), dmas (partial); the report's diagnostics say what is "
        "missing\n"
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    same_analysis(report, dict(crawl_module(namespace["partial"](), input_shape=(4,))))
    assert result.stdout == format_summary(report)
    lenient = summary_cli(models, "partial", "--input-shape", "4", "--html", page)
    assert lenient.returncode == 0, lenient.stderr
    assert lenient.stdout == result.stdout
    assert page.read_text(encoding="utf-8") == render_report(report)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ("--input-shape", "3,16,16", "--input-size", "1,3,16,16"),
            "argument --input-size: not allowed with argument --input-shape (see --help)",
        ),
        ((), "one of the arguments --input-shape --input-size is required (see --help)"),
        (
            ("--input-shape", "3,x"),
            "argument --input-shape: a shape is whole numbers separated by commas, such as "
            "3,224,224; got '3,x' (see --help)",
        ),
        (
            ("--input-shape", "0,3"),
            "argument --input-shape: sizes must be 1 or more; got '0,3' (see --help)",
        ),
        (
            ("--input-size", ""),
            "argument --input-size: a shape is whole numbers separated by commas, such as "
            "3,224,224; got '' (see --help)",
        ),
        (
            (*SHAPE, "--dtype", "float33"),
            "--dtype takes torch dtype names such as float32, float16, bfloat16 or int64; got "
            "'float33'",
        ),
        (
            (*SHAPE, "--dtype", "float32,int64"),
            "--dtype gives 2 dtypes for 1 input; give one for all of them or one per input",
        ),
        ((*SHAPE, "--depth", "-1"), "--depth must be 0 or more (0: the totals alone); got -1"),
        (
            (*SHAPE, "--device", "meta"),
            "the model is on cpu but --device meta; move the model first (model.to('meta')): the "
            "analysis never moves your model",
        ),
        (
            (*SHAPE, "--mode", "shapes"),
            "argument --mode: invalid choice: 'shapes' (choose from 'full', 'structure') "
            "(see --help)",
        ),
        (
            (*SHAPE, "--col-names", "output_size,kernel"),
            "--col-names: unknown column 'kernel'; the columns are "
            + ", ".join(torchscan.reports.validation.SUMMARY_COLUMNS),
        ),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    models: Path, options: tuple[str, ...], message: str
) -> None:
    assert one_line_error(summary_cli(models, "model", *options)) == COMMAND + message


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "number",
            "{models}:number is a int, not a torch.nn.Module; name a module, or a function or "
            "class that returns one",
        ),
        ("not_a_module", "{models}:not_a_module() returned a dict, not a torch.nn.Module"),
        (
            "needs_arguments",
            "{models}:needs_arguments takes arguments (width); name a torch.nn.Module, or a "
            "function or class that returns one when called with no arguments",
        ),
        ("missing", "{models} has no attribute 'missing'"),
    ],
)
def test_a_reference_that_names_no_model_is_a_usage_error(
    models: Path, name: str, message: str
) -> None:
    result = summary_cli(models, name, *SHAPE)
    assert one_line_error(result) == COMMAND + message.format(models=models)


def test_a_reference_without_an_attribute_is_a_usage_error(models: Path) -> None:
    result = torchscan_cli("summary", str(models), *SHAPE)
    assert one_line_error(result) == (
        f"{COMMAND}a model is 'module:attr' or 'path/to/file.py:attr', got '{models}'"
    )


def test_a_batched_input_shape_names_input_size(models: Path) -> None:
    line = one_line_error(summary_cli(models, "model", "--input-shape", "1,3,16,16"))
    assert line.startswith(
        f"{COMMAND}the input generated from --input-shape 1,3,16,16 has shape [1, 1, 3, 16, 16], "
        "and layer features.0 (Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))) refused it: "
        "RuntimeError: "
    )
    assert line.endswith(
        "--input-shape excludes the batch dimension (a batch of one is added). If 1,3,16,16 "
        "already includes it, pass --input-size 1,3,16,16 (torchinfo's convention, batch "
        "included) or --input-shape 3,16,16; otherwise give the shape the model takes."
    )
    assert "input_size=" not in line and "input_shape=" not in line
    # What only the Python API can give is left out of the command line's message.
    assert "args=" not in line and "input_data=" not in line


def test_html_to_standard_output_is_refused(models: Path) -> None:
    line = one_line_error(summary_cli(models, "model", "--input-shape", "3,16,16", "--html", "-"))
    assert line == (
        f"{COMMAND}--html takes a file path; '-' (standard output) is for --json only, where the "
        "report is printed alone"
    )


def test_a_generated_float_input_at_an_embedding_says_dtype_int64(models: Path) -> None:
    line = one_line_error(summary_cli(models, "Tokens", "--input-shape", "3", "--input-shape", "5"))
    assert line.startswith(
        f"{COMMAND}Tokens received the input generated from --input-shape 3 --input-shape 5, a "
        "torch.float32 tensor (generated inputs are floating-point, in the model's parameter "
        "dtype, unless --dtype says otherwise), and passed it to `embedding`, which takes "
        "integer indices. For token ids, pass --dtype int64: --input-shape 3 --input-shape 5 "
        "--dtype int64 generates zeros"
    )


def test_an_exception_of_the_model_shows_its_traceback_and_exits_one(models: Path) -> None:
    result = summary_cli(models, "Raising", "--input-shape", "4")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == f'  File "{models}", line {line_of("return helper(x)")}, in forward'
    assert lines[-1] == "ValueError: raised by the model"
    assert "torchscan" not in result.stderr.replace("python -m torchscan", "")
    factory = summary_cli(models, "broken", "--input-shape", "4")
    assert factory.returncode == 1
    raising = line_of('raise RuntimeError("raised by the factory")')
    assert factory.stderr.splitlines()[1] == f'  File "{models}", line {raising}, in broken'
    assert factory.stderr.splitlines()[-1] == "RuntimeError: raised by the factory"


def test_an_output_that_cannot_be_written_is_refused_before_the_model_loads(
    models: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "missing" / "out.html"
    result = summary_cli(models, "broken", *SHAPE, "--html", missing)
    assert one_line_error(result) == (
        f"{COMMAND}cannot write {missing}: no such directory: {missing.parent}"
    )


def test_measure_html_writes_the_page_of_its_report(tmp_path: Path) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(
        "import torch\n\nmodel = torch.nn.Linear(8, 8)\nx = torch.randn(4, 8)\n\n\n"
        "def workload():\n    return model(x)\n",
        encoding="utf-8",
    )
    out, page = tmp_path / "out.json", tmp_path / "out.html"
    short = ("--min-time", "0.01", "--max-time", "0.05", "--metrics", "latency,operator_flops")
    result = torchscan_cli("measure", f"{bench}:workload", *short, "--json", out, "--html", page)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert validate_report(report) == "benchmark"
    assert page.read_text(encoding="utf-8") == render_report(report)
    missing = tmp_path / "missing" / "out.html"
    refused = torchscan_cli("measure", f"{bench}:workload", *short, "--html", missing)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"python -m torchscan measure: error: cannot write {missing}: no such directory: "
        f"{missing.parent}\n"
    )


def test_version_on_every_command_is_the_packages(cli: str) -> None:
    line = f"torchscan {torchscan.__version__}\n"
    for command in ([], ["demo"], ["measure"], ["compare"], ["summary"]):
        result = torchscan_cli(*command, "--version")
        assert (result.returncode, result.stdout, result.stderr) == (0, line, "")
    report = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True)
    assert report.stdout == f"torchscan-report {torchscan.__version__}\n"


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    subparsers = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    return {"": parser, **subparsers.choices}


def test_the_docs_show_the_model_file_of_their_summary_examples() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"```python\n{DOCS_MODEL}```" in text


def test_the_docs_show_every_commands_help() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("summary", "measure", "compare", "demo"):
        assert f"<!-- console-check: -->\n```console\n$ python -m torchscan {command} --help\n" in (
            text
        )


def test_the_commands_are_demo_measure_compare_and_summary() -> None:
    assert list(_commands()) == ["", "demo", "measure", "compare", "summary"]


@pytest.mark.parametrize("command", ["demo", "measure", "compare", "summary"])
def test_help_shows_each_default_once(command: str) -> None:
    parser = _commands()[command]
    text = " ".join(parser.format_help().split())
    shown = 0
    for action in parser._actions:
        if action.default in (None, argparse.SUPPRESS) or isinstance(action.default, bool):
            continue
        assert f"(default: {action.default})" in text, action.dest
        shown += 1
    assert shown >= 2 if command != "summary" else shown == 1
    assert len(re.findall(r"\(default[: ]", text)) == text.count("(default: ")
    assert not re.search(r"\(default [0-9]", text)


def test_measure_help_reads_well() -> None:
    result = torchscan_cli("measure", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--min-time MIN_TIME minimum timing seconds (default: 1.0)" in text
    assert (
        "--profiler-calls PROFILER_CALLS calls of the profiler pass, 1 to 1,000,000; fewer run "
        "when they would pass --max-time (for compare, half of it per side) (default: 100)"
    ) in text
    assert "--html HTML write the report's HTML page here" in text
    assert "--version print torchscan's version and exit" in text
    assert "--work-units 32" in result.stdout  # an option name is never split at its hyphen
