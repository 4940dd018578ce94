"""The code location: `dagster dev -w workspace.yaml` or `-m scrapeflow_dagster.definitions`.

To add your own executors, build the definitions the same way with your list:
`scrapeflow_definitions([scrape_asset, validation_asset, pages_asset, word_count_asset])`.
With `SCRAPEFLOW_SHARDS` or `SCRAPEFLOW_CELERY_BROKER` set the shipped assets are sharded and,
with the broker, their steps run on Celery workers (README, "Scaling out").
"""

from scrapeflow_dagster.defs.assets import executor_assets, sharding_requested
from scrapeflow_dagster.defs.factory import scrapeflow_definitions
from scrapeflow_dagster.scaleout.celery import executor_from_env
from scrapeflow_dagster.scaleout.shards import shard_resources

defs = scrapeflow_definitions(
    executor_assets,
    resources=shard_resources() if sharding_requested() else None,
    executor=executor_from_env(),
)
