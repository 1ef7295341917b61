# The two commands a person runs: `make demo` and `make test` (see README.md).
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PIP     := $(BIN)/python -m pip install -q --disable-pip-version-check
PYTEST  := $(BIN)/python -m pytest -p no:cacheprovider
PLUGINS := plugins/cubecl-opencl plugins/cubecl-vulkan plugins/cubecl-cuda plugins/cubecl-llvm
EXAMPLE := examples/cubecl-example examples/cubecl-c

.PHONY: demo test lint bench mutation venv system-deps device-wheels clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

## demo: set up .venv with the core and run `cubecl-server demo` on the cpu backend
demo: venv
	$(PIP) -e .
	CUBECL_BACKEND=cpu $(BIN)/cubecl-server demo

## system-deps: PoCL, lavapipe and spirv-tools, installed with apt when root and missing
system-deps:
	bash scripts/system-deps.sh

## test: set up everything the tests need, then run every test: the core's (with the
## conformance suite on cpu, once) and each backend's own run of the suite (once each),
## as many runs at a time as the machine has cores; every run names its slowest tests,
## to keep the whole within 10 minutes
## (the packages' build backend is installed once, not in a fresh environment per package)
test: venv system-deps
	$(PIP) 'hatchling>=1.18' editables
	$(PIP) --no-build-isolation -e '.[dev]' $(foreach p,$(PLUGINS) $(EXAMPLE),-e $(p))
	$(BIN)/ruff check .
	$(MAKE) --no-print-directory --keep-going -j$(JOBS) --output-sync=target $(SUITES:%=suite/%)

# Each run is one pytest process that keeps one of the cores busy most of its time, so
# two cores finish the seven runs in about half the time one after another would take;
# each run's output comes whole when it ends, and the longest start first (the rest of
# the packages follow, so a package added to PLUGINS or EXAMPLE is never left out).
JOBS    ?= $(shell nproc)
LONGEST := plugins/cubecl-opencl plugins/cubecl-vulkan plugins/cubecl-llvm examples/cubecl-c \
           examples/cubecl-example
SUITES  := tests $(LONGEST) $(filter-out $(LONGEST),$(PLUGINS) $(EXAMPLE))

suite/tests:
	$(PYTEST) --durations=15 tests

suite/%:
	cd $* && ../../$(PYTEST) --durations=5

lint: venv
	$(BIN)/ruff check .

## mutation: how many deliberate faults of the cpu backend and the compile path the
## conformance suite alone catches (docs/conformance.md); not part of `make test`
mutation: venv
	$(PIP) -e '.[dev]'
	$(BIN)/python scripts/mutation.py

## bench: every figure of BENCHMARKS.md (QUICK=1 for the three-minute version)
bench: venv
	$(PIP) -e '.[bench]' $(foreach p,$(PLUGINS),-e $(p))
	$(BIN)/python -m benchmarks $(if $(QUICK),--quick,)

## device-wheels: the core's and the cuda plugin's wheels with platformdirs' and ml_dtypes' (for
## the GPU machine's Python 3.12) in .whl/, for a GPU machine without our venv (carried
## there; plugins/cubecl-cuda/scripts/device-check.sh)
device-wheels: venv
	rm -rf .whl
	$(BIN)/python -m pip wheel -q --disable-pip-version-check --no-deps -w .whl . plugins/cubecl-cuda
	$(BIN)/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
	  --python-version 3.12 --platform manylinux2014_x86_64 -d .whl platformdirs ml_dtypes

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
