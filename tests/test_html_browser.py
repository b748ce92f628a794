"""Rendered reports opened in a real browser: Debian's headless Chromium, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: JSON messages ending in NUL on file descriptors 3
and 4), with the standard library only.

Every fixture page must draw something (a screenshot with many non-background pixels), show its
kind, metric names, status badges and charts in the DOM, log no console error, load nothing from
the network, and a report whose strings carry markup must execute none of it.

Without ``chromium`` these tests are skipped, except under ``CI=true``, where they fail: CI must
run them (``make test`` installs the package).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from torchscan import compare_benchmarks, render_report, validate_report

from .conftest import ROOT

FIXTURES = sorted((ROOT / "tests/fixtures/reports").glob("*.json")) + sorted(
    (ROOT / "python/torchscan/data").glob("*.json")
)
BROWSER_NAMES = ("chromium", "chromium-browser")
VIEWPORT = (1000, 1400)
# Seconds: a start, one protocol call, one page load. A test never waits longer than these.
START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 20.0
# The shortest fixture page draws about 3% of a 1000x1400 viewport; an empty page draws nothing.
MIN_DRAWN_FRACTION = 0.01


def find_browser() -> str | None:
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def require_browser() -> str:
    found = find_browser()
    if found is not None:
        return found
    reason = "Debian's chromium is not installed (apt-get install chromium; `make test` does it)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the browser tests")
    pytest.skip(reason)


# --------------------------------------------------------------------------- the protocol


class BrowserError(RuntimeError):
    """The browser failed, answered with an error, or did not answer in time."""


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of ``fd`` numbered 10 or more; ``fd`` itself is closed."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """One headless Chromium process and its DevTools pipe; every call has a deadline."""

    def __init__(self, executable: str, profile: Path) -> None:
        # Every descriptor above 9 first, so that mapping them onto 3 and 4 cannot overwrite one.
        to_browser_read, to_browser_write = (_high_fd(fd) for fd in os.pipe())
        from_browser_read, from_browser_write = (_high_fd(fd) for fd in os.pipe())
        self._log = open(profile / "chromium.log", "wb")  # noqa: SIM115 (closed in close())
        # The browser reads commands on fd 3 and writes answers on fd 4.
        file_actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, self._log.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, self._log.fileno(), 2),
            (os.POSIX_SPAWN_DUP2, to_browser_read, 3),
            (os.POSIX_SPAWN_DUP2, from_browser_write, 4),
        ]
        width, height = VIEWPORT
        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--force-color-profile=srgb",
            f"--window-size={width},{height}",
            f"--user-data-dir={profile / 'user-data'}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        try:
            # A session of its own, so that close() ends the browser and every helper it started.
            self.pid = os.posix_spawn(
                executable, args, dict(os.environ), file_actions=file_actions, setsid=True
            )
        except OSError:
            for fd in (to_browser_write, from_browser_read):
                os.close(fd)
            self._log.close()
            raise
        finally:
            os.close(to_browser_read)
            os.close(from_browser_write)
        self._write_fd = to_browser_write
        self._read_fd = from_browser_read
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._write_fd, self._read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        self._log.close()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("the browser did not answer in time")
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def log_tail(self) -> str:
        self._log.flush()
        text = (Path(self._log.name)).read_text(encoding="utf-8", errors="replace")
        return text[-2000:]

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        payload = json.dumps(command).encode() + b"\0"
        deadline = time.monotonic() + timeout_s
        while payload:
            _, writable, _ = select.select([], [self._write_fd], [], timeout_s)
            if not writable:
                raise BrowserError(f"{method}: the browser does not read its pipe")
            payload = payload[os.write(self._write_fd, payload) :]
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout_s: float) -> None:
        """Wait until an event (kept or new) satisfies ``predicate``."""
        deadline = time.monotonic() + timeout_s
        if any(predicate(event) for event in self.events):
            return
        while True:
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append(message)
                if predicate(message):
                    return

    def drain(self, seconds: float) -> None:
        """Keep the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                message = self._read_message(deadline)
                if "method" in message:
                    self.events.append(message)
        except BrowserError as error:
            if "in time" not in str(error):
                raise


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = require_browser()
    profile = Path(tempfile.mkdtemp(prefix="torchscan-chromium-"))
    started: Browser | None = None
    try:
        started = Browser(executable, profile)
        # The browser answers once it is up.
        try:
            started.call("Browser.getVersion", timeout_s=START_TIMEOUT_S)
        except BrowserError as error:
            raise BrowserError(f"{error}; chromium said:\n{started.log_tail()}") from None
        yield started
    finally:
        if started is not None:
            started.close()
        shutil.rmtree(profile, ignore_errors=True)


