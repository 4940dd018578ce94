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
    celery_workers_of_steps,
    flaky_requests,
    last_run,
    logged_by,
    materialisation_pids,
    materialised_by_step,
    started_pids,
    step_start_pids,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.workers import (
    celery_workers,
    host_namespace,
    local_worker_name,
    net_namespace,
    parent_pid,
    worker_on,
)
from scrapeflow_dagster_tests.support.netns import PublicHost, forwarded, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.processes import process_env, wait_until
from scrapeflow_dagster_tests.support.sites import site_process

VISIBILITY_SECONDS = 12
SHARD_STEPS = (
    "executor_chain.executor_chain_shard[shard_0]",
    "executor_chain.executor_chain_shard[shard_1]",
)
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
        # The other host is a network namespace of its own: a process runs there when its
        # `/proc/<pid>/ns/net` is that namespace, and here when it is this test's.
        lost_ns, here_ns = host_namespace(public_host), net_namespace(os.getpid())
        assert lost_ns != here_ns
        remote_name = f"remote-{os.getpid()}@other-host"
        remote = worker_on(public_host, remote_name, env, tmp_path / "remote.log")
        assert net_namespace(remote.pid) == lost_ns
        args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
        args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
        args += ["--config-json", CONFIG]
        log = tmp_path / "run.log"
        with celery_workers(
            broker_url, env, tmp_path, count=1, visibility_timeout_seconds=VISIBILITY_SECONDS
        ) as (local,):
            with log.open("wb") as out:
                run = subprocess.Popen(args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out)
            try:
                # Which shard the other host took: the one whose step process, seen while it
                # runs, lives in that host's namespace.
                def remote_shard() -> tuple[str, int] | None:
                    for step in SHARD_STEPS:
                        pids = started_pids(home, step)
                        if pids and net_namespace(pids[0]) == lost_ns:
                            return step, pids[0]
                    return None

                lost_step, remote_pid = wait_until(
                    remote_shard,
                    what="a shard to start on the other host",
                    timeout_seconds=120,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                remote_parent = parent_pid(remote_pid)  # the worker there, while it lives
                # A few of its tasks finished there (logged by that process) before the loss.
                wait_until(
                    lambda: len(logged_by(home, "scrape", remote_pid)) >= 3,
                    what="the other host to finish a few tasks",
                    timeout_seconds=60,
                    poll_seconds=0.1,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                lost_at = time.monotonic()
                public_host.lose()  # the host is gone, all at once
                succeeded_at_loss = succeeded(layout, keys)
                starts_at_loss = started_pids(home, lost_step)

                # The lost shard starts again: which process, in which namespace, seen while
                # that process runs (a pool process of a live worker).
                def restarted() -> tuple[int, int | None, int | None] | None:
                    pids = started_pids(home, lost_step)
                    if len(pids) < 2:
                        return None
                    return pids[1], net_namespace(pids[1]), parent_pid(pids[1])

                rerun_pid, rerun_ns, rerun_parent = wait_until(
                    restarted,
                    what="the lost shard to start again",
                    timeout_seconds=120,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                assert run.wait(timeout=300) == 0, log.read_text()[-5000:]
                recovered_after = time.monotonic() - lost_at
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
        with dg.DagsterInstance.from_config(str(home)) as instance:  # through the forwarder
            found = partition_statuses(instance, "scrape", keys)
            run_id = last_run(instance).run_id
            starts = step_start_pids(instance, run_id)
            taken_by = celery_workers_of_steps(instance, run_id)
            by_step = materialised_by_step(instance, run_id, "scrape")
            logged = materialisation_pids(instance, run_id, "scrape")
        # What the lost host had finished: the tasks of its shard (which only its process had
        # started then) whose status said SUCCESS when it was lost; and, among them, those whose
        # materialisation that process itself logged.
        lost_keys = set(by_step[lost_step])
        finished_there = succeeded_at_loss & lost_keys
        logged_there = {key for key, pids in logged.items() if remote_pid in pids}
        fetched_again = [key for key in finished_there if flaky_requests(site, key) != 1]

    assert succeeded(layout, keys) == set(keys)
    assert keys_with(found, Status.MATERIALIZED) == set(keys)
    (local_step,) = set(SHARD_STEPS) - {lost_step}
    assert lost_keys and lost_keys.isdisjoint(by_step[local_step])
    # Until the loss, the shard had been started only on the other host: by a pool process of
    # the worker there (seen in that host's namespace while it ran).
    assert remote_parent == remote.pid
    assert starts_at_loss == [remote_pid]
    # The lost shard ran again here, after the visibility timeout: in another process, of the
    # worker on this machine, in this machine's namespace (seen while it ran), as Celery says.
    assert starts[lost_step] == [remote_pid, rerun_pid]
    assert rerun_ns == here_ns != lost_ns
    assert rerun_parent == local.pid
    assert taken_by[lost_step] == [remote_name, local_worker_name(0)]
    # The other shard ran here only.
    assert taken_by[local_step] == [local_worker_name(0)]
    # What was finished over there (the lost host's own tasks, none of this machine's) was
    # skipped by the re-run: fetched once only.
    assert finished_there, "the other host had finished nothing: killed too early to tell"
    assert logged_there and logged_there <= finished_there
    assert fetched_again == []
    print(
        f"losing the host cost {recovered_after:.1f} s (visibility timeout {VISIBILITY_SECONDS} s)"
    )
