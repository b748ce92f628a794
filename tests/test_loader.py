"""The one loader of file references: ``measure``, ``compare``, ``summary`` and the RSS child.

Each file is imported once per process under a name of its own, its folder first on
``sys.path`` while it is imported, and the sibling modules of one file never stand in for
another's (``compare old/bench.py:workload new/bench.py:workload``, each importing its own
``model.py``). ``SystemExit`` or ``KeyboardInterrupt`` at import names the file (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torchscan import _references
from torchscan.cli import main
from torchscan.measure.rss.parent import measure_process_rss

from .conftest import ROOT

SHORT = ("--min-time", "0.01", "--max-time", "0.05")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def restored_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """``sys.path``, the loader's record and the test's modules gone, after the test.

    The modules the test's files added (those of ``tmp_path``, and the files' private modules)
    are taken out of ``sys.modules`` and any they replaced put back; others (torch, imported
    for the first time by a test) stay, as they cannot be imported twice.
    """
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(_references, "_LOADED", _references._Loaded())
    before = dict(sys.modules)
    yield
    folder = str(tmp_path.resolve()) + os.sep
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        mine = os.path.realpath(path).startswith(folder) if path else False
        if mine or _references.is_file_module_name(name):
            del sys.modules[name]
    for name, module in before.items():
        sys.modules.setdefault(name, module)


def main_in_process(
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., tuple[int, str]]:
    """``main(argv)`` in this process: ``(exit code, standard error)``."""

    def run(*argv: str | Path) -> tuple[int, str]:
        try:
            code = main([str(argument) for argument in argv])
        except SystemExit as exit_:  # argparse's own errors (and, before the fix, the user's)
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        return code, capsys.readouterr().err

    return run


@pytest.fixture
def fresh_loader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """See :func:`restored_imports`."""
    yield from restored_imports(monkeypatch, tmp_path)


@pytest.fixture
def in_process(
    capsys: pytest.CaptureFixture[str], fresh_loader: None
) -> Callable[..., tuple[int, str]]:
    return main_in_process(capsys)


def torchscan(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscan", *map(str, args)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        check=False,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


# --- two folders, one module name ----------------------------------------------------------------

MODEL = """
import torch

LAYERS = {layers}


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(LAYERS)]).eval()
"""
BENCH = """
import torch

import model

net = model.make()
x = torch.randn(4, 16)


@torch.inference_mode()
def workload():
    return net(x)