# --------------------------------------------------------------------------- one page


class Page:
    """What the browser showed for one file: DOM facts, events and a screenshot."""

    def __init__(self, url: str, events: list[dict[str, Any]], facts: dict[str, Any], png: bytes):
        self.url = url
        self.events = events
        self.facts = facts
        self.png = png

    def console_errors(self) -> list[str]:
        errors = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                errors.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(f"log: {params['entry'].get('text')}")
        return errors

    def requests(self) -> list[str]:
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event["method"] == "Network.requestWillBeSent"
        ]


# Read in the page once it has loaded: the rendered text and the elements the checks look at.
FACTS_SCRIPT = """JSON.stringify({
  title: document.title,
  text: document.body.innerText,
  badges: Array.from(document.querySelectorAll('.badge'), e => e.textContent.trim()),
  svgs: document.querySelectorAll('svg').length,
  points: document.querySelectorAll('svg circle').length,
  rooflines: document.querySelectorAll('svg.roofline').length,
  roofPoints: document.querySelectorAll('svg.roofline circle').length,
  medianLines: document.querySelectorAll('svg line.med').length,
  bars: document.querySelectorAll('span.bar').length,
  tableRows: document.querySelectorAll('tbody tr').length,
  differs: Array.from(document.querySelectorAll('tr.differs'), e => e.innerText),
  scripts: document.querySelectorAll('script').length,
  images: document.querySelectorAll('img, iframe, object, embed').length,
  injected: typeof window.__torchscanInjected,
  width: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight
})"""


def open_page(browser: Browser, path: Path) -> Page:
    url = path.resolve().as_uri()
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    first_event = len(browser.events)
    try:
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.call(f"{domain}.enable", session=session)
        width, height = VIEWPORT
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        navigated = browser.call("Page.navigate", {"url": url}, session=session)
        assert "errorText" not in navigated, navigated
        browser.wait_for(
            lambda e: e["method"] == "Page.loadEventFired" and e.get("sessionId") == session,
            CALL_TIMEOUT_S,
        )
        browser.drain(0.2)  # late console messages, if any
        evaluated = browser.call(
            "Runtime.evaluate", {"expression": FACTS_SCRIPT, "returnByValue": True}, session
        )
        facts = json.loads(evaluated["result"]["value"])
        shot = browser.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 0.25},
            },
            session=session,
        )
        png = base64.b64decode(shot["data"])
        events = [e for e in browser.events[first_event:] if e.get("sessionId") == session]
        return Page(url, events, facts, png)
    finally:
        browser.call("Target.closeTarget", {"targetId": target})


# --------------------------------------------------------------------------- PNG, stdlib only


def _paeth(left: int, up: int, up_left: int) -> int:
    estimate = left + up - up_left
    to_left, to_up, to_up_left = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
    if to_left <= to_up and to_left <= to_up_left:
        return left
    return up if to_up <= to_up_left else up_left


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and the pixels of an 8-bit RGB or RGBA PNG, row after row."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, idat = 8, b""
    width = height = channels = 0
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        chunk_type = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if chunk_type == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0, (depth, interlace)
            channels = {2: 3, 6: 4}[color]
        elif chunk_type == b"IDAT":
            idat += body
        elif chunk_type == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    pixels: list[tuple[int, ...]] = []
    for row in range(height):
        start = row * (stride + 1)
        filter_type, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if filter_type == 1:
                line[i] = (line[i] + left) & 0xFF
            elif filter_type == 2:
                line[i] = (line[i] + up) & 0xFF
            elif filter_type == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif filter_type == 4:
                line[i] = (line[i] + _paeth(left, up, up_left)) & 0xFF
        pixels.extend(tuple(line[i : i + 3]) for i in range(0, stride, channels))
        previous = line
    return width, height, pixels


