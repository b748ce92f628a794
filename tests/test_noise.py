"""The noise section of benchmark reports: readings from a fake /proc, real runs, a busy machine."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import torchscan
from torchscan import compare_workloads, measure_workload
from torchscan.measure.noise import (
    NOISE_METRICS,
    NoiseRecord,
    NoiseSampler,
    NoiseSources,
    noise_metrics,
    noisy_machine_diagnostic,
)
from torchscan.measure.pipeline import (
    Passes,
    add_timing,
    assemble_report,
    raise_if_incomplete,
    run_later_passes,
)
from torchscan.measure.timing import TimingBudget, run_timing

torch.set_num_threads(1)
FAST = {"min_time_s": 0.05, "max_time_s": 0.5, "min_blocks": 5, "warmup_time_s": 0.01}
ON_LINUX = sys.platform.startswith("linux")


class FakeProc:
    """A folder of files laid out like /proc and /sys, rewritten between snapshots."""

    def __init__(self, root: Path, cpus: tuple[int, ...] = (0, 1)) -> None:
        self.root = root
        self.sources = NoiseSources(
            proc_stat=str(root / "stat"),
            self_stat=str(root / "self_stat"),
            thread_status=str(root / "status"),
            cpu_sysfs=str(root / "cpu"),
            cpus=cpus,
            linux=True,
        )

    def write(
        self,
        cpu: list[int] | None,
        utime: int,
        stime: int,
        switches: int,
        frequencies_khz: list[int] | None,
    ) -> None:
        if cpu is not None:
            columns = " ".join(str(value) for value in cpu)
            (self.root / "stat").write_text(
                f"cpu  {columns}\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 12345\n", encoding="ascii"
            )
        # A command name with spaces and parentheses, as the kernel allows.
        fields = ["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0"]
        fields += [str(utime), str(stime), "0", "0", "20", "0", "1"]
        (self.root / "self_stat").write_text(
            "4242 (py (test) x) " + " ".join(fields) + "\n", encoding="ascii"
        )
        (self.root / "status").write_text(
            f"Name:\tpython\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t{switches}\n",
            encoding="ascii",
        )
        if frequencies_khz is not None:
            for index, khz in enumerate(frequencies_khz):
                folder = self.root / "cpu" / f"cpu{index}" / "cpufreq"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "scaling_cur_freq").write_text(f"{khz}\n", encoding="ascii")


def _record(
    sampler: NoiseSampler, fake: FakeProc, start: dict, end: dict, seconds: float
) -> NoiseRecord:  # type: ignore[type-arg]
    fake.write(**start)
    first = dataclasses.replace(sampler.snapshot(), time_ns=0)
    fake.write(**end)
    last = dataclasses.replace(sampler.snapshot(), time_ns=int(seconds * 1e9))
    return NoiseRecord(first, last)


# user nice system idle iowait irq softirq steal guest guest_nice
BUSY_START = {
    "cpu": [1000, 0, 500, 8000, 100, 0, 0, 0, 0, 0],
    "utime": 100,
    "stime": 20,
    "switches": 10,
    "frequencies_khz": [2_400_000, 2_600_000],
}
BUSY_END = {
    "cpu": [1300, 100, 600, 8250, 100, 10, 20, 20, 50, 0],
    "utime": 300,
    "stime": 60,
    "switches": 70,
    "frequencies_khz": [2_000_000, 2_200_000],
}


def test_busy_fake_proc_gives_exact_ratios_and_names_every_metric_past_its_threshold(
    tmp_path: Path,
) -> None:
    fake = FakeProc(tmp_path)
    record = _record(NoiseSampler(fake.sources), fake, BUSY_START, BUSY_END, 0.5)
    metrics = noise_metrics(record)
    # Deltas: user 300, nice 100, system 100, idle 250, iowait 0, irq 10, softirq 20, steal 20
    # (guest 50 is already inside user): 800 jiffies in all, 530 busy, 240 of them this process's.
    assert metrics["machine_other_cpu_ratio"]["value"] == 290 / 800
    assert metrics["machine_other_cpu_ratio"]["status"] == "complete"
    assert metrics["cpu_steal_ratio"]["value"] == 20 / 800
    assert metrics["involuntary_context_switches"]["value"] == 60
    assert type(metrics["involuntary_context_switches"]["value"]) is int
    assert metrics["cpu_frequency"]["value"] == 2_300_000_000.0
    assert metrics["cpu_frequency"]["unit"] == "Hz"
    assert list(metrics) == list(NOISE_METRICS)
    diagnostic = noisy_machine_diagnostic(metrics, record.elapsed_s)
    assert diagnostic is not None
    assert diagnostic["code"] == "noisy_machine"
    assert diagnostic["severity"] == "warning"
    assert diagnostic["metric"] == "machine_other_cpu_ratio"
    assert diagnostic["message"] == (
        "the machine was busy while the workload was timed: machine_other_cpu_ratio 0.362 "
        "(other processes used 36% of all CPU time; threshold 0.10); cpu_steal_ratio 0.025 "
        "(threshold 0.02); involuntary_context_switches 60 in 0.50 s (120 per second; "
        "threshold 50); timings may be slower and more spread than on a quiet machine"
    )


def test_the_jobs_other_ranks_on_this_host_are_not_noise(tmp_path: Path) -> None:
    """A distributed job's other rank's CPU time is taken out of other processes' share."""
    fake = FakeProc(tmp_path)
    peer = tmp_path / "peer_stat"
    fake.sources = dataclasses.replace(fake.sources, peer_stats=(str(peer),))
    sampler = NoiseSampler(fake.sources)

    def peer_writes(utime: int) -> None:
        fields = ["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0"]
        fields += [str(utime), "0", "0", "0", "20", "0", "1"]
        peer.write_text("4243 (python) " + " ".join(fields) + "\n", encoding="ascii")

    peer_writes(1000)
    fake.write(**BUSY_START)
    first = dataclasses.replace(sampler.snapshot(), time_ns=0)
    peer_writes(1200)  # the other rank used 200 of the 290 busy jiffies not this process's
    fake.write(**BUSY_END)
    last = dataclasses.replace(sampler.snapshot(), time_ns=int(0.5 * 1e9))
    metrics = noise_metrics(NoiseRecord(first, last))
    other = metrics["machine_other_cpu_ratio"]
    assert other["value"] == 90 / 800
    assert "the job's 1 other rank on this host" in other["method"]
    # A peer that cannot be read makes the metric unavailable, never a smaller number.
    peer.unlink()
    fake.write(**BUSY_END)
    gone = noise_metrics(NoiseRecord(first, sampler.snapshot()))["machine_other_cpu_ratio"]
    assert gone["status"] == "unavailable" and "peer_stat" in gone["reason"]


