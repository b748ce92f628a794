#!/usr/bin/env bash
# Installs every artifact of `make dist` into a fresh virtual environment and smoke-tests it
# (`make dist-check`, run by .ci/run):
#
# - the torchscan-report wheel in an environment without torch: the binary is on PATH, torch is
#   not importable, every command works, and its output is byte-identical to the console script of
#   `pip install torchscan` on every fixture (tests/test_report_binary.py);
# - the torchscan wheel: import, the README example, render_report, both commands, and
#   `python -m torchscan demo`. torch is not downloaded again (about 3 GB): the fresh environment
#   sees the build environment's packages through a view that leaves torchscan out, so pip resolves
#   the wheel's requirements against them, offline, and installs torchscan itself from the wheel;
# - both sdists build into wheels (offline, with the build environment's maturin), and
#   `cargo test` passes from the unpacked torchscan sdist.
#
# Usage: scripts/dist-check.sh PYTHON DIST_DIR   (PYTHON: the build environment's interpreter)
set -euo pipefail

# Absolute, but not resolved: a virtual environment's python is a symlink to the base interpreter.
PY="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
DIST=$(realpath "$2")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/torchscan-dist-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Readable by other users: a Rust test reads the fixtures as another user.
chmod 755 "$WORK"

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'dist-check: %s\n' "$*" >&2; exit 1; }
one() {
    # The one file matching a pattern in DIST (fails on none or several).
    local found=("$DIST"/$1)
    [ "${#found[@]}" = 1 ] && [ -e "${found[0]}" ] || fail "expected one $1 in $DIST, found: ${found[*]}"
    printf '%s\n' "${found[0]}"
}