"""


def two_versions(root: Path) -> tuple[Path, Path]:
    """``old/`` and ``new/``: a ``bench.py`` importing its own ``model.py`` (new: 2 layers)."""
    for folder, layers in (("old", 1), ("new", 2)):
        write(root / folder / "model.py", MODEL.format(layers=layers))
        write(root / folder / "bench.py", BENCH)
    return root / "old" / "bench.py", root / "new" / "bench.py"


def test_compare_of_two_folders_measures_each_side_with_its_own_sibling(tmp_path: Path) -> None:
    old, new = two_versions(tmp_path)
    result = torchscan(
        "compare",
        f"{old.relative_to(tmp_path)}:workload",
        f"{new.relative_to(tmp_path)}:workload",
        *SHORT,
        "--metrics",
        "latency,operator_flops",
        "--baseline-json",
        "baseline.json",
        "--candidate-json",
        "candidate.json",
        "--check-json",
        "check.json",
        cwd=tmp_path,
    )
    # The candidate's extra layer changes its output: the check fails (exit 1), files written.
    assert result.returncode == 1, result.stderr
    flops = [
        json.loads((tmp_path / name).read_text(encoding="utf-8"))["metrics"]["operator_flops"][
            "value"
        ]
        for name in ("baseline.json", "candidate.json")
    ]
    assert flops == [2 * 4 * 16 * 16, 2 * 2 * 4 * 16 * 16]
    check = json.loads((tmp_path / "check.json").read_text(encoding="utf-8"))
    assert check["passed"] is False


def test_each_file_gets_its_own_siblings_and_the_first_keeps_the_plain_names(
    tmp_path: Path, fresh_loader: None
) -> None:
    old, new = two_versions(tmp_path.resolve())
    first = _references.import_file(str(old))
    second = _references.import_file(str(new))
    assert first.__name__ != second.__name__
    assert first.model.__file__ == str(old.with_name("model.py"))
    assert second.model.__file__ == str(new.with_name("model.py"))
    assert first.model.LAYERS == 1 and second.model.LAYERS == 2
    # sys.modules keeps the first file's module under the plain name.
    assert sys.modules["model"] is first.model
    # Both folders stay on sys.path, at its end, for imports the workloads make when called.
    assert sys.path[-2:] == [str(old.parent), str(new.parent)]


@pytest.mark.parametrize("module_first", [True, False])
def test_a_module_reference_and_a_file_reference_each_import_their_own_sibling(
    tmp_path: Path, fresh_loader: None, monkeypatch: pytest.MonkeyPatch, module_first: bool
) -> None:
    # compare bench:workload new/bench.py:workload, run in old/ (which python -m puts on
    # sys.path): each bench imports the model.py of its own folder, in either order.
    old, new = two_versions(tmp_path.resolve())
    monkeypatch.syspath_prepend(str(old.parent))
    if module_first:
        by_name = _references.import_module("bench")
        by_file = _references.import_file(str(new))
    else:
        by_file = _references.import_file(str(new))
        by_name = _references.import_module("bench")
    assert by_name.model.__file__ == str(old.with_name("model.py"))
    assert by_file.model.__file__ == str(new.with_name("model.py"))
    assert (by_name.model.LAYERS, by_file.model.LAYERS) == (1, 2)


LAZY = """
def workload():
    import model

    return model.LAYERS


def workload_from():
    from model import LAYERS

    return LAYERS


def workload_submodule():
    import pkg.part

    return pkg.part.VALUE
