"""Makes the bundled example report again, from the README's example run as written.

Usage (from the repository root, in the project's environment)::

    .venv/bin/python scripts/example_report.py [--allow-warnings]

Runs the first example of the README's "Start with your workload" in a scratch folder (one
PyTorch thread, the default measurement budget), then writes what it measured:

- ``python/torchscan/data/example_workload.json``: the report the example wrote;
- ``tests/fixtures/example_workload.summary.txt``: that report's text summary;
- ``README.md``: the same summary in the block under the example, and the line above it that
  says where the run was made (CPU, platform, Python and PyTorch versions, from the report).

``tests/test_readme_example.py`` checks that a fresh run of the example prints the README's
lines, and the golden tests that the bundled report prints the fixture. A run with a warning
(``noisy_machine`` on a busy machine, for one) is refused, since the README would show it: run
again on a quiet machine, or pass ``--allow-warnings``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BUNDLED = ROOT / "python" / "torchscan" / "data" / "example_workload.json"
SUMMARY = ROOT / "tests" / "fixtures" / "example_workload.summary.txt"

#: The paragraph that says where the shown run was made, and the summary block under it.
SHOWN_RUN = re.compile(r"One observed run \(.*?\):\n\n```text\n.*?```\n", re.DOTALL)


def readme_example(readme: str) -> str:
    """The first Python block of the README's "Start with your workload" section."""
    section = readme.split("## Start with your workload", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def run_example(code: str) -> dict[str, Any]:
    """Runs the README's example in a scratch folder and returns the report it wrote."""
    with tempfile.TemporaryDirectory() as scratch:
        here = os.getcwd()
        os.chdir(scratch)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, "README.md#start-with-your-workload", "exec"), {})
            report: dict[str, Any] = json.loads(Path("workload.json").read_text("utf-8"))
        finally:
            os.chdir(here)
    return report


def shown_run(report: dict[str, Any], summary: str) -> str:
    """The README's paragraph on where the run was made, and the summary block under it."""
    context = report["context"]
    words = (
        f"One observed run ({context['cpu_model']} CPU, {context['platform']}, Python "
        f"{context['python_version']}, PyTorch {context['torch_version']}, FP32, one PyTorch "
        "thread; the report is bundled as `torchscan/data/example_workload.json`, written "
        "by `scripts/example_report.py`):"
    )
    return "\n".join(textwrap.wrap(words, width=100)) + f"\n\n```text\n{summary}```\n"


def main() -> int:
    """Runs the example and writes the bundled report, the summary fixture and the README."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--allow-warnings",
        action="store_true",
        help="write a run whose report has warnings (the README would show them)",
    )
    arguments = parser.parse_args()
    import torchscan

    readme = README.read_text("utf-8")
    report = run_example(readme_example(readme))
    warnings = [d for d in report["diagnostics"] if d["severity"] != "info"]
    if warnings and not arguments.allow_warnings:
        for diagnostic in warnings:
            print(f"{diagnostic['code']}: {diagnostic['message']}", file=sys.stderr)
        print(
            "example_report.py: the run has warnings, which the README would show; run it again "
            "on a quiet machine, or pass --allow-warnings",
            file=sys.stderr,
        )
        return 1
    torchscan.validate_report(report)
    summary = torchscan.format_summary(report)
    if not SHOWN_RUN.search(readme):
        print(
            "example_report.py: README.md has no 'One observed run (...):' block", file=sys.stderr
        )
        return 1
    BUNDLED.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    SUMMARY.write_text(summary, encoding="utf-8")
    README.write_text(
        SHOWN_RUN.sub(lambda _: shown_run(report, summary), readme, count=1), encoding="utf-8"
    )
    print(summary, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
