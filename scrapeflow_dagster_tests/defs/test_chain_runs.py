"""A run of every executor asset, as users start one: the real `dagster asset materialize
--select scrape,validation,pages` on the shipped location (sharded and unsharded), and a backfill
of the three assets launched the way the UI's "Materialize all" does (GraphQL
`launchPartitionBackfill` against `dagster dev`, run by its daemon), then the UI's "failed and
missing" backfill. Each ends with exactly the failed (asset, partition) pairs FAILED, what waits
below them missing, the rest MATERIALIZED, and one materialisation per (asset, partition)."""

import json
import subprocess
import urllib.request
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.dagster_cli import materialize_range_command
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME, add_task_partitions
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.defs.test_webserver import (  # noqa: F401 (the webserver fixture)
    LAUNCH_BACKFILL,
    Webserver,
    wait_for_backfill,
    webserver,
)
from scrapeflow_dagster_tests.support.partitions import Status, partition_statuses
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.task_batches import TaskBatch
from scrapeflow_dagster_tests.support.tasks import store_tasks

ASSETS = ("scrape", "validation", "pages")
# Fast retries; two shards even for this small run (the shipped minimum is 1,000 per shard).
FAST = {
    "resources": {
        "scrape_settings": {"config": {"max_attempts": 2, "backoff_base_seconds": 0.01}},
        "shard_settings": {"config": {"min_tasks_per_shard": 1}},
    }
}

PARTITION_STATS = """
query PartitionStats($path: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) {
    ... on AssetNode { partitionStats { numPartitions numMaterialized numFailed } }
  }
}
"""


class Batch(TaskBatch):
    """Tasks on the bundled site: pages, permanent 404s (fail `scrape`), captcha pages (fail
    `validation`), interleaved so that every shard gets each kind."""

    def __init__(self, site: SiteThread, pages: int) -> None:
        super().__init__()
        self.good: set[str] = set()
        self.missing: set[str] = set()
        self.captcha: set[str] = set()
        for n in range(pages):
            self.add(self.good, f"t-{n:03d}-page", site.url(f"/page/{n}"))
            if n % 10 == 3:
                self.add(self.missing, f"t-{n:03d}-missing", site.url(f"/status/404?n={n}"))
            if n % 15 == 8:
                self.add(self.captcha, f"t-{n:03d}-captcha", site.url(f"/captcha?n={n}"))

    def expected(self) -> dict[str, dict[str, Status | None]]:
        """asset -> partition -> the status the chain must leave."""
        every = self.keys
        scrape = {k: Status.FAILED if k in self.missing else Status.MATERIALIZED for k in every}
        validation: dict[str, Status | None] = {k: Status.MATERIALIZED for k in self.good}
        validation.update(dict.fromkeys(self.captcha, Status.FAILED))
        validation.update(dict.fromkeys(self.missing))
        pages: dict[str, Status | None] = {k: Status.MATERIALIZED for k in self.good}
        pages.update(dict.fromkeys(self.missing | self.captcha))
        return {"scrape": dict(scrape), "validation": validation, "pages": pages}


def materialisations(instance: dg.DagsterInstance, run_ids: list[str]) -> dict[str, Counter]:
    """asset -> partition -> how many materialisations the runs wrote."""
    found: dict[str, Counter] = {asset: Counter() for asset in ASSETS}
    for run_id in run_ids:
        records = instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=100_000
        ).records
        for record in records:
            event = record.event_log_entry.dagster_event
            assert event is not None
            found[event.asset_key.to_user_string()][str(event.partition)] += 1
    return found


def assert_chain_ended_exact(
    instance: dg.DagsterInstance, batch: Batch, run_ids: list[str]
) -> None:
    expected = batch.expected()
    for asset in ASSETS:
        assert partition_statuses(instance, asset, batch.keys) == expected[asset], asset
    done = materialisations(instance, run_ids)
    for asset in ASSETS:
        materialised = {k for k, s in expected[asset].items() if s == Status.MATERIALIZED}
        assert done[asset] == dict.fromkeys(materialised, 1), asset


