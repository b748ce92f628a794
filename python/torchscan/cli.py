"""Command lines: ``python -m torchscan`` and the ``torchscan-report`` console script."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from importlib import resources
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
    """The user's module or workload raised ``error``: its traceback is shown, exit code 1.

    ``what`` names the code that ran (``the workload bench.py:workload``), for the line that
    follows the traceback of a ``SystemExit``.
    """

    def __init__(self, error: BaseException, what: str = "the user's code") -> None:
        super().__init__(str(error))
        self.error = error
        self.what = what


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


@dataclass(frozen=True)
class _Output:
    """One output option of a command: its flag, its path and who writes it in a job of ranks."""

    option: str
    path: str | None
    every_rank: bool = True
    """Whether every rank of a job writes it (else rank 0 alone, as with ``--gather``)."""
    example: str = "rank{rank}.json"
    """A path with ``{rank}`` to show in the refusal of a path without it."""
    remedy: str = ""
    """What else would do, after the example (``, or pass --gather ...``)."""
    checked_apart: bool = False
    """Whether its directory is checked elsewhere (``--profiler-trace``, as ``profiler_trace``)."""


def _for_rank(path: str | None, rank: int) -> str | None:
    return path.replace("{rank}", str(rank)) if path else path


def _place_outputs(outputs: Sequence[_Output], rank: int, world: int) -> list[_Output]:
    """The outputs of this rank, ``{rank}`` replaced by its rank in every path, before any check.

    In a job of several ranks every rank writes its own outputs (rank 0 alone those that are not
    ``every_rank``, whose path is ``None`` on the others), so a path without ``{rank}`` would have
    the ranks overwrite each other: it is refused, as is ``-`` (the ranks' outputs would
    interleave), and so are paths that name one file for two ranks (``out{rank}/../r.json``).
    """
    if world <= 1:
        return [replace(output, path=_for_rank(output.path, rank)) for output in outputs]
    placed = []
    for output in outputs:
        option, path = output.option, output.path
        if not path:
            placed.append(output)
            continue
        if not output.every_rank:
            placed.append(replace(output, path=_for_rank(path, rank) if rank == 0 else None))
            continue
        if path == "-":
            raise UsageError(
                f"{option} - in a job of {world} ranks would interleave their outputs: write "
                f"files ({option} {output.example}){output.remedy}"
            )
        if "{rank}" not in path:
            raise UsageError(
                f"{option} {path} in a job of {world} ranks: every rank writes its own, so put "
                f"{{rank}} in the path ({option} {output.example}){output.remedy}"
            )
        placed.append(replace(output, path=_for_rank(path, rank)))
    _refuse_shared_by_ranks(outputs, world)
    return placed


def _refuse_shared_by_ranks(outputs: Sequence[_Output], world: int) -> None:
    """Refuse paths with ``{rank}`` that still name one file for two ranks."""
    owners: dict[str, tuple[int, _Output, str]] = {}
    for output in outputs:
        if not output.path or output.path == "-":
            continue
        for rank in range(world) if output.every_rank else (0,):
            path = _for_rank(output.path, rank) or ""
            key = os.path.normcase(os.path.realpath(path))
            first = owners.setdefault(key, (rank, output, path))
            if first[0] != rank:  # one rank's own outputs are checked apart, with the inputs
                other_rank, other, other_path = first
                raise UsageError(
                    f"{output.option} {output.path} of rank {rank} ({path}) is the same file as "
                    f"{other.option} {other.path} of rank {other_rank} ({other_path}): every "
                    "rank needs files of its own"
                )


def _job_place() -> tuple[int, int]:
    """The rank of this process and the world size of its job; ``(0, 1)`` outside one.

    An initialised default process group says; else ``RANK`` and ``WORLD_SIZE`` as ``torchrun``
    sets them. ``torch.distributed`` is not imported for this: no group exists before it is.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1  # measure_workload names the bad variable


