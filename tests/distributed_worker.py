"""One rank of the distributed tests (tests/test_distributed.py), launched by torchrun or by hand.

``python distributed_worker.py MODE OUT_DIR``:

- ``ddp``: a DDP training step (forward, backward, optimizer step) of a small MLP on the gloo
  backend under ``measure_workload(gather=True)``; rank 1 sleeps ``STRAGGLER_S`` seconds after
  every optimizer step (a rank-local tail, as logging or a checkpoint on one rank would be).
  Each rank writes ``rank<R>.json``; rank 0 also writes ``merged.json``. With ``DEVICE=cuda``
  (``make gpu-check``) each rank runs on its own GPU with the nccl backend.
- ``dies``: no process group of its own (``RANK``/``WORLD_SIZE`` from the environment); rank 1
  raises ``ValueError`` in its third call, so rank 0 must get a ``DistributedMeasurementError``.
- ``hangs``: like ``dies``, but rank 1 sleeps far past ``rank_timeout_s`` in its third call.
- ``disagree``: rank 1 passes another ``min_blocks`` than rank 0; both must refuse at once.
- ``uneven``: rank 1's calls are a thousand times slower than rank 0's; each writes its report.
- ``strict``: ``strict=True`` with ``process_rss``, which a job cannot measure: refused at once.

Each rank writes ``outcome<R>.json``: the error's type, message, notes and phase, if any.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback


def main() -> int:
    mode, out = sys.argv[1], sys.argv[2]
    import torch

    torch.set_num_threads(1)
    import torchscan

    rank = int(os.environ["RANK"])
    outcome: dict[str, object] = {"rank": rank, "error": None}
    try:
        if mode == "ddp":
            run_ddp(torch, torchscan, rank, out)
        else:
            run_failing(torch, torchscan, rank, mode)
    except BaseException as error:
        outcome["error"] = type(error).__name__
        outcome["message"] = str(error)
        outcome["notes"] = list(getattr(error, "__notes__", []))
        outcome["phase"] = getattr(error, "phase", None)
        outcome["traceback"] = traceback.format_exc()
        with open(os.path.join(out, f"outcome{rank}.json"), "w", encoding="utf-8") as file:
            json.dump(outcome, file)
        os._exit(3)
    with open(os.path.join(out, f"outcome{rank}.json"), "w", encoding="utf-8") as file:
        json.dump(outcome, file)
    return 0


def run_ddp(torch: object, torchscan: object, rank: int, out: str) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    import torchscan

    # DEVICE=cuda (make gpu-check) puts each rank on its own GPU with the nccl backend.
    on_cuda = os.environ.get("DEVICE", "cpu") == "cuda"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if on_cuda else torch.device("cpu")
    if on_cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if on_cuda else "gloo", timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    layers = torch.nn.Sequential(
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    ).to(device)
    model = torch.nn.parallel.DistributedDataParallel(
        layers, device_ids=[local_rank] if on_cuda else None
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(16, 64, device=device)
    labels = torch.randint(0, 10, (16,), device=device)
    straggler_s = float(os.environ.get("STRAGGLER_S", "0"))

    def train_step() -> None:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        if rank == 1 and straggler_s:
            time.sleep(straggler_s)

    report = torchscan.measure_workload(
        train_step,
        device=str(device),
        work_units=16,
        work_unit="samples",
        metrics=["latency", "operator_flops", "tensor_memory"],
        min_time_s=float(os.environ.get("MIN_TIME_S", "0.5")),
        min_blocks=int(os.environ.get("MIN_BLOCKS", "12")),
        warmup_time_s=0.05,
        gather=True,
        print_summary=rank == 0,
        rank_timeout_s=60,
    )
    own = report if report["kind"] == "benchmark" else report["rank_reports"][0]
    with open(os.path.join(out, f"rank{rank}.json"), "w", encoding="utf-8") as file:
        json.dump(own, file)
    if rank == 0:
        with open(os.path.join(out, "merged.json"), "w", encoding="utf-8") as file:
            json.dump(report, file)
    dist.destroy_process_group()


def run_failing(torch: object, torchscan: object, rank: int, mode: str) -> None:
    import torch

    import torchscan

    weight = torch.randn(32, 32)
    calls = [0]

    def work() -> None:
        calls[0] += 1
        if rank == 1 and calls[0] == 3:
            if mode == "dies":
                raise ValueError("rank 1 gives up")
            time.sleep(600)
        weight @ weight

    if mode == "uneven":
        # Rank 1's calls take 3 ms, rank 0's a few microseconds, and no collective joins them.
        def uneven() -> None:
            if rank == 1:
                deadline = time.perf_counter() + 0.003
                while time.perf_counter() < deadline:
                    pass

        report = torchscan.measure_workload(
            uneven,
            min_time_s=0.3,
            max_time_s=2.0,
            min_blocks=10,
            print_summary=False,
            rank_timeout_s=20,
        )
        with open(os.path.join(sys.argv[2], f"rank{rank}.json"), "w", encoding="utf-8") as file:
            json.dump(report, file)
        return
    if mode == "strict":
        torchscan.measure_workload(
            work,
            metrics=["latency", "process_rss"],
            strict=True,
            print_summary=False,
            rank_timeout_s=5,
        )
        return
    # ``disagree``: rank 1 asks for more blocks than rank 0.
    blocks = 6 if mode == "disagree" and rank == 1 else 5
    torchscan.measure_workload(
        work, min_time_s=0.2, min_blocks=blocks, print_summary=False, rank_timeout_s=5
    )


if __name__ == "__main__":
    sys.exit(main())
