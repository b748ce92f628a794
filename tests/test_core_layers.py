"""The Rust core stays without import circles or giant files (docs/architecture.md's layout).

A module of `rust/torchscan-core/src` uses another through `crate::<module>` paths; the graph of
those uses among the top-level modules (code only: doc comments and test modules left out) has
no circle, and no source file of the core is over 900 lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import ROOT

CORE = ROOT / "rust" / "torchscan-core" / "src"
MOST_LINES = 900
#: Compiled only for fuzzing or tests: outside the library's layers.
OUTSIDE = {"lib", "fuzz_targets"}


def _top(path: Path) -> str:
    return path.relative_to(CORE).parts[0].removesuffix(".rs")


def _code(path: Path) -> str:
    text = path.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def _uses() -> dict[str, set[str]]:
    modules = {_top(path) for path in CORE.iterdir()} - OUTSIDE
    uses: dict[str, set[str]] = {module: set() for module in modules}
    for path in CORE.rglob("*.rs"):
        top = _top(path)
        if top in OUTSIDE or path.name == "tests.rs":
            continue
        for used in re.findall(r"crate::([a-z_]+)", _code(path)):
            if used in modules and used != top:
                uses[top].add(used)
    return uses


def _circles(uses: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for used in sorted(uses[module]):
            if used in path:
                found.append([*path[path.index(used) :], used])
            elif used not in done:
                visit(used, [*path, used])
        done.add(module)

    for module in sorted(uses):
        if module not in done:
            visit(module, [module])
    return found


def test_the_core_modules_import_without_circles() -> None:
    uses = _uses()
    assert {"schema", "read", "validate", "format", "summary", "render"} <= set(uses)
    assert "schema" in uses["read"]  # the graph is read at all
    assert _circles(uses) == []


def test_a_circle_is_found() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_core_file_is_over_900_lines() -> None:
    giants = {
        str(path.relative_to(CORE)): lines
        for path in sorted(CORE.rglob("*.rs"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES
    }
    assert giants == {}
