"""Tensor memory: the README oracle, storage accounting (views, frees, resize), baseline, state."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils._python_dispatch import _get_current_dispatch_mode  # noqa: E402

import torchscan  # noqa: E402
from torchscan.errors import InvalidArgumentError  # noqa: E402
from torchscan.memory import (  # noqa: E402
    CPU_SCOPE,
    CUDA_ALLOCATED_SCOPE,
    CUDA_RESERVED_SCOPE,
    TensorMemoryTracker,
    measure_peak_memory,
)

torch.set_num_threads(1)

PARAMETERS = 128 * 128 * 4 + 128 * 4  # 66,048 B: Linear(128, 128) weight and bias, float32
ACTIVATION = 32 * 128 * 4  # 16,384 B: a (32, 128) float32 input or output
README_PEAK = 98_816


def nbytes(*tensors: Any) -> int:
    """Bytes of the distinct storages of ``tensors``."""
    storages = {t.untyped_storage()._cdata: t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


def new_bytes(fn: Callable[[], Any]) -> tuple[float, float]:
    """``(baseline, peak - baseline)`` of ``fn`` on CPU, after checking the report is valid."""
    report = measure_peak_memory(fn)
    assert torchscan.validate_report(report) == "peak_memory"
    baseline = report["baseline"]["value"]
    peak = report["tensor_memory_peak"]["value"]
    assert baseline is not None and peak is not None
    return baseline, peak - baseline


# -- the README oracle ----------------------------------------------------------------------------

README_SCRIPT = textwrap.dedent(
    """
    import json

    import torch

    torch.set_num_threads(1)
    from torchscan.memory import measure_peak_memory

    model = torch.nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)


    def infer():
        with torch.inference_mode():
            return model(inputs)


    print(json.dumps(measure_peak_memory(infer)))
    """
)


def test_readme_oracle_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", README_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert torchscan.validate_report(report) == "peak_memory"
    assert report["tensor_memory_peak"]["value"] == README_PEAK
    assert report["tensor_memory_peak"]["status"] == "complete"
    assert report["baseline"]["value"] == PARAMETERS + ACTIVATION
    assert report["callable"] == "infer"
    assert report["context"]["device"] == "cpu"
    assert report["context"]["dtypes"] == ["torch.float32"]


def test_readme_oracle_in_process_despite_other_live_tensors() -> None:
    # Tensors the workload cannot reach are alive in a test process; the baseline ignores them.
    unrelated = [torch.randn(1000), nn.Linear(64, 64)]
    model = nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)

    def infer() -> Any:
        with torch.inference_mode():
            return model(inputs)

    report = measure_peak_memory(infer)
    assert torchscan.validate_report(report) == "peak_memory"
    assert PARAMETERS + ACTIVATION + ACTIVATION == README_PEAK
    assert report["baseline"]["value"] == PARAMETERS + ACTIVATION
    assert report["tensor_memory_peak"]["value"] == README_PEAK
    assert report["callable"].endswith("<locals>.infer")
    del unrelated


def test_readme_oracle_with_a_lambda_and_a_bound_method() -> None:
    model = nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)
    with torch.inference_mode():
        assert new_bytes(lambda: model(inputs)) == (PARAMETERS + ACTIVATION, ACTIVATION)

    class Runner:
        def __init__(self) -> None:
            self.model = model
            self.batch = {"x": inputs}

        def run(self) -> Any:
            with torch.inference_mode():
                return self.model(self.batch["x"])

    report = measure_peak_memory(Runner().run)
    assert report["tensor_memory_peak"]["value"] == README_PEAK
    assert report["callable"].endswith("Runner.run")


def test_no_grad_workload_matches_the_oracle() -> None:
    model = nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)

    def infer() -> Any:
        with torch.no_grad():
            return model(inputs)

    assert new_bytes(infer) == (PARAMETERS + ACTIVATION, ACTIVATION)


def test_inference_mode_around_the_measurement() -> None:
    model = nn.Linear(128, 128).eval()
    inputs = torch.randn(32, 128)
    with torch.inference_mode():
        report = measure_peak_memory(lambda: model(inputs))
    assert report["tensor_memory_peak"]["value"] == README_PEAK
    assert report["context"]["flags"]["inference_mode"] is True


# -- the report -----------------------------------------------------------------------------------


def test_report_fields_scopes_and_methods() -> None:
    inputs = torch.randn(8, 8)
    report = measure_peak_memory(lambda: inputs * 2)
    assert torchscan.validate_report(report) == "peak_memory"
    assert report["schema_version"] == 1
    assert report["kind"] == "peak_memory"
    assert report["callable"] == "test_report_fields_scopes_and_methods.<locals>.<lambda>"
    for key in ("baseline", "tensor_memory_peak"):
        metric = report[key]
        assert metric["unit"] == "B"
        assert metric["scope"] == CPU_SCOPE == "PyTorch tracked CPU tensors"
        assert metric["method"]
    assert "reachable from the callable" in report["baseline"]["method"]
    assert "baseline included" in report["tensor_memory_peak"]["method"]
    reserved = report["allocator_reserved_peak"]
    assert reserved["status"] == "unavailable"
    assert reserved["reason"] == "unsupported on device"
    assert reserved["scope"] == CUDA_RESERVED_SCOPE
    assert reserved["unit"] == "B"
    assert [d["code"] for d in report["diagnostics"]] == ["unsupported_on_device"]
    assert report["diagnostics"][0]["metric"] == "allocator_reserved_peak"
    assert report["baseline"]["value"] == 256
    assert report["tensor_memory_peak"]["value"] == 512
    assert report["context"]["dtypes"] == ["torch.float32"]
    json.dumps(report)  # plain JSON


def test_callable_without_a_qualname_is_null_never_a_repr() -> None:
    import functools

    def add(a: Any, b: Any) -> Any:
        return a + b

    x = torch.ones(4)
    report = measure_peak_memory(functools.partial(add, x, x))
    assert report["callable"] is None
    # The partial's arguments are reachable: x is the baseline, the sum is new.
    assert report["baseline"]["value"] == 16
    assert report["tensor_memory_peak"]["value"] == 32


def test_dtypes_of_the_context() -> None:
    x = torch.ones(4, dtype=torch.float64)
    report = measure_peak_memory(lambda: x.to(torch.float16))
    assert report["context"]["dtypes"] == ["torch.float16", "torch.float64"]


# -- storage accounting ---------------------------------------------------------------------------


def test_peak_is_the_largest_live_total_not_the_sum() -> None:
    def workload() -> Any:
        a = torch.empty(1000)
        del a
        b = torch.empty(500)
        return b

    assert new_bytes(workload) == (0, 4000)


def test_freed_temporaries_in_a_loop_do_not_add_up() -> None:
    def workload() -> None:
        for _ in range(10):
            t = torch.empty(1000)
            del t

    assert new_bytes(workload) == (0, 4000)


def test_rebinding_holds_two_storages_at_once() -> None:
    def workload() -> None:
        t = torch.empty(1000)
        for _ in range(3):
            t = torch.empty(1000)  # allocated before the previous one is released
        del t

    assert new_bytes(workload) == (0, 8000)


def test_views_and_in_place_operators_add_nothing() -> None:
    x = torch.randn(100, 10)
    out = torch.empty(100, 10)

    def workload() -> Any:
        v = x.view(-1)
        v.add_(1)
        x.t().mul_(2)
        x[3:7].zero_()
        x.unsqueeze(0).squeeze(0).transpose(0, 1)
        torch.add(x, 1, out=out)  # out= into a storage of the right size
        return v[10:20]

    assert new_bytes(workload) == (nbytes(x, out), 0)


def test_a_view_of_an_input_is_not_new() -> None:
    x = torch.randn(64, 64)
    assert new_bytes(lambda: x[1:, ::2]) == (nbytes(x), 0)


def test_a_storage_outlives_its_first_tensor() -> None:
    def workload() -> Any:
        a = torch.empty(1000)
        view = a[:10]
        del a  # the storage is still held by the view
        b = torch.empty(1000)
        del b
        return view

    assert new_bytes(workload) == (0, 8000)


def test_a_storage_saved_by_autograd_stays_counted() -> None:
    x = torch.randn(1000, requires_grad=True)

    def workload() -> Any:
        y = x.exp()  # exp saves its result for backward
        z = y.sum()
        del y
        w = torch.empty(1000)  # y's storage is still alive in z's graph
        del w
        return z

    # exp result 4000 + sum 4 + w 4000
    assert new_bytes(workload) == (nbytes(x), 8004)


def test_resize_of_a_new_tensor_counts_its_growth() -> None:
    def workload() -> Any:
        t = torch.empty(10)
        t.resize_(1000)
        return t

    assert new_bytes(workload) == (0, 4000)


def test_resize_of_a_baseline_tensor_counts_its_growth() -> None:
    x = torch.empty(1000)
    assert new_bytes(lambda: x.resize_(2000)) == (4000, 4000)


def test_out_argument_resized_by_the_operator() -> None:
    a = torch.ones(1000)
    out = torch.empty(0)
    assert new_bytes(lambda: torch.add(a, a, out=out)) == (4000, 4000)
    assert out.untyped_storage().nbytes() == 4000


def test_a_baseline_tensor_freed_during_the_call_is_subtracted() -> None:
    cache = {"stale": torch.empty(1000)}

    def workload() -> Any:
        cache.pop("stale")
        return torch.empty(1000)

    report = measure_peak_memory(workload)
    assert report["baseline"]["value"] == 4000
    assert report["tensor_memory_peak"]["value"] == 4000


def test_storages_created_outside_operators_are_counted() -> None:
    # torch.tensor builds its storage in C++ and hands it to lift_fresh: first seen as an argument.
    assert new_bytes(lambda: torch.tensor([1.0, 2.0, 3.0])) == (0, 12)


def test_storage_made_outside_operators_counts_from_its_first_use() -> None:
    numpy = pytest.importorskip("numpy")

    def workload() -> Any:
        array = numpy.ones(1000, dtype=numpy.float32)
        return torch.from_numpy(array) * 2  # no operator made the first storage

    assert new_bytes(workload) == (0, 8000)


def test_composite_operators_under_inference_mode_show_their_temporaries() -> None:
    # cross_entropy reaches the mode whole under inference_mode; its log_softmax temporary
    # (64 x 1000 float32) is counted as it is when autograd decomposes it under no_grad.
    logits = torch.randn(64, 1000)
    target = torch.randint(0, 1000, (64,))

    def inference() -> Any:
        with torch.inference_mode():
            return nn.functional.cross_entropy(logits, target)

    def no_grad() -> Any:
        with torch.no_grad():
            return nn.functional.cross_entropy(logits, target)

    baseline, new = new_bytes(inference)
    assert baseline == nbytes(logits, target)
    assert new >= 64 * 1000 * 4
    assert new_bytes(no_grad) == (baseline, new)


def test_unreachable_live_tensors_are_neither_baseline_nor_new() -> None:
    class Table:
        values = torch.randn(1000)  # a class attribute: not followed by the reachability walk

    def workload() -> Any:
        return Table.values[:10] + 0  # a view of a pre-existing storage, then one new storage

    assert new_bytes(workload) == (0, 40)


def test_other_devices_are_not_counted() -> None:
    assert new_bytes(lambda: torch.empty(1000, device="meta")) == (0, 0)


def test_sparse_tensors_count_their_component_storages() -> None:
    indices = torch.tensor([[0, 1, 2], [2, 0, 1]])
    values = torch.tensor([1.0, 2.0, 3.0])
    sparse = torch.sparse_coo_tensor(indices, values, (3, 3), check_invariants=True)
    expected = nbytes(sparse._indices(), sparse._values())
    report = measure_peak_memory(lambda: sparse.coalesce())
    assert report["baseline"]["value"] == expected
    assert report["tensor_memory_peak"]["status"] == "complete"


# -- gradients ------------------------------------------------------------------------------------


def test_training_step_gradients_are_new_storages() -> None:
    model = nn.Linear(128, 128)
    inputs = torch.randn(32, 128)

    def step() -> None:
        loss = model(inputs).sum()
        loss.backward()

    baseline, new = new_bytes(step)
    assert baseline == PARAMETERS + ACTIVATION
    # The (32, 128) output is freed once summed (no backward saves it); then the weight and bias
    # gradients (66,048 B) are live with the 4 B loss and the 4 B seed gradient of backward().
    assert new == PARAMETERS + 8
    assert model.weight.grad is not None and model.bias.grad is not None

    # The gradients are now held by the parameters: part of the next call's baseline. The new
    # gradients are accumulated into them, so the temporaries are counted again.
    baseline, new = new_bytes(step)
    assert baseline == 2 * PARAMETERS + ACTIVATION
    assert new == PARAMETERS + 8


def test_optimizer_step_does_not_count_existing_gradients_or_state() -> None:
    model = nn.Linear(16, 16)
    inputs = torch.randn(4, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(inputs).sum().backward()
    assert model.weight.grad is not None

    # Gradients are reachable through the model and updated in place: nothing new.
    assert new_bytes(optimizer.step) == (2 * nbytes(model.weight, model.bias), 0)


# -- the tracker ----------------------------------------------------------------------------------


def test_tracker_default_baseline_is_every_live_tensor_of_the_process() -> None:
    unrelated = torch.empty(250_000)  # 1 MB the workload never touches
    with TensorMemoryTracker() as tracker:
        kept = torch.empty(100)
    assert tracker.baseline_bytes >= nbytes(unrelated)
    assert tracker.peak_bytes == tracker.baseline_bytes + 400
    assert tracker.new_storages == 1
    assert "every live tensor" in tracker.baseline()["method"]
    with TensorMemoryTracker(roots=[kept]) as scoped:
        pass
    assert scoped.baseline_bytes == 400
    del unrelated


def test_tracker_reads_live_numbers_while_active_and_keeps_them_after_exit() -> None:
    with TensorMemoryTracker(roots=()) as tracker:
        a = torch.empty(1000)
        assert tracker.live_bytes == 4000
        del a
        assert tracker.live_bytes == 0
        assert tracker.peak_bytes == 4000
    assert tracker.peak_bytes == 4000
    # No weak-reference callback survives the tracker: later frees change nothing.
    b = torch.empty(1000)
    del b
    assert tracker.live_bytes == 0
    assert tracker._live == {}


def test_tracker_is_not_reentrant_and_can_be_reused() -> None:
    tracker = TensorMemoryTracker(roots=())
    with tracker:
        with pytest.raises(InvalidArgumentError, match="already active"), tracker:
            pass
        torch.empty(10)
    assert _get_current_dispatch_mode() is None
    with tracker:
        torch.empty(20)
    assert tracker.peak_bytes == 80


def test_results_before_the_tracker_ran_are_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="has not run"):
        TensorMemoryTracker().baseline()


def test_nested_trackers_both_count() -> None:
    with TensorMemoryTracker(roots=()) as outer:
        torch.empty(100)
        with TensorMemoryTracker(roots=()) as inner:
            torch.empty(1000)
    assert inner.peak_bytes == 4000
    assert outer.peak_bytes == 4000
    assert _get_current_dispatch_mode() is None


def test_compiled_callable_gets_a_diagnostic_when_it_runs() -> None:
    compiled = torch.compile(nn.Linear(4, 4), backend="eager")
    x = torch.randn(2, 4)
    compiled(x)
    # Reachable but not called: compiled code is found while it runs, not from types.
    with TensorMemoryTracker(roots=[lambda: compiled]) as tracker:
        pass
    assert "compiled_callable" not in [d["code"] for d in tracker.diagnostics()]
    with TensorMemoryTracker(roots=[lambda: compiled]) as tracker:
        compiled(x)
    found = [d for d in tracker.diagnostics() if d["code"] == "compiled_callable"]
    assert len(found) == 1
    assert found[0]["metric"] == "tensor_memory_peak"
    assert "ran eagerly" in found[0]["message"]


# -- state and errors -----------------------------------------------------------------------------


class WorkloadError(Exception):
    pass


@pytest.mark.parametrize("error_type", [WorkloadError, KeyboardInterrupt])
def test_the_workload_exception_propagates_unchanged(error_type: type[BaseException]) -> None:
    raised = error_type("boom")

    def workload() -> None:
        torch.empty(100)
        raise raised

    with pytest.raises(error_type) as caught:
        measure_peak_memory(workload)
    assert caught.value is raised
    assert _get_current_dispatch_mode() is None
    # And the machinery still works afterwards.
    assert new_bytes(lambda: torch.empty(10)) == (0, 40)


def test_tracker_keeps_the_peak_of_a_failed_region() -> None:
    def workload() -> None:
        torch.empty(1000)
        raise WorkloadError

    tracker = TensorMemoryTracker(roots=())
    with pytest.raises(WorkloadError), tracker:
        workload()
    assert tracker.peak_bytes == 4000
    assert _get_current_dispatch_mode() is None


@pytest.mark.parametrize(
    ("device", "match"),
    [
        ("tpu", "is not a torch device"),
        ("not a device", "is not a torch device"),
        (3.5, "is not a torch device"),
        ("meta", "device type 'meta' is not supported"),
        ("xpu", "not supported"),
    ],
)
def test_invalid_device_is_a_clear_error(device: Any, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        measure_peak_memory(lambda: None, device=device)
    with pytest.raises(InvalidArgumentError, match=match):
        TensorMemoryTracker(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a CUDA device")
def test_cuda_without_a_device_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match=r"pass device='cpu'"):
        measure_peak_memory(lambda: None, device="cuda")


@pytest.mark.skipif(
    torch.backends.mps.is_available(), reason="checks the error without an MPS device"
)
def test_mps_without_a_device_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="mps"):
        measure_peak_memory(lambda: None, device="mps")


def test_not_callable_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="zero-argument callable"):
        measure_peak_memory(torch.ones(2))  # type: ignore[arg-type]


def test_import_does_not_load_torch() -> None:
    code = "import sys, torchscan.memory; assert 'torch' not in sys.modules, 'torch was imported'"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


# -- CUDA: the allocator path ---------------------------------------------------------------------


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Allocator statistics of a pretend CUDA device, to test the report logic on any machine."""
    state: dict[str, Any] = {"allocated": 1000, "peak": 5000, "reserved": 8192, "sync_error": None}

    def synchronize(device: Any = None) -> None:
        if state["sync_error"] is not None:
            raise state["sync_error"]

    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 1)
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    monkeypatch.setattr(cuda, "get_device_name", lambda device=None: "Pretend GPU")
    monkeypatch.setattr(cuda, "synchronize", synchronize)
    monkeypatch.setattr(cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(cuda, "memory_allocated", lambda device=None: state["allocated"])
    monkeypatch.setattr(cuda, "max_memory_allocated", lambda device=None: state["peak"])
    monkeypatch.setattr(cuda, "max_memory_reserved", lambda device=None: state["reserved"])
    return state


def test_cuda_report_from_allocator_statistics(fake_cuda: dict[str, Any]) -> None:
    report = measure_peak_memory(lambda: None, device="cuda")
    assert torchscan.validate_report(report) == "peak_memory"
    assert report["context"]["device"] == "cuda:0"
    assert report["baseline"]["value"] == 1000
    assert report["baseline"]["scope"] == CUDA_ALLOCATED_SCOPE
    assert report["tensor_memory_peak"]["value"] == 5000
    assert report["tensor_memory_peak"]["scope"] == "CUDA caching allocator: allocated bytes"
    assert report["allocator_reserved_peak"]["value"] == 8192
    assert report["allocator_reserved_peak"]["scope"] == "CUDA caching allocator: reserved bytes"
    assert report["diagnostics"] == []
    assert _get_current_dispatch_mode() is None


def test_cuda_device_index_out_of_range(fake_cuda: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError, match="cuda:0 to cuda:0"):
        measure_peak_memory(lambda: None, device="cuda:3")


def test_cuda_workload_error_wins_over_a_failing_synchronize(fake_cuda: dict[str, Any]) -> None:
    raised = WorkloadError("device-side assert")

    def workload() -> None:
        fake_cuda["sync_error"] = RuntimeError("CUDA error: device-side assert triggered")
        raise raised

    tracker = TensorMemoryTracker("cuda")
    with pytest.raises(WorkloadError) as caught, tracker:
        workload()
    assert caught.value is raised
    assert tracker.tensor_memory_peak()["status"] == "unavailable"
    assert tracker.allocator_reserved_peak()["status"] == "unavailable"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_linear_on_a_real_device() -> None:
    model = nn.Linear(128, 128).cuda().eval()
    inputs = torch.randn(32, 128, device="cuda")

    def infer() -> Any:
        with torch.inference_mode():
            return model(inputs)

    report = measure_peak_memory(infer, device="cuda")
    assert torchscan.validate_report(report) == "peak_memory"
    baseline = report["baseline"]["value"]
    peak = report["tensor_memory_peak"]["value"]
    reserved = report["allocator_reserved_peak"]["value"]
    assert baseline is not None and peak is not None and reserved is not None
    assert baseline >= PARAMETERS + ACTIVATION
    assert peak >= baseline + ACTIVATION
    assert reserved >= peak
    assert report["context"]["device"].startswith("cuda:")
    assert report["context"]["dtypes"] == ["torch.float32"]
    assert _get_current_dispatch_mode() is None


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_exception_propagates_unchanged() -> None:
    raised = WorkloadError("boom")

    def workload() -> None:
        torch.empty(1000, device="cuda")
        raise raised

    with pytest.raises(WorkloadError) as caught:
        measure_peak_memory(workload, device="cuda")
    assert caught.value is raised
    gc.collect()
