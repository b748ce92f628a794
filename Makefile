# The developer loop. `make demo` and `make test` are the README's two set-up commands: each creates
# .venv when missing, installs what it needs, builds the extension, and runs. `make demo` installs
# only torch, psutil and maturin; `make test` adds the test extra (pytest, hypothesis, jsonschema,
# ruff, mypy, numpy), the models extra (torchvision, timm, transformers: configs only, no weights)
# and, through `make browser`, Debian's chromium. A second run reuses .venv and rebuilds only what
# changed.

SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Every cargo command builds against the virtual environment's interpreter.
export PYO3_PYTHON := $(abspath $(PY))

DEPS_STAMP := $(VENV)/.torchscan-deps
TEST_DEPS_STAMP := $(VENV)/.torchscan-test-deps
EXT_STAMP := $(VENV)/.torchscan-extension
RUST_SOURCES := Cargo.toml Cargo.lock $(shell find rust -type f \( -name '*.rs' -o -name 'Cargo.toml' -o -name '*.j2' \) 2>/dev/null)

.PHONY: demo test lint rust-test python-test browser build bytecode schema clean dist dist-check docs test-floor gpu-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# torch and psutil come from pyproject.toml through maturin's install; the extras only for tests.
$(DEPS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet "maturin>=1.8,<2"
	$(PY) -m maturin develop --release
	touch $@

$(TEST_DEPS_STAMP): pyproject.toml $(DEPS_STAMP)
	$(PY) -m maturin develop --release --extras test,models,docs
	touch $@

$(EXT_STAMP): $(DEPS_STAMP) $(RUST_SOURCES)
	$(PY) -m maturin develop --release --skip-install
	touch $@

# The editable install reads the package from python/: its bytecode is written here, as an
# installer writes it for a wheel (also where PYTHONDONTWRITEBYTECODE is set, which would
# otherwise compile every module again at each import). Files already up to date are skipped.
bytecode: $(EXT_STAMP)
	$(PY) -m compileall -q python/torchscan

build: $(EXT_STAMP) bytecode

demo: $(EXT_STAMP) bytecode
	$(PY) -m torchscan demo

lint: $(EXT_STAMP) $(TEST_DEPS_STAMP)
	@if cargo tree --locked -p torchscan-core -e normal,build,dev | grep -q pyo3; then \
		echo "torchscan-core must not depend on pyo3"; exit 1; fi
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(PY) -m ruff check python tests
	$(PY) -m ruff format --check python tests
	$(PY) -m mypy
	$(PY) -m mypy.stubtest torchscan._core

rust-test:
	cargo test --locked

# tests/test_html_browser.py opens rendered pages in Debian's headless Chromium: installed here
# when missing (apt-get, as root or through sudo; the package list is refreshed only if the first
# try fails). Without apt-get the browser tests skip, except under CI=true, where they fail.
BROWSER_PACKAGES := chromium fonts-dejavu-core

browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "chromium is missing and apt-get is not available: the browser tests will skip"; \
		else \
			sudo=""; if [ "$$(id -u)" != 0 ]; then sudo="sudo"; fi; \
			install="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(BROWSER_PACKAGES)"; \
			$$install || { $$sudo apt-get update -q && $$install; }; \
		fi; \
	}

python-test: $(EXT_STAMP) $(TEST_DEPS_STAMP) bytecode browser
	$(PY) -m pytest

test: lint rust-test python-test docs

# The documentation site, from docs/ and the package's docstrings, into site/ (warnings fail it).
docs: $(TEST_DEPS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# The four artifacts of a release, in dist/: the torchscan wheel and sdist, and the
# torchscan-report wheel (the binary alone, no Python dependency) and sdist.
DIST := dist

dist: $(DEPS_STAMP)
	rm -rf $(DIST)
	$(PY) -m maturin build --release --locked --out $(DIST)
	$(PY) -m maturin sdist --out $(DIST)
	$(PY) -m maturin build --release --locked --strip -m rust/torchscan-report/Cargo.toml --out $(DIST)
	$(PY) -m maturin sdist -m rust/torchscan-report/Cargo.toml --out $(DIST)
	@ls -l $(DIST)

# Installs each artifact into a fresh virtual environment and smoke-tests it (scripts/dist-check.sh).
dist-check: dist $(TEST_DEPS_STAMP)
	scripts/dist-check.sh $(PY) $(DIST)

# The lowest torch the package supports (the floor of `torch>=` in pyproject.toml): the Python
# tests run against it in an environment of its own, .venv-floor (scripts/test-floor.sh).
TORCH_FLOOR := 2.14.0

test-floor: $(DEPS_STAMP)
	scripts/test-floor.sh $(PY) $(TORCH_FLOOR) -q

# Regenerates the checked-in JSON Schema after a change to the Rust types.
# Every CUDA test, the README example on CUDA and, with two GPUs, the DDP test on NCCL; at most
# 5 minutes, on a machine with a CUDA device (it fails without one).
gpu-check: $(EXT_STAMP) $(TEST_DEPS_STAMP) bytecode
	bash scripts/gpu-check.sh $(PY)

schema:
	cargo run --quiet --locked -p torchscan-report -- schema > docs/schema/report.v1.schema.json

clean:
	cargo clean
	rm -rf $(VENV) python/torchscan/_core*.so
	find python -name __pycache__ -type d -prune -exec rm -rf {} +

# Coverage-guided fuzzing of the Rust core with libFuzzer on the stable toolchain, every target
# SECONDS seconds, one at a time (docs/fuzzing.md). Installs g++ when no C++ compiler is found.
SECONDS ?= 60
.PHONY: fuzz
fuzz:
	fuzz/run.sh run $(SECONDS)
