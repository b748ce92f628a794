"""Measurement across torch.distributed ranks: torchrun with gloo on CPU, for real.

Every launch runs in its own session with a time limit, and the whole session is killed when it
runs past it, so that a dead or hung rank can never hang the suite.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import torchscan
from torchscan import (
    DistributedMeasurementError,
    InvalidArgumentError,
    ReportMergeError,
    merge_rank_reports,
    validate_report,
)

WORKER = Path(__file__).with_name("distributed_worker.py")
REPORT_BIN = Path(sys.executable).with_name("torchscan-report")
#: The straggler's extra time per step, slept after its optimizer step.
STRAGGLER_S = 0.03
#: What the merged report may say the straggler costs per call. ``time.sleep`` lasts at least
#: what it is asked and the scheduler of a loaded two-core machine adds a few milliseconds, while
#: the other rank's share of the step can only hide part of the sleep if it is slower on its own
#: (it runs the same step): so the cost lies between 0.8 and 1.6 times the sleep.
COST_LOW, COST_HIGH = 0.8 * STRAGGLER_S, 1.6 * STRAGGLER_S
LAUNCH_TIMEOUT_S = 240


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _run_session(
    args: list[str], env: dict[str, str], timeout_s: float, cwd: Path | None = None
) -> tuple[int, str]:
    """Run ``args`` in a new session; kill the whole session when it passes ``timeout_s``."""
    process = subprocess.Popen(
        args,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"the launch ran past {timeout_s} s and was killed:\n{output[-4000:]}")
    return process.returncode, output


#: What libstdc++ prints when a C++ thread object of PyTorch's is destroyed while its thread
#: still runs. Seen once in CI: a gloo rank of the documented DDP example aborted so (SIGABRT)
#: after every rank had finished and rank 0 had printed the merged report, in PyTorch's own
#: teardown; neither torchscan's Python nor its Rust code can print it.
_TEARDOWN_ABORT = "terminate called without an active exception"


def _launch(args: list[str], cwd: Path | None = None, **extra: str) -> tuple[int, str]:
    """Run a torchrun launch; again, once, when a rank died of PyTorch's teardown abort.

    Any other failure, or the abort twice, is the test's to report.
    """
    code, output = _run_session(args, _env(**extra), LAUNCH_TIMEOUT_S, cwd)
    if code != 0 and _TEARDOWN_ABORT in output:
        code, again = _run_session(args, _env(**extra), LAUNCH_TIMEOUT_S, cwd)
        output = f"{output}\n[the launch aborted in PyTorch's teardown and ran again]\n{again}"
    return code, output


def test_only_the_teardown_abort_runs_a_launch_again(tmp_path: Path) -> None:
    """A launch that fails in any other way runs once; the abort's launch twice, then fails."""
    counter = tmp_path / "runs"
    script = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
        "p.write_text(p.read_text() + 'x') if p.exists() else p.write_text('x'); "
        "print(sys.argv[2]); sys.exit(1)"
    )
    code, output = _launch([sys.executable, "-c", script, str(counter), "plain failure"])
    assert (code, counter.read_text()) == (1, "x")
    counter.unlink()
    code, output = _launch([sys.executable, "-c", script, str(counter), _TEARDOWN_ABORT])
    assert (code, counter.read_text()) == (1, "xx")
    assert "ran again" in output


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One torchrun launch of two gloo ranks timing a DDP step, rank 1 the straggler."""
    out = tmp_path_factory.mktemp("ddp")
    args = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(WORKER),
        "ddp",
        str(out),
    ]
    code, output = _launch(args, STRAGGLER_S=str(STRAGGLER_S))
    assert code == 0, output[-6000:]
    loaded = {
        name: json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("rank0", "rank1", "merged")
    }
    loaded["output"] = output
    loaded["dir"] = out
    return loaded


def test_each_rank_records_its_place_and_aligned_blocks(ddp_run: dict[str, Any]) -> None:
    ranks = [ddp_run["rank0"], ddp_run["rank1"]]
    for rank, report in enumerate(ranks):
        validate_report(report)
        place = dict(report["context"]["distributed"])
        # One id for the measurement, drawn by rank 0 and recorded by every rank.
        assert place.pop("measurement_id") == ranks[0]["context"]["distributed"]["measurement_id"]
        assert re.fullmatch("[0-9a-f]{32}", ranks[0]["context"]["distributed"]["measurement_id"])
        assert place == {
            "rank": rank,
            "local_rank": rank,
            "world_size": 2,
            "backend": "gloo",
            "host": socket.gethostname(),
            "process_group": "existing",
        }
        timing = report["timing"]
        # DDP all-reduces its gradients in every step: the ranks meet inside every call, so
        # each block is one call and the barrier sees every step's end.
        assert timing["collectives_per_call"] >= 1
        assert timing["calls_per_block"] == 1
        assert len(timing["barrier_waits_s"]) == len(timing["block_durations_s"]) >= 12
        assert all(wait >= 0 for wait in timing["barrier_waits_s"])
        assert "aligned across 2 ranks" in report["metrics"]["latency"]["method"]
        assert report["metrics"]["rank_process_rss_peak"]["status"] == "complete"
        assert report["metrics"]["rank_process_rss_peak"]["value"] > 10 * 2**20
        assert report["metrics"]["process_rss_peak"]["status"] == "unavailable"
        # The other rank on this host is the job itself, not noise.
        other = report["metrics"]["machine_other_cpu_ratio"]["method"]
        assert "the job's 1 other rank on this host" in other
        # DDP's gradient all-reduce moves data between ranks: excluded, never "uncounted".
        flops = report["operator_flops"]
        assert report["metrics"]["operator_flops"]["status"] == "complete", flops["uncounted"]
        excluded = {op["operator"]: op["class"] for op in flops["excluded"]}
        assert excluded.get("c10d::allreduce_") == "data_movement", excluded
    # Same calls in every block, on every rank.
    first, second = (report["timing"] for report in ranks)
    for key in ("warmup_calls", "calls_per_block"):
        assert first[key] == second[key]
    assert len(first["block_durations_s"]) == len(second["block_durations_s"])


def test_the_merged_report_names_the_straggler_and_its_cost(ddp_run: dict[str, Any]) -> None:
    merged = ddp_run["merged"]
    validate_report(merged)
    assert merged["kind"] == "distributed_benchmark"
    assert merged["job"]["world_size"] == 2
    assert merged["job"]["work_units_per_call"] == 32.0
    straggler = merged["straggler"]
    assert straggler["rank"] == 1, straggler
    assert COST_LOW <= straggler["cost_s"] <= COST_HIGH, straggler
    assert merged["metrics"]["straggler_cost"]["value"] == straggler["cost_s"]
    # The fast rank waited for the straggler at the barriers; the straggler hardly ever waited.
    waits = {row["rank"]: row["barrier_wait_s"] for row in merged["ranks"]}
    blocks = len(merged["blocks"])
    assert waits[0] > waits[1]
    assert waits[0] / blocks >= COST_LOW
    # Step time is the slowest rank's, block by block.
    for index, block in enumerate(merged["blocks"]):
        durations = [r["timing"]["block_durations_s"][index] for r in merged["rank_reports"]]
        assert block["step_time_s"] == max(durations)
        assert block["spread_s"] == max(durations) - min(durations)
    assert merged["metrics"]["step_time"]["value"] >= STRAGGLER_S
    # Only rank 0 printed, and it printed the merged summary.
    assert ddp_run["output"].count("Straggler: rank 1,") == 1


def test_gathered_reports_are_the_ranks_own(ddp_run: dict[str, Any]) -> None:
    merged = ddp_run["merged"]
    assert merged["rank_reports"] == [ddp_run["rank0"], ddp_run["rank1"]]
    # The Python merge and the command line agree byte for byte with the gathered merge.
    again = merge_rank_reports([ddp_run["rank1"], ddp_run["rank0"]])
    assert again == merged
    out = ddp_run["dir"] / "cli.json"
    subprocess.run(
        [
            str(REPORT_BIN),
            "merge",
            str(ddp_run["dir"] / "rank0.json"),
            str(ddp_run["dir"] / "rank1.json"),
            "-o",
            str(out),
        ],
        check=True,
        timeout=60,
    )
    assert json.loads(out.read_text(encoding="utf-8")) == merged


def test_reports_that_do_not_belong_together_are_refused(ddp_run: dict[str, Any]) -> None:
    rank0, rank1 = ddp_run["rank0"], ddp_run["rank1"]
    with pytest.raises(ReportMergeError, match="missing"):
        merge_rank_reports([rank0])
    with pytest.raises(ReportMergeError, match="twice"):
        merge_rank_reports([rank0, rank0])
    other = copy.deepcopy(rank1)
    other["context"]["distributed"]["world_size"] = 4
    with pytest.raises(ReportMergeError, match="world"):
        merge_rank_reports([rank0, other])
    tampered = copy.deepcopy(rank1)
    tampered["metrics"]["latency"]["value"] *= 2  # no longer what its own blocks say
    with pytest.raises(torchscan.ReportValidationError, match=r"input 1:\$\.metrics\.latency"):
        merge_rank_reports([rank0, tampered])
    renamed = copy.deepcopy(rank1)
    renamed["workload"]["name"] = "other_step"
    with pytest.raises(ReportMergeError, match=r"workload|name"):
        merge_rank_reports([rank0, renamed])
    alone = copy.deepcopy(rank1)
    del alone["context"]["distributed"]
    del alone["timing"]["barrier_waits_s"]
    del alone["timing"]["collectives_per_call"]
    del alone["metrics"]["rank_process_rss_peak"]
    with pytest.raises(ReportMergeError, match="distributed"):
        merge_rank_reports([rank0, alone])
    with pytest.raises(InvalidArgumentError):
        merge_rank_reports("rank0.json")  # type: ignore[arg-type]


def test_merged_reports_compare_by_step_time(ddp_run: dict[str, Any]) -> None:
    merged = ddp_run["merged"]
    comparison = torchscan.compare_benchmarks(merged, merged)
    assert comparison["kind"] == "benchmark_comparison"
    latency = next(delta for delta in comparison["deltas"] if delta["metric"] == "latency")
    assert latency["ratio"] == 1.0
    notes = [d["message"] for d in comparison["diagnostics"] if d["code"] == "note"]
    assert any("distributed" in message for message in notes)
    with pytest.raises(torchscan.ReportComparisonError):
        torchscan.compare_benchmarks(ddp_run["rank0"], merged)


def _launch_by_hand(
    mode: str, out: Path, *, both: bool = False
) -> tuple[list[dict[str, Any]], list[int]]:
    """Two ranks started from RANK/WORLD_SIZE alone (no torchrun, no group of their own).

    Rank 1 is killed once rank 0 has ended, unless ``both``: then it gets a minute to end too.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    processes = []
    for rank in (0, 1):
        env = _env(
            RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), mode, str(out)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
    codes = []
    try:
        # Rank 0 must give up within its rank_timeout_s (5 s) after the other rank stops.
        codes.append(processes[0].wait(timeout=120))
        if both:
            processes[1].wait(timeout=60)
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    codes.append(processes[1].returncode)
    outcomes = []
    for rank in (0, 1):
        path = out / f"outcome{rank}.json"
        outcomes.append(json.loads(path.read_text(encoding="utf-8")) if path.exists() else {})
    return outcomes, codes


