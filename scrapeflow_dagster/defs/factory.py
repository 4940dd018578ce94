"""`scrapeflow_definitions`: the whole code location from a list of executor assets, so the
sensors, the schedule and the checks cover the executors you add."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from scrapeflow_dagster.broker import configured_broker
from scrapeflow_dagster.defs.changes_report import changes_report, changes_report_schedule
from scrapeflow_dagster.defs.long_lived import freeze_loaded_objects
from scrapeflow_dagster.defs.report_asset import crawl_report, crawl_report_schedule
from scrapeflow_dagster.defs.schedules import build_refresh_schedule
from scrapeflow_dagster.defs.sensors.frontier import build_frontier_sensor
from scrapeflow_dagster.defs.sensors.inbox import build_inbox_sensor
from scrapeflow_dagster.defs.sensors.retention import build_retention_sensor
from scrapeflow_dagster.defs.sensors.retry import build_retry_sensor
from scrapeflow_dagster.lib.chain import built_from
from scrapeflow_dagster.lib.executor_assets import chain_asset
from scrapeflow_dagster.lib.resources import (
    StatusStoreResource,
    automation_settings_from_env,
    proxy_resource_from_env,
)
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.scaleout.local import takes_in_process_config
from scrapeflow_dagster.scaleout.sharded_asset import sharded_chain_asset
from scrapeflow_dagster.scaleout.shards import (
    SHARD_IO_MANAGER_KEY,
    ShardReportsIOManager,
    shard_resources,
)


def default_resources() -> dict[str, Any]:
    """The resources every executor asset, sensor and schedule uses (env wired via EnvVar),
    and those sharded executor assets add (`scaleout.shards.shard_resources`)."""
    return {
        "scrape_settings": ScrapeSettingsResource(),
        "status_store": StatusStoreResource(),
        "proxy_provider": proxy_resource_from_env(),
        "automation_settings": automation_settings_from_env(),
        **shard_resources(),
    }


def scrapeflow_definitions(
    executor_assets: Sequence[dg.AssetsDefinition],
    *,
    resources: Mapping[str, Any] | None = None,
    assets: Sequence[dg.AssetsDefinition] = (),
    executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    """Definitions for a chain of executor assets (built with `executor_asset` or
    `sharded_executor_asset`).

    Args:
        executor_assets: upstream first; the first one fetches (e.g. the shipped
            `scrape_asset`), the others `requires` it. They become one chain step
            (`chain_asset`, or `sharded_chain_asset` when any of them is sharded): a run of
            several of them takes each task down the chain in one pass. The inbox sensor
            runs the whole chain on new tasks; the retry sensor covers every one of them; the
            refresh schedule re-runs the first; the frontier sensor (when the chain has a
            `pages` asset) runs the chain on the tasks that links of parsed pages add.
        resources: replaces default resources by key (e.g. a `ScrapeSettingsResource` with
            other limits).
        assets: other assets of the code location that the sensors do not run (the
            `crawl_report` and `changes_report` assets and their schedules are always
            included).
        executor: the runs' executor (None: Dagster's default, one process per step on this
            machine; `scaleout.local.local_executor()` the same with steps forked from a
            preloaded server; `scaleout.celery.executor_from_env()` for Celery workers).

    The first location a process builds freezes what the process has loaded by then
    (`long_lived`: its collector and its exit no longer walk Dagster's objects).
    """
    # On Dagster's default executor a run may pick its in-process mode (small runs); another
    # executor (Celery, yours) may not know that config.
    local = takes_in_process_config(executor) and configured_broker() is None
    definitions = dg.Definitions(
        assets=[executor_chain(executor_assets), crawl_report, changes_report, *assets],
        sensors=[
            build_inbox_sensor(executor_assets, in_process_small_runs=local),
            build_retry_sensor(executor_assets, in_process_small_runs=local),
            *_frontier_sensors(executor_assets, local),
            build_retention_sensor(),
        ],
        schedules=[
            build_refresh_schedule(executor_assets, in_process_small_runs=local),
            crawl_report_schedule,
            changes_report_schedule,
        ],
        resources=_with_shard_reports_beside_the_data(resources or {}),
        executor=executor,
    )
    # The location is built: what the process imported for it lives as long as the process.
    freeze_loaded_objects()
    return definitions


def executor_chain(executor_assets: Sequence[dg.AssetsDefinition]) -> dg.AssetsDefinition:
    """The executor assets as one chain step, sharded when any of them was built sharded.

    Raises:
        ValueError: naming the asset when one was not built by `executor_asset` or
            `sharded_executor_asset`, or the chain is not listed upstream first.
    """
    built = [built_from(asset) for asset in executor_assets]
    links = [found.link for found in built]
    if any(found.sharded for found in built):
        return sharded_chain_asset(links)
    return chain_asset(links)


def _with_shard_reports_beside_the_data(given: Mapping[str, Any]) -> dict[str, Any]:
    """The default resources with `given` in their place; shard plans and reports go to the
    data dir of a given `status_store` (unless their IO manager is given too): every step of a
    sharded run, on any Celery worker, reads them where the collect step removes them."""
    merged = {**default_resources(), **given}
    store = given.get("status_store")
    if (
        SHARD_IO_MANAGER_KEY not in given
        and isinstance(store, StatusStoreResource)
        and store.data_dir is not None
    ):
        merged[SHARD_IO_MANAGER_KEY] = ShardReportsIOManager(data_dir=store.data_dir)
    return merged


def _frontier_sensors(
    executor_assets: Sequence[dg.AssetsDefinition], in_process_small_runs: bool
) -> list[dg.SensorDefinition]:
    # Crawling needs the asset whose output lists links; a chain without it has nothing to crawl.
    if dg.AssetKey("pages") not in [asset.key for asset in executor_assets]:
        return []
    return [build_frontier_sensor(executor_assets, in_process_small_runs=in_process_small_runs)]
