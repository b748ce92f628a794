"""The first analysis of a process does not load PyTorch's compiler, and compiled code still works.

PyTorch wraps a dispatch mode's ``__torch_dispatch__`` so that its first call imports Dynamo
(``torch._dynamo``: close to a second and about 180 MB). The passes keep Dynamo out of their
handlers without importing it (``torchscan._compiled.without_dynamo``). Each test runs in a
fresh process, where nothing has imported Dynamo yet. Times are measured by
``benches/bench_first_call.py``, not here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = """
import io, contextlib, sys
import torch
import torchscan
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
x = torch.randn(4, 64)
FLOPS = 2 * (2 * 4 * 64 * 64)
graphs = []  # graphs compiled
runs = []  # runs of compiled graphs
def counting(gm, example_inputs):
    graphs.append(gm)
    def run(*args):
        runs.append(1)
        return gm.forward(*args)
    return run
def dynamo_loaded():
    return "torch._dynamo" in sys.modules
"""


def _run(body: str) -> str:
    code = PRELUDE + textwrap.dedent(body) + '\nprint("ok")\n'
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok"), done.stdout
    return done.stdout


def test_no_analysis_loads_dynamo() -> None:
    _run(
        """
        assert not dynamo_loaded()
        report = torchscan.crawl_module(model, (64,))
        assert report["totals"]["operator_flops"]["value"] == FLOPS // 4  # batch 1
        with contextlib.redirect_stdout(io.StringIO()):
            torchscan.summary(model, (64,))
        assert torchscan.measure_flops(lambda: model(x))["total"]["value"] == FLOPS
        torchscan.measure_peak_memory(lambda: model(x))
        torchscan.measure_workload(
            lambda: model(x), metrics=["operator_flops", "tensor_memory"], print_summary=False
        )
        assert not dynamo_loaded()
        """
    )


def test_compiled_code_made_after_the_first_analysis_works_and_is_found() -> None:
    _run(
        """
        torchscan.measure_flops(lambda: model(x))
        compiled = torch.compile(model, backend=counting)
        compiled(x)
        assert (len(graphs), len(runs)) == (1, 1)
        report = torchscan.measure_flops(lambda: compiled(x))
        # Run eagerly inside the pass (counted exactly, found), compiled again after it.
        assert report["total"]["value"] == FLOPS
        assert [d["code"] for d in report["diagnostics"]] == ["compiled_callable"]
        assert (len(graphs), len(runs)) == (1, 1)
        compiled(x)
        assert (len(graphs), len(runs)) == (1, 2)
        """
    )


def test_compile_first_used_inside_a_pass_runs_eagerly_and_is_counted() -> None:
    _run(
        """
        report = torchscan.measure_flops(lambda: torch.compile(model, backend=counting)(x))
        assert dynamo_loaded()
        assert report["total"]["status"] == "complete"
        assert report["total"]["value"] == FLOPS
        assert graphs == [] and runs == []  # nothing was compiled or run compiled
        # The handler keeps Dynamo out from the first operator after it was loaded: the next
        # pass over compiled code counts it exactly too.
        compiled = torch.compile(model, backend=counting)
        report = torchscan.measure_flops(lambda: compiled(x))
        assert report["total"]["value"] == FLOPS
        assert graphs == []
        """
    )


def test_torch_cond_first_used_inside_a_pass() -> None:
    """``torch.cond`` loads Dynamo and traces through the pass's handler: it must see PyTorch's
    own wrapper there, as it would for any dispatch mode."""
    _run(
        """
        a = torch.randn(8, 8)
        report = torchscan.measure_flops(
            lambda: torch.cond(a.sum() > 0, lambda v: v @ v, lambda v: v + 1, (a,))
        )
        assert dynamo_loaded()
        assert report["total"]["status"] == "partial"
        uncounted = [op["operator"] for op in report["operator_flops"]["uncounted"]]
        assert uncounted == ["higher_order::cond"]
        """
    )
