"""The sharded chain in process (an ephemeral instance, 2 shards): a run of several executor
assets takes each task as far down the chain as it gets, leaves exactly the failed (asset,
partition) pairs FAILED and the ones below them missing, and writes one materialisation per
(asset, partition); a run of one asset of the chain runs that asset alone."""

from collections import Counter
from collections.abc import Iterator

import dagster as dg
import pytest

from scrapeflow_dagster.defs.factory import executor_chain
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.lib.partitions import add_task_partitions
from scrapeflow_dagster.scaleout.shards import ShardSettingsResource, shard_resources
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.scaleout.sharded_defs import (
    pages_asset,
    scrape_asset,
    validation_asset,
)
from scrapeflow_dagster_tests.support.partitions import (
    Status,
    keys_with,
    partition_statuses,
    range_tags,
)
from scrapeflow_dagster_tests.support.runs import run_resources
from scrapeflow_dagster_tests.support.tasks import store_tasks

CHAIN = executor_chain([scrape_asset, validation_asset, pages_asset])
ASSETS = ("scrape", "validation", "pages")


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=20, page_bytes=2000) as running:
        yield running


def run(
    instance: dg.DagsterInstance,
    layout: DataLayout,
    selection: list[str],
    keys: list[str],
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    resources = {
        **run_resources(layout.root, max_attempts=1),
        **shard_resources(data_dir=str(layout.root)),
        "shard_settings": ShardSettingsResource(shards=2, min_tasks_per_shard=1),
    }
    return dg.materialize(
        [CHAIN],
        selection=selection,
        instance=instance,
        tags=range_tags(keys[0], keys[-1]),
        resources=resources,
        run_config=run_config or {},
        raise_on_error=False,
    )


def materialisations(result: dg.ExecuteInProcessResult, asset: str) -> Counter[str]:
    """Partition -> how many materialisations of `asset` the run wrote."""
    return Counter(
        str(event.partition)
        for event in result.all_events
        if event.event_type_value == "ASSET_MATERIALIZATION"
        and event.asset_key == dg.AssetKey(asset)
    )


def shard_steps(result: dg.ExecuteInProcessResult) -> list[str]:
    return sorted(
        event.step_key
        for event in result.all_events
        if event.event_type_value == "STEP_SUCCESS" and "_shard[" in str(event.step_key)
    )


def test_a_chain_run_with_failures_ends_exact_with_one_event_per_partition(
    site: SiteThread, layout: DataLayout
) -> None:
    good = {f"g-{n:02d}": site.url(f"/page/{n}") for n in range(8)}
    blocked = {f"c-{n:02d}": site.url("/captcha") for n in range(2)}  # fail validation
    missing = {f"m-{n:02d}": site.url("/status/404") for n in range(3)}  # scrape fails
    rows = [*good.items(), *blocked.items(), *missing.items()]
    keys = store_tasks(layout, rows)  # the range's order: as added
    with dg.DagsterInstance.ephemeral() as instance:
        add_task_partitions(instance, keys)

        result = run(instance, layout, list(ASSETS), keys)

        assert not result.success
        assert shard_steps(result) == [
            "executor_chain.executor_chain_shard[shard_0]",
            "executor_chain.executor_chain_shard[shard_1]",
        ]
        expected = {
            "scrape": (good.keys() | blocked.keys(), missing.keys(), set()),
            "validation": (set(good), set(blocked), set(missing)),
            "pages": (set(good), set(), blocked.keys() | missing.keys()),
        }
        for asset, (done, failed, untouched) in expected.items():
            found = partition_statuses(instance, asset, keys)
            assert keys_with(found, Status.MATERIALIZED) == done, asset
            assert keys_with(found, Status.FAILED) == failed, asset
            assert keys_with(found, None) == untouched, asset
            assert materialisations(result, asset) == dict.fromkeys(done, 1), asset
        checks = {c.asset_key.to_user_string(): c for c in result.get_asset_check_evaluations()}
        assert {name: c.passed for name, c in checks.items()} == {
            "scrape": False,
            "validation": False,
            "pages": True,
        }
        assert checks["scrape"].metadata["failed"].value == 3
        for key in good:
            status = load_status(layout.status_dir, key)
            assert status is not None and status["pages_status"] == "SUCCESS", key


def test_an_all_success_chain_writes_one_event_per_partition_and_one_asset_runs_alone(
    site: SiteThread, layout: DataLayout
) -> None:
    rows = [(f"t-{n:02d}", site.url(f"/page/{n}")) for n in range(12)]
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.ephemeral() as instance:
        add_task_partitions(instance, keys)

        alone = run(instance, layout, ["scrape"], keys)
        assert alone.success
        assert materialisations(alone, "scrape") == dict.fromkeys(keys, 1)
        assert not materialisations(alone, "validation")
        status = load_status(layout.status_dir, keys[0])
        assert status is not None and "validation_status" not in status

        forced = {"ops": {"executor_chain": {"config": {"force": True}}}}
        chain = run(instance, layout, list(ASSETS), keys, forced)

        assert chain.success
        for asset in ASSETS:
            assert materialisations(chain, asset) == dict.fromkeys(keys, 1), asset
            found = partition_statuses(instance, asset, keys)
            assert keys_with(found, Status.MATERIALIZED) == set(keys), asset
        for event in chain.all_events:
            if event.event_type_value == "ASSET_MATERIALIZATION":
                # Every one with the unsharded step's per-partition metadata.
                metadata = event.event_specific_data.materialization.metadata
                assert {"attempts", "url"} <= set(metadata), event
                assert "skipped" not in metadata, event  # forced: every step ran again


def test_a_failing_run_of_a_later_asset_leaves_tasks_without_upstream_missing(
    site: SiteThread, layout: DataLayout
) -> None:
    good = [(f"g-{n:02d}", site.url(f"/page/{n}")) for n in range(6)]
    blocked = [(f"c-{n:02d}", site.url("/captcha")) for n in range(3)]  # fail validation
    missing = [(f"m-{n:02d}", site.url("/status/404")) for n in range(3)]  # scrape fails
    keys = store_tasks(layout, good + blocked + missing)
    with dg.DagsterInstance.ephemeral() as instance:
        add_task_partitions(instance, keys)
        run(instance, layout, ["scrape"], keys)

        checked = run(instance, layout, ["validation"], keys)

        assert not checked.success
        found = partition_statuses(instance, "validation", keys)
        assert keys_with(found, Status.FAILED) == {key for key, _ in blocked}
        assert keys_with(found, Status.MATERIALIZED) == {key for key, _ in good}
        assert keys_with(found, None) == {key for key, _ in missing}
        assert partition_statuses(instance, "pages", keys) == dict.fromkeys(keys)