def test_a_rank_that_dies_gives_the_others_a_clear_error(tmp_path: Path) -> None:
    (rank0, rank1), codes = _launch_by_hand("dies", tmp_path)
    # The dying rank's own exception propagates unchanged, with a note of where it came.
    assert rank1["error"] == "ValueError" and rank1["message"] == "rank 1 gives up"
    assert any("rank 1 of 2" in note for note in rank1["notes"]), rank1
    assert rank0["error"] == "DistributedMeasurementError", rank0
    assert "rank 0 of 2" in rank0["message"]
    assert "died" in rank0["message"]
    assert codes[0] == 3


def test_a_rank_that_hangs_gives_the_others_a_timeout(tmp_path: Path) -> None:
    (rank0, rank1), codes = _launch_by_hand("hangs", tmp_path)
    assert rank0["error"] == "DistributedMeasurementError", rank0
    assert "waited 5 s (rank_timeout_s)" in rank0["message"]
    assert rank0["phase"] in ("warm-up", "calibration") or "block" in rank0["phase"]
    assert rank1 == {}  # killed while hanging, as the test's clean-up does
    assert codes[0] == 3


def test_ranks_that_disagree_on_the_arguments_are_refused_before_any_call(
    tmp_path: Path,
) -> None:
    (rank0, rank1), codes = _launch_by_hand("disagree", tmp_path, both=True)
    for outcome in (rank0, rank1):
        assert outcome["error"] == "InvalidArgumentError", outcome
        assert outcome["message"] == (
            "every rank must call measure_workload with the same arguments: rank 0 passed "
            "min_blocks=5 and rank 1 min_blocks=6"
        )
    assert codes == [3, 3]


