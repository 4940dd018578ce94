"""The shipped executor assets: `scrape`, then `validation` and `pages` downstream of it.

Sharded (`scaleout.sharded_asset`: each run's partitions split over several steps, so over
several cores or, with `SCRAPEFLOW_CELERY_BROKER` set, Celery workers) when more than one shard
is configured when the definitions load: `SCRAPEFLOW_SHARDS`, unset or 0 meaning one per core.
Unsharded (one step per asset) with `SCRAPEFLOW_SHARDS=1` or on a one-core machine.
"""

from collections.abc import Callable, Sequence

import dagster as dg

from scrapeflow_dagster.defs.executor_assets import executor_asset
from scrapeflow_dagster.engine.executor import Executor
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation
from scrapeflow_dagster.scaleout.broker import configured_broker
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.sizing import configured_shards

AssetFactory = Callable[..., dg.AssetsDefinition]


def sharding_requested() -> bool:
    """Whether this deployment shards its executor assets (see the module docstring)."""
    return configured_broker() is not None or configured_shards() > 1


def build_executor_assets(make: AssetFactory = executor_asset) -> list[dg.AssetsDefinition]:
    """`scrape`, `validation`, `pages` built with `make` (`executor_asset` or
    `sharded_executor_asset`, which take the same arguments)."""
    chain: Sequence[tuple[Executor, list[str]]] = (
        (scrape, []),
        (validation, ["scrape"]),
        (pages, ["scrape", "validation"]),
    )
    return [make(executor, requires=requires) for executor, requires in chain]


executor_assets = build_executor_assets(
    sharded_executor_asset if sharding_requested() else executor_asset
)
scrape_asset, validation_asset, pages_asset = executor_assets
