# Two commands for a newcomer (see README):
#   make lab    set everything up, then open the course in JupyterLab
#   make test   set everything up, then run the tests (notebooks included)
# Everything goes into a virtual environment in .venv, made with $(PYTHON) (3.10 or newer).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: lab test setup bench clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-gpu.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	if nvidia-smi -L >/dev/null 2>&1; then $(BIN)/python -m pip install --quiet -r requirements-gpu.txt; fi
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) .pytest_cache
