# Two commands for a newcomer (see README):
#   make lab    set everything up, then open the course in JupyterLab
#   make test   set everything up, then run the tests (notebooks included)
# and two for the exercises: make check EX=04.1, make hint EX=04.1 [LEVEL=2]
# Everything goes into a virtual environment in .venv, made with $(PYTHON) (3.10 or newer).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

# Jupyter refuses to start as root unless told to; containers and GPU cloud machines often run as root.
# Where there is no display, it opens no browser: the address to open is printed instead.
LAB_FLAGS := $(if $(filter 0,$(shell id -u)),--allow-root) $(if $(DISPLAY),,--no-browser)
LAB_CMD = $(BIN)/jupyter lab $(LAB_FLAGS) notebooks/

.PHONY: lab lab-command test check hint setup bench clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-gpu.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	if nvidia-smi -L >/dev/null 2>&1; then $(BIN)/python -m pip install --quiet -r requirements-gpu.txt; fi
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

lab: $(STAMP)
	@echo "Open the http://127.0.0.1:8888/lab?token=... address Jupyter prints below (from another machine: ssh -L 8888:localhost:8888 you@this-machine, then open it there)."
	$(LAB_CMD)

# The command `make lab` runs, for the test that starts the server the same way.
lab-command:
	@echo $(LAB_CMD)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Check exercises (notebooks/exercises/), as saved: `make check` (all), `make check EX=04` (one notebook),
# `make check EX=04.1` (one exercise); add SOLUTIONS=1 to check the reference solutions in solutions/ instead.
# It fails (make's exit status 2) when an exercise is 'not yet'; 'not checked here' does not fail it.
check: $(STAMP)
	$(BIN)/python -m course.exercises $(EX) $(if $(SOLUTIONS),--solutions)

# A hint for one exercise: `make hint EX=04.1`, then LEVEL=2 for a more specific one, LEVEL=3 for where the solution is.
hint: $(STAMP)
	$(BIN)/python -m course.exercises --hint $(EX) --level $(or $(LEVEL),1)

bench: $(STAMP)
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) .pytest_cache
