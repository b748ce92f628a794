#!/usr/bin/env bash
# Runs the Python tests against the lowest torch the package declares (`make test-floor`): a
# virtual environment of its own (.venv-floor) with that torch from PyPI, the test dependencies,
# and torchscan installed from a wheel built from this checkout. The `models` extra is left out, so
# the tests of third-party architectures skip: they compare with PyTorch's FlopCounterMode, which
# before torch 2.15 has no formula for the CPU flash-attention kernel (docs/installation.md).
#
# Usage: scripts/test-floor.sh PYTHON TORCH_VERSION [PYTEST ARGS...]
#   PYTHON: the build environment's interpreter (its maturin builds the wheel).
set -euo pipefail

PY="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
TORCH_VERSION=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ENV="$ROOT/.venv-floor"
FPY="$ENV/bin/python"

REQUIREMENTS=("torch==$TORCH_VERSION" "pytest>=8" "hypothesis>=6.100" "jsonschema>=4.20" numpy
    "pyyaml>=6" "psutil>=5.9")
# The `test`, `pandas` and `models` extras, read from pyproject.toml so that the floor tests what
# users install and what the tests need.
mapfile -t EXTRAS < <("$PY" -c 'import sys, tomllib; extras = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]; [print(r) for name in ("test", "pandas", "models") for r in extras[name]]' "$ROOT/pyproject.toml")
REQUIREMENTS+=("${EXTRAS[@]}")
# Reused only when it was made from exactly these requirements (and nothing was added to it).
if [ "$(cat "$ENV/.torchscan-floor" 2>/dev/null)" != "${REQUIREMENTS[*]}" ]; then
    rm -rf "$ENV"
    "$PY" -m venv --without-pip "$ENV"
    "$PY" -m pip --python "$FPY" install --quiet "${REQUIREMENTS[@]}"
    echo "${REQUIREMENTS[*]}" > "$ENV/.torchscan-floor"
fi
WHEELS=$(mktemp -d "${TMPDIR:-/tmp}/torchscan-floor.XXXXXX")
trap 'rm -rf "$WHEELS"' EXIT
"$PY" -m maturin build --quiet --release --locked --out "$WHEELS"
"$PY" -m pip --python "$FPY" install --quiet --no-deps --force-reinstall "$WHEELS"/torchscan-*.whl
"$FPY" -c 'import torch, torchscan; print("torch", torch.__version__, "torchscan", torchscan.__version__)'
cd "$ROOT"
exec "$FPY" -m pytest -p no:cacheprovider "$@"
