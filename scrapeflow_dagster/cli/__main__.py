"""`python -m scrapeflow_dagster.cli`: the `scrapeflow` command."""

from scrapeflow_dagster.cli import console_main

console_main()