def test_quiet_fake_proc_gives_no_diagnostic(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    start = dict(BUSY_START)
    end = {
        # 1000 jiffies: 120 busy, all of it this process's, 880 idle; no steal.
        "cpu": [1100, 0, 520, 8880, 100, 0, 0, 0, 0, 0],
        "utime": 200,
        "stime": 40,
        "switches": 34,
        "frequencies_khz": [2_400_000, 2_600_000],
    }
    record = _record(NoiseSampler(fake.sources), fake, start, end, 1.0)
    metrics = noise_metrics(record)
    assert metrics["machine_other_cpu_ratio"]["value"] == 0.0
    assert metrics["cpu_steal_ratio"]["value"] == 0.0
    assert metrics["involuntary_context_switches"]["value"] == 24
    assert metrics["cpu_frequency"]["value"] == 2_500_000_000.0
    assert noisy_machine_diagnostic(metrics, record.elapsed_s) is None


def test_each_threshold_alone_adds_the_diagnostic_naming_only_that_metric(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    # Other processes: 101 of 1000 jiffies, just past 10%.
    end = {**BUSY_START, "cpu": [1101, 0, 500, 8899, 100, 0, 0, 0, 0, 0]}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    assert metrics["machine_other_cpu_ratio"]["value"] == 0.101
    diagnostic = noisy_machine_diagnostic(metrics, 1.0)
    assert diagnostic is not None and diagnostic["metric"] == "machine_other_cpu_ratio"
    assert "cpu_steal_ratio" not in diagnostic["message"]
    # Exactly 10% is not past the threshold.
    end = {**BUSY_START, "cpu": [1100, 0, 500, 8900, 100, 0, 0, 0, 0, 0]}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    assert metrics["machine_other_cpu_ratio"]["value"] == 0.1
    assert noisy_machine_diagnostic(metrics, 1.0) is None
    # Steal: 21 of 1000 jiffies.
    end = {**BUSY_START, "cpu": [1000, 0, 500, 8979, 100, 0, 0, 21, 0, 0]}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    diagnostic = noisy_machine_diagnostic(metrics, 1.0)
    assert diagnostic is not None and diagnostic["metric"] == "cpu_steal_ratio"
    assert "machine_other_cpu_ratio" not in diagnostic["message"]
    # Preemption: 51 switches in 1 s on an idle machine.
    end = {**BUSY_START, "cpu": [1000, 0, 500, 9000, 100, 0, 0, 0, 0, 0], "switches": 61}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    diagnostic = noisy_machine_diagnostic(metrics, 1.0)
    assert diagnostic is not None and diagnostic["metric"] == "involuntary_context_switches"
    assert "51 in 1.00 s (51 per second; threshold 50)" in diagnostic["message"]
    end = {**end, "switches": 60}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    assert noisy_machine_diagnostic(metrics, 1.0) is None


def test_own_time_above_the_busy_time_reads_as_zero_not_negative(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    # 100 busy jiffies, but this process's counter moved by 130 (ticks sampled apart).
    end = {**BUSY_START, "cpu": [1100, 0, 500, 8900, 100, 0, 0, 0, 0, 0], "utime": 230}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, BUSY_START, end, 1.0))
    assert metrics["machine_other_cpu_ratio"]["value"] == 0.0


def test_missing_sources_are_unavailable_with_reasons_never_zero(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    start = {**BUSY_START, "cpu": None, "frequencies_khz": None}
    end = {**BUSY_END, "cpu": None, "frequencies_khz": None}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, start, end, 1.0))
    for key in ("machine_other_cpu_ratio", "cpu_steal_ratio"):
        assert metrics[key]["status"] == "unavailable"
        assert metrics[key]["value"] is None
        assert metrics[key]["reason"] == (
            f"{tmp_path / 'stat'} is not readable (No such file or directory)"
        )
    assert metrics["cpu_frequency"]["status"] == "unavailable"
    assert metrics["cpu_frequency"]["reason"] == (
        "no cpufreq scaling_cur_freq for cpu0: no frequency driver, usual in virtual machines"
    )
    assert metrics["involuntary_context_switches"]["value"] == 60
    assert noisy_machine_diagnostic(metrics, 1.0) is not None  # 60 switches per second


