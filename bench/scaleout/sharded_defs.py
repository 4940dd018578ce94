"""The shipped chain with `scrape` sharded: the code location the scale-out benchmark runs."""

import dagster as dg

from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.scaleout.celery import executor_from_env
from scrapeflow_dagster.scaleout.local import local_executor
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.shards import shard_resources

# The shipped location's executors: Celery with a broker, else forked step processes.
defs = dg.Definitions.merge(
    scrapeflow_definitions([sharded_executor_asset(scrape)], resources=shard_resources()),
    dg.Definitions(executor=executor_from_env() or local_executor(__name__)),
)