def _refuse_in_job(command: str) -> None:
    """Refuse to run ``command``, which cannot run per rank, in a job of several ranks."""
    rank, world = _job_place()
    if world > 1:
        raise UsageError(
            f"{command} cannot run per rank: this is rank {rank} of a job of {world} ranks "
            "(torchrun, or WORLD_SIZE set), where every rank would run both workloads and write "
            "the same outputs; run it in one process, without torchrun, or measure each workload "
            "under torchrun (python -m torchscan measure ... --gather --json base.json) and "
            "compare the reports with torchscan-report compare"
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


def _same_file(first: str, second: str) -> bool:
    """Whether two paths name one file: one inode (hard links too) or one resolved path.

    The null device is never one file with anything: writing it twice loses nothing.
    """
    try:
        stats = os.stat(first), os.stat(second)
    except OSError:
        stats = None
    if stats is not None:
        if not os.path.samestat(*stats):
            return False
        try:
            return not os.path.samestat(stats[0], os.stat(os.devnull))
        except OSError:
            return True
    return os.path.normcase(os.path.realpath(first)) == os.path.normcase(os.path.realpath(second))


def _refuse_clobbering(outputs: Sequence[_Output], inputs: Sequence[tuple[str, str]]) -> None:
    """Refuse an output that is the same file as an input or as another output, or two ``-``.

    ``inputs`` are ``(what, reference)`` pairs (``("the workload", "bench.py:workload")``): the
    file a reference names, found without importing it, must not be overwritten.
    """
    from . import _references

    files: list[tuple[str, str, bool]] = []  # (how it is named, path, whether an output)
    # What standard output is (a file, a pipe, a terminal), to which "-" writes.
    standard_output = "/dev/stdout" if os.path.exists("/dev/stdout") else None
    for what, reference in inputs:
        location = reference.rpartition(":")[0]
        path = _references.location_file(location) if location else None
        if path is not None:
            files.append((f"{what} {reference}", path, False))
    to_stdout: str | None = None
    for output in outputs:
        if not output.path:
            continue
        if output.path == "-":
            if to_stdout is not None:
                raise UsageError(
                    f"{to_stdout} - and {output.option} - would both write to standard output: "
                    "give one of them a file"
                )
            to_stdout = output.option
            if standard_output is None:
                continue
        named = f"{output.option} {output.path}"
        written = output.path if output.path != "-" else standard_output or output.path
        for other, path, is_output in files:
            if _same_file(written, path):
                harm = "one would overwrite the other" if is_output else "it would be overwritten"
                raise UsageError(
                    f"{named} is the same file as {other}: {harm}; every output needs a file of "
                    "its own, apart from the inputs"
                )
        files.append((named, written, True))


def _checked_outputs(
    outputs: Sequence[_Output], inputs: Sequence[tuple[str, str]], place: tuple[int, int]
) -> dict[str, str | None]:
    """Every output of this rank by option, ``{rank}`` replaced, checked before anything runs."""
    placed = _place_outputs(outputs, *place)
    _check_outputs(*(output.path for output in placed if not output.checked_apart))
    _refuse_clobbering(placed, inputs)
    return {output.option: output.path for output in placed}


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """While active, what the user's code prints goes to standard error, not standard output.

    For ``--json -``, where standard output holds the JSON alone: Python's ``sys.stdout`` is
    standard error and file descriptor 1 a copy of descriptor 2 (so writes of C code follow),
    until the block ends, on every path; what was buffered is flushed to standard error first.
    """
    if not active:
        yield
        return
    _flush_stdout()
    saved_fd: int | None = None
    try:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2: Python's streams are all there is to redirect
        if saved_fd is not None:
            os.close(saved_fd)
            saved_fd = None
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        _flush_stdout()
        sys.stdout = saved_stdout
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def _flush_stdout() -> None:
    """Flush Python's standard output and C's stdio buffers (what C code printed)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).fflush(None)


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


def _run_user_code(run: Callable[[], Any], what: str = "the user's code") -> Any:
    """Call ``run`` (a measurement) and sort its exceptions by whose they are.

    A torchscan error raised while no user code was running is a usage error (exit 2); any
    exception that came through the user's code is the user's (exit 1, with its traceback),
    ``SystemExit`` included: ``what`` (``the workload bench.py:workload``) called ``sys.exit()``
    while it ran, which must not end the command as if it had succeeded.
    """
    from .errors import DistributedMeasurementError, TorchscanError

    try:
        return run()
    except SystemExit as error:
        raise _UserCodeError(error, what) from None
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

    from .measure.workload import measure_workload

    _check_html(arguments.html)
    paths = _checked_outputs(
        [_Output("--json", arguments.json), _Output("--html", arguments.html)], [], _job_place()
    )
    json_path, html_path = paths["--json"], paths["--html"]
    to_stdout = json_path == "-"  # the report alone on standard output, as for measure
    if not to_stdout:
        _emit(
            "torchscan demo: measuring the README workload, torch.nn.Linear(128, 128) on a "
            "(32, 128) float32 input on cpu, with the default passes (latency, operator FLOPs, "
            "tensor memory); the report goes to "
            f"{json_path}" + (f" and its page to {html_path}." if html_path else ".") + "\n"
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
    if json_path is not None:
        _write_json(json_path, report)
    if html_path:
        from .reports.render import render_report

        _write_output(html_path, render_report(report).encode("utf-8"))
    return 0


def _print_summary(report: Any) -> None:
    from .reports.validation import format_summary

    _emit(format_summary(report))


def _import_location(location: str) -> Any:
    """The module the left side of a reference names, imported by the one loader.

    A path (``path/to/file.py``) is imported once per process under a private name, with its
    folder first on ``sys.path`` while it is imported (see :mod:`torchscan._references`); a
    dotted name is imported as ``import`` does.
    """
    from . import _references

    if not _references.is_file_location(location) and not all(
        part.isidentifier() for part in location.split(".")
    ):
        raise UsageError(f"not a module name or a .py file: {location!r}")
    try:
        if _references.is_file_location(location):
            return _references.import_file(location)
        return _references.import_module(location)
    except _references.LoaderError as error:
        raise UsageError(_one_line(str(error))) from None
    except ModuleNotFoundError as error:
        missing = _references.missing_module(error, location)
        if missing is not None:
            raise UsageError(f"no module named {missing!r}") from None
        raise _UserCodeError(error) from None  # the module exists; an import inside it failed
    except Exception as error:  # the module exists; its own code failed
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
    module = _import_location(location)
    target: Any = module
    for part in parts:
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(f"{location} has no attribute {attribute!r}") from None
        except (SystemExit, KeyboardInterrupt) as error:  # a module-level __getattr__'s
            raise UsageError(
                f"reading {attribute!r} of {location} raised {type(error).__name__}"
                + (f"({error.code!r})" if isinstance(error, SystemExit) else "")
            ) from None
        except Exception as error:  # a module-level __getattr__ or property of the user's
            raise _UserCodeError(error) from None
    return target


def _metrics_of(arguments: argparse.Namespace) -> list[str] | None:
    return arguments.metrics.split(",") if arguments.metrics else None


def _check_workload_options(arguments: argparse.Namespace) -> None:
    """The checks ``measure_workload`` makes, before the user's module is imported."""
    from ._devices import resolve_device
    from .errors import InvalidArgumentError
    from .measure.pipeline import (
        check_budget,
        check_metrics,
        check_profiler_calls,
        check_work,
    )

    try:
        check_metrics(_metrics_of(arguments))
        check_work(arguments.work_units, arguments.work_unit)
        check_budget(arguments.min_time, _max_time(arguments), 1, 0.0)
        check_profiler_calls(arguments.profiler_calls)
        resolve_device(arguments.device)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None


def _check_profiler_trace(arguments: argparse.Namespace, path: str | None) -> None:
    """``--profiler-trace`` (``path``, ``{rank}`` replaced), checked as ``profiler_trace`` is."""
    from .errors import InvalidArgumentError
    from .measure.pipeline import check_metrics, check_profiler_trace

    try:
        check_profiler_trace(path, check_metrics(_metrics_of(arguments)))
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None


def _peak_of(arguments: argparse.Namespace) -> dict[str, Any] | None:
    """``--peak-flop-rate``, ``--peak-bandwidth`` and ``--peak-source`` as ``peak=``.

    Checked as ``measure_workload`` checks it, the options named in the message; ``None`` when
    none of them is given.
    """
    from .errors import InvalidArgumentError
    from .measure.peak import check_peak

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
    from .measure.workload import measure_workload

    _check_html(arguments.html)
    if arguments.profiler_trace == "-":
        raise UsageError("--profiler-trace needs a file name; '-' (standard output) is refused")
    place = _job_place()
    paths = _measure_outputs(arguments, place)
    _check_workload_options(arguments)
    _check_profiler_trace(arguments, paths["--profiler-trace"])
    from .errors import InvalidArgumentError
    from .measure.workload import check_rank_timeout

    try:
        check_rank_timeout(arguments.rank_timeout)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None
    peak = _peak_of(arguments)
    with _stdout_to_stderr(paths["--json"] == "-"):
        workload = _load_reference(arguments.workload)
        if _job_place() != place:
            # The module's import joined a process group of its own: its rank is the one.
            place = _job_place()
            paths = _measure_outputs(arguments, place)
            _check_profiler_trace(arguments, paths["--profiler-trace"])
        report = _run_user_code(
            lambda: measure_workload(
                workload,
                **_timing_options(arguments),
                profiler_trace=paths["--profiler-trace"],
                gather=arguments.gather,
                rank_timeout_s=arguments.rank_timeout,
                peak=peak,
            ),
            f"the workload {arguments.workload}",
        )
    json_path, html_path = paths["--json"], paths["--html"]
    if json_path != "-" and place[0] == 0:
        _print_summary(report)
    if json_path is not None:
        _write_json(json_path, report)
    if html_path:
        from .reports.render import render_report

        _write_output(html_path, render_report(report).encode("utf-8"))
    return 0


def _measure_outputs(
    arguments: argparse.Namespace, place: tuple[int, int]
) -> dict[str, str | None]:
    """``--json``, ``--html`` and ``--profiler-trace`` of this rank, checked.

    In a job of several ranks, each rank writes its own report unless ``--gather`` has rank 0
    write the merged one (the other ranks then write none), and every rank writes its own trace,
    with ``--gather`` too: the merged report keeps each rank's report, which names its trace.
    """
    gather = ", or pass --gather so that rank 0 writes the merged report"
    report_rank = not arguments.gather
    outputs = [
        _Output("--json", arguments.json, report_rank, remedy=gather),
        _Output("--html", arguments.html, report_rank, remedy=gather),
        _Output(
            "--profiler-trace",
            arguments.profiler_trace,
            example="trace{rank}.json",
            remedy="; --gather gathers the reports, not the traces",
            checked_apart=True,
        ),
    ]
    return _checked_outputs(outputs, [("the workload", arguments.workload)], place)


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
    from .errors import InvalidArgumentError
    from .measure.experiment import compare_workloads
    from .reports.comparison import check_comparison_options

    _refuse_in_job(f"{PROG} compare")
    _check_html(arguments.html)
    paths = _checked_outputs(
        [
            _Output("--json", arguments.json),
            _Output("--html", arguments.html),
            _Output("--baseline-json", arguments.baseline_json),
            _Output("--candidate-json", arguments.candidate_json),
            _Output("--check-json", arguments.check_json),
        ],
        [("the baseline", arguments.baseline), ("the candidate", arguments.candidate)],
        (0, 1),
    )
    _check_workload_options(arguments)
    try:
        check_comparison_options(0.95, 2000, arguments.seed, arguments.min_effect)
        from .measure.output_check import check_tolerance

        check_tolerance("rtol", arguments.rtol)
        check_tolerance("atol", arguments.atol)
    except InvalidArgumentError as error:
        raise UsageError(_one_line(str(error))) from None
    to_stdout = "-" in paths.values()  # one JSON document alone on standard output
    with _stdout_to_stderr(to_stdout):
        baseline = _load_reference(arguments.baseline)
        candidate = _load_reference(arguments.candidate)
        # A module that joined a process group of its own at import: still one process only.
        _refuse_in_job(f"{PROG} compare")
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
            ),
            f"the baseline {arguments.baseline} or the candidate {arguments.candidate}",
        )
    json_path = paths["--json"]
    if not to_stdout:
        _print_summary(experiment.comparison)
    if json_path is not None:
        _write_json(json_path, experiment.comparison)
    html_path = paths["--html"]
    if html_path:
        from .reports.render import render_report

        _write_output(html_path, render_report(experiment.comparison).encode("utf-8"))
    for option, report in (
        ("--baseline-json", experiment.baseline),
        ("--candidate-json", experiment.candidate),
        ("--check-json", experiment.check),
    ):
        path = paths[option]
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
    from .reports.validation import check_col_names

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
    model = _run_user_code(target, f"the model {reference}")
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
    paths = _checked_outputs(
        [_Output("--json", arguments.json), _Output("--html", arguments.html)],
        [("the model", arguments.model)],
        _job_place(),
    )
    json_path, html_path = paths["--json"], paths["--html"]
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
    to_stdout = json_path == "-"
    with _stdout_to_stderr(to_stdout):
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
        with _stdout_to_stderr(to_stdout):
            report, incomplete = _run_user_code(analyse, f"the model {arguments.model}")
    except UsageError as error:
        raise UsageError(_as_flags(str(error))) from None
    if not to_stdout:
        _emit(table.getvalue())
    if json_path is not None:
        _write_json(json_path, report)
    if html_path:
        from .reports.render import render_report

        _write_output(html_path, render_report(report).encode("utf-8"))
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
            "outputs, then time both in interleaved blocks and compare (torchscan-report compare "
            "compares two saved benchmark reports instead). Example: python -m "
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
    from .reports.validation import SUMMARY_COLUMNS

    summary = commands.add_parser(
        "summary",
        help="print the layer table of a model given as module:attr or path/to/file.py:attr",
        description=(
            "Analyse one evaluation forward of a model and print its layer table, as "
            "torchscan.summary does (torchscan-report summary prints the summary of a saved "
            "report instead). MODEL names a torch.nn.Module, or a function or class that "
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
        if isinstance(failure.error, SystemExit):
            _say(
                f"{command}: error: {failure.what} raised SystemExit({failure.error.code!r}) "
                "while it ran (it called sys.exit() or exit()): the code measured or analysed "
                "must return; nothing was written"
            )
        return 1


def _say(line: str) -> None:
    """One line on standard error (nothing when standard error itself cannot be written)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        pass
