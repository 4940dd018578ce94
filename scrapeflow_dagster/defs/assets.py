"""The shipped executor assets: `scrape`, then `validation` and `pages` downstream of it."""

from scrapeflow_dagster.defs.executor_assets import executor_asset
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.steps_builtin import pages, validation

scrape_asset = executor_asset(scrape)
validation_asset = executor_asset(validation, requires=["scrape"])
pages_asset = executor_asset(pages, requires=["scrape", "validation"])

executor_assets = [scrape_asset, validation_asset, pages_asset]
