"""Command lines: ``python -m torchscan`` and the ``torchscan-report`` console script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import resources

from . import _core
from .validation import format_summary, validate_report

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


def _demo(_: argparse.Namespace) -> int:
    text = example_report_text()
    kind = validate_report(text)
    print(
        "torchscan demo: validated the bundled example "
        f"{kind} report (torch.nn.Linear(128, 128) on a (32, 128) float32 input, cpu) "
        "against report schema version 1 and printed its summary with the core's text renderer. "
        "This build does not measure workloads yet; the numbers are those of the bundled report."
    )
    print()
    print(format_summary(text), end="")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torchscan",
        description="Inspect cost, measure workloads and check changes of PyTorch models.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="validate the bundled example report and print its summary"
    )
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m torchscan`` on ``argv`` (default ``sys.argv[1:]``); return its exit code."""
    arguments = _parser().parse_args(argv)
    return int(arguments.handler(arguments))
