"""A sharded `scrape` through the real `dagster asset materialize` CLI on an embedded (SQLite)
home: two shards run as two steps in two processes, each task is fetched by exactly one of
them, and the partitions end exactly as the unsharded asset leaves them."""

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.lib.partitions import add_task_partitions
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.scaleout.helpers import (
    last_run,
    materialised_by_step,
    materialize,
    step_runs_per_key,
    step_starts,
    sync_duckdb,
)
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.processes import process_env
from scrapeflow_dagster_tests.support.tasks import store_tasks

TASKS = 200
# Fast retries: a task that keeps failing is tried twice, 10 ms apart.
# Two shards even for this small run (the shipped minimum is far more tasks per shard).
FAST = {
    "resources": {
        "scrape_settings": {"config": {"max_attempts": 2, "backoff_base_seconds": 0.01}},
        "shard_settings": {"config": {"min_tasks_per_shard": 1}},
    }
}


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=10, page_bytes=2000) as running:
        yield running


def flaky_requests(site: SiteThread, name: str) -> int:
    """How many times the site was asked for `/flaky/{name}`."""
    with urllib.request.urlopen(site.url(f"/control/flaky/{name}"), timeout=5) as response:
        return int(json.loads(response.read())["requests"])


def test_two_shards_run_as_two_processes_and_fail_exactly_the_failed_tasks(
    site: SiteThread, layout: DataLayout, sqlite_home: Path, tmp_path: Path
) -> None:
    # Every task has a URL of its own whose requests the site counts: `fail=0` always
    # answers a page, `fail=-1` always 503 (transient, retried once); plus 404s.
    rows, good, failing = [], set(), set()
    for n in range(TASKS):
        key = f"t-{n:03d}"
        if n % 20 == 7:
            rows.append((key, site.url(f"/flaky/{key}?fail=-1")))
            failing.add(key)
        elif n % 20 == 13:
            rows.append((key, site.url("/status/404")))
            failing.add(key)
        else:
            rows.append((key, site.url(f"/flaky/{key}?fail=0")))
            good.add(key)
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        add_task_partitions(instance, keys)
    env = process_env(sqlite_home, layout.root, SCRAPEFLOW_SHARDS="2")

    done = materialize(
        env,
        "scrape",
        keys[0],
        keys[-1],
        config_json=json.dumps(FAST),
        log_path=tmp_path / "run.log",
    )

    assert done.returncode != 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(failing)} of {TASKS} tasks failed" in done.stdout + done.stderr
    with dg.DagsterInstance.from_config(str(sqlite_home)) as instance:
        found = partition_statuses(instance, "scrape", keys)
        assert keys_with(found, Status.FAILED) == failing
        assert keys_with(found, Status.MATERIALIZED) == good
        run = last_run(instance)
        starts = step_starts(instance, run.run_id)
        by_step = materialised_by_step(instance, run.run_id, "scrape")

    shards = sorted(step for step in starts if "_shard[" in step)
    assert shards == [
        "executor_chain.executor_chain_shard[shard_0]",
        "executor_chain.executor_chain_shard[shard_1]",
    ]
    assert starts[shards[0]] != starts[shards[1]], "both shards ran in one process"
    # Each shard logged its own successes: disjoint halves of the sorted keys, together all.
    first, second = (set(by_step.get(step, [])) for step in shards)
    ordered = sorted(keys)
    assert first == set(ordered[: TASKS // 2]) & good
    assert second == set(ordered[TASKS // 2 :]) & good

    # Each task was run once, by one shard: one step row each, and the site saw one request
    # per good task and two (the retry) per always-failing one.
    sync_duckdb(env)
    assert step_runs_per_key(layout, "scrape") == dict.fromkeys(keys, 1)
    for key in good:
        assert flaky_requests(site, key) == 1, key
    for key, url in rows:
        if key in failing and "/flaky/" in url:
            assert flaky_requests(site, key) == 2, key
