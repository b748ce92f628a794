"""Analyses of one model from two threads, while another thread runs it, and inside its forward.

Every case makes the threads overlap for real: a ``Gate`` module inside the model holds a
thread in the middle of its forward until the other thread has reached the same point (or has
returned). Each case runs 20 times; every report returned must equal the report of the same call
made alone, and after every case no module keeps a stand-in ``forward``, a hook, a claim or a
dispatch mode.
"""

from __future__ import annotations

import contextlib
import copy
import io
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack
from torch.utils.flop_counter import FlopCounterMode

from torchscan import (
    ConcurrentAnalysisError,
    TorchscanError,
    crawl_module,
    measure_flops,
    measure_peak_memory,
    measure_workload,
    summary,
)
from torchscan._claims import holders

torch.set_num_threads(1)

RUNS = 20
WAIT_S = 30.0  # only reached when a case is broken; a passing case never waits this long
BLOCKS = 6  # Linear(4, 4) + ReLU blocks, three before the gate and three after it
LINEAR_FLOPS = 2 * 4 * 4  # one Linear(4, 4) on a batch of one, bias add not counted
EXPECTED_FLOPS = BLOCKS * LINEAR_FLOPS

_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
_GLOBAL_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_hooks_with_kwargs",
    "_global_forward_hooks_always_called",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)


