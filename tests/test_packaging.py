"""What the package declares agrees with what is built, tested and documented."""

from __future__ import annotations

import re

import tomllib

from .conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
REPORT_PYPROJECT = tomllib.loads(
    (ROOT / "rust" / "torchscan-report" / "pyproject.toml").read_text("utf-8")
)
CARGO = tomllib.loads((ROOT / "Cargo.toml").read_text("utf-8"))
VERSION = CARGO["workspace"]["package"]["version"]


def _torch_floor() -> str:
    (requirement,) = [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("torch")]
    match = re.fullmatch(r"torch>=(\d+\.\d+)", requirement)
    assert match is not None, requirement
    return match.group(1)


def test_the_declared_torch_floor_is_the_tested_one() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    (tested,) = re.findall(r"^TORCH_FLOOR := (\S+)$", makefile, flags=re.MULTILINE)
    assert tested == f"{_torch_floor()}.0"
    assert "make test-floor" in (ROOT / ".ci" / "run").read_text("utf-8")
    installation = (ROOT / "docs" / "installation.md").read_text("utf-8")
    assert f"`torch>={_torch_floor()}`" in installation


def test_both_packages_carry_the_license_and_the_same_metadata() -> None:
    assert (ROOT / "LICENSE").read_text("utf-8").lstrip().startswith("Apache License")
    assert (ROOT / "rust" / "torchscan-report" / "LICENSE").resolve() == (ROOT / "LICENSE")
    for project in (PYPROJECT["project"], REPORT_PYPROJECT["project"]):
        assert project["license"] == CARGO["workspace"]["package"]["license"] == "Apache-2.0"
        assert project["license-files"] == ["LICENSE"]
        assert project["dynamic"] == ["version"]
        assert set(project["urls"]) == {"Documentation", "Issues", "Changelog", "Source"}
        assert project["authors"] and project["keywords"]
        assert "Development Status :: 4 - Beta" in project["classifiers"]
    assert REPORT_PYPROJECT["tool"]["maturin"]["bindings"] == "bin"
    assert "dependencies" not in REPORT_PYPROJECT["project"]


def test_the_changelog_has_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert "## [Unreleased]" in changelog
    assert re.search(rf"^## \[{re.escape(VERSION)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert f"[{VERSION}]: " in changelog


def test_the_python_versions_of_the_classifiers_follow_requires_python() -> None:
    floor = re.fullmatch(r">=3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert floor is not None
    minors = sorted(
        int(c.rsplit(".", 1)[1])
        for c in PYPROJECT["project"]["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert minors[0] == int(floor.group(1))
    assert minors == list(range(minors[0], minors[-1] + 1))
