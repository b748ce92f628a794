"""Command lines: ``python -m torchscan`` and the ``torchscan-report`` console script."""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from . import _core

__all__ = ["EXAMPLE_REPORT", "PROG", "UsageError", "example_report_text", "main", "report_main"]

#: The bundled example report: the README workload (``Linear(128, 128)`` on a ``(32, 128)`` input).
EXAMPLE_REPORT = "data/example_workload.json"


def example_report_text() -> str:
    """Return the JSON text of the bundled example report."""
    return resources.files("torchscan").joinpath(EXAMPLE_REPORT).read_text(encoding="utf-8")


def report_main() -> None:
    """Entry point of the ``torchscan-report`` console script: the same Rust code as the binary."""
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(_core.cli_main(["torchscan-report", *sys.argv[1:]]))


PROG = "python -m torchscan"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class UsageError(Exception):
    """A user error of ``python -m torchscan``: one line on standard error, exit code 2."""


class _UserCodeError(Exception):
    """The user's module or workload raised ``error``: its traceback is shown, exit code 1."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _one_line(text: str) -> str:
    """``text`` on one line: the lines of a multi-line message joined by ``; ``."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _reason(error: OSError) -> str:
    return error.strerror or _one_line(str(error)) or type(error).__name__


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null after a failed write to standard output.

    What is still buffered would otherwise fail again when the interpreter flushes standard
    output at exit, printing a second error and turning the exit code into 120.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # standard output is not a file descriptor (a test's capture): nothing is flushed


def _write_stdout(data: bytes) -> None:
    """Write ``data`` to standard output directly, after whatever was printed before it."""
    try:
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(data.decode("utf-8"))
        else:
            buffer.write(data)
        sys.stdout.flush()
    except OSError as error:  # BrokenPipeError, a full device, a closed descriptor
        _silence_stdout()
        raise UsageError(f"cannot write to standard output: {_reason(error)}") from None


def _emit(text: str) -> None:
    """Print ``text`` (lines for people) on standard output."""
    _write_stdout(text.encode("utf-8"))


