"""What the scale-out tests share: the sharded code location run through the real `dagster`
CLI, the steps a run's shards ran as (and which process, which Celery worker, ran them), and
the services (Postgres, Redis) they may need."""

import json
import os
import subprocess
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.status import load_status
from scrapeflow_dagster.lib.partitions import add_task_partitions
from scrapeflow_dagster_tests.support.ledger import query
from scrapeflow_dagster_tests.support.paths import BIN_DIR, COMMAND_CWD
from scrapeflow_dagster_tests.support.tasks import store_tasks

SHARDED_DEFS = "scrapeflow_dagster_tests.scaleout.sharded_defs"
REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


def materialize(
    env: Mapping[str, str],
    select: str,
    first: str,
    last: str,
    *,
    config_json: str | None = None,
    timeout_seconds: float = 150,
    log_path: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`dagster asset materialize -m <sharded defs> --select ... --partition-range first...last`
    as users run it, from the repository root; output captured (and written to `log_path`)."""
    args = [str(BIN_DIR / "dagster"), "asset", "materialize", "-m", SHARDED_DEFS]
    args += ["--select", select, "--partition-range", f"{first}...{last}"]
    if config_json:
        args += ["--config-json", config_json]
    done = subprocess.run(
        args,
        env=dict(env),
        cwd=COMMAND_CWD,
        capture_output=True,
        text=True,
        timeout=timeout_seconds,
    )
    if log_path is not None:
        log_path.write_text(done.stdout + done.stderr)
    return done


def last_run(instance: dg.DagsterInstance) -> dg.DagsterRun:
    """The newest run of the instance."""
    runs = instance.get_runs(limit=1)
    assert runs, "no run was recorded"
    return runs[0]


def step_starts(instance: dg.DagsterInstance, run_id: str) -> dict[str, int]:
    """step key -> the pid of the process that last started it, for every step of the run."""
    return {step: pids[-1] for step, pids in step_start_pids(instance, run_id).items()}


def step_start_pids(instance: dg.DagsterInstance, run_id: str) -> dict[str, list[int]]:
    """step key -> the pids of the processes that started it, in the order they did (a shard
    delivered again after its worker was lost starts twice); each STEP_START event carries the
    pid of the process that ran the step, recorded by that process."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.STEP_START, limit=100_000
    ).records
    starts: dict[str, list[int]] = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        assert event is not None and event.pid is not None
        starts.setdefault(str(record.event_log_entry.step_key), []).append(event.pid)
    return starts


def run_pid(instance: dg.DagsterInstance, run_id: str) -> int:
    """The pid of the run's own process (the one that logged RUN_START)."""
    (record,) = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.RUN_START).records
    event = record.event_log_entry.dagster_event
    assert event is not None and event.pid is not None
    return event.pid


def celery_workers_of_steps(instance: dg.DagsterInstance, run_id: str) -> dict[str, list[str]]:
    """step key -> the node names of the Celery workers that took it, in order: dagster-celery's
    task logs "Executing steps ... in celery worker" from the worker as it begins the step,
    naming that worker (Celery's `request.hostname`) in the event's `Celery worker` metadata."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=100_000
    ).records
    workers: dict[str, list[str]] = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        assert event is not None
        metadata = getattr(event.event_specific_data, "metadata", None) or {}
        if "Celery worker" in metadata:
            name = metadata["Celery worker"].value
            workers.setdefault(str(record.event_log_entry.step_key), []).append(str(name))
    return workers


def materialisation_pids(
    instance: dg.DagsterInstance, run_id: str, asset: str
) -> dict[str, list[int]]:
    """partition of `asset` -> the pids of the processes that logged its materialisations in
    the run (each shard logs a task's event as soon as the task ends)."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=100_000
    ).records
    found: dict[str, list[int]] = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        assert event is not None and event.pid is not None
        if event.asset_key == dg.AssetKey(asset):
            found.setdefault(str(event.partition), []).append(event.pid)
    return found


def materialised_by_step(
    instance: dg.DagsterInstance, run_id: str, asset: str
) -> dict[str, list[str]]:
    """step key -> the partitions of `asset` whose materialisation that step logged."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION, limit=100_000
    ).records
    found: dict[str, list[str]] = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        assert event is not None
        if event.asset_key == dg.AssetKey(asset):
            found.setdefault(str(record.event_log_entry.step_key), []).append(str(event.partition))
    return found


def step_runs_per_key(layout: DataLayout, executor: str) -> dict[str, int]:
    """key -> how many times the executor ran (not skipped) for it, from DuckDB's step rows."""
    sql = "SELECT key, count(*) FROM step_runs WHERE executor = ? GROUP BY key"
    return dict(query(layout.db_path, sql, [executor]))


def sync_duckdb(env: Mapping[str, str]) -> None:
    """`scrapeflow db sync`: the spooled rows of every shard into DuckDB."""
    done = subprocess.run(
        [str(BIN_DIR / "scrapeflow"), "db", "sync"],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def add_tasks(layout: DataLayout, home: Path, rows: list[tuple[str, str]]) -> list[str]:
    """Store `(key, url)` rows as tasks and add them as partitions of `home`; returns the keys."""
    keys = store_tasks(layout, rows)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        add_task_partitions(instance, keys)
    return keys


def started_pid(home: Path, step_key: str) -> int | None:
    """The pid that started `step_key` in the newest run of `home`, None before that."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(limit=1)
        return step_starts(instance, runs[0].run_id).get(step_key) if runs else None


def started_pids(home: Path, step_key: str) -> list[int]:
    """The pids that started `step_key` in the newest run of `home`, in order (none yet: [])."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(limit=1)
        return step_start_pids(instance, runs[0].run_id).get(step_key, []) if runs else []


def logged_by(home: Path, asset: str, pid: int) -> set[str]:
    """The partitions of `asset` whose materialisation process `pid` logged in the newest run of
    `home`."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(limit=1)
        if not runs:
            return set()
        found = materialisation_pids(instance, runs[0].run_id, asset)
        return {key for key, pids in found.items() if pid in pids}


def succeeded(layout: DataLayout, keys: list[str]) -> set[str]:
    """The keys whose status file says `scrape` succeeded."""
    found = set()
    for key in keys:
        status = load_status(layout.status_dir, key)
        if status is not None and status.get("scrape_status") == "SUCCESS":
            found.add(key)
    return found


def flaky_requests(base_url: str, name: str) -> int:
    """How many times the site was asked for `/flaky/{name}`."""
    with urllib.request.urlopen(f"{base_url}/control/flaky/{name}", timeout=5) as response:
        return int(json.loads(response.read())["requests"])


def service_missing(what: str) -> None:
    """Skip the test because `what` is missing, or fail it when services are required."""
    if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
        pytest.fail(f"{what} (required: {REQUIRE_SERVICES_ENV}=1)")
    pytest.skip(f"{what}; set {REQUIRE_SERVICES_ENV}=1 to make this a failure")
