"""Shards on Celery workers (dagster-celery, Redis broker, Postgres-backed Dagster home): two
real workers take the two shards of a run; a worker killed with SIGKILL in the middle of its
shard loses nothing it had finished, and its shard is delivered again to the other worker,
which completes the run: exactly the failed tasks end FAILED, the rest MATERIALIZED. A run of
the chain (`scrape,validation`) on the workers ends as in one process: failed (asset, task)
pairs FAILED, what waits below them missing, one materialisation per (asset, partition)."""

import json
import subprocess
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.scaleout.celery import CELERY_BROKER_ENV
from scrapeflow_dagster_tests.scaleout.helpers import (
    SHARDED_DEFS,
    add_tasks,
    celery_workers_of_steps,
    flaky_requests,
    last_run,
    materialisation_pids,
    materialised_by_step,
    run_pid,
    started_pid,
    step_start_pids,
    step_starts,
    succeeded,
)
from scrapeflow_dagster_tests.scaleout.workers import (
    celery_workers,
    kill_worker_of,
    local_worker_name,
    parent_pid,
)
from scrapeflow_dagster_tests.support.partitions import Status, keys_with, partition_statuses
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD, REPO_ROOT
from scrapeflow_dagster_tests.support.processes import process_env, wait_until
from scrapeflow_dagster_tests.support.sites import site_process

# A dead worker's shard goes back to the queue after this long: longer than a shard lasts here.
VISIBILITY_SECONDS = 12
SLOW = {"max_attempts": 2, "backoff_base_seconds": 0.01, "max_parallelism": 2}
# Two shards even for this small run (the shipped minimum is far more tasks per shard).
SHARDING = {"min_tasks_per_shard": 1}
SLOW_CONFIG = json.dumps(
    {"resources": {"scrape_settings": {"config": SLOW}, "shard_settings": {"config": SHARDING}}}
)


def worker_env(home: Path, layout: DataLayout, broker: str) -> dict[str, str]:
    return process_env(home, layout.root, SCRAPEFLOW_SHARDS="2", **{CELERY_BROKER_ENV: broker})


def test_two_workers_take_the_shards_and_a_killed_one_loses_nothing_it_finished(
    postgres_home: Path, redis_broker: str, layout: DataLayout, tmp_path: Path
) -> None:
    env = worker_env(postgres_home, layout, redis_broker)
    with site_process(pages=50, page_bytes=2000, latency_seconds=0.25) as base_url:
        rows = [(f"t-{n:02d}", f"{base_url}/flaky/t-{n:02d}?fail=0") for n in range(60)]
        missing = {"t-40", "t-50"}  # in the second shard: 404, permanent
        rows = [(key, f"{base_url}/status/404" if key in missing else url) for key, url in rows]
        keys = add_tasks(layout, postgres_home, rows)
        first_shard = sorted(keys)[:30]
        with celery_workers(
            redis_broker, env, tmp_path, count=2, visibility_timeout_seconds=VISIBILITY_SECONDS
        ) as workers:
            args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
            args += ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
            args += ["--config-json", SLOW_CONFIG]
            log = tmp_path / "run.log"
            with log.open("wb") as out:
                run = subprocess.Popen(args, env=env, cwd=COMMAND_CWD, stdout=out, stderr=out)
            try:
                pid = wait_until(
                    lambda: started_pid(
                        postgres_home, "executor_chain.executor_chain_shard[shard_0]"
                    ),
                    what="shard 0 to start",
                    timeout_seconds=90,
                    poll_seconds=0.2,
                    process=run,
                    log_tail=lambda: log.read_text()[-3000:],
                )
                wait_until(
                    lambda: len(succeeded(layout, first_shard)) >= 4,
                    what="shard 0 to finish a few tasks",
                    timeout_seconds=60,
                    poll_seconds=0.05,
                )
                kill_worker_of(pid, workers)
                finished_by_killed = succeeded(layout, first_shard)
                assert len(finished_by_killed) < len(first_shard), "killed too late to tell"
                assert run.wait(timeout=120) != 0, log.read_text()[-5000:]
                assert "2 of 60 tasks failed" in log.read_text(), log.read_text()[-5000:]
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
        # What the killed worker had finished was not fetched again.
        for key in finished_by_killed:
            assert flaky_requests(base_url, key) == 1, key

    assert succeeded(layout, keys) == set(keys) - missing
    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        found = partition_statuses(instance, "scrape", keys)
        assert keys_with(found, Status.FAILED) == missing
        assert keys_with(found, Status.MATERIALIZED) == set(keys) - missing
        run_id = last_run(instance).run_id
        starts = step_starts(instance, run_id)
        by_step = materialised_by_step(instance, run_id, "scrape")
    # Shard 0 was run again by the other worker (the one that ran shard 1), which materialised
    # all of it: what the killed worker had finished as skipped successes.
    assert starts["executor_chain.executor_chain_shard[shard_0]"] != pid
    assert starts["executor_chain.executor_chain_shard[shard_1]"] != pid
    assert set(by_step["executor_chain.executor_chain_shard[shard_0]"]) == set(first_shard)
    assert (
        set(by_step["executor_chain.executor_chain_shard[shard_1]"])
        == set(sorted(keys)[30:]) - missing
    )