def _write_output(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through the core's one writer, or to standard output for ``-``.

    A regular file is replaced atomically (its mode kept), a symlink is written through, a
    device or FIFO is written directly; a failure leaves the old content and no temporary file.
    """
    if path == "-":
        _write_stdout(data)
        return
    try:
        _core.write_file(path, data)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {_reason(error)}") from None


def _write_json(path: str, report: Any) -> None:
    _write_output(path, (json.dumps(report, indent=2) + "\n").encode("utf-8"))


def _check_html(path: str | None) -> None:
    """Refuse ``--html -``: standard output is the report's or the summary's, never the page's."""
    if path == "-":
        raise UsageError(
            "--html takes a file path; '-' (standard output) is for --json only, where the "
            "report is printed alone"
        )


def _check_outputs(*paths: str | None) -> None:
    """Refuse, before anything runs, an output whose folder is missing or that is a folder."""
    for path in paths:
        if not path or path == "-":
            continue
        if os.path.isdir(path):
            raise UsageError(f"cannot write {path}: {os.strerror(errno.EISDIR)}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise UsageError(f"cannot write {path}: no such directory: {folder}")


def _internal(filename: str) -> bool:
    """Whether a frame of this file is torchscan's own or the import machinery's."""
    return filename.startswith(_PACKAGE_DIR + os.sep) or filename.startswith("<frozen ")


def _raised_by_torchscan(error: BaseException) -> bool:
    """Whether every frame ``error`` passed through is torchscan's: no user code was running."""
    trace = error.__traceback__
    while trace is not None:
        if not _internal(trace.tb_frame.f_code.co_filename):
            return False
        trace = trace.tb_next
    return True


def _print_user_traceback(error: BaseException) -> None:
    """The traceback of ``error`` from the first frame of the user's code (torchscan's left out).

    The frames of torch that call the user's code first (``Module.__call__`` calling a forward
    for ``summary``) are left out too, unless nothing but torch's frames would remain.
    """
    trace = error.__traceback__
    while trace is not None and _internal(trace.tb_frame.f_code.co_filename):
        trace = trace.tb_next
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        torch_dir = os.path.dirname(torch_file) + os.sep
        user = trace
        while user is not None and user.tb_frame.f_code.co_filename.startswith(torch_dir):
            user = user.tb_next
        if user is not None:
            trace = user
    sys.stderr.flush()
    traceback.print_exception(type(error), error, trace, file=sys.stderr)


def _run_user_code(run: Callable[[], Any]) -> Any:
    """Call ``run`` (a measurement) and sort its exceptions by whose they are.

    A torchscan error raised while no user code was running is a usage error (exit 2); any
    exception that came through the user's code is the user's (exit 1, with its traceback).
    """
    from .errors import DistributedMeasurementError, TorchscanError

    try:
        return run()
    except DistributedMeasurementError as error:
        # Another rank died or hung: a failure of the run (exit 1), not of the command line.
        raise _UserCodeError(error) from None
    except TorchscanError as error:
        if _raised_by_torchscan(error):
            raise UsageError(_one_line(str(error))) from None
        raise _UserCodeError(error) from None
    except Exception as error:
        raise _UserCodeError(error) from None


def _demo(arguments: argparse.Namespace) -> int:
    import torch

    from .workload import measure_workload

    _check_html(arguments.html)
    _check_outputs(arguments.json, arguments.html)
    to_stdout = arguments.json == "-"  # the report alone on standard output, as for measure
    if not to_stdout:
        _emit(
            "torchscan demo: measuring the README workload, torch.nn.Linear(128, 128) on a "
            "(32, 128) float32 input on cpu, with the default passes (latency, operator FLOPs, "
            "tensor memory); the report goes to "
            f"{arguments.json}"
            + (f" and its page to {arguments.html}." if arguments.html else ".")
            + "\n"
        )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(128, 128).eval()
        inputs = torch.randn(32, 128)

        @torch.inference_mode()
        def workload() -> Any:
            return model(inputs)

        report = measure_workload(
            workload,
            device="cpu",
            inputs=inputs,
            work_units=32,
            work_unit="samples",
            print_summary=False,
        )
    finally:
        torch.set_num_threads(threads)
    if not to_stdout:
        _print_summary(report)
    _write_json(arguments.json, report)
    if arguments.html:
        from .render import render_report

        _write_output(arguments.html, render_report(report).encode("utf-8"))
    return 0


def _print_summary(report: Any) -> None:
    from .validation import format_summary

    _emit(format_summary(report))


def _module_from_file(location: str) -> Any:
    """Import the Python file ``location`` under a private module name."""
    import importlib.util

    path = Path(location).resolve()
    if not path.exists():
        raise UsageError(f"no such file: {location}")
    if not path.is_file():
        raise UsageError(f"not a Python file: {location}")
    name = f"_torchscan_workload_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {location}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(spec.name, None)
        raise _UserCodeError(error) from None
    return module


def _module_by_name(location: str) -> Any:
    """Import the module ``location`` (``package.module``)."""
    import importlib

    if not all(part.isidentifier() for part in location.split(".")):
        raise UsageError(f"not a module name or a .py file: {location!r}")
    try:
        return importlib.import_module(location)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (location == missing or location.startswith(missing + ".")):
            raise UsageError(f"no module named {missing!r}") from None
        raise _UserCodeError(error) from None  # the module exists; an import inside it failed
    except Exception as error:
        raise _UserCodeError(error) from None


def _load_reference(reference: str) -> Any:
    """Import ``module:attr`` or ``path/to/file.py:attr`` (a dotted attribute path is allowed)."""
    target = _load_attribute(
        reference, "a workload is 'module:function' or 'path/to/file.py:function'"
    )
    if not callable(target):
        raise UsageError(
            f"{reference} is a {type(target).__name__}, not a callable; name a function that "
            "takes no arguments"
        )
    return target


def _load_attribute(reference: str, form: str) -> Any:
    """The object ``module:attr`` or ``path/to/file.py:attr`` names; ``form`` says what it is."""
    location, separator, attribute = reference.rpartition(":")
    parts = attribute.split(".")
    if not separator or not location or not all(part.isidentifier() for part in parts):
        raise UsageError(f"{form}, got {reference!r}")
    if location.endswith(".py") or os.sep in location:
        module = _module_from_file(location)
    else:
        module = _module_by_name(location)
    target: Any = module
    for part in parts:
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(f"{location} has no attribute {attribute!r}") from None
        except Exception as error:  # a module-level __getattr__ or property of the user's
            raise _UserCodeError(error) from None
    return target


def _metrics_of(arguments: argparse.Namespace) -> list[str] | None:
    return arguments.metrics.split(",") if arguments.metrics else None


def _check_workload_options(arguments: argparse.Namespace) -> None:
    """The checks ``measure_workload`` makes, before the user's module is imported."""
    from ._devices import resolve_device
    from ._pipeline import (
        check_budget,
        check_metrics,
        check_profiler_calls,
        check_work,
    )
    from .errors import InvalidArgumentError

    try:
        check_metrics(_metrics_of(arguments))
        check_work(arguments.work_units, arguments.work_unit)
        check_budget(arguments.min_time, _max_time(arguments), 1, 0.0)
        check_profiler_calls(arguments.profiler_calls)
        resolve_device(arguments.device)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None


def _check_profiler_trace(arguments: argparse.Namespace) -> None:
    """``--profiler-trace``, checked as ``measure_workload`` checks ``profiler_trace``."""
    from ._pipeline import check_metrics, check_profiler_trace
    from .errors import InvalidArgumentError

    if arguments.profiler_trace == "-":
        raise UsageError("--profiler-trace needs a file name; '-' (standard output) is refused")
    try:
        check_profiler_trace(arguments.profiler_trace, check_metrics(_metrics_of(arguments)))
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None


def _peak_of(arguments: argparse.Namespace) -> dict[str, Any] | None:
    """``--peak-flop-rate``, ``--peak-bandwidth`` and ``--peak-source`` as ``peak=``.

    Checked as ``measure_workload`` checks it, the options named in the message; ``None`` when
    none of them is given.
    """
    from ._peak import check_peak
    from .errors import InvalidArgumentError

    given = {
        key: value
        for key, value in (
            ("flop_rate", arguments.peak_flop_rate),
            ("bandwidth", arguments.peak_bandwidth),
            ("source", arguments.peak_source),
        )
        if value is not None
    }
    if not given:
        return None
    try:
        check_peak(given)
    except InvalidArgumentError as error:
        message = _one_line(str(error))
        message = message.replace("peak needs a 'source'", "--peak-source is needed")
        message = message.replace("peak declares neither", "the declared peak gives neither")
        for key, option in (
            ("peak['flop_rate']", "--peak-flop-rate"),
            ("peak['bandwidth']", "--peak-bandwidth"),
            ("'flop_rate'", "--peak-flop-rate"),
            ("'bandwidth'", "--peak-bandwidth"),
            ("'source'", "--peak-source"),
        ):
            message = message.replace(key, option)
        raise UsageError(message) from None
    return given


def _max_time(arguments: argparse.Namespace) -> float:
    """``--max-time``, raised to ``--min-time`` when it is below it (a NaN stays a NaN)."""
    maximum: float = arguments.max_time
    return arguments.min_time if arguments.min_time > maximum else maximum


def _measure(arguments: argparse.Namespace) -> int:
    from .workload import measure_workload

    _check_html(arguments.html)
    _check_outputs(arguments.json, arguments.html)
    _check_workload_options(arguments)
    _check_profiler_trace(arguments)
    from .errors import InvalidArgumentError
    from .workload import check_rank_timeout

    try:
        check_rank_timeout(arguments.rank_timeout)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None
    peak = _peak_of(arguments)
    workload = _load_reference(arguments.workload)
    rank, world = _job_place()
    json_path, html_path = _rank_outputs(arguments, rank, world)
    report = _run_user_code(
        lambda: measure_workload(
            workload,
            **_timing_options(arguments),
            profiler_trace=arguments.profiler_trace,
            gather=arguments.gather,
            rank_timeout_s=arguments.rank_timeout,
            peak=peak,
        )
    )
    writes = not (arguments.gather and rank != 0)
    if json_path != "-" and rank == 0:
        _print_summary(report)
    if json_path is not None and writes:
        _write_json(json_path, report)
    if html_path and writes:
        from .render import render_report

        _write_output(html_path, render_report(report).encode("utf-8"))
    return 0


def _job_place() -> tuple[int, int]:
    """The rank of this process and the world size of its job; ``(0, 1)`` outside one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1  # measure_workload names the bad variable


def _rank_outputs(
    arguments: argparse.Namespace, rank: int, world: int
) -> tuple[str | None, str | None]:
    """The ``--json`` and ``--html`` paths of this rank, ``{rank}`` replaced by its rank.

    In a job of several ranks each rank writes its own report unless ``--gather`` has rank 0
    write the merged one, so a path without ``{rank}`` would have the ranks overwrite each
    other: it is refused, as is ``--json -`` (the ranks' outputs would interleave).
    """
    paths = (arguments.json, arguments.html)
    if world <= 1 or arguments.gather:
        # Rank 0 writes (the merged report with --gather): {rank} is its rank.
        first, second = (path.replace("{rank}", str(rank)) if path else path for path in paths)
        return first, second
    for option, path in (("--json", arguments.json), ("--html", arguments.html)):
        if path == "-":
            raise UsageError(
                f"{option} - in a job of {world} ranks would interleave their reports: write "
                f"files ({option} rank{{rank}}.json), or pass --gather so that rank 0 writes "
                "the merged report"
            )
        if path and "{rank}" not in path:
            raise UsageError(
                f"{option} {path} in a job of {world} ranks: every rank writes its own report, "
                f"so put {{rank}} in the path ({option} rank{{rank}}.json), or pass --gather so "
                "that rank 0 writes the merged report"
            )
    json_path, html_path = (path.replace("{rank}", str(rank)) if path else path for path in paths)
    return json_path, html_path


def _timing_options(arguments: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments that ``measure`` and ``compare`` pass alike to the timing functions."""
    return {
        "device": arguments.device,
        "work_units": arguments.work_units,
        "work_unit": arguments.work_unit,
        "metrics": _metrics_of(arguments),
        "print_summary": False,
        "min_time_s": arguments.min_time,
        "max_time_s": _max_time(arguments),
        "profiler_calls": arguments.profiler_calls,
    }


def _compare(arguments: argparse.Namespace) -> int:
    from .compare import check_comparison_options
    from .errors import InvalidArgumentError
    from .experiment import compare_workloads

    outputs = (
        arguments.json,
        arguments.html,
        arguments.baseline_json,
        arguments.candidate_json,
        arguments.check_json,
    )
    _check_html(arguments.html)
    _check_outputs(*outputs)
    _check_workload_options(arguments)
    try:
        check_comparison_options(0.95, 2000, arguments.seed, arguments.min_effect)
        from .check import _tolerance

        _tolerance("rtol", arguments.rtol)
        _tolerance("atol", arguments.atol)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None
    baseline = _load_reference(arguments.baseline)
    candidate = _load_reference(arguments.candidate)
    experiment = _run_user_code(
        lambda: compare_workloads(
            baseline,
            candidate,
            rtol=arguments.rtol,
            atol=arguments.atol,
            equal_nan=arguments.equal_nan,
            check_dtype=arguments.check_dtype,
            **_timing_options(arguments),
            min_effect=arguments.min_effect,
            seed=arguments.seed,
        )
    )
    if arguments.json != "-":
        _print_summary(experiment.comparison)
    if arguments.json is not None:
        _write_json(arguments.json, experiment.comparison)
    if arguments.html:
        from .render import render_report

        _write_output(arguments.html, render_report(experiment.comparison).encode("utf-8"))
    for path, report in (
        (arguments.baseline_json, experiment.baseline),
        (arguments.candidate_json, experiment.candidate),
        (arguments.check_json, experiment.check),
    ):
        if path:
            _write_json(path, report)
    return 1 if experiment.comparison["check"]["status"] == "failed" else 0


def _shape(text: str) -> tuple[int, ...]:
    """``--input-shape`` or ``--input-size``: sizes separated by commas, such as ``3,224,224``."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isascii() and part.isdigit() and len(part) <= 30 for part in parts):
        raise argparse.ArgumentTypeError(
            f"a shape is whole numbers separated by commas, such as 3,224,224; got {text!r}"
        )
    shape = tuple(int(part) for part in parts)
    if 0 in shape:
        raise argparse.ArgumentTypeError(f"sizes must be 1 or more; got {text!r}")
    return shape


def _dtypes(text: str | None, count: int) -> Any:
    """``--dtype``: ``None``, one ``torch.dtype`` for every input, or a list of one per input."""
    if text is None:
        return None
    import torch

    dtypes = []
    for name in (part.strip() for part in text.split(",")):
        dtype = getattr(torch, name.removeprefix("torch."), None) if name else None
        if not isinstance(dtype, torch.dtype):
            raise UsageError(
                f"--dtype takes torch dtype names such as float32, float16, bfloat16 or int64; "
                f"got {name!r}"
            )
        dtypes.append(dtype)
    if len(dtypes) == 1:
        return dtypes[0]
    if len(dtypes) != count:
        raise UsageError(
            f"--dtype gives {len(dtypes)} dtypes for {count} input{'s' if count != 1 else ''}; "
            "give one for all of them or one per input"
        )
    return dtypes


def _col_names(text: str | None) -> list[str] | None:
    """``--col-names``: the table's columns, separated by commas, checked as ``summary`` does."""
    if text is None:
        return None
    from .errors import InvalidArgumentError
    from .validation import check_col_names

    try:
        return check_col_names([name.strip() for name in text.split(",")])
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error)).replace("col_names", "--col-names")) from None


