"""The process-RSS pass: a fresh child process imports the workload by reference and reports RSS."""

from __future__ import annotations

import _thread
import contextlib
import functools
import importlib
import importlib.util
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from types import MethodType, ModuleType

import psutil
import pytest

from torchscan.errors import InvalidArgumentError
from torchscan.measure.rss.parent import (
    SCOPE_BASELINE,
    SCOPE_LIFETIME,
    SCOPE_WORKLOAD,
    RssResult,
    _ChildRun,
    _interpret,
    _stop_grace_s,
    measure_process_rss,
    workload_reference,
)

MIB = 1 << 20
LINUX = sys.platform.startswith("linux")

ALLOCATE_64_MIB = """
    import os
    import sys

    def allocate():
        block = bytearray(64 << 20)
        block[::4096] = b"\\1" * len(block[::4096])  # touch every page, so it is resident
        print("printed to stdout by the workload")
        os.write(1, b"written to fd 1 by the workload\\n")
        print("printed to stderr by the workload", file=sys.stderr)
        return len(block)

    if __name__ == "__main__":
        raise SystemExit("the main block must not run in the child")
"""


def write_module(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def load_from_file(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import ``path`` under ``name`` without putting its folder on sys.path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def assert_unavailable(result: RssResult, reason: str, code: str) -> str:
    for metric in (result.baseline, result.workload_peak, result.lifetime_peak):
        assert metric["status"] == "unavailable"
        assert metric["value"] is None and metric["known_value"] is None
        assert metric["reason"] == reason
        assert metric["unit"] == "B"
    assert [d["code"] for d in result.diagnostics] == [code]
    diagnostic = result.diagnostics[0]
    assert diagnostic["severity"] == "error"
    assert diagnostic["metric"] == "process_rss"
    return diagnostic["message"]


def workload_increment_b(result: RssResult) -> float:
    """Workload peak minus baseline, both complete."""
    peak_b, baseline_b = result.workload_peak["value"], result.baseline["value"]
    assert peak_b is not None and baseline_b is not None, result.diagnostics
    return peak_b - baseline_b


def assert_gone(pid: int) -> None:
    """``pid`` no longer runs: reaped, or at most a zombie waiting for init to reap it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")


def wait_for_file(path: Path, timeout_s: float = 10) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} was not written")


# --- measuring ------------------------------------------------------------------------------------


def test_path_reference_measures_a_64_mib_allocation(tmp_path: Path) -> None:
    path = write_module(tmp_path, "allocating", ALLOCATE_64_MIB)
    result = measure_process_rss(f"{path}:allocate", calls=2)

    baseline, workload, lifetime = result.baseline, result.workload_peak, result.lifetime_peak
    for metric, scope in ((baseline, SCOPE_BASELINE), (workload, SCOPE_WORKLOAD)):
        assert metric["status"] == "complete"
        assert metric["scope"] == scope
        assert metric["unit"] == "B"
    assert lifetime["scope"] == SCOPE_LIFETIME
    assert result.diagnostics == []
    assert baseline["value"] is not None and workload["value"] is not None
    assert lifetime["value"] is not None
    assert workload["value"] - baseline["value"] >= 60 * MIB
    assert lifetime["value"] >= workload["value"] >= baseline["value"]
    assert "2 calls" in workload["method"]
    if LINUX:
        assert "VmHWM" in workload["method"] and "clear_refs" in workload["method"]
        assert "os.wait4" in lifetime["method"]


def test_function_object_reference_by_module_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "ts_child_importable", ALLOCATE_64_MIB)
    # The child gets this process's sys.path, so a folder added at run time works there too.
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ts_child_importable")
    try:
        assert workload_reference(module.allocate) == "ts_child_importable:allocate"
        result = measure_process_rss(module.allocate)
    finally:
        sys.modules.pop("ts_child_importable", None)
    assert result.diagnostics == []
    assert result.workload_peak["value"] is not None and result.baseline["value"] is not None
    assert result.workload_peak["value"] - result.baseline["value"] >= 60 * MIB


def test_function_object_from_a_file_loaded_module_uses_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_module(tmp_path, "loaded_by_path", ALLOCATE_64_MIB)
    module = load_from_file(path, "ts_child_private_name", monkeypatch)
    assert workload_reference(module.allocate) == f"{path}:allocate"
    result = measure_process_rss(module.allocate)
    assert result.workload_peak["status"] == "complete"
    assert result.diagnostics == []


def test_torch_import_is_in_the_baseline_and_the_tensor_in_the_peak(tmp_path: Path) -> None:
    path = write_module(
        tmp_path,
        "torch_workload",
        """
        import torch

        def fill():
            tensor = torch.empty(16 << 20, dtype=torch.float32)  # 64 MiB
            tensor.fill_(1.0)
            return float(tensor[-1])
        """,
    )
    result = measure_process_rss(f"{path}:fill", threads=1)
    assert result.diagnostics == []
    baseline, workload = result.baseline["value"], result.workload_peak["value"]
    lifetime = result.lifetime_peak["value"]
    assert baseline is not None and workload is not None and lifetime is not None
    assert baseline > 50 * MIB  # `import torch` alone is a few hundred MiB
    assert workload - baseline >= 60 * MIB
    assert lifetime >= workload >= baseline


def test_noisy_workload_output_does_not_break_the_result(tmp_path: Path) -> None:
    path = write_module(
        tmp_path,
        "noisy",
        """
        import os
        import sys

        print("{\\"protocol\\": 1, \\"ok\\": false, \\"stage\\": \\"import\\"}")  # at import

        def noisy():
            for index in range(2000):
                print("stdout line", index)
                print("stderr line", index, file=sys.stderr)
            os.write(1, b"{not json")
        """,
    )
    result = measure_process_rss(f"{path}:noisy")
    assert result.diagnostics == []
    assert result.baseline["status"] == "complete"


def test_sampling_fallback_sees_a_held_allocation(tmp_path: Path) -> None:
    # Where VmHWM cannot be reset (macOS, a read-only /proc) the child samples RSS with psutil;
    # force that path by disabling the reset in a child started by hand.
    path = write_module(
        tmp_path,
        "holding",
        """
        import time

        def hold():
            block = bytearray(64 << 20)
            block[::4096] = b"\\1" * len(block[::4096])
            time.sleep(0.1)  # held long enough for ~1 ms samples to see it
            return len(block)
        """,
    )
    code = (
        "import os, sys, torchscan.measure.rss.worker as child\n"
        "child._reset_high_water_mark = lambda: False\n"
        "status = child.main(sys.argv[1:])\n"
        "sys.stdout.flush(); os._exit(status)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, f"{path}:hold", "--calls", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    payload = json.loads(completed.stdout)
    assert payload["ok"] is True and payload["peak_method"] == "psutil"
    assert payload["workload_peak_b"] - payload["baseline_b"] >= 60 * MIB

    run = _ChildRun(wait_status=0, maxrss_b=None, stdout=bytearray(completed.stdout.encode()))
    result = _interpret(run, timeout_s=60, calls=1)
    assert "psutil RSS sampled every ~1 ms" in result.workload_peak["method"]
    assert result.lifetime_peak["value"] == max(
        payload["workload_peak_b"], payload["setup_peak_b"], payload["baseline_b"]
    )


# --- not importable, failures, timeouts ---------------------------------------------------------


def test_lambda_is_not_importable() -> None:
    result = measure_process_rss(lambda: None)
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert ".<lambda>' is a lambda, which has no name to import it by" in message
    assert "module-level function" in message
    assert "path/to/file.py:function" in message


def test_missing_module_or_attribute_is_not_importable(tmp_path: Path) -> None:
    result = measure_process_rss("ts_child_no_such_module:run")
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert "ModuleNotFoundError" in message and "ts_child_no_such_module" in message

    path = write_module(tmp_path, "without_attribute", "VALUE = 1\n")
    result = measure_process_rss(f"{path}:missing")
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert "AttributeError" in message and "missing" in message


def test_raising_workload_fails_with_the_exception_text(tmp_path: Path) -> None:
    path = write_module(
        tmp_path,
        "raising",
        """
        def explode():
            raise ValueError("the workload exploded: 4c1f")
        """,
    )
    result = measure_process_rss(f"{path}:explode")
    message = assert_unavailable(
        result, "child process failed (exit code 1)", "child_process_failed"
    )
    assert "ValueError: the workload exploded: 4c1f" in message
    assert "Traceback" in message  # the tail of the child's stderr
    # Reports carry no file paths: traceback paths keep their file name only.
    assert str(tmp_path) not in message
    assert '"raising.py"' in message


def test_exit_code_and_signal_are_reported(tmp_path: Path) -> None:
    path = write_module(
        tmp_path,
        "exiting",
        """
        import os
        import signal
        import sys

        def exit_three():
            print("about to exit", file=sys.stderr, flush=True)
            os._exit(3)

        def killed():
            os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    result = measure_process_rss(f"{path}:exit_three")
    message = assert_unavailable(
        result, "child process failed (exit code 3)", "child_process_failed"
    )
    assert "about to exit" in message

    result = measure_process_rss(f"{path}:killed")
    message = assert_unavailable(
        result, "child process failed (killed by signal SIGKILL)", "child_process_failed"
    )
    assert "out-of-memory" in message


def test_stop_grace_is_a_quarter_of_the_timeout_within_bounds() -> None:
    # How long the supervisor gets to sweep once asked to stop, before the caller kills the tree.
    assert [_stop_grace_s(t) for t in (0.001, 1, 4, 8, 40, 120, 86400)] == [
        1.0,
        1.0,
        1.0,
        2.0,
        10.0,
        10.0,
        10.0,
    ]


def test_timeout_kills_the_child_and_its_children(tmp_path: Path) -> None:
    # Generous: the child starts in a fraction of a second, and writes its pid file only once its
    # own child runs, so the test knows that the timeout struck a running tree.
    timeout_s = 10.0
    child_pid_file, grandchild_pid_file = tmp_path / "child.pid", tmp_path / "grandchild.pid"
    path = write_module(
        tmp_path,
        "sleeping",
        f"""
        import os
        import subprocess
        import sys
        import time

        def sleep():
            grandchild = subprocess.Popen(["sleep", "{timeout_s * 10:g}"])
            with open({str(grandchild_pid_file)!r}, "w") as handle:
                handle.write(str(grandchild.pid))
            with open({str(child_pid_file)!r}, "w") as handle:
                handle.write(str(os.getpid()))
            print("sleeping now")
            while True:
                time.sleep(1)
        """,
    )
    grandchild_pid: int | None = None
    try:
        started = time.monotonic()
        result = measure_process_rss(f"{path}:sleep", timeout_s=timeout_s)
        elapsed_s = time.monotonic() - started
        message = assert_unavailable(
            result, f"child process timed out after {timeout_s:g}s", "child_process_timeout"
        )
        # The child was ready (both pid files) before the timeout struck.
        child_pid = int(child_pid_file.read_text())
        grandchild_pid = int(grandchild_pid_file.read_text())
        assert "sleeping now" in message
        # A bound, not a timing: the timeout, the supervisor's grace and the caller's kill.
        assert timeout_s <= elapsed_s < timeout_s + 2 * _stop_grace_s(timeout_s) + 30
        with pytest.raises(ChildProcessError):
            os.waitpid(child_pid, os.WNOHANG)  # not this process's child: the supervisor's
        # Reaped by the supervisor before the call returned: no process, not even a zombie.
        assert not psutil.pid_exists(child_pid)
        assert not psutil.pid_exists(grandchild_pid)
    finally:
        _kill_if_sleeping(grandchild_pid, f"{timeout_s * 10:g}")


def _kill_if_sleeping(pid: int | None, seconds: str) -> None:
    """Never leave the test's ``sleep`` behind (and never kill another process of that pid)."""
    if pid is None:
        return
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        if process.cmdline() == ["sleep", seconds]:
            process.kill()


def test_keyboard_interrupt_kills_the_child(tmp_path: Path) -> None:
    timeout_s = 120.0  # the call's own limit: every wait below is derived from it
    pid_file = tmp_path / "child.pid"
    path = write_module(
        tmp_path,
        "interrupted",
        f"""
        import os
        import time

        def sleep():
            with open({str(pid_file)!r}, "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep({timeout_s * 2})
        """,
    )
    started = threading.Event()

    def interrupt_when_started() -> None:
        # The child writes its pid well before the call's timeout; interrupting then is certain
        # to land inside the call.
        wait_for_file(pid_file, timeout_s=timeout_s / 2)
        started.set()
        _thread.interrupt_main()

    # interrupt_main() only raises where SIGINT has a Python handler: a background job (or
    # `trap "" INT`) starts Python with SIGINT ignored, so install the default handler here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter = threading.Thread(target=interrupt_when_started, daemon=True)
    try:
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            measure_process_rss(f"{path}:sleep", timeout_s=timeout_s)
    finally:
        interrupter.join(timeout=timeout_s)
        signal.signal(signal.SIGINT, previous)
    assert started.is_set()
    child_pid = int(pid_file.read_text())
    # The supervisor, not this process, was the child's parent, and it reaped it before the
    # call returned.
    assert not psutil.pid_exists(child_pid)


# --- references -----------------------------------------------------------------------------------


def module_level_function() -> None:
    return None


class Workload:
    def __call__(self) -> None:
        return None

    def method(self) -> None:
        return None

    @classmethod
    def build(cls) -> Workload:
        return cls()


CALLABLE = Workload()


def test_workload_reference_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert workload_reference("package.module:function") == "package.module:function"
    assert workload_reference("package.module:Class.method") == "package.module:Class.method"
    assert workload_reference("bench/run.py:main") == f"{tmp_path / 'bench' / 'run.py'}:main"
    assert workload_reference("/abs/run.py:main") == "/abs/run.py:main"
    for malformed in ("no_colon", "module:", ":function", "mod ule:function", "module:1x", ""):
        assert workload_reference(malformed) is None, malformed

    def nested() -> None:
        return None

    assert workload_reference(lambda: None) is None
    assert workload_reference(nested) is None
    assert workload_reference(functools.partial(module_level_function)) is None
    assert workload_reference(Workload().method) is None  # bound to an unnamed object
    assert workload_reference(Workload()) is None
    assert workload_reference(42) is None

    here = __name__
    assert workload_reference(module_level_function) == f"{here}:module_level_function"
    assert workload_reference(Workload.build) == f"{here}:Workload.build"
    assert workload_reference(CALLABLE) == f"{here}:CALLABLE"
    assert workload_reference(CALLABLE.method) == f"{here}:CALLABLE.method"
    assert workload_reference(len) == "builtins:len"


def test_script_main_functions_are_not_referenced(tmp_path: Path) -> None:
    script = write_module(
        tmp_path,
        "script",
        """
        from torchscan.measure.rss.parent import measure_process_rss, workload_reference

        def run():
            return None

        class Runner:
            def __call__(self):
                return None

        RUNNER = Runner()

        if __name__ == "__main__":
            print(workload_reference(run), workload_reference(RUNNER))
            print(workload_reference(RUNNER.__call__), workload_reference(Runner))
            for workload in (run, RUNNER, RUNNER.__call__, Runner):
                print(measure_process_rss(workload).diagnostics[0]["message"].split(". ")[0])
        """,
    )
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=60
    )
    lines = completed.stdout.splitlines()
    assert lines[:2] == ["None None"] * 2
    why = [line.partition(" again, and ")[2] for line in lines[2:]]
    assert why == [
        "'run' is defined in the script being run (__main__)",
        "the Runner object given is bound to a name in the script being run (__main__) only",
        "'Runner.__call__' is defined in the script being run (__main__)",
        "'Runner' is defined in the script being run (__main__)",
    ]


def test_main_reference_strings_are_refused() -> None:
    # In the child, ``__main__`` is the child itself: "__main__:main" would run the child again.
    assert workload_reference("__main__:main") is None
    assert workload_reference("__mp_main__:run") is None
    result = measure_process_rss("__main__:main")
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert "'__main__' names the child itself" in message


# The script: no main guard, a loop measuring a small and a large allocation, and a
# top-level side effect. Before the fix the child re-ran the loop and measured the last `w`
# twice (the large one), status complete.
UNGUARDED_LOOP = """
    import json
    import sys

    from torchscan import measure_workload

    with open(sys.argv[1], "a") as handle:
        handle.write("top level ran\\n")

    results = []
    for size_mib in (4, 96):
        def w():
            block = bytearray(size_mib << 20)
            block[::4096] = b"\\1" * len(block[::4096])
            return len(block)

        report = measure_workload(w, metrics=["process_rss"], print_summary=False)
        metric = report["metrics"]["process_rss_workload_peak"]
        results.append([metric["status"], metric["reason"], report["diagnostics"]])
    print(json.dumps(results))
"""


def test_unguarded_script_loop_is_refused_and_never_rerun(tmp_path: Path) -> None:
    script = write_module(tmp_path, "unguarded_loop", UNGUARDED_LOOP)
    side_effects = tmp_path / "side_effects.txt"
    completed = subprocess.run(
        [sys.executable, str(script), str(side_effects)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    results = json.loads(completed.stdout)
    assert len(results) == 2
    for status, reason, diagnostics in results:
        assert (status, reason) == ("unavailable", "workload not importable")
        assert [d["code"] for d in diagnostics] == ["workload_not_importable"]
        message = diagnostics[0]["message"]
        assert "'w' is defined in the script being run (__main__)" in message
        assert "'path/to/file.py:function'" in message
        assert "module-level function in a module" in message
        assert "'if __name__ == \"__main__\":'" in message
    # The top level ran once: in this process, never in a child.
    assert side_effects.read_text().splitlines() == ["top level ran"]


# A script without a main guard that measures itself by a string reference, with a top-level
# side effect. Before the fix the child imported the script again: its top level ran twice.
SELF_REFERENCING = """
    import json
    import os
    import sys

    from torchscan.measure.rss.parent import measure_process_rss

    with open(os.environ["SIDE_EFFECTS"], "a") as handle:
        handle.write("top level ran\\n")

    def work():
        return bytearray(1 << 20)

    reference = {reference}
    result = measure_process_rss(reference)
    print(json.dumps([result.workload_peak["reason"], result.diagnostics]))
"""


@pytest.mark.parametrize(
    ("how", "reference", "shown"),
    [
        ("python script.py", 'f"{__file__}:work"', "'selfref.py:work'"),
        ("python script.py", '"selfref:work"', "'selfref:work'"),
        ("python -m pkg.selfref", '"pkg.selfref:work"', "'pkg.selfref:work'"),
        ("python -m pkg.selfref", 'f"{__file__}:work"', "'selfref.py:work'"),
    ],
)
def test_a_reference_to_the_script_being_run_is_refused_before_spawning(
    how: str, reference: str, shown: str, tmp_path: Path
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    script = write_module(package, "selfref", SELF_REFERENCING.format(reference=reference))
    side_effects = tmp_path / "side_effects.txt"
    command = (
        [sys.executable, str(script)]
        if how == "python script.py"
        else [sys.executable, "-m", "pkg.selfref"]
    )
    completed = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "SIDE_EFFECTS": str(side_effects)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    reason, diagnostics = json.loads(completed.stdout)
    assert reason == "workload not importable"
    assert [d["code"] for d in diagnostics] == ["workload_not_importable"]
    message = diagnostics[0]["message"]
    assert (
        f"{shown} names the script being run (__main__): importing it in the child would run "
        "the script's top level a second time. "
    ) in message
    assert "Define the workload as a module-level function in a module" in message
    assert (
        "keep the script's own work under 'if __name__ == \"__main__\":' and run python -m "
        "torchscan measure path/to/script.py:function --metrics process_rss."
    ) in message
    assert str(tmp_path) not in message  # reports carry no paths
    # The top level ran once: in this process, never in a child.
    assert side_effects.read_text().splitlines() == ["top level ran"]


def test_the_cli_measures_a_guarded_script_by_reference(tmp_path: Path) -> None:
    # The way out the refusal names: the script is imported under a private name, so its
    # guarded work does not run, and __main__ is torchscan's CLI, not the script.
    script = write_module(
        tmp_path,
        "guarded_script",
        """
        import os

        def work():
            return bytearray(1 << 20)

        if __name__ == "__main__":
            with open(os.environ["SIDE_EFFECTS"], "a") as handle:
                handle.write("main block ran\\n")
        """,
    )
    side_effects = tmp_path / "side_effects.txt"
    output = tmp_path / "report.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscan",
            "measure",
            f"{script}:work",
            "--metrics",
            "process_rss",
            "--json",
            str(output),
        ],
        env={**os.environ, "SIDE_EFFECTS": str(side_effects)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(output.read_text())
    assert report["metrics"]["process_rss_peak"]["status"] == "complete"
    assert not side_effects.exists()


def _main_function(source: str, name: str) -> object:
    """A function whose module is ``__main__``, as a script's functions are."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), "<script>", "exec"), namespace)
    return namespace[name]


def test_strict_raises_for_a_workload_of_the_main_script() -> None:
    from torchscan import IncompleteMeasurementError, measure_workload

    workload = _main_function("def w():\n    return 1\n", "w")
    assert getattr(workload, "__module__", None) == "__main__"
    report = measure_workload(workload, metrics=["process_rss"], print_summary=False)  # type: ignore[arg-type]
    assert report["metrics"]["process_rss_peak"]["reason"] == "workload not importable"
    with pytest.raises(IncompleteMeasurementError) as raised:
        measure_workload(workload, metrics=["process_rss"], print_summary=False, strict=True)  # type: ignore[arg-type]
    assert raised.value.report["metrics"]["process_rss_peak"]["reason"] == "workload not importable"
    assert ("process_rss_peak", "unavailable") in raised.value.metrics


def test_path_references_from_a_guarded_script_measure_each_function(tmp_path: Path) -> None:
    write_module(
        tmp_path,
        "allocations",
        """
        def allocate(size_mib):
            block = bytearray(size_mib << 20)
            block[::4096] = b"\\1" * len(block[::4096])
            return len(block)

        def small():
            return allocate(4)

        def large():
            return allocate(96)
        """,
    )
    script = write_module(
        tmp_path,
        "guarded",
        """
        import json
        import os

        from torchscan.measure.rss.parent import measure_process_rss

        if __name__ == "__main__":
            here = os.path.dirname(os.path.abspath(__file__))
            increments = []
            for name in ("small", "large"):
                result = measure_process_rss(os.path.join(here, f"allocations.py:{name}"))
                increments.append(result.workload_peak["value"] - result.baseline["value"])
            print(json.dumps(increments))
        """,
    )
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    small, large = json.loads(completed.stdout)
    assert 3 * MIB <= small < 40 * MIB
    assert large >= 90 * MIB


SHIFTY = """
    import os

    if os.environ.get("TORCHSCAN_RSS_CHILD"):
        def run():
            return "another function of the same name"
    else:
        def run():
            return "the function given"
"""


def test_another_object_of_the_same_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "ts_child_shifty", SHIFTY)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ts_child_shifty")
    try:
        result = measure_process_rss(module.run)
    finally:
        sys.modules.pop("ts_child_shifty", None)
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert (
        "refused the workload: 'run' imported afresh is not the workload that was given" in message
    )
    assert "(line 8 in the parent, 5 here; code " in message
    assert "'path/to/file.py:function'" in message
    assert str(tmp_path) not in message  # reports carry no paths


def test_a_file_changed_since_its_import_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_module(tmp_path, "edited", ALLOCATE_64_MIB)
    module = load_from_file(path, "ts_child_edited", monkeypatch)
    assert measure_process_rss(module.allocate).workload_peak["status"] == "complete"
    # Same name, same first line, another body (and another size, so no stale bytecode is used).
    path.write_text(textwrap.dedent(ALLOCATE_64_MIB).replace("64 << 20", "65 << 20"))
    message = assert_unavailable(
        measure_process_rss(module.allocate), "workload not importable", "workload_not_importable"
    )
    assert "'allocate' imported afresh is not the workload that was given (code " in message


def test_a_rebound_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_module(tmp_path, "ts_child_rebound", ALLOCATE_64_MIB)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ts_child_rebound")
    try:
        given = module.allocate
        monkeypatch.setattr(module, "allocate", module_level_function)
        assert workload_reference(given) is None
        result = measure_process_rss(given)
    finally:
        sys.modules.pop("ts_child_rebound", None)
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert "ts_child_rebound.allocate is now another object than the workload given" in message


# A module-level callable object whose state the parent changes after importing it.
STATEFUL = """
    import threading


    class Workload:
        def __init__(self, size_mib):
            self.size_mib = size_mib

        def __call__(self):
            block = bytearray(self.size_mib << 20)
            block[::4096] = b"\\1" * len(block[::4096])
            return len(block)

        def run(self):
            return self()


    work = Workload(size_mib=600)


    def uses_the_global():
        return work()
"""


@pytest.mark.parametrize("form", ["instance", "method"])
def test_a_mutated_module_level_instance_runs_as_mutated(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Imported afresh, `work` would allocate 600 MiB; the parent's object allocates 10 MiB, and
    # that is what the child must run (before, it ran the import-time object: 600 MiB).
    write_module(tmp_path, "ts_child_stateful", STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    module = importlib.import_module("ts_child_stateful")
    try:
        module.work.size_mib = 10
        workload = module.work if form == "instance" else module.work.run
        assert workload_reference(workload) == (
            "ts_child_stateful:work" if form == "instance" else "ts_child_stateful:work.run"
        )
        result = measure_process_rss(workload)
    finally:
        sys.modules.pop("ts_child_stateful", None)
    assert result.diagnostics == []
    increment_b = workload_increment_b(result)
    assert 8 * MIB <= increment_b < 100 * MIB
    assert list(private_tmp.iterdir()) == []  # the pickle's file is removed


def test_a_mutated_instance_loaded_from_a_file_runs_as_mutated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module loaded from its file (as python -m torchscan measure does): referenced by path.
    path = write_module(tmp_path, "stateful_file", STATEFUL)
    module = load_from_file(path, "ts_child_stateful_file", monkeypatch)
    module.work.size_mib = 10
    assert workload_reference(module.work) == f"{path}:work"
    result = measure_process_rss(module.work)
    assert result.diagnostics == []
    increment_b = workload_increment_b(result)
    assert 8 * MIB <= increment_b < 100 * MIB


def test_an_instance_that_cannot_be_pickled_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "ts_child_unpicklable", STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    module = importlib.import_module("ts_child_unpicklable")
    try:
        module.work.size_mib = 10
        module.work.lock = module.threading.Lock()
        result = measure_process_rss(module.work)
    finally:
        sys.modules.pop("ts_child_unpicklable", None)
    message = assert_unavailable(result, "workload not importable", "workload_not_importable")
    assert (
        "the Workload object given is sent to it by pickle, since importing 'work' afresh would "
        "give the object as its module builds it at import, not as it is now, and it cannot be "
        "pickled (TypeError: cannot pickle '_thread.lock' object). Make the object picklable, or "
        "build it inside a module-level function and pass that function"
    ) in message
    assert list(private_tmp.iterdir()) == []  # the partial pickle's file is removed


def test_the_unpickled_object_must_be_of_the_imported_class(tmp_path: Path) -> None:
    # The child's check after unpickling: another class is refused; the same class replaces the
    # module-level object, so the module sees the object that runs.
    from torchscan.measure.rss.worker import WorkloadRefusedError, _with_state

    module = ModuleType("ts_child_state_check")
    imported = Workload()
    module.work = imported  # type: ignore[attr-defined]
    state = tmp_path / "state.pickle"
    state.write_bytes(pickle.dumps(functools.partial(module_level_function)))
    with pytest.raises(WorkloadRefusedError) as refused:
        _with_state(module, "work", imported, str(state))
    assert str(refused.value) == (
        "'work' unpickled is a partial, not the Workload that the module binds to that name"
    )
    assert module.work is imported

    state.write_bytes(pickle.dumps(CALLABLE.method))
    with pytest.raises(WorkloadRefusedError):
        _with_state(module, "work", imported, str(state))  # a method for an object
    method = _with_state(module, "work.method", imported.method, str(state))
    assert isinstance(method, MethodType) and method.__func__ is Workload.method
    assert module.work is method.__self__ and module.work is not imported

    state.write_bytes(pickle.dumps(CALLABLE))
    unpickled = _with_state(module, "work", module.work, str(state))
    assert type(unpickled) is Workload and module.work is unpickled


def test_state_that_refers_to_the_main_script_is_refused(tmp_path: Path) -> None:
    # The parent's object holds a function of the script being run, named `main` like the
    # child's own entry point: unpickled by name in the child it would be the child's `main`.
    write_module(
        tmp_path,
        "holder",
        """
        class Holder:
            def __call__(self):
                return 1

        work = Holder()
        """,
    )
    script = write_module(
        tmp_path,
        "holding_script",
        """
        import holder
        from torchscan.measure.rss.parent import measure_process_rss

        def main():
            return "the script's main"

        holder.work.callback = main
        print(measure_process_rss(holder.work).diagnostics[0]["message"])
        """,
    )
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    assert (
        "the process-RSS child refused the workload: the workload's pickled state refers to "
        "__main__.main, an object of the script being run (__main__), which the child does not "
        "run again. "
    ) in completed.stdout


def test_functions_and_classes_are_not_pickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By reference, as before: a function reads its module's globals as the child's import
    # leaves them (documented), and a class is built afresh.
    write_module(tmp_path, "ts_child_by_reference", STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ts_child_by_reference")
    try:
        module.work.size_mib = 10
        module.work.lock = module.threading.Lock()  # no pickling is attempted
        result = measure_process_rss(module.uses_the_global)
        assert result.diagnostics == []
        increment_b = workload_increment_b(result)
        assert increment_b >= 590 * MIB
    finally:
        sys.modules.pop("ts_child_by_reference", None)


ACCEPTED_FORMS = """
    import functools

    def plain():
        return bytearray(1 << 20)

    def traced(function):
        @functools.wraps(function)
        def wrapper():
            return function()
        return wrapper

    @traced
    def decorated():
        return bytearray(1 << 20)

    class Work:
        def __call__(self):
            return bytearray(1 << 20)

        def method(self):
            return bytearray(1 << 20)

        @classmethod
        def build(cls):
            return cls()

    INSTANCE = Work()
"""


def test_every_accepted_form_passes_the_fingerprint_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "ts_child_forms", ACCEPTED_FORMS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("ts_child_forms")
    forms = {
        "ts_child_forms:plain": module.plain,
        "ts_child_forms:decorated": module.decorated,
        "ts_child_forms:Work.build": module.Work.build,
        "ts_child_forms:Work": module.Work,
        "ts_child_forms:INSTANCE": module.INSTANCE,
        "ts_child_forms:INSTANCE.method": module.INSTANCE.method,
        "gc:collect": importlib.import_module("gc").collect,
    }
    try:
        for reference, workload in forms.items():
            assert workload_reference(workload) == reference
            result = measure_process_rss(workload)
            assert result.diagnostics == [], (reference, result.diagnostics)
            assert result.workload_peak["status"] == "complete"
    finally:
        sys.modules.pop("ts_child_forms", None)


def test_a_module_that_measures_itself_at_import_is_refused_without_recursion(
    tmp_path: Path,
) -> None:
    # No main guard, string references to itself, imported by the script being run: the child's
    # import asks for process RSS again (refused there: no grandchild), and the child then
    # refuses the module.
    script = write_module(tmp_path, "imports_it", "import self_measuring\n")
    write_module(
        tmp_path,
        "self_measuring",
        """
        import json
        import os

        from torchscan.measure.rss.parent import measure_process_rss

        with open(os.path.join(os.path.dirname(__file__), "imports.txt"), "a") as handle:
            handle.write(f"{os.getpid()}\\n")

        RESULTS = []
        for size_mib in (1, 8):
            def w():
                return bytearray(size_mib << 20)

            result = measure_process_rss(f"{__file__}:w")
            RESULTS.append([result.workload_peak["reason"], result.diagnostics[0]["message"]])
        print(json.dumps(RESULTS))
        """,
    )
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    results = json.loads(completed.stdout)
    assert [reason for reason, _ in results] == ["workload not importable"] * 2
    for _, message in results:
        assert "asked for process RSS itself (2 times)" in message
        assert "'if __name__ == \"__main__\":'" in message
    # This process and one child per measurement imported the file; no child started another.
    assert len((tmp_path / "imports.txt").read_text().split()) == 3


# --- interpretation and arguments ---------------------------------------------------------------


def test_lifetime_uses_wait4_only_when_it_is_the_childs_own() -> None:
    payload = (
        b'{"protocol": 1, "ok": true, "baseline_b": 100, "workload_peak_b": 300, '
        b'"setup_peak_b": 200, "baseline_method": "VmRSS", "peak_method": "vmhwm"}\n'
    )
    exited = 0  # a wait status: exited with code 0

    own = _ChildRun(
        wait_status=exited, maxrss_b=1000, spawner_peak_b=900, stdout=bytearray(payload)
    )
    result = _interpret(own, timeout_s=5, calls=1)
    assert result.lifetime_peak["value"] == 1000
    assert result.lifetime_peak["method"].startswith("ru_maxrss via os.wait4")

    # At or below the spawner's peak, ru_maxrss may be that peak carried over at spawn.
    carried = _ChildRun(
        wait_status=exited, maxrss_b=1000, spawner_peak_b=5000, stdout=bytearray(payload)
    )
    result = _interpret(carried, timeout_s=5, calls=1)
    assert result.lifetime_peak["value"] == 300
    assert "not used" in result.lifetime_peak["method"]

    garbled = _ChildRun(
        wait_status=exited, maxrss_b=1000, spawner_peak_b=5000, stdout=bytearray(b"noise\n")
    )
    result = _interpret(garbled, timeout_s=5, calls=1)
    assert_unavailable(
        result,
        "child process failed (no result line on its standard output)",
        "child_process_failed",
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"calls": 0}, {"calls": 1.5}, {"timeout_s": 0}, {"timeout_s": float("nan")}, {"threads": 0}],
)
def test_invalid_arguments_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        measure_process_rss(module_level_function, **kwargs)  # type: ignore[arg-type]


def test_no_torch_import_at_module_import_time() -> None:
    code = "import sys, torchscan.measure.rss.parent; print('torch' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert completed.stdout.strip() == "False"
