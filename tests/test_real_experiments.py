"""Experiments users run around real models: other threads, precision, compiled code.

Oracles are computed by hand: ``Linear(512, 512)`` on a ``(32, 512)`` input is
2 x 32 x 512 x 512 = 16,777,216 FLOPs; its parameters are (512 x 512 + 512) x 4 B.
"""

from __future__ import annotations

import concurrent.futures
import copy
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import (
    OperatorFlopCounter,
    ReportValidationError,
    compare_benchmarks,
    compare_workloads,
    measure_flops,
    measure_peak_memory,
    measure_workload,
    validate_report,
)

LINEAR_FLOPS = 2 * 32 * 512 * 512
PARAMETER_BYTES = 2 * (512 * 512 + 512) * 4
INPUT_BYTES = 32 * 512 * 4


@pytest.fixture
def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512)).eval()


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(32, 512)


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    executor = concurrent.futures.ThreadPoolExecutor(1)
    # The worker exists before the measurement starts, as in a real server.
    executor.submit(lambda: None).result()
    yield executor
    executor.shutdown(wait=True)


def _in_a_thread(fn: Any) -> None:
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()


def _codes(report: Any) -> list[str]:
    return [diagnostic["code"] for diagnostic in report["diagnostics"]]


# -- 1. work on other threads is never a silent zero ------------------------------------------