def _model_of(reference: str) -> Any:
    """The ``torch.nn.Module`` that ``reference`` names, or the one its factory returns."""
    import inspect

    import torch

    target = _load_attribute(reference, "a model is 'module:attr' or 'path/to/file.py:attr'")
    if isinstance(target, torch.nn.Module):
        return target
    if not callable(target):
        raise UsageError(
            f"{reference} is a {type(target).__name__}, not a torch.nn.Module; name a module, "
            "or a function or class that returns one"
        )
    try:
        signature: inspect.Signature | None = inspect.signature(target)
    except (TypeError, ValueError):  # no signature to read (a builtin): calling it tells
        signature = None
    if signature is not None:
        try:
            signature.bind()
        except TypeError:
            raise UsageError(
                f"{reference} takes arguments {signature}; name a torch.nn.Module, or a "
                "function or class that returns one when called with no arguments"
            ) from None
    model = _run_user_code(target)
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{reference}() returned a {type(model).__name__}, not a torch.nn.Module")
    return model


# Where a message of ``summary`` shows shapes as Python values: ``input_shape=(3, 224, 224)``,
# its example call ``summary(model, (5,), dtype=torch.long)`` and ``If (1, 3, 224, 224) already``.
_SHAPE_VALUE = re.compile(
    r"\b(?:(?P<keyword>input_shape|input_size)="
    r"|(?P<call>summary\(model, (?:(?P<call_keyword>input_size)=)?)"
    r"|(?P<given>If ))(?=[(\[])"
)
_CALL_END = ", dtype=torch.long)"
_FLAG_NAMES = (
    (re.compile(r"\bdtype=torch\.long\b"), "--dtype int64"),
    (re.compile(r"\binput_shape\b"), "--input-shape"),
    (re.compile(r"\binput_size\b"), "--input-size"),
    (re.compile(r"\bdtype says\b"), "--dtype says"),
    (re.compile(r"\bdevice='([^'\s]*)'"), r"--device \1"),
)