"""


def test_imports_inside_the_workload_find_the_files_own_siblings(
    tmp_path: Path, fresh_loader: None
) -> None:
    # The workloads import their siblings only when called, after both files are imported.
    for folder, layers in (("old", 1), ("new", 2)):
        write(tmp_path / folder / "model.py", f"LAYERS = {layers}\n")
        write(tmp_path / folder / "pkg" / "__init__.py", "")
        write(tmp_path / folder / "pkg" / "part.py", f"VALUE = {layers * 10}\n")
        write(tmp_path / folder / "lazy.py", LAZY)
    old = _references.import_file(str(tmp_path / "old" / "lazy.py"))
    new = _references.import_file(str(tmp_path / "new" / "lazy.py"))
    for _ in range(2):  # the first call imports, the second finds the folder's record
        assert (old.workload(), new.workload()) == (1, 2)
        assert (new.workload_from(), old.workload_from()) == (2, 1)
        assert (new.workload_submodule(), old.workload_submodule()) == (20, 10)
    # Other names are imported as import does.
    assert sys.modules["model"].LAYERS == 1


def test_a_second_file_of_a_folder_shares_that_folders_siblings(
    tmp_path: Path, fresh_loader: None
) -> None:
    old, new = two_versions(tmp_path)
    other = write(tmp_path / "new" / "other.py", "import model\n")
    write(
        tmp_path / "new" / "model.py",
        MODEL.format(layers=2) + "\nimport builtins\nbuiltins.torchscan_model_imports += 1\n",
    )
    import builtins

    builtins.torchscan_model_imports = 0  # type: ignore[attr-defined]
    try:
        _references.import_file(str(old))
        second = _references.import_file(str(new))
        third = _references.import_file(str(other))
        assert third.model is second.model
        assert builtins.torchscan_model_imports == 1  # type: ignore[attr-defined]
    finally:
        del builtins.torchscan_model_imports  # type: ignore[attr-defined]


def test_a_sibling_missing_from_the_second_folder_is_not_taken_from_the_first(
    tmp_path: Path, fresh_loader: None
) -> None:
    old, _ = two_versions(tmp_path)
    lone = write(tmp_path / "lone" / "bench.py", BENCH)
    _references.import_file(str(old))
    # Run as a script, lone/bench.py could not import model: neither can it here.
    with pytest.raises(ModuleNotFoundError, match="No module named 'model'"):
        _references.import_file(str(lone))
    assert sys.modules["model"].LAYERS == 1  # the first file's module is back


def test_packages_of_the_same_name_stay_apart_with_their_submodules(
    tmp_path: Path, fresh_loader: None
) -> None:
    for folder, value in (("a", 1), ("b", 2)):
        write(tmp_path / folder / "pkg" / "__init__.py", "")
        write(tmp_path / folder / "pkg" / "layers.py", f"VALUE = {value}\n")
        write(tmp_path / folder / "bench.py", "from pkg.layers import VALUE\n")
    first = _references.import_file(str(tmp_path / "a" / "bench.py"))
    second = _references.import_file(str(tmp_path / "b" / "bench.py"))
    assert (first.VALUE, second.VALUE) == (1, 2)
    assert sys.modules["pkg.layers"].VALUE == 1


def test_a_file_is_imported_once_under_a_name_of_its_resolved_path(
    tmp_path: Path, fresh_loader: None
) -> None:
    counter = tmp_path / "imports.txt"
    bench = write(
        tmp_path / "bench.py",
        f"with open({str(counter)!r}, 'a') as log:\n    log.write('imported\\n')\n",
    )
    link = tmp_path / "link.py"
    link.symlink_to(bench)
    module = _references.import_file(str(bench))
    assert _references.import_file(str(link)) is module
    assert _references.import_file(f"{tmp_path}/./bench.py") is module
    assert counter.read_text(encoding="utf-8") == "imported\n"
    assert module.__name__ == _references.file_module_name(bench)
    assert _references.is_file_module_name(module.__name__)
    # Another folder's bench.py has another name.
    other = write(tmp_path / "other" / "bench.py", "")
    assert _references.file_module_name(other) != module.__name__


VARIANTS = """
import torch

with open({log!r}, "a") as log:
    log.write("imported\\n")

net = torch.nn.Linear(16, 16).eval()  # randomly initialised: one model for both functions
x = torch.randn(4, 16)


@torch.inference_mode()
def base():
    return net(x)


@torch.inference_mode()
def fast():
    return torch.nn.functional.linear(x, net.weight, net.bias)
"""


def test_two_references_into_one_file_share_its_module(
    tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    log = tmp_path / "imports.txt"
    variants = write(tmp_path / "variants.py", VARIANTS.format(log=str(log)))
    check = tmp_path / "check.json"
    code, stderr = in_process(
        "compare",
        f"{variants}:base",
        f"{variants}:fast",
        *SHORT,
        "--metrics",
        "latency",
        "--check-json",
        check,
    )
    assert code == 0, stderr
    assert json.loads(check.read_text(encoding="utf-8"))["passed"] is True
    assert log.read_text(encoding="utf-8") == "imported\n"


# --- SystemExit and KeyboardInterrupt ------------------------------------------------------------

EXITING = """
import sys


def workload():
    return 1


def main():
    return 0


sys.exit(main())
"""
INTERRUPTED = """
def workload():
    return 1


raise KeyboardInterrupt
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            EXITING,
            "importing {path} raised SystemExit(0) at exiting.py, line 13: its top level exits "
            "(an unguarded sys.exit() or exit()?), so it defines nothing to run; put the "
            "script's own work under 'if __name__ == \"__main__\":' so that importing it only "
            "defines the workload",
        ),
        (INTERRUPTED, "importing {path} was interrupted (KeyboardInterrupt at exiting.py, line 6)"),
    ],
    ids=["SystemExit", "KeyboardInterrupt"],
)
@pytest.mark.parametrize("command", ["measure", "summary", "compare"])
def test_an_exit_at_import_is_a_usage_error_naming_the_file(
    tmp_path: Path,
    in_process: Callable[..., tuple[int, str]],
    text: str,
    message: str,
    command: str,
) -> None:
    path = write(tmp_path / "exiting.py", text)
    argv: tuple[str, ...] = {
        "measure": ("measure", f"{path}:workload", *SHORT),
        "summary": ("summary", f"{path}:workload", "--input-shape", "4"),
        "compare": ("compare", f"{path}:workload", f"{path}:workload", *SHORT),
    }[command]
    assert in_process(*argv) == (
        2,
        f"python -m torchscan {command}: error: {message.format(path=path)}\n",
    )