def test_blocks_are_sized_by_the_slowest_rank(tmp_path: Path) -> None:
    """Uneven ranks keep the budget: blocks hold the calls the slowest rank calibrated."""
    outcomes, codes = _launch_by_hand("uneven", tmp_path, both=True)
    assert codes == [0, 0], outcomes
    reports = [
        json.loads((tmp_path / f"rank{rank}.json").read_text(encoding="utf-8")) for rank in (0, 1)
    ]
    timing = [report["timing"] for report in reports]
    # 0.3 s over 2 x 10 blocks is a 15 ms block target: 5 calls of rank 1's 3 ms.
    assert timing[0]["calls_per_block"] == timing[1]["calls_per_block"] <= 6
    assert len(timing[0]["block_durations_s"]) >= 10
    merged = merge_rank_reports(reports)
    assert merged["straggler"]["rank"] == 1
    assert sum(merged["timing"]["block_durations_s"]) < 2.5


def test_strict_with_process_rss_is_refused_in_a_job(tmp_path: Path) -> None:
    (rank0, rank1), codes = _launch_by_hand("strict", tmp_path, both=True)
    for outcome in (rank0, rank1):
        assert outcome["error"] == "InvalidArgumentError", outcome
        assert "strict=True with 'process_rss'" in outcome["message"]
    assert codes == [3, 3]