def test_a_kernel_without_steal_gives_steal_unavailable(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    start = {**BUSY_START, "cpu": [1000, 0, 500, 8000, 100, 0, 0]}
    end = {**BUSY_START, "cpu": [1200, 0, 500, 8800, 100, 0, 0]}
    metrics = noise_metrics(_record(NoiseSampler(fake.sources), fake, start, end, 1.0))
    assert metrics["machine_other_cpu_ratio"]["value"] == 0.2
    assert metrics["cpu_steal_ratio"]["status"] == "unavailable"
    assert (
        metrics["cpu_steal_ratio"]["reason"] == "the kernel reports no steal column in /proc/stat"
    )


def test_a_phase_shorter_than_a_tick_and_other_platforms_are_unavailable(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    metrics = noise_metrics(
        _record(NoiseSampler(fake.sources), fake, BUSY_START, BUSY_START, 0.001)
    )
    why = "the timed phase was shorter than one clock tick of /proc/stat"
    assert metrics["machine_other_cpu_ratio"]["reason"] == why
    assert metrics["cpu_steal_ratio"]["reason"] == why
    assert metrics["involuntary_context_switches"]["value"] == 0
    elsewhere = NoiseSampler(dataclasses.replace(fake.sources, linux=False))
    metrics = noise_metrics(NoiseRecord(elsewhere.snapshot(), elsewhere.snapshot()))
    for key in NOISE_METRICS:
        assert metrics[key]["status"] == "unavailable"
        assert metrics[key]["reason"] == "not Linux: /proc and /sys are read only on Linux"


def _report_with(run: object, selected: tuple[str, ...] = ("latency",)) -> dict:  # type: ignore[type-arg]
    passes = Passes([])
    add_timing(passes, run, 1.0, "calls")  # type: ignore[arg-type]
    run_later_passes(passes, lambda: None, torch.device("cpu"), selected, 1, 10.0)
    return dict(
        assemble_report(
            passes,
            name="fake",
            context=torchscan.context.capture_context(torch.device("cpu"), []),
            selected=selected,
            budget=TimingBudget(),
            inputs=None,
            work_units=1.0,
            work_unit="calls",
        )
    )


def test_the_timing_loop_reads_the_given_sources_and_the_report_carries_them(
    tmp_path: Path,
) -> None:
    fake = FakeProc(tmp_path)
    fake.write(**BUSY_START)
    budget = TimingBudget(min_time_s=0.02, max_time_s=0.5, min_blocks=3, warmup_time_s=0.0)
    run = run_timing(
        lambda: sum(range(100)), torch.device("cpu"), budget, noise_sources=fake.sources
    )
    assert run.noise is not None
    assert run.noise.start.cpu_jiffies == tuple(BUSY_START["cpu"])  # type: ignore[arg-type]
    assert run.noise.end.own_jiffies == 120
    assert run.noise.elapsed_s >= sum(run.block_durations_s)
    # The files did not move during the run: no clock tick passed for them.
    report = _report_with(run)
    assert report["metrics"]["machine_other_cpu_ratio"]["status"] == "unavailable"
    assert torchscan.validate_report(report) == "benchmark"
    # The same run with readings that moved: the report states them and the diagnostic.
    run.noise = _record(NoiseSampler(fake.sources), fake, BUSY_START, BUSY_END, 0.5)
    report = _report_with(run)
    assert report["metrics"]["machine_other_cpu_ratio"]["value"] == 290 / 800
    assert report["metrics"]["cpu_frequency"]["value"] == 2_300_000_000.0
    assert [d["code"] for d in report["diagnostics"]].count("noisy_machine") == 1
    assert torchscan.validate_report(report) == "benchmark"
    assert torchscan.validate_report(json.loads(json.dumps(report))) == "benchmark"
    summary = torchscan.format_summary(report)
    assert "  Machine noise during timing:\n    Other CPU use: 0.362\n" in summary
    assert "    CPU frequency: 2,300 MHz\n" in summary
    assert "warning noisy_machine: the machine was busy" in summary
    page = torchscan.render_report(report)
    assert "<h2>Machine noise</h2>" in page and "2.300 GHz" in page


def test_strict_never_raises_for_an_unavailable_noise_metric(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    start = {**BUSY_START, "cpu": None, "frequencies_khz": None}
    fake.write(**start)
    budget = TimingBudget(min_time_s=0.02, max_time_s=0.5, min_blocks=3, warmup_time_s=0.0)
    run = run_timing(lambda: None, torch.device("cpu"), budget, noise_sources=fake.sources)
    report = _report_with(run)
    for key in ("machine_other_cpu_ratio", "cpu_steal_ratio", "cpu_frequency"):
        assert report["metrics"][key]["status"] == "unavailable"
    raise_if_incomplete(report, ("latency",))  # type: ignore[arg-type]
    # A timing metric made unavailable still raises: the check itself is on.
    report["metrics"]["latency"] = report["metrics"]["cpu_frequency"]
    with pytest.raises(torchscan.IncompleteMeasurementError):
        raise_if_incomplete(report, ("latency",))  # type: ignore[arg-type]


def _assert_noise_section(report: dict) -> None:  # type: ignore[type-arg]
    metrics = report["metrics"]
    units = {
        "machine_other_cpu_ratio": "ratio",
        "cpu_steal_ratio": "ratio",
        "involuntary_context_switches": "count",
        "cpu_frequency": "Hz",
    }
    for key, unit in units.items():
        metric = metrics[key]
        assert metric["unit"] == unit
        if metric["status"] == "complete":
            assert metric["value"] is not None and metric["value"] >= 0
        else:
            assert metric["status"] == "unavailable"
            assert metric["reason"]
    if ON_LINUX:
        # The kernel always offers these three.
        for key in ("machine_other_cpu_ratio", "cpu_steal_ratio", "involuntary_context_switches"):
            assert metrics[key]["status"] == "complete", metrics[key]
        assert 0.0 <= metrics["machine_other_cpu_ratio"]["value"] <= 1.0
        assert 0.0 <= metrics["cpu_steal_ratio"]["value"] <= 1.0
    noisy = [d for d in report["diagnostics"] if d["code"] == "noisy_machine"]
    assert len(noisy) <= 1
    other = metrics["machine_other_cpu_ratio"]["value"]
    steal = metrics["cpu_steal_ratio"]["value"]
    switches = metrics["involuntary_context_switches"]["value"]
    over_cpu = (other is not None and other > 0.10) or (steal is not None and steal > 0.02)
    if over_cpu:
        assert noisy
    if noisy:
        # The timed phase lasted at least as long as its blocks.
        timed_s = sum(report["timing"]["block_durations_s"])
        assert over_cpu or (switches is not None and switches / timed_s > 50)


def test_a_real_run_has_a_complete_or_explained_noise_section_that_validates() -> None:
    report = measure_workload(
        lambda: torch.ones(64, 64) @ torch.ones(64, 64),
        print_summary=False,
        metrics=["latency"],
        **FAST,
    )
    _assert_noise_section(dict(report))
    assert torchscan.validate_report(report) == "benchmark"
    assert "Machine noise during timing:" in torchscan.format_summary(report)


def test_without_the_latency_pass_the_noise_metrics_are_not_requested() -> None:
    report = measure_workload(
        lambda: torch.ones(4), print_summary=False, metrics=["operator_flops"], **FAST
    )
    for key in NOISE_METRICS:
        assert report["metrics"][key]["status"] == "unavailable"  # type: ignore[literal-required]
        assert report["metrics"][key]["reason"] == "not requested"  # type: ignore[literal-required]
    assert torchscan.validate_report(report) == "benchmark"


def test_interleaved_reports_share_one_noise_record() -> None:
    a = torch.ones(32, 32)
    experiment = compare_workloads(
        lambda: a @ a,
        lambda: a @ a,
        rtol=0.0,
        atol=0.0,
        print_summary=False,
        metrics=["latency"],
        **FAST,
    )
    baseline, candidate = experiment.baseline, experiment.candidate
    for key in NOISE_METRICS:
        assert baseline["metrics"][key] == candidate["metrics"][key]  # type: ignore[literal-required]
    _assert_noise_section(dict(baseline))
    assert torchscan.validate_report(baseline) == "benchmark"
    assert torchscan.validate_report(candidate) == "benchmark"


_BURNER = """
import sys, time
sys.stdout.write("spinning\\n")
sys.stdout.flush()
deadline = time.monotonic() + 60.0
while time.monotonic() < deadline:
    pass
"""


@pytest.mark.skipif(not ON_LINUX, reason="the noise metrics are read from /proc on Linux only")
def test_processes_spinning_on_every_core_raise_other_cpu_use_and_add_noisy_machine() -> None:
    import os

    cores = len(os.sched_getaffinity(0))
    burners = [
        subprocess.Popen(
            [sys.executable, "-c", _BURNER],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(cores)
    ]
    try:
        # Barrier: every burner is running its loop before timing starts.
        for burner in burners:
            assert burner.stdout is not None
            assert burner.stdout.readline() == "spinning\n"
        time.sleep(0.1)
        report = measure_workload(
            lambda: sum(range(2000)),
            print_summary=False,
            metrics=["latency"],
            min_time_s=1.0,
            max_time_s=5.0,
            min_blocks=10,
            warmup_time_s=0.05,
        )
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait(timeout=30)
            if burner.stdout is not None:
                burner.stdout.close()
    other = report["metrics"]["machine_other_cpu_ratio"]  # type: ignore[typeddict-item]
    assert other["status"] == "complete"
    # One spinning process per core takes at least half of all CPU time from a workload that
    # competes with them for one core; 0.3 leaves a wide margin for scheduling and tick rounding.
    assert other["value"] >= 0.3, other
    noisy = [d for d in report["diagnostics"] if d["code"] == "noisy_machine"]
    assert len(noisy) == 1
    assert "machine_other_cpu_ratio" in noisy[0]["message"]
    assert torchscan.validate_report(report) == "benchmark"


LONG_FIXTURE = Path(__file__).parent / "fixtures" / "reports" / "benchmark_readme_cpu_1s.json"


def _long_report_with(key: str, value: float) -> dict:  # type: ignore[type-arg]
    report = json.loads(LONG_FIXTURE.read_text(encoding="utf-8"))
    report["metrics"][key]["value"] = value
    report["metrics"][key]["known_value"] = value
    assert torchscan.validate_report(report) == "benchmark"
    return report  # type: ignore[no-any-return]


def test_a_comparison_calls_a_report_noisy_exactly_where_the_report_would() -> None:
    from torchscan.measure.noise import (
        NOISY_CONTEXT_SWITCHES_PER_S,
        NOISY_OTHER_CPU_RATIO,
        NOISY_STEAL_RATIO,
    )

    quiet = json.loads(LONG_FIXTURE.read_text(encoding="utf-8"))
    timing = quiet["timing"]
    span = timing["block_starts_s"][-1] + timing["block_durations_s"][-1]
    switches_at_threshold = int(NOISY_CONTEXT_SWITCHES_PER_S * span)
    cases = [
        ("machine_other_cpu_ratio", NOISY_OTHER_CPU_RATIO, NOISY_OTHER_CPU_RATIO + 0.001),
        ("cpu_steal_ratio", NOISY_STEAL_RATIO, NOISY_STEAL_RATIO + 0.001),
        ("involuntary_context_switches", switches_at_threshold, switches_at_threshold + 2),
    ]
    for key, at_threshold, past_threshold in cases:
        for value, noisy in ((at_threshold, False), (past_threshold, True)):
            report = _long_report_with(key, value)
            # The report's own diagnostic, as measure_workload writes it, over the same span.
            assert (noisy_machine_diagnostic(report["metrics"], span) is not None) == noisy
            comparison = torchscan.compare_benchmarks(quiet, report)
            codes = [d["code"] for d in comparison["diagnostics"]]
            assert codes.count("noisy_machine") == int(noisy), (key, value)
            latency = comparison["deltas"][0]
            if noisy:
                assert key in comparison["diagnostics"][-1]["message"]
                assert latency["reason"] is not None
                assert latency["reason"].startswith("measured apart on a noisy machine")
                assert comparison["verdict"] == "inconclusive"
            else:
                # Quiet: the verdict is the interval's own (this 1 s report starts with a few
                # slower blocks, so its drift makes even a comparison with itself inconclusive).
                assert latency["reason"] is None
                assert (
                    comparison["verdict"] == torchscan.compare_benchmarks(quiet, quiet)["verdict"]
                )
            assert torchscan.validate_report(comparison) == "benchmark_comparison"


@pytest.mark.skipif(not ON_LINUX, reason="the noise metrics are read from /proc on Linux only")
def test_verdicts_under_spinning_processes_name_the_noise_apart_and_interleaved() -> None:
    import os

    a = torch.ones(64, 64)
    settings = {"min_time_s": 1.0, "max_time_s": 5.0, "min_blocks": 24, "warmup_time_s": 0.05}
    quiet = measure_workload(lambda: a @ a, print_summary=False, metrics=["latency"], **settings)
    burners = [
        subprocess.Popen(
            [sys.executable, "-c", _BURNER],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(len(os.sched_getaffinity(0)))
    ]
    try:
        for burner in burners:
            assert burner.stdout is not None
            assert burner.stdout.readline() == "spinning\n"
        time.sleep(0.1)
        busy = measure_workload(lambda: a @ a, print_summary=False, metrics=["latency"], **settings)
        experiment = compare_workloads(
            lambda: a @ a,
            lambda: a @ a,
            rtol=0.0,
            atol=0.0,
            print_summary=False,
            metrics=["latency"],
            **FAST,
        )
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait(timeout=30)
            if burner.stdout is not None:
                burner.stdout.close()
    assert any(d["code"] == "noisy_machine" for d in busy["diagnostics"])
    # Apart: the same code measured quiet and busy is never called a change the noise explains,
    # nor no change.
    apart = torchscan.compare_benchmarks(quiet, busy)
    assert apart["verdict"] == "inconclusive", apart["deltas"][0]
    reason = apart["deltas"][0]["reason"]
    assert reason is not None and "machine_other_cpu_ratio" in reason
    # One diagnostic per noisy side (the quiet side is noisy too if other work ran meanwhile).
    noisy_sides = sum(
        any(d["code"] == "noisy_machine" for d in side["diagnostics"]) for side in (quiet, busy)
    )
    assert [d["code"] for d in apart["diagnostics"]].count("noisy_machine") == noisy_sides
    # Interleaved: the load fell on both sides; the reason and a diagnostic per side say so.
    comparison = experiment.comparison
    assert [d["code"] for d in comparison["diagnostics"]].count("noisy_machine") == 2
    reason = comparison["deltas"][0]["reason"]
    assert reason is not None and "interleaved" in reason
    for report in (apart, comparison):
        assert torchscan.validate_report(report) == "benchmark_comparison"