REPORT_WHEEL=$(one 'torchscan_report-*.whl')
REPORT_SDIST=$(one 'torchscan_report-*.tar.gz')
WHEEL=$(one 'torchscan-*.whl')
SDIST=$(one 'torchscan-*.tar.gz')
REPORTS=("$ROOT"/tests/fixtures/reports/*.json)
BENCH="$ROOT/tests/fixtures/reports/benchmark_readme_cpu.json"
BENCH_1S="$ROOT/tests/fixtures/reports/benchmark_readme_cpu_1s.json"

step "LICENSE (Apache-2.0) in every artifact"
"$PY" - "$ROOT/LICENSE" "$REPORT_WHEEL" "$REPORT_SDIST" "$WHEEL" "$SDIST" <<'EOF'
import sys, tarfile, zipfile
license_text = open(sys.argv[1], "rb").read()
assert b"Apache License" in license_text and b"Version 2.0, January 2004" in license_text
for artifact in sys.argv[2:]:
    if artifact.endswith(".whl"):
        with zipfile.ZipFile(artifact) as archive:
            names = archive.namelist()
            found = [archive.read(n) for n in names if n.endswith(".dist-info/licenses/LICENSE")]
            metadata = [archive.read(n) for n in names if n.endswith(".dist-info/METADATA")]
    else:
        with tarfile.open(artifact) as archive:
            top = [m for m in archive.getmembers() if m.name.count("/") == 1]
            found = [archive.extractfile(m).read() for m in top if m.name.endswith("/LICENSE")]
            metadata = [archive.extractfile(m).read() for m in top if m.name.endswith("/PKG-INFO")]
    assert found == [license_text], f"{artifact}: LICENSE missing or different"
    assert len(metadata) == 1 and b"License-Expression: Apache-2.0" in metadata[0], artifact
    print("LICENSE and License-Expression: Apache-2.0 in", artifact.rsplit("/", 1)[-1])
EOF

# -- the torchscan-report wheel, without torch ----------------------------------------------------
step "torchscan-report wheel in a fresh environment without torch: $(basename "$REPORT_WHEEL")"
"$PY" -m venv --without-pip "$WORK/report-env"
"$PY" -m pip --python "$WORK/report-env/bin/python" install --quiet --no-index "$REPORT_WHEEL"
BIN="$WORK/report-env/bin/torchscan-report"
[ -x "$BIN" ] || fail "the wheel did not install bin/torchscan-report"
file_kind=$(head -c 4 "$BIN" | od -An -c | tr -d ' ')
[ "$file_kind" = '177ELF' ] || fail "bin/torchscan-report is not a native binary ($file_kind)"
if "$WORK/report-env/bin/python" -c 'import torch' 2>/dev/null; then
    fail "torch is importable in the torchscan-report environment"
fi
PATH="$WORK/report-env/bin:$PATH" command -v torchscan-report | grep -qx "$BIN" \
    || fail "torchscan-report on PATH is not the wheel's binary"
echo "installed: $(du -sh "$WORK/report-env/bin/torchscan-report" | cut -f1) binary, wheel $(du -h "$REPORT_WHEEL" | cut -f1)"
"$BIN" --version
"$BIN" validate "${REPORTS[@]}" >/dev/null
"$BIN" summary "$BENCH" >/dev/null
"$BIN" render "$BENCH" -o "$WORK/page.html"
grep -q '<!DOCTYPE html>' "$WORK/page.html" || fail "render wrote no HTML page"
"$BIN" compare "$BENCH" "$BENCH_1S" --format json -o "$WORK/comparison.json"
"$BIN" validate "$WORK/comparison.json"
"$BIN" schema | cmp - "$ROOT/docs/schema/report.v1.schema.json" || fail "schema differs from docs/schema"
echo "byte-identical to the console script of pip install torchscan, on every fixture:"
(cd "$ROOT" && TORCHSCAN_REPORT_BINARY="$BIN" "$PY" -m pytest -q -p no:cacheprovider tests/test_report_binary.py)

# -- the torchscan wheel --------------------------------------------------------------------------
step "torchscan wheel in a fresh environment: $(basename "$WHEEL")"
# A view of the build environment's packages without torchscan itself (its editable install).
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
VIEW="$WORK/build-env-view"
mkdir "$VIEW"
for entry in "$SITE"/*; do
    name=$(basename "$entry")
    case "$name" in
        torchscan* | _torchscan* | __pycache__ | *.pth | _virtualenv*) continue ;;
    esac
    ln -s "$entry" "$VIEW/$name"
done
"$PY" -m venv --without-pip "$WORK/env"
ENV_SITE=$("$WORK/env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$VIEW" > "$ENV_SITE/zz-build-env-view.pth"
"$PY" -m pip --python "$WORK/env/bin/python" install --quiet --no-index "$WHEEL"
EPY="$WORK/env/bin/python"
mkdir "$WORK/run"
cd "$WORK/run"
"$EPY" - "$ENV_SITE" <<'EOF'
import pathlib, sys
import torchscan
site = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(torchscan.__file__).resolve()
assert site in where.parents, f"torchscan imported from {where}, not from the fresh environment"
assert (where.parent / "py.typed").exists() and (where.parent / "_core.pyi").exists()
assert (where.parent / "data" / "example_workload.json").exists()
print("torchscan", torchscan.__version__, "from", where.parent)
EOF
# The README's first example, as a user copies it.
"$EPY" - "$ROOT/README.md" <<'EOF' > readme_example.py
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
print(re.findall(r"```python\n(.*?)```", text, flags=re.S)[0])
EOF
"$EPY" readme_example.py
[ -s workload.json ] || fail "the README example wrote no workload.json"
"$EPY" -c '
import torchscan
kind = torchscan.validate_report("workload.json")
page = torchscan.render_report("workload.json")
assert kind == "benchmark" and page.startswith("<!DOCTYPE html>"), kind
print("render_report:", len(page), "characters")'
"$WORK/env/bin/torchscan-report" validate workload.json
"$WORK/env/bin/torchscan-report" summary workload.json >/dev/null
"$EPY" -m torchscan --help >/dev/null
"$EPY" -m torchscan demo
[ -s workload.html ] || fail "python -m torchscan demo wrote no workload.html"
cd "$ROOT"

# -- the sdists -----------------------------------------------------------------------------------
# One cargo target directory for the three builds below: the dependencies compile once.
export CARGO_TARGET_DIR="$WORK/target"
for sdist in "$REPORT_SDIST" "$SDIST"; do
    step "building a wheel from $(basename "$sdist")"
    "$PY" -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w "$WORK/from-sdist" "$sdist"
done
ls "$WORK/from-sdist"
step "cargo install --path rust/torchscan-report --locked"
cargo install --quiet --path "$ROOT/rust/torchscan-report" --locked --root "$WORK/cargo-root"
for arguments in "--version" "summary $BENCH" "render $BENCH" "compare $BENCH $BENCH_1S"; do
    # shellcheck disable=SC2086
    cmp <("$WORK/cargo-root/bin/torchscan-report" $arguments) <("$BIN" $arguments) \
        || fail "cargo install's binary and the wheel's differ on: $arguments"
done
echo "the installed binary gives the wheel's output"
step "cargo test from the unpacked $(basename "$SDIST")"
mkdir "$WORK/unpacked"
tar -xzf "$SDIST" -C "$WORK/unpacked"
(cd "$WORK"/unpacked/torchscan-* && cargo test --locked --quiet)
echo
echo "dist-check: every artifact installs and works"
