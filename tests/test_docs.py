"""Every Python example in the README and docs/ runs as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchscan import validate_report

from .conftest import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(language: str) -> list[tuple[str, str]]:
    """Every fenced block of ``language`` in the documents, named ``FILE#language-INDEX``."""
    pattern = re.compile(rf"^```{language}\n(.*?)^```", re.DOTALL | re.MULTILINE)
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for index, match in enumerate(pattern.finditer(text)):
            found.append((f"{document.relative_to(ROOT)}#{language}-{index}", match.group(1)))
    return found


def examples() -> list[tuple[str, str]]:
    return code_blocks("python")


def test_readme_has_examples() -> None:
    assert any(name.startswith("README.md") for name, _ in examples())


@pytest.mark.parametrize(("name", "code"), examples(), ids=[name for name, _ in examples()])
def test_example_runs(
    name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), {"__name__": "__main__"})


def test_readme_gives_exactly_the_two_setup_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("##", 1)[0]
    first_block = setup.split("```console\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == ["make demo", "make test"]


def json_reports() -> list[tuple[str, str]]:
    return [(name, text) for name, text in code_blocks("json") if '"schema_version"' in text]


def test_docs_show_a_whole_report() -> None:
    assert any(name.startswith("docs/report-schema.md") for name, _ in json_reports())


@pytest.mark.parametrize(("name", "text"), json_reports(), ids=[name for name, _ in json_reports()])
def test_json_report_examples_are_valid(name: str, text: str) -> None:
    report = json.loads(text)
    assert validate_report(report) == report["kind"], name
