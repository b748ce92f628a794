"""docs/guarantees.md names the tests that show each promise: every one must exist."""

from __future__ import annotations

import re

from .conftest import ROOT

PAGE = ROOT / "docs" / "guarantees.md"
# `FILE::TEST`, FILE a .py or .rs file of the repository.
REFERENCE = re.compile(r"`((?:tests|rust)/[\w/.-]+\.(?:py|rs))::(\w+)`")


def references() -> list[tuple[str, str]]:
    return REFERENCE.findall(PAGE.read_text(encoding="utf-8"))


def test_the_page_names_tests_of_python_and_rust() -> None:
    files = {file for file, _ in references()}
    assert any(file.endswith(".py") for file in files)
    assert any(file.endswith(".rs") for file in files)
    assert len(references()) >= 60


def test_every_test_named_on_the_page_exists() -> None:
    missing = []
    for file, name in references():
        source = (ROOT / file).read_text(encoding="utf-8") if (ROOT / file).exists() else ""
        if file.endswith(".py"):
            defined = re.search(rf"^(?:async )?def {name}\(", source, re.MULTILINE)
        else:
            # A Rust test: a function under #[test] (attributes may sit between them).
            defined = re.search(rf"#\[test\][^\n]*\n(?:\s*#\[[^\n]*\n)*\s*fn {name}\(", source)
        if defined is None:
            missing.append(f"{file}::{name}")
    assert missing == []


def test_the_page_is_linked_from_the_readme() -> None:
    assert "docs/guarantees.md" in (ROOT / "README.md").read_text(encoding="utf-8")
