#!/usr/bin/env python
"""Measure the `torchscan-report` command on a 10,000-layer analysis against its targets.

The report is a real analysis: ``crawl_module`` of an ``nn.Sequential`` of 9,999 modules
(``Linear(16, 16)`` and ``ReLU`` alternating) plus its root, saved with ``json.dumps(indent=2)``
as a user would save it. The standalone release binary (``cargo build --release -p
torchscan-report``) then runs as fresh processes, interleaved round after round, and every target
uses medians. This is a measurement, not a test: it prints a Markdown table with PASS/FAIL per
target and always exits 0.

Targets
  (a) ``torchscan-report validate F`` followed by ``torchscan-report render F -o out.html`` takes
      at most 0.5 s (median of the two run back to back).
  (b) ``torchscan-report validate F`` takes at most the time of
      ``python -c "import json; json.load(open(F))"`` (medians).
  (c) the HTML page of the report is under 10 MB.

Usage
  python benches/bench_render.py            # full run (~1 minute on a 2-core VM, build excluded)
  python benches/bench_render.py --quick    # fewer repetitions, a smoke run
  python benches/bench_render.py --json out.json
  python benches/bench_render.py --binary path/to/torchscan-report   # another build, not rebuilt
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

import torchscan

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, interleaved, machine  # noqa: E402

LAYERS = 10_000
LIMIT_VALIDATE_RENDER_S = 0.5
LIMIT_HTML_BYTES = 10_000_000
BINARY = REPO / "target" / "release" / "torchscan-report"


# --------------------------------------------------------------------------- helpers


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _verdict(value: float, limit: float) -> str:
    return "PASS" if value <= limit else "FAIL"


def _run(args: list[str]) -> None:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def build_binary() -> float:
    """Build the release binary (a no-op when it is up to date); return the seconds it took."""
    env = dict(os.environ)
    env.setdefault("PYO3_PYTHON", sys.executable)
    started = time.perf_counter()
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--quiet", "-p", "torchscan-report"],
        cwd=REPO,
        env=env,
        check=True,
    )
    return time.perf_counter() - started


def make_report(layers: int) -> dict[str, Any]:
    """A real analysis with ``layers`` layers: the root and ``layers - 1`` children."""
    torch.manual_seed(0)
    children = [nn.Linear(16, 16) if i % 2 == 0 else nn.ReLU() for i in range(layers - 1)]
    model = nn.Sequential(*children).eval()
    report = torchscan.crawl_module(model, (16,))
    if len(report["layers"]) != layers:
        raise RuntimeError(f"the analysis has {len(report['layers'])} layers, not {layers}")
    torchscan.validate_report(report)
    return dict(report)


# --------------------------------------------------------------------------- the benchmark


def bench(repeats: int, warmup: int, workdir: Path, binary_path: Path) -> dict[str, Any]:
    crawl_started = time.perf_counter()
    report = make_report(LAYERS)
    crawl_s = time.perf_counter() - crawl_started
    report_file = workdir / "analysis-10k.json"
    report_file.write_text(json.dumps(report, indent=2), encoding="utf-8")
    page_file = workdir / "analysis-10k.html"
    binary = str(binary_path)
    report_path = str(report_file)

    def validate() -> None:
        _run([binary, "validate", report_path])

    def render() -> None:
        _run([binary, "render", report_path, "-o", str(page_file)])

    def validate_and_render() -> None:
        validate()
        render()

    def json_load() -> None:
        _run([sys.executable, "-c", f"import json; json.load(open({report_path!r}))"])

    def python_start() -> None:
        _run([sys.executable, "-c", "pass"])

    times = interleaved(
        {
            "validate": validate,
            "render": render,
            "validate_and_render": validate_and_render,
            "json_load": json_load,
            "python_start": python_start,
        },
        repeats=repeats,
        warmup=warmup,
    )
    page = page_file.read_bytes()
    same_page = page == torchscan.render_report(report_file).encode("utf-8")
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "binary": binary,
        "layers": LAYERS,
        "repeats": repeats,
        "warmup": warmup,
        "crawl_s": crawl_s,
        "report_bytes": report_file.stat().st_size,
        "html_bytes": len(page),
        "html_equals_render_report": same_page,
        "median_ms": {name: _ms(value) for name, value in median.items()},
        "min_ms": {name: _ms(min(values)) for name, values in times.items()},
        "max_ms": {name: _ms(max(values)) for name, values in times.items()},
        "validate_over_json_load": median["validate"] / median["json_load"],
        "limit_validate_render_ms": _ms(LIMIT_VALIDATE_RENDER_S),
        "limit_html_bytes": LIMIT_HTML_BYTES,
    }


# --------------------------------------------------------------------------- report


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"torchscan-report benchmark — {m['date']}{' (quick)' if results['quick'] else ''}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs; Python {m['python']}, torch {m['torch']}, "
        f"torchscan {m['torchscan']}, commit {m['git_commit']}"
        f"{' + uncommitted changes' if m['git_tracked_changes'] else ''}",
        "",
    ]
    r = results.get("render")
    if not r:
        return "\n".join(lines)
    md = r["median_ms"]
    lo = r["min_ms"]
    both = md["validate_and_render"]
    limit = r["limit_validate_render_ms"]
    ratio = r["validate_over_json_load"]
    html_mb = r["html_bytes"] / 1e6
    lines += [
        f"Binary: `{r['binary']}`.",
        "",
        f"Report: {r['layers']:,} layers, {r['report_bytes'] / 1e6:.1f} MB of JSON "
        f"(crawled in {r['crawl_s']:.1f} s); {r['repeats']} interleaved rounds after "
        f"{r['warmup']} warm-up, fresh processes, medians (minima in brackets).",
        "",
        "| Target | Measurement | Value | Limit | Result |",
        "|---|---|---|---|---|",
        f"| (a) validate + render | `torchscan-report validate F` then `render F -o out.html` "
        f"| **{both:.0f} ms** ({lo['validate_and_render']:.0f}) | ≤ {limit:.0f} ms "
        f"| **{_verdict(both, limit)}** |",
        f"| | `torchscan-report validate F` alone | {md['validate']:.0f} ms "
        f"({lo['validate']:.0f}) | | info |",
        f"| | `torchscan-report render F -o out.html` alone | {md['render']:.0f} ms "
        f"({lo['render']:.0f}) | | info |",
        f'| (b) validate vs JSON load | `python -c "import json; json.load(open(F))"` '
        f"| {md['json_load']:.0f} ms ({lo['json_load']:.0f}) | | |",
        f"| | **validate / json.load** | **{ratio:.2f}x** | ≤ 1.00x | **{_verdict(ratio, 1.0)}** |",
        f'| | `python -c "pass"` (interpreter start, for reference) '
        f"| {md['python_start']:.0f} ms ({lo['python_start']:.0f}) | | info |",
        f"| (c) HTML size | the page of the report | **{html_mb:.2f} MB** "
        f"| < {r['limit_html_bytes'] / 1e6:.0f} MB "
        f"| **{'PASS' if r['html_bytes'] < r['limit_html_bytes'] else 'FAIL'}** |",
        f"| | page identical to `torchscan.render_report` | "
        f"{'yes' if r['html_equals_render_report'] else 'NO'} | | info |",
    ]
    lines.append("")
    lines.append(f"Total benchmark wall time: {results['wall_s']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument(
        "--no-build", action="store_true", help="use target/release/torchscan-report as it is"
    )
    parser.add_argument(
        "--binary",
        metavar="PATH",
        type=Path,
        help="measure this torchscan-report binary instead (nothing is built)",
    )
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    started = time.perf_counter()
    results: dict[str, Any] = {"quick": args.quick, "machine": machine()}
    workdir = Path(tempfile.mkdtemp(prefix="torchscan-bench-render-"))
    try:
        binary = args.binary or BINARY
        if not (args.no_build or args.binary):
            results["build_s"] = build_binary()
        if not binary.exists():
            raise FileNotFoundError(
                f"{binary} is missing: cargo build --release -p torchscan-report"
            )
        repeats, warmup = (3, 1) if args.quick else (15, 2)
        results["render"] = bench(repeats, warmup, workdir, binary)
    except Exception as exc:  # a measurement: report what broke, still exit 0
        detail = getattr(exc, "stderr", None)
        results["error"] = f"{type(exc).__name__}: {exc}" + (
            f"\n{detail.decode(errors='replace')}" if isinstance(detail, bytes) else ""
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["wall_s"] = time.perf_counter() - started

    return finish(results, render(results), args.json)


if __name__ == "__main__":
    sys.exit(main())
