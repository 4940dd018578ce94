"""The shipped executor assets: `scrape`, then `validation` and `pages` downstream of it."""

from scrapeflow_dagster.defs.executor_assets import executor_asset
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation

scrape_asset = executor_asset(scrape)
validation_asset = executor_asset(validation, requires=[scrape_asset.key.to_user_string()])
pages_asset = executor_asset(
    pages, requires=[scrape_asset.key.to_user_string(), validation_asset.key.to_user_string()]
)

executor_assets = [scrape_asset, validation_asset, pages_asset]