def test_outside_a_job_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    weight = torch.randn(8, 8)
    report = torchscan.measure_workload(
        lambda: weight @ weight,
        min_time_s=0.02,
        min_blocks=3,
        warmup_time_s=0.0,
        print_summary=False,
        gather=True,
    )
    assert report["kind"] == "benchmark"
    assert "distributed" not in report["context"]
    assert "barrier_waits_s" not in report["timing"]
    assert "rank_process_rss_peak" not in report["metrics"]


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), True, "5"])
def test_rank_timeout_is_checked(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="rank_timeout_s"):
        torchscan.measure_workload(lambda: None, rank_timeout_s=value)  # type: ignore[arg-type]


def test_gather_is_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="gather"):
        torchscan.measure_workload(lambda: None, gather=1)  # type: ignore[call-overload]


def test_incomplete_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    with pytest.raises(InvalidArgumentError, match="MASTER_ADDR and MASTER_PORT are not set"):
        torchscan.measure_workload(lambda: None, print_summary=False)
    monkeypatch.setenv("RANK", "two")
    with pytest.raises(InvalidArgumentError, match="RANK='two'"):
        torchscan.measure_workload(lambda: None, print_summary=False)


def test_distributed_errors_are_torchscan_errors() -> None:
    error = DistributedMeasurementError("lost", "block 3")
    assert isinstance(error, torchscan.TorchscanError) and isinstance(error, RuntimeError)
    assert error.phase == "block 3" and error.reason == "lost"


