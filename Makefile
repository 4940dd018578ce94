# Two front doors: `make demo` (scrape the bundled local site through Dagster) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs the package alone (embedded SQLite and DuckDB); the tests every backend.
BASE := $(VENV)/.installed-base
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench compat install clean

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(BASE)

$(STAMP): $(BASE)
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(BASE)
	$(BIN)/scrapeflow demo

lint: $(STAMP)
	$(BIN)/ruff check scrapeflow_dagster scrapeflow_dagster_tests bench
	$(BIN)/ruff format --check scrapeflow_dagster scrapeflow_dagster_tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Tests run in parallel (pytest-xdist, a worker per core, at most 4): most of their time is spent
# waiting on the processes they start (daemons, CLI runs, webservers), so two workers on 2 cores
# took 23 minutes where one took 45. Each test keeps to its own folders, databases, ports and
# Redis database (`scaleout/conftest.py`). The slowest tests are listed at the end.
PYTEST_PARALLEL := -n auto --maxprocesses 4 --durations 15

test: $(STAMP) lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_PARALLEL)
	$(MAKE) compat

# The storage contract and asset tests on another Dagster than `make test`'s, in a venv of its
# own, its versions admitted by the guard for the run (docs/compatibility.md). By default the
# newest verified patch the pins allow (without the [postgres] extra: dagster-postgres pins
# one Dagster); `make compat DAGSTER=1.13.29` tries a candidate (installed over the pins, pip
# saying so): when it passes, add it to `VERIFIED` and to the pins in pyproject.toml.
DAGSTER ?=
COMPAT := .venv-compat
COMPAT_TESTS := scrapeflow_dagster_tests/storage/test_cli_contract.py \
	scrapeflow_dagster_tests/storage/test_migration_scripts.py \
	scrapeflow_dagster_tests/storage/test_sqlite_batched_rows.py \
	scrapeflow_dagster_tests/storage/test_sqlite_batched_buffer.py \
	scrapeflow_dagster_tests/storage/test_sigkill.py \
	scrapeflow_dagster_tests/defs/test_assets.py \
	scrapeflow_dagster_tests/defs/test_chain_runs.py \
	scrapeflow_dagster_tests/defs/test_partition_events.py \
	scrapeflow_dagster_tests/storage/test_event_template.py \
	scrapeflow_dagster_tests/storage/test_retention.py \
	scrapeflow_dagster_tests/storage/test_lean_writes.py \
	scrapeflow_dagster_tests/storage/test_planned_behind.py \
	scrapeflow_dagster_tests/storage/test_partition_keys.py \
	scrapeflow_dagster_tests/storage/test_record_constructors.py \
	scrapeflow_dagster_tests/cli/test_step_server.py \
	scrapeflow_dagster_tests/scaleout/test_one_process_runs.py

compat:
	rm -rf $(COMPAT)
	$(PYTHON) -m venv $(COMPAT)
	$(COMPAT)/bin/pip install --quiet --upgrade pip
	$(COMPAT)/bin/pip install --quiet -e . "pytest>=8,<10" \
		"pytest-asyncio>=1.0,<2" "pytest-timeout>=2.3,<3" "pytest-xdist>=3.6,<4"
	$(if $(DAGSTER),$(COMPAT)/bin/pip install --quiet "dagster==$(DAGSTER)")
	$(COMPAT)/bin/python -m scrapeflow_dagster.storage.dagster_internals.version_guard
	SCRAPEFLOW_ADMIT_INSTALLED_DAGSTER=1 $(COMPAT)/bin/pytest -q -p no:cacheprovider -rs \
		$(PYTEST_PARALLEL) $(COMPAT_TESTS)

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

# Everything the commands made: the venvs, the Dagster home and all of data/ (the inbox too).
clean:
	rm -rf $(VENV) $(COMPAT) .dagster_home
	find data -mindepth 1 -maxdepth 1 ! -name .gitkeep -exec rm -rf {} +