class Gate(nn.Module):
    """Runs ``self.hook()`` (when set) in the middle of the model's forward."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: Callable[[], None] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hook = self.hook
        if hook is not None:
            hook()
        return x


def block() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())


def gated_model(*, training: bool = False) -> tuple[nn.Sequential, Gate]:
    torch.manual_seed(0)
    gate = Gate()
    half = BLOCKS // 2
    model = nn.Sequential(*[block() for _ in range(half)], gate, *[block() for _ in range(half)])
    model.train(training)
    return model, gate


# -- the clean-state helper -------------------------------------------------------------------


class State:
    """What a model and the process hold that an analysis might leave behind."""

    def __init__(self, model: nn.Module) -> None:
        self.modules = list(model.modules())
        self.per_module = [self._of(module) for module in self.modules]
        self.global_hooks = {name: list(getattr(torch_module, name)) for name in _GLOBAL_HOOKS}
        self.grad = torch.is_grad_enabled()

    @staticmethod
    def _of(module: nn.Module) -> tuple[Any, ...]:
        return (
            module.__dict__.get("forward", None),
            module.training,
            {name: list(getattr(module, name)) for name in _HOOK_DICTS},
        )

    def assert_clean(self) -> None:
        """No stand-in forward, hook, claim or dispatch mode left; training flags as before."""
        for module, before in zip(self.modules, self.per_module, strict=True):
            forward, training, hooks = self._of(module)
            assert forward is before[0], f"{type(module).__name__} kept a stand-in forward"
            assert training == before[1], f"{type(module).__name__} kept training={training}"
            assert hooks == before[2], f"{type(module).__name__} kept hooks: {hooks}"
        for name in _GLOBAL_HOOKS:
            assert list(getattr(torch_module, name)) == self.global_hooks[name], name
        assert _get_current_dispatch_mode_stack() == []
        assert holders() == {}
        assert torch.is_grad_enabled() is self.grad


@pytest.fixture
def model_and_gate() -> Iterator[tuple[nn.Module, Gate]]:
    model, gate = gated_model()
    yield model, gate
    gate.hook = None


# -- running two things at once ---------------------------------------------------------------


class Pair:
    """Two calls on two threads, each held at every gate until the other gets as far or returns.

    Each thread's n-th call of the model waits inside its forward until the other thread has
    begun its own n-th call or has returned, so every pass of one call (its forward, its FLOPs
    pass, its tensor-memory pass) runs while the other call is inside the same pass or over.
    """

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.changed = threading.Condition()
        self.calls = [0, 0]  # calls of the model begun, per thread
        self.finished = [False, False]
        self.index: dict[int, int] = {}
        self.results: list[Any] = [None, None]
        self.held = [0, 0]  # calls that waited at the gate for the other thread
        self.stacks: list[Any] = [None, None]
        self.start = threading.Barrier(2)

    def _hook(self) -> None:
        index = self.index.get(threading.get_ident())
        if index is None:
            return
        other = 1 - index
        with self.changed:
            self.calls[index] += 1
            count = self.calls[index]
            self.changed.notify_all()
            if not self.changed.wait_for(
                lambda: self.calls[other] >= count or self.finished[other], WAIT_S
            ):
                raise AssertionError("the other thread never got as far nor returned")
            self.held[index] += 1

    def _run(self, index: int, call: Callable[[], Any]) -> None:
        self.index[threading.get_ident()] = index
        try:
            self.start.wait(WAIT_S)
            self.results[index] = call()
        except BaseException as error:  # the test reads it
            self.results[index] = error
        finally:
            self.stacks[index] = _get_current_dispatch_mode_stack()
            with self.changed:
                self.finished[index] = True
                self.changed.notify_all()

    def run(self, first: Callable[[], Any], second: Callable[[], Any]) -> list[Any]:
        self.gate.hook = self._hook
        threads = [
            threading.Thread(target=self._run, args=(index, call), daemon=True)
            for index, call in enumerate((first, second))
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(WAIT_S)
                assert not thread.is_alive(), "a thread did not finish"
        finally:
            self.gate.hook = None
        assert self.stacks == [[], []], "a thread kept a dispatch mode"
        # At least one call was held inside its forward until the other got there or returned.
        assert sum(self.held) >= 1
        return self.results


def strip_timing(report: Any) -> dict[str, Any]:
    """A benchmark report without what changes from run to run (timing and the context)."""
    return {
        "operator_flops": report["operator_flops"],
        "tensor_memory_peak": report["metrics"]["tensor_memory_peak"],
        "operator_flops_total": report["metrics"]["operator_flops"],
        "diagnostics": report["diagnostics"],
    }


# -- torch's own thread rules, which the analyses rely on -------------------------------------


def test_dispatch_modes_are_per_thread_and_global_module_hooks_are_not() -> None:
    """A dispatch mode sees only its own thread's operators; global module hooks see every thread.

    So the dispatch-mode passes need nothing to ignore other threads, while every hook and
    stand-in forward must check the thread itself.
    """
    seen: list[int] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(threading.get_ident())
            return func(*args, **(kwargs or {}))

    hooked: list[int] = []
    inside, finished = threading.Event(), threading.Event()
    other: dict[str, Any] = {}
    linear = nn.Linear(4, 4)

    def elsewhere() -> None:
        try:
            inside.wait(WAIT_S)
            other["stack"] = list(_get_current_dispatch_mode_stack())
            other["ident"] = threading.get_ident()
            with FlopCounterMode(display=False) as counter:
                linear(torch.ones(1, 4))
            other["flops"] = counter.get_total_flops()
        finally:
            finished.set()

    handle = torch_module.register_module_forward_hook(
        lambda *_: hooked.append(threading.get_ident())
    )
    thread = threading.Thread(target=elsewhere)
    thread.start()
    try:
        with Spy(), FlopCounterMode(display=False) as counter:
            inside.set()
            assert finished.wait(WAIT_S)
            linear(torch.ones(1, 4))
    finally:
        handle.remove()
        thread.join(WAIT_S)
    assert other["stack"] == []
    assert set(seen) == {threading.get_ident()}
    assert counter.get_total_flops() == LINEAR_FLOPS
    assert other["flops"] == LINEAR_FLOPS
    assert sorted(hooked) == sorted([threading.get_ident(), other["ident"]])


# -- two analyses of one model at once --------------------------------------------------------

ANALYSES: dict[str, Callable[[nn.Module, torch.Tensor], Any]] = {
    "crawl_module": lambda model, x: crawl_module(model, args=(x,)),
    "structure": lambda model, x: crawl_module(model, args=(x,), mode="structure"),
    "summary": lambda model, x: summary(model, args=(x,), file=io.StringIO()),
    "measure_flops": lambda model, x: measure_flops(lambda: model(x)),
    "measure_flops_modules": lambda model, x: measure_flops(lambda: model(x), modules=model),
    "measure_peak_memory": lambda model, x: measure_peak_memory(lambda: model(x)),
    "measure_workload": lambda model, x: strip_timing(
        measure_workload(
            lambda: model(x), metrics=["operator_flops", "tensor_memory"], print_summary=False
        )
    ),
}
# How many times each calls the model (measure_workload: its FLOPs pass, its memory pass).
CALLS = {name: 2 if name == "measure_workload" else 1 for name in ANALYSES}
# Those that change the model while they run, and so hold its modules alone.
EXCLUSIVE = {"crawl_module", "structure", "summary"}
# Those that hold its modules shared (hooks filtered to their thread).
SHARED = {"measure_flops_modules"}


GAP_NOTE = "no operator ran on another thread while the watch of other threads ran, but it was"


def without_gap_notes(report: Any) -> Any:
    """``report`` without the note a watching pass adds when another pass ended meanwhile.

    Passes on two threads share one profiler session: when one ends, the session is read and
    started again, and the other pass says so (its gap of about a millisecond was not watched).
    """
    if not isinstance(report, dict) or "diagnostics" not in report:
        return report
    kept = [d for d in report["diagnostics"] if not str(d.get("message", "")).startswith(GAP_NOTE)]
    if len(kept) == len(report["diagnostics"]):
        return report
    return {**report, "diagnostics": kept}


def check_report(name: str, report: Any, reference: Any) -> None:
    report = without_gap_notes(report)
    assert report == reference, f"{name}: the report differs from the call made alone"
    if name in ("crawl_module", "summary"):
        assert len(report["layers"]) == 1 + BLOCKS * 3 + 1
        assert report["totals"]["operator_flops"]["value"] == EXPECTED_FLOPS
        # The gate has no formula: the module estimate is the Linear layers' (bias adds included).
        assert report["totals"]["module_flops"]["known_value"] == BLOCKS * (LINEAR_FLOPS + 4)
    elif name.startswith("measure_flops"):
        assert report["total"]["value"] == EXPECTED_FLOPS
    elif name == "measure_workload":
        assert report["operator_flops_total"]["value"] == EXPECTED_FLOPS


PAIRS = [
    ("crawl_module", "crawl_module"),
    ("summary", "crawl_module"),
    ("structure", "crawl_module"),
    ("crawl_module", "measure_flops_modules"),
    ("measure_flops", "measure_flops"),
    ("measure_flops_modules", "measure_flops_modules"),
    ("measure_flops", "crawl_module"),
    # Operator FLOPs and tensor memory (measure_workload's passes, the latter measure_peak_memory
    # itself) on both threads at once.
    ("measure_workload", "measure_workload"),
    ("measure_peak_memory", "crawl_module"),
]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=["+".join(pair) for pair in PAIRS])
def test_two_analyses_of_one_model_at_once(first: str, second: str) -> None:
    """Each report equals the call made alone, or the call raised before changing anything.

    Two calls that change the model (``crawl_module``, ``summary``) or one of them and a
    counter tracking the model's modules cannot share it: exactly one of the two returns
    (whichever claimed the modules first) and the other raises ``ConcurrentAnalysisError``
    saying so, while the first is held inside its forward. Any other pair returns two reports.
    The model is in training mode, so a refused call that changed a flag would show.
    """
    model, gate = gated_model(training=True)
    x = torch.ones(1, 4)
    references = {name: ANALYSES[name](model, x) for name in {first, second}}
    state = State(model)
    collide = (first in EXCLUSIVE or second in EXCLUSIVE) and (
        {first, second} & (EXCLUSIVE | SHARED) == {first, second}
    )
    refused = 0
    for _ in range(RUNS):
        pair = Pair(gate)
        results = pair.run(lambda: ANALYSES[first](model, x), lambda: ANALYSES[second](model, x))
        if not collide:
            # Every call of the model waited inside its forward for the other thread's.
            assert pair.calls == pair.held == [CALLS[first], CALLS[second]]
        for name, result in zip((first, second), results, strict=True):
            if isinstance(result, ConcurrentAnalysisError):
                assert collide, f"{name} was refused: {result}"
                assert "is being analysed in another thread" in str(result)
                assert "this model" in str(result)
                refused += 1
            else:
                assert not isinstance(result, BaseException), f"{name} raised {result!r}"
                check_report(name, result, references[name])
        state.assert_clean()
    assert refused == (RUNS if collide else 0)


def test_models_sharing_a_submodule_collide_by_that_module() -> None:
    """Two models holding one module: the second analysis names the shared module and stops."""
    torch.manual_seed(0)
    shared = nn.Linear(4, 4)
    gate = Gate()
    left = nn.Sequential(shared, gate, nn.ReLU())
    right = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(gate, shared))
    x = torch.ones(1, 4)
    references = [crawl_module(left, args=(x,)), crawl_module(right, args=(x,))]
    states = [State(left), State(right)]
    for _ in range(RUNS):
        results = Pair(gate).run(
            lambda: crawl_module(left, args=(x,)), lambda: crawl_module(right, args=(x,))
        )
        errors = [r for r in results if isinstance(r, ConcurrentAnalysisError)]
        assert len(errors) == 1
        message = str(errors[0])
        # Whichever came second names the first module of its own walk that the other holds.
        assert message.startswith("crawl_module: module '")
        assert "' of this model is being analysed in another thread (crawl_module in thread" in (
            message
        )
        for result, reference in zip(results, references, strict=True):
            if not isinstance(result, BaseException):
                assert without_gap_notes(result) == reference
        for state in states:
            state.assert_clean()


# -- an analysis while another thread runs the model ------------------------------------------


class Runner:
    """Runs the model on its own thread, through every call the analysis makes of it.

    Each forward of the runner waits at the gate until the analysing thread is inside a call
    of the model that no runner forward has overlapped yet; the rest of that forward then runs
    while the analysis holds the model, and the analysis's call waits at its own gate until
    the runner's forward is over. So every call the analysis makes (a forward, a FLOPs pass, a
    tensor-memory pass) has a whole half of a runner forward inside it.
    """

    def __init__(self, model: nn.Module, gate: Gate, x: torch.Tensor) -> None:
        self.model, self.gate, self.x = model, gate, x
        self.changed = threading.Condition()
        self.inside = 0  # calls the analysis has begun
        self.overlapped = 0  # of those, how many a runner forward ran inside
        self.current = 0  # the analysis call the runner's forward entered under
        self.stop = False
        self.runner_ident: int | None = None
        self.forwards = 0
        self.error: BaseException | None = None

    def _hook(self) -> None:
        with self.changed:
            if threading.get_ident() == self.runner_ident:
                if not self.changed.wait_for(
                    lambda: self.inside > self.overlapped or self.stop, WAIT_S
                ):
                    raise AssertionError("the analysis never called the model")
                self.current = self.inside
                return
            self.inside += 1
            call = self.inside
            self.changed.notify_all()
            if not self.changed.wait_for(lambda: self.overlapped >= call, WAIT_S):
                raise AssertionError("the runner never ran a forward inside the analysis")

    def _loop(self) -> None:
        self.runner_ident = threading.get_ident()
        try:
            while not self.stop:
                self.model(self.x)
                with self.changed:
                    self.forwards += 1
                    if self.current > self.overlapped:
                        self.overlapped = self.current
                        self.changed.notify_all()
        except BaseException as error:  # the test reads it
            self.error = error
            with self.changed:
                self.overlapped = 1 << 30  # release the analysis: the test fails below
                self.changed.notify_all()

    def run(self, call: Callable[[], Any]) -> Any:
        self.gate.hook = self._hook
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            return call()
        finally:
            with self.changed:
                self.stop = True
                self.changed.notify_all()
            thread.join(WAIT_S)
            self.gate.hook = None
            assert not thread.is_alive()
            assert self.error is None, repr(self.error)


ALONE_WHILE_RUNNING = [
    "crawl_module",
    "summary",
    "structure",
    "measure_flops",
    "measure_flops_modules",
    "measure_workload",
]


def _seen_elsewhere(metric: dict[str, Any], alone: dict[str, Any]) -> dict[str, Any]:
    """A metric made partial by operators on another thread: its known value is the one alone."""
    assert metric["status"] == "partial"
    assert metric["value"] is None
    assert metric["known_value"] == alone["value"]
    assert "ran on 1 other thread while the workload ran" in metric["reason"]
    return alone


def without_other_threads(name: str, report: Any, reference: Any) -> Any:
    """``report`` with what operators on the runner's thread changed checked and undone.

    The watching passes (operator FLOPs, tensor memory) see the runner's forwards run on another
    thread: never counted in, they make the metric partial, with an ``other_threads`` warning.
    """
    if name not in ("measure_flops", "measure_flops_modules", "measure_workload"):
        return report
    report = copy.deepcopy(report)
    warned = [d for d in report["diagnostics"] if d["code"] == "other_threads"]
    metrics = ["operator_flops"] + (["tensor_memory_peak"] if name == "measure_workload" else [])
    assert sorted(d["metric"] for d in warned) == sorted(metrics)
    report["diagnostics"] = [d for d in report["diagnostics"] if d["code"] != "other_threads"]
    section = report["operator_flops"]
    assert section["other_threads"]["calls"] > 0
    assert section["other_threads"]["threads"] == 1
    section["other_threads"] = reference["operator_flops"]["other_threads"]
    section["total"] = _seen_elsewhere(section["total"], reference["operator_flops"]["total"])
    if name == "measure_workload":
        for key in ("tensor_memory_peak", "operator_flops_total"):
            report[key] = _seen_elsewhere(report[key], reference[key])
    else:
        report["total"] = _seen_elsewhere(report["total"], reference["total"])
    return report


@pytest.mark.parametrize("name", ALONE_WHILE_RUNNING)
def test_analysis_while_another_thread_runs_the_model(name: str) -> None:
    """The other thread's forwards, run while the analysis holds the model, are never counted.

    The passes that watch other threads find them and say so; the others never see them.
    """
    model, gate = gated_model()
    x = torch.ones(1, 4)
    reference = ANALYSES[name](model, x)
    state = State(model)
    for _ in range(RUNS):
        runner = Runner(model, gate, x)
        report = runner.run(lambda: ANALYSES[name](model, x))
        # Every call the analysis made of the model had a runner forward inside it.
        assert runner.inside == runner.overlapped == CALLS[name]
        check_report(name, without_other_threads(name, report, reference), reference)
        state.assert_clean()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_hooked_analysis_ignores_other_threads() -> None:
    """A model holding a scripted module is recorded by global hooks: they ignore other threads."""
    model, gate = gated_model()
    model.append(torch.jit.script(nn.Linear(4, 4)))
    x = torch.ones(1, 4)
    reference = crawl_module(model, args=(x,))
    assert len(reference["layers"]) == 1 + BLOCKS * 3 + 2
    state = State(model)
    for _ in range(RUNS):
        runner = Runner(model, gate, x)
        assert runner.run(lambda: crawl_module(model, args=(x,))) == reference
        state.assert_clean()


def test_tensor_memory_ignores_what_other_threads_allocate() -> None:
    """Storages another thread makes, uses and frees during the call are never counted in.

    The watch finds the other thread's two operator calls (``zeros``, ``add_``): the peak is
    partial, its known value the one measured alone, with an ``other_threads`` warning.
    """
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    x = torch.ones(1, 4)
    reference = measure_peak_memory(lambda: model(x))
    for _ in range(RUNS):
        go, done = threading.Event(), threading.Event()

        def elsewhere(go: threading.Event = go, done: threading.Event = done) -> None:
            try:
                if go.wait(WAIT_S):
                    big = torch.zeros(1 << 20)  # 4 MiB, made and freed while the call runs
                    big.add_(1)
                    del big
            finally:
                done.set()

        def call(go: threading.Event = go, done: threading.Event = done) -> torch.Tensor:
            go.set()
            assert done.wait(WAIT_S)
            out: torch.Tensor = model(x)
            return out

        thread = threading.Thread(target=elsewhere)
        thread.start()
        try:
            report = measure_peak_memory(call)
        finally:
            go.set()
            thread.join(WAIT_S)
        assert report["baseline"] == reference["baseline"]
        peak = report["tensor_memory_peak"]
        assert peak["status"] == "partial"
        assert peak["known_value"] == reference["tensor_memory_peak"]["value"]
        assert peak["known_value"] == 4 * 4 * 4 + 4 * 4 + 4 * 4 + 4 * 4
        assert peak["reason"] == (
            "2 operator calls ran on 1 other thread while the workload ran; they are not counted"
        )
        (warned,) = [d for d in report["diagnostics"] if d["code"] == "other_threads"]
        assert warned["metric"] == "tensor_memory_peak"
        assert "`aten::add_` (1)" in warned["message"]
        assert "`aten::zeros` (1)" in warned["message"]
        assert _get_current_dispatch_mode_stack() == []


# -- an analysis inside the forward it analyses -----------------------------------------------


class Reentrant(nn.Module):
    """Starts ``self.inner(self)`` inside its own forward, once, and keeps what it gave."""

    def __init__(self, inner: Callable[[nn.Module], Any], *, swallow: bool) -> None:
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)
        self.inner = inner
        self.swallow = swallow
        self.outcome: Any = None
        self.armed = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.first(x)
        if self.armed:
            self.armed = False
            try:
                self.outcome = self.inner(self)
            except ConcurrentAnalysisError as error:
                self.outcome = error
                if not self.swallow:
                    raise
        out: torch.Tensor = self.second(y)
        return out


INNER_X = torch.ones(1, 4)  # made outside: the outer report would list the operator making it
INNER: dict[str, Callable[[nn.Module], Any]] = {
    "crawl_module": lambda model: crawl_module(model, args=(INNER_X,)),
    "summary": lambda model: summary(model, args=(INNER_X,), file=io.StringIO()),
    "crawl_module_child": lambda model: crawl_module(model.first, args=(INNER_X,)),
    "measure_flops_modules": lambda model: measure_flops(lambda: None, modules=model.second),
}


@pytest.mark.parametrize("inner", sorted(INNER))
@pytest.mark.parametrize("outer", ["crawl_module", "summary"])
def test_analysis_inside_the_analysed_forward_is_refused(outer: str, inner: str) -> None:
    """The inner call raises before changing anything; the outer report counts each call once."""
    x = torch.ones(1, 4)
    plain = Reentrant(INNER[inner], swallow=True)
    plain.armed = False
    reference = ANALYSES[outer](plain, x)
    assert reference["totals"]["module_flops"]["value"] == 2 * LINEAR_FLOPS
    assert reference["totals"]["operator_flops"]["value"] == 2 * LINEAR_FLOPS
    for _ in range(RUNS):
        model = Reentrant(INNER[inner], swallow=True)
        model.load_state_dict(plain.state_dict())
        state = State(model)
        report = ANALYSES[outer](model, x)
        assert isinstance(model.outcome, ConcurrentAnalysisError)
        inner_name = "measure_flops" if inner == "measure_flops_modules" else inner
        assert str(model.outcome) == (
            f"{inner_name.removesuffix('_child')} was started inside a forward that {outer} is "
            "analysing on this thread (this model is in use by it); an analysis cannot run "
            "inside the forward of the modules it analyses: call it before or after that analysis"
        )
        assert without_gap_notes(report) == reference
        model.armed = True
        state.assert_clean()

        # Not caught: the error leaves the outer call as the forward's own exception would.
        model = Reentrant(INNER[inner], swallow=False)
        state = State(model)
        with pytest.raises(ConcurrentAnalysisError) as raised:
            ANALYSES[outer](model, x)
        assert raised.value is model.outcome
        model.armed = True
        state.assert_clean()


NESTED: dict[str, Callable[[nn.Module, torch.Tensor], Any]] = {
    "crawl_module": lambda model, x: crawl_module(model, args=(x,)),
    "measure_flops": lambda model, x: measure_flops(lambda: model(x)),
    "measure_flops_modules": lambda model, x: measure_flops(lambda: model(x), modules=model),
}


@pytest.mark.parametrize("inner", sorted(NESTED))
@pytest.mark.parametrize("outer", ["crawl_module", "measure_flops_modules"])
def test_nested_analysis_of_another_model_gives_consistent_numbers(outer: str, inner: str) -> None:
    """An analysis of an unrelated model inside an analysed forward: both reports exact.

    The inner report equals the same call made alone; the outer one equals the analysis of a
    forward that runs the inner model directly (its operators ran inside the outer forward).
    """
    torch.manual_seed(0)
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.ones(1, 4)
    with torch.no_grad() if outer == "crawl_module" else contextlib.nullcontext():
        # The grad mode the inner call meets inside the outer forward (the context records it).
        alone_report = NESTED[inner](other, x)

    class Outer(nn.Module):
        def __init__(self, analyse: bool) -> None:
            super().__init__()
            self.first = nn.Linear(4, 4)
            self.analyse = analyse
            self.inner: Any = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.analyse:
                self.inner = NESTED[inner](other, x)
            else:
                # crawl_module runs its forward without gradients: so does the direct call.
                with torch.no_grad() if inner == "crawl_module" else contextlib.nullcontext():
                    other(x)
            out: torch.Tensor = self.first(x)
            return out

    direct = Outer(analyse=False)
    reference = NESTED[outer](direct, x)
    other_state = State(other)
    for _ in range(RUNS):
        nested = Outer(analyse=True)
        nested.load_state_dict(direct.state_dict())
        state = State(nested)
        report = NESTED[outer](nested, x)
        assert without_gap_notes(report) == reference
        total = report["totals" if outer == "crawl_module" else "total"]
        assert (total["operator_flops"] if outer == "crawl_module" else total)["value"] == (
            2 * LINEAR_FLOPS
        )
        assert without_gap_notes(nested.inner) == alone_report
        state.assert_clean()
        other_state.assert_clean()


# -- every path gives the modules back --------------------------------------------------------


class Interrupting(nn.Module):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.error = error

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.linear(x)
        raise self.error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("boom")])
@pytest.mark.parametrize("name", ["crawl_module", "summary", "measure_flops_modules"])
def test_modules_are_given_back_on_every_path(name: str, error: BaseException) -> None:
    """After the forward raised (``KeyboardInterrupt`` too), the model can be analysed again."""
    model = Interrupting(error)
    x = torch.ones(1, 4)
    state = State(model)
    for _ in range(RUNS):
        with pytest.raises(type(error)) as raised:
            ANALYSES[name](model, x)
        assert raised.value is error
        state.assert_clean()


def test_the_error_class_is_public_and_documented() -> None:
    import torchscan

    assert "ConcurrentAnalysisError" in torchscan.__all__
    assert issubclass(ConcurrentAnalysisError, TorchscanError)
    assert issubclass(ConcurrentAnalysisError, RuntimeError)
    assert ConcurrentAnalysisError.__doc__
