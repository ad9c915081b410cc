# Two commands set everything up on a fresh Debian machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo demo-web test wabt wasi-toolchain chromium clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[demo]'
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test,demo]'
	touch $@

# Debian's wabt (wat2wasm, wasm-validate, wast2json, ...) is used to check what we emit.
wabt:
	@command -v wat2wasm >/dev/null 2>&1 || { \
	  echo "wat2wasm not found: installing Debian's wabt with apt-get"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq wabt; }

# clang for wasm32-wasi builds the C programs of the WASI tests (skipped without it).
wasi-toolchain:
	@command -v clang >/dev/null 2>&1 || { \
	  echo "clang not found: installing clang, lld, wasi-libc and the wasm32 runtime with apt-get"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) apt-get install -y -qq clang lld wasi-libc libclang-rt-14-dev-wasm32; }

# Debian's Chromium runs the browser tests headless (they skip, saying why, without it).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "chromium not found: installing Debian's chromium with apt-get"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium \
	  || echo "chromium could not be installed: the browser tests will be skipped"; }

demo: $(VENV)/.demo-installed wabt
	$(PY) examples/digits/demo.py

# The live digits page (examples/web) on http://127.0.0.1:8000/.
demo-web: $(VENV)/.demo-installed
	$(PY) examples/web/serve.py

# Lint and type-check the five packages first (settings in pyproject.toml), then the suite.
test: $(VENV)/.test-installed wabt wasi-toolchain chromium
	$(PY) -m ruff check nn modelc runtime wasi_intrinsics wasm_kernels
	$(PY) -m mypy
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