# Sentences of ``torchscan.summary``'s messages that offer what only the Python API can give.
_PYTHON_ONLY = (
    re.compile(
        r" Or pass the real inputs (?:instead of \w+: args=\(input_ids,\) or "
        r"kwargs=\{'input_ids': input_ids, \.\.\.\}, forwarded unchanged|with args=\(\.\.\.\) "
        r"or input_data=\(\.\.\.\))\."
    ),
    re.compile(
        r" Its keyword-only inputs \([^)]*\) go in kwargs=\{\.\.\.\}, beside the shapes, or all "
        r"inputs in input_data=\{\.\.\.\}\."
    ),
)


def _as_flags(message: str) -> str:
    """A message of ``torchscan.summary`` in the command line's terms.

    ``input_shape=(3, 224, 224)`` becomes ``--input-shape 3,224,224`` (one flag per input),
    ``input_size`` ``--input-size``, ``dtype=torch.long`` ``--dtype int64`` and
    ``device='cpu'`` ``--device cpu``; the ``summary:`` that begins it goes, as the error line
    names the command already.
    """
    message = message.removeprefix("summary: ")
    # What only the Python API can give (the inputs themselves) is left out of the line.
    for pattern in _PYTHON_ONLY:
        message = pattern.sub("", message)
    parts = []
    position = 0
    for match in _SHAPE_VALUE.finditer(message):
        if match.start() < position:
            continue
        end = _closing_bracket(message, match.end())
        shapes = _shapes_shown(message[match.end() : end])
        if shapes is None:
            continue
        if match.group("given"):
            shown = "If " + " and ".join(",".join(map(str, shape)) for shape in shapes)
        else:
            keyword = match.group("keyword") or match.group("call_keyword") or "input_shape"
            flag = "--" + keyword.replace("_", "-")
            shown = " ".join(f"{flag} {','.join(map(str, shape))}" for shape in shapes)
            if match.group("call"):
                if not message.startswith(_CALL_END, end):
                    continue
                shown += " --dtype int64"
                end += len(_CALL_END)
        parts.append(message[position : match.start()])
        parts.append(shown)
        position = end
    message = "".join(parts) + message[position:]
    for pattern, flag in _FLAG_NAMES:
        message = pattern.sub(flag, message)
    return message


