"""`_core.pyi`, the typed boundary of the compiled extension: few `Any`, each one explained.

`mypy.stubtest` (run by `make lint`) checks the stubs against the compiled module; this checks
what it cannot: that the crawl's classes are typed with torch's and torchscan's own types, and
that the few values that are truly anything say why next to their signature.
"""

from __future__ import annotations

import re

from .conftest import ROOT

STUBS = ROOT / "python" / "torchscan" / "_core.pyi"
#: The most `Any` the stubs may hold (issue 42: at most 10).
MOST_ANY = 10


def _signature_start(lines: list[str], index: int) -> int:
    """The line where the definition holding line ``index`` starts (``def``, ``class`` or field)."""
    while index > 0 and not re.match(r"\s*(def |class |@)", lines[index]):
        index -= 1
    while index > 0 and lines[index - 1].lstrip().startswith("@"):
        index -= 1
    return index


def test_every_any_is_counted_and_explained() -> None:
    lines = STUBS.read_text(encoding="utf-8").splitlines()
    uses = [
        index
        for index, line in enumerate(lines)
        if re.search(r"\bAny\b", line) and not line.startswith("from typing import")
    ]
    assert len(uses) <= MOST_ANY, f"{len(uses)} lines of _core.pyi use Any (at most {MOST_ANY})"
    unexplained = [
        f"line {index + 1}: {lines[index].strip()}"
        for index in uses
        if not lines[_signature_start(lines, index) - 1].lstrip().startswith("#")
    ]
    assert not unexplained, "Any without a comment above its definition:\n" + "\n".join(unexplained)


def test_the_crawl_classes_name_torch_and_report_types() -> None:
    text = STUBS.read_text(encoding="utf-8")
    for expected in (
        "def layers(self) -> list[Layer]: ...",
        "def diagnostics(self) -> list[Diagnostic]: ...",
        "def entry(self) -> Entry: ...",
        "def shape(self) -> torch.Size: ...",
        "def dtype(self) -> torch.dtype: ...",
        "def walk_storage(named_modules: list[tuple[str, torch.nn.Module]]) -> StorageWalk: ...",
    ):
        assert expected in text, expected
