"""The fresh child process of the process-RSS pass: import a workload, read RSS, call it, report.

Run as ``python -m torchscan.measure.rss.worker <reference> --calls N [--threads T] --device D
[--fingerprint JSON] [--state FILE]`` by the supervisor (:mod:`torchscan.measure.rss.supervisor`)
that :mod:`torchscan.measure.rss.parent` starts, never imported for its side effects. A
``path/to/file.py:attr`` reference is imported by :mod:`torchscan._references`, the loader the
command line uses, as a module under a private name, never as ``__main__``; with ``--fingerprint``
the imported object must match the parent's (:func:`workload_fingerprint`), or the child refuses it.
With ``--state`` (a callable object, or a method of one) the child runs the parent's object,
unpickled from ``FILE``, rather than the one its import built, once it has checked that it is of the
same class. The child writes exactly one JSON line to its standard output (the workload's own prints
go to standard error) and then exits:

* success: ``{"protocol": 1, "ok": true, "baseline_b", "setup_peak_b", "workload_peak_b",
  "baseline_method", "peak_method"}``;
* failure: ``{"protocol": 1, "ok": false, "stage": "import" | "setup" | "workload", "error"}``
  with exit status 1 and the traceback on standard error; ``"refused": true`` (no traceback) when
  the child will not run what it imported: another object than the parent's (the fingerprint
  differs), or a module whose import asked for process RSS itself.

The child ends with ``os._exit`` right after that line: interpreter teardown is not measured.
Numbers are bytes. ``setup_peak_b`` is the peak RSS from ``exec`` to the end of set-up, read before
the high-water mark is reset (the reset also erases it from the kernel's ``ru_maxrss``, so the
parent needs it to know the lifetime peak).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib
import io
import json
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

from ... import _references
from ..._references import import_file, import_module, is_file_module_name
from .supervisor import SUPERVISOR_PID_ENV

__all__ = [
    "CHILD_MARKER_ENV",
    "PROTOCOL",
    "SYS_PATH_ENV",
    "fingerprint_mismatch",
    "main",
    "split_reference",
    "workload_fingerprint",
]

#: The version of the one-line JSON protocol between child and parent.
PROTOCOL = 1
#: The parent's ``sys.path`` as a JSON list, so a module the parent imported from a path it added
#: at run time (pytest's rootdir, a notebook's ``sys.path.append``) imports in the child too.
SYS_PATH_ENV = "TORCHSCAN_CHILD_SYS_PATH"
#: Set in the child's environment. A script without a main guard that measures itself would
#: otherwise start a child that imports it, which starts a child that imports it, and so on.
CHILD_MARKER_ENV = "TORCHSCAN_RSS_CHILD"

_PROC_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"
# Writing "5" to clear_refs resets the address space's peak RSS (VmHWM) to the current RSS.
_RESET_HWM = "5"
# After a working reset VmHWM is within a few pages of VmRSS; a larger gap means the write was
# accepted but ignored, and the sampled fallback is the honest choice.
_RESET_SLACK_B = 4 << 20
_SAMPLE_INTERVAL_S = 0.001
# Module names a reference may not name: in the child they are the child itself.
_RESERVED_MODULES = ("__main__", "__mp_main__")
# How many ``__wrapped__`` links of a decorated function the fingerprint follows.
_WRAPPED_DEPTH = 8
_PR_SET_PDEATHSIG = 1


def split_reference(reference: str) -> tuple[str, str, bool] | None:
    """``(module_or_path, qualname, is_path)`` of a reference, or ``None`` when it is malformed.

    The split is at the last ``:`` so a Windows drive letter stays in the path; a left side ending
    in ``.py`` is a file path, anything else a dotted module name (never ``__main__``, which in
    the child is the child itself).
    """
    target, sep, qualname = reference.rpartition(":")
    if not sep or not target or not _is_dotted_name(qualname):
        return None
    if target.endswith(".py"):
        return target, qualname, True
    if not _is_dotted_name(target) or target in _RESERVED_MODULES:
        return None
    return target, qualname, False


def _is_dotted_name(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


# --- fingerprints -------------------------------------------------------------------------------


def _canonical(value: object) -> str:
    """A text for a code constant that is the same in every process (no hash-seeded order)."""
    if isinstance(value, CodeType):
        return f"code:{_code_digest(value)}"
    if isinstance(value, tuple):
        return "(" + ",".join(_canonical(item) for item in value) + ")"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(_canonical(item) for item in value)) + ")"
    return f"{type(value).__name__}:{value!r}"


def _code_digest(code: CodeType) -> str:
    """SHA-256 of what a code object does: bytecode, constants, names and signature."""
    parts = (
        code.co_code.hex(),
        _canonical(code.co_consts),
        repr(code.co_names),
        repr(code.co_varnames),
        repr(code.co_freevars),
        repr(code.co_cellvars),
        repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)),
        code.co_name,
    )
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _function_chain(function: object) -> list[FunctionType]:
    """A function and the functions it wraps (``functools.wraps`` decorators), outermost first."""
    chain: list[FunctionType] = []
    current = function
    while isinstance(current, FunctionType) and len(chain) < _WRAPPED_DEPTH:
        chain.append(current)
        current = getattr(current, "__wrapped__", None)
    return chain


def _class_attribute(cls: type, name: str) -> object:
    """``name`` as defined on ``cls`` or the first class of its MRO that defines it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _real_path(path: object) -> str | None:
    return os.path.normcase(os.path.realpath(path)) if isinstance(path, str) else None