def drawn_fraction(png: bytes) -> float:
    """The share of pixels that differ clearly from the most common (background) colour."""
    _, _, pixels = decode_png(png)
    counts: dict[tuple[int, ...], int] = {}
    for pixel in pixels:
        counts[pixel] = counts.get(pixel, 0) + 1
    background = max(counts, key=lambda colour: counts[colour])
    drawn = sum(
        count
        for colour, count in counts.items()
        if max(abs(a - b) for a, b in zip(colour, background, strict=True)) > 24
    )
    return drawn / len(pixels)


def _encode_png(width: int, rows: list[bytes], filters: list[int]) -> bytes:
    """An 8-bit RGB PNG whose rows are filtered as named (the inverse of decode_png's work)."""
    channels, raw = 3, b""
    previous = bytes(width * channels)
    for line, kind in zip(rows, filters, strict=True):
        out = bytearray()
        for i, value in enumerate(line):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            predictor = [0, left, up, (left + up) // 2, _paeth(left, up, up_left)][kind]
            out.append((value - predictor) & 0xFF)
        raw += bytes([kind]) + bytes(out)
        previous = line

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_paeth_predictor_picks_the_nearest_neighbour() -> None:
    assert _paeth(0, 10, 0) == 10  # up
    assert _paeth(10, 20, 15) == 15  # up-left
    assert _paeth(16, 16, 15) == 16  # a tie goes to left
    assert _paeth(30, 10, 12) == 30  # left


def test_decode_png_undoes_every_filter() -> None:
    width = 7
    rows = [
        bytes((31 * row + 17 * i + (i * i) % 13) % 256 for i in range(3 * width))
        for row in range(10)
    ]
    filters = [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]
    decoded_width, height, pixels = decode_png(_encode_png(width, rows, filters))
    assert (decoded_width, height) == (width, len(rows))
    expected = [tuple(line[i : i + 3]) for line in rows for i in range(0, 3 * width, 3)]
    assert pixels == expected
    assert (
        drawn_fraction(_encode_png(2, [bytes(6), bytes([0, 0, 0, 200, 200, 200])], [0, 0])) == 0.25
    )


# --------------------------------------------------------------------------- what each kind shows


def metric_statuses(report: dict[str, Any]) -> set[str]:
    """Statuses of the metrics that the page shows as cards."""
    kind = report["kind"]
    metrics: list[dict[str, Any]] = []
    if kind == "analysis":
        metrics = [v for v in report["totals"].values() if isinstance(v, dict)]
        metrics.append(report["operator_flops"]["total"])
    elif kind == "flops":
        metrics = [report["operator_flops"]["total"]]
    elif kind == "benchmark":
        metrics = list(report["metrics"].values())
    elif kind == "peak_memory":
        metrics = [report["tensor_memory_peak"], report["baseline"]]
    return {metric["status"] for metric in metrics}


def key_texts(report: dict[str, Any]) -> list[str]:
    kind = report["kind"]
    texts = [f"Kind: {kind}", f"torchscan {kind} report"]
    texts += [diagnostic["code"] for diagnostic in report["diagnostics"]]
    if kind == "analysis":
        texts += ["Parameter storage (not peak memory)", "Module FLOPs"]
        texts += [report["layers"][-1]["type"]]
    elif kind == "flops":
        texts += ["Operator FLOPs"] + [op["operator"] for op in report["operator_flops"]["counted"]]
    elif kind == "benchmark":
        texts += ["First call", "Latency (block median)", "Throughput", "PyTorch peak memory"]
    elif kind == "peak_memory":
        texts += ["PyTorch peak memory"]
    elif kind == "output_check":
        texts += ["Outputs match" if report["passed"] else "Outputs differ"]
    elif kind == "benchmark_comparison":
        texts += [f"Verdict: {report['verdict'].replace('_', ' ')}", "Deltas", "Contexts"]
        texts += [delta["metric"] for delta in report["deltas"]]
        if report["check"]["status"] == "failed":
            texts += ["Deltas withheld: the output check failed."]
    elif kind == "report_diff":
        texts += [f"Layers added ({len(report['layers']['added'])})", "Layers changed", "Contexts"]
    return texts


def roofline_parts(report: dict[str, Any]) -> tuple[int, int]:
    """The rooflines a benchmark page draws (one where both peak rates are known) and the points
    on it (the workload, where its arithmetic intensity and achieved rate are known)."""
    peak = report.get("hardware_peak") if report["kind"] == "benchmark" else None
    if not peak or any(peak[key]["status"] != "complete" for key in ("flop_rate", "bandwidth")):
        return 0, 0
    metrics = report["metrics"]
    known = [metrics.get(key) for key in ("arithmetic_intensity", "achieved_flop_rate")]
    placed = all(metric is not None and metric["known_value"] for metric in known)
    return 1, int(placed)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.name)
