"""A code location whose executor assets are sharded (`scrape`, then `validation`; `pages` is
there for in-process chain tests), wired as
the shipped one would be with sharding on: what the scale-out tests run through the real CLI
and Celery workers."""

import dagster as dg

from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation
from scrapeflow_dagster.scaleout.celery import executor_from_env
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.shards import shard_resources

scrape_asset = sharded_executor_asset(scrape)
validation_asset = sharded_executor_asset(validation, requires=["scrape"])
pages_asset = sharded_executor_asset(pages, requires=["scrape", "validation"])

defs = dg.Definitions.merge(
    scrapeflow_definitions([scrape_asset, validation_asset], resources=shard_resources()),
    dg.Definitions(executor=executor_from_env()),
)