def workload_fingerprint(workload: object) -> dict[str, Any]:
    """What identifies a workload across processes: its module, names, file, line and code.

    ``code`` hashes the bytecode and constants of the function (and of the functions it wraps),
    of a bound method's function, or of a callable object's ``__call__``; ``file`` and ``line``
    are where the first of them is defined. Two processes that import the same source get equal
    fingerprints; a different object bound to the same name almost never does.
    """
    target = workload.__func__ if isinstance(workload, MethodType) else workload
    if isinstance(workload, MethodType):
        owner = workload.__self__
        owner_type = owner if isinstance(owner, type) else type(owner)
        kind, type_name = "method", owner_type.__qualname__
    elif isinstance(target, FunctionType):
        kind, type_name = "function", None
    elif isinstance(target, type):
        kind, type_name = "class", target.__qualname__
    else:
        kind, type_name = "object", type(target).__qualname__
    if kind == "object":
        # What calling it runs: ``__call__``, and an ``nn.Module``'s ``forward``.
        chain = [
            function
            for name in ("__call__", "forward")
            for function in _function_chain(_class_attribute(type(target), name))
        ]
    elif isinstance(target, type):
        chain = _function_chain(_class_attribute(target, "__init__"))
    else:
        chain = _function_chain(target)
    digest = hashlib.sha256()
    for function in chain:
        digest.update(_code_digest(function.__code__).encode())
    first = chain[0].__code__ if chain else None
    return {
        "kind": kind,
        "module": getattr(target, "__module__", None),
        "qualname": getattr(target, "__qualname__", None),
        "type": type_name,
        "file": _real_path(first.co_filename) if first is not None else None,
        "line": first.co_firstlineno if first is not None else None,
        "code": digest.hexdigest() if chain else None,
    }


def fingerprint_mismatch(
    expected: dict[str, Any], found: dict[str, Any], *, by_path: bool
) -> list[str]:
    """The fields in which ``found`` differs from ``expected`` (module names skipped ``by_path``).

    A module loaded from a file has a private name in each process, so for a ``file.py:attr``
    reference the file, line and code stand for the module.
    """
    fields = ["kind", "qualname", "type", "file", "line", "code"]
    if not by_path:
        fields.insert(1, "module")
    module = found.get("module")
    if by_path and module is not None and not is_file_module_name(module):
        # Defined in another module that the file imports: its module name is a real one.
        fields.insert(1, "module")
    return [name for name in fields if expected.get(name) != found.get(name)]


def _describe_field(name: str, value: object) -> str:
    if name == "file" and isinstance(value, str):
        return os.path.basename(value)  # reports carry no paths
    if name == "code" and isinstance(value, str):
        return value[:12]
    return repr(value)


# --- RSS ----------------------------------------------------------------------------------------