def test_an_exit_of_a_module_by_name_names_the_module(
    tmp_path: Path, in_process: Callable[..., tuple[int, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "exiting_by_name.py", EXITING)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, stderr = in_process("measure", "exiting_by_name:workload", *SHORT)
    assert code == 2
    assert stderr.startswith(
        "python -m torchscan measure: error: importing exiting_by_name raised SystemExit(0) at "
        "exiting_by_name.py, line 13:"
    )


def test_sys_exit_as_the_workload_or_the_model_is_an_error_not_a_silent_success(
    in_process: Callable[..., tuple[int, str]],
) -> None:
    code, stderr = in_process("measure", "sys:exit", *SHORT, "--metrics", "latency")
    assert code == 1
    assert stderr.splitlines()[-1] == (
        "python -m torchscan measure: error: the workload sys:exit raised SystemExit(None) "
        "while it ran (it called sys.exit() or exit()): the code measured or analysed must "
        "return; nothing was written"
    )
    code, stderr = in_process("summary", "sys:exit", "--input-shape", "4")
    assert code == 1
    assert stderr.splitlines()[-1].startswith(
        "python -m torchscan summary: error: the model sys:exit raised SystemExit(None) while it "
        "ran"
    )


def test_a_workload_that_exits_while_measured_shows_where_and_exits_one(
    tmp_path: Path, in_process: Callable[..., tuple[int, str]]
) -> None:
    bench = write(
        tmp_path / "bench.py",
        """
        import sys


        def workload():
            sys.exit(3)
        """,
    )
    out = tmp_path / "out.json"
    code, stderr = in_process(
        "measure", f"{bench}:workload", *SHORT, "--metrics", "latency", "--json", out
    )
    assert code == 1
    assert f'File "{bench}", line 6, in workload' in stderr
    assert stderr.splitlines()[-1] == (
        f"python -m torchscan measure: error: the workload {bench}:workload raised "
        "SystemExit(3) while it ran (it called sys.exit() or exit()): the code measured or "
        "analysed must return; nothing was written"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (EXITING, "importing exiting.py raised SystemExit(0) at exiting.py, line 13"),
        (INTERRUPTED, "importing exiting.py was interrupted (KeyboardInterrupt at exiting.py"),
    ],
    ids=["SystemExit", "KeyboardInterrupt"],
)
def test_the_rss_child_names_the_file_that_exits_at_import(
    tmp_path: Path, text: str, said: str
) -> None:
    path = write(tmp_path / "exiting.py", text)
    result = measure_process_rss(f"{path}:workload", timeout_s=60)
    assert result.baseline["status"] == "unavailable"
    [diagnostic] = result.diagnostics
    assert diagnostic["code"] == "workload_not_importable"
    assert said in diagnostic["message"]
    assert str(tmp_path) not in diagnostic["message"]  # reports carry no directories


def test_the_rss_child_imports_the_file_as_the_parent_did(
    tmp_path: Path, fresh_loader: None
) -> None:
    old, _ = two_versions(tmp_path)
    module = _references.import_file(str(old))
    # A function of the file, loaded by the one loader: the child loads the same file under the
    # same private name, its sibling model.py from its own folder, and the fingerprints agree.
    result = measure_process_rss(module.workload, timeout_s=120)
    assert result.baseline["status"] == "complete", result.diagnostics
