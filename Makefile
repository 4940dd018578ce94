# Two front doors: `make demo` (scrape the bundled local site through Dagster) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs the package alone (embedded SQLite and DuckDB); the tests every backend.
BASE := $(VENV)/.installed-base
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench install clean

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

test: $(STAMP) lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .dagster_home data/status data/*.duckdb*
