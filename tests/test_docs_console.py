"""Console blocks of the docs that show output are checked against real output.

A ```console block whose ``$ `` commands are followed by output lines is run, command by command,
in a fresh folder, and what each prints (standard output and standard error, as a terminal shows
them) must be the lines shown; a line ``...`` stands for any number of lines. The line just before
such a block says how:

- ``<!-- console-check: NAME=SOURCE ... -->`` runs it, after putting each ``NAME`` in the folder:
  ``SOURCE`` is a path under ``tests/fixtures``, or one of the generated inputs of
  :data:`GENERATED` (``@latin1``, ``@directory``, ``@mode-shapes``, ``@memory-broken``, ``@bench``,
  ``@model``);
- ``<!-- console-not-checked: REASON -->`` leaves it, with the reason (a device or disk this
  machine cannot offer, a synopsis with placeholders).

A block with output and neither line fails the test, so a new example cannot go unchecked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^(?P<before>[^\n]*)\n```console\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)
_CHECK = re.compile(r"^<!-- console-check:(?P<files>[^>]*)-->$")
_NOT_CHECKED = re.compile(r"^<!-- console-not-checked: (?P<reason>.+) -->$")


def _latin1(path: Path) -> None:
    path.write_bytes('{"kind": "caf\xe9"}\n'.encode("latin-1"))


def _directory(path: Path) -> None:
    path.mkdir()


def _mode_shapes(path: Path) -> None:
    report = json.loads((FIXTURES / "reports" / "analysis_small_cnn.json").read_text("utf-8"))
    report["mode"] = "shapes"
    path.write_text(json.dumps(report), encoding="utf-8")


def _memory_broken(path: Path) -> None:
    report = json.loads((FIXTURES / "reports" / "peak_memory_cpu.json").read_text("utf-8"))
    report["tensor_memory_peak"].update(unit="MiB", value=0.09375, known_value=0.09375)
    report["baseline"].update(value=81920, known_value=81920)
    report["allocator_reserved_peak"]["reason"] = None
    path.write_text(json.dumps(report), encoding="utf-8")


def _bench(path: Path) -> None:
    path.write_text(
        "import torch\n\nmodel = torch.nn.Linear(8, 8)\nx = torch.randn(4, 8)\n\n\n"
        "def workload():\n    return model(x)\n",
        encoding="utf-8",
    )


#: The model file of the ``python -m torchscan summary`` examples, shown as it is in docs/cli.md.
MODEL = """\
import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def make_model() -> nn.Module:
    return SmallCNN()
"""


def _model(path: Path) -> None:
    path.write_text(MODEL, encoding="utf-8")


GENERATED: dict[str, Callable[[Path], None]] = {
    "@latin1": _latin1,
    "@directory": _directory,
    "@mode-shapes": _mode_shapes,
    "@memory-broken": _memory_broken,
    "@bench": _bench,
    "@model": _model,
}


@dataclass
class Block:
    name: str
    before: str
    body: str

    @property
    def commands(self) -> list[tuple[str, list[str]]]:
        """Each ``$`` command (continuation lines joined) with the output lines shown after it."""
        found: list[tuple[str, list[str]]] = []
        lines = self.body.splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            if not line.startswith("$ "):
                if not found:
                    raise AssertionError(f"{self.name}: output before any command: {line!r}")
                found[-1][1].append(line)
                index += 1
                continue
            command = line[2:]
            while command.endswith("\\") and index + 1 < len(lines):
                index += 1
                command = command[:-1] + " " + lines[index].strip()
            found.append((command, []))
            index += 1
        return found

    @property
    def shows_output(self) -> bool:
        return any(output for _, output in self.commands) if "$ " in self.body else False


def _blocks() -> list[Block]:
    blocks = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for index, match in enumerate(_BLOCK.finditer(text)):
            name = f"{document.relative_to(ROOT)}#console-{index}"
            blocks.append(Block(name, match.group("before").strip(), match.group("body")))
    return blocks


BLOCKS = _blocks()
CHECKED = [block for block in BLOCKS if _CHECK.match(block.before)]


def test_every_block_with_output_is_checked_or_says_why_not() -> None:
    unmarked = [
        block.name
        for block in BLOCKS
        if block.shows_output
        and not _CHECK.match(block.before)
        and not _NOT_CHECKED.match(block.before)
    ]
    assert unmarked == []
    assert len(CHECKED) >= 8


def _matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is ``shown``, where a ``...`` line stands for any lines."""
    if not shown:
        return not printed
    if shown[0].strip() == "...":
        return any(_matches(shown[1:], printed[skip:]) for skip in range(len(printed) + 1))
    return bool(printed) and printed[0] == shown[0] and _matches(shown[1:], printed[1:])


def _setup(block: Block, folder: Path) -> None:
    match = _CHECK.match(block.before)
    assert match is not None
    for item in match.group("files").split():
        name, source = item.split("=", 1)
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.startswith("@"):
            GENERATED[source](target)
        else:
            target.write_bytes((FIXTURES / source).read_bytes())


@pytest.mark.parametrize("block", CHECKED, ids=[block.name for block in CHECKED])
def test_the_block_shows_what_the_commands_print(block: Block, tmp_path: Path) -> None:
    _setup(block, tmp_path)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TORCHSCAN_MAX_INPUT_BYTES", None)
    env["COLUMNS"] = "100"
    # One shell for the block, so that `echo $?` sees the command before it; a marker line
    # separates what each command printed.
    marker = "@@torchscan-docs-command@@"
    script = (
        "".join(
            # The marker keeps the exit status of the command before it, for `echo $?`.
            f'status=$?; echo {marker}; echo "{marker}$status" >&2; (exit $status); '
            f"{command} 2>&1\n"
            for command, _ in block.commands
        )
        + 'echo "'
        + marker
        + '$?" >&2\n'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    statuses = [
        int(line[len(marker) :]) for line in done.stderr.splitlines() if line.startswith(marker)
    ]
    assert [line for line in done.stderr.splitlines() if not line.startswith(marker)] == []
    printed = done.stdout.split(f"{marker}\n")[1:]
    assert len(printed) == len(block.commands)
    for (command, shown), output, status in zip(block.commands, printed, statuses[1:], strict=True):
        lines = output.splitlines()
        if not shown:
            # Shown without output: it runs, succeeds, and what it prints is not shown.
            assert status == 0, f"$ {command}\nexit {status}:\n{lines}"
            continue
        assert _matches(shown, lines), f"$ {command}\nshown:\n{shown}\nprinted:\n{lines}"
