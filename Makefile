# The two commands a person runs: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

## demo: set up .venv with the core and run `cubecl-server demo` on the cpu backend
demo: venv
	$(BIN)/python -m pip install -q -e .
	CUBECL_BACKEND=cpu $(BIN)/cubecl-server demo

## test: set up everything the tests need, then run every test
test: venv
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