def test_a_chain_run_on_workers_ends_exact_with_one_event_per_partition(
    postgres_home: Path, redis_broker: str, layout: DataLayout, tmp_path: Path
) -> None:
    env = worker_env(postgres_home, layout, redis_broker)
    with site_process(pages=50, page_bytes=2000) as base_url:
        rows = [(f"t-{n:02d}", f"{base_url}/page/{n}") for n in range(40)]
        missing = {"t-05", "t-25"}  # one per shard: 404, scrape fails
        blocked = {"t-12", "t-33"}  # one per shard: captcha page, validation fails
        rows = [
            (key, f"{base_url}/status/404" if key in missing else f"{base_url}/captcha")
            if key in missing | blocked
            else (key, url)
            for key, url in rows
        ]
        keys = add_tasks(layout, postgres_home, rows)
        with celery_workers(
            redis_broker, env, tmp_path, count=2, visibility_timeout_seconds=60
        ) as workers:
            args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
            args += ["--select", "scrape,validation"]
            args += ["--partition-range", f"{keys[0]}...{keys[-1]}", "--config-json", SLOW_CONFIG]
            # From a temp folder (Dagster reads `.env` where it starts); the tests' location
            # is imported from the repository, by the CLI and by the workers.
            args += ["--working-directory", str(REPO_ROOT)]
            done = subprocess.run(
                args,
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=240,
            )
            # Which process ran each step (the pid its STEP_START carries), and whose child
            # that process is, asked while the workers still run.
            with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
                run_id = last_run(instance).run_id
                starts = step_start_pids(instance, run_id)
                run_process = run_pid(instance, run_id)
            parents = {pid: parent_pid(pid) for pids in starts.values() for pid in pids}
            worker_names = {worker.pid: local_worker_name(n) for n, worker in enumerate(workers)}
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-5000:]
    assert "scrape: 2 of 40 tasks failed" in output, output[-5000:]
    assert "validation: 2 of 40 tasks failed" in output, output[-5000:]
    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        scrape = partition_statuses(instance, "scrape", keys)
        validation = partition_statuses(instance, "validation", keys)
        events = {
            asset: materialised_by_step(instance, run_id, asset)
            for asset in ("scrape", "validation")
        }
        logged = {asset: materialisation_pids(instance, run_id, asset) for asset in events}
        taken_by = celery_workers_of_steps(instance, run_id)
    assert keys_with(scrape, Status.FAILED) == missing
    assert keys_with(scrape, Status.MATERIALIZED) == set(keys) - missing
    assert keys_with(validation, Status.FAILED) == blocked
    assert keys_with(validation, None) == missing  # never fetched: missing, not failed
    assert keys_with(validation, Status.MATERIALIZED) == set(keys) - missing - blocked
    # Each shard ran on a worker and logged its own tasks' events, one per partition.
    shards = sorted(step for step in starts if "_shard[" in step)
    assert shards == [
        "executor_chain.executor_chain_shard[shard_0]",
        "executor_chain.executor_chain_shard[shard_1]",
    ]
    for step in shards:
        # Started once, by a pool process of one of the started workers (not by the run's
        # own process), and that worker is the one Celery says took the step.
        (pid,) = starts[step]
        assert pid != run_process, step
        assert parents[pid] in worker_names, (step, pid, parents[pid], worker_names)
        assert taken_by[step] == [worker_names[parents[pid]]], step
    for asset, expected in (
        ("scrape", set(keys) - missing),
        ("validation", set(keys) - missing - blocked),
    ):
        logged_by_step = [key for step in shards for key in events[asset].get(step, [])]
        assert sorted(logged_by_step) == sorted(expected), asset
        # Each partition's one event was logged by the worker process that ran its shard.
        for step in shards:
            for key in events[asset].get(step, []):
                assert logged[asset][key] == starts[step], (asset, key, step)
