"""A code location whose whole executor chain (`scrape`, `validation`, `pages`) is sharded: what
a crawl streamed through a sharded run runs (`test_sharded_crawl`)."""

from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.shards import shard_resources

defs = scrapeflow_definitions(
    [
        sharded_executor_asset(scrape),
        sharded_executor_asset(validation, requires=["scrape"]),
        sharded_executor_asset(pages, requires=["scrape", "validation"]),
    ],
    resources=shard_resources(),
)
