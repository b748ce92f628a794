"""Command lines: ``python -m torchscan`` and the ``torchscan-report`` console script."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from . import _core

__all__ = ["EXAMPLE_REPORT", "example_report_text", "main", "report_main"]

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


def _demo(arguments: argparse.Namespace) -> int:
    import torch

    from .workload import measure_workload

    print(
        "torchscan demo: measuring the README workload, torch.nn.Linear(128, 128) on a "
        "(32, 128) float32 input on cpu, with the default passes (latency, operator FLOPs, "
        "tensor memory); the report goes to "
        f"{arguments.json}" + (f" and its page to {arguments.html}." if arguments.html else "."),
        flush=True,
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
            workload, device="cpu", inputs=inputs, work_units=32, work_unit="samples"
        )
    finally:
        torch.set_num_threads(threads)
    _write_json(arguments.json, report)
    if arguments.html:
        from .render import render_report

        _write_text(arguments.html, render_report(report))
    return 0


def _write_text(path: str, text: str) -> None:
    """Write text atomically: a temporary file in the same folder, then a rename."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()


def _write_json(path: str, report: Any) -> None:
    """Write a report atomically: a temporary file in the same folder, then a rename."""
    text = json.dumps(report, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    _write_text(path, text)


def _load_reference(reference: str) -> Any:
    """Import ``module:attr`` or ``path/to/file.py:attr`` (a dotted attribute path is allowed)."""
    import importlib
    import importlib.util

    location, separator, attribute = reference.rpartition(":")
    if not separator or not location or not attribute:
        raise SystemExit(
            f"python -m torchscan: workload must be 'module:attr' or 'path/to/file.py:attr', "
            f"got {reference!r}"
        )
    if location.endswith(".py") or os.sep in location:
        path = Path(location).resolve()
        if not path.is_file():
            raise SystemExit(f"python -m torchscan: no such file: {location}")
        spec = importlib.util.spec_from_file_location(f"_torchscan_workload_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"python -m torchscan: cannot import {location}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(location)
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SystemExit(
                f"python -m torchscan: {location} has no attribute {attribute!r}"
            ) from None
    return target


def _measure(arguments: argparse.Namespace) -> int:
    from .workload import measure_workload

    workload = _load_reference(arguments.workload)
    metrics = arguments.metrics.split(",") if arguments.metrics else None
    report = measure_workload(
        workload,
        device=arguments.device,
        work_units=arguments.work_units,
        work_unit=arguments.work_unit,
        metrics=metrics,
        print_summary=arguments.json != "-",
        min_time_s=arguments.min_time,
        max_time_s=max(arguments.max_time, arguments.min_time),
    )
    if arguments.json is not None:
        _write_json(arguments.json, report)
    return 0


def _compare(arguments: argparse.Namespace) -> int:
    from .errors import TorchscanError
    from .experiment import compare_workloads

    baseline = _load_reference(arguments.baseline)
    candidate = _load_reference(arguments.candidate)
    metrics = arguments.metrics.split(",") if arguments.metrics else None
    try:
        experiment = compare_workloads(
            baseline,
            candidate,
            rtol=arguments.rtol,
            atol=arguments.atol,
            equal_nan=arguments.equal_nan,
            device=arguments.device,
            work_units=arguments.work_units,
            work_unit=arguments.work_unit,
            metrics=metrics,
            print_summary=arguments.json != "-",
            min_time_s=arguments.min_time,
            max_time_s=max(arguments.max_time, arguments.min_time),
            min_effect=arguments.min_effect,
            seed=arguments.seed,
        )
    except TorchscanError as error:
        print(f"python -m torchscan compare: {error}", file=sys.stderr)
        return 2
    if arguments.json is not None:
        _write_json(arguments.json, experiment.comparison)
    if arguments.html:
        from .render import render_report

        _write_text(arguments.html, render_report(experiment.comparison))
    for path, report in (
        (arguments.baseline_json, experiment.baseline),
        (arguments.candidate_json, experiment.candidate),
        (arguments.check_json, experiment.check),
    ):
        if path:
            _write_json(path, report)
    return 1 if experiment.comparison["check"]["status"] == "failed" else 0


def _workload_options(parser: argparse.ArgumentParser, metrics_help: str) -> None:
    """The options ``measure`` and ``compare`` share: device, work per call and passes."""
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps")
    parser.add_argument("--work-units", type=float, default=1.0, help="work units per call")
    parser.add_argument("--work-unit", default="calls", help="name of a work unit")
    parser.add_argument("--metrics", default=None, help=metrics_help)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torchscan",
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
            "bench.py:workload --work-units 32 --work-unit samples --json out.json"
        ),
    )
    measure.add_argument("workload", help="module:attr or path/to/file.py:attr")
    _workload_options(
        measure,
        "comma-separated passes: latency, operator_flops, tensor_memory, process_rss, "
        "profiler (default: the first three)",
    )
    measure.add_argument("--min-time", type=float, default=1.0, help="minimum timing seconds")
    measure.add_argument("--max-time", type=float, default=10.0, help="maximum timing seconds")
    measure.add_argument("--json", default=None, help="write the report here ('-': stdout)")
    measure.set_defaults(handler=_measure)
    compare = commands.add_parser(
        "compare",
        help="check a candidate against a baseline and time both, interleaved",
        description=(
            "Call a baseline and a candidate (zero-argument callables) once each and check their "
            "outputs, then time both in interleaved blocks and compare. Example: python -m "
            "torchscan compare base.py:workload fast.py:workload --rtol 1e-5 --atol 1e-6 "
            "--json comparison.json. Exit codes: 0 compared, 1 the output check failed (every "
            "delta withheld; the reports are still written) or a workload could not be loaded, "
            "2 usage."
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
        help="smallest relative change that counts (default 0.02)",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m torchscan`` on ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    arguments = _parser().parse_args(argv)
    return int(arguments.handler(arguments))
