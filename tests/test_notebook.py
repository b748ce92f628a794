"""`torchscan.show`: a report in a notebook, through IPython's formatter and a real kernel.

The kernel test builds a notebook with nbformat and runs it with nbclient on a kernel of this
interpreter (a kernelspec written to a temporary ``JUPYTER_PATH``); the kernel talks to the test
over local sockets only and is shut down before the test ends. nbclient, nbformat and ipykernel
come with the ``test`` extra: without them these tests skip, except under ``CI=true``, where they
fail.
"""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import torchscan
from torchscan import (
    InvalidArgumentError,
    ReportValidationError,
    ReportView,
    format_summary,
    render_report,
    show,
    validate_report,
)

from .conftest import FIXTURES, invalid_fixtures, valid_fixtures

SMALL_CNN = FIXTURES / "reports" / "analysis_small_cnn.json"
# Seconds: the kernel's start and each cell (which imports torch). Never reached when all is well.
KERNEL_TIMEOUT_S = 180


def require(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"{name} is not installed (it is in the test extra)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must run the notebook tests")
        pytest.skip(reason)


class Tags(HTMLParser):
    """Every start tag of an HTML fragment with its attributes, as a browser decodes them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(fragment: str) -> Tags:
    tags = Tags()
    tags.feed(fragment)
    tags.close()
    return tags


def odd_names_report() -> dict[str, Any]:
    """A valid report whose strings need escaping in HTML and in Markdown."""
    report = json.loads(SMALL_CNN.read_text(encoding="utf-8"))
    report["layers"][1]["type"] = "Odd````Conv \"quoted\" & 'single' <b>bold</b>"
    assert validate_report(report) == "analysis"
    return report


# --------------------------------------------------------------------------- the view


@pytest.mark.parametrize("path", valid_fixtures(), ids=lambda path: path.name)
def test_every_report_kind_shows_its_page_and_its_summary(path: Path) -> None:
    view = show(path)
    page = render_report(path)
    summary = format_summary(path)
    assert view.kind == validate_report(path)
    assert view.html == page
    assert view.text == summary
    assert summary.endswith("\n")
    assert repr(view) == str(view) == summary[:-1]
    tags = parse(view._repr_html_())
    assert [tag for tag, _ in tags.tags] == ["iframe"]
    attributes = tags.tags[0][1]
    # The page travels whole in srcdoc: decoded as a browser decodes it, it is the page itself.
    assert attributes["srcdoc"] == page
    assert attributes["sandbox"] == ""
    assert attributes["title"] == f"torchscan {view.kind} report"
    assert "height: 600px" in (attributes["style"] or "")
    assert "".join(tags.text) == ""
    assert view._repr_markdown_() == f"```text\n{summary}```\n"


def test_mapping_text_and_path_give_one_view() -> None:
    text = SMALL_CNN.read_text(encoding="utf-8")
    views = [show(SMALL_CNN), show(str(SMALL_CNN)), show(text), show(json.loads(text))]
    assert {view._repr_html_() for view in views} == {views[0]._repr_html_()}
    assert {view.text for view in views} == {format_summary(SMALL_CNN)}


def test_quotes_and_ampersands_are_escaped_inside_srcdoc() -> None:
    report = odd_names_report()
    page = render_report(report)
    assert "&amp;" in page  # the page escapes the name; srcdoc must escape the page again
    fragment = show(report)._repr_html_()
    srcdoc = re.fullmatch(r'<iframe srcdoc="([^"]*)" .*</iframe>', fragment, re.DOTALL)
    assert srcdoc is not None, "a quote of the page ended the srcdoc attribute early"
    assert "<" not in srcdoc.group(1)
    assert "'" not in srcdoc.group(1)
    assert "&amp;amp;" in srcdoc.group(1)
    assert html.unescape(srcdoc.group(1)) == page
    assert parse(fragment).tags[0][1]["srcdoc"] == page


def test_markdown_fence_is_longer_than_any_backtick_run_of_the_summary() -> None:
    report = odd_names_report()
    summary = format_summary(report)
    assert "````" in summary
    markdown = show(report)._repr_markdown_()
    assert markdown == f"`````text\n{summary}`````\n"


def test_height_and_max_depth() -> None:
    view = show(SMALL_CNN, height=240, max_depth=0)
    assert view.height_px == 240
    assert parse(view._repr_html_()).tags[0][1]["style"].startswith("width: 100%; height: 240px;")
    assert view.text == format_summary(SMALL_CNN, max_depth=0)
    assert view.text != format_summary(SMALL_CNN)
    for height in (49, 100_001, 600.0, True, "600"):
        with pytest.raises(InvalidArgumentError, match="height must be an integer from 50 to"):
            show(SMALL_CNN, height=height)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="max_depth must be an integer from 0"):
        show(SMALL_CNN, max_depth=-1)


@pytest.mark.parametrize("path", invalid_fixtures()[:6], ids=lambda path: path.name)
def test_invalid_reports_raise_what_the_renderer_raises(path: Path) -> None:
    with pytest.raises(ReportValidationError) as rendered:
        render_report(path)
    with pytest.raises(ReportValidationError) as shown:
        show(path)
    assert shown.value.problems == rendered.value.problems


def test_unreadable_reports_raise_what_the_renderer_raises(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(FileNotFoundError):
        show(missing)
    with pytest.raises(FileNotFoundError):
        show(str(missing))
    with pytest.raises(TypeError, match="a report is a mapping"):
        show(3j)  # type: ignore[arg-type]
    with pytest.raises(ReportValidationError, match=r"\$: "):
        show([1, 2])


def test_ipython_display_formatter_gives_page_markdown_and_text() -> None:
    formatters = require("IPython.core.formatters")
    view = show(SMALL_CNN)
    data, _metadata = formatters.DisplayFormatter().format(view)
    assert data["text/html"] == view._repr_html_()
    assert data["text/markdown"] == view._repr_markdown_()
    assert data["text/plain"] == format_summary(SMALL_CNN)[:-1]


def test_show_is_public() -> None:
    assert {"show", "ReportView", "to_frame"} <= set(torchscan.__all__)
    assert isinstance(show(SMALL_CNN), ReportView)


# --------------------------------------------------------------------------- a real kernel


def _kernel_spec(folder: Path) -> str:
    """A kernelspec that runs this interpreter (so the kernel imports this torchscan)."""
    name = "torchscan-test-python"
    spec = folder / "kernels" / name
    spec.mkdir(parents=True)
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "torchscan test kernel",
        "language": "python",
        "env": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    return name


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_notebook_displays_the_page_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = require("nbformat")
    nbclient = require("nbclient")
    require("ipykernel")
    require("pandas")
    jupyter = tmp_path / "jupyter"
    name = _kernel_spec(jupyter)
    # Everything Jupyter and IPython read or write stays under tmp_path.
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    report = str(SMALL_CNN)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import os, sys\nprint(os.getpid())\nprint(sys.executable)"),
        nbformat.v4.new_code_cell(
            "import torch\ntorch.set_num_threads(1)\nimport torchscan\n"
            f"torchscan.show({report!r}, height=300)"
        ),
        nbformat.v4.new_code_cell(f"torchscan.to_frame({report!r}, table='operators')"),
    ]
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=name,
        timeout=KERNEL_TIMEOUT_S,
        startup_timeout=KERNEL_TIMEOUT_S,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    nbformat.validate(notebook)

    first, shown, frame = notebook.cells
    printed = "".join(output["text"] for output in first.outputs if output["name"] == "stdout")
    pid_text, executable = printed.splitlines()
    assert executable == sys.executable
    # nbclient shut the kernel down: no process is left behind.
    assert _gone(int(pid_text), timeout_s=10.0), f"kernel process {pid_text} is still running"

    results = [output for output in shown.outputs if output["output_type"] == "execute_result"]
    assert len(results) == 1, shown.outputs
    data = results[0]["data"]
    assert "<iframe" in data["text/html"]
    assert "srcdoc=" in data["text/html"]
    attributes = parse(data["text/html"]).tags[0][1]
    assert attributes["srcdoc"] == render_report(SMALL_CNN)
    assert "height: 300px" in (attributes["style"] or "")
    summary = format_summary(SMALL_CNN)
    first_line = summary.splitlines()[0]
    assert first_line == "Analysis of Sequential (full mode, cpu, 1 PyTorch threads)"
    assert data["text/markdown"] == f"```text\n{summary}```\n"
    assert data["text/plain"] == summary[:-1]

    tables = [output for output in frame.outputs if output["output_type"] == "execute_result"]
    assert len(tables) == 1, frame.outputs
    table = tables[0]["data"]["text/html"]
    assert "<table" in table
    for operator in ("aten::addmm", "aten::convolution", "aten::relu"):
        assert operator in table