def _read_status_b() -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of this process in bytes; empty where ``/proc`` is missing."""
    values: dict[str, int] = {}
    try:
        with open(_PROC_STATUS, encoding="ascii", errors="replace") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    number, _, unit = rest.strip().partition(" ")
                    if unit.strip() == "kB" and number.isdigit():
                        values[key] = int(number) * 1024
    except OSError:
        return {}
    return values


def _psutil_rss_b() -> int:
    # Imported by name: psutil ships no type stubs, and a plain import fails strict mypy.
    psutil = importlib.import_module("psutil")
    return int(psutil.Process().memory_info().rss)


def _current_rss_b() -> tuple[int, str]:
    status = _read_status_b()
    if "VmRSS" in status:
        return status["VmRSS"], "VmRSS from /proc/self/status"
    return _psutil_rss_b(), "psutil RSS"


def _self_maxrss_b() -> int | None:
    """Lifetime peak RSS of this process from ``getrusage``, in bytes (used without ``/proc``)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows has no resource module
        return None
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def _reset_high_water_mark() -> bool:
    """Reset VmHWM to the current RSS; ``False`` where that is impossible or had no effect."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as handle:
            handle.write(_RESET_HWM)
    except OSError:
        return False
    status = _read_status_b()
    if "VmHWM" not in status or "VmRSS" not in status:
        return False
    return status["VmHWM"] <= status["VmRSS"] + _RESET_SLACK_B


class _RssSampler:
    """Peak RSS sampled in a background thread, where the kernel's high-water mark can't be reset.

    A spike shorter than the interval (or than the GIL switch interval, for pure-Python workloads)
    can be missed, so the peak is a lower bound; the method string says so.
    """

    def __init__(self) -> None:
        self.peak_b = _psutil_rss_b()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="torchscan-rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(_SAMPLE_INTERVAL_S):
            self.peak_b = max(self.peak_b, _psutil_rss_b())

    def start(self) -> None:
        """Start sampling."""
        self._thread.start()

    def stop(self) -> int:
        """Stop sampling and return the peak in bytes, the final RSS included."""
        self._stop.set()
        self._thread.join()
        self.peak_b = max(self.peak_b, _psutil_rss_b())
        return self.peak_b


class WorkloadRefusedError(ImportError):
    """The child will not run what it imported: another object, or a module that measures itself."""


class _StateUnpickler(pickle.Unpickler):
    """Unpickles a workload's state, refusing anything of ``__main__`` (here: the child itself).

    ``module_alias`` maps the parent's name of a module loaded from its file (which the child
    loaded under a private name) to the module loaded here.
    """

    def __init__(self, file: Any, module_alias: tuple[str, ModuleType] | None) -> None:
        super().__init__(file)
        self._module_alias = module_alias

    def find_class(self, module_name: str, name: str) -> Any:
        if module_name in _RESERVED_MODULES:
            raise WorkloadRefusedError(
                f"the workload's pickled state refers to {module_name}.{name}, an object of the "
                "script being run (__main__), which the child does not run again"
            )
        if self._module_alias is not None and module_name == self._module_alias[0]:
            found: Any = self._module_alias[1]
            for part in name.split("."):
                found = getattr(found, part)
            return found
        return super().find_class(module_name, name)


def _with_state(
    module: ModuleType,
    qualname: str,
    imported: Any,
    state_path: str,
    state_module: str | None = None,
) -> Callable[[], Any]:
    """The parent's object, unpickled from ``state_path``, in place of the one just imported.

    The object imported afresh has the state its module gave it at import; the parent's may have
    changed since. The unpickled object must be of the imported one's class (for a method: the
    same function, bound to an object of the same class), and takes its module-level name, so that
    the module sees the object that runs.
    """
    with open(state_path, "rb") as handle:
        alias = (state_module, module) if state_module is not None else None
        given: Any = _StateUnpickler(handle, alias).load()
    _refuse_nested_requests()
    if isinstance(imported, MethodType):
        same_kind = (
            isinstance(given, MethodType)
            and given.__func__ is imported.__func__
            and type(given.__self__) is type(imported.__self__)
        )
        owner, imported_owner = getattr(given, "__self__", None), imported.__self__
    else:
        same_kind = type(given) is type(imported)
        owner, imported_owner = given, imported
    if not same_kind or not callable(given):
        raise WorkloadRefusedError(
            f"{qualname!r} unpickled is a {type(given).__qualname__}, not the "
            f"{type(imported).__qualname__} that the module binds to that name"
        )
    name = qualname.split(".")[0]
    if getattr(module, name, None) is imported_owner:
        setattr(module, name, owner)
    workload: Callable[[], Any] = given
    return workload


def _load_workload(
    reference: str,
    fingerprint: dict[str, Any] | None,
    state_path: str | None = None,
    state_module: str | None = None,
) -> Callable[[], Any]:
    split = split_reference(reference)
    if split is None:
        raise ValueError(f"malformed workload reference {reference!r}")
    target, qualname, is_path = split
    module: ModuleType
    # The one loader the command line uses too: a file under its private name (never
    # ``__main__``, so a script's main block does not run) with its folder first on sys.path
    # while it is imported; SystemExit or KeyboardInterrupt at import is an error naming it.
    if is_path:
        module = import_file(os.path.abspath(target), shown=os.path.basename(target))
    else:
        module = import_module(target)
    _refuse_nested_requests()
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise TypeError(f"{qualname!r} is a {type(found).__name__}, not a callable")
    if fingerprint is not None:
        actual = workload_fingerprint(found)
        differ = fingerprint_mismatch(fingerprint, actual, by_path=is_path)
        if differ:
            details = "; ".join(
                f"{name} {_describe_field(name, fingerprint.get(name))} in the parent, "
                f"{_describe_field(name, actual.get(name))} here"
                for name in differ
            )
            raise WorkloadRefusedError(
                f"{qualname!r} imported afresh is not the workload that was given ({details}): "
                "the module binds that name to another object when it is imported"
            )
    if state_path is not None:
        return _with_state(module, qualname, found, state_path, state_module)
    workload: Callable[[], Any] = found
    return workload


def _refuse_nested_requests() -> None:
    """Fail when importing the workload's module asked for process RSS itself.

    Such a module measures at import time (a script without a main guard): in the child its
    request was refused, and the names it bound may be the last of a loop, not the workload.
    """
    child_module = sys.modules.get("torchscan.measure.rss.parent")
    nested = getattr(child_module, "nested_requests", 0) if child_module is not None else 0
    if isinstance(nested, int) and nested > 0:
        raise WorkloadRefusedError(
            "importing the workload's module asked for process RSS itself "
            f"({nested} time{'s' if nested != 1 else ''}): its top level measures a workload, so "
            "what it defines may not be what the parent measured. Put the module's own work "
            "under 'if __name__ == \"__main__\":' so that importing it only defines the workload"
        )


def _die_with_supervisor() -> None:
    """Ask Linux to SIGKILL this process when the supervisor that started it ends."""
    supervisor = os.environ.get(SUPERVISOR_PID_ENV, "")
    if not sys.platform.startswith("linux") or not supervisor.isdigit():
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != int(supervisor):
        os._exit(1)  # the supervisor ended before the request took effect


def _set_up(threads: int | None, device: str) -> None:
    """Match the parent's thread count and initialise the device before the baseline is read.

    Initialising a GPU maps its runtime into the process; doing it here keeps that out of the
    workload's peak and in the baseline, where it belongs.
    """
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    if device != "cpu":
        import torch

        torch.empty(1, device=device)
        _synchronize(device)


def _synchronize(device: str) -> None:
    if device == "cpu" or "torch" not in sys.modules:
        return
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()


def _emit(result_fd: int, payload: dict[str, Any]) -> None:
    data = (json.dumps({"protocol": PROTOCOL, **payload}, sort_keys=True) + "\n").encode()
    while data:
        written = os.write(result_fd, data)
        data = data[written:]


def _is_plumbing(filename: str) -> bool:
    return (
        filename in (__file__, _references.__file__)
        or filename.startswith("<frozen importlib")
        or os.path.dirname(filename) == os.path.dirname(importlib.__file__ or "")
    )


def _fail(result_fd: int, stage: str, error: BaseException) -> int:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    if isinstance(error, _references.LoaderError):
        text = str(error)  # it names the file and what happened: no class name before it
    if isinstance(error, WorkloadRefusedError):
        # A refusal is the child's own decision: its message says everything, with no traceback.
        _emit(result_fd, {"ok": False, "stage": stage, "error": str(error), "refused": True})
        return 1
    # The parent shows the tail of stderr; frames of this file and of importlib would push the
    # workload's own frames out of it.
    report = traceback.TracebackException.from_exception(error)
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if not _is_plumbing(frame.filename)]
    )
    sys.stderr.write("".join(report.format()))
    sys.stderr.flush()
    _emit(result_fd, {"ok": False, "stage": stage, "error": text})
    return 1


def _apply_parent_sys_path() -> None:
    raw = os.environ.get(SYS_PATH_ENV)
    if not raw:
        return
    try:
        entries = json.loads(raw)
    except ValueError:
        return
    if not isinstance(entries, list):
        return
    parent = [entry for entry in entries if isinstance(entry, str)]
    sys.path[:] = parent + [entry for entry in sys.path if entry not in parent]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m torchscan.measure.rss.worker")
    parser.add_argument("reference")
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--fingerprint", default=None, type=json.loads)
    parser.add_argument("--state", default=None)
    parser.add_argument("--state-module", default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the child; the return value is its exit status."""
    _die_with_supervisor()
    # The result line needs a private channel: keep the real stdout for it and point fd 1 at
    # stderr, so the workload's prints (Python or C level) cannot corrupt the JSON.
    sys.stdout.flush()
    result_fd = os.dup(1)
    os.dup2(2, 1)
    # Line buffering, so a workload killed at the timeout leaves its last prints in the stderr
    # tail the parent reports.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    args = _parse(argv)
    _apply_parent_sys_path()
    # The workload's module sees a bare command line, as if run without arguments, not ours.
    sys.argv = [args.reference.rpartition(":")[0]]

    try:
        workload = _load_workload(args.reference, args.fingerprint, args.state, args.state_module)
    except (Exception, SystemExit) as error:
        # SystemExit too: a script without a main guard may call sys.exit() at import.
        return _fail(result_fd, "import", error)
    try:
        _set_up(args.threads, args.device)
    except Exception as error:
        return _fail(result_fd, "setup", error)

    if not os.access(_CLEAR_REFS, os.W_OK):
        # The sampled fallback will need psutil: import it now, into the baseline, not the peak.
        importlib.import_module("psutil")
    # Garbage left by imports is not the workload's; collect it before the baseline.
    gc.collect()
    before_reset = _read_status_b()
    baseline_b, baseline_method = _current_rss_b()
    setup_peak_b = before_reset.get("VmHWM", _self_maxrss_b())
    sampler = None if _reset_high_water_mark() else _RssSampler()
    if sampler is not None:
        sampler.start()
    try:
        for _ in range(args.calls):
            workload()
        _synchronize(args.device)
    except (Exception, SystemExit) as error:
        return _fail(result_fd, "workload", error)
    finally:
        sampled_peak_b = sampler.stop() if sampler is not None else None
    if sampled_peak_b is not None:
        workload_peak_b, peak_method = sampled_peak_b, "psutil"
    else:
        workload_peak_b, peak_method = _read_status_b().get("VmHWM", 0), "vmhwm"
    sys.stdout.flush()
    _emit(
        result_fd,
        {
            "ok": True,
            "baseline_b": baseline_b,
            "baseline_method": baseline_method,
            # The baseline is a moment inside the measured window, so the window's peak is at
            # least the baseline even if RSS shrank between the two reads.
            "workload_peak_b": max(workload_peak_b, baseline_b),
            "peak_method": peak_method,
            "setup_peak_b": setup_peak_b,
        },
    )
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # End here, without interpreter teardown: its RSS (tens of MiB with torch loaded) belongs to
    # neither the workload nor its set-up, and whether the parent sees it would depend on which
    # source of the lifetime peak it can use. It also keeps a crash in some extension's exit
    # handler from failing a finished measurement.
    os._exit(status)