def test_every_fixture_page_shows_its_report(browser: Browser, path: Path, tmp_path: Path) -> None:
    report = json.loads(path.read_text(encoding="utf-8"))
    page_file = tmp_path / "page.html"
    page_file.write_text(render_report(report), encoding="utf-8")
    page = open_page(browser, page_file)

    assert page.console_errors() == []
    assert page.requests() == [page.url], "a request other than the page itself"
    assert page.facts["scripts"] == 0
    assert page.facts["images"] == 0
    assert page.facts["width"] <= VIEWPORT[0], "the page scrolls sideways"

    text = page.facts["text"]
    for expected in key_texts(report):
        assert expected in text, f"{expected!r} is not on the page"
    badges = set(page.facts["badges"])
    assert metric_statuses(report) <= badges, badges
    assert {d["severity"] for d in report["diagnostics"]} <= badges, badges

    timing = report.get("timing")
    rooflines, roof_points = roofline_parts(report)
    assert (page.facts["rooflines"], page.facts["roofPoints"]) == (rooflines, roof_points)
    if report["kind"] == "benchmark" and timing and timing["block_durations_s"]:
        assert page.facts["svgs"] == 1 + rooflines
        assert page.facts["points"] == len(timing["block_durations_s"]) + roof_points
        assert page.facts["medianLines"] == 1
    else:
        assert page.facts["svgs"] == rooflines
    if report["kind"] == "analysis":
        layer_rows = len(report["layers"])
        assert page.facts["tableRows"] >= layer_rows
        # A bar of each layer's share of the root's module FLOPs, where both are known.
        root = report["totals"]["module_flops"]
        known = [layer["metrics"]["module_flops"]["known_value"] for layer in report["layers"]]
        shares = sum(value is not None for value in known) if root["known_value"] else 0
        assert page.facts["bars"] == shares

    drawn = drawn_fraction(page.png)
    assert drawn > MIN_DRAWN_FRACTION, f"the page looks blank: {drawn:.1%} of pixels drawn"


def test_a_comparison_page_marks_the_differing_contexts(browser: Browser, tmp_path: Path) -> None:
    baseline = json.loads((ROOT / "tests/fixtures/reports/benchmark_readme_cpu.json").read_text())
    candidate = json.loads(json.dumps(baseline))
    candidate["context"]["torch_threads"] = 4
    candidate["context"]["dtypes"] = ["torch.bfloat16"]
    comparison = compare_benchmarks(baseline, candidate)
    page_file = tmp_path / "comparison.html"
    page_file.write_text(render_report(comparison), encoding="utf-8")
    page = open_page(browser, page_file)

    assert page.console_errors() == []
    assert "unknown" not in page.facts["text"]
    # The differing rows carry a visible marker in their text, not only a colour.
    assert [" ".join(row.split()) for row in page.facts["differs"]] == [
        "Threads 1 4 \u2260 differs",
        "dtypes float32 bfloat16 \u2260 differs",
    ]
    assert "Device\tcpu\tcpu\tsame" in page.facts["text"]