@pytest.mark.slow  # about 20 s each: the real CLI, one run (forked step processes when sharded)
@pytest.mark.parametrize("shards", ["1", "2"])
def test_the_cli_run_of_every_asset_takes_each_task_as_far_as_it_gets(
    shards: str, site_thread: SiteThread, layout: DataLayout, dagster_home: Path, tmp_path: Path
) -> None:
    batch = Batch(site_thread, pages=40)
    keys = store_tasks(layout, batch.rows)
    with dg.DagsterInstance.get() as instance:
        add_task_partitions(instance, keys)
    env = process_env(dagster_home, layout.root, SCRAPEFLOW_SHARDS=shards)

    command = materialize_range_command(
        ",".join(ASSETS), keys[0], keys[-1], config_json=json.dumps(FAST)
    )
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)

    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    assert f"scrape: {len(batch.missing)} of {len(keys)} tasks failed" in output
    assert f"validation: {len(batch.captcha)} of {len(keys)} tasks failed" in output
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert len(runs) == 1 and runs[0].status == dg.DagsterRunStatus.FAILURE
        assert_chain_ended_exact(instance, batch, [runs[0].run_id])
        steps = {
            str(record.event_log_entry.step_key)
            for record in instance.get_records_for_run(
                runs[0].run_id, of_type=dg.DagsterEventType.STEP_START
            ).records
        }
    if shards == "1":
        assert steps == {"executor_chain"}
    else:
        shard_steps = {step for step in steps if "_shard[" in step}
        assert shard_steps == {
            "executor_chain.executor_chain_shard[shard_0]",
            "executor_chain.executor_chain_shard[shard_1]",
        }


def site_requests(site: SiteThread) -> dict[str, int]:
    """Path -> requests the site answered (its query string left out)."""
    with urllib.request.urlopen(site.url("/control/requests"), timeout=5) as response:
        return dict(json.loads(response.read())["paths"])


def launch_backfill(server: Webserver, keys: list[str]) -> str:
    launched = server.graphql(
        LAUNCH_BACKFILL,
        params={
            "partitionNames": keys,
            "assetSelection": [{"path": [asset]} for asset in ASSETS],
            "fromFailure": False,
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return str(launched["backfillId"])


def backfill_run_ids(instance: dg.DagsterInstance, backfill_id: str) -> list[str]:
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    return [run.run_id for run in runs]


@pytest.mark.slow  # about 2 min: the backfill daemon checks in every 30 s, twice
def test_a_ui_backfill_of_every_asset_ends_exact_and_failed_and_missing_reruns_just_those(
    site_thread: SiteThread,
    layout: DataLayout,
    dagster_home: Path,
    webserver: Webserver,  # noqa: F811 (the fixture imported from test_webserver)
) -> None:
    batch = Batch(site_thread, pages=30)
    keys = store_tasks(layout, batch.rows)
    with dg.DagsterInstance.get() as instance:  # the temp DAGSTER_HOME, shared with dagster dev
        add_task_partitions(instance, keys)
        assert instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME) == keys

    # "Materialize all": every partition of the three assets.
    first = wait_for_backfill(webserver, launch_backfill(webserver, keys))

    assert first["status"] in {"COMPLETED", "COMPLETED_FAILED", "FAILED"}, first
    with dg.DagsterInstance.get() as instance:
        first_runs = backfill_run_ids(instance, first["id"])
        assert len(first_runs) == 1, "single_run backfill policy: one run for the range"
        assert_chain_ended_exact(instance, batch, first_runs)
    stats = {
        asset: webserver.graphql(PARTITION_STATS, path=[asset])["assetNodeOrError"][
            "partitionStats"
        ]
        for asset in ASSETS
    }
    assert stats == {
        "scrape": {
            "numPartitions": len(keys),
            "numMaterialized": len(keys) - len(batch.missing),
            "numFailed": len(batch.missing),
        },
        "validation": {
            "numPartitions": len(keys),
            "numMaterialized": len(batch.good),
            "numFailed": len(batch.captcha),
        },
        "pages": {"numPartitions": len(keys), "numMaterialized": len(batch.good), "numFailed": 0},
    }

    # "Failed and missing": the UI takes the partitions failed or missing in any selected
    # asset: the 404s and the captcha pages, nothing else.
    again = sorted(batch.missing | batch.captcha, key=keys.index)
    before = site_requests(site_thread)
    second = wait_for_backfill(webserver, launch_backfill(webserver, again))

    assert second["status"] in {"COMPLETED", "COMPLETED_FAILED", "FAILED"}, second
    after = site_requests(site_thread)
    asked = {path: after[path] - before.get(path, 0) for path in after if path != "/robots.txt"}
    # The 404s are asked again (once each: permanent); captcha pages, fetched already, are
    # only validated again; no page that succeeded is asked for.
    assert {path: n for path, n in asked.items() if n} == {"/status/404": len(batch.missing)}
    with dg.DagsterInstance.get() as instance:
        second_runs = backfill_run_ids(instance, second["id"])
        expected = batch.expected()
        for asset in ASSETS:
            assert partition_statuses(instance, asset, keys) == expected[asset], asset
        done = materialisations(instance, second_runs)
    # Captcha pages: their fetch still stands (skipped, materialised once more), their
    # validation failed again; the 404s reached nothing. Nothing else was touched.
    assert done["scrape"] == dict.fromkeys(batch.captcha, 1)
    assert not done["validation"] and not done["pages"]
