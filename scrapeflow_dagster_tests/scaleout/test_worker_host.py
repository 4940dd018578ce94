"""A worker on another host, for real: a `scrapeflow worker` in a network namespace (its own
address, reaching Postgres, Redis and the site over a veth, as another machine would over a
network) and one on this machine take the two shards of a run. The other host is then lost
(every process in it SIGKILLed mid-shard): its shard is delivered again to the worker here, the
run ends with exact states, and what was finished over there is not fetched again."""

import json
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.celery import CELERY_BROKER_ENV, VISIBILITY_TIMEOUT_ENV
from scrapeflow_dagster_tests.scaleout.helpers import (
    SHARDED_DEFS,
    add_tasks,
    flaky_requests,
    last_run,
    started_pid,
    step_starts,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.workers import celery_workers, worker_on
from scrapeflow_dagster_tests.support.netns import PublicHost, forwarded, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import process_env, wait_until
from scrapeflow_dagster_tests.support.sites import site_process

VISIBILITY_SECONDS = 12
CONFIG = json.dumps(
    {
        "resources": {
            "scrape_settings": {"config": {"max_parallelism": 2, "max_attempts": 2}},
            "shard_settings": {"config": {"min_tasks_per_shard": 1}},
        }
    }
)


def test_a_worker_on_another_host_takes_a_shard_and_losing_that_host_loses_nothing(
    public_host: PublicHost,  # noqa: F811
    postgres_url: str,
    redis_broker: str,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    outside = public_host.outside
    pg, broker = urlsplit(postgres_url), urlsplit(redis_broker)
    with (
        forwarded(outside, pg.port or 5432) as pg_port,
        forwarded(outside, broker.port or 6379) as redis_port,
        site_process(pages=10, page_bytes=2000, latency_seconds=0.25, host=outside) as site,
    ):
        # Every side names the services by the address the other host reaches them at.
        home = tmp_path / "home"
        home.mkdir()
        url = pg._replace(netloc=f"{pg.username}@{outside}:{pg_port}").geturl()
        (home / "dagster.yaml").write_text(
            f"telemetry:\n  enabled: false\nstorage:\n  postgres:\n    postgres_url: {url}\n"
        )
        broker_url = broker._replace(netloc=f"{outside}:{redis_port}").geturl()
        env = process_env(
            home,
            layout.root,
            SCRAPEFLOW_SHARDS="2",
            **{CELERY_BROKER_ENV: broker_url, VISIBILITY_TIMEOUT_ENV: str(VISIBILITY_SECONDS)},
        )
        rows = [(f"h-{n:02d}", f"{site}/flaky/h-{n:02d}?fail=0") for n in range(40)]
        keys = add_tasks(layout, home, rows)
        worker_on(public_host, f"remote-{os.getpid()}@other-host", env, tmp_path / "remote.log")
        args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
        args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
        args += ["--config-json", CONFIG]
        log = tmp_path / "run.log"
        with celery_workers(
            broker_url, env, tmp_path, count=1, visibility_timeout_seconds=VISIBILITY_SECONDS
        ):
            with log.open("wb") as out:
                run = subprocess.Popen(args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out)
            try:
                # Which shard the other host took: the one whose step process lives there.
                def remote_shard() -> str | None:
                    pids = public_host.pids()
                    for shard in ("shard_0", "shard_1"):
                        pid = started_pid(home, f"executor_chain.executor_chain_shard[{shard}]")
                        if pid in pids:
                            return shard
                    return None

                shard = wait_until(
                    remote_shard,
                    what="a shard to start on the other host",
                    timeout_seconds=120,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                time.sleep(1.5)  # a few of its pages fetched
                lost_at = time.monotonic()
                public_host.lose()  # the host is gone, all at once
                finished_there = succeeded(layout, keys)
                assert run.wait(timeout=300) == 0, log.read_text()[-5000:]
                recovered_after = time.monotonic() - lost_at
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
        # What the lost host had finished was not fetched again.
        fetched_again = [key for key in finished_there if flaky_requests(site, key) != 1]
        with dg.DagsterInstance.from_config(str(home)) as instance:  # through the forwarder
            found = partition_statuses(instance, "scrape", keys)
            starts = step_starts(instance, last_run(instance).run_id)

    assert succeeded(layout, keys) == set(keys)
    assert keys_with(found, Status.MATERIALIZED) == set(keys)
    # The lost shard ran again here, after the visibility timeout, skipping what was done.
    assert starts[f"executor_chain.executor_chain_shard[{shard}]"] not in public_host.pids()
    assert finished_there, "the other host had finished nothing: killed too early to tell"
    assert fetched_again == []
    print(
        f"losing the host cost {recovered_after:.1f} s (visibility timeout {VISIBILITY_SECONDS} s)"
    )