def _shapes_shown(text: str) -> list[tuple[int, ...]] | None:
    """The shapes of ``(3, 224, 224)`` or ``[(3, 224, 224), (10,)]``, or ``None`` for others."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (tuple, list)) or not value:
        return None
    shapes = [value] if all(isinstance(size, int) for size in value) else list(value)
    if not all(
        isinstance(shape, (tuple, list)) and all(isinstance(size, int) for size in shape)
        for shape in shapes
    ):
        return None
    return [tuple(shape) for shape in shapes]


def _closing_bracket(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at ``text[start]``."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] in "([":
            depth += 1
        elif text[index] in ")]":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def _summary(arguments: argparse.Namespace) -> int:
    from .crawl import summary
    from .errors import IncompleteAnalysisError, InvalidArgumentError

    _check_html(arguments.html)
    _check_outputs(arguments.json, arguments.html)
    shapes: list[tuple[int, ...]] = arguments.input_shape or arguments.input_size
    dtype = _dtypes(arguments.dtype, len(shapes))
    if arguments.depth is not None and arguments.depth < 0:
        raise UsageError(f"--depth must be 0 or more (0: the totals alone); got {arguments.depth}")
    if arguments.device is not None:
        from ._devices import resolve_device

        try:
            resolve_device(arguments.device, supported=None)
        except InvalidArgumentError as error:
            raise UsageError(_as_flags(_one_line(str(error)))) from None
    columns = _col_names(arguments.col_names)
    model = _model_of(arguments.model)
    keyword = "input_shape" if arguments.input_shape else "input_size"
    inputs: dict[str, Any] = {keyword: shapes[0] if len(shapes) == 1 else shapes}
    table = io.StringIO()

    def analyse() -> tuple[Any, IncompleteAnalysisError | None]:
        try:
            report = summary(
                model,
                **inputs,
                dtype=dtype,
                device=arguments.device,
                mode=arguments.mode,
                depth=arguments.depth,
                receptive_field=arguments.receptive_field,
                effective_rf_stats=arguments.effective_rf_stats,
                col_names=columns,
                tensor_memory=arguments.tensor_memory,
                strict=arguments.strict,
                file=table,
            )
        except IncompleteAnalysisError as error:
            return error.report, error
        return report, None

    try:
        report, incomplete = _run_user_code(analyse)
    except UsageError as error:
        raise UsageError(_as_flags(str(error))) from None
    if arguments.json != "-":
        _emit(table.getvalue())
    if arguments.json is not None:
        _write_json(arguments.json, report)
    if arguments.html:
        from .render import render_report

        _write_output(arguments.html, render_report(report).encode("utf-8"))
    if incomplete is not None:
        listed = ", ".join(f"{name} ({status})" for name, status in incomplete.metrics)
        _say(
            f"{PROG} summary: --strict: requested metrics are incomplete: {listed}; the "
            "report's diagnostics say what is missing"
        )
        return 1
    return 0


def _workload_options(parser: argparse.ArgumentParser, metrics_help: str) -> None:
    """The options ``measure`` and ``compare`` share: device, work per call and passes."""
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps")
    parser.add_argument("--work-units", type=float, default=1.0, help="work units per call")
    parser.add_argument("--work-unit", default="calls", help="name of a work unit")
    parser.add_argument("--metrics", default=None, help=metrics_help)
    parser.add_argument(
        "--profiler-calls",
        type=int,
        default=100,
        help="calls of the profiler pass, 1 to 1,000,000; fewer run when they would pass "
        "--max-time (for compare, half of it per side)",
    )


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that ends each option with its default, as ``(default: 1.0)``.

    A flag (``store_true``, ``store_false``) and an option without a default value (``None``,
    whose help says what its absence means) show none; no help text states its own default.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)

    # Lines break at spaces only: an option name such as --work-units stays whole.
    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (usage stays in ``--help``) and defaults in help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Inspect cost, measure workloads and check changes of PyTorch models.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="measure the README workload and write its report (workload.json)"
    )
    demo.add_argument("--json", default="workload.json", help="where to write the report")
    demo.add_argument(
        "--html", default="workload.html", help="where to write its HTML page ('' for none)"
    )
    demo.set_defaults(handler=_demo)
    measure = commands.add_parser(
        "measure",
        help="measure a workload given as module:attr or path/to/file.py:attr",
        description=(
            "Measure a zero-argument callable. Example: python -m torchscan measure "
            "bench.py:workload --work-units 32 --work-unit samples --json out.json. Exit codes: "
            "0 measured, 1 the workload or its module raised (its traceback is printed), 2 usage "
            "(one line on standard error)."
        ),
    )
    measure.add_argument("workload", help="module:attr or path/to/file.py:attr")
    _workload_options(
        measure,
        "comma-separated passes: latency, operator_flops, tensor_memory, process_rss, "
        "profiler, hardware_peak (default: the first three)",
    )
    measure.add_argument("--min-time", type=float, default=1.0, help="minimum timing seconds")
    measure.add_argument("--max-time", type=float, default=10.0, help="maximum timing seconds")
    measure.add_argument("--json", default=None, help="write the report here ('-': stdout)")
    measure.add_argument("--html", default=None, help="write the report's HTML page here")
    measure.add_argument(
        "--profiler-trace",
        default=None,
        metavar="PATH",
        help="keep the profiler pass's Chrome trace in this file (needs profiler in --metrics; "
        "gzip-compressed when it ends in .gz); open it in Perfetto or chrome://tracing",
    )
    measure.add_argument(
        "--peak-flop-rate",
        type=float,
        default=None,
        metavar="FLOP_PER_S",
        help="declare the peak compute rate to compare with, in FLOP/s (for example 989e12); "
        "needs --peak-source",
    )
    measure.add_argument(
        "--peak-bandwidth",
        type=float,
        default=None,
        metavar="BYTES_PER_S",
        help="declare the peak memory bandwidth to compare with, in B/s (for example "
        "3.35e12); needs --peak-source",
    )
    measure.add_argument(
        "--peak-source",
        default=None,
        metavar="TEXT",
        help="where the declared peak comes from, with its precision and sparsity (for example "
        "'H100 SXM datasheet, dense BF16')",
    )
    measure.add_argument(
        "--gather",
        action="store_true",
        help="under torchrun: rank 0 gathers every rank's report and writes the merged "
        "distributed_benchmark report to --json/--html; the other ranks write nothing "
        "(without it, each rank writes its own, {rank} in the paths)",
    )
    measure.add_argument(
        "--rank-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="under torchrun: how long a rank waits for the others at a barrier before it "
        "reports them dead or hung",
    )
    measure.set_defaults(handler=_measure)
    compare = commands.add_parser(
        "compare",
        help="check a candidate against a baseline and time both, interleaved",
        description=(
            "Call a baseline and a candidate (zero-argument callables) once each and check their "
            "outputs, then time both in interleaved blocks and compare. Example: python -m "
            "torchscan compare base.py:workload fast.py:workload --rtol 1e-5 --atol 1e-6 "
            "--json comparison.json. Exit codes: 0 compared, 1 the output check failed (every "
            "delta withheld; the reports are still written) or a workload raised (its "
            "traceback is printed), 2 usage (one line on standard error)."
        ),
    )
    compare.add_argument("baseline", help="module:attr or path/to/file.py:attr")
    compare.add_argument("candidate", help="module:attr or path/to/file.py:attr")
    compare.add_argument(
        "--rtol", type=float, default=1e-5, help="relative tolerance of the output check"
    )
    compare.add_argument(
        "--atol", type=float, default=1e-8, help="absolute tolerance of the output check"
    )
    compare.add_argument(
        "--equal-nan", action="store_true", help="NaNs in the same places count as equal"
    )
    compare.add_argument(
        "--no-check-dtype",
        dest="check_dtype",
        action="store_false",
        help="compare outputs of different dtypes by value (an fp32 baseline, a bf16 candidate)",
    )
    _workload_options(
        compare,
        "comma-separated passes, as for measure (default: latency, operator_flops, tensor_memory)",
    )
    compare.add_argument(
        "--min-time", type=float, default=2.0, help="minimum seconds of interleaved timing"
    )
    compare.add_argument(
        "--max-time", type=float, default=10.0, help="maximum seconds of interleaved timing"
    )
    compare.add_argument(
        "--min-effect",
        type=float,
        default=0.02,
        help="smallest relative change that counts",
    )
    compare.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    compare.add_argument(
        "--json", default=None, help="write the comparison here ('-': stdout, no summary)"
    )
    compare.add_argument("--html", default=None, help="write the comparison's HTML page here")
    compare.add_argument("--baseline-json", default=None, help="write the baseline's report here")
    compare.add_argument("--candidate-json", default=None, help="write the candidate's report here")
    compare.add_argument("--check-json", default=None, help="write the output check here")
    compare.set_defaults(handler=_compare)
    _summary_parser(commands)
    for command in (parser, *commands.choices.values()):
        command.add_argument(
            "--version",
            action="version",
            version=_version_line(),
            help="print torchscan's version and exit",
        )
    return parser


def _summary_parser(commands: Any) -> None:
    """The ``summary`` command: ``torchscan.summary`` of a model that a file or module names."""
    from .validation import SUMMARY_COLUMNS

    summary = commands.add_parser(
        "summary",
        help="print the layer table of a model given as module:attr or path/to/file.py:attr",
        description=(
            "Analyse one evaluation forward of a model and print its layer table, as "
            "torchscan.summary does. MODEL names a torch.nn.Module, or a function or class that "
            "returns one when called with no arguments. Example: python -m torchscan summary "
            "model.py:make_model --input-shape 3,224,224 --json analysis.json. Exit codes: 0 "
            "analysed, 1 the model or its module raised (its traceback is printed) or --strict "
            "found an incomplete metric (after the outputs are written), 2 usage (one line on "
            "standard error)."
        ),
    )
    summary.add_argument(
        "model",
        metavar="MODEL",
        help="module:attr or path/to/file.py:attr: a torch.nn.Module, or a function or class "
        "that returns one",
    )
    inputs = summary.add_mutually_exclusive_group(required=True)
    inputs.add_argument(
        "--input-shape",
        action="append",
        type=_shape,
        metavar="SHAPE",
        help="shape of one input without the batch dimension, such as 3,224,224 (a batch of one "
        "is generated); repeat it for each positional input",
    )
    inputs.add_argument(
        "--input-size",
        action="append",
        type=_shape,
        metavar="SIZE",
        help="shape of one input with the batch dimension, such as 1,3,224,224 (torchinfo's "
        "input_size); repeat it for each positional input",
    )
    summary.add_argument(
        "--dtype",
        default=None,
        help="dtype of the generated inputs (float32, float16, bfloat16, int64, ...): one for "
        "all, or one per input separated by commas (default: the model's parameter dtype)",
    )
    summary.add_argument(
        "--device",
        default=None,
        help="cpu, cuda, cuda:N or mps; the model must already be there (default: the device "
        "of the model's parameters)",
    )
    summary.add_argument(
        "--mode",
        choices=("full", "structure"),
        default="full",
        help="full: shapes, parameters, FLOPs, MACs, DMAs and receptive fields; structure: "
        "shapes, parameters and storage only",
    )
    summary.add_argument(
        "--depth",
        type=int,
        default=None,
        metavar="N",
        help="show layers nested at most N deep: the model's children are 1 deep, 0 shows the "
        "totals alone (torchinfo's depth; also --max-depth; default: every layer); the report "
        "keeps them all",
    )
    summary.add_argument("--max-depth", dest="depth", type=int, help=argparse.SUPPRESS)
    summary.add_argument(
        "--col-names",
        default=None,
        metavar="NAMES",
        help="the table's columns after the layer name, in order, separated by commas: "
        f"{', '.join(SUMMARY_COLUMNS)} (torchinfo's names and torchscan's; default: "
        "output_size, num_params, trainable, module_flops, macs)",
    )
    summary.add_argument(
        "--receptive-field",
        action="store_true",
        help="add each layer's receptive field to the table",
    )
    summary.add_argument(
        "--effective-rf-stats",
        action="store_true",
        help="add each layer's effective stride and padding to the table",
    )
    summary.add_argument(
        "--tensor-memory",
        action="store_true",
        help="measure PyTorch's tensor memory peak of a second forward (added to the totals)",
    )
    summary.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a metric of a full analysis is partial or unavailable, after writing "
        "the outputs",
    )
    summary.add_argument(
        "--json", default=None, help="write the analysis report here ('-': stdout, no table)"
    )
    summary.add_argument("--html", default=None, help="write the report's HTML page here")
    summary.set_defaults(handler=_summary)


def _version_line() -> str:
    """What ``--version`` prints: ``torchscan 0.3.0``, as ``torchscan-report 0.3.0``."""
    return f"torchscan {_core.__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m torchscan`` on ``argv`` (default ``sys.argv[1:]``); return its exit code.

    0: done; 1: the output check of ``compare`` failed, or the user's module or workload raised
    (its traceback is printed); 2: a usage error (bad arguments, a workload reference that does
    not name a callable, a device that is not there, an output that cannot be written), printed
    as one line on standard error.
    """
    arguments = _parser().parse_args(argv)
    command = f"{PROG} {arguments.command}"
    try:
        return int(arguments.handler(arguments))
    except UsageError as error:
        _say(f"{command}: error: {error}")
        return 2
    except _UserCodeError as failure:
        _print_user_traceback(failure.error)
        return 1


def _say(line: str) -> None:
    """One line on standard error (nothing when standard error itself cannot be written)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        pass
