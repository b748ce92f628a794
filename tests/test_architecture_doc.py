"""docs/architecture.md's layout names the package as it is: no module it names is gone, and no
module of the package is missing from it."""

from __future__ import annotations

import re

from .conftest import ROOT

DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "python" / "torchscan"


def _section(heading: str, start: str, end: str) -> str:
    """The lines of the layout block from the one starting with ``start`` to the one before
    the one starting with ``end``."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split(heading, 1)[1].split("```", 2)[1]
    lines = block.splitlines()
    first = next(index for index, line in enumerate(lines) if line.startswith(start))
    last = next(index for index, line in enumerate(lines) if line.startswith(end))
    return "\n".join(lines[first:last])


def _named_files() -> set[str]:
    section = _section("## Layout", "python/torchscan/", "tests/")
    # A reference such as `file.py:attr` names no module.
    return set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*\.py)\b(?!:)", section))


def _package_files() -> dict[str, list[str]]:
    """Each module file of the package by its file name, with where it lies."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        found.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    return found


def test_every_module_of_the_package_is_named() -> None:
    named = _named_files()
    missing = [
        where for name, places in _package_files().items() if name not in named for where in places
    ]
    assert not missing, f"docs/architecture.md's layout does not name: {missing}"


def test_every_module_named_exists() -> None:
    files = _package_files()
    gone = sorted(name for name in _named_files() - {"__init__.py"} if name not in files)
    assert not gone, f"docs/architecture.md's layout names modules that do not exist: {gone}"


def test_every_folder_named_exists() -> None:
    section = _section("## Layout", "python/torchscan/", "tests/")
    folders = set(re.findall(r"(?<![\w/.])([a-z_]+)/ \(", section))
    assert folders, "no folder found in the layout"
    existing = {path.name for path in PACKAGE.rglob("*") if path.is_dir()}
    assert folders <= existing, sorted(folders - existing)
    packages = {
        path.name
        for path in PACKAGE.rglob("*")
        if path.is_dir() and (path / "__init__.py").exists()
    }
    assert packages <= folders, f"packages missing from the layout: {sorted(packages - folders)}"
