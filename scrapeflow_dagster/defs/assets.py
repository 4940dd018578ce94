"""The shipped executor assets: `scrape`, then `validation` and `pages` downstream of it; with
`SCRAPEFLOW_RENDER=1` (and the `browser` extra), `render` between them: tasks marked
`render: true` are run in a browser before `pages` reads them (`engine.render`). Opt-in, as a
step is a Dagster event per task and run: a deployment that renders nothing pays nothing.

Sharded (`scaleout.sharded_asset`: each run's partitions split over several steps, so over
several cores or, with `SCRAPEFLOW_CELERY_BROKER` set, Celery workers) when more than one shard
is configured when the definitions load: `SCRAPEFLOW_SHARDS`, unset or 0 meaning one per core.
Unsharded (one step per asset) with `SCRAPEFLOW_SHARDS=1` or on a one-core machine.
"""

import os
from collections.abc import Callable, Sequence

import dagster as dg

from scrapeflow_dagster.broker import configured_broker
from scrapeflow_dagster.engine.executor import Executor
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.executors.validation import validation
from scrapeflow_dagster.lib.executor_assets import executor_asset
from scrapeflow_dagster.scaleout.sharded_asset import sharded_executor_asset
from scrapeflow_dagster.scaleout.sizing import configured_shards

AssetFactory = Callable[..., dg.AssetsDefinition]
RENDER_ENV = "SCRAPEFLOW_RENDER"


def rendering_requested() -> bool:
    """Whether this deployment's chain has the `render` step (`SCRAPEFLOW_RENDER=1`).

    Raises:
        ValueError: naming the variable when it is neither 0/1 nor true/false.
    """
    raw = os.environ.get(RENDER_ENV, "").strip().lower()
    if raw not in ("", "0", "1", "true", "false"):
        raise ValueError(f"{RENDER_ENV} must be 1 (render step) or 0, got {raw!r}")
    return raw in ("1", "true")


def sharding_requested() -> bool:
    """Whether this deployment shards its executor assets (see the module docstring)."""
    return configured_broker() is not None or configured_shards() > 1


def build_executor_assets(make: AssetFactory = executor_asset) -> list[dg.AssetsDefinition]:
    """`scrape`, `validation`, (`render`,) `pages` built with `make` (`executor_asset` or
    `sharded_executor_asset`, which take the same arguments); `render` with
    `rendering_requested()`."""
    rendered = ["render"] if rendering_requested() else []
    chain: Sequence[tuple[Executor, list[str]]] = (
        (scrape, []),
        (validation, ["scrape"]),
        *([(render, ["scrape", "validation"])] if rendered else []),
        (pages, ["scrape", "validation", *rendered]),
    )
    return [make(executor, requires=requires) for executor, requires in chain]


executor_assets = build_executor_assets(
    sharded_executor_asset if sharding_requested() else executor_asset
)
scrape_asset, validation_asset, pages_asset = (
    executor_assets[0],
    executor_assets[1],
    executor_assets[-1],
)
# The `render` asset of this deployment's chain (None without `SCRAPEFLOW_RENDER=1`).
render_asset = executor_assets[2] if len(executor_assets) == 4 else None