def test_a_thread_pool_makes_operator_flops_partial(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    report = measure_flops(lambda: pool.submit(lambda: model(x)).result())
    total = report["total"]
    assert total["status"] == "partial"
    assert total["value"] is None
    assert total["known_value"] == 0  # the calling thread ran no operator
    assert total["reason"] == (
        "2 operator calls ran on 1 other thread while the workload ran; they are not counted"
    )
    assert report["operator_flops"]["other_threads"] == {"calls": 2, "threads": 1}
    (warned,) = [d for d in report["diagnostics"] if d["code"] == "other_threads"]
    assert warned["severity"] == "warning"
    assert warned["metric"] == "operator_flops"
    assert "`aten::linear` (2)" in warned["message"]
    assert "thread pool" in warned["message"]


def test_a_plain_thread_makes_operator_flops_partial(model: nn.Module, x: torch.Tensor) -> None:
    report = measure_flops(lambda: _in_a_thread(lambda: model(x)))
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == 0
    assert report["operator_flops"]["other_threads"] == {"calls": 2, "threads": 1}


def test_the_calling_thread_is_counted_and_the_rest_named(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    def half_here() -> None:
        model[0](x)
        pool.submit(lambda: model[1](x)).result()

    report = measure_flops(half_here)
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == LINEAR_FLOPS
    assert report["operator_flops"]["other_threads"] == {"calls": 1, "threads": 1}


def test_a_workload_on_its_own_thread_stays_complete(model: nn.Module, x: torch.Tensor) -> None:
    report = measure_flops(lambda: model(x))
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 2 * LINEAR_FLOPS
    assert report["operator_flops"]["other_threads"] == {"calls": 0, "threads": 0}
    assert report["diagnostics"] == []


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_jit_fork_inherits_the_mode_and_is_counted(model: nn.Module, x: torch.Tensor) -> None:
    report = measure_flops(lambda: torch.jit.wait(torch.jit.fork(model, x)))
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 2 * LINEAR_FLOPS
    assert report["operator_flops"]["other_threads"]["calls"] == 0


def test_tensor_memory_names_the_activations_made_elsewhere(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    report = measure_workload(
        lambda: pool.submit(lambda: model(x)).result(),
        metrics=["operator_flops", "tensor_memory"],
        print_summary=False,
    )
    peak = report["metrics"]["tensor_memory_peak"]
    assert peak["status"] == "partial"
    # Parameters and input only: the activations were made on the pool's thread.
    assert peak["known_value"] == PARAMETER_BYTES + INPUT_BYTES == 2_166_784
    assert "ran on 1 other thread" in peak["reason"]
    assert report["metrics"]["operator_flops"]["status"] == "partial"
    warned = sorted(d["metric"] for d in report["diagnostics"] if d["code"] == "other_threads")
    assert warned == ["operator_flops", "tensor_memory_peak"]


def test_peak_memory_alone_is_partial_too(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    report = measure_peak_memory(lambda: pool.submit(lambda: model(x)).result())
    assert report["tensor_memory_peak"]["status"] == "partial"
    assert report["tensor_memory_peak"]["known_value"] == PARAMETER_BYTES + INPUT_BYTES
    assert "other_threads" in _codes(report)


def test_a_user_profiler_on_the_thread_is_left_alone(model: nn.Module, x: torch.Tensor) -> None:
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as profiler:
        report = measure_flops(lambda: model(x))
    # The user's profiler kept its events; the pass says it could not watch other threads.
    assert any(event.name == "aten::addmm" for event in profiler.events())
    assert report["total"]["status"] == "complete"
    assert "other_threads" not in report["operator_flops"]
    (note,) = [d for d in report["diagnostics"] if d["code"] == "note"]
    assert note["message"].startswith("operators on other threads were not watched: a PyTorch")


def test_no_profiler_is_left_running(model: nn.Module, x: torch.Tensor) -> None:
    measure_flops(lambda: model(x))
    assert str(torch._C._autograd._profiler_type()) == "ActiveProfilerType.NONE"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        model(x)
    assert sum(event.name == "aten::addmm" for event in profiler.events()) == 2


def _user_profiler_sees(model: nn.Module, x: torch.Tensor) -> int:
    """How many ``addmm`` calls of one forward a user's profiler on this thread records."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        model(x)
    return sum(event.name == "aten::addmm" for event in profiler.events())


def test_recording_is_switched_back_on_when_the_workload_raises(
    model: nn.Module, x: torch.Tensor
) -> None:
    def failing() -> None:
        model(x)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        measure_flops(failing)
    with pytest.raises(ValueError, match="boom"):
        measure_peak_memory(failing)
    assert _user_profiler_sees(model, x) == 2


def test_nested_passes_watch_and_switch_recording_back_on_once(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    with OperatorFlopCounter() as outer:
        inner = measure_flops(lambda: model(x))
        # Still inside the outer pass: its thread is still not recorded, the pool's is.
        pool.submit(lambda: model[0](x)).result()
        model(x)
    assert inner["total"]["status"] == "complete"
    assert inner["total"]["value"] == 2 * LINEAR_FLOPS
    assert inner["diagnostics"] == []
    assert outer.total_flops == 4 * LINEAR_FLOPS
    found = outer.other_threads
    assert found is not None and found.watched
    assert (found.calls, found.threads) == (1, 1)
    assert _user_profiler_sees(model, x) == 2


def test_a_profiler_started_inside_the_workload_keeps_every_event(
    model: nn.Module, x: torch.Tensor
) -> None:
    events: list[str] = []

    def profiled() -> None:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as user:
            model(x)
        events.extend(event.name for event in user.events())

    report = measure_flops(profiled)
    # The pass stopped watching when the user's profiler started, and switched the thread's
    # recording back on for it: nothing of the user's is lost.
    assert events.count("aten::linear") == 2
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 2 * LINEAR_FLOPS
    (note,) = [d for d in report["diagnostics"] if d["code"] == "note"]
    assert "another PyTorch profiler started while the pass ran" in note["message"]
    assert str(torch._C._autograd._profiler_type()) == "ActiveProfilerType.NONE"
    assert _user_profiler_sees(model, x) == 2


def test_a_thread_is_foreign_again_once_its_own_pass_ended(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    def after_a_pass() -> Any:
        measure_flops(lambda: model[0](x))  # the pool thread's own pass, which ends
        return model(x)  # then work for the caller's workload

    report = measure_flops(lambda: pool.submit(after_a_pass).result())
    assert report["total"]["status"] == "partial"
    assert report["operator_flops"]["other_threads"] == {"calls": 2, "threads": 1}


def _survives(code: str) -> str:
    """Run ``code`` in a fresh process (a profiler conflict could crash it); its output."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout


def test_a_scheduled_profiler_in_its_warm_up_is_left_alone() -> None:
    out = _survives(
        """
        import json, os, tempfile, torch, torchscan
        model, x = torch.nn.Linear(64, 64), torch.randn(4, 64)
        notes, exported = [], []
        def ready(profiler):
            path = os.path.join(tempfile.mkdtemp(), "trace.json")
            profiler.export_chrome_trace(path)
            events = json.load(open(path))["traceEvents"]
            exported.append(sum(event.get("name") == "aten::linear" for event in events))
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
        activities = [torch.profiler.ProfilerActivity.CPU]
        settings = dict(activities=activities, schedule=schedule, on_trace_ready=ready)
        with torch.profiler.profile(**settings) as p:
            for step in range(5):
                if step == 1:  # the user's profiler is prepared, in its warm-up
                    report = torchscan.measure_flops(lambda: model(x))
                    assert report["total"]["value"] == 2 * 4 * 64 * 64
                    notes = [d["message"] for d in report["diagnostics"]]
                model(x)
                p.step()
        print(exported, notes)
        """
    )
    assert out.startswith("[2] ['operators on other threads were not watched: a PyTorch profiler")


def test_a_profiler_on_another_thread_is_left_alone() -> None:
    out = _survives(
        """
        import threading, torch, torchscan
        model, x = torch.nn.Linear(64, 64), torch.randn(4, 64)
        started, measured, counts = threading.Event(), threading.Event(), []
        def other():
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
                started.set()
                measured.wait(60)
                model(x)
            counts.append(sum(e.name == "aten::linear" for e in p.events()))
            p.export_chrome_trace(__import__("tempfile").mktemp(suffix=".json"))
        thread = threading.Thread(target=other)
        thread.start()
        started.wait(60)
        report = torchscan.measure_flops(lambda: model(x))
        measured.set()
        thread.join(60)
        print(counts, report["total"]["status"], report["diagnostics"][0]["code"])
        """
    )
    assert out.split() == ["[1]", "complete", "note"]


def test_the_watch_prints_nothing() -> None:
    """The profiler library's start and stop lines never reach the user's stderr."""
    code = textwrap.dedent(
        """
        import torch, torchscan
        model = torch.nn.Linear(8, 8)
        for _ in range(3):
            report = torchscan.measure_flops(lambda: model(torch.randn(2, 8)))
        assert report["total"]["status"] == "complete", report["total"]
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert "profiler_start" not in done.stderr
    assert "USDT" not in done.stderr
    assert "KINETO_LOG_LEVEL" not in os.environ


def test_the_validator_ties_the_status_to_the_calls_elsewhere(
    model: nn.Module, x: torch.Tensor, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    report = measure_flops(lambda: pool.submit(lambda: model(x)).result())
    validate_report(report)
    complete = copy.deepcopy(report)
    for total in (complete["total"], complete["operator_flops"]["total"]):
        total.update(status="complete", value=0, reason=None)
    with pytest.raises(ReportValidationError, match="operators ran on other threads"):
        validate_report(complete)
    unexplained = copy.deepcopy(report)
    unexplained["operator_flops"]["other_threads"] = {"calls": 0, "threads": 0}
    with pytest.raises(ReportValidationError, match="calls on other threads"):
        validate_report(unexplained)


# -- 2. the precision on record is the precision computed -------------------------------------


def _benchmark(workload: Any, inputs: Any = None) -> Any:
    return measure_workload(
        workload,
        inputs=inputs,
        metrics=["latency", "operator_flops"],
        min_time_s=0.3,
        max_time_s=1.0,
        min_blocks=24,
        warmup_time_s=0.0,
        print_summary=False,
    )


def test_autocast_is_recorded_with_the_dtype_computed_in(model: nn.Module, x: torch.Tensor) -> None:
    def under_autocast() -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)

    inside = _benchmark(under_autocast, inputs=x)
    # Computed in bfloat16 (the matmuls), the input is float32.
    assert inside["context"]["dtypes"] == ["torch.bfloat16", "torch.float32"]
    assert inside["context"]["flags"]["autocast"] == {}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        outside = _benchmark(lambda: model(x), inputs=x)
    assert outside["context"]["dtypes"] == ["torch.bfloat16", "torch.float32"]
    assert outside["context"]["flags"]["autocast"] == {"cpu": "torch.bfloat16"}


def test_integer_token_inputs_still_record_the_precision() -> None:
    torch.manual_seed(0)
    lm = nn.Sequential(nn.Embedding(100, 64), nn.Linear(64, 100)).eval()
    tokens = torch.randint(0, 100, (4, 16))
    report = _benchmark(lambda: lm(tokens), inputs=tokens)
    assert report["context"]["dtypes"] == ["torch.float32"]


def test_dtypes_are_ranked_by_flop_share() -> None:
    torch.manual_seed(0)
    big, small = nn.Linear(256, 256).bfloat16(), nn.Linear(8, 8)
    xb, xs = torch.randn(64, 256, dtype=torch.bfloat16), torch.randn(4, 8)
    report = measure_flops(lambda: (big(xb), small(xs)))
    assert report["context"]["dtypes"] == ["torch.bfloat16", "torch.float32"]
    report = measure_flops(lambda: (big(xb[:1]), small(xs.repeat(1000, 1))))
    # 2 x 1 x 256 x 256 = 131,072 in bfloat16 against 2 x 4,000 x 8 x 8 = 512,000 in float32.
    assert report["context"]["dtypes"] == ["torch.float32", "torch.bfloat16"]


def test_a_change_of_precision_is_named_not_refused(model: nn.Module, x: torch.Tensor) -> None:
    baseline = _benchmark(lambda: model(x), inputs=x)
    low = copy.deepcopy(model).bfloat16()
    xb = x.bfloat16()
    candidate = _benchmark(lambda: low(xb), inputs=xb)
    comparison = compare_benchmarks(baseline, candidate)
    (changed,) = [d for d in comparison["diagnostics"] if d["code"] == "precision_changed"]
    assert changed["severity"] == "info"
    assert changed["message"].startswith("precision changed: float32 -> bfloat16")
    assert "check_outputs" in changed["message"]
    # Not a context mismatch as well, and the timing deltas are given.
    assert "context_mismatch" not in _codes(comparison)
    latency = next(d for d in comparison["deltas"] if d["metric"] == "latency")
    assert latency["status"] == "complete"


def test_a_change_of_autocast_is_named(model: nn.Module, x: torch.Tensor) -> None:
    baseline = _benchmark(lambda: model(x), inputs=x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        candidate = _benchmark(lambda: model(x), inputs=x)
    comparison = compare_benchmarks(baseline, candidate)
    (changed,) = [d for d in comparison["diagnostics"] if d["code"] == "precision_changed"]
    assert "precision changed: float32 -> bfloat16, float32" in changed["message"]
    assert "autocast changed: off -> cpu bfloat16" in changed["message"]


def test_a_change_of_secondary_dtypes_only_is_said_as_such(
    model: nn.Module, x: torch.Tensor
) -> None:
    baseline = _benchmark(lambda: model(x), inputs=x)
    scale = torch.tensor(0.5, dtype=torch.float64)
    candidate = _benchmark(lambda: (model(x), scale * 2), inputs=x)
    assert candidate["context"]["dtypes"] == ["torch.float32", "torch.float64"]
    comparison = compare_benchmarks(baseline, candidate)
    (changed,) = [d for d in comparison["diagnostics"] if d["code"] == "precision_changed"]
    assert changed["message"] == (
        "dtypes changed: float32 -> float32, float64; the main precision stays float32"
    )


def test_latency_alone_records_the_precision_of_the_output(
    model: nn.Module, x: torch.Tensor
) -> None:
    low = copy.deepcopy(model).bfloat16()
    xb = x.bfloat16()
    settings: dict[str, Any] = dict(
        metrics=["latency"], min_time_s=0.05, max_time_s=0.5, print_summary=False
    )
    baseline = measure_workload(lambda: model(x), **settings)
    candidate = measure_workload(lambda: low(xb), **settings)
    assert baseline["context"]["dtypes"] == ["torch.float32"]
    assert candidate["context"]["dtypes"] == ["torch.bfloat16"]
    codes = _codes(compare_benchmarks(baseline, candidate))
    assert "precision_changed" in codes
    experiment = compare_workloads(
        lambda: model(x),
        lambda: low(xb),
        rtol=1.6e-2,
        atol=1e-1,
        check_dtype=False,
        metrics=["latency"],
        min_time_s=0.05,
        max_time_s=0.5,
        print_summary=False,
    )
    assert experiment.baseline["context"]["dtypes"] == ["torch.float32"]
    assert experiment.candidate["context"]["dtypes"] == ["torch.bfloat16"]
    assert "precision_changed" in _codes(experiment.comparison)


# -- 3. compiled code is found wherever it runs ------------------------------------------------


class CountingBackend:
    """A ``torch.compile`` backend that counts compilations and runs of compiled graphs."""

    def __init__(self) -> None:
        self.compiled = 0
        self.runs = 0

    def __call__(self, graph: Any, _example: Any) -> Any:
        self.compiled += 1

        def run(*args: Any) -> Any:
            self.runs += 1
            return graph.forward(*args)

        return run


@pytest.fixture
def backend() -> CountingBackend:
    return CountingBackend()


def test_compiled_code_called_inside_a_lambda_is_found(
    model: nn.Module, x: torch.Tensor, backend: CountingBackend
) -> None:
    compiled = torch.compile(model, backend=backend)
    compiled(x)
    assert (backend.compiled, backend.runs) == (1, 1)
    report = measure_flops(lambda: compiled(x).sum())
    # During the pass the compiled graph did not run: the eager operators were counted.
    assert backend.runs == 1
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 2 * LINEAR_FLOPS
    (found,) = [d for d in report["diagnostics"] if d["code"] == "compiled_callable"]
    assert found["metric"] == "operator_flops"
    assert "ran eagerly" in found["message"]
    assert "calls after the pass run it compiled again" in found["message"]
    # After the pass: the compiled graph runs again, and nothing was recompiled.
    compiled(x)
    assert (backend.compiled, backend.runs) == (1, 2)


def test_a_compiled_function_deep_inside_the_workload_is_found(
    model: nn.Module, x: torch.Tensor, backend: CountingBackend
) -> None:
    head = torch.compile(lambda t: model[1](t).relu(), backend=backend)
    head(x)

    def workload() -> Any:
        return head(model[0](x))

    report = measure_workload(workload, metrics=["operator_flops"], print_summary=False)
    assert "compiled_callable" in _codes(report)
    assert report["metrics"]["operator_flops"]["value"] == 2 * LINEAR_FLOPS


def test_compiled_code_that_does_not_run_gets_no_diagnostic(
    model: nn.Module, x: torch.Tensor, backend: CountingBackend
) -> None:
    compiled = torch.compile(model, backend=backend)
    compiled(x)
    report = measure_flops(lambda: model(x))  # the uncompiled model, though compiled is alive
    assert "compiled_callable" not in _codes(report)


def test_timing_runs_the_compiled_graph_and_the_passes_run_eagerly(
    model: nn.Module, x: torch.Tensor, backend: CountingBackend
) -> None:
    compiled = torch.compile(model, backend=backend)
    compiled(x)
    report = measure_workload(
        lambda: compiled(x),
        metrics=["latency", "operator_flops", "tensor_memory"],
        min_time_s=0.05,
        max_time_s=0.5,
        min_blocks=2,
        warmup_time_s=0.0,
        print_summary=False,
    )
    timed_calls = report["timing"]["calls_per_block"] * len(report["timing"]["block_durations_s"])
    # First call, warm-up and timed calls ran the compiled graph; the two passes did not.
    assert backend.runs >= 1 + timed_calls
    runs = backend.runs
    compiled(x)
    assert backend.runs == runs + 1
    assert backend.compiled == 1
    found = sorted(d["metric"] for d in report["diagnostics"] if d["code"] == "compiled_callable")
    assert found == ["operator_flops", "tensor_memory_peak"]


def test_fullgraph_code_says_why_it_fails_under_the_passes(
    model: nn.Module, x: torch.Tensor, backend: CountingBackend
) -> None:
    whole = torch.compile(lambda t: model(t), backend=backend, fullgraph=True)
    whole(x)
    with pytest.raises(RuntimeError, match="fullgraph=True") as caught:
        measure_flops(lambda: whole(x))
    notes = getattr(caught.value, "__notes__", [])
    assert len(notes) == 1
    assert "metrics=['latency']" in notes[0]


# -- profiler sessions of the user's, and operators the dispatcher does not register ----------


def test_torch_export_inside_a_pass_is_counted_not_a_crash() -> None:
    # Export's tracing dispatches ``prim::device``, which the dispatcher does not register.
    out = _survives(
        """
        import torch, torchscan
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        x = torch.randn(4, 64)
        report = torchscan.measure_flops(lambda: torch.export.export(m, (x,)).module()(x))
        peak = torchscan.measure_peak_memory(lambda: torch.export.export(m, (x,)))
        total, status = report["total"], peak["tensor_memory_peak"]["status"]
        print(total["status"], total["value"], status)
        """
    )
    # The model's operators twice (2 x 4 x 64 x 64 + 2 x 4 x 64 x 8 each): export traces it once
    # (on fake tensors), then the exported module runs; FlopCounterMode counts the same.
    assert out.split() == ["complete", str(2 * (2 * 4 * 64 * 64 + 2 * 4 * 64 * 8)), "complete"]


def test_the_profiler_pass_gives_way_to_the_users_profiler() -> None:
    out = _survives(
        """
        import os, tempfile, torch, torchscan
        m, x = torch.nn.Linear(64, 64), torch.randn(4, 64)
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=activities) as user:
            report = torchscan.measure_workload(
                lambda: m(x), metrics=["profiler"], print_summary=False, profiler_calls=3
            )
            m(x)
        user.export_chrome_trace(os.path.join(tempfile.mkdtemp(), "trace.json"))
        (warned,) = [d for d in report["diagnostics"] if d["code"] == "profiler_failed"]
        print(report["profiler"]["status"], warned["severity"])
        print(warned["message"])
        """
    )
    status, message = out.split("\n", 1)
    assert status == "unavailable warning"
    assert message.startswith(
        "the profiler pass did not run: a PyTorch profiler is active on this thread"
    )


def test_a_workload_that_profiles_itself_leaves_the_profiler_pass_unavailable() -> None:
    out = _survives(
        """
        import torch, torchscan
        m, x = torch.nn.Linear(64, 64), torch.randn(4, 64)
        def step():
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                m(x)
        report = torchscan.measure_workload(
            step, metrics=["profiler"], print_summary=False, profiler_calls=3
        )
        (warned,) = [d for d in report["diagnostics"] if d["code"] == "profiler_failed"]
        print(report["profiler"]["status"], report["profiler"]["top_operators"])
        print(warned["message"])
        """
    )
    status, message = out.split("\n", 1)
    assert status == "unavailable []"
    assert "the workload started a PyTorch profiler, which took the session over" in message


def test_a_session_started_through_torch_autograd_directly_is_left_alone() -> None:
    out = _survives(
        """
        import threading, torch, torchscan
        from torch.autograd import ProfilerActivity, ProfilerConfig, ProfilerState
        m, x = torch.nn.Linear(64, 64), torch.randn(4, 64)
        experimental = torch._C._profiler._ExperimentalConfig()
        config = ProfilerConfig(
            ProfilerState.KINETO, False, False, False, False, False, experimental
        )
        started, measured, counts = threading.Event(), threading.Event(), []
        def other():
            torch.autograd._prepare_profiler(config, {ProfilerActivity.CPU})
            torch.autograd._enable_profiler(config, {ProfilerActivity.CPU})
            started.set()
            measured.wait(60)
            m(x)
            result = torch.autograd._disable_profiler()
            counts.append(sum(e.name() == "aten::linear" for e in result.events()))
        thread = threading.Thread(target=other)
        thread.start()
        started.wait(60)
        report = torchscan.measure_flops(lambda: m(x))
        measured.set()
        thread.join(60)
        print(counts, report["total"]["status"], report["diagnostics"][0]["code"])
        """
    )
    assert out.split() == ["[1]", "complete", "note"]


def test_a_pass_says_when_the_watch_was_restarted_while_it_ran(
    model: nn.Module, x: torch.Tensor
) -> None:
    def with_a_shorter_pass_beside() -> None:
        model(x)
        # Another thread's pass starts and ends inside this one: the shared session is read and
        # started again when it ends, a moment in which other threads are not watched.
        _in_a_thread(lambda: measure_flops(lambda: model(x)))

    report = measure_flops(with_a_shorter_pass_beside)
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 2 * LINEAR_FLOPS
    (note,) = [d for d in report["diagnostics"] if d["code"] == "note"]
    assert note["message"] == (
        "no operator ran on another thread while the watch of other threads ran, but it was "
        "read and started again 1 time while the pass ran (another pass ended), about a "
        "millisecond each: operators other threads ran in those moments were not seen"
    )