def test_the_documented_example_runs_under_torchrun(tmp_path: Path) -> None:
    """docs/distributed.md's `train_step.py`, run as the page says, and its console lines."""
    from .conftest import ROOT

    page = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    script = page.split('```python title="train_step.py"\n', 1)[1].split("```", 1)[0]
    (tmp_path / "train_step.py").write_text(script, encoding="utf-8")
    args = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "train_step.py",
    ]
    code, output = _launch(args, tmp_path)
    assert code == 0, output[-6000:]
    step = json.loads((tmp_path / "step.json").read_text(encoding="utf-8"))
    assert validate_report(step) == "distributed_benchmark"
    assert "Straggler" in output  # rank 0 printed the merged summary
    assert "$ torchscan-report merge rank0.json rank1.json -o step.json" in page
    subprocess.run(
        [str(REPORT_BIN), "merge", "rank0.json", "rank1.json", "-o", "again.json"],
        cwd=tmp_path,
        check=True,
        timeout=60,
    )
    assert json.loads((tmp_path / "again.json").read_text(encoding="utf-8")) == step
    summary = subprocess.run(
        [str(REPORT_BIN), "summary", "step.json"],
        cwd=tmp_path,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    assert "Straggler" in summary
    # docs/notebooks-and-pandas.md's tables of that step.json, run where it was written.
    notebook = (ROOT / "docs" / "notebooks-and-pandas.md").read_text(encoding="utf-8")
    tables = notebook.split('```python title="step_tables.py"\n', 1)[1].split("```", 1)[0]
    (tmp_path / "step_tables.py").write_text(tables, encoding="utf-8")
    subprocess.run(
        [sys.executable, "step_tables.py"], cwd=tmp_path, check=True, timeout=120, env=_env()
    )


BENCH = """
import torch

weight = torch.randn(64, 64)


def workload():
    return weight @ weight
"""


def _torchrun_measure(tmp_path: Path, *options: str) -> tuple[int, str]:
    (tmp_path / "bench.py").write_text(BENCH, encoding="utf-8")
    args = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "torchscan",
        "measure",
        "bench.py:workload",
        "--min-time",
        "0.2",
        *options,
    ]
    return _launch(args, tmp_path)


def test_the_command_line_writes_one_report_per_rank(tmp_path: Path) -> None:
    code, output = _torchrun_measure(tmp_path, "--json", "rank{rank}.json")
    assert code == 0, output[-6000:]
    ranks = [
        json.loads((tmp_path / f"rank{rank}.json").read_text(encoding="utf-8")) for rank in (0, 1)
    ]
    for rank, report in enumerate(ranks):
        # No group of the workload's own: torchscan made one from torchrun's environment.
        assert report["context"]["distributed"]["rank"] == rank
        assert report["context"]["distributed"]["process_group"] == "created"
        # A plain matmul issues no collectives: blocks of several calls.
        assert report["timing"]["collectives_per_call"] == 0
    assert ranks[0]["timing"]["calls_per_block"] == ranks[1]["timing"]["calls_per_block"] > 1
    # Rank 0's summary only.
    assert "Distributed: rank 0 of 2" in output and "Distributed: rank 1 of 2" not in output
    merged = merge_rank_reports(ranks)
    assert merged["job"]["collectives_per_call"] == 0


def test_the_command_line_refuses_paths_the_ranks_would_share(tmp_path: Path) -> None:
    code, output = _torchrun_measure(tmp_path, "--json", "out.json")
    assert code != 0
    assert "put {rank} in the path (--json rank{rank}.json), or pass --gather" in output
    assert not (tmp_path / "out.json").exists()


def test_the_command_line_gathers_onto_rank_0(tmp_path: Path) -> None:
    code, output = _torchrun_measure(tmp_path, "--gather", "--json", "step.json")
    assert code == 0, output[-6000:]
    step = json.loads((tmp_path / "step.json").read_text(encoding="utf-8"))
    assert validate_report(step) == "distributed_benchmark"
    assert [r["context"]["distributed"]["rank"] for r in step["rank_reports"]] == [0, 1]
    assert output.count("Step time (slowest rank") == 1
