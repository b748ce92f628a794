#!/usr/bin/env bash
# make gpu-check: every CUDA test (pytest -m cuda), the README example on CUDA and, with two
# GPUs, the DDP test on NCCL, in at most 5 minutes. Needs a CUDA device: without one it says so
# and fails, since skipped CUDA tests would prove nothing.
set -euo pipefail
PY="${1:-.venv/bin/python}"
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu-check: no CUDA device is visible to torch; run it on a GPU machine" >&2
    exit 1
fi
"$PY" -c 'import torch; print("gpu-check:", torch.cuda.device_count(), "x", torch.cuda.get_device_name(0), "torch", torch.__version__)'
exec timeout --kill-after=10 300 "$PY" -m pytest -m cuda -q -rs -p no:cacheprovider tests
