"""`crawl_report` publishes numeric metadata over a run with failures, and definitions built
with `scrapeflow_definitions` cover a user's own executor in the sensors and in the chain step."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from scrapeflow_dagster.defs.assets import build_executor_assets, executor_assets
from scrapeflow_dagster.defs.factory import executor_chain, scrapeflow_definitions
from scrapeflow_dagster.defs.report_asset import crawl_report
from scrapeflow_dagster.engine.executor import taskify
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.lib.executor_assets import executor_asset
from scrapeflow_dagster.lib.resources import StatusStoreResource
from scrapeflow_dagster.scaleout.shards import (
    SHARD_IO_MANAGER_KEY,
    SHARD_REPORTS_DIR,
    ShardReportsIOManager,
)
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.conftest import Materialize
from scrapeflow_dagster_tests.support.partitions import partition_statuses, range_tags
from scrapeflow_dagster_tests.support.sensors import sensor_context
from scrapeflow_dagster_tests.support.tasks import TaskRows


def test_crawl_report_counts_a_run_with_failures(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
) -> None:
    rows = [(f"ok-{n}", site_thread.url(f"/page/{n}")) for n in range(8)]
    rows += [("gone-1", site_thread.url("/status/404")), ("gone-2", site_thread.url("/status/410"))]
    keys = add_task_rows(rows)
    assert not materialize_range("scrape", keys[0], keys[-1]).success
    assert materialize_range(["validation", "pages"], keys[0], keys[7]).success

    result = dg.materialize([crawl_report], instance=instance, resources=resources)

    (event,) = result.get_asset_materialization_events()
    meta = event.materialization.metadata
    assert (meta["tasks"].value, meta["succeeded"].value, meta["failed"].value) == (10, 8, 2)
    assert meta["success_pct"].value == 80.0
    assert meta["pages_parsed"].value == 8
    assert meta["bytes"].value > 0 and meta["p95_fetch_seconds"].value > 0
    summary = meta["summary"].value
    assert "| scrape | permanent | HttpStatusError | 2 |" in summary
    assert "| 127.0.0.1 | 2 | 10 |" in summary


def test_the_factory_covers_a_user_executor_in_both_sensors(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    materialize_range: Materialize,
    instance: dg.DagsterInstance,
    layout: DataLayout,
    monkeypatch: Any,
) -> None:
    @taskify
    async def word_count(context: Any, key: str, status: dict) -> dict:
        """Words on the page."""
        return {"words": len((context.dir / f"{key}.scrape").read_bytes().split())}

    word_count_asset = executor_asset(word_count, requires=["scrape"])
    defs = scrapeflow_definitions([*executor_assets, word_count_asset])
    repo = defs.get_repository_def()
    inbox, retry = (repo.get_sensor_def(n) for n in ("inbox_sensor", "retry_sensor"))
    # The inbox sensor runs the whole chain, the user's step included.
    (layout.inbox_dir / "new.txt").write_text(site_thread.url("/page/3") + "\n")
    (run,) = inbox(sensor_context(instance, layout.root)).run_requests
    assert dg.AssetKey("word_count") in run.asset_selection
    # Once `scrape` is materialised, the retry sensor catches up the user's step.
    monkeypatch.setenv("SCRAPEFLOW_RETRY_BACKOFF_SECONDS", "0")
    keys = add_task_rows([(f"w-{n}", site_thread.url(f"/page/{n}")) for n in range(3)])
    assert materialize_range("scrape", keys[0], keys[-1]).success
    assert partition_statuses(instance, "word_count", keys) == dict.fromkeys(keys)

    result = retry(sensor_context(instance, layout.root))

    wanted = [r for r in result.run_requests if r.asset_selection == [dg.AssetKey("word_count")]]
    assert wanted, [r.asset_selection for r in result.run_requests]


def test_shard_reports_follow_a_data_dir_given_to_the_factory(
    tmp_path: Path, layout: DataLayout
) -> None:
    elsewhere = tmp_path / "shared-mount"
    defs = scrapeflow_definitions(
        executor_assets, resources={"status_store": StatusStoreResource(data_dir=str(elsewhere))}
    )
    default = scrapeflow_definitions(executor_assets)

    reports = defs.resources[SHARD_IO_MANAGER_KEY]
    assert isinstance(reports, ShardReportsIOManager)
    assert reports.root() == elsewhere.resolve() / SHARD_REPORTS_DIR
    assert default.resources[SHARD_IO_MANAGER_KEY].root() == layout.root / SHARD_REPORTS_DIR


def test_a_user_executor_joins_the_chain_step(
    site_thread: SiteThread,
    add_task_rows: Callable[[TaskRows], list[str]],
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    layout: DataLayout,
) -> None:
    @taskify
    async def word_count(context: Any, key: str, status: dict) -> dict:
        """Words on the page."""
        return {"words": len((context.dir / f"{key}.scrape").read_bytes().split())}

    unsharded = build_executor_assets(executor_asset)
    chain = executor_chain([*unsharded, executor_asset(word_count, requires=["scrape"])])
    assert chain.keys == {dg.AssetKey(n) for n in ("scrape", "validation", "pages", "word_count")}
    rows = [(f"u-{n}", site_thread.url(f"/page/{n}")) for n in range(4)]
    rows.insert(2, ("u-gone", site_thread.url("/status/404")))
    keys = add_task_rows(rows)

    result = dg.materialize(
        [chain],
        selection=["scrape", "word_count"],
        instance=instance,
        resources=resources,
        tags=range_tags(keys[0], keys[-1]),
        raise_on_error=False,
    )

    assert not result.success  # the 404
    steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert steps == {"executor_chain"}  # one step: the user's executor ran in the chain
    good = [key for key in keys if key != "u-gone"]
    assert partition_statuses(instance, "word_count", keys) == {
        **dict.fromkeys(good, dg.AssetPartitionStatus.MATERIALIZED),
        "u-gone": None,  # its fetch failed: never counted, missing
    }
    assert partition_statuses(instance, "validation", keys) == dict.fromkeys(keys)
    status = load_status(layout.status_dir, good[0])
    assert status is not None and status["word_count"]["words"] > 0