def test_an_empty_page_counts_as_blank(browser: Browser, tmp_path: Path) -> None:
    page_file = tmp_path / "empty.html"
    page_file.write_text("<!DOCTYPE html><title>empty</title><body></body>", encoding="utf-8")
    page = open_page(browser, page_file)
    assert drawn_fraction(page.png) < MIN_DRAWN_FRACTION / 10
    assert page.requests() == [page.url]
    assert page.console_errors() == []


HOSTILE_SCRIPT = (
    "<script>window.__torchscanInjected = 'script'; document.title = 'injected'</script>"
)
HOSTILE_IMAGE = (
    "<img src=x onerror=\"window.__torchscanInjected = 'image'; document.title = 'injected'\">"
)


def test_markup_in_report_strings_executes_nothing(browser: Browser, tmp_path: Path) -> None:
    report = json.loads((ROOT / "tests/fixtures/reports/analysis_small_cnn.json").read_text())
    report["context"]["model_type"] = HOSTILE_SCRIPT
    for layer in report["layers"]:
        layer["type"] = HOSTILE_IMAGE
    flops = report["operator_flops"]
    flops["counted"][0]["operator"] = HOSTILE_SCRIPT
    # torchscan 0.2's views follow the names: the operator's, and the root class's for modules
    flops["by_operator"] = {
        op["operator"].replace("::", ".", 1): op["flops"] for op in flops["counted"]
    }
    root = HOSTILE_SCRIPT.rsplit(".", 1)[-1]  # the class name: model_type's last component
    flops["by_module"] = {
        f"{root}.{path}" if path else root: value
        for path, value in (
            (entry["path"], entry["flops"]["known_value"]) for entry in flops["modules"]
        )
    }
    report["diagnostics"] = [
        {
            "code": "note",
            "severity": "info",
            "metric": None,
            "message": HOSTILE_IMAGE,
            "operator": HOSTILE_SCRIPT,
        }
    ]
    assert validate_report(report) == "analysis"
    html = render_report(report)
    assert "<script" not in html and "<img" not in html
    page_file = tmp_path / "hostile.html"
    page_file.write_text(html, encoding="utf-8")
    page = open_page(browser, page_file)

    assert page.facts["injected"] == "undefined"
    assert page.facts["title"] == "torchscan analysis report"
    assert page.facts["scripts"] == 0
    assert page.facts["images"] == 0
    assert page.requests() == [page.url]
    assert page.console_errors() == []
    # The markup is shown as text, where the report put it.
    assert page.facts["text"].count(HOSTILE_SCRIPT) >= 2
    assert page.facts["text"].count(HOSTILE_IMAGE) >= len(report["layers"])


def test_the_checks_see_console_errors_requests_and_scripts(
    browser: Browser, tmp_path: Path
) -> None:
    """The detectors above are live: an unescaped page trips every one of them."""
    page_file = tmp_path / "unsafe.html"
    page_file.write_text(
        "<!DOCTYPE html><title>torchscan analysis report</title><body><p>text</p>"
        + HOSTILE_SCRIPT
        + "<img src='missing.png'><script>console.error('seen'); undefinedFunction()</script>"
        + "</body>",
        encoding="utf-8",
    )
    page = open_page(browser, page_file)
    assert page.facts["injected"] == "string"
    assert page.facts["title"] == "injected"
    assert (tmp_path / "missing.png").as_uri() in page.requests()
    errors = page.console_errors()
    assert any(error.startswith("console.error") for error in errors), errors
    assert any(error.startswith("exception") for error in errors), errors
