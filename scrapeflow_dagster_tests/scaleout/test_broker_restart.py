"""A broker restart loses no task: the Redis of this test (its own redis-server, append-only file
fsynced on every write, no snapshots) is killed with SIGKILL twice in one Celery run and
started again on the same port and data, and the run completes as if nothing had happened.

One worker, two shards: at the first kill shard 0 is running on the worker (its message taken
but not acknowledged) and shard 1 is queued in Redis; both survive in the append-only file. The
worker keeps running shard 0 through the outage and acknowledges it after reconnecting; the run
side (`dagster asset materialize`) waits for the broker instead of failing. At the second kill
shard 1 is running, and it ends while Redis is down: the worker stores its result and
acknowledges it once Redis is back. Every step runs once, every page is fetched once, every task
ends MATERIALIZED, and nothing is left in Redis to be delivered again later.

A clean restart (SIGTERM, `systemctl restart redis`) is the easier case of the same path: Redis
writes its file at exit, and clients see the same lost connection.
"""

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import dagster as dg
import redis

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.celery import CELERY_BROKER_ENV, CELERY_QUEUE
from scrapeflow_dagster_tests.scaleout.helpers import (
    SHARDED_DEFS,
    add_tasks,
    last_run,
    started_pid,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.workers import celery_workers
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import process_env, wait_until
from scrapeflow_dagster_tests.support.redis import RedisServer
from scrapeflow_dagster_tests.support.sites import site_process

TASKS = 80  # 40 per shard: at 0.4 s a page and 2 at a time, about 8 s of fetching per shard
OUTAGE_SECONDS = 4
# Celery's default (1 h): no shard here is delivered again because it timed out, so whatever
# completes the run after a restart is the broker's own persistence.
VISIBILITY_SECONDS = 3600
SETTINGS = {"max_attempts": 2, "backoff_base_seconds": 0.01, "max_parallelism": 2}
# Two shards even for this small run (the shipped minimum is far more tasks per shard).
SHARDING = {"min_tasks_per_shard": 1}
RUN_CONFIG = json.dumps(
    {
        "resources": {
            "scrape_settings": {"config": SETTINGS},
            "shard_settings": {"config": SHARDING},
        }
    }
)
SHARD_0, SHARD_1 = (
    "executor_chain.executor_chain_shard[shard_0]",
    "executor_chain.executor_chain_shard[shard_1]",
)


def test_a_broker_killed_twice_mid_run_loses_no_task_and_runs_nothing_twice(
    postgres_home: Path, redis_server: RedisServer, layout: DataLayout, tmp_path: Path
) -> None:
    broker = redis_server.url(0)
    env = process_env(
        postgres_home, layout.root, SCRAPEFLOW_SHARDS="2", **{CELERY_BROKER_ENV: broker}
    )
    with site_process(pages=50, page_bytes=2000, latency_seconds=0.4) as base_url:
        rows = [(f"t-{n:02d}", f"{base_url}/flaky/t-{n:02d}?fail=0") for n in range(TASKS)]
        keys = add_tasks(layout, postgres_home, rows)
        first, second = sorted(keys)[: TASKS // 2], sorted(keys)[TASKS // 2 :]
        with celery_workers(
            broker, env, tmp_path, count=1, visibility_timeout_seconds=VISIBILITY_SECONDS
        ):
            log = tmp_path / "run.log"
            args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
            args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
            args += ["--config-json", RUN_CONFIG]
            with log.open("wb") as out:
                run = subprocess.Popen(args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out)
            try:
                # 1. Shard 0 running, shard 1 queued.
                wait_until(
                    lambda: started_pid(postgres_home, SHARD_0),
                    what="shard 0 to start",
                    timeout_seconds=90,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                wait_until(
                    lambda: (
                        len(succeeded(layout, first)) >= 4 and redis_queue_length(redis_server) == 1
                    ),
                    what="shard 0 to finish a few tasks and shard 1 to be queued",
                    timeout_seconds=60,
                    poll_seconds=0.05,
                )
                redis_server.kill(signal.SIGKILL)
                assert len(succeeded(layout, first)) < len(first), "killed too late to tell"
                time.sleep(OUTAGE_SECONDS)
                redis_server.start()

                # 2. Shard 1 running, and ending while the broker is down.
                wait_until(
                    lambda: len(succeeded(layout, second)) >= 4,
                    what="shard 1 to finish a few tasks",
                    timeout_seconds=90,
                    poll_seconds=0.05,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                redis_server.kill(signal.SIGKILL)
                wait_until(
                    lambda: step_succeeded(postgres_home, SHARD_1),
                    what="shard 1 to end while Redis is down",
                    timeout_seconds=60,
                    poll_seconds=0.2,
                )
                time.sleep(OUTAGE_SECONDS / 2)
                redis_server.start()

                assert run.wait(timeout=120) == 0, log.read_text()[-5000:]
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
            # Nothing left unacknowledged or queued, to be delivered again an hour from now.
            assert redis_unacked(redis_server) == 0
            assert redis_queue_length(redis_server) == 0
        fetched = page_requests(base_url)

    assert redis_server.starts == 3
    assert {f"/flaky/{key}": 1 for key in keys} == fetched
    assert succeeded(layout, keys) == set(keys)
    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        found = partition_statuses(instance, "scrape", keys)
        assert keys_with(found, Status.FAILED) == set()
        assert keys_with(found, Status.MATERIALIZED) == set(keys)
        run_record = last_run(instance)
        assert run_record.status == dg.DagsterRunStatus.SUCCESS
        starts = instance.get_records_for_run(
            run_record.run_id, of_type=dg.DagsterEventType.STEP_START
        ).records
    step_keys = sorted(str(record.event_log_entry.step_key) for record in starts)
    assert step_keys == [
        "executor_chain.executor_chain_collect",
        "executor_chain.executor_chain_plan",
        SHARD_0,
        SHARD_1,
    ]


def redis_queue_length(server: RedisServer) -> int:
    """How many tasks wait in the workers' queue (kombu keeps a Redis list per priority step:
    `dagster`, then `dagster` + separator + step)."""
    client = redis.Redis.from_url(server.url(0), socket_timeout=5)
    try:
        lists = [k for k in client.keys(f"{CELERY_QUEUE}*") if client.type(k) == b"list"]
        return sum(int(client.llen(key)) for key in lists)
    finally:
        client.close()


def redis_unacked(server: RedisServer) -> int:
    """How many tasks were taken by a worker and not acknowledged (kombu's `unacked` hash)."""
    client = redis.Redis.from_url(server.url(0), socket_timeout=5)
    try:
        return int(client.hlen("unacked"))
    finally:
        client.close()


def step_succeeded(home: Path, step_key: str) -> bool:
    """Whether `step_key` of the newest run of `home` logged its success (to Postgres)."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_id = last_run(instance).run_id
        records = instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.STEP_SUCCESS
        ).records
    return any(record.event_log_entry.step_key == step_key for record in records)


def page_requests(base_url: str) -> dict[str, int]:
    """path -> how many times the site was asked for it, for the `/flaky/` pages."""
    with urllib.request.urlopen(f"{base_url}/control/requests", timeout=5) as response:
        paths = json.loads(response.read())["paths"]
    return {path: int(n) for path, n in paths.items() if path.startswith("/flaky/")}
