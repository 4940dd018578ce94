"""Sharded executor assets in process (an ephemeral instance): a chain run (`scrape` then
`validation`, both sharded) goes on downstream when every task succeeded, the run config keeps
the unsharded shape, and a run of one asset writes one materialisation per partition."""

from collections import Counter
from collections.abc import Iterator

import dagster as dg
import pytest

from scrapeflow_dagster.defs.partitions import add_task_partitions
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.shards import ShardSettingsResource, shard_resources
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.scaleout.sharded_defs import scrape_asset, validation_asset
from scrapeflow_dagster_tests.support.partitions import (
    Status,
    keys_with,
    partition_statuses,
    range_tags,
)
from scrapeflow_dagster_tests.support.runs import run_resources
from scrapeflow_dagster_tests.support.tasks import store_tasks


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=20, page_bytes=2000) as running:
        yield running


def run(
    instance: dg.DagsterInstance,
    layout: DataLayout,
    selection: list[dg.AssetsDefinition],
    keys: list[str],
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    resources = {
        **run_resources(layout.root, max_attempts=1),
        **shard_resources(data_dir=str(layout.root)),
        "shard_settings": ShardSettingsResource(shards=2, min_tasks_per_shard=1),
    }
    return dg.materialize(
        selection,
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


def test_a_chain_run_goes_on_downstream_and_one_asset_runs_write_one_event_per_partition(
    site: SiteThread, layout: DataLayout
) -> None:
    rows = [(f"t-{n:02d}", site.url(f"/page/{n}")) for n in range(12)]
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.ephemeral() as instance:
        add_task_partitions(instance, keys)

        alone = run(instance, layout, [scrape_asset], keys)
        assert alone.success
        assert materialisations(alone, "scrape") == dict.fromkeys(keys, 1)
        forced = {"ops": {"scrape": {"config": {"force": True}}}}
        chain = run(instance, layout, [scrape_asset, validation_asset], keys, forced)

        assert chain.success
        # `scrape`: the shards' events, then the collector's output (so that validation runs);
        # `validation`, last in the run: the shards' events only.
        assert materialisations(chain, "scrape") == dict.fromkeys(keys, 2)
        assert materialisations(chain, "validation") == dict.fromkeys(keys, 1)
        for event in chain.all_events:
            if event.event_type_value == "ASSET_MATERIALIZATION":
                # Every one with the unsharded asset's per-partition metadata.
                metadata = event.event_specific_data.materialization.metadata
                assert {"attempts", "url"} <= set(metadata), event
        for asset in ("scrape", "validation"):
            found = partition_statuses(instance, asset, keys)
            assert keys_with(found, Status.MATERIALIZED) == set(keys), asset


def test_a_failing_sharded_run_leaves_tasks_without_upstream_missing(
    site: SiteThread, layout: DataLayout
) -> None:
    good = [(f"g-{n:02d}", site.url(f"/page/{n}")) for n in range(6)]
    blocked = [(f"c-{n:02d}", site.url("/captcha")) for n in range(3)]  # fail validation
    missing = [(f"m-{n:02d}", site.url("/status/404")) for n in range(3)]  # scrape fails
    keys = store_tasks(layout, good + blocked + missing)  # the range's order: as added
    with dg.DagsterInstance.ephemeral() as instance:
        add_task_partitions(instance, keys)
        run(instance, layout, [scrape_asset], keys)

        checked = run(instance, layout, [validation_asset], keys)

        assert not checked.success
        found = partition_statuses(instance, "validation", keys)
        assert keys_with(found, Status.FAILED) == {key for key, _ in blocked}
        assert keys_with(found, Status.MATERIALIZED) == {key for key, _ in good}
        assert keys_with(found, None) == {key for key, _ in missing}
