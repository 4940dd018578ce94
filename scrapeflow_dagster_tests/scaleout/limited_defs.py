"""The sharded code location with the limits the worker-hosts test measures, so that every run
(the CLI's, the retry sensor's) holds them: at most 4 requests in flight per site across every
worker host, 4 per shard (8 from two hosts if each kept its own limit), one attempt per run (a
failure is the retry sensor's to complete)."""

import dagster as dg

from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.scaleout.celery import executor_from_env
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.shards import shard_resources

MAX_PER_HOST = 4
LIMITS = ScrapeSettingsResource(max_per_host=MAX_PER_HOST, max_parallelism=4, max_attempts=1)

defs = dg.Definitions.merge(
    scrapeflow_definitions(
        [sharded_executor_asset(scrape)],
        resources={**shard_resources(), "scrape_settings": LIMITS},
    ),
    dg.Definitions(executor=executor_from_env()),
)
